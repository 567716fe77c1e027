"""What users get: the in-process API, the SciPy drop-ins and ``mgapsp run`` end to end,
each beside the kernel's own time and SciPy's Dijkstra measured in the same run.

    python -m bench.user_bench [--out bench] [--repeats 5]
                               [--parts api,phast,dropin,read,cli,cpu-cli]

- ``api``: ``mgapsp.apsp(graph, sources=...)`` returning a NumPy array (wall clock,
  median of repeats after a warm-up), on Gnutella09 (all sources), the NY road network
  and Austin (4,096 sources each) and a Delaunay mesh (``bench/data``; a high-diameter
  graph the tests do not use).  "kernel" is the GPU backend's time for the same rows in
  one batch with the block left on the device (CUDA events); "asnumpy" what copying
  that block to fresh host memory with ``cupy.asnumpy`` takes.
- ``dropin``: ``mgapsp.shortest_path(csr, method="D")`` (float64, as SciPy's).
- ``read``: a stored result read back whole with ``Result.distances()``, beside
  Zarr's own ``array[:]``.
- ``cli``: ``python -m mgapsp run`` in a fresh process, start to exit (the first run
  compiles the kernels when CuPy's cache is empty; it is reported apart).
- ``cpu-cli``: the CPU backend's ``mgapsp run`` of a 34-vertex graph against
  ``python -c "import distributed, zarr, scipy.sparse.csgraph"``.

SciPy runs on this machine's CPU in one process; where it would take minutes it runs
on a random sample of the sources, scaled by the count.  Every result is checked
against SciPy on the rows SciPy computed.  Writes ``user-<date>-<gpu>.md`` and
``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

from bench.timing import median_wall
import mgapsp
from mgapsp.backends import get_backend
from mgapsp.graph import Graph
from workflows.benchmark import gpu_time

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "tests" / "data"
ROWS: list[dict] = []


def kernel_time(graph: Graph, rows, algorithm: str, dtype, repeats: int):
    """Device seconds of one batch of ``rows`` (CUDA events), and the device block."""
    gpu = get_backend("gpu")
    potentials = gpu.potentials(graph) if graph.has_negative_weights else None

    seconds, _times, block = gpu_time(
        lambda: gpu.distances(graph, rows, algorithm=algorithm, dtype=np.dtype(dtype),
                              potentials=potentials, device=True).distances,
        repeats=repeats)
    return seconds, block


def scipy_dijkstra(graph: Graph, rows: np.ndarray, sample: int | None):
    """SciPy's seconds for ``rows`` (sampled and scaled), the rows timed and their answer."""
    pick = rows if sample is None or sample >= len(rows) else \
        np.sort(np.random.default_rng(1).choice(rows, sample, replace=False))
    csr = graph.to_scipy()
    t = time.perf_counter()
    ref = csgraph.dijkstra(csr, indices=pick)
    return (time.perf_counter() - t) * len(rows) / len(pick), pick, ref


def check(got: np.ndarray, rows: np.ndarray, pick: np.ndarray, ref: np.ndarray, what: str):
    where = np.searchsorted(rows, pick) if np.all(np.diff(rows) > 0) else \
        np.array([int(np.flatnonzero(rows == p)[0]) for p in pick])
    sub = got[where].astype(np.float64)
    fin = np.isfinite(ref)
    if not (np.array_equal(np.isinf(sub), ~fin)
            and np.allclose(sub[fin], ref[fin], rtol=1e-12, atol=0)):
        raise SystemExit(f"{what}: WRONG against SciPy")


def add(case: str, what: str, graph: Graph, rows: int, wall: float, scipy_s: float,
        sampled: int, kernel: float | None = None, asnumpy: float | None = None, **extra):
    row = {"case": case, "what": what, "n": graph.n, "m": graph.m, "rows": rows,
           "wall_s": wall, "kernel_s": kernel, "asnumpy_s": asnumpy, "scipy_s": scipy_s,
           "scipy_rows_timed": sampled, "speedup_vs_scipy": scipy_s / wall,
           "wall_over_kernel": None if kernel is None else wall / kernel, **extra}
    ROWS.append(row)
    k = "" if kernel is None else f", kernel {kernel * 1e3:.1f} ms"
    print(f"{case} [{what}]: {wall * 1e3:.1f} ms{k}, SciPy {scipy_s:.2f} s "
          f"-> {row['speedup_vs_scipy']:.0f}x", flush=True)


# -- the graphs ------------------------------------------------------------------------
def gnutella09() -> Graph:
    g = mgapsp.read_graph(DATA / "p2p-Gnutella09.txt")
    w = np.random.default_rng(0).integers(1, 11, g.m).astype(np.float64)
    return Graph(g.indptr, g.indices, w, vertex_ids=g.labels, name="p2p-Gnutella09 (w 1..10)")


def some_sources(graph: Graph, k: int) -> np.ndarray:
    return np.sort(np.random.default_rng(4).choice(graph.n, size=k, replace=False))


