"""Device time of each kernel of the GPU Blosc encoder on one batch's block (a probe).

    python3 bench/encode_probe.py tests/data/p2p-Gnutella31.txt 1956 978

For each batch size: the block of the first rows of the graph (Bellman-Ford on the GPU),
cut into the store's chunks (``plan.column_chunk``) and compressed by
``blosc.encode_chunks``: its time (CUDA events, median of 5 after a warm-up), then each
kernel's time with a wait after each, and the copy of the frames to pinned memory.
"""
from __future__ import annotations

import sys
import time

import cupy
import numpy as np

import mgapsp
from mgapsp import pipeline
from mgapsp._kernels import blosc
from mgapsp.plan import column_chunk


class _Timed:
    """A kernel whose launches are timed one by one (CUDA events, a wait after each)."""

    def __init__(self, name, fn, times):
        self.name, self.fn, self.times = name, fn, times

    def __getattr__(self, attr):
        return getattr(self.fn, attr)

    def __call__(self, *args, **kwargs):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        self.fn(*args, **kwargs)
        b.record()
        b.synchronize()
        self.times.setdefault(self.name, []).append(cupy.cuda.get_elapsed_time(a, b))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    g = mgapsp.read_graph(argv[0])
    gpu = pipeline.get_backend("gpu")
    untimed = blosc._kernel
    for rows in map(int, argv[1:] or ["1956"]):
        res = gpu.distances(g, np.arange(rows), algorithm="bellman-ford", dtype=np.float32,
                            device=True)
        block = cupy.ascontiguousarray(res.distances)
        cc = column_chunk(g.n, rows)
        count = -(-g.n // cc)
        blosc._kernel = untimed
        totals = []
        for _ in range(6):
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record()
            frames, _ = blosc.encode_chunks(block, rows, cc, 0, count, np.inf, 5)
            b.record()
            b.synchronize()
            totals.append(cupy.cuda.get_elapsed_time(a, b))
        times: dict = {}
        blosc._kernel = lambda name, file: _Timed(name, untimed(name, file), times)
        for _ in range(5):
            frames, _ = blosc.encode_chunks(block, rows, cc, 0, count, np.inf, 5)
        blosc._kernel = untimed
        host = np.ndarray((frames.nbytes,), np.uint8,
                          buffer=cupy.cuda.alloc_pinned_memory(frames.nbytes))
        copies = []
        for _ in range(5):
            t = time.perf_counter()
            frames.get(out=host, blocking=True)
            copies.append(time.perf_counter() - t)
        print(f"{rows} rows, {count} chunks of {rows} x {cc}: encode_chunks "
              f"{np.median(totals[1:]):.2f} ms, {frames.nbytes / 2**20:.1f} MiB of frames; "
              "kernels " + ", ".join(f"{k} {np.median(v):.2f}" for k, v in times.items())
              + f" ms; copy to pinned memory {np.median(copies) * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
