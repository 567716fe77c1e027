"""Road-like graphs of one to four million vertices: mgapsp's hierarchy build and
PHAST against RoutingKit's customizable contraction hierarchy with its own orders,
and against mgapsp's Bellman-Ford, on the same machine.

    python -m bench.road_scale peer   --graph delaunay1m --parts DIR
    python -m bench.road_scale mgapsp --graph delaunay1m --parts DIR
    python -m bench.road_scale report --parts DIR [--out bench]

Each part is one process (the device runs a command for at most ten minutes) and
writes ``DIR/<graph>-<part>.json`` after each step; ``report`` puts the parts found
in ``DIR`` into ``road-scale-<date>-<gpu>.md`` and ``.json``.

Graphs (``bench/generators.py``, seeded, made in each part):

- ``delaunay1m``: the Delaunay triangulation of 1,000,000 random points, Euclidean
  integer weights;
- ``grid1000``: a 1000 x 1000 grid with 10% of its edges removed, weights 10..999;
- ``highway2000``: a 2000 x 2000 grid (4,000,000 vertices) with 10% of its edges
  removed and every 50th row and column four times faster;
- ``ny``: the NY road network of ``tests/data`` (no coordinates: ``mgapsp`` part
  only), to see the change at the size ``bench/road_bench.py`` measures.

``peer``: RoutingKit (``routingkit_cch``, ``bench/peers/routingkit.sh``) orders the
graph by inertial flow on its coordinates, builds its CCH and customizes it (each
timed), then answers 4,096 sources x all and a 1,000 x 1,000 origin-destination
matrix with one-to-many queries on ``--workers`` processes (default: every core);
then its degree order is timed in a child process given ``--degree-limit`` seconds.

``mgapsp``: ``hierarchy.for_graph`` (the build ``auto`` and ``phast`` run; the
process's peak memory beside it), then on the GPU the PHAST kernel on the same
4,096 sources (CUDA events, median of ``--repeats``; again with every level on one
lane a column, as before levels of few ranks were split over lanes), RPHAST and the full sweep for
the matrix, the kernel with predecessors (2,048 sources: their state doubles), the
Bellman-Ford kernel on the 4,096 sources (one run after a warm-up), and
``mgapsp.apsp(algorithm="phast")`` to NumPy (wall clock).  On ``highway2000``, 1,024
sources and no matrix (the peer's order would outlast the device's command limit).

Every method's rows are compared with SciPy's Dijkstra on a sample; SciPy's time per
source, from that sample, scales to each case.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

from bench import generators
import mgapsp

ROOT = Path(__file__).resolve().parents[1]


def _ny():
    g = mgapsp.read_graph(ROOT / "tests" / "data" / "NY.pace.gr.gz")
    arcs = generators._simple(g.n, g.sources_of_edges, g.indices.astype(np.int64),
                              g.weights.astype(np.int64))
    return generators.Generated("NY", g.n, *arcs)


GRAPHS = {"ny": _ny,
          "delaunay1m": lambda: generators.delaunay(1_000_000, seed=1),
          "grid1000": lambda: generators.grid(1000, drop=0.1, seed=1),
          "highway2000": lambda: generators.highway(2000, seed=1)}
#: sources of the many-to-all case (a 4M graph's block of 4,096 rows would not leave
#: room for predecessors on an 80 GB GPU)
SOURCES = {"highway2000": 1024}
CHECK = 6                   # rows of each method compared with SciPy
OD = 1000



def load(name: str):
    gen = GRAPHS[name]()
    csr = gen.csr()
    graph = mgapsp.Graph(csr.indptr, csr.indices, csr.data, directed=True, name=name)
    return gen, csr, graph


def cases(name: str, n: int):
    rng = np.random.default_rng(4)
    many = np.sort(rng.choice(n, SOURCES.get(name, 4096), replace=False))
    od_src = np.sort(rng.choice(n, OD, replace=False))
    od_tgt = np.sort(rng.choice(n, OD, replace=False))
    return many, od_src, od_tgt


def reference(csr, many, od_src):
    """SciPy's rows of the checked sources and its seconds per source."""
    check = np.concatenate([many[:CHECK], od_src[:CHECK]])
    t = time.perf_counter()
    rows = csgraph.dijkstra(csr, indices=check)
    per_source = (time.perf_counter() - t) / len(check)
    return {int(s): rows[i] for i, s in enumerate(check)}, per_source


