"""GPU Blosc LZ4 bit-shuffle frames against the host's Blosc, on real distance rows.

Run on a device machine:

    python3 -m bench.gpu_blosc_bench tests/data/p2p-Gnutella31.txt --rows 2048 --out bench/gpu-blosc

One batch of rows is computed on GPU 0 (mgapsp's Bellman-Ford).  Its chunks, in the
store's layout (the batch's rows by CHUNK_ELEMENTS / rows columns), are then
compressed (a) on the GPU by ``mgapsp.blosc.encode_chunks``, timed with CUDA
events after a warm-up, median of the repeats, and (b) on the host by numcodecs'
Blosc with the same settings, on a thread pool of every core this process may use
(the peer), median of the repeats.  Every GPU frame is decoded by numcodecs and
compared with its chunk.  Writes ``<out>.json`` and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import platform
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results/gpu-blosc")
    args = parser.parse_args(argv)

    import cupy
    from numcodecs import Blosc

    from mgapsp import read_graph
    from mgapsp.cuda import blosc
    from mgapsp.backends.gpu import GPUBackend
    from mgapsp.plan import column_chunk

    g = read_graph(args.graph)
    rows = min(args.rows, g.n)
    block = GPUBackend().distances(g, np.arange(rows), algorithm="bellman-ford",
                                   dtype=np.dtype(np.float32), device=True).distances
    block = cupy.ascontiguousarray(block)
    cupy.cuda.Device().synchronize()
    cc = column_chunk(g.n, rows)
    n_chunks = -(-g.n // cc)
    raw = block.nbytes

    def gpu():
        return blosc.encode_chunks(block, rows, cc, 0, n_chunks, np.nan)

    frames, starts = gpu()                       # warm-up: compile, pools
    times = []
    for _ in range(args.repeats):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        frames, starts = gpu()
        b.record()
        b.synchronize()
        times.append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    gpu_s = float(np.median(times))

    host = block.get()
    tiles = []
    for j in range(n_chunks):
        t = np.full((rows, cc), np.nan, np.float32)
        part = host[:, j * cc:(j + 1) * cc]
        t[:, :part.shape[1]] = part
        tiles.append(t)
    hframes = frames.get()
    for k, t in enumerate(tiles):
        got = np.frombuffer(Blosc().decode(hframes[starts[k]:starts[k + 1]].tobytes()),
                            np.float32)
        assert np.array_equal(got.view(np.uint32), t.reshape(-1).view(np.uint32)), k
    codec = Blosc("lz4", 5, Blosc.BITSHUFFLE)
    threads = len(os.sched_getaffinity(0))
    host_times, host_bytes = [], 0
    with cf.ThreadPoolExecutor(threads) as pool:
        list(pool.map(codec.encode, tiles))      # warm-up
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            host_bytes = sum(len(f) for f in pool.map(codec.encode, tiles))
            host_times.append(time.perf_counter() - t0)
    host_s = float(np.median(host_times))
    gpu_bytes = int(starts[-1])
    result = {
        "graph": g.name, "rows": rows, "columns": g.n, "chunk": [rows, cc],
        "chunks": n_chunks, "raw_bytes": raw, "device": cupy.cuda.runtime.getDeviceProperties(
            0)["name"].decode(), "host": platform.node(), "host_threads": threads,
        "gpu_s": gpu_s, "gpu_s_all": times, "gpu_GBps": raw / gpu_s / 1e9,
        "gpu_bytes": gpu_bytes, "gpu_ratio": raw / gpu_bytes,
        "host_s": host_s, "host_s_all": host_times, "host_GBps": raw / host_s / 1e9,
        "host_bytes": host_bytes, "host_ratio": raw / host_bytes,
        "speedup": host_s / gpu_s, "decoded_equal": True,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    md = [f"# Blosc LZ4 bit-shuffle: GPU frames against numcodecs, {g.name}", "",
          f"One batch of {rows:,} rows x {g.n:,} columns (float32, {raw / 1e9:.2f} GB) "
          f"in {n_chunks} chunks of {rows} x {cc}; {result['device']}; host Blosc on "
          f"{threads} threads.  Median of {args.repeats}; every GPU frame decoded by "
          "numcodecs and equal to its chunk.", "",
          "| encoder | seconds | GB/s (raw in) | stored | ratio |", "|---|---|---|---|---|",
          f"| GPU (`encode_chunks`, CUDA events) | {gpu_s:.4f} | {result['gpu_GBps']:.1f} | "
          f"{gpu_bytes / 2**20:.1f} MiB | {result['gpu_ratio']:.1f}x |",
          f"| host numcodecs, {threads} threads | {host_s:.4f} | {result['host_GBps']:.1f} | "
          f"{host_bytes / 2**20:.1f} MiB | {result['host_ratio']:.1f}x |", "",
          f"GPU / host speed: {result['speedup']:.1f}x."]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
