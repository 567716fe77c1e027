"""Device blocks into a NumPy array at the link's speed.

What the in-process API and the SciPy drop-ins hand back is a fresh host array, far
larger than anything else the call touches.  Two costs hide there, each larger than the
kernels on a graph of ten thousand vertices:

- ``cupy.asnumpy`` copies into pageable memory, which the driver stages through its
  own small pinned buffer at a few GB/s;
- a fresh array's pages are faulted in on first write, one thread at a time.

So a :class:`HostCopier` touches the output's pages from a pool of threads while the
kernels run, and moves each block through a ring of page-locked buffers: the device
copies a piece into one buffer on a stream of its own while the pool copies the pieces
before it out of the others, each piece split across the threads.  A block is handed
over as soon as its kernels are queued (:meth:`HostCopier.put` does not wait), so the
next batch's kernels run while it drains.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all

import numpy as np

from ..memory import host_pool, host_threads, page_spans, touch_spans
from .loader import cupy_module

__all__ = ["PIECE_BYTES", "RING", "HostCopier"]

#: bytes one page-locked buffer holds: a piece of a block in flight
PIECE_BYTES = 32 * 2**20
#: page-locked buffers per copier (the device fills one while the host empties others)
RING = 3


class HostCopier:
    """Copies device blocks into C-contiguous host arrays, overlapped with the kernels
    that run meanwhile.

    ``outputs`` are the arrays that will be written (their pages are touched now, in
    parallel).  Use as a context manager: leaving waits for every copy and raises the
    first error a copy met.
    """

    def __init__(self, *outputs: np.ndarray):
        cupy = cupy_module()
        self.cupy_module = cupy
        self._pool = host_pool()
        self._threads = host_threads()
        self._device = cupy.cuda.runtime.getDevice()
        self._stream = cupy.cuda.Stream(non_blocking=True)
        self._issuer = ThreadPoolExecutor(1, thread_name_prefix="mgapsp-host-issue")
        self._buffers: list[np.ndarray] = []
        self._slot_parts: list[list[Future]] = [[] for _ in range(RING)]
        self._next_slot = 0
        self._pending: list[Future] = []
        self._touched = [fut for out in outputs if out is not None
                         for fut in touch_spans(out)]

    # -- use ---------------------------------------------------------------------------
    def put(self, block, out: np.ndarray) -> None:
        """Queue the copy of the device array ``block`` into ``out`` (same shape and
        dtype, C-contiguous); returns at once.  The copy starts after the work the
        current stream has queued (the kernels that make ``block``)."""
        cupy = self.cupy_module
        if out.shape != block.shape or out.dtype != block.dtype:
            raise ValueError(f"cannot copy a block of {block.shape} {block.dtype} into "
                             f"{out.shape} {out.dtype}")
        if not out.flags.c_contiguous:
            raise ValueError("the host array must be C-contiguous")
        block = cupy.ascontiguousarray(block)
        ready = cupy.cuda.Event(disable_timing=True)
        ready.record()
        self._pending.append(self._issuer.submit(self._drain, block, out, ready))

    def wait(self, backlog: int = 0) -> None:
        """Wait until at most ``backlog`` blocks are still being copied (and so held
        on the device)."""
        while len(self._pending) > backlog:
            self._pending.pop(0).result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._issuer.shutdown(wait=True)
            # touches not yet begun are moot; one under way must end before the caller
            # reads the array
            for fut in self._touched:
                fut.cancel()
            wait_all([f for f in self._touched if not f.cancelled()])

    def __enter__(self) -> "HostCopier":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        # a failure upstream: let the queued copies finish (they hold device blocks
        # and write into arrays the caller drops), then let the failure through
        try:
            self.close()
        except Exception:       # the caller's error is the one to report
            pass

    # -- the issuing thread ------------------------------------------------------------
    def _buffer(self, slot: int) -> np.ndarray:
        while len(self._buffers) <= slot:
            mem = self.cupy_module.cuda.alloc_pinned_memory(PIECE_BYTES)
            self._buffers.append(np.frombuffer(mem, dtype=np.uint8, count=PIECE_BYTES))
        return self._buffers[slot]

    def _drain(self, block, out: np.ndarray, ready) -> None:
        """Copy ``block`` into ``out`` piece by piece; returns when all of it is there."""
        cupy = self.cupy_module
        runtime = cupy.cuda.runtime
        runtime.setDevice(self._device)
        for fut in self._touched:       # never write where a touch is still to come
            fut.result()
        self._stream.wait_event(ready)
        dst = out.reshape(-1).view(np.uint8)
        total, src = dst.nbytes, block.data.ptr
        parts: list[Future] = []
        for lo in range(0, total, PIECE_BYTES):
            size = min(PIECE_BYTES, total - lo)
            slot = self._next_slot
            self._next_slot = (slot + 1) % RING
            for fut in self._slot_parts[slot]:     # the host is done with this buffer
                fut.result()
            buf = self._buffer(slot)
            runtime.memcpyAsync(buf.ctypes.data, src + lo, size,
                                runtime.memcpyDeviceToHost, self._stream.ptr)
            landed = cupy.cuda.Event(disable_timing=True)
            landed.record(self._stream)
            self._slot_parts[slot] = [
                self._pool.submit(_from_buffer, landed, buf, dst, lo, a, b)
                for a, b in page_spans(size, self._threads)]
            parts += self._slot_parts[slot]
        for fut in parts:
            fut.result()
        # every piece has landed: ``block`` may now go back to the memory pool


def _from_buffer(landed, buf: np.ndarray, dst: np.ndarray, lo: int, a: int, b: int) -> None:
    landed.synchronize()
    dst[lo + a:lo + b] = buf[a:b]
