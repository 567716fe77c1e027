"""Does ``auto`` pick as well as the best explicit algorithm?  ``mgapsp.apsp`` in process
on one GPU, for ``auto`` and every algorithm that applies, on graphs of every kind.

    python -m bench.auto_matrix [--out bench] [--repeats 2] [--graphs a,b,...]

A few rows by each algorithm first compile the kernels and put the graph on the
device; then each variant is called once ("first call": a hierarchy built where the
algorithm needs one) and ``--repeats`` times more (their median: a process that calls
again).  ``auto`` runs first on
each graph, before any hierarchy of it exists, and once more at the end, after
``phast`` built one (auto then sweeps it).  Every variant's rows are compared with
SciPy's Dijkstra on a sample of sources.  Writes ``auto-matrix-<date>-<gpu>.md`` and
``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from bench import generators
from bench.timing import first_then_median
import mgapsp
from mgapsp import hierarchy
from mgapsp.backends import get_backend
from mgapsp.plan import plan_job

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "tests" / "data"
BACKEND = "gpu"


def _dense(n: int = 4096, seed: int = 1):
    """A dense random digraph: half of the n² arcs, integer weights 1..1000."""
    rng = np.random.default_rng(seed)
    m = rng.random((n, n)) < 0.5
    np.fill_diagonal(m, False)
    w = np.where(m, rng.integers(1, 1001, (n, n)), 0).astype(np.float64)
    return sp.csr_matrix(w)


#: name -> (graph maker, sources (None: all), algorithms besides auto)
GRAPHS = {
    "p2p-Gnutella31": (lambda: mgapsp.read_graph(DATA / "p2p-Gnutella31.txt"), 4096,
                       ["bellman-ford", "dijkstra"]),
    "NY": (lambda: mgapsp.read_graph(DATA / "NY.pace.gr.gz"), 4096,
           ["bellman-ford", "dijkstra", "phast"]),
    "Austin": (lambda: mgapsp.read_graph(DATA / "Austin_net.tntp"), None,
               ["bellman-ford", "dijkstra", "phast"]),
    "delaunay_n14": (lambda: mgapsp.read_graph(ROOT / "bench" / "data" / "delaunay_n14.mtx"),
                     None, ["bellman-ford", "dijkstra", "phast"]),
    # a hierarchy of R-MAT or of the 1M grid does not build in minutes (issue 40): no
    # phast there
    "rmat20": (lambda: mgapsp.as_graph(generators.rmat(20, 8, seed=1).csr()), 4096,
               ["bellman-ford", "dijkstra"]),
    "grid1000": (lambda: mgapsp.as_graph(generators.grid(1000, seed=1).csr()), 256,
                 ["bellman-ford", "dijkstra"]),
    "dense4096": (lambda: mgapsp.as_graph(_dense()), None,
                  ["bellman-ford", "dijkstra", "floyd-warshall"]),
}


def run_variant(graph, sources, algorithm: str, repeats: int, where, ref) -> dict:
    def call():
        return mgapsp.apsp(graph, sources=sources, algorithm=algorithm, backend=BACKEND)
    plan = plan_job(graph, algorithm=algorithm, backend=BACKEND, dtype="auto",
                    sources=sources, batch_size=None, predecessors=False, n_workers=1,
                    memory=get_backend(BACKEND).memory_available(),
                    hierarchy_ready=algorithm == "auto" and hierarchy.known(graph))
    seconds, first, times, out = first_then_median(call, repeats)
    got = np.asarray(out)[where].astype(np.float64)
    finite = np.isfinite(ref)
    # integer weights: equal; real ones: to the rounding of sums in another order
    exact = bool(np.array_equal(finite, np.isfinite(got))
                 and np.allclose(got[finite], ref[finite], rtol=1e-9, atol=0))
    return {"algorithm": algorithm, "ran": plan.algorithm, "dtype": str(out.dtype),
            "first_s": first, "seconds": seconds, "runs": times,
            "exact": exact}


def one_graph(name: str, repeats: int) -> dict:
    make, k, algorithms = GRAPHS[name]
    t = time.perf_counter()
    graph = make()
    made = time.perf_counter() - t
    sources = (np.arange(graph.n) if k is None or k >= graph.n else
               np.sort(np.random.default_rng(7).choice(graph.n, k, replace=False)))
    pick = np.sort(np.random.default_rng(1).choice(len(sources), min(8, len(sources)),
                                                   replace=False))
    csr = sp.csr_matrix((graph.weights, graph.indices, graph.indptr),
                        shape=(graph.n, graph.n))
    t = time.perf_counter()
    ref = csgraph.dijkstra(csr, indices=sources[pick])
    scipy_s = (time.perf_counter() - t) * len(sources) / len(pick)
    labels = graph.labels[sources]
    print(f"{name}: n={graph.n:,} m={graph.m:,}, {len(sources):,} sources, made in "
          f"{made:.1f} s, SciPy {scipy_s:.1f} s", flush=True)
    # the process's first call on the graph (kernels compiled, the graph on the
    # device) is no variant's: a few rows by each algorithm that builds nothing
    for algorithm in algorithms:
        if algorithm != "phast":
            mgapsp.apsp(graph, sources=labels[:64], algorithm=algorithm, backend=BACKEND)
    rows = []
    for algorithm in ["auto"] + algorithms + (["auto"] if "phast" in algorithms else []):
        r = run_variant(graph, labels, algorithm, repeats, pick, ref)
        r["after_hierarchy"] = algorithm == "auto" and bool(rows)
        rows.append(r)
        print(f"  {algorithm:>14} -> {r['ran']:<14} {r['dtype']}: first {r['first_s']:.3f} s, "
              f"then {r['seconds']:.3f} s, exact {r['exact']}", flush=True)
    explicit = [r for r in rows if r["algorithm"] != "auto"]
    best_first = min(explicit, key=lambda r: r["first_s"])
    best = min(explicit, key=lambda r: r["seconds"])
    auto_first = rows[0]
    auto_then = [r for r in rows if r["algorithm"] == "auto"][-1]
    return {"graph": name, "n": graph.n, "m": graph.m, "sources": len(sources),
            "scipy_s": scipy_s, "variants": rows,
            "first_ratio": auto_first["first_s"] / best_first["first_s"],
            "best_first": best_first["algorithm"],
            "then_ratio": auto_then["seconds"] / best["seconds"], "best": best["algorithm"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    args = ap.parse_args()
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "gpu": gpu, "graphs": [one_graph(g, args.repeats)
                                     for g in args.graphs.split(",")]}
    stem = f"auto-matrix-{dt.date.today().isoformat()}-{gpu.replace(' ', '-')}"
    Path(args.out, stem + ".json").write_text(json.dumps(result, indent=1, default=str))
    Path(args.out, stem + ".md").write_text(_markdown(result))
    print(_markdown(result))


def _markdown(r: dict) -> str:
    lines = [f"# auto against every explicit algorithm ({r['date']}, {r['gpu']})", "",
             "`mgapsp.apsp(graph, sources=...)` in process, one GPU.  First call: what a "
             "process calling once pays (a hierarchy built included); then: the median "
             "of the calls after.  auto's ratio to the best explicit algorithm of each.",
             "", "| graph | n | sources | variant | ran | dtype | first call s | then s | "
             "exact |", "|---|---|---|---|---|---|---|---|---|"]
    for g in r["graphs"]:
        for v in g["variants"]:
            name = v["algorithm"] + (" (hierarchy built)" if v["after_hierarchy"] else "")
            lines.append(f"| {g['graph']} | {g['n']:,} | {g['sources']:,} | {name} | "
                         f"{v['ran']} | {v['dtype']} | {v['first_s']:.3f} | "
                         f"{v['seconds']:.3f} | {v['exact']} |")
    lines += ["", "| graph | auto / best, first call | best first | auto / best, then | "
              "best then |", "|---|---|---|---|---|"]
    for g in r["graphs"]:
        lines.append(f"| {g['graph']} | {g['first_ratio']:.2f} | {g['best_first']} | "
                     f"{g['then_ratio']:.2f} | {g['best']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