def check(got: dict, ref: dict, what: str, columns=None) -> None:
    for s, row in got.items():
        want = ref[int(s)] if columns is None else ref[int(s)][columns]
        row = np.asarray(row, dtype=np.float64)
        if not (np.array_equal(np.isinf(row), np.isinf(want))
                and np.array_equal(row[np.isfinite(want)], want[np.isfinite(want)])):
            raise SystemExit(f"{what}: row of source {s} differs from SciPy")


class Part:
    """One part's record, rewritten after each step (a killed part keeps its steps)."""

    def __init__(self, parts: Path, graph: str, part: str, gen, per_source=None):
        self.path = parts / f"{graph}-{part}.json"
        self.data = {"graph": graph, "part": part, "name": gen.name, "n": gen.n,
                     "arcs": gen.m, "cpus": os.cpu_count(), "steps": {},
                     "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        parts.mkdir(parents=True, exist_ok=True)

    def add(self, step: str, **values) -> None:
        self.data["steps"][step] = values
        self.path.write_text(json.dumps(self.data, indent=1))
        print(f"{self.data['graph']} {step}: {values}", flush=True)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


# -- RoutingKit ---------------------------------------------------------------------

def _rk_build(order_of, n, tail, head, weights, coords, conn) -> None:
    """Child process: RoutingKit's order, CCH and customization, each timed."""
    import routingkit_cch as rk

    t = time.perf_counter()
    order = order_of(rk, n, tail, head, coords)
    t_order = time.perf_counter() - t
    t = time.perf_counter()
    cch = rk.CCH(order, tail, head, False)
    t_cch = time.perf_counter() - t
    t = time.perf_counter()
    rk.CCHMetric(cch, weights)
    conn.send((t_order, t_cch, time.perf_counter() - t))


def _degree(rk, n, tail, head, coords):
    return rk.compute_order_degree(n, tail, head)


def peer(name: str, parts: Path, workers: int, degree_limit: float, repeats: int) -> None:
    from bench import road_bench
    import routingkit_cch as rk

    gen, csr, graph = load(name)
    if gen.coords is None:
        raise SystemExit(f"{name} has no coordinates for RoutingKit's inertial flow")
    many, od_src, od_tgt = cases(name, gen.n)
    part = Part(parts, name, "peer", gen)
    ref, per_source = reference(csr, many, od_src)
    part.add("scipy", seconds_per_source=per_source, rows=len(ref))
    tail, head = gen.tail.tolist(), gen.head.tolist()
    weights = gen.weight.astype(np.int64).tolist()
    t = time.perf_counter()
    order = rk.compute_order_inertial(gen.n, tail, head, gen.coords[:, 1].tolist(),
                                      gen.coords[:, 0].tolist())
    t_order = time.perf_counter() - t
    t = time.perf_counter()
    cch = rk.CCH(order, tail, head, False)
    t_cch = time.perf_counter() - t
    t = time.perf_counter()
    metric = rk.CCHMetric(cch, weights)
    t_custom = time.perf_counter() - t
    part.add("build inertial", order_s=t_order, cch_s=t_cch, customization_s=t_custom,
             total_s=t_order + t_cch + t_custom, peak_rss_gb=peak_rss_gb())
    # the queries of bench/road_bench.py, its workers forked with the metric
    road_bench._PEER.update(metric=metric, all=list(range(gen.n)), od=od_tgt.tolist())
    with mp.get_context("fork").Pool(workers) as pool:
        secs, rows = road_bench.peer_time(pool, workers, many, "all", many[:CHECK], 1)
        check(rows, ref, "RoutingKit, many x all")
        part.add("many x all", seconds=secs, sources=len(many), workers=workers)
        if name not in SOURCES:
            secs, rows = road_bench.peer_time(pool, workers, od_src, "od", od_src[:CHECK],
                                              repeats)
            check(rows, ref, "RoutingKit, OD", od_tgt)
            part.add("od", seconds=secs, sources=OD, targets=OD, workers=workers)
    del cch, metric
    road_bench._PEER.clear()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_rk_build, args=(_degree, gen.n, tail, head, weights,
                                                None, send))
    t = time.perf_counter()
    child.start()
    done = recv.poll(degree_limit)
    if done:
        t_order, t_cch, t_custom = recv.recv()
        part.add("build degree", order_s=t_order, cch_s=t_cch, customization_s=t_custom,
                 total_s=t_order + t_cch + t_custom)
    else:
        child.kill()
        part.add("build degree", stopped_after_s=time.perf_counter() - t)
    child.join()


