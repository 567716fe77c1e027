"""Device time of each kernel of the GPU Blosc encoder on one batch's block (a probe).

    python3 bench/encode_probe.py tests/data/p2p-Gnutella31.txt 1956 978 \
        [--first 60630] [--blocks 0,128,32] [--accept 4,8] [--segments 16,128] \
        [--prime 8,0] [--hash-log 11,12]

For each batch size: the block of the rows from ``--first`` on (Bellman-Ford on the
GPU), cut into the store's chunks (``plan.column_chunk``) and compressed by
``blosc.encode_chunks``: its time (CUDA events, median of 5 after a warm-up), then each
kernel's time with a wait after each, and the copy of the frames to pinned memory.
With ``--blocks``, each Blosc block size in turn (KB; 0: the encoder's own), every
frame decoded again by numcodecs and compared with its chunk.  With ``--accept``,
each shortest match the LZ4 parse takes in turn (``blosc.ACCEPT_MATCH``); with
``--segments``, each size of the segments one warp parses (KB, ``blosc.SEGMENT_BYTES``;
one as large as a stream parses it whole), ``--prime`` the strides of a segment's
first hints (``blosc.PRIME_STRIDE``, 0: none) and ``--hash-log`` the sizes of a warp's
hash table (``blosc.HASH_LOG``).
"""
from __future__ import annotations

import argparse
import itertools
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
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("rows", nargs="*", type=int, default=[1956])
    p.add_argument("--first", type=int, default=0, help="the block's first source")
    p.add_argument("--blocks", default="0",
                   help="comma-separated Blosc block sizes in KB (0: the encoder's own)")
    p.add_argument("--accept", default=str(blosc.ACCEPT_MATCH),
                   help="comma-separated shortest matches the LZ4 parse takes (4 to 8)")
    p.add_argument("--segments", default=str(blosc.SEGMENT_BYTES // 1024),
                   help="comma-separated sizes in KB of the segments a warp parses")
    p.add_argument("--prime", default=str(blosc.PRIME_STRIDE),
                   help="comma-separated strides of a segment's first hints (0: none)")
    p.add_argument("--hash-log", default=str(blosc.HASH_LOG),
                   help="comma-separated log2 sizes of a warp's hash table")
    args = p.parse_args(argv)
    g = mgapsp.read_graph(args.graph)
    gpu = pipeline.get_backend("gpu")
    untimed, own = blosc._kernel, blosc.blocksize
    for rows in args.rows:
        res = gpu.distances(g, np.arange(args.first, min(g.n, args.first + rows)),
                            algorithm="bellman-ford", dtype=np.float32, device=True)
        block = cupy.ascontiguousarray(res.distances)
        rows = block.shape[0]
        cc = column_chunk(g.n, rows)
        count = -(-g.n // cc)
        for kb in map(int, args.blocks.split(",")):
            blosc.blocksize = own if not kb else (
                lambda nbytes, ts, cl, _b=kb * 1024: min(_b, nbytes) if nbytes >= _b
                else own(nbytes, ts, cl))
            blosc.frame_layout.cache_clear()
            for accept in map(int, args.accept.split(",")):
                blosc.ACCEPT_MATCH = accept
                for seg, prime, hlog in itertools.product(
                        map(int, args.segments.split(",")), map(int, args.prime.split(",")),
                        map(int, args.hash_log.split(","))):
                    blosc.SEGMENT_BYTES = seg * 1024
                    blosc.PRIME_STRIDE, blosc.HASH_LOG = prime, hlog
                    _measure(block, rows, cc, count, kb, untimed)
        blosc.blocksize = own
        blosc.frame_layout.cache_clear()


def _measure(block, rows, cc, count, kb, untimed):
    from numcodecs import Blosc

    blosc._kernel = untimed
    totals = []
    for _ in range(6):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        frames, starts = blosc.encode_chunks(block, rows, cc, 0, count, np.inf, 5)
        b.record()
        b.synchronize()
        totals.append(cupy.cuda.get_elapsed_time(a, b))
    times: dict = {}
    blosc._kernel = lambda name, *args: _Timed(name, untimed(name, *args), times)
    for _ in range(5):
        frames, starts = blosc.encode_chunks(block, rows, cc, 0, count, np.inf, 5)
    blosc._kernel = untimed
    host = np.ndarray((frames.nbytes,), np.uint8,
                      buffer=cupy.cuda.alloc_pinned_memory(frames.nbytes))
    copies = []
    for _ in range(5):
        t = time.perf_counter()
        frames.get(out=host, blocking=True)
        copies.append(time.perf_counter() - t)
    # every frame decodes to its chunk (padded past the block's last column)
    whole = block.get()
    n = whole.shape[1]
    for k in range(count):
        got = np.frombuffer(Blosc().decode(host[starts[k]:starts[k + 1]]), np.float32)
        want = np.full((rows, cc), np.inf, np.float32)
        part = whole[:, k * cc:min(n, (k + 1) * cc)]
        want[:, :part.shape[1]] = part
        if not np.array_equal(got.reshape(rows, cc), want):
            raise SystemExit(f"chunk {k} of blocks of {kb} KB does not decode to its values")
    print(f"{rows} rows, {count} chunks of {rows} x {cc}, blocks "
          f"{blosc.frame_layout(rows * cc * 4, 4, 5).blocksize // 1024} KB, matches of "
          f"{blosc.ACCEPT_MATCH}+, segments of {blosc.SEGMENT_BYTES // 1024} KB, hints every "
          f"{blosc.PRIME_STRIDE}, table 2**{blosc.HASH_LOG}: encode_chunks "
          f"{np.median(totals[1:]):.2f} ms, {frames.nbytes / 2**20:.1f} MiB of frames "
          f"(ratio {block.nbytes / frames.nbytes:.1f}); kernels "
          + ", ".join(f"{k} {np.median(v):.2f}" for k, v in times.items())
          + f" ms; copy to pinned memory {np.median(copies) * 1e3:.2f} ms; decoded", flush=True)


if __name__ == "__main__":
    main()
