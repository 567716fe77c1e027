"""GPU kernel benchmark on one device, against SciPy measured in the same run.

    python workflows/benchmark.py [--out bench] [--quick]

Times every kernel with CUDA events (warm-up, then the median of repeats), counts
edge relaxations, and times SciPy's ``shortest_path`` on this machine's CPU (one
process).  Where SciPy would take minutes, it is timed on a random sample of the
sources and scaled by the count (its cost per source does not depend on the other
sources), and Floyd-Warshall on a smaller n scaled by n^3; the table says which.
Writes ``results-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

import mgapsp
from mgapsp import hierarchy
from mgapsp.cuda import bellman_ford, device, frontier, phast, sssp
from mgapsp.cuda import floyd_warshall as FW
from mgapsp.graph import Graph

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
#: the Bellman-Ford switches, each measured off in the ablation rows
BF_FLAGS = [f.name for f in dataclasses.fields(frontier.BFOptions)]


# -- timing ---------------------------------------------------------------------
def gpu_time(fn, *, warmup=1, repeats=5):
    """Median seconds of ``fn()`` between CUDA events, after warm-up; and its result."""
    import cupy

    result = None
    for _ in range(warmup):
        result = fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        result = fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(times), times, result


def cpu_time(fn, *, repeats=1):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def scipy_seconds(graph: Graph, sources, method: str, sample: int | None, seed=0):
    """SciPy's time for ``sources``; sampled and scaled when ``sample`` < len(sources)."""
    csr = graph.to_scipy()
    sources = np.asarray(sources)
    if sample is None or sample >= len(sources):
        return cpu_time(lambda: csgraph.shortest_path(csr, method=method, indices=sources)), \
            "all sources"
    pick = np.random.default_rng(seed).choice(sources, size=sample, replace=False)
    t = cpu_time(lambda: csgraph.shortest_path(csr, method=method, indices=pick))
    return t * len(sources) / sample, f"{sample} sampled, scaled x{len(sources) / sample:.1f}"


def check(dist_gpu, graph, sources, method, rows=64, rtol=1e-4):
    """Spot-check the benchmarked output against SciPy: a benchmark of a wrong answer
    is worthless."""
    import cupy

    pick = np.linspace(0, len(sources) - 1, min(rows, len(sources))).astype(int)
    ref = csgraph.shortest_path(graph.to_scipy(), method=method,
                                indices=np.asarray(sources)[pick])
    got = cupy.asnumpy(dist_gpu[cupy.asarray(pick)]).astype(np.float64)
    fin = np.isfinite(ref)
    ok = (np.isinf(got) == np.isinf(ref)).all() and np.allclose(
        got[fin], ref[fin], rtol=rtol, atol=rtol * max(1.0, np.abs(ref[fin]).max(initial=0)))
    if not ok:
        raise SystemExit(f"benchmark output differs from scipy ({graph.name}, {method})")


# -- graphs ---------------------------------------------------------------------
def gnutella_weighted(seed=1):
    g = mgapsp.read_graph(DATA / "p2p-Gnutella09.txt")
    w = np.random.default_rng(seed).integers(1, 11, g.m).astype(np.float64)
    return Graph(g.indptr, g.indices, w, vertex_ids=g.vertex_ids,
                 name="p2p-Gnutella09 (w 1..10)")


def gnutella_negative(seed=2):
    g = gnutella_weighted()
    p = np.random.default_rng(seed).integers(0, 20, g.n).astype(np.float64)
    w = g.weights + p[g.sources_of_edges] - p[g.indices]
    return Graph(g.indptr, g.indices, w, vertex_ids=g.vertex_ids,
                 name="p2p-Gnutella09 (w 1..10 + potentials)")


