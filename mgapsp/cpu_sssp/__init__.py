"""Multi-core shortest-path kernels for the CPU, compiled by Numba.

SciPy's ``csgraph`` kernels run one source after another on one core and hold the
interpreter lock, so a process gains nothing from its other cores.  These kernels run
each source as an independent single-source search on the CSR, and release the lock:

- :func:`dijkstra_rows`: Dijkstra with a 4-ary heap (an entry per improvement, stale
  ones skipped when popped), per source; with ``shift`` the Johnson correction
  ``(d - h[s]) + h[t]`` in float64;
- :func:`bellman_ford_rows`: Bellman-Ford with a FIFO queue (SPFA), per source; it
  reports a negative cycle that a source reaches, and the caller extracts it;
- :func:`phast_rows`: PHAST's sweep of a contraction hierarchy
  (:mod:`mgapsp.hierarchy`) for a few sources at a time, each group on one core.

Both add each candidate as ``d[u] + w(u, v)`` in float64 and keep the smaller: the
distances are the least left-to-right sums along paths that SciPy's kernels compute,
to the last bit (monotone rounding makes the fixpoint unique).  A float32 output is
the float64 answer rounded once at the end, as the SciPy path casts it.

``parallel=True`` spreads a batch's sources over Numba's threads (``prange``); the
serial form leaves the cores to the caller's own threads (a Dask worker running one
batch per thread), since Numba's default threading layers do not allow parallel
kernels launched from several threads at once.

Numba is imported, and the kernels compiled (or loaded from its on-disk cache), at
first use, never at import: a job that SciPy answers faster never pays for it.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ..algorithms import BELLMAN_FORD, DIJKSTRA, JOHNSON, PHAST

__all__ = ["KERNEL_OF", "bellman_ford_rows", "compile_seconds", "dijkstra_rows",
           "load_async", "loading", "phast_rows", "threads", "warm_up"]

#: sources one core sweeps together in :func:`phast_rows`: each arc then reads one
#: row of this many distances (64 bytes in float64: one cache line) rather than one per source
PHAST_WIDTH = 8

_KERNELS: dict[str, object] = {}
_LOCK = threading.Lock()
#: seconds :func:`warm_up` took in this process (import, compile or cache load)
_COMPILE_S: list[float] = []
_WARMING = threading.Event()      # set once a warm-up started (or the kernels ran)


#: the kernels, by the algorithm they run
KERNEL_OF = {DIJKSTRA.name: "heap", JOHNSON.name: "heap", BELLMAN_FORD.name: "spfa",
             PHAST.name: "sweep"}
_READY: set[tuple] = set()        # (kernel, dtype, parallel) loaded in this process


def warm_up(kernels=None) -> float:
    """Import Numba and make ``kernels`` ready in this process: (kernel, dtype,
    parallel) triples (kernel ``"heap"``: Dijkstra, ``"spfa"``: Bellman-Ford, or
    ``"sweep"``: PHAST), by default every one of them.  Each loads from Numba's on-disk cache where it is there (tens
    of milliseconds), else compiles (about a second) and fills the cache.  Returns
    the seconds it took."""
    _WARMING.set()
    if kernels is None:
        kernels = [(k, d, p) for k in ("heap", "spfa", "sweep")
                   for d in (np.float32, np.float64) for p in (True, False)]
    with _LOCK:
        t = time.perf_counter()
        _kernels()
        for kernel, dtype, parallel in kernels:
            key = (kernel, np.dtype(dtype).name, bool(parallel))
            if key not in _READY:
                _launch(kernel, parallel, _tiny_arguments(kernel, np.dtype(dtype)))
                _READY.add(key)
        seconds = time.perf_counter() - t
        _COMPILE_S.append(seconds)
        return seconds


def _tiny_arguments(kernel: str, dtype: np.dtype) -> tuple:
    """A kernel's arguments for a graph of one vertex and no edge."""
    one = np.zeros(2, dtype=np.int64)
    out = np.empty((1, 1), dtype=dtype)
    if kernel == "sweep":
        return _phast_arguments(one[:2], one[:0].astype(np.int32), one[:0].astype(dtype),
                                one[:0].astype(dtype), np.full(1, -1, np.int32), one[:1],
                                one[:1], out)
    return _arguments(one, one[:0], one[:0], one[:1], out, np.empty((1, 1), np.int32),
                      None, None)


def load_async(algorithm: str, dtype, parallel: bool = False) -> None:
    """Start making the kernel of ``algorithm`` ready on a thread of its own, so that
    a job loads it while it starts its cluster and store, not in its first batch.
    Only that kernel: one compiling or loading meanwhile would hold the interpreter
    lock that the job's own threads need."""
    _WARMING.set()
    job = [(KERNEL_OF[algorithm], np.dtype(dtype), parallel)]
    threading.Thread(target=warm_up, args=(job,), name="mgapsp-numba-warm-up",
                     daemon=True).start()


def loading() -> bool:
    """Whether this process has the kernels loaded, or loading."""
    return _WARMING.is_set()


def threads() -> int:
    """Threads a parallel kernel uses (Numba's ``NUMBA_NUM_THREADS``, the cores)."""
    import numba  # noqa: PLC0415 - only where the kernels are used

    return int(numba.get_num_threads())


def compile_seconds() -> float | None:
    """Seconds :func:`warm_up` took in this process, all calls (None: none ran)."""
    return sum(_COMPILE_S) if _COMPILE_S else None


