"""Brandes' dependencies of a batch of sources on the GPU, from the batch's distances
(``kernels/brandes.cu``): which arcs are tight, the path counts in Kahn's order of
each source's shortest-path DAG, the dependencies in reverse; only their sums leave
the batch."""

from __future__ import annotations

import numpy as np

from .loader import cupy_module, get_kernel, persistent_grid

__all__ = ["KERNEL_FILE", "KERNEL_NAMES", "add_dependencies", "column_bytes"]

KERNEL_FILE = "brandes.cu"
KERNEL_NAMES = ("brandes_nearest", "brandes_tight_f32", "brandes_tight_f64",
                "brandes_forward", "brandes_backward")
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
#: threads of a block that walks one source's DAG
_THREADS = 256


def column_bytes(n: int, m: int, dtype) -> int:
    """Device bytes one source of a batch needs here, its row of distances included:
    the row and its transposed copy, the pending and path counts, the dependencies,
    the settling order and its rounds, its bit of each arc's tightness."""
    return n * (2 * np.dtype(dtype).itemsize + 4 + 8 + 8 + 4 + 4) + 4 + m // 8 + 8


def add_dependencies(dg, dist, sources: np.ndarray, bc, ebc=None, *,
                     endpoints: bool = False, nearest: bool = False) -> None:
    """Add the dependencies of ``sources`` (host int64, distinct) to ``bc`` (float64,
    one per vertex, on the device) and, given ``ebc`` (one per arc of ``dg``'s CSR),
    each arc's share of them; ``dist`` is their ``(B, n)`` block of distances, in
    ``dg``'s dtype, on the device.  ``endpoints``: NetworkX's ``endpoints=True``,
    each reached vertex counted too.  ``nearest``: the distances' sums were rounded
    up (the searches' float64 on non-integer weights): they are brought down to
    sums rounded to nearest first, NetworkX's, where ties are decided.  Runs on the
    current stream."""
    cupy = cupy_module()
    B, n = dist.shape
    m = dg.m
    dt = np.dtype(dist.dtype)
    Bp = -(-B // 32) * 32
    inf = dt.type(np.inf)
    src = cupy.asarray(sources, dtype=cupy.int64)
    if endpoints:
        reached = cupy.isfinite(dist)
        bc += reached.sum(axis=0)                       # every reached vertex ...
        bc[src] += reached.sum(axis=1) - 2.0            # ... but a source itself, and
    D = cupy.full((n, Bp), inf, dtype=dt)               # its own reached count - 1
    D[:, :B] = dist.T
    if nearest:
        _to_nearest(dg, D, n, Bp)
    M = cupy.empty((Bp // 32, m), dtype=cupy.uint32)
    P = cupy.zeros((n, Bp), dtype=cupy.int32)
    tight = get_kernel(f"brandes_tight_{_SUFFIX[dt]}", KERNEL_FILE)
    tight((persistent_grid(tight),), (256,),
          (dg.indptr, dg.indices, dg.weights, D, inf, np.int64(n), np.int64(Bp),
           np.int64(m), M, P))
    del D
    S = cupy.zeros((n, Bp), dtype=cupy.float64)
    O = cupy.empty((B, n), dtype=cupy.int32)
    L = cupy.empty((B, n + 1), dtype=cupy.int32)
    rounds = cupy.empty(B, dtype=cupy.int32)
    get_kernel("brandes_forward", KERNEL_FILE)(
        (B,), (_THREADS,),
        (dg.indptr, dg.indices, M, np.int64(n), np.int64(Bp), np.int64(m), src, P, S, O,
         L, rounds))
    del P
    Y = cupy.zeros((n, Bp), dtype=cupy.float64)
    get_kernel("brandes_backward", KERNEL_FILE)(
        (B,), (_THREADS,),
        (dg.indptr, dg.indices, M, np.int64(n), np.int64(Bp), np.int64(m), src, S, Y, O,
         L, rounds, ebc if ebc is not None else np.uint64(0)))
    bc += Y.sum(axis=1)


def _to_nearest(dg, D, n: int, Bp: int) -> None:
    """Sweeps of the kernel ``brandes_nearest`` over ``D`` (float64) until none
    lowers it."""
    cupy = cupy_module()
    sweep = get_kernel("brandes_nearest", KERNEL_FILE)
    changed = cupy.ones(1, dtype=cupy.int32)
    while int(changed[0]):
        changed[0] = 0
        sweep((persistent_grid(sweep),), (256,),
              (dg.indptr, dg.indices, dg.weights, D, np.int64(n), np.int64(Bp), changed))
