"""Closeness and harmonic centrality of every vertex without the n x n matrix: mgapsp
against NetworKit's exact ``Closeness`` and ``HarmonicCloseness`` on every core of
this machine, in the same run.

    python -m bench.metrics_bench [--parts small,rmat20,grid1000] [--out bench]
                                  [--repeats 2] [--peer-metrics closeness,harmonic]

Graphs (``bench/generators.py``, seeded):

- ``small``: R-MAT scale 16 (edge factor 8, weights 1..99, directed) and a 256 x 256
  grid with 10% of its edges removed (weights 10..999, undirected), on one GPU.
  mgapsp: wall clock of ``mgapsp.closeness_centrality(graph, distance="weight")``
  (and ``harmonic_centrality``, ``distance_histogram``), the median of ``--repeats``
  after a first call, for ``auto`` and, on the grid, ``phast`` (its first call builds
  the hierarchy: reported apart).  NetworKit: one run each (tens of seconds), given
  the R-MAT graph reversed (it counts the distances out of a vertex, NetworkX into
  it); every value is compared.
- ``rmat20``: every vertex's closeness and harmonic centrality of R-MAT scale 20 as a
  job, ``mgapsp run --metrics closeness,harmonic --no-distances --reverse`` on every
  GPU of this machine (wall clock, store size), a few vertices checked against SciPy;
  NetworKit's time estimated from one Dijkstra search per sampled vertex (what its
  ``Closeness`` runs for every vertex), divided by this machine's cores.
- ``grid1000``: closeness of the 1000 x 1000 grid with ``phast`` on one GPU, if its
  hierarchy builds within ``--build-limit`` seconds (else the time it was given).

Writes ``metrics-<date>-<gpu>.md`` and ``.json`` to ``--out`` (the parts run).
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

from bench import generators
from bench.timing import first_then_median
import mgapsp

ROOT = Path(__file__).resolve().parents[1]

BACKEND = "gpu"
#: NetworKit's algorithms to run (each takes tens of seconds to minutes)
PEER_METRICS = ("closeness", "harmonic")
GRAPHS = {"rmat16": lambda: generators.rmat(16, 8, seed=1),
          "grid256": lambda: generators.grid(256, drop=0.1, seed=1)}


def _networkit(gen, directed: bool, metrics=("closeness", "harmonic")):
    import networkit as nk

    G = nk.Graph(gen.n, weighted=True, directed=directed)
    keep = np.ones(gen.m, dtype=bool) if directed else gen.tail < gen.head
    # NetworKit counts the distances out of a vertex, NetworkX (and mgapsp) those into
    # it: a directed graph goes to NetworKit reversed, so the values compare
    tail, head = (gen.head, gen.tail) if directed else (gen.tail, gen.head)
    for u, v, w in zip(tail[keep].tolist(), head[keep].tolist(),
                       gen.weight[keep].tolist()):
        G.addEdge(u, v, float(w))
    out = {}
    makers = {"closeness": lambda: nk.centrality.Closeness(
                  G, True, nk.centrality.ClosenessVariant.GENERALIZED),
              "harmonic": lambda: nk.centrality.HarmonicCloseness(G, False)}
    for name in metrics:
        make = makers[name]
        algo = make()
        t = time.perf_counter()
        algo.run()
        out[name] = (time.perf_counter() - t, np.asarray(algo.scores()))
    return out


def one_graph(name: str, repeats: int) -> dict:
    gen = GRAPHS[name]()
    directed = name.startswith("rmat")
    graph = mgapsp.Graph(*_csr(gen), directed=directed, name=name)
    row = {"graph": name, "n": gen.n, "m": gen.m, "directed": directed, "runs": []}
    for algorithm in ("auto",) if directed else ("auto", "phast"):
        for metric, fn in (("closeness", mgapsp.closeness_centrality),
                           ("harmonic", mgapsp.harmonic_centrality),
                           ("histogram", _histogram)):
            sec, first, _, out = first_then_median(
                lambda fn=fn: fn(graph, distance="weight", backend=BACKEND,
                                 algorithm=algorithm), repeats)
            run = {"algorithm": algorithm, "metric": metric, "s": sec, "first_s": first}
            if metric != "histogram":
                run["values"] = np.array(list(out.values()))
            row["runs"].append(run)
            print(f"{name} {algorithm} {metric}: {sec:.3f} s (first {first:.3f} s)",
                  flush=True)
    peer = _networkit(gen, directed, PEER_METRICS)
    for metric, (sec, scores) in peer.items():
        row[f"networkit_{metric}_s"] = sec
        for run in row["runs"]:
            if run["metric"] != metric:
                continue
            run["vs_networkit"] = sec / run["s"]
            run["vs_networkit_first"] = sec / run["first_s"]
            ours = run["values"]
            run["max_rel_diff"] = float(np.max(np.abs(ours - scores) /
                                               np.maximum(np.abs(scores), 1e-300)))
        print(f"{name} NetworKit {metric}: {sec:.1f} s", flush=True)
    for run in row["runs"]:
        run.pop("values", None)
    return row


def _histogram(graph, distance, backend, algorithm):
    return mgapsp.distance_histogram(graph, backend=backend, algorithm=algorithm)


def rmat20_job(workdir: Path, samples: int, limit: float) -> dict:
    """Every vertex's closeness and harmonic centrality of R-MAT 2^20 by ``mgapsp run``
    on every GPU, the metrics alone; NetworKit's time from sampled searches.  A job
    not done in ``limit`` seconds is stopped, and its rows done so far counted."""
    from scipy.sparse import csgraph

    gen = generators.rmat(20, 8, seed=1)
    graph_file = generators.write_dimacs(gen, workdir / "rmat20.gr")
    out = workdir / "rmat20-metrics.zarr"
    cmd = [sys.executable, "-m", "mgapsp", "run", str(graph_file), "-o", str(out),
           "--metrics", "closeness,harmonic", "--no-distances", "--reverse",
           "--overwrite", "--no-dashboard"]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=limit)
    except subprocess.TimeoutExpired as e:
        p = subprocess.CompletedProcess(cmd, -9, (e.stdout or b"").decode(),
                                        (e.stderr or b"").decode())
    wall = time.perf_counter() - t
    print(p.stdout[-3000:], p.stderr[-2000:], flush=True)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    res = mgapsp.open(out)
    # closeness counts the distances into a vertex: SciPy's rows of the reversed graph
    rev = gen.csr().T.tocsr()
    rng = np.random.default_rng(5)
    has_arcs = np.flatnonzero(np.diff(rev.indptr))
    # vertices with arcs whose rows are in (all of them, unless the job was stopped)
    done = np.flatnonzero(res.store.done_mask().repeat(res.store.job["batch_size"])[:gen.n])
    check = np.sort(rng.choice(done[np.isin(done, has_arcs)], 4, replace=False))
    d = csgraph.dijkstra(rev, indices=check)
    r = np.isfinite(d).sum(axis=1)
    total = np.where(np.isfinite(d), d, 0).sum(axis=1)
    want = np.where(total > 0, (r - 1) / total, 0.0) * (r - 1) / (gen.n - 1)
    got = res.metric("closeness", check + 1)
    rel = float(np.max(np.abs(got - want) / np.maximum(want, 1e-300)))
    peer_s, peer_sources = _networkit_searches(gen, rev, samples, rng)
    return {"graph": "rmat20", "n": gen.n, "m": gen.m, "rc": p.returncode,
            "wall_s": wall, "rows_done": len(done), "store_mib": size / 2**20, "checked": check.tolist(),
            "max_rel_diff": rel, "networkit_search_s": peer_s,
            "networkit_sources": peer_sources,
            "networkit_estimate_s": peer_s * gen.n / os.cpu_count(),
            "summary": p.stdout.splitlines()[-12:]}


def _networkit_searches(gen, rev, samples: int, rng) -> tuple[float, int]:
    """Seconds of one NetworKit Dijkstra search (distances only) from a vertex, the
    median over ``samples`` vertices with arcs (of the graph closeness searches)."""
    import networkit as nk

    G = nk.Graph(gen.n, weighted=True, directed=True)
    coo = rev.tocoo()
    for u, v, w in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()):
        G.addEdge(u, v, w)
    times = []
    for s in rng.choice(np.flatnonzero(np.diff(rev.indptr)), samples, replace=False):
        algo = nk.distance.Dijkstra(G, int(s), storePaths=False)
        t = time.perf_counter()
        algo.run()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), samples


def grid1000_phast(limit: float) -> dict:
    """Closeness of the 1000 x 1000 grid by phast in a child process given ``limit``
    seconds: the hierarchy's build and the sweeps, timed apart."""
    code = f"""
import sys, time, json
import mgapsp
from bench import generators
from mgapsp import hierarchy
gen = generators.grid(1000, drop=0.1, seed=1)
m = gen.csr()
g = mgapsp.Graph(m.indptr, m.indices, m.data, directed=False, name="grid1000")
t = time.perf_counter(); hierarchy.for_graph(g); build = time.perf_counter() - t
print(json.dumps({{"build_s": build}}), flush=True)
t = time.perf_counter()
c = mgapsp.closeness_centrality(g, distance="weight", backend="gpu", algorithm="phast")
print(json.dumps({{"build_s": build, "closeness_s": time.perf_counter() - t}}), flush=True)
"""
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=ROOT, timeout=limit)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        out = json.loads(lines[-1]) if lines else {"error": p.stderr[-1500:]}
    except subprocess.TimeoutExpired as e:
        lines = [ln for ln in (e.stdout or b"").decode().splitlines() if ln.startswith("{")]
        out = json.loads(lines[-1]) if lines else {}
        out["timed_out_after_s"] = limit
    out["wall_s"] = time.perf_counter() - t
    print("grid1000 phast:", out, flush=True)
    return out


