"""What a SciPy user gets from the drop-ins on a GPU, against the kernel and SciPy.

    python bench/dropin_bench.py [--out bench] [--repeats 5]

For each case: the wall time of ``mgapsp.shortest_path`` (a NumPy result, as SciPy
returns it; median of repeats after a warm-up), the GPU backend's time for the same
rows with the block left on the device (CUDA events), the time of copying that block
to the host with ``cupy.asnumpy``, and SciPy's ``shortest_path`` on this machine's CPU
in the same run (sampled and scaled where it would take minutes).  Writes
``dropin-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

import mgapsp
from mgapsp.backends import get_backend
from mgapsp.graph import Graph

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def _median_wall(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _device_time(fn, repeats):
    import cupy

    fn()
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        out = fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times), out


def case(name, graph: Graph, method: str, algorithm: str, repeats: int, sample=None):
    """One row of the table; the drop-in's answer is checked against SciPy's."""
    import cupy

    csr = graph.to_scipy()
    indices = None if sample is None else np.arange(sample)
    wall = _median_wall(lambda: mgapsp.shortest_path(csr, method=method, indices=indices),
                        repeats)
    gpu = get_backend("gpu")
    rows = np.arange(graph.n) if sample is None else indices
    potentials = gpu.potentials(graph) if graph.has_negative_weights else None
    kernel, block = _device_time(lambda: gpu.distances(
        graph, rows, algorithm=algorithm, dtype=np.dtype("float64"),
        potentials=potentials, device=True).distances, repeats)
    copy = _median_wall(lambda: cupy.asnumpy(block), repeats)
    t = time.perf_counter()
    ref = csgraph.shortest_path(csr, method=method, indices=indices)
    scipy_s = time.perf_counter() - t
    got = mgapsp.shortest_path(csr, method=method, indices=indices)
    assert np.array_equal(np.isinf(got), np.isinf(ref))
    np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-12)
    return {"case": name, "n": graph.n, "m": graph.m, "rows": len(rows), "method": method,
            "dropin_s": wall, "kernel_s": kernel, "copy_s": copy,
            "ratio_to_kernel_plus_copy": wall / (kernel + copy), "scipy_s": scipy_s,
            "speedup_vs_scipy": scipy_s / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import cupy

    g09 = mgapsp.read_graph(DATA / "p2p-Gnutella09.txt")
    w = np.random.default_rng(0).integers(1, 11, g09.m).astype(np.float64)
    g09 = Graph(g09.indptr, g09.indices, w, vertex_ids=g09.labels, name="p2p-Gnutella09")
    rome = mgapsp.read_graph(DATA / "rome99.gr")
    # the drop-in runs SciPy's method on the GPU: 'D' is Crauser's Dijkstra there
    rows = [case("p2p-Gnutella09 (w 1..10), all sources", g09, "D", "dijkstra",
                 args.repeats),
            case("rome99, all sources", rome, "D", "dijkstra", args.repeats)]
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode().replace(" ", "-")
    stem = Path(args.out) / f"dropin-{dt.date.today()}-{name}"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    lines = ["| case | rows | drop-in | kernel | copy | drop-in / (kernel + copy) | "
             "SciPy | speed-up |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['rows']:,} | {r['dropin_s'] * 1e3:.1f} ms | "
                     f"{r['kernel_s'] * 1e3:.1f} ms | {r['copy_s'] * 1e3:.1f} ms | "
                     f"{r['ratio_to_kernel_plus_copy']:.2f} | {r['scipy_s']:.2f} s | "
                     f"{r['speedup_vs_scipy']:.0f}x |")
    text = (f"GPU {name}; float64 results as SciPy's; median of {args.repeats} after a "
            "warm-up; SciPy on the same machine's CPU, one process.\n\n"
            + "\n".join(lines) + "\n")
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
