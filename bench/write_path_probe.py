"""Where a GPU batch's time goes between the kernels and the disk (a probe).

Run on a device machine: one batch of p2p-Gnutella31 rows on GPU 0, then each step of
the write path timed on its own (copy to the host, compression, Zarr writes under
several settings), and, with two GPUs, an NCCL broadcast between two processes.
Prints one line per measurement.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import sys
import tempfile
import time

import numpy as np


def _t(fn, repeat=3):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def write_path(path, rows):
    import cupy
    import zarr
    from numcodecs import Blosc
    from zarr.codecs import BloscCodec

    from mgapsp import read_graph
    from mgapsp.backends.gpu import GPUBackend

    g = read_graph(path)
    be = GPUBackend()
    src = np.arange(rows)
    be.distances(g, src[:64], algorithm="bellman-ford", dtype=np.float32)
    from mgapsp import _kernels
    dg = be._device_graph(g, np.dtype(np.float32))
    t = time.perf_counter()
    dist, _, _ = _kernels.bellman_ford_batch(dg, src, np.dtype(np.float32), False)
    cupy.cuda.Device().synchronize()
    print(f"kernel batch {rows}x{g.n}: {time.perf_counter() - t:.3f} s")
    nbytes = dist.nbytes
    gb = nbytes / 1e9
    d = _t(lambda: cupy.asnumpy(dist))
    print(f"asnumpy (new pageable): {d:.3f} s  {gb / d:.1f} GB/s")
    host = np.empty(dist.shape, dist.dtype)
    host.fill(0)
    d = _t(lambda: dist.get(out=host))
    print(f"get into reused pageable: {d:.3f} s  {gb / d:.1f} GB/s")
    mem = cupy.cuda.alloc_pinned_memory(nbytes)
    pinned = np.frombuffer(mem, dist.dtype, dist.size).reshape(dist.shape)
    s = cupy.cuda.Stream(non_blocking=True)

    def pin():
        dist.get(out=pinned, stream=s)
        s.synchronize()
    d = _t(pin)
    print(f"get into pinned: {d:.3f} s  {gb / d:.1f} GB/s")
    d = _t(lambda: np.empty(dist.shape, dist.dtype).fill(0), 2)
    print(f"first touch of {gb:.2f} GB host: {d:.3f} s")
    block = pinned
    n = g.n
    tmp = tempfile.mkdtemp(dir=os.environ.get("PROBE_DIR", "/tmp"))
    print("store dir:", tmp, os.popen(f"df -T {tmp} | tail -1").read().strip())
    codecs = {"zstd3-bit": BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle"),
              "zstd1-bit": BloscCodec(cname="zstd", clevel=1, shuffle="bitshuffle"),
              "lz4-bit": BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle"),
              "none": None}
    for col in (1024, 4096):
        for name, codec in codecs.items():
            for conc in (10, 64):
                with zarr.config.set({"async.concurrency": conc,
                                      "threading.max_workers": os.cpu_count()}):
                    p = os.path.join(tmp, f"{name}-{col}-{conc}.zarr")
                    arr = zarr.create_array(p, shape=block.shape, chunks=(rows, col),
                                            dtype="float32", fill_value=np.nan,
                                            compressors=[codec] if codec else None)

                    def w():
                        arr[:, :] = block
                    d = _t(w, 2)
                    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in
                               os.walk(p) for f in fs)
                    print(f"zarr write col={col} {name:10s} conc={conc:3d}: {d:.3f} s "
                          f"{gb / d:.2f} GB/s ratio {nbytes / size:.1f}")
                    shutil.rmtree(p)
    # compression alone, one chunk per thread
    chunks = [np.ascontiguousarray(block[:, j:j + 1024]) for j in range(0, n, 1024)]
    for threads in (1, 8, os.cpu_count()):
        c = Blosc("zstd", 3, Blosc.BITSHUFFLE)
        with cf.ThreadPoolExecutor(threads) as ex:
            def comp():
                return list(ex.map(c.encode, chunks))
            d = _t(comp, 2)
        print(f"blosc zstd3 bit encode, {threads} threads: {d:.3f} s {gb / d:.2f} GB/s")
    with cf.ThreadPoolExecutor(os.cpu_count()) as ex:
        out = list(ex.map(Blosc("zstd", 3, Blosc.BITSHUFFLE).encode, chunks))
    raw = os.path.join(tmp, "raw")
    os.makedirs(raw)

    def disk():
        for i, b in enumerate(out):
            with open(os.path.join(raw, str(i)), "wb") as f:
                f.write(b)
    d = _t(disk, 2)
    total = sum(len(b) for b in out)
    print(f"plain file writes of {total / 1e6:.0f} MB: {d:.3f} s")
    big = os.path.join(tmp, "big")
    d = _t(lambda: open(big, "wb").write(block.tobytes()), 2)
    print(f"one file of {gb:.2f} GB uncompressed: {d:.3f} s {gb / d:.2f} GB/s")
    shutil.rmtree(tmp)


def _nccl_rank(rank, world, uid, q):
    import cupy
    from cupy.cuda import nccl
    cupy.cuda.Device(rank).use()
    comm = nccl.NcclCommunicator(world, uid, rank)
    buf = cupy.full(256 * 32768, rank, dtype=cupy.float32)   # 32 MiB
    s = cupy.cuda.Stream(non_blocking=True)
    for _ in range(3):
        comm.bcast(buf.data.ptr, buf.size, nccl.NCCL_FLOAT32, 0, s.ptr)
    s.synchronize()
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record(s)
    for _ in range(50):
        comm.bcast(buf.data.ptr, buf.size, nccl.NCCL_FLOAT32, 0, s.ptr)
    e1.record(s)
    e1.synchronize()
    ms = cupy.cuda.get_elapsed_time(e0, e1) / 50
    q.put((rank, ms, float(buf[-1])))


def nccl_probe():
    import multiprocessing as mp
    try:
        from cupy.cuda import nccl
        print("cupy nccl available:", nccl.available, nccl.get_version())
    except Exception as exc:
        print("cupy nccl import failed:", repr(exc))
        return
    import cupy
    if cupy.cuda.runtime.getDeviceCount() < 2:
        return
    uid = nccl.get_unique_id()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=_nccl_rank, args=(r, 2, uid, q)) for r in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
    while not q.empty():
        rank, ms, last = q.get()
        print(f"nccl bcast 32 MiB rank {rank}: {ms:.3f} ms ({32 * 1.048576 / ms:.0f} GB/s), "
              f"value {last}")
    print("peer access 0->1:", cupy.cuda.runtime.deviceCanAccessPeer(0, 1))


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    print("cores", os.cpu_count())
    if "nccl" in sys.argv[1:]:
        nccl_probe()
    if "write" in sys.argv[1:]:
        write_path("tests/data/p2p-Gnutella31.txt", 8192)
