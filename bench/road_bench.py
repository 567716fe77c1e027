"""Road networks against the CPU and GPU peers, in one run.

    python -m bench.road_bench [--out bench] [--repeats 5] [--workers N] [--peer-sources 128]

On the NY road network (264,346 vertices): 4,096 sources to every vertex, and a
1,000 x 1,000 origin-destination matrix; on the weighted road networks Austin (4,096
sources), ChicagoSketch and rome99 (every vertex), PHAST against Bellman-Ford.
Measured side by side:

- mgapsp's PHAST: the kernel (CUDA events, block left on the device; for the
  origin-destination matrix the full sweep and the sweep restricted to the targets,
  RPHAST) and ``mgapsp.apsp(algorithm="phast")`` wall clock to a NumPy array, the
  hierarchy built beforehand (its build time reported apart);
- mgapsp's Bellman-Ford kernel on the same sources; both kernels again with
  predecessors;
- RoutingKit's customizable contraction hierarchy (``routingkit_cch``, installed by
  ``bench/peers/routingkit.sh``) with the same vertex order, one-to-many queries
  spread over ``--workers`` processes (default: every core); the peer keeps its rows
  in its workers (not sent back), which only flatters it;
- the GPU single-source peers ADDS (127 persistent blocks) and Gunrock's SSSP
  (``bench/peers/adds.sh`` and ``gunrock.sh``, built on the device; left out with a
  line where their binaries are missing), run per source on ``--peer-sources`` of the
  4,096 and scaled to all of them, each with its own timer (CUDA events);
- SciPy's Dijkstra, sampled and scaled.

Every method's rows are checked against SciPy on a sample.  Writes
``road-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

from bench.peers import gpu_peers
from bench.timing import median_wall
import mgapsp
from mgapsp import hierarchy
from workflows.benchmark import gpu_time

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "tests" / "data"
ROWS: list[dict] = []
CHECK = 8               # rows of each method compared with SciPy

# the peer's state, made before the worker processes fork (read-only in them)
_PEER: dict = {}


def _peer_rows(args):
    """Worker: one-to-many queries for ``sources`` to the pinned targets; returns the
    count and the rows asked for checking."""
    sources, targets_key, keep = args
    import routingkit_cch as rk

    key = ("query", targets_key)
    if key not in _PEER:
        _PEER[key] = rk.CCHOneToMany(_PEER["metric"], _PEER[targets_key])
    query = _PEER[key]
    kept = {}
    for s in sources:
        row = query.distances_from(int(s))
        if int(s) in keep:
            kept[int(s)] = np.array([np.inf if x is None else x for x in row])
    return len(sources), kept


def peer_setup(graph, order):
    import routingkit_cch as rk

    t = time.perf_counter()
    cch = rk.CCH(order.tolist(), graph.sources_of_edges.tolist(), graph.indices.tolist(),
                 False)
    build = time.perf_counter() - t
    t = time.perf_counter()
    metric = rk.CCHMetric(cch, np.rint(graph.weights).astype(np.int64).tolist())
    custom = time.perf_counter() - t
    _PEER.update(cch=cch, metric=metric)
    return build, custom


def peer_time(pool, workers, sources, key, keep, repeats):
    """Wall seconds of the peer's queries (median), and the rows kept for checking."""
    chunks = [(part, key, set(int(k) for k in keep))
              for part in np.array_split(sources, workers * 4) if len(part)]
    times, kept = [], {}
    for _ in range(repeats):
        t = time.perf_counter()
        for _count, rows in pool.imap_unordered(_peer_rows, chunks):
            kept.update(rows)
        times.append(time.perf_counter() - t)
    return statistics.median(times), kept