def dijkstra_rows(indptr, indices, weights, sources, out, pred=None, *, targets=None,
                  shift=None, parallel: bool = True) -> None:
    """Dijkstra from each of ``sources`` into ``out`` (float32 or float64, shape
    ``(len(sources), n)``, or ``(len(sources), len(targets))``); ``inf`` where
    unreachable.  ``pred`` (int32, ``(len(sources), n)``): the predecessor of each
    vertex on a shortest path, -1 at the source and where unreachable.  ``shift``
    (Johnson potentials ``h``): the weights are reweighted ones and each distance is
    written as ``(d - h[s]) + h[t]``.  Weights must be non-negative."""
    args = _arguments(indptr, indices, weights, sources, out, pred, targets, shift)
    _launch("heap", parallel, args)


def bellman_ford_rows(indptr, indices, weights, sources, out, pred=None, *,
                      targets=None, parallel: bool = True) -> bool:
    """Bellman-Ford (a FIFO queue of the vertices whose distance fell) from each of
    ``sources``, as :func:`dijkstra_rows`; any weights.  Returns True when a source
    reaches a negative cycle (``out`` is then unfinished)."""
    args = _arguments(indptr, indices, weights, sources, out, pred, targets, None)
    return bool(_launch("spfa", parallel, args))


def phast_rows(h, sources, out, *, targets=None, parallel: bool = True) -> None:
    """PHAST from each of ``sources`` (vertex indices) over the hierarchy ``h``, into
    ``out`` (float32 or float64, ``(len(sources), n)``, or ``(len(sources),
    len(targets))``); sums in ``out``'s dtype, as :mod:`mgapsp.backends.phast`
    makes them, so both give the same bits."""
    dtype = out.dtype
    if out.dtype not in (np.float32, np.float64) or not out.flags.c_contiguous:
        raise ValueError(f"out must be C-contiguous float32 or float64, got {out.dtype}")
    out_rank = h.rank if targets is None else h.rank[np.asarray(targets, dtype=np.int64)]
    if out.shape != (len(sources), len(out_rank)):
        raise ValueError(f"out has shape {out.shape}, expected "
                         f"{(len(sources), len(out_rank))}")
    start = h.rank[np.asarray(sources, dtype=np.int64)]
    _launch("sweep", parallel, _phast_arguments(
        h.up_ptr, h.up_head, h.w_up.astype(dtype, copy=False),
        h.w_down.astype(dtype, copy=False), h.parent, start, out_rank, out))


def _phast_arguments(up_ptr, up_head, w_up, w_down, parent, start, out_rank, out):
    return (np.ascontiguousarray(up_ptr, dtype=np.int64),
            np.ascontiguousarray(up_head, dtype=np.int32), np.ascontiguousarray(w_up),
            np.ascontiguousarray(w_down), np.ascontiguousarray(parent, dtype=np.int32),
            np.ascontiguousarray(start, dtype=np.int64),
            np.ascontiguousarray(out_rank, dtype=np.int64), out, PHAST_WIDTH)


def _launch(kernel: str, parallel: bool, args):
    """Run a kernel's parallel or serial form.  The parallel one hands blocks of
    sources to the threads one at a time as each frees (Numba's chunk size 1): a
    block's searches cost thousands of times a hand-out, and an even split in advance
    leaves every core waiting for the slowest one (one a busy host shares, or one
    whose sources reach more of the graph)."""
    k = _kernels()
    if not parallel:
        return k[kernel + "_ser"](*args)
    import numba  # noqa: PLC0415 - loaded with the kernels

    with numba.parallel_chunksize(1):
        return k[kernel + "_par"](*args)


def _arguments(indptr, indices, weights, sources, out, pred, targets, shift):
    """The kernels' arguments, in the types they are compiled for: empty arrays stand
    for "none" (every target, no predecessors, no shift)."""
    n = len(indptr) - 1
    if out.dtype not in (np.float32, np.float64) or not out.flags.c_contiguous:
        raise ValueError(f"out must be C-contiguous float32 or float64, got {out.dtype}")
    cols = n if targets is None else len(targets)
    if out.shape != (len(sources), cols):
        raise ValueError(f"out has shape {out.shape}, expected {(len(sources), cols)}")
    if pred is None:
        pred = np.empty((0, 0), dtype=np.int32)
    elif pred.dtype != np.int32 or pred.shape != (len(sources), n) or \
            not pred.flags.c_contiguous:
        raise ValueError(f"pred must be C-contiguous int32 of shape {(len(sources), n)}")
    return (np.ascontiguousarray(indptr, dtype=np.int64),
            np.ascontiguousarray(indices, dtype=np.int32),
            np.ascontiguousarray(weights, dtype=np.float64),
            np.ascontiguousarray(sources, dtype=np.int64),
            np.empty(0, np.int64) if targets is None
            else np.ascontiguousarray(targets, dtype=np.int64),
            np.empty(0, np.float64) if shift is None
            else np.ascontiguousarray(shift, dtype=np.float64),
            out, pred, _block(len(sources)))


def _block(sources: int) -> int:
    """Sources a thread takes at a time from a parallel kernel: up to 8 (its work
    arrays are made once per block), and at least 4 blocks per thread, so that the
    blocks' hand-out still evens the cores' loads."""
    return max(1, min(8, sources // (4 * threads())))


def _kernels() -> dict:
    """The kernels of this process (each compiles, or loads from Numba's cache, at its
    first call with a dtype)."""
    if not _KERNELS:
        from ..jit import compiled

        _KERNELS.update(compiled("mgapsp.cpu_sssp.kernels").ENTRY_POINTS)
        _WARMING.set()
    return _KERNELS
