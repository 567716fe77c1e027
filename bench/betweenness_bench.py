"""Exact weighted betweenness of every vertex: mgapsp on one GPU against NetworKit's
exact ``Betweenness`` on every core of this machine, in the same run.

    python -m bench.betweenness_bench [--graphs rmat16,grid256] [--out bench]
                                      [--repeats 2] [--no-peer]

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

Writes ``betweenness-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path

import numpy as np

import mgapsp
from bench import generators
from bench.timing import first_then_median

GRAPHS = {"rmat16": (lambda: generators.rmat(16, 8, seed=1), True),
          "grid256": (lambda: generators.grid(256, drop=0.1, seed=1), False)}


def _networkit(gen, directed: bool) -> tuple[float, np.ndarray]:
    import networkit as nk

    nk.setNumberOfThreads(os.cpu_count())
    G = nk.Graph(gen.n, weighted=True, directed=directed)
    keep = np.ones(gen.m, dtype=bool) if directed else gen.tail < gen.head
    for u, v, w in zip(gen.tail[keep].tolist(), gen.head[keep].tolist(),
                       gen.weight[keep].tolist()):
        G.addEdge(u, v, float(w))
    algo = nk.centrality.Betweenness(G, False, False)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args()
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = [one_graph(g, args.repeats, not args.no_peer) for g in args.graphs.split(",")]
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "gpu": gpu, "cores": os.cpu_count(), "rows": rows}
    stem = f"betweenness-{dt.date.today().isoformat()}-{gpu.replace(' ', '-')}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(r, indent=1))
    lines = [f"# Exact weighted betweenness of every vertex ({r['date']}, 1 x {gpu}, "
             f"NetworKit on {r['cores']} cores)", "",
             "| graph | n | arcs | mgapsp s (first call) | closeness s | NetworKit s | x "
             "| max rel. diff |", "|---|---|---|---|---|---|---|---|"]
    for w in rows:
        peer = (f"{w['networkit_s']:.1f} | {w['vs_networkit']:.1f} | "
                f"{w['max_rel_diff']:.1e}" if "networkit_s" in w else "- | - | -")
        lines.append(f"| {w['graph']} | {w['n']:,} | {w['arcs']:,} | {w['s']:.3f} "
                     f"({w['first_s']:.3f}) | {w['closeness_s']:.3f} | {peer} |")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
