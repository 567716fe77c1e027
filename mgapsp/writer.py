"""Writing a batch's block into the store: whole chunks, compressed by a thread pool.

Zarr's own ``array[rows, :] = block`` wrote a 2 GB block of p2p-Gnutella31 rows at
1.0-1.5 GB/s on the device machines whatever the codec (even none): the time went to
its per-chunk copies and its one event loop, not to compression, which reached 13.8
GB/s on 32 threads (``bench/write_path_notes.md``).  So a worker encodes the chunks
itself: it cuts the block into whole chunks (on the GPU for a device block, see
:mod:`mgapsp._kernels.staging`), compresses each with the array's own Blosc settings
on a pool of threads, and puts the bytes under the chunk's key through the array's
store, where Zarr reads them back as if it had written them.  Arrays whose codecs are
anything but ``bytes`` (little-endian) plus an optional ``blosc`` fall back to
Zarr's own write.

The pool has ``MGAPSP_WRITE_THREADS`` threads, by default this process's share of the
cores it may run on: all of them divided by the GPUs that the host's cluster uses
(``CUDA_VISIBLE_DEVICES`` lists them, as dask-cuda sets it), or a single thread in a
process without a GPU, whose cores are busy computing.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import zarr

__all__ = ["write_block", "write_threads"]

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def write_threads() -> int:
    env = os.environ.get("MGAPSP_WRITE_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"MGAPSP_WRITE_THREADS must be a positive integer, got {env!r}")
        return n
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    from .cluster import gpu_count

    if gpu_count() == 0:
        return 1
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    sharing = len([v for v in visible.split(",") if v.strip()]) if visible else gpu_count()
    return max(1, cores // max(sharing, 1))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(write_threads(), thread_name_prefix="mgapsp-write")
        return _POOL


class _Layout:
    """How chunk bytes of one array are made and where they go."""

    def __init__(self, arr: zarr.Array):
        from zarr.codecs import BloscCodec, BytesCodec

        meta = arr.metadata
        self.ok = getattr(meta, "zarr_format", 2) == 3
        self.codec = None
        if self.ok:
            codecs = list(meta.codecs)
            first = codecs.pop(0) if codecs else None
            self.ok = (isinstance(first, BytesCodec)
                       and str(getattr(first.endian, "value", first.endian)) in ("little", "None")
                       and np.dtype(arr.dtype).byteorder in ("<", "=", "|")
                       and len(codecs) <= 1
                       and all(isinstance(c, BloscCodec) for c in codecs))
            if self.ok and codecs:
                from numcodecs import Blosc

                c = codecs[0]
                shuffle = str(getattr(c.shuffle, "value", c.shuffle))
                self.codec = Blosc(cname=str(getattr(c.cname, "value", c.cname)),
                                   clevel=int(c.clevel), shuffle=_SHUFFLE[shuffle],
                                   blocksize=int(c.blocksize), typesize=c.typesize)
        self.arr = arr
        self.chunks = arr.chunks
        self.fill = arr.fill_value
        self.dtype = np.dtype(arr.dtype)

    def put(self, row_chunk: int, col_chunk: int, tile: np.ndarray) -> int:
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        data = self.codec.encode(tile) if self.codec is not None else tile.tobytes()
        key = self.arr.metadata.encode_chunk_key((row_chunk, col_chunk))
        sp = self.arr.store_path
        path = f"{sp.path}/{key}" if sp.path else key
        sync(sp.store.set(path, default_buffer_prototype().buffer.from_bytes(data)))
        return len(data)


_LAYOUTS: dict[tuple, _Layout] = {}


def _layout(arr: zarr.Array) -> _Layout:
    # keyed by what decides the bytes, so that a store replaced under the same path
    # (--overwrite) never reuses the old array's layout
    key = (str(arr.store_path), arr.shape, arr.chunks, str(arr.dtype),
           repr(arr.metadata.codecs), repr(arr.fill_value))
    lay = _LAYOUTS.get(key)
    if lay is None:
        if len(_LAYOUTS) >= 16:
            _LAYOUTS.clear()
        lay = _LAYOUTS[key] = _Layout(arr)
    return lay


def _host_tile(block: np.ndarray, j: int, cr: int, cc: int, fill) -> np.ndarray:
    rows, n = block.shape
    c0, c1 = j * cc, min((j + 1) * cc, n)
    part = block[:, c0:c1]
    if rows == cr and c1 - c0 == cc:
        return np.ascontiguousarray(part)
    tile = np.full((cr, cc), fill, dtype=block.dtype)
    tile[:rows, :c1 - c0] = part
    return tile


def write_block(arr: zarr.Array, start: int, block) -> dict:
    """Write ``block`` (NumPy or CuPy) as rows ``start ..`` of ``arr``, whole chunks.

    ``start`` must be a multiple of the row chunk; the block must end at a chunk
    boundary or at the array's last row.  Returns ``{"copy_s", "encode_s", "bytes"}``:
    seconds cutting and copying the block to the host, seconds until every chunk was
    stored after that, and the stored bytes.
    """
    from ._kernels.staging import is_device_array

    cr, cc = arr.chunks[0], arr.chunks[1]
    rows = block.shape[0]
    stop = start + rows
    if start % cr or (stop % cr and stop != arr.shape[0]) or rows > cr:
        raise ValueError(f"rows {start}:{stop} are not whole chunks of {cr} rows")
    if block.shape[1] != arr.shape[1]:
        raise ValueError(f"a block of {block.shape[1]} columns for an array of "
                         f"{arr.shape[1]}")
    lay = _layout(arr)
    device = is_device_array(block)
    t0 = time.perf_counter()
    if not lay.ok:
        host = block.get() if device else block
        arr[start:stop, :] = host
        return {"copy_s": 0.0, "encode_s": time.perf_counter() - t0, "bytes": 0}
    pool = _pool()
    i = start // cr
    n_chunks = -(-arr.shape[1] // cc)
    futures: list[Future] = []
    copy_s = 0.0
    try:
        copy_s = _submit(pool, lay, block, device, i, cr, cc, n_chunks, futures)
    finally:
        # no chunk may still be reading a staging buffer or the block when we return
        errors = [f.exception() for f in futures]
    for exc in errors:
        if exc is not None:
            raise exc
    stored = sum(f.result() for f in futures)
    return {"copy_s": copy_s, "encode_s": time.perf_counter() - t0 - copy_s,
            "bytes": stored}


def _submit(pool, lay: _Layout, block, device: bool, i: int, cr: int, cc: int,
            n_chunks: int, futures: list) -> float:
    """Queue every chunk of the block on ``pool`` (appending to ``futures``); the
    seconds spent cutting and copying device groups to the host."""
    copy_s = 0.0
    if device:
        from ._kernels.staging import chunk_groups

        in_slot: dict[int, list[Future]] = {0: [], 1: []}

        def wait(slot):
            for f in in_slot[slot]:
                f.result()
            in_slot[slot] = []

        t = time.perf_counter()
        groups = chunk_groups(block.astype(lay.dtype, copy=False), cr, cc, lay.fill, wait)
        for slot, first, tiles in groups:
            copy_s += time.perf_counter() - t
            fs = [pool.submit(lay.put, i, first + k, tiles[k]) for k in range(len(tiles))]
            in_slot[slot] = fs
            futures.extend(fs)
            t = time.perf_counter()
    else:
        host = np.asarray(block, dtype=lay.dtype)

        def job(j):
            return lay.put(i, j, _host_tile(host, j, cr, cc, lay.fill))

        futures.extend(pool.submit(job, j) for j in range(n_chunks))
    return copy_s