# -- parts -----------------------------------------------------------------------------
def part_api(repeats: int) -> None:
    delaunay = mgapsp.read_graph(ROOT / "bench" / "data" / "delaunay_n14.mtx")
    cases = [(gnutella09(), None, None), (mgapsp.read_graph(DATA / "NY.pace.gr.gz"), 4096, 32),
             (mgapsp.read_graph(DATA / "Austin_net.tntp"), 4096, 512), (delaunay, None, 256)]
    for graph, k, sample in cases:
        rows = np.arange(graph.n) if k is None else some_sources(graph, k)
        labels = graph.labels[rows]
        few = repeats if graph.n * len(rows) < 2e8 else max(1, repeats // 2)
        wall, got = median_wall(lambda: mgapsp.apsp(graph, backend="gpu", sources=labels), few)
        dtype = got.dtype
        kernel, block = kernel_time(graph, rows, "bellman-ford", dtype, few)
        import cupy

        asnumpy, _ = median_wall(lambda: cupy.asnumpy(block), few)
        del block
        scipy_s, pick, ref = scipy_dijkstra(graph, rows, sample)
        check(got, rows, pick, ref, graph.name)
        add(graph.name, f"apsp() in process, {dtype}", graph, len(rows), wall, scipy_s,
            len(pick), kernel, asnumpy)
        del got


def part_phast(repeats: int) -> None:
    """``apsp(algorithm="phast")`` on the road graphs: the first call builds the
    hierarchy (its time reported beside), later calls of the process reuse it."""
    from mgapsp import hierarchy

    delaunay = mgapsp.read_graph(ROOT / "bench" / "data" / "delaunay_n14.mtx")
    cases = [(mgapsp.read_graph(DATA / "NY.pace.gr.gz"), 4096, 32),
             (mgapsp.read_graph(DATA / "Austin_net.tntp"), 4096, 512), (delaunay, None, 256)]
    for graph, k, sample in cases:
        rows = np.arange(graph.n) if k is None else some_sources(graph, k)
        labels = graph.labels[rows]
        t = time.perf_counter()
        first = mgapsp.apsp(graph, backend="gpu", algorithm="phast", sources=labels)
        first_s = time.perf_counter() - t
        t = time.perf_counter()
        hierarchy.build(graph)
        build_s = time.perf_counter() - t
        del first
        wall, got = median_wall(lambda: mgapsp.apsp(graph, backend="gpu", algorithm="phast",
                                                    sources=labels), repeats)
        kernel, block = kernel_time(graph, rows, "phast", got.dtype, repeats)
        import cupy

        asnumpy, _ = median_wall(lambda: cupy.asnumpy(block), repeats)
        del block
        scipy_s, pick, ref = scipy_dijkstra(graph, rows, sample)
        check(got, rows, pick, ref, graph.name)
        add(graph.name, f"apsp(algorithm='phast') in process, {got.dtype}", graph, len(rows),
            wall, scipy_s, len(pick), kernel, asnumpy, first_run_s=first_s,
            hierarchy_s=build_s)
        del got


def part_dropin(repeats: int) -> None:
    for graph in (gnutella09(), mgapsp.read_graph(DATA / "rome99.gr")):
        csr = graph.to_scipy()
        rows = np.arange(graph.n)
        wall, got = median_wall(lambda: mgapsp.shortest_path(csr, method="D"), repeats)
        kernel, block = kernel_time(graph, rows, "dijkstra", np.float64, repeats)
        import cupy

        asnumpy, _ = median_wall(lambda: cupy.asnumpy(block), repeats)
        del block
        scipy_s, pick, ref = scipy_dijkstra(graph, rows, None)
        check(got, rows, pick, ref, graph.name)
        add(graph.name, "shortest_path(method='D') drop-in, float64", graph, len(rows), wall,
            scipy_s, len(pick), kernel, asnumpy)


def part_read(repeats: int) -> None:
    """A stored result read back whole: ``Result.distances()`` against Zarr's own
    ``array[:]`` (fresh memory faulted in by one thread), both checked."""
    g = gnutella09()
    with tempfile.TemporaryDirectory() as tmp:
        result = mgapsp.apsp(g, out=os.path.join(tmp, "g.zarr"))
        wall, got = median_wall(result.distances, repeats)
        plain, ref = median_wall(lambda: result.group["distances"][:], repeats)
        if not np.array_equal(got, ref):
            raise SystemExit("Result.distances() differs from the store's array")
        scipy_s, pick, ref = scipy_dijkstra(g, np.arange(g.n), 64)
        check(got, np.arange(g.n), pick, ref, g.name)
        add(g.name, "Result.distances(), a stored result read whole", g, g.n, wall, scipy_s,
            len(pick), zarr_plain_s=plain)


def _cli(args: list[str], tmp: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mgapsp", "run", *args, "-o",
                    os.path.join(tmp, "out.zarr"), "--overwrite", "-q"],
                   check=True, cwd=ROOT, capture_output=True)
    return time.perf_counter() - t


