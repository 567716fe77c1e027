"""Every pair of a road network on one GPU: PHAST's sweep of every source, the same
kept on the device by ``apsp(device=True)``, and a job into a store, in one run.

    python -m bench.road_allpairs [--graphs ny,ny115k,highway339,delaunay115k,highway632]
                                  [--batch 8192] [--jobs ny115k,ny] [--repeats 3]
                                  [--out bench/results]

Graphs: ``ny``, the NY road network of ``tests/data``; ``ny115k``, the 115,000 of its
vertices a breadth-first search reaches first from a seeded vertex (a region of the
same roads, the size of the road networks PATHPACK.jl reports); ``highway<side>`` and
``delaunay<points>`` of ``bench/generators.py``.  Each hierarchy is built first (every
core; its seconds reported).

- *kernel*: every source, ``--batch`` at a time, through ``mgapsp.cuda.phast``'s
  ``phast_batch`` on one device: CUDA events around the whole loop after a warm-up
  batch; distances a second.  Beside it the same sweep with every level a launch (no
  top product): what the sweep did before.  Rows of the last batch against SciPy's.
- *apsp(device=True)*: ``mgapsp.apsp(graph, algorithm="phast", device=True)`` where the
  float32 answer fits the device, wall clock, the median of ``--repeats`` after a first
  call; sampled rows against SciPy's.
- *SciPy*: Dijkstra from 16 sampled sources, scaled to every source: the ratio.
- ``--jobs``: ``mgapsp run --algorithm phast`` of every source into a local store, from
  start to exit, twice (the first builds the graph's hierarchy, the second finds it
  beside the store), then ``mgapsp verify --samples 64``.

Writes ``road-allpairs-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

import mgapsp
from bench import generators
from bench.timing import first_then_median

ROOT = Path(__file__).resolve().parents[1]
NY = ROOT / "tests" / "data" / "NY.pace.gr.gz"
CHECK = 4                     # rows of each method compared with SciPy's
SCIPY_SAMPLES = 16


def region(graph: mgapsp.Graph, size: int, seed: int = 1) -> mgapsp.Graph:
    """The first ``size`` vertices a breadth-first search of ``graph`` (its edges either
    way) reaches from a seeded vertex, with the arcs among them."""
    A = graph.to_scipy()
    start = int(np.random.default_rng(seed).integers(graph.n))
    order = csgraph.breadth_first_order(A + A.T, start, directed=False,
                                        return_predecessors=False)
    keep = np.sort(order[:size])
    sub = A[keep][:, keep].tocsr()
    return mgapsp.Graph(sub.indptr, sub.indices, sub.data, directed=True,
                        name=f"ny{size // 1000}k")


def _count(text: str) -> int:
    return int(text[:-1]) * 1000 if text.endswith("k") else int(text)


def load(name: str) -> mgapsp.Graph:
    if name == "ny":
        return mgapsp.read_graph(NY)
    if name.startswith("ny"):
        return region(mgapsp.read_graph(NY), _count(name[2:]))
    gen = (generators.highway(_count(name[7:]), seed=1) if name.startswith("highway")
           else generators.delaunay(_count(name[8:]), seed=1))
    csr = gen.csr()
    return mgapsp.Graph(csr.indptr, csr.indices, csr.data, directed=True, name=name)


def sweep_all(dh, n: int, batch: int):
    """Seconds (CUDA events) of every source's sweep, ``batch`` at a time, and the last
    batch's sources and rows."""
    import cupy

    from mgapsp.cuda import phast

    phast.phast_batch(dh, np.arange(min(batch, n)))          # compiled, warm
    cupy.cuda.Device().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for lo in range(0, n, batch):
        src = np.arange(lo, min(n, lo + batch))
        rows = phast.phast_batch(dh, src)[0]
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1e3, src, rows


def one_graph(name: str, batch: int, repeats: int) -> dict:
    import cupy

    from mgapsp import hierarchy
    from mgapsp.cuda import phast

    graph = load(name)
    A = graph.to_scipy()
    n = graph.n
    t = time.perf_counter()
    h = hierarchy.for_graph(graph)
    row = {"graph": name, "n": n, "m": graph.m, "build_s": time.perf_counter() - t,
           **hierarchy.describe(h), "pairs": n * n}
    rng = np.random.default_rng(3)
    sample = np.sort(rng.choice(n, SCIPY_SAMPLES, replace=False))
    t = time.perf_counter()
    ref = csgraph.dijkstra(A, indices=sample)
    row["scipy_s"] = (time.perf_counter() - t) / SCIPY_SAMPLES * n
    dtype = np.dtype(mgapsp.plan.choose_dtype(graph, "auto")[0])
    row["dtype"] = str(dtype)
    dh = phast.upload(h, dtype)
    row["top_levels"], row["top_ranks"] = dh.top, int(len(dh.top_ranks))
    for key, d in (("kernel", dh), ("kernel_levels", dataclasses.replace(dh, top=0))):
        secs, src, rows = sweep_all(d, n, batch)
        want = csgraph.dijkstra(A, indices=src[-CHECK:])
        row[f"{key}_equal"] = bool(np.array_equal(cupy.asnumpy(rows[-CHECK:]), want))
        row[f"{key}_s"] = secs
        del rows
        print(f"{name} {key}: {secs:.3f} s, {n * n / secs:.3g} distances/s, "
              f"equal {row[f'{key}_equal']}", flush=True)
    # free: the device's, and what CuPy's pool holds of earlier graphs' results
    free = cupy.cuda.Device().mem_info[0] + cupy.get_default_memory_pool().free_bytes()
    if n * n * dtype.itemsize < 0.7 * free:
        def call():
            return mgapsp.apsp(graph, algorithm="phast", device=True)
        secs, first, times, got = first_then_median(call, repeats)
        row["device_s"], row["device_first_s"], row["device_times"] = secs, first, times
        row["device_equal"] = bool(np.array_equal(cupy.asnumpy(got[sample[:CHECK]]),
                                                  ref[:CHECK]))
        row["device_dtype"] = str(got.dtype)
        del got
        print(f"{name} apsp(device=True): {secs:.3f} s (first {first:.3f} s), "
              f"equal {row['device_equal']}", flush=True)
    return row


