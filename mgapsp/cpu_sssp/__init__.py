"""Multi-core shortest-path kernels for the CPU, compiled by Numba.

SciPy's ``csgraph`` kernels run one source after another on one core and hold the
interpreter lock, so a process gains nothing from its other cores.  These kernels run
each source as an independent single-source search on the CSR, and release the lock:

- :func:`dijkstra_rows`: Dijkstra with an indexed binary heap (decrease-key), per
  source; with ``shift`` the Johnson correction ``(d - h[s]) + h[t]`` in float64;
- :func:`bellman_ford_rows`: Bellman-Ford with a FIFO queue (SPFA), per source; it
  reports a negative cycle that a source reaches, and the caller extracts it.

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

__all__ = ["bellman_ford_rows", "compile_seconds", "dijkstra_rows", "load_async",
           "loading", "threads", "warm_up"]

_KERNELS: dict[str, object] = {}
_LOCK = threading.Lock()
#: seconds :func:`warm_up` took in this process (import, compile or cache load)
_COMPILE_S: list[float] = []
_WARMING = threading.Event()      # set once a warm-up started (or the kernels ran)


def warm_up() -> float:
    """Import Numba and compile every kernel, for each output dtype, in this process
    (from Numba's on-disk cache where it has them: 0.2-0.4 s; compiling: seconds);
    returns the seconds it took (0 after the first time)."""
    _WARMING.set()
    if _COMPILE_S:
        return 0.0
    with _LOCK:
        if _COMPILE_S:
            return 0.0
        t = time.perf_counter()
        _kernels()
        one = np.zeros(2, dtype=np.int64)   # one vertex, no edge
        for dtype in (np.float32, np.float64):
            out = np.empty((1, 1), dtype=dtype)
            pred = np.empty((1, 1), dtype=np.int32)
            for parallel in (True, False):
                dijkstra_rows(one, one[:0], one[:0], one[:1], out, pred, parallel=parallel)
                bellman_ford_rows(one, one[:0], one[:0], one[:1], out, pred,
                                  parallel=parallel)
        _COMPILE_S.append(time.perf_counter() - t)
        return _COMPILE_S[0]


def load_async() -> None:
    """Start :func:`warm_up` on a thread of its own (once per process), so that a job
    loads the kernels while it starts its cluster and store, not before its first
    batch."""
    if _WARMING.is_set():
        return
    _WARMING.set()
    threading.Thread(target=warm_up, name="mgapsp-numba-warm-up", daemon=True).start()


def loading() -> bool:
    """Whether this process has the kernels loaded, or loading."""
    return _WARMING.is_set()


def threads() -> int:
    """Threads a parallel kernel uses (Numba's ``NUMBA_NUM_THREADS``, the cores)."""
    import numba  # noqa: PLC0415 - only where the kernels are used

    return int(numba.get_num_threads())


def compile_seconds() -> float | None:
    """Seconds :func:`warm_up` took in this process (None: none ran)."""
    return _COMPILE_S[0] if _COMPILE_S else None


def dijkstra_rows(indptr, indices, weights, sources, out, pred=None, *, targets=None,
                  shift=None, parallel: bool = True) -> None:
    """Dijkstra from each of ``sources`` into ``out`` (float32 or float64, shape
    ``(len(sources), n)``, or ``(len(sources), len(targets))``); ``inf`` where
    unreachable.  ``pred`` (int32, ``(len(sources), n)``): the predecessor of each
    vertex on a shortest path, -1 at the source and where unreachable.  ``shift``
    (Johnson potentials ``h``): the weights are reweighted ones and each distance is
    written as ``(d - h[s]) + h[t]``.  Weights must be non-negative."""
    args = _arguments(indptr, indices, weights, sources, out, pred, targets, shift)
    _launch("dijkstra", parallel, args)


def bellman_ford_rows(indptr, indices, weights, sources, out, pred=None, *,
                      targets=None, parallel: bool = True) -> bool:
    """Bellman-Ford (a FIFO queue of the vertices whose distance fell) from each of
    ``sources``, as :func:`dijkstra_rows`; any weights.  Returns True when a source
    reaches a negative cycle (``out`` is then unfinished)."""
    args = _arguments(indptr, indices, weights, sources, out, pred, targets, None)
    return bool(_launch("spfa", parallel, args))


def _launch(kernel: str, parallel: bool, args):
    """Run a kernel's parallel or serial form.  The parallel one hands sources to the
    threads one at a time as each frees (Numba's chunk size 1): a source's search
    costs thousands of times a hand-out, and an even split in advance leaves every
    core waiting for the slowest one (one a busy host shares, or one whose sources
    reach more of the graph)."""
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
            out, pred)


def _kernels() -> dict:
    """The kernels of this process (each compiles, or loads from Numba's cache, at its
    first call with a dtype)."""
    if not _KERNELS:
        from . import kernels     # imports Numba: the import lock makes it once

        _KERNELS.update(kernels.ENTRY_POINTS)
        _WARMING.set()
    return _KERNELS
