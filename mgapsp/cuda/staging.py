"""Device blocks to the host in the store's chunk layout, through pinned buffers.

A batch's ``(rows, n)`` block leaves the device one group of column chunks at a time:
the group is cut on the device into whole chunks (``(chunk_rows, chunk_cols)`` each,
padded with the array's fill value past the block's last row or column, as Zarr
stores edge chunks), copied on a stream of its own into a page-locked host buffer and
handed to the caller, who compresses it while the next group is cut and copied into
the other buffer.  Each thread keeps its two buffers across batches: a fresh pageable
array would be faulted in page by page on every batch (on the device machines, 2 GB
took 0.66 s through ``cupy.asnumpy`` against 0.04 s into a reused pinned buffer;
``bench/NOTES.md``).
"""

from __future__ import annotations

import threading
from typing import Callable, Iterator

import numpy as np


from .blosc import TYPESIZES  # noqa: F401  (the type sizes the GPU frames handle)
from .loader import cupy_module

__all__ = ["STAGE_BYTES", "FRAME_GROUP_BYTES", "chunk_groups", "frame_groups", "GPUTimer",
           "is_device_array", "select_columns"]

#: bytes of one pinned staging buffer; each thread that writes has two
STAGE_BYTES = 256 * 2**20
#: raw bytes of the chunks compressed on the device at once (its scratch is twice that)
FRAME_GROUP_BYTES = 512 * 2**20

_LOCAL = threading.local()


def is_device_array(a) -> bool:
    """True for a CuPy array (without importing CuPy when it is not loaded)."""
    mod = type(a).__module__
    return mod.startswith("cupy")


def select_columns(block, columns: np.ndarray):
    """``block[:, columns]`` on the block's own device."""
    if is_device_array(block):
        return block[:, cupy_module().asarray(columns)]
    return block[:, columns]


class _Stage:
    """One thread's two pinned buffers and its copy stream."""

    def __init__(self):
        cupy = cupy_module()
        self.device = cupy.cuda.runtime.getDevice()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.buffers: list[np.ndarray | None] = [None, None]

    def buffer(self, slot: int, nbytes: int) -> np.ndarray:
        buf = self.buffers[slot]
        if buf is None or buf.nbytes < nbytes:
            # Compressed groups vary in size: room for twice this one, so that a batch
            # seldom waits for pages to be pinned.
            size = 2 * nbytes           # more than the buffer held: it only grows
            self.buffers[slot] = None
            mem = cupy_module().cuda.alloc_pinned_memory(size)
            buf = self.buffers[slot] = np.ndarray((size,), dtype=np.uint8, buffer=mem)
        return buf[:nbytes]


def _stage() -> _Stage:
    cupy = cupy_module()
    st = getattr(_LOCAL, "stage", None)
    if st is None or st.device != cupy.cuda.runtime.getDevice():
        st = _LOCAL.stage = _Stage()
    return st