# -- mgapsp -------------------------------------------------------------------------

def mgapsp_part(name: str, parts: Path, repeats: int) -> None:
    import cupy

    from mgapsp import hierarchy, plan
    from mgapsp.cuda import bellman_ford, device, phast
    from workflows.benchmark import gpu_time

    gen, csr, graph = load(name)
    many, od_src, od_tgt = cases(name, gen.n)
    part = Part(parts, name, "mgapsp", gen)
    ref, per_source = reference(csr, many, od_src)
    part.add("scipy", seconds_per_source=per_source, rows=len(ref))
    before = peak_rss_gb()
    t = time.perf_counter()
    h = hierarchy.for_graph(graph)
    build_s = time.perf_counter() - t
    part.add("build", seconds=build_s, threads=os.cpu_count(), **hierarchy.describe(h),
             peak_rss_gb=peak_rss_gb(), rss_before_gb=before)
    dtype = np.dtype(plan.choose_dtype(graph, "auto")[0])
    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    part.data["gpu"] = gpu
    dh = phast.upload(h, dtype)
    at = np.arange(CHECK)                    # the checked sources lead ``many``

    def rows(block, idx, sources):
        got = cupy.asnumpy(block[idx])
        return {int(s): got[i] for i, s in enumerate(sources)}

    k, times, (block, _, stats) = gpu_time(lambda: phast.phast_batch(dh, many),
                                           repeats=repeats)
    check(rows(block, at, many[:CHECK]), ref, "phast kernel")
    del block
    part.add("phast kernel", seconds=k, times=times, sources=len(many), dtype=str(dtype),
             relaxations_per_s=stats["relaxations"] / k)
    split = phast.lanes                     # the same sweep, no level split over lanes
    phast.lanes = lambda *a: 1
    try:
        k, times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, many),
                                           repeats=repeats)
    finally:
        phast.lanes = split
    check(rows(block, at, many[:CHECK]), ref, "phast kernel, one lane")
    del block
    part.add("phast kernel, one lane", seconds=k, times=times)
    if name not in SOURCES:
        k, times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, od_src),
                                           repeats=repeats)
        got = cupy.asnumpy(block[:CHECK][:, od_tgt])
        check({int(s): got[i] for i, s in enumerate(od_src[:CHECK])}, ref,
              "phast kernel OD", od_tgt)
        del block
        part.add("od phast kernel", seconds=k, times=times)
        sweep = phast.sweep(h, od_tgt)
        k, times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, od_src, sweep),
                                           repeats=repeats)
        check(rows(block, at, od_src[:CHECK]), ref, "rphast kernel OD", od_tgt)
        del block
        part.add("od rphast kernel", seconds=k, times=times,
                 swept_arcs=sweep.arcs / h.arcs)
    half = many[: len(many) // 2]
    k, times, (block, pred, _) = gpu_time(
        lambda: phast.phast_batch(dh, half, predecessors=True), repeats=repeats)
    check(rows(block, at, half[:CHECK]), ref, "phast kernel with predecessors")
    got, got_pred = cupy.asnumpy(block[:CHECK]), cupy.asnumpy(pred[:CHECK])
    for i in range(CHECK):
        v = np.flatnonzero(np.isfinite(got[i]) & (np.arange(gen.n) != half[i]))
        w = graph.edge_weights(got_pred[i, v], v)
        if np.isnan(w).any() or not np.array_equal(got[i, got_pred[i, v]] + w, got[i, v]):
            raise SystemExit("phast predecessors do not close shortest paths")
    del block, pred
    part.add("phast kernel with predecessors", seconds=k, times=times, sources=len(half))
    del dh
    cupy.get_default_memory_pool().free_all_blocks()
    dg = device.upload_graph(graph, dtype)
    bellman_ford.bellman_ford_batch(dg, many[:64])         # compiled, warmed
    k, times, (block, _, _) = gpu_time(lambda: bellman_ford.bellman_ford_batch(dg, many),
                                       warmup=0, repeats=1)
    check(rows(block, at, many[:CHECK]), ref, "bellman-ford kernel")
    del block, dg
    cupy.get_default_memory_pool().free_all_blocks()
    part.add("bellman-ford kernel", seconds=k, sources=len(many))
    labels = graph.labels
    walls = []
    for _ in range(1 + repeats):
        t = time.perf_counter()
        got = mgapsp.apsp(graph, backend="gpu", algorithm="phast", sources=labels[many])
        walls.append(time.perf_counter() - t)
        if len(walls) <= repeats:
            del got
    check({int(s): got[i] for i, s in enumerate(many[:CHECK])}, ref, "apsp phast")
    del got
    part.add("apsp phast", seconds=statistics.median(walls[1:]), first_s=walls[0],
             times=walls[1:])
    if name not in SOURCES:
        walls = []
        for _ in range(1 + repeats):
            t = time.perf_counter()
            got = mgapsp.apsp(graph, backend="gpu", algorithm="phast",
                              sources=labels[od_src], targets=labels[od_tgt])
            walls.append(time.perf_counter() - t)
        check({int(s): got[i] for i, s in enumerate(od_src[:CHECK])}, ref, "apsp OD",
              od_tgt)
        part.add("apsp phast od", seconds=statistics.median(walls[1:]))


# -- report -------------------------------------------------------------------------

def _fmt(seconds: float) -> str:
    return f"{seconds:,.2f} s" if seconds >= 1 else f"{seconds * 1e3:,.1f} ms"


def report(parts: Path, out: Path) -> None:
    found = {}
    for path in sorted(parts.glob("*-*.json")):
        d = json.loads(path.read_text())
        found.setdefault(d["graph"], {})[d["part"]] = d
    gpu = next((p["gpu"] for g in found.values() for p in g.values() if "gpu" in p), "?")
    builds = ["| graph | vertices | arcs | mgapsp build (every core) | hierarchy | peak memory "
              "| RoutingKit inertial flow: order + CCH + customization | RoutingKit degree "
              "order |", "|---|---|---|---|---|---|---|---|"]
    rows = ["| graph | case | method | time | SciPy (scaled) | speed-up | note |",
            "|---|---|---|---|---|---|---|"]
    for name in GRAPHS:
        if name not in found:
            continue
        g = found[name]
        some = next(iter(g.values()))
        mine = g.get("mgapsp", {}).get("steps", {})
        rk = g.get("peer", {}).get("steps", {})
        b = mine.get("build")
        ri = rk.get("build inertial")
        rd = rk.get("build degree")
        builds.append(
            f"| {name} | {some['n']:,} | {some['arcs']:,} | "
            + (f"{b['seconds']:.1f} s | {b['arcs']:,} arcs, {b['levels']:,} levels | "
               f"{b['peak_rss_gb']:.1f} GB" if b else "not run | | ")
            + " | "
            + (f"{ri['order_s']:.1f} + {ri['cch_s']:.2f} + {ri['customization_s']:.2f} = "
               f"{ri['total_s']:.1f} s" if ri else "not run")
            + " | "
            + ((f"{rd['total_s']:.1f} s" if "total_s" in rd else
                f"stopped after {rd['stopped_after_s']:.0f} s") if rd else "not run")
            + " |")
        scipy = (mine.get("scipy") or rk.get("scipy") or {}).get("seconds_per_source")
        nsrc = (mine.get("phast kernel") or rk.get("many x all") or {}).get("sources", 4096)
        many_case, od_case = f"{nsrc:,} x all", f"{OD:,} x {OD:,} OD"

        def line(case, method, seconds, sources, note=""):
            ref = scipy * sources if scipy else float("nan")
            rows.append(f"| {name} | {case} | {method} | {_fmt(seconds)} | {ref:,.0f} s | "
                        f"{ref / seconds:,.0f}x | {note} |")

        ph = mine.get("phast kernel")
        if ph:
            line(many_case, "mgapsp phast kernel (GPU)", ph["seconds"], nsrc,
                 f"{ph['relaxations_per_s'] / 1e9:,.0f}e9 relaxations/s")
        if "phast kernel, one lane" in mine:
            one = mine["phast kernel, one lane"]["seconds"]
            line(many_case, "mgapsp phast kernel, no level split over lanes (GPU)", one,
                 nsrc, f"the split {one / ph['seconds']:.2f}x faster")
        if "apsp phast" in mine:
            line(many_case, "mgapsp.apsp(algorithm='phast') to NumPy",
                 mine["apsp phast"]["seconds"], nsrc)
        if "phast kernel with predecessors" in mine:
            p = mine["phast kernel with predecessors"]
            line(f"{p['sources']:,} x all", "mgapsp phast kernel with predecessors (GPU)",
                 p["seconds"], p["sources"])
        bf = mine.get("bellman-ford kernel")
        if bf:
            note = f"phast {bf['seconds'] / ph['seconds']:,.0f}x faster" if ph else ""
            line(many_case, "mgapsp bellman-ford kernel (GPU)", bf["seconds"], nsrc, note)
        q = rk.get("many x all")
        if q:
            note = f"{q['workers']} processes"
            if ph:
                note += f"; phast kernel {q['seconds'] / ph['seconds']:,.0f}x faster"
            if "apsp phast" in mine:
                note += f", apsp {q['seconds'] / mine['apsp phast']['seconds']:,.0f}x"
            line(many_case, "RoutingKit CCH one-to-many (CPU)", q["seconds"], nsrc, note)
        for key, method in (("od rphast kernel", "mgapsp RPHAST kernel (GPU)"),
                            ("od phast kernel", "mgapsp phast kernel, full sweep (GPU)"),
                            ("apsp phast od", "mgapsp.apsp(algorithm='phast', targets=...)"
                                              " to NumPy")):
            if key in mine:
                note = (f"{mine[key]['swept_arcs']:.1%} of the arcs swept"
                        if "swept_arcs" in mine[key] else "")
                line(od_case, method, mine[key]["seconds"], OD, note)
        q = rk.get("od")
        if q:
            best = min((mine[k]["seconds"] for k in ("od rphast kernel", "apsp phast od")
                        if k in mine), default=None)
            note = f"{q['workers']} processes"
            if "apsp phast od" in mine:
                note += (f"; apsp {q['seconds'] / mine['apsp phast od']['seconds']:,.1f}x "
                         "faster")
            if best and "od rphast kernel" in mine:
                note += (f", RPHAST kernel "
                         f"{q['seconds'] / mine['od rphast kernel']['seconds']:,.0f}x")
            line(od_case, "RoutingKit CCH one-to-many (CPU)", q["seconds"], OD, note)
    cpus = next(iter(next(iter(found.values())).values()))["cpus"] if found else 0
    text = "\n".join(
        [f"# Road-like graphs of millions of vertices, {dt.date.today()}", "",
         f"GPU {gpu}; {cpus} CPU cores, the peer on all of them. Kernels: CUDA events, "
         "median of the repeats; `apsp`: wall clock, median after a first call; "
         "RoutingKit's many x all: one run; SciPy's Dijkstra timed on a sample and "
         "scaled. Every method's rows equal SciPy's on a sample. Graphs, parts and "
         "commands: `bench/road_scale.py`.", "", "## Hierarchy builds", "", *builds,
         "", "## Queries (hierarchies built beforehand)", "", *rows, ""])
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"road-scale-{dt.date.today()}-{gpu.replace(' ', '-')}"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps(found, indent=1))
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["peer", "mgapsp", "report"])
    ap.add_argument("--graph", choices=sorted(GRAPHS))
    ap.add_argument("--parts", required=True, type=Path, help="folder of the parts' files")
    ap.add_argument("--out", default="bench/results", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--degree-limit", type=float, default=60.0)
    args = ap.parse_args()
    if args.part == "report":
        report(args.parts, args.out)
    elif args.graph is None:
        ap.error("--graph is needed")
    elif args.part == "peer":
        peer(args.graph, args.parts, args.workers, args.degree_limit, args.repeats)
    else:
        mgapsp_part(args.graph, args.parts, args.repeats)


if __name__ == "__main__":
    main()
