"""Check and time the batched SSSP kernels (Bellman-Ford with each option off,
Crauser's Dijkstra, Johnson) on the target graphs, against SciPy on this machine.

    python -m bench.sssp_bench [--out DIR] [--parts gnutella,negative,austin,ny,copy]

GPU times are CUDA events around the whole call (host round loop included, output
left on the device), after one warm-up; the median of the repeats.  SciPy runs on a
random sample of the sources in one process and is scaled by the count (its cost per
source does not depend on the other sources).  Every GPU result is compared with SciPy
on 48 of its rows.  Prints a table at the end; appends its rows to
--out/sssp_bench.jsonl.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

import cupy
import numpy as np
from scipy.sparse import csgraph

from mgapsp.cuda import bellman_ford, device, frontier, sssp
from mgapsp.graph import Graph
from mgapsp.readers import read_graph

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
#: the Bellman-Ford switches, each measured off in the ablation rows
BF_FLAGS = [f.name for f in dataclasses.fields(frontier.BFOptions)]
ROWS: list[dict] = []


def sync():
    cupy.cuda.Device().synchronize()


def gpu_time(fn, repeats=3, warmup=1):
    out = None
    for _ in range(warmup):
        out = fn()
        sync()
        del out
    ev, wall = [], []
    for _ in range(repeats):
        out = None
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        t0 = time.perf_counter()
        out = fn()
        stop.record()
        stop.synchronize()
        wall.append(time.perf_counter() - t0)
        ev.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(ev), ev, wall, out


def scipy_time(graph: Graph, sources, method: str, sample: int, seed=0):
    rng = np.random.default_rng(seed)
    pick = sources if sample >= len(sources) else rng.choice(sources, sample, replace=False)
    csr = graph.to_scipy()
    t0 = time.process_time()
    csgraph.shortest_path(csr, method=method, indices=pick)
    t = time.process_time() - t0
    return t * len(sources) / len(pick), len(pick)


def check(dist, graph, sources, method, rows=48):
    pick = np.linspace(0, len(sources) - 1, min(rows, len(sources))).astype(int)
    ref = csgraph.shortest_path(graph.to_scipy(), method=method,
                                indices=np.asarray(sources)[pick])
    got = cupy.asnumpy(dist[cupy.asarray(pick)]).astype(np.float64)
    if np.isnan(got).any() or not np.array_equal(np.isinf(got), np.isinf(ref)):
        return "WRONG (inf/nan)"
    fin = np.isfinite(ref)
    err = np.abs(got[fin] - ref[fin]).max(initial=0.0)
    scale = max(1.0, np.abs(ref[fin]).max(initial=0.0))
    return "ok" if err <= 1e-4 * scale else f"WRONG (max err {err:g})"


def case(graph, sources, label, fn, *, method, scipy_s, repeats=3, note=""):
    try:
        t, runs, wall, out = gpu_time(fn, repeats=repeats)
    except Exception as exc:  # noqa: BLE001 - keep going, report it
        print(f"  {graph.name:34s} {label:44s} FAILED {type(exc).__name__}: {exc}", flush=True)
        ROWS.append({"graph": graph.name, "case": label, "error": repr(exc)})
        return None
    dist, _pred, stats = out
    ok = check(dist, graph, sources, method)
    row = {"graph": graph.name, "n": graph.n, "m": graph.m, "sources": len(sources),
           "case": label, "gpu_s": t, "gpu_runs_s": runs, "wall_s": wall,
           "rounds": stats.get("rounds"), "relaxations": stats.get("relaxations"),
           "inner": stats.get("inner"), "scipy_s": scipy_s, "speedup": scipy_s / t,
           "check": ok, "note": note}
    ROWS.append(row)
    print(f"  {graph.name:34s} {label:44s} {t * 1e3:9.2f} ms  x{scipy_s / t:8.1f}  "
          f"rounds {stats.get('rounds')}  {ok}", flush=True)
    del dist, out
    return t


def with_knob(name, value, fn):
    def run():
        old = getattr(bellman_ford, name)
        setattr(bellman_ford, name, value)
        try:
            return fn()
        finally:
            setattr(bellman_ford, name, old)
    return run


def batched(fn, sources, parts):
    """``fn`` on ``parts`` batches; the distance blocks stay on the device."""
    def run():
        outs = [fn(chunk) for chunk in np.array_split(sources, parts)]
        dist = cupy.concatenate([o[0] for o in outs])
        stats = {"rounds": max(o[2]["rounds"] for o in outs),
                 "relaxations": sum(o[2]["relaxations"] for o in outs)}
        return dist, None, stats
    return run


# -- graphs ---------------------------------------------------------------------------
def gnutella_weighted(seed=1):
    g = read_graph(DATA / "p2p-Gnutella09.txt")
    w = np.random.default_rng(seed).integers(1, 11, g.m).astype(np.float64)
    return Graph(g.indptr, g.indices, w, vertex_ids=g.vertex_ids, name="Gnutella09 w1..10")


def gnutella_negative(seed=2):
    g = gnutella_weighted()
    p = np.random.default_rng(seed).integers(0, 20, g.n).astype(np.float64)
    w = g.weights + p[g.sources_of_edges] - p[g.indices]
    return Graph(g.indptr, g.indices, w, vertex_ids=g.vertex_ids, name="Gnutella09 negative")


# -- parts ------------------------------------------------------------------------------
def part_gnutella():
    g = gnutella_weighted()
    src = np.arange(g.n)
    sp, k = scipy_time(g, src, "D", 1024)
    print(f"SciPy Dijkstra, {g.name}: {sp:.3f} s for {len(src)} sources ({k} timed)")
    d32 = device.upload_graph(g, np.float32)
    kw = dict(method="D", scipy_s=sp)
    case(g, src, "BF", lambda: bellman_ford.bellman_ford_batch(d32, src), **kw)
    case(g, src, "BF preread off", with_knob("PREREAD", False,
                                             lambda: bellman_ford.bellman_ford_batch(d32, src)), **kw)
    case(g, src, "BF eager loads off", with_knob("EAGER_LOADS", False,
                                                 lambda: bellman_ford.bellman_ford_batch(d32, src)), **kw)
    case(g, src, "BF in 4 batches", batched(lambda s: bellman_ford.bellman_ford_batch(d32, s), src, 4),
         repeats=1, **kw)
    for flag in BF_FLAGS:
        opt = frontier.BFOptions(**{flag: False})
        case(g, src, f"BF {flag} off", lambda o=opt: bellman_ford.bellman_ford_batch(d32, src, options=o),
             **kw)
    off = frontier.BFOptions(**{flag: False for flag in BF_FLAGS})
    case(g, src, "BF all off", lambda: bellman_ford.bellman_ford_batch(d32, src, options=off), **kw)
    case(g, src, "BF predecessors", lambda: bellman_ford.bellman_ford_batch(d32, src, predecessors=True),
         repeats=1, **kw)
    for variant in ("general", "economic"):
        case(g, src, f"Crauser {variant}",
             lambda v=variant: sssp.dijkstra_batch(d32, src, variant=v),
             repeats=3 if variant == "general" else 1, **kw)
    d64 = device.upload_graph(g, np.float64)
    case(g, src, "BF float64", lambda: bellman_ford.bellman_ford_batch(d64, src), repeats=1, **kw)
    # a small batch: the virtual warp (G < 32) and its switch
    few = src[::1000][:8]
    spf, _ = scipy_time(g, few, "D", len(few))
    case(g, few, "BF 8 sources", lambda: bellman_ford.bellman_ford_batch(d32, few), method="D",
         scipy_s=spf)
    case(g, few, "BF 8 sources, virtual_warp off",
         lambda: bellman_ford.bellman_ford_batch(d32, few, options=frontier.BFOptions(virtual_warp=False)),
         method="D", scipy_s=spf)
    del d32, d64
    device.release_pool()


def part_negative():
    g = gnutella_negative()
    src = np.arange(g.n)
    sp, k = scipy_time(g, src, "J", 1024)
    print(f"SciPy Johnson, {g.name}: {sp:.3f} s for {len(src)} sources ({k} timed)")
    kw = dict(method="J", scipy_s=sp)
    d32 = device.upload_graph(g, np.float32)
    d64 = device.upload_graph(g, np.float64)

    def johnson(inner):
        def run():
            h = bellman_ford.bellman_ford_potentials(d64)
            rw = sssp.reweight(d32, h)
            return sssp.johnson_batch(rw, src, h, inner=inner)
        return run

    for inner in ("bellman-ford", "dijkstra"):
        case(g, src, f"Johnson (potentials+reweight+{inner})", johnson(inner),
             repeats=3 if inner == "bellman-ford" else 1, **kw)
    t_pot, _, _, _ = gpu_time(lambda: (bellman_ford.bellman_ford_potentials(d64),), repeats=3)
    h = bellman_ford.bellman_ford_potentials(d64)
    t_rw, _, _, _ = gpu_time(lambda: (sssp.reweight(d32, h),), repeats=3)
    print(f"  potentials {t_pot * 1e3:.2f} ms, reweight {t_rw * 1e3:.2f} ms")
    ROWS.append({"graph": g.name, "case": "potentials alone", "gpu_s": t_pot})
    ROWS.append({"graph": g.name, "case": "reweight alone", "gpu_s": t_rw})
    rw = sssp.reweight(d32, h)
    case(g, src, "Johnson per batch (h, reweighted cached)",
         lambda: sssp.johnson_batch(rw, src, h), **kw)
    case(g, src, "BF on the negative graph", lambda: bellman_ford.bellman_ford_batch(d32, src), **kw)
    del d32, d64
    device.release_pool()


def road(name, k, sample, *, ablation, crauser_econ, full=True):
    g = read_graph(DATA / name)
    src = np.sort(np.random.default_rng(4).choice(g.n, size=k, replace=False))
    sp, kk = scipy_time(g, src, "D", sample)
    print(f"SciPy Dijkstra, {name}: {sp:.3f} s for {len(src)} sources ({kk} timed)")
    kw = dict(method="D", scipy_s=sp)
    d32 = device.upload_graph(g, np.float32)
    case(g, src, "BF", lambda: bellman_ford.bellman_ford_batch(d32, src), **kw)
    few = 1 if g.n * k > 1e8 else 3       # repeats of the variants
    case(g, src, "BF eager loads off", with_knob("EAGER_LOADS", False,
                                                 lambda: bellman_ford.bellman_ford_batch(d32, src)),
         repeats=few, **kw)
    if not full:
        del d32
        device.release_pool()
        return
    case(g, src, "BF preread off", with_knob("PREREAD", False,
                                             lambda: bellman_ford.bellman_ford_batch(d32, src)),
         repeats=few, **kw)
    unsorted = np.random.default_rng(5).permutation(src)
    case(g, unsorted, "BF unsorted sources, no sorting",
         with_knob("SORT_SOURCES", False, lambda: bellman_ford.bellman_ford_batch(d32, unsorted)),
         repeats=few, **kw)
    case(g, unsorted, "BF unsorted sources, sorted inside",
         lambda: bellman_ford.bellman_ford_batch(d32, unsorted), repeats=few, **kw)
    case(g, src, "BF in 4 batches", batched(lambda s: bellman_ford.bellman_ford_batch(d32, s), src, 4),
         repeats=few, **kw)
    case(g, src, "Crauser general", lambda: sssp.dijkstra_batch(d32, src), repeats=few, **kw)
    if crauser_econ:
        case(g, src, "Crauser economic", lambda: sssp.dijkstra_batch(d32, src, variant="economic"),
             repeats=1, **kw)
    for flag in ablation:
        opt = frontier.BFOptions(**{flag: False})
        case(g, src, f"BF {flag} off", lambda o=opt: bellman_ford.bellman_ford_batch(d32, src, options=o),
             repeats=few, **kw)
    del d32
    device.release_pool()


def part_copy():
    a = cupy.ones(2**28, dtype=cupy.float64)      # 2 GiB
    b = cupy.empty_like(a)
    t, _, _, _ = gpu_time(lambda: (b.__setitem__(Ellipsis, a),), repeats=5)
    bw = 2 * a.nbytes / t
    print(f"device copy: {bw / 1e12:.2f} TB/s (read + write)")
    ROWS.append({"case": "device copy", "bytes_per_s": bw})
    del a, b
    device.release_pool()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--parts", default="copy,gnutella,negative,austin,ny")
    args = ap.parse_args()
    dev = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
    print(f"device {dev.id}: {name!r}, {dev.attributes['MultiProcessorCount']} SMs; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    t0 = time.time()
    parts = args.parts.split(",")
    for part in parts:
        t = time.time()
        try:
            if part == "copy":
                part_copy()
            elif part == "gnutella":
                part_gnutella()
            elif part == "negative":
                part_negative()
            elif part == "austin":
                road("Austin_net.tntp", 4096, 512,
                     ablation=("frontier", "dedup", "classify", "virtual_warp", "early_stop"),
                     crauser_econ=True)
            elif part == "ny":
                road("NY.pace.gr.gz", 4096, 16, ablation=("dedup", "classify"),
                     crauser_econ=False)
            elif part == "ny-main":
                road("NY.pace.gr.gz", 4096, 16, ablation=(), crauser_econ=False, full=False)
        except Exception as exc:  # noqa: BLE001
            print(f"part {part} failed: {type(exc).__name__}: {exc}", flush=True)
        print(f"[part {part}: {time.time() - t:.1f} s]", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with open(Path(args.out) / "sssp_bench.jsonl", "a") as f:
        for r in ROWS:
            f.write(json.dumps(r, default=str) + "\n")
    print(f"\n== summary ({time.time() - t0:.0f} s)")
    for r in ROWS:
        if "gpu_s" in r and "speedup" in r:
            print(f"{r['graph'][:20]:20s} {r['case'][:40]:40s} {r['gpu_s'] * 1e3:9.2f} ms "
                  f"x{r['speedup']:7.1f} r={r['rounds']} {r['check']}")
        elif "error" in r:
            print(f"{r['graph'][:20]:20s} {r['case'][:40]:40s} ERROR {r['error'][:60]}")
        elif "gpu_s" in r:
            print(f"{r['graph'][:20]:20s} {r['case'][:40]:40s} {r['gpu_s'] * 1e3:9.2f} ms")


if __name__ == "__main__":
    main()