def chunk_groups(block, chunk_rows: int, chunk_cols: int, fill,
                 wait: Callable[[int], None]) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield ``(slot, first column chunk, tiles)`` for the device ``block``.

    ``tiles`` is a host array of shape ``(g, chunk_rows, chunk_cols)``: whole chunks
    ``first .. first + g`` of the block's row of chunks, in the page-locked buffer
    ``slot`` (0 or 1, alternating), reused two groups later.  Before reusing a buffer
    the generator calls ``wait(slot)``: the caller must then be done with the tiles
    it was given from that slot.
    """
    cupy = cupy_module()
    rows, n = block.shape
    if rows > chunk_rows:
        raise ValueError(f"a block of {rows} rows does not fit chunks of {chunk_rows}")
    st = _stage()
    item = block.dtype.itemsize
    n_chunks = -(-n // chunk_cols)
    per_chunk = chunk_rows * chunk_cols * item
    g_max = max(1, STAGE_BYTES // per_chunk)
    # the kernels that produced ``block`` ran on the current stream: copy after them
    ready = cupy.cuda.Event()
    ready.record()
    st.stream.wait_event(ready)
    slot = 0
    with st.stream:
        for first in range(0, n_chunks, g_max):
            g = min(g_max, n_chunks - first)
            last = first + g
            full = min(last, n // chunk_cols)      # chunks wholly inside the block
            tiles = cupy.empty((g, chunk_rows, chunk_cols), dtype=block.dtype)
            if rows < chunk_rows:
                tiles[:, rows:, :] = fill
            if full > first:
                src = block[:, first * chunk_cols:full * chunk_cols]
                tiles[:full - first, :rows, :] = src.reshape(
                    rows, full - first, chunk_cols).transpose(1, 0, 2)
            if full < last:                         # the ragged last chunk
                c0 = full * chunk_cols
                tiles[-1, :rows, :n - c0] = block[:, c0:]
                tiles[-1, :, n - c0:] = fill
            wait(slot)
            host = st.buffer(slot, tiles.nbytes).view(block.dtype)
            host = host.reshape(tiles.shape)
            tiles.get(out=host, stream=st.stream, blocking=True)
            del tiles
            yield slot, first, host
            slot ^= 1


def frame_groups(block, chunk_rows: int, chunk_cols: int, fill, codec: tuple,
                 wait: Callable[[int], None], times: dict | None = None
                 ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Yield ``(slot, first column chunk, frames, starts)`` for the device ``block``:
    its chunks compressed on the device, a group at a time, and copied to the
    page-locked buffer ``slot``; chunk ``first + k``'s frame is
    ``frames[starts[k]:starts[k + 1]]``.  ``codec`` is ``("planes", special word)``
    (:func:`mgapsp.cuda.planes.encode_chunks`) or ``("blosc", level)`` for Blosc LZ4
    bit-shuffle frames (:func:`mgapsp.cuda.blosc.encode_chunks`).  ``wait(slot)`` as
    in :func:`chunk_groups`.  The next group is compressed while the caller stores
    this one.  ``times`` (a dict) gains the seconds spent encoding (``encode_s``, the
    kernels and the wait for the frames' sizes), waiting for a buffer
    (``wait_s``) and copying the frames out (``copy_out_s``), and under ``spans``
    the wall-clock spans (``time.time()``) of each group's encoding.
    """
    import time

    times = {} if times is None else times
    for key in ("encode_s", "wait_s", "copy_out_s"):
        times.setdefault(key, 0.0)
    from . import blosc, planes

    kind, param = codec
    encoder = {"blosc": blosc.encode_chunks, "planes": planes.encode_chunks}[kind]
    cupy = cupy_module()
    block = cupy.ascontiguousarray(block)
    rows, n = block.shape
    st = _stage()
    n_chunks = -(-n // chunk_cols)
    per_chunk = chunk_rows * chunk_cols * block.dtype.itemsize
    g_max = max(1, FRAME_GROUP_BYTES // per_chunk)
    slot = 0
    for first in range(0, n_chunks, g_max):
        g = min(g_max, n_chunks - first)
        t0, w0 = time.perf_counter(), time.time()
        frames, starts = encoder(block, chunk_rows, chunk_cols, first, g, fill, param)
        t1 = time.perf_counter()
        times.setdefault("spans", []).append((w0, time.time()))
        wait(slot)
        t2 = time.perf_counter()
        host = st.buffer(slot, frames.nbytes)
        frames.get(out=host, blocking=True)
        del frames
        times["encode_s"] += t1 - t0
        times["wait_s"] += t2 - t1
        times["copy_out_s"] += time.perf_counter() - t2
        yield slot, first, host, starts
        slot ^= 1


class GPUTimer:
    """Device time between :meth:`start` and :meth:`stop` on the current stream."""

    def __init__(self):
        cupy = cupy_module()
        self._a, self._b = cupy.cuda.Event(), cupy.cuda.Event()

    def start(self) -> "GPUTimer":
        self._a.record()
        return self

    def stop(self) -> float:
        """Seconds; waits for the device."""
        cupy = cupy_module()
        self._b.record()
        self._b.synchronize()
        return cupy.cuda.get_elapsed_time(self._a, self._b) / 1e3
