"""Floyd-Warshall: the whole distance matrix at once, for dense graphs.

On one device the matrix is computed once per graph, kept, and every batch is its rows
(SciPy's on the CPU; the tiled kernels of :mod:`mgapsp.cuda.floyd_warshall` on the GPU).  A job on
several workers splits it in slabs of rows (:mod:`mgapsp.jobs.floyd_warshall_slabs`), each
worker's slab closed against pivot rows broadcast by their owner: :func:`slab_rows`.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from .. import algorithms as registry
from ..algorithms import Code
from ..cuda import device as gpu
from ..cuda import floyd_warshall as fw
from ..cuda import floyd_warshall_rows, staging
from ..errors import InsufficientMemoryError, UnsupportedError
from .base import SLAB_ALIGN, BatchResult
from .cpu import scipy_batch
from .gpu import csr_bytes
from .potentials import find_negative_cycle

__all__ = ["FLOYD_WARSHALL", "slab_methods", "slab_rows"]


# -- one device, the whole matrix --------------------------------------------------------
def _cpu_matrix(backend, graph, predecessors):
    need = backend.memory_needed(graph, graph.n, algorithm=registry.FLOYD_WARSHALL,
                                 dtype=np.float64, predecessors=predecessors)
    have = backend.memory_available()
    if need > have:
        raise InsufficientMemoryError(f"floyd-warshall on {graph.n} vertices", need, have,
                                      "use dijkstra or johnson for large sparse graphs")
    try:
        res = csgraph.floyd_warshall(backend.scipy_csr(graph),
                                     return_predecessors=predecessors)
    except csgraph.NegativeCycleError:
        find_negative_cycle(graph)
        raise
    return res if predecessors else (res, None)


def _cpu(backend, graph, sources, *, dtype, predecessors, potentials, targets) -> BatchResult:
    full, full_pred = backend.cached("floyd-warshall", (graph.fingerprint, predecessors),
                                     lambda: _cpu_matrix(backend, graph, predecessors))
    return scipy_batch(full[sources], None if full_pred is None else full_pred[sources],
                       dtype=dtype)


def _gpu(backend, graph, src, *, dtype, predecessors, potentials, targets) -> BatchResult:
    key = (gpu.device_id(), graph.fingerprint, dtype.str)
    with backend.lock():
        matrices = backend.cache("floyd-warshall")
        entry = matrices.get(key)
        if entry is not None and predecessors and entry[1] is None:
            entry = None            # kept without predecessors: compute again
        cached = entry is not None
        if entry is None:
            needed = backend.memory_needed(graph, len(src), algorithm=registry.FLOYD_WARSHALL,
                                           dtype=dtype, predecessors=predecessors)
            if backend.resident(graph, dtype):
                needed -= csr_bytes(graph, dtype)
            matrices.clear()        # the old matrix goes before the new one comes
            backend.ensure_memory(graph, needed,
                                  f"the {graph.n} x {graph.n} Floyd-Warshall matrix",
                                  hint="use algorithm bellman-ford or the cpu backend")
            D, P, _ = fw.floyd_warshall(backend.device_graph(graph, dtype), dtype,
                                        predecessors)
            entry = matrices[key] = gpu.publish((D, P))
        D, P = entry
        dist = gpu.take_rows(D, src, host=False)
        pred = gpu.take_rows(P, src, host=False) if predecessors else None
    stats = {"rounds": 0 if cached else graph.n,
             "relaxations": 0 if cached else graph.n ** 3, "cached": cached}
    return BatchResult(distances=dist, predecessors=pred, stats=stats)


def _cpu_bytes(graph, batch_size, *, dtype, predecessors, fw_rows=None) -> int:
    n = graph.n
    if fw_rows is not None:     # the float64 slab and a panel, the batch's copy
        return (fw_rows + SLAB_ALIGN) * n * 8 + batch_size * n * 8
    return n * n * (8 + (4 if predecessors else 0)) * 2


def _gpu_bytes(graph, batch_size, *, dtype, predecessors, fw_rows=None) -> int:
    n = graph.n
    if fw_rows is not None:
        # an integer (or the float) slab, its float copy, the pivot panels, the
        # transposed column panel, the slab's edges
        return ((2 * fw_rows + 3 * SLAB_ALIGN) * n * dtype.itemsize + SLAB_ALIGN * fw_rows * 8
                + graph.m * 24)
    out = dtype.itemsize + (4 if predecessors else 0)
    matrix = n * n * dtype.itemsize * (3 if predecessors else 2)
    return matrix + graph.m * 4 + batch_size * n * out + batch_size * 8


FLOYD_WARSHALL = Code(run={"cpu": _cpu, "gpu": _gpu},
                      memory={"cpu": _cpu_bytes, "gpu": _gpu_bytes})


# -- slabs of rows across workers --------------------------------------------------------
def slab_methods(dtype, weights, n: int) -> list:
    """The GPU's Floyd-Warshall methods to try for a slab job, best first."""
    return floyd_warshall_rows.plan_methods(dtype, weights, n)