# -- runs -------------------------------------------------------------------------
def sssp_rows(graph, sources, *, scipy_method, sample, algos, bf_ablation=False, rows=None):
    """Time each GPU algorithm on ``sources`` (one batch), SciPy once, and the ratios."""
    rows = [] if rows is None else rows
    t_ref, how = scipy_seconds(graph, sources, scipy_method, sample)
    B = len(sources)
    d32 = device.upload_graph(graph, np.float32)
    cases = []
    if "bellman-ford" in algos:
        cases.append(("bellman-ford", lambda: bellman_ford.bellman_ford_batch(d32, sources)))
        if bf_ablation:
            for flag in BF_FLAGS:
                opts = frontier.BFOptions(**{flag: False})
                cases.append((f"bellman-ford, {flag} off",
                              lambda o=opts: bellman_ford.bellman_ford_batch(d32, sources, options=o)))
    if "dijkstra" in algos:
        for variant in ("general", "economic"):
            cases.append((f"crauser dijkstra ({variant})",
                          lambda v=variant: sssp.dijkstra_batch(d32, sources, variant=v)))
    if "phast" in algos:
        t0 = time.perf_counter()
        h = hierarchy.build(graph)
        prep = time.perf_counter() - t0
        dh = phast.upload(h, np.float32)
        cases.append((f"phast (hierarchy built in {prep:.2f} s, not timed)",
                      lambda: phast.phast_batch(dh, sources)))
    if "johnson" in algos:
        d64 = device.upload_graph(graph, np.float64)

        def johnson():
            h = bellman_ford.bellman_ford_potentials(d64)
            rw = sssp.reweight(d32, h)
            return sssp.johnson_batch(rw, sources, h)

        cases.append(("johnson (potentials + reweight + dijkstra)", johnson))
    for label, fn in cases:
        t, times, (dist, _pred, stats) = gpu_time(fn, repeats=3 if B * graph.n > 1e8 else 5)
        check(dist, graph, sources, scipy_method)
        relax = stats.get("relaxations", 0)
        rows.append({
            "graph": graph.name, "n": graph.n, "m": graph.m, "sources": B, "algorithm": label,
            "gpu_s": t, "gpu_runs_s": times, "rounds": stats.get("rounds"),
            "relaxations": relax, "relax_per_s": relax / t if t else 0.0,
            "relax_per_edge": relax / (graph.m * B), "scipy_method": scipy_method,
            "scipy_s": t_ref, "scipy_how": how, "speedup": t_ref / t,
        })
        print(f"  {graph.name:40s} {label:44s} {t * 1e3:9.2f} ms  x{t_ref / t:8.1f}",
              flush=True)
        del dist
    device.release_pool()
    return rows


def fw_rows(n, scipy_n, rows=None):
    """Floyd-Warshall on random complete graphs of n vertices, one row per method.

    fp32 runs twice: on non-negative weights (the kernel then folds two pivots into
    one DPX three-way min) and on weights reweighted with random potentials
    (negative entries, no negative cycle), where it needs an add and a min per update.
    """
    import cupy

    rows = [] if rows is None else rows
    rng = np.random.default_rng(3)
    small = rng.integers(1, 100, (scipy_n, scipy_n)).astype(np.float64)
    t_small = cpu_time(lambda: csgraph.floyd_warshall(small, directed=True))
    t_ref = t_small * (n / scipy_n) ** 3
    cases = [("fp32", "fp32", cupy.float32, 1, 100, False),
             ("fp32, negative entries", "fp32", cupy.float32, 1, 100, True),
             ("int32-dpx", "int32-dpx", cupy.int32, 1, 1000, False),
             ("int16x2-dpx", "int16x2-dpx", cupy.int16, 1, 20, False)]
    for label, method, dtype, lo, hi, negative in cases:
        weights = cupy.asarray(rng.integers(lo, hi, (n, n)), dtype=dtype)
        cupy.fill_diagonal(weights, 0)
        base = weights
        shift = None
        if negative:
            shift = cupy.asarray(rng.uniform(0, 50, n), dtype=cupy.float32)
            base = weights + shift[:, None] - shift[None, :]
        work = base.copy()

        def run():
            work[...] = base
            return FW.floyd_warshall_dense(work, method=method)

        # The copy is timed too; at 4 TB/s it is under 1 ms of the hundreds.
        t, times, stats = gpu_time(run, repeats=3)
        result = work if shift is None else work - shift[:, None] + shift[None, :]
        _check_fw_sample(weights, result, rtol=1e-5 if shift is None else 1e-4)
        rate = n ** 3 / t
        rows.append({"graph": f"random complete n={n}", "n": n, "m": n * n, "sources": n,
                     "algorithm": f"floyd-warshall {label} ({stats.get('method', method)})",
                     "gpu_s": t, "gpu_runs_s": times,
                     "updates_per_s": rate, "scipy_method": "FW",
                     "scipy_s": t_ref,
                     "scipy_how": f"n={scipy_n} in {t_small:.2f} s, scaled by n^3",
                     "speedup": t_ref / t})
        print(f"  FW n={n} {label:24s} {t:8.3f} s  {rate / 1e12:6.2f} T updates/s  "
              f"x{t_ref / t:8.0f}", flush=True)
        del base, work, weights, result
        device.release_pool()
    return rows


