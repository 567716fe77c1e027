"""Exact weighted betweenness of every vertex: mgapsp on one GPU against NetworKit's
exact ``Betweenness`` on every core of this machine, in the same run.

    python -m bench.betweenness_bench [--graphs rmat16,grid256] [--out bench]
                                      [--repeats 2] [--no-peer]
                                      [--rmat20-sources 65536] [--peer-samples 64]

Graphs (``bench/generators.py``, seeded, those of ``bench/metrics_bench.py``): R-MAT
scale 16 (edge factor 8, weights 1..99, directed) and a 256 x 256 grid with 10% of its
edges removed (weights 10..999, undirected).

mgapsp: wall clock of ``mgapsp.betweenness_centrality(graph, normalized=False,
backend="gpu")``, a first call apart (the grid's first builds its hierarchy), then the
median of ``--repeats``; beside it the closeness of every vertex, the same searches
without Brandes' counting, so that the table shows what the counting costs.
NetworKit: one run, every value compared (``networkit_factor``: what ours are
multiplied by to meet its unnormalized scores, which may count an undirected graph's
pairs twice: found, not assumed).

``--graphs rmat20``: R-MAT scale 20 as a job, ``mgapsp run --metrics betweenness
--no-distances`` on every GPU of this machine from ``--rmat20-sources`` sources drawn
at random, after a job of 4,096 of them that compiles the kernels (wall clock from
start to exit; ``mgapsp verify`` then recomputes one whole
batch with NetworkX's Brandes on the CPU), against NetworKit's
``EstimateBetweenness`` from ``--peer-samples`` sources on every core: seconds per
source each, and the whole graph's job estimated from ours.

Writes ``betweenness-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import mgapsp
from bench import generators
from bench.timing import first_then_median

GRAPHS = {"rmat16": (lambda: generators.rmat(16, 8, seed=1), True),
          "grid256": (lambda: generators.grid(256, drop=0.1, seed=1), False)}


def _networkit_graph(gen, directed: bool):
    """``gen`` as NetworKit's graph (an undirected one's edges once), its threads every
    core's."""
    import networkit as nk

    nk.setNumberOfThreads(os.cpu_count())
    G = nk.Graph(gen.n, weighted=True, directed=directed)
    keep = np.ones(gen.m, dtype=bool) if directed else gen.tail < gen.head
    for u, v, w in zip(gen.tail[keep].tolist(), gen.head[keep].tolist(),
                       gen.weight[keep].tolist()):
        G.addEdge(u, v, float(w))
    return G


def _networkit(gen, directed: bool) -> tuple[float, np.ndarray]:
    import networkit as nk

    algo = nk.centrality.Betweenness(_networkit_graph(gen, directed), False, False)
    t = time.perf_counter()
    algo.run()
    return time.perf_counter() - t, np.asarray(algo.scores())