def slab_rows(backend, n: int, r0: int, r1: int, edges, dtype, exchange, bounds,
              info: dict) -> tuple:
    """Rows ``r0:r1`` of the matrix on ``backend``'s device: ``edges`` are the rows'
    out-edges ``(indptr from 0, indices, weights)``, pivot rows pass through
    ``exchange``.  Returns ``(rows, stats)``."""
    if backend.name == "cpu":
        return _cpu_slab(n, r0, r1, *edges, exchange, bounds, info["name"])
    if backend.name != "gpu":
        raise UnsupportedError(f"the {backend.name} backend has no Floyd-Warshall slabs")
    cupy = gpu.cupy_module()
    with cupy.cuda.Stream(non_blocking=True) as stream:
        timer = staging.GPUTimer().start()
        dist, stats = floyd_warshall_rows.floyd_warshall_rows(
            n, r0, r1, *edges, dtype, exchange, bounds, methods=info["methods"],
            wmax=info["wmax"], nonneg=info["nonneg"], name=info["name"])
        stats["gpu_s"] = timer.stop()
        stream.synchronize()
    return dist, stats


def _cpu_slab(n: int, r0: int, r1: int, indptr, indices, weights, exchange,
              bounds, name: str = "graph"):
    """Rows ``r0:r1`` of the distance matrix in float64, NumPy on this worker's slab
    (``indptr`` from 0, ``indices``, ``weights``: the rows' out-edges), pivot blocks of
    :data:`mgapsp.plan.SLAB_ALIGN` rows exchanged through ``exchange``."""
    rows = r1 - r0
    S = np.full((rows, n), np.inf)
    S[np.repeat(np.arange(rows), np.diff(indptr)), indices] = weights
    local = np.arange(rows)
    S[local, local + r0] = np.minimum(S[local, local + r0], 0.0)
    B = SLAB_ALIGN
    panel_buf = np.empty((B, n))
    starts = np.array([lo for lo, _ in bounds])
    step = max(1, 2**16 // max(n, 1))          # rows per pass: a block stays in cache
    tmp = np.empty((step, n))
    exchanged = 0
    for k0 in range(0, n, B):
        kc = min(B, n - k0)
        root = int(np.searchsorted(starts, k0, side="right") - 1)
        if root == exchange.rank:
            # the pivot rows, closed over their own pivots (classic FW on kc rows)
            panel = S[k0 - r0:k0 - r0 + kc]
            for k in range(kc):
                np.minimum(panel, panel[:, k0 + k, None] + panel[k], out=panel)
        else:
            panel = panel_buf[:kc]
        exchange.bcast(panel, root)
        exchanged += panel.nbytes
        # every row against the closed pivot rows, pivot by pivot (on the owner's own
        # pivot rows this changes nothing: they are closed)
        for a in range(0, rows, step):
            blk = S[a:a + step]
            t = tmp[:len(blk)]
            for k in range(kc):
                np.add(blk[:, k0 + k, None], panel[k], out=t)
                np.minimum(blk, t, out=blk)
    negative = int(bool((S[local, local + r0] < 0).any())) if rows else 0
    if exchange.allreduce_sum(np.array([negative]))[0]:
        raise UnsupportedError(f"graph {name!r} has a negative cycle")
    return S, {"method": "numpy-fp64", "rounds": -(-n // B), "updates": rows * n * n,
               "exchanged_bytes": exchanged}