def job(name: str, workdir: Path) -> dict:
    """Two runs of the job, as a user meets them: the first on the graph builds its
    hierarchy (kept beside the store), the second finds it; then ``verify``."""
    graph = load(name)
    graph_file = NY if name == "ny" else workdir / f"{name}.mtx"
    if name != "ny":
        from scipy.io import mmwrite

        mmwrite(graph_file, graph.to_scipy())
    out = workdir / f"{name}.zarr"
    cmd = [sys.executable, "-m", "mgapsp", "run", str(graph_file), "-o", str(out),
           "--algorithm", "phast", "--overwrite", "--no-dashboard", "-q"]
    walls, summaries, rcs = [], [], []
    for _ in range(2):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - t)
        rcs.append(p.returncode)
        summaries.append(p.stdout.splitlines()[-6:])
        print(p.stdout[-2500:], p.stderr[-1500:], flush=True)
    t = time.perf_counter()
    v = subprocess.run([sys.executable, "-m", "mgapsp", "verify", str(out), "--samples",
                        "64"], capture_output=True, text=True)
    verify_s = time.perf_counter() - t
    print(v.stdout[-1500:], v.stderr[-800:], flush=True)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    subprocess.run(["rm", "-rf", str(out)])
    return {"graph": name, "n": graph.n, "rc": max(rcs), "wall_s": walls[0],
            "again_s": walls[1], "verify_rc": v.returncode, "verify_s": verify_s,
            "verify": v.stdout.splitlines()[-3:], "store_bytes": size,
            "summary": summaries[-1]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="ny,ny115k,highway339,delaunay115k,highway632")
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--jobs", default="ny115k,ny")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = [one_graph(g, args.batch, args.repeats) for g in args.graphs.split(",") if g]
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "gpu": gpu, "cores": os.cpu_count(), "batch": args.batch, "rows": rows}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        r["jobs"] = [job(g, Path(d)) for g in args.jobs.split(",") if g]
    # a run of jobs alone keeps a file of its own beside the kernels' results
    stem = (f"road-allpairs{'' if rows else '-jobs'}-{dt.date.today().isoformat()}-"
            f"{gpu.replace(' ', '-')}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(r, indent=1))
    lines = [f"# Every pair of road networks on one GPU ({r['date']}, {gpu}, "
             f"{r['cores']} cores)", "",
             f"Batches of {args.batch:,} sources; the kernel's time by CUDA events, "
             "`apsp(device=True)` by wall clock (median of "
             f"{args.repeats} after a first call); SciPy's Dijkstra from "
             f"{SCIPY_SAMPLES} sources, scaled. Every method's rows equal SciPy's on a "
             "sample (`equal`).", "",
             "| graph | vertices | hierarchy (build) | top product | kernel | distances/s "
             "| every level a launch | apsp(device=True) | distances/s | SciPy | equal |",
             "|---|---|---|---|---|---|---|---|---|---|---|"] if rows else [
             f"# Road jobs on one GPU ({r['date']}, {gpu}, {r['cores']} cores)"]
    for w in rows:
        dev = (f"{w['device_s']:.3f} s (first {w['device_first_s']:.2f} s) | "
               f"{w['pairs'] / w['device_s']:.3g}" if "device_s" in w
               else "does not fit | -")
        eq = all(w.get(k, True) for k in ("kernel_equal", "kernel_levels_equal",
                                          "device_equal"))
        lines.append(
            f"| {w['graph']} | {w['n']:,} | {w['arcs']:,} arcs, {w['levels']} levels "
            f"({w['build_s']:.1f} s) | {w['top_levels']} levels, {w['top_ranks']:,} ranks "
            f"| {w['kernel_s']:.3f} s | {w['pairs'] / w['kernel_s']:.3g} | "
            f"{w['kernel_levels_s']:.3f} s | {dev} | {w['scipy_s']:.0f} s | {eq} |")
    for j in r["jobs"]:
        lines.append(
            f"\n`mgapsp run --algorithm phast` of {j['graph']} ({j['n']:,} sources, "
            f"{j['n'] ** 2:,} distances) into a local store: exit {j['rc']}, "
            f"{j['wall_s']:.1f} s from start to exit the first time (its hierarchy "
            f"built), {j['again_s']:.1f} s again (the hierarchy found beside the "
            f"store), {j['store_bytes'] / 2**30:.1f} GiB stored; `mgapsp verify "
            f"--samples 64`: exit {j['verify_rc']}, {j['verify_s']:.1f} s.")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