def _csr(gen):
    m = gen.csr()
    return m.indptr, m.indices, m.data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--parts", default="small")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--peer-metrics", default="closeness,harmonic")
    ap.add_argument("--peer-samples", type=int, default=16)
    ap.add_argument("--build-limit", type=float, default=120.0)
    ap.add_argument("--job-limit", type=float, default=540.0)
    args = ap.parse_args()
    global PEER_METRICS
    PEER_METRICS = tuple(args.peer_metrics.split(","))
    parts = args.parts.split(",")
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "gpu": gpu, "gpus": cupy.cuda.runtime.getDeviceCount(), "cores": os.cpu_count()}
    if "small" in parts:
        r["graphs"] = [one_graph(g, args.repeats) for g in GRAPHS]
    if "grid1000" in parts:
        r["grid1000"] = grid1000_phast(args.build_limit)
    if "rmat20" in parts:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
            r["rmat20"] = rmat20_job(Path(d), args.peer_samples, args.job_limit)
    stem = f"metrics-{dt.date.today().isoformat()}-{gpu.replace(' ', '-')}-{'-'.join(parts)}"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, stem + ".json").write_text(json.dumps(r, indent=1, default=str))
    lines = [f"# Network metrics of every vertex ({r['date']}, {r['gpus']} x {gpu}, "
             f"NetworKit on {r['cores']} cores)", ""]
    if "graphs" in r:
        lines += ["| graph | n | arcs | algorithm | metric | mgapsp s (first call) | "
                  "NetworKit s | x (x first call) | max rel. diff |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for g in r["graphs"]:
            for run in g["runs"]:
                peer = g.get(f"networkit_{run['metric']}_s")
                diff = run.get("max_rel_diff")
                lines.append(
                    f"| {g['graph']} | {g['n']:,} | {g['m']:,} | {run['algorithm']} | "
                    f"{run['metric']} | {run['s']:.3f} ({run['first_s']:.3f}) | "
                    + (f"{peer:.1f} | {run['vs_networkit']:.0f} "
                       f"({run['vs_networkit_first']:.0f}) | " if peer else "- | - | ")
                    + f"{'-' if diff is None else f'{diff:.1e}'} |")
        lines.append("")
    if "grid1000" in r:
        g = r["grid1000"]
        lines.append(f"grid1000 (1M vertices), closeness by phast on one GPU: " + (
            f"hierarchy built in {g['build_s']:.1f} s, closeness of every vertex in "
            f"{g['closeness_s']:.1f} s" if "closeness_s" in g else
            f"did not finish in {g.get('timed_out_after_s', g['wall_s']):.0f} s "
            f"({'hierarchy built in %.1f s' % g['build_s'] if 'build_s' in g else 'the hierarchy did not build'})"))
        lines.append("")
    if "rmat20" in r:
        j = r["rmat20"]
        lines.append(
            f"rmat20 ({j['n']:,} vertices, {j['m']:,} arcs), closeness and harmonic "
            f"centrality of every vertex by `mgapsp run --no-distances` on {r['gpus']} "
            f"GPU(s): exit {j['rc']}, {j['rows_done']:,} rows in {j['wall_s']:.1f} s wall, store "
            f"{j['store_mib']:.1f} MiB, max rel. diff against SciPy on 4 vertices "
            f"{j['max_rel_diff']:.1e}; NetworKit estimated {j['networkit_estimate_s']:.0f} s "
            f"on {r['cores']} cores ({j['networkit_search_s'] * 1e3:.1f} ms a search, "
            f"median of {j['networkit_sources']}, times n / cores): "
            f"{j['networkit_estimate_s'] / j['wall_s']:.1f}x")
    Path(args.out, stem + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
