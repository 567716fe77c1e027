"""How fast a shard's pieces reach a file: P processes (as a job's workers) each write
shards of SIZE bytes from T threads at once, a piece per thread, by each way a file
can get its bytes (a probe for ``writer.RESERVE``).

    python3 bench/shard_write_probe.py /tmp --processes 1,4 --threads 4

Ways: ``pwrite`` (positional writes into a new file, as the writer does), ``truncate``
and ``fallocate`` (the file given its size first), ``mmap`` (the pieces copied into a
shared mapping of the file sized first), ``files`` (a file per piece, for reference),
``direct`` (``O_DIRECT`` positional writes from page-aligned memory, pieces cut at 4 KB,
past the page cache).
Prints the median ms per shard and the aggregate GB/s.
"""
from __future__ import annotations

import argparse
import mmap
import multiprocessing as mp
import os
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np

WAYS = ("pwrite", "truncate", "fallocate", "mmap", "files", "direct")


def _write(way: str, path: str, src: np.ndarray, pool, threads: int) -> None:
    n = len(src)
    cuts = [n * p // threads for p in range(threads + 1)]
    if way == "direct":
        cuts = [c // 4096 * 4096 for c in cuts[:-1]] + [n]
    pieces = list(zip(cuts, cuts[1:]))
    if way == "files":
        def put(p):
            fd = os.open(f"{path}.{p[0]}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, src[p[0]:p[1]])
            finally:
                os.close(fd)
        list(pool.map(put, pieces))
        return
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | (os.O_DIRECT if way == "direct" else 0)
    fd = os.open(path, flags, 0o644)
    try:
        if way == "truncate" or way == "mmap":
            os.ftruncate(fd, n)
        elif way == "fallocate":
            os.posix_fallocate(fd, 0, n)
        if way == "mmap":
            m = mmap.mmap(fd, n)
            dst = np.frombuffer(m, dtype=np.uint8)

            def put(p):
                dst[p[0]:p[1]] = src[p[0]:p[1]]
            list(pool.map(put, pieces))
            del dst
            m.close()
        else:
            list(pool.map(lambda p: os.pwrite(fd, src[p[0]:p[1]], p[0]), pieces))
    finally:
        os.close(fd)


def _process(root, way, size, shards, threads, barrier, out):
    # page-aligned, as O_DIRECT wants (and as a pinned buffer is)
    src = np.frombuffer(mmap.mmap(-1, size), dtype=np.uint8)
    src[:] = np.frombuffer(np.random.default_rng(os.getpid()).bytes(size), dtype=np.uint8)
    d = os.path.join(root, f"p{os.getpid()}")
    os.makedirs(d)
    times = []
    with ThreadPoolExecutor(threads) as pool:
        _write(way, os.path.join(d, "warm"), src, pool, threads)
        barrier.wait()
        for i in range(shards):
            t = time.perf_counter()
            _write(way, os.path.join(d, f"{i}.{uuid.uuid4().hex}"), src, pool, threads)
            times.append(time.perf_counter() - t)
    out.put(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("--processes", default="1,4")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--size-mb", type=float, default=23.0)
    p.add_argument("--shards", type=int, default=24)
    p.add_argument("--ways", default=",".join(WAYS))
    args = p.parse_args()
    size = int(args.size_mb * 2**20)
    ctx = mp.get_context("spawn")
    for procs in [int(x) for x in args.processes.split(",")]:
        for rep in range(2):
            for way in args.ways.split(","):
                root = os.path.join(args.root, f"shard-probe-{uuid.uuid4().hex}")
                os.makedirs(root)
                barrier, out = ctx.Barrier(procs), ctx.Queue()
                ps = [ctx.Process(target=_process, args=(root, way, size, args.shards,
                                                         args.threads, barrier, out))
                      for _ in range(procs)]
                for q in ps:
                    q.start()
                times = [x for _ in ps for x in out.get()]
                for q in ps:
                    q.join()
                med = float(np.median(times))
                print(f"{procs} processes x {args.threads} threads, {way:9s} (round {rep}): "
                      f"median {1e3 * med:.2f} ms a shard of {args.size_mb:g} MB, "
                      f"p90 {1e3 * float(np.percentile(times, 90)):.2f} ms, "
                      f"{procs * size / med / 1e9:.1f} GB/s", flush=True)
                shutil.rmtree(root)


if __name__ == "__main__":
    main()