def _check_fw_sample(base, result, k=6, rtol=1e-5):
    """A few rows of the result by Dijkstra from those sources on the same matrix."""
    import cupy

    n = base.shape[0]
    rows = np.linspace(0, n - 1, k).astype(int)
    mat = cupy.asnumpy(base).astype(np.float64)
    ref = csgraph.dijkstra(mat, directed=True, indices=rows)  # complete: no zero edges
    got = cupy.asnumpy(result[cupy.asarray(rows)]).astype(np.float64)
    if not np.allclose(got, ref, rtol=rtol, atol=rtol * float(np.abs(ref).max())):
        raise SystemExit("floyd-warshall output differs from scipy")


# -- report ---------------------------------------------------------------------
def machine() -> dict:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    return {"gpu": props["name"].decode(), "sm": f"{props['major']}.{props['minor']}",
            "cpu": platform.processor() or platform.machine(), "host": socket.gethostname(),
            "cupy": cupy.__version__, "numpy": np.__version__,
            "scipy": __import__("scipy").__version__, "python": platform.python_version(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def write_report(rows, info, out: Path):
    out.mkdir(parents=True, exist_ok=True)
    stem = f"results-{info['date'][:10]}-{info['gpu'].replace(' ', '-')}"
    (out / f"{stem}.json").write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    lines = [f"# mgapsp kernel benchmark, {info['date']}", "",
             f"GPU {info['gpu']} (sm {info['sm']}), CuPy {info['cupy']}; SciPy "
             f"{info['scipy']} on the same machine's CPU, one process. GPU times: CUDA "
             "events, median of repeats after a warm-up, output left on the device. "
             "Relaxations = edges scanned; per edge = relaxations / (m x sources). Rounds: "
             "of the batch (Bellman-Ford: with work; Crauser: phases); per round = GPU time "
             "/ rounds.", "",
             "| graph | n | m | sources | algorithm | GPU time | rounds | per round "
             "| relax/s | relax per edge | min-plus updates/s | SciPy | SciPy time "
             "| speed-up |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        relax = f"{r['relax_per_s'] / 1e9:.2f} G" if r.get("relax_per_s") else ""
        per_edge = f"{r['relax_per_edge']:.2f}" if r.get("relax_per_edge") else ""
        upd = f"{r['updates_per_s'] / 1e12:.2f} T" if r.get("updates_per_s") else ""
        rounds = per_round = ""
        if r.get("rounds") and r.get("relax_per_s"):
            rounds = f"{r['rounds']:,}"
            per_round = _fmt_s(r["gpu_s"] / r["rounds"])
        lines.append(f"| {r['graph']} | {r['n']:,} | {r['m']:,} | {r['sources']:,} | "
                     f"{r['algorithm']} | {_fmt_s(r['gpu_s'])} | {rounds} | {per_round} | "
                     f"{relax} | {per_edge} | "
                     f"{upd} | {r['scipy_method']} ({r['scipy_how']}) | "
                     f"{_fmt_s(r['scipy_s'])} | {r['speedup']:,.1f}x |")
    path = out / f"{stem}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _fmt_s(s):
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", choices=["sssp", "fw"], default=None)
    args = parser.parse_args(argv)
    info = machine()
    print(f"{info['gpu']} | cupy {info['cupy']} | scipy {info['scipy']}", flush=True)
    rows = []
    if args.only in (None, "sssp"):
        g = gnutella_weighted()
        all_src = np.arange(g.n)
        sssp_rows(g, all_src, scipy_method="D", sample=None if not args.quick else 512,
                  algos=("bellman-ford", "dijkstra"), bf_ablation=True, rows=rows)
        gn = gnutella_negative()
        sssp_rows(gn, all_src, scipy_method="J", sample=None if not args.quick else 512,
                  algos=("bellman-ford", "johnson"), rows=rows)
        k = 256 if args.quick else 4096
        for name, sample in (("NY.pace.gr.gz", 32), ("Austin_net.tntp", 512)):
            road = mgapsp.read_graph(DATA / name)
            src = np.sort(np.random.default_rng(4).choice(road.n, size=k, replace=False))
            sssp_rows(road, src, scipy_method="D", sample=min(sample, k),
                      algos=("bellman-ford", "dijkstra", "phast"), bf_ablation=True,
                      rows=rows)
    if args.only in (None, "fw"):
        n = 4096 if args.quick else 16384
        fw_rows(n, scipy_n=512 if args.quick else 1024, rows=rows)
    path = write_report(rows, info, Path(args.out))
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