def part_cli(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        g09 = mgapsp.read_graph(DATA / "p2p-Gnutella09.txt")
        args = [str(DATA / "p2p-Gnutella09.txt"), "--backend", "gpu"]
        first = _cli(args, tmp)
        wall = statistics.median(_cli(args, tmp) for _ in range(3))
        scipy_s, pick, ref = scipy_dijkstra(g09, np.arange(g09.n), None)
        add("p2p-Gnutella09", "mgapsp run, start to exit", g09, g09.n, wall, scipy_s,
            len(pick), first_run_s=first)
        ny = mgapsp.read_graph(DATA / "NY.pace.gr.gz")
        rows = some_sources(ny, 4096)
        ids = os.path.join(tmp, "sources.txt")
        np.savetxt(ids, ny.labels[rows], fmt="%d")
        args = [str(DATA / "NY.pace.gr.gz"), "--backend", "gpu", "--sources", ids]
        wall = statistics.median(_cli(args, tmp) for _ in range(3))
        scipy_s, pick, ref = scipy_dijkstra(ny, rows, 32)
        add("NY.pace.gr.gz", "mgapsp run, start to exit, 4,096 sources", ny, len(rows), wall,
            scipy_s, len(pick))


def part_cpu_cli(repeats: int) -> None:
    imports = [sys.executable, "-c", "import distributed, zarr, scipy.sparse.csgraph"]

    def wall_of(cmd):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
        return time.perf_counter() - t
    base = statistics.median(wall_of(imports) for _ in range(3))
    karate = mgapsp.read_graph(DATA / "karate.mtx")
    with tempfile.TemporaryDirectory() as tmp:
        args = [str(DATA / "karate.mtx"), "--backend", "cpu"]
        wall = statistics.median(_cli(args, tmp) for _ in range(3))
    scipy_s, pick, _ = scipy_dijkstra(karate, np.arange(karate.n), None)
    add("karate (34 vertices)", "mgapsp run --backend cpu, start to exit", karate, karate.n,
        wall, scipy_s, len(pick), imports_s=base, over_imports=wall / base)
    print(f"  imports of distributed, zarr, scipy.sparse.csgraph: {base:.2f} s; run / imports "
          f"= {wall / base:.2f}", flush=True)


def write(out: Path, repeats: int) -> None:
    try:
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:
        name = "no GPU"
    stem = out / f"user-{dt.date.today()}-{name.replace(' ', '-')}"
    out.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(
        {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "gpu": name,
         "cpus": os.cpu_count(), "repeats": repeats, "rows": ROWS}, indent=1))
    lines = ["| graph | what | rows | mgapsp | kernel | kernel + asnumpy | SciPy Dijkstra | "
             "speed-up |", "|---|---|---|---|---|---|---|---|"]

    def ms(x):
        return "" if x is None else (f"{x:.2f} s" if x >= 1 else f"{x * 1e3:.1f} ms")
    for r in ROWS:
        sampled = ("" if r["scipy_rows_timed"] == r["rows"]
                   else f" ({r['scipy_rows_timed']} timed, scaled)")
        both = None if r["kernel_s"] is None else r["kernel_s"] + r["asnumpy_s"]
        note = ""
        if "first_run_s" in r:
            note = f"; first run {ms(r['first_run_s'])}"
        if "hierarchy_s" in r:
            note += f", hierarchy build alone {ms(r['hierarchy_s'])}"
        if "zarr_plain_s" in r:
            note = f"; Zarr's `array[:]` {ms(r['zarr_plain_s'])}"
        if "imports_s" in r:
            note = f"; imports alone {ms(r['imports_s'])} ({r['over_imports']:.2f}x)"
        lines.append(f"| {r['case']} | {r['what']}{note} | {r['rows']:,} | {ms(r['wall_s'])} | "
                     f"{ms(r['kernel_s'])} | {ms(both)} | {ms(r['scipy_s'])}{sampled} | "
                     f"{r['speedup_vs_scipy']:,.0f}x |")
    text = (f"# What users get, {dt.date.today()}\n\nGPU {name}, {os.cpu_count()} CPU cores. "
            f"mgapsp: wall clock, median of {repeats} after a warm-up (CLI: of 3 runs in "
            "fresh processes). Kernel: one batch of the same rows, CUDA events, block left "
            "on the device; kernel + asnumpy: what the block costs through `cupy.asnumpy` "
            "into fresh memory. SciPy's Dijkstra on this machine's CPU in the same run, one "
            "process.\n\n" + "\n".join(lines) + "\n")
    stem.with_suffix(".md").write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", default="api,phast,dropin,read,cli,cpu-cli")
    args = parser.parse_args()
    parts = {"api": part_api, "phast": part_phast, "dropin": part_dropin, "read": part_read, "cli": part_cli,
             "cpu-cli": part_cpu_cli}
    for name in args.parts.split(","):
        parts[name](args.repeats)
    write(Path(args.out), args.repeats)


if __name__ == "__main__":
    main()
