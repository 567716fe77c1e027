"""Device state: a graph resident on the GPU, memory, per-thread streams, copies."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UnsupportedError
from ..graph import Graph
from .loader import cupy_module, device_id

if TYPE_CHECKING:  # pragma: no cover
    pass


@dataclass(eq=False)
class DeviceGraph:
    """A graph's CSR resident on one device, weights in one dtype.

    ``min_weight`` overrides the graph's (a reweighted copy, see :func:`.sssp.reweight`);
    ``derived`` caches what the kernels prepare from the CSR (the classified rows).
    """

    graph: Graph
    dtype: np.dtype
    indptr: Any      # cupy int64 (n + 1,)
    indices: Any     # cupy int32 (m,)
    weights: Any     # cupy dtype (m,)
    device: int
    min_weight: float | None = None
    derived: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def m(self) -> int:
        return self.graph.m

    @property
    def has_negative_weights(self) -> bool:
        if self.min_weight is not None:
            return self.min_weight < 0
        return self.graph.has_negative_weights

    @property
    def nbytes(self) -> int:
        extra = sum(int(a.nbytes) for p in self.derived.values()
                    for a in getattr(p, "arrays", ()))
        return int(self.indptr.nbytes + self.indices.nbytes + self.weights.nbytes) + extra


def as_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise UnsupportedError(f"the gpu kernels compute in float32 or float64, not {dt}")
    return dt


def upload_graph(graph: Graph, dtype) -> DeviceGraph:
    """Copy ``graph``'s CSR to the current device, weights cast to ``dtype``."""
    cupy = cupy_module()
    dt = as_dtype(dtype)
    return DeviceGraph(
        graph=graph,
        dtype=dt,
        indptr=cupy.asarray(graph.indptr, dtype=cupy.int64),
        indices=cupy.asarray(graph.indices, dtype=cupy.int32),
        weights=cupy.asarray(graph.weights.astype(dt, copy=False)),
        device=int(cupy.cuda.runtime.getDevice()),
    )


def memory_available() -> int:
    """Free bytes on the current device plus what CuPy's pool holds unused."""
    cupy = cupy_module()
    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free) + int(cupy.get_default_memory_pool().free_bytes())


def release_pool() -> None:
    """Give the unused blocks of CuPy's memory pool back to the device."""
    cupy_module().get_default_memory_pool().free_all_blocks()




_THREAD = threading.local()


def use_thread_stream():
    """Make this thread's own CUDA stream (one per thread and device) its current one,
    and return it.

    A GPU worker runs two batches at once, one per thread: on their own streams one
    batch's kernels overlap the other's compression and copies, where on the default
    stream they queued behind each other.  The streams are blocking (they still wait
    for work on the legacy default stream).  Device data shared between threads (the
    resident graph, its reweighted copy) must be complete before it is shared: see
    :func:`publish`.
    """
    cupy = cupy_module()
    dev = device_id()
    streams = getattr(_THREAD, "streams", None)
    if streams is None:
        streams = _THREAD.streams = {}
    stream = streams.get(dev)
    if stream is None:
        stream = streams[dev] = cupy.cuda.Stream(non_blocking=False)
    stream.use()
    return stream


@contextlib.contextmanager
def caller_stream():
    """Give the calling thread its current CUDA stream back on leaving (the kernels
    inside may switch to :func:`use_thread_stream`, which suits a worker's threads but
    not a user's)."""
    cupy = cupy_module()
    stream = cupy.cuda.get_current_stream()
    try:
        yield
    finally:
        stream.use()


def publish(obj):
    """Wait until the current stream has made ``obj`` (device data about to be cached
    for other threads, whose streams do not wait for this one); returns it."""
    cupy_module().cuda.get_current_stream().synchronize()
    return obj


def to_host(arr) -> np.ndarray | None:
    """A device array copied to the host (None stays None); waits for the device."""
    if arr is None:
        return None
    return cupy_module().asnumpy(arr)


def to_device(arr):
    """A host array copied to the current device."""
    return cupy_module().asarray(arr)


def take_rows(mat, rows, host: bool = True):
    """Rows ``rows`` of a device matrix, copied to the host (or a new device array)."""
    cupy = cupy_module()
    idx = cupy.asarray(np.asarray(rows, dtype=np.int64))
    return cupy.asnumpy(mat[idx]) if host else mat[idx]


_LARGEST: dict = {}


def largest_finite(block):
    """The largest finite value of a device array (0 where it has none), as a device
    scalar: one pass, no temporary array (what a float32 batch is checked by, see
    :func:`mgapsp.plan.choose_dtype`)."""
    cupy = cupy_module()
    kernel = _LARGEST.get("k")
    if kernel is None:
        kernel = _LARGEST["k"] = cupy.ReductionKernel(
            "T x", "T y", "isfinite(x) ? x : (T)0", "max(a, b)", "y = a", "0",
            "mgapsp_largest_finite")
    return kernel(block)
