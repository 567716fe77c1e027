"""How the host's chunk compression scales with threads and processes (a probe).

One 2048-row block of p2p-Gnutella31 distances (from the GPU) is compressed as the
writer does it (Blosc lz4 bit-shuffle, chunks of 2048 rows and W columns) by a pool of
T threads in P processes at once; prints GB/s of raw distances per setting.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def block():
    rng = np.random.default_rng(0)
    # Gnutella-like: small integer hop counts as float32, a few inf
    b = rng.integers(1, 26, size=(2048, 62586)).astype(np.float32)
    b[:, ::37] = np.inf
    b.sort(axis=1)
    return b


def run(threads, q, barrier, width=4096):
    from numcodecs import Blosc
    b = block()
    chunks = [np.ascontiguousarray(b[:, j:j + width])
              for j in range(0, b.shape[1] - width, width)]
    c = Blosc("lz4", 5, Blosc.BITSHUFFLE)
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(c.encode, chunks))
        barrier.wait()
        t = time.perf_counter()
        for _ in range(3):
            list(ex.map(c.encode, chunks))
        dt = (time.perf_counter() - t) / 3
    q.put(sum(x.nbytes for x in chunks) / dt / 1e9)


if __name__ == "__main__":
    print("affinity", len(os.sched_getaffinity(0)), "cpu_count", os.cpu_count())
    ctx = mp.get_context("fork")
    settings = [(1, 1, 4096), (1, 16, 4096), (1, 32, 4096), (4, 16, 4096), (8, 8, 4096),
                (1, 16, 2048), (1, 32, 2048), (4, 16, 2048), (1, 16, 1024), (1, 32, 1024),
                (1, 64, 1024), (4, 16, 1024)]
    for procs, threads, width in settings:
        q = ctx.Queue()
        bar = ctx.Barrier(procs)
        ps = [ctx.Process(target=run, args=(threads, q, bar, width)) for _ in range(procs)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        rates = [q.get() for _ in ps]
        print(f"chunks of 2048 x {width} ({width * 2048 * 4 >> 20} MiB): "
              f"{procs} procs x {threads:2d} threads: {sum(rates):6.1f} GB/s total, "
              f"{sum(rates) / procs / threads:.2f} GB/s per thread", flush=True)
