"""Aggregate rate of writing chunk-sized files (a temporary file, then renamed, as
mgapsp.writer stores a chunk) from P processes of T threads each (a probe).

    python3 bench/fs_probe.py /tmp /dev/shm
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

SIZE = int(1.3 * 2**20)
FILES = 240      # per process


def worker(root, threads, barrier, q):
    data = os.urandom(SIZE)
    def put(i):
        d = os.path.join(root, f"{os.getpid()}-{i // 15}")
        path = os.path.join(d, str(i % 15))
        tmp = f"{path}.{uuid.uuid4().hex}.partial"
        try:
            f = open(tmp, "wb")
        except FileNotFoundError:
            os.makedirs(d, exist_ok=True)
            f = open(tmp, "wb")
        with f:
            f.write(data)
        os.replace(tmp, path)
    barrier.wait()
    t = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(put, range(FILES)))
    q.put(time.perf_counter() - t)


def run(root, procs, threads):
    os.makedirs(root, exist_ok=True)
    os.sync()
    barrier = mp.Barrier(procs)
    q = mp.Queue()
    ps = [mp.Process(target=worker, args=(root, threads, barrier, q)) for _ in range(procs)]
    t = time.perf_counter()
    for p in ps:
        p.start()
    times = [q.get() for _ in ps]
    for p in ps:
        p.join()
    shutil.rmtree(root, ignore_errors=True)
    total = procs * FILES * SIZE
    return total / max(times) / 1e9, max(times)


if __name__ == "__main__":
    for base in sys.argv[1:]:
        for procs in (1, 2, 4):
            for threads in (2, 4):
                rates = [run(os.path.join(base, "fsprobe"), procs, threads)[0] for _ in range(3)]
                rates.sort()
                print(f"{base}: {procs} processes x {threads} threads: {rates[1]:.2f} GB/s "
                      f"(of 3: {', '.join(f'{r:.2f}' for r in rates)})", flush=True)