def _rel(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """The largest relative difference, and the factor of ours that gives it: NetworKit
    may count an undirected graph's pairs once or twice."""
    diffs = {f: float(np.max(np.abs(ours * f - theirs) / np.maximum(np.abs(theirs), 1.0)))
             for f in (1.0, 2.0, 0.5)}
    factor = min(diffs, key=diffs.get)
    return diffs[factor], factor


def one_graph(name: str, repeats: int, peer: bool) -> dict:
    make, directed = GRAPHS[name]
    gen = make()
    csr = gen.csr()
    graph = mgapsp.Graph(csr.indptr, csr.indices, csr.data, directed=directed, name=name)
    row = {"graph": name, "n": graph.n, "arcs": graph.m, "directed": directed}

    def run():
        return mgapsp.betweenness_centrality(graph, normalized=False, backend="gpu")

    sec, first, times, out = first_then_median(run, repeats)
    ours = np.array(list(out.values()))
    row.update(s=sec, first_s=first, times=times)
    print(f"{name} betweenness: {sec:.3f} s (first {first:.3f} s)", flush=True)
    closeness, _, _, _ = first_then_median(
        lambda: mgapsp.closeness_centrality(graph, backend="gpu"), repeats)
    row["closeness_s"] = closeness
    print(f"{name} closeness (the searches alone): {closeness:.3f} s", flush=True)
    if peer:
        peer_s, theirs = _networkit(gen, directed)
        row["networkit_s"] = peer_s
        row["vs_networkit"] = peer_s / sec
        row["max_rel_diff"], row["networkit_factor"] = _rel(ours, theirs)
        print(f"{name} NetworKit: {peer_s:.1f} s, {peer_s / sec:.1f}x, "
              f"max rel diff {row['max_rel_diff']:.1e}", flush=True)
    return row


def rmat20_job(workdir: Path, n_sources: int, samples: int) -> dict:
    """Betweenness of R-MAT 2^20 from ``n_sources`` random sources by ``mgapsp run`` on
    every GPU; NetworKit's seconds per source from ``samples`` of its own."""
    gen = generators.rmat(20, 8, seed=1)
    graph_file = generators.write_dimacs(gen, workdir / "rmat20.gr")
    sources = np.sort(np.random.default_rng(5).choice(gen.n, n_sources, replace=False))
    sources_file = workdir / "sources.txt"
    np.savetxt(sources_file, sources + 1, fmt="%d")      # DIMACS ids are 1-based
    out = workdir / "rmat20-betweenness.zarr"

    def command(sources_file: Path) -> list:
        return [sys.executable, "-m", "mgapsp", "run", str(graph_file), "-o", str(out),
                "--metrics", "betweenness", "--no-distances", "--sources",
                str(sources_file), "--overwrite", "--no-dashboard"]

    # a small job first: a fresh machine compiles the kernels inside its first
    # batches, which the measured job should not count
    warm = workdir / "warm.txt"
    np.savetxt(warm, sources[:4096] + 1, fmt="%d")
    subprocess.run(command(warm), capture_output=True, text=True, check=True)
    cmd = command(sources_file)
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    print(p.stdout[-3000:], p.stderr[-2000:], flush=True)
    t = time.perf_counter()
    v = subprocess.run([sys.executable, "-m", "mgapsp", "verify", str(out), "--samples",
                        "64"], capture_output=True, text=True)
    verify_s = time.perf_counter() - t
    print(v.stdout[-2000:], v.stderr[-1000:], flush=True)
    peer_s = _networkit_sampled(gen, samples)
    per_source = wall / n_sources
    return {"graph": "rmat20", "n": gen.n, "m": gen.m, "sources": n_sources,
            "rc": p.returncode, "wall_s": wall, "s_per_source": per_source,
            "whole_graph_estimate_s": per_source * gen.n,
            "verify_rc": v.returncode, "verify_s": verify_s,
            "verify": v.stdout.splitlines()[-4:],
            "networkit_samples": samples, "networkit_s": peer_s,
            "networkit_s_per_source": peer_s / samples,
            "vs_networkit": (peer_s / samples) / per_source,
            "summary": p.stdout.splitlines()[-12:]}


def _networkit_sampled(gen, samples: int) -> float:
    """Seconds of NetworKit's ``EstimateBetweenness`` from ``samples`` sources (Brandes'
    searches and accumulation for each, in parallel on every core)."""
    import networkit as nk

    algo = nk.centrality.EstimateBetweenness(_networkit_graph(gen, True), samples, False,
                                             True)
    t = time.perf_counter()
    algo.run()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--rmat20-sources", type=int, default=65536)
    ap.add_argument("--peer-samples", type=int, default=64)
    args = ap.parse_args()
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    gpus = cupy.cuda.runtime.getDeviceCount()
    graphs = args.graphs.split(",")
    rows = [one_graph(g, args.repeats, not args.no_peer) for g in graphs if g in GRAPHS]
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "gpu": gpu, "gpus": gpus, "cores": os.cpu_count(), "rows": rows}
    if "rmat20" in graphs:
        with tempfile.TemporaryDirectory() as d:
            r["rmat20"] = rmat20_job(Path(d), args.rmat20_sources, args.peer_samples)
    stem = (f"betweenness-{dt.date.today().isoformat()}-{gpu.replace(' ', '-')}"
            + ("-rmat20" if "rmat20" in graphs else ""))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(r, indent=1))
    lines = [f"# Exact weighted betweenness ({r['date']}, {gpus} x {gpu}, "
             f"NetworKit on {r['cores']} cores)", ""]
    if rows:
        lines += ["| graph | n | arcs | mgapsp s (first call) | closeness s | NetworKit s "
                  "| x | max rel. diff |", "|---|---|---|---|---|---|---|---|"]
    for w in rows:
        peer = (f"{w['networkit_s']:.1f} | {w['vs_networkit']:.1f} | "
                f"{w['max_rel_diff']:.1e}" if "networkit_s" in w else "- | - | -")
        lines.append(f"| {w['graph']} | {w['n']:,} | {w['arcs']:,} | {w['s']:.3f} "
                     f"({w['first_s']:.3f}) | {w['closeness_s']:.3f} | {peer} |")
    if "rmat20" in r:
        j = r["rmat20"]
        lines.append(
            f"\nrmat20 ({j['n']:,} vertices, {j['m']:,} arcs), betweenness from "
            f"{j['sources']:,} random sources by `mgapsp run --metrics betweenness "
            f"--no-distances` on {gpus} GPU(s): exit {j['rc']}, {j['wall_s']:.1f} s from "
            f"start to exit, {j['s_per_source'] * 1e3:.2f} ms a source; every source "
            f"estimated at {j['whole_graph_estimate_s']:.0f} s. `mgapsp verify` (one "
            f"batch against NetworkX's Brandes): exit {j['verify_rc']}. NetworKit's "
            f"EstimateBetweenness from {j['networkit_samples']} sources on {r['cores']} "
            f"cores: {j['networkit_s']:.1f} s, {j['networkit_s_per_source'] * 1e3:.1f} ms "
            f"a source: {j['vs_networkit']:.1f}x.")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