def check(rows: dict, ref: dict, what: str):
    for s, row in rows.items():
        want = ref[s]
        if not (np.array_equal(np.isinf(row), np.isinf(want))
                and np.allclose(row[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-6)):
            raise SystemExit(f"{what}: row of source {s} differs from SciPy")


def check_predecessors(graph, sources, dist, pred):
    """Each predecessor is an edge that closes a shortest path (``dist[p] + w == dist``)."""
    for i, s in enumerate(sources):
        v = np.flatnonzero(np.isfinite(dist[i]) & (np.arange(graph.n) != s))
        p = pred[i, v]
        w = graph.edge_weights(p, v)
        if (p < 0).any() or np.isnan(w).any() or not np.allclose(dist[i, p] + w, dist[i, v]):
            raise SystemExit(f"predecessors of source {s} do not close shortest paths")


def add(case, method, seconds, scipy_s, note=""):
    ROWS.append({"case": case, "method": method, "seconds": seconds, "scipy_s": scipy_s,
                 "speedup_vs_scipy": scipy_s / seconds, "note": note})
    print(f"{case} | {method}: {seconds * 1e3:.1f} ms ({scipy_s / seconds:,.0f}x SciPy) {note}",
          flush=True)


def gpu_peer_rows(graph, many, checked, ref_many, scipy_many, case, count):
    """ADDS and Gunrock on ``count`` of the sources ``many`` (the ``checked`` ones first,
    their rows compared with SciPy), each peer's per-source times summed and scaled to
    all of ``many``."""
    missing = [p for p in ("adds-tb127", "gunrock-f32") if not gpu_peers.BINARIES[p].exists()]
    if missing:
        print(f"GPU peers left out: no {', '.join(missing)} binary (bench/peers/*.sh build)",
              flush=True)
    rest = np.setdiff1d(many, checked)
    rest = np.random.default_rng(5).choice(rest, max(count - len(checked), 0), replace=False)
    sources = np.concatenate([checked, np.sort(rest)])
    paths = gpu_peers.prepare(graph, sources, "/tmp/mgapsp-road-peers")
    ref = np.stack([ref_many[int(s)] for s in checked])
    scale = len(many) / len(sources)
    for peer, label in (("adds-tb127", "ADDS, 127 blocks (GPU, per source)"),
                        ("gunrock-f32", "Gunrock 2.1.0 SSSP, float (GPU, per source)")):
        if peer in missing:
            continue
        run = gpu_peers.run_adds if peer.startswith("adds") else gpu_peers.run_gunrock
        kw = {"variant": peer} if peer.startswith("adds") else {"weight": "f32"}
        secs, rows = run(paths, keep=len(checked), timeout=900, **kw)
        bad = gpu_peers.mismatches(rows, ref)
        if bad:
            raise SystemExit(f"{peer}: {bad} entries of its first {len(checked)} rows "
                             "differ from SciPy")
        add(case, label, sum(secs) * scale, scipy_many,
            f"{len(sources)} of the sources run (median {np.median(secs) * 1e3:.2f} ms a "
            f"source), summed and scaled; its own timer")


def weighted(name, count, repeats):
    """PHAST against Bellman-Ford, kernels only, on a weighted road network, in the
    dtype ``auto`` picks for it (float64 for fractional weights)."""
    import cupy

    from mgapsp import plan
    from mgapsp.cuda import bellman_ford, device, phast

    graph = mgapsp.read_graph(DATA / name)
    dtype = np.dtype(plan.choose_dtype(graph, "auto")[0])
    rng = np.random.default_rng(4)
    many = (np.arange(graph.n) if count >= graph.n
            else np.sort(rng.choice(graph.n, count, replace=False)))
    sample = np.sort(rng.choice(many, min(32, len(many)), replace=False))
    t = time.perf_counter()
    ref = csgraph.dijkstra(graph.to_scipy(), indices=sample)
    scipy_s = (time.perf_counter() - t) * len(many) / len(sample)
    ref = {int(s): ref[i] for i, s in enumerate(sample)}
    t = time.perf_counter()
    h = hierarchy.for_graph(graph)
    build_s = time.perf_counter() - t
    case = (f"{name.split('_')[0].split('.')[0]} ({graph.n:,} vertices, weighted, {dtype}), "
            f"{len(many):,} sources x all")
    at = np.searchsorted(many, sample[:CHECK])
    dh = phast.upload(h, dtype)
    k, _times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, many), repeats=repeats)
    got = cupy.asnumpy(block[at])
    check({int(s): got[i] for i, s in enumerate(sample[:CHECK])}, ref, f"phast {name}")
    del block
    add(case, "mgapsp phast kernel (GPU)", k, scipy_s,
        f"hierarchy built in {build_s:.2f} s, apart ({h.arcs:,} arcs)")
    dg = device.upload_graph(graph, dtype)
    k, _times, (block, _, _) = gpu_time(lambda: bellman_ford.bellman_ford_batch(dg, many),
                                        repeats=repeats)
    got = cupy.asnumpy(block[at])
    check({int(s): got[i] for i, s in enumerate(sample[:CHECK])}, ref, f"bellman-ford {name}")
    del block
    add(case, "mgapsp bellman-ford kernel (GPU)", k, scipy_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--peer-sources", type=int, default=128,
                        help="sources of the 4,096 each GPU peer runs (scaled to all)")
    args = parser.parse_args()

    graph = mgapsp.read_graph(DATA / "NY.pace.gr.gz")
    csr = graph.to_scipy()
    rng = np.random.default_rng(4)
    many = np.sort(rng.choice(graph.n, 4096, replace=False))
    od_src = np.sort(rng.choice(graph.n, 1000, replace=False))
    od_tgt = np.sort(rng.choice(graph.n, 1000, replace=False))
    every = np.arange(graph.n)

    t = time.perf_counter()
    h = hierarchy.for_graph(graph)
    build_s = time.perf_counter() - t
    print(f"mgapsp hierarchy: {build_s:.2f} s, {hierarchy.describe(h)}", flush=True)

    # SciPy: sampled rows, the oracle for every check
    sample = np.sort(rng.choice(many, 32, replace=False))
    t = time.perf_counter()
    ref_rows = csgraph.dijkstra(csr, indices=sample)
    scipy_many = (time.perf_counter() - t) * len(many) / len(sample)
    od_sample = np.sort(rng.choice(od_src, 32, replace=False))
    t = time.perf_counter()
    ref_od = csgraph.dijkstra(csr, indices=od_sample)
    scipy_od = (time.perf_counter() - t) * len(od_src) / len(od_sample)
    ref_many = {int(s): ref_rows[i] for i, s in enumerate(sample)}
    ref_od = {int(s): ref_od[i][od_tgt] for i, s in enumerate(od_sample)}

    # the peer first: its workers fork before this process makes a CUDA context
    rk_build, rk_custom = peer_setup(graph, h.order)
    print(f"RoutingKit CCH: build {rk_build:.2f} s, customization {rk_custom:.2f} s "
          f"(same order)", flush=True)
    _PEER["all"], _PEER["od"] = every.tolist(), od_tgt.tolist()
    with mp.get_context("fork").Pool(args.workers) as pool:
        keep = sample[:CHECK]
        peer_many, rows = peer_time(pool, args.workers, many, "all", keep, 1)
        check(rows, ref_many, "RoutingKit, 4,096 x all")
        keep_od = od_sample[:CHECK]
        peer_od, rows = peer_time(pool, args.workers, od_src, "od", keep_od, args.repeats)
        check(rows, ref_od, "RoutingKit, 1,000 x 1,000")
    note = f"{args.workers} processes; CCH built in {rk_build:.2f} s + {rk_custom:.2f} s"
    many_case, od_case = "NY, 4,096 sources x all 264,346", "NY, 1,000 x 1,000 OD"
    add(many_case, "RoutingKit CCH one-to-many (CPU)", peer_many, scipy_many, note)
    add(od_case, "RoutingKit CCH one-to-many (CPU)", peer_od, scipy_od, note)
    gpu_peer_rows(graph, many, sample[:CHECK], ref_many, scipy_many, many_case,
                  args.peer_sources)

    import cupy

    from mgapsp.cuda import bellman_ford, device, phast

    dh = phast.upload(h, np.float32)
    k, _times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, many),
                                        repeats=args.repeats)
    got = cupy.asnumpy(block[np.searchsorted(many, sample[:CHECK])])
    check({int(s): got[i] for i, s in enumerate(sample[:CHECK])}, ref_many, "phast kernel")
    del block
    add(many_case, "mgapsp phast kernel (GPU, block on the device)", k, scipy_many,
        f"hierarchy built in {build_s:.2f} s, apart")
    od_check = np.searchsorted(od_src, od_sample[:CHECK])
    k, _times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, od_src),
                                        repeats=args.repeats)
    got = cupy.asnumpy(block[od_check][:, od_tgt])
    check({int(s): got[i] for i, s in enumerate(od_sample[:CHECK])}, ref_od,
          "phast kernel OD")
    del block
    add(od_case, "mgapsp phast kernel, full sweep (GPU, block on the device)", k,
        scipy_od, "every column computed; the targets' picked after")
    sweep = phast.sweep(h, od_tgt)
    k, _times, (block, _, _) = gpu_time(lambda: phast.phast_batch(dh, od_src, sweep),
                                        repeats=args.repeats)
    got = cupy.asnumpy(block[od_check])
    check({int(s): got[i] for i, s in enumerate(od_sample[:CHECK])}, ref_od,
          "rphast kernel OD")
    del block
    add(od_case, "mgapsp RPHAST kernel (GPU, sweep restricted to the targets)", k,
        scipy_od, f"{sweep.arcs / h.arcs:.1%} of the hierarchy's arcs swept")
    k, _times, (block, pred, _) = gpu_time(
        lambda: phast.phast_batch(dh, many, predecessors=True), repeats=args.repeats)
    at = np.searchsorted(many, sample[:CHECK])
    got, got_pred = cupy.asnumpy(block[at]), cupy.asnumpy(pred[at])
    check({int(s): got[i] for i, s in enumerate(sample[:CHECK])}, ref_many,
          "phast kernel with predecessors")
    check_predecessors(graph, sample[:CHECK], got, got_pred)
    del block, pred
    add(many_case, "mgapsp phast kernel with predecessors (GPU)", k, scipy_many)
    d32 = device.upload_graph(graph, np.float32)
    k, _times, (block, _, _) = gpu_time(lambda: bellman_ford.bellman_ford_batch(d32, many),
                                        repeats=3)
    del block
    add(many_case, "mgapsp bellman-ford kernel (GPU)", k, scipy_many)
    k, _times, (block, pred, _) = gpu_time(
        lambda: bellman_ford.bellman_ford_batch(d32, many, predecessors=True), repeats=3)
    del block, pred
    add(many_case, "mgapsp bellman-ford kernel with predecessors (GPU)", k, scipy_many)
    labels = graph.labels
    w, got = median_wall(lambda: mgapsp.apsp(graph, backend="gpu", algorithm="phast",
                                             sources=labels[many]), args.repeats)
    check({int(s): got[np.searchsorted(many, s)] for s in sample[:CHECK]}, ref_many,
          "apsp phast")
    del got
    add(many_case, "mgapsp.apsp(algorithm='phast') to NumPy", w, scipy_many)
    w, got = median_wall(lambda: mgapsp.apsp(graph, backend="gpu", algorithm="phast",
                                             sources=labels[od_src],
                                             targets=labels[od_tgt]), args.repeats)
    check({int(s): got[np.searchsorted(od_src, s)] for s in od_sample[:CHECK]}, ref_od,
          "apsp phast OD")
    add(od_case, "mgapsp.apsp(algorithm='phast', targets=...) to NumPy", w, scipy_od)
    del got, dh, d32
    weighted("Austin_net.tntp", 4096, args.repeats)
    weighted("ChicagoSketch_net.tntp", 4096, args.repeats)
    weighted("rome99.gr", 4096, args.repeats)

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"road-{dt.date.today()}-{gpu.replace(' ', '-')}"
    stem.with_suffix(".json").write_text(json.dumps(
        {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "gpu": gpu,
         "cpus": os.cpu_count(), "workers": args.workers, "repeats": args.repeats,
         "hierarchy_s": build_s, "hierarchy": hierarchy.describe(h), "rows": ROWS},
        indent=1))
    lines = [f"# Road networks against the CPU and GPU peers, {dt.date.today()}",
             "", f"GPU {gpu}; {os.cpu_count()} CPU cores. Median of {args.repeats} (the "
             "CPU peer's 4,096 x all: one run); SciPy's Dijkstra on 32 sources, scaled. "
             f"mgapsp's hierarchies are built beforehand (NY in {build_s:.2f} s) and not "
             "in the times below. Every method's rows checked against SciPy on a sample. "
             f"`python3 -m bench.road_bench --repeats {args.repeats} --peer-sources "
             f"{args.peer_sources}`", "",
             "| case | method | time | SciPy | speed-up | note |", "|---|---|---|---|---|---|"]
    for r in ROWS:
        lines.append(f"| {r['case']} | {r['method']} | {r['seconds'] * 1e3:,.1f} ms | "
                     f"{r['scipy_s']:.1f} s | {r['speedup_vs_scipy']:,.0f}x | {r['note']} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
