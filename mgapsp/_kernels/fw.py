"""Floyd-Warshall on the device, for dense graphs."""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from . import (_as_dtype, _blocks, _cupy, _kernel, bellman_ford_potentials,
               upload_graph)

__all__ = ["floyd_warshall"]


def floyd_warshall(d_graph: DeviceGraph, dtype=None, predecessors: bool = False):
    """The dense n x n distance matrix by Floyd-Warshall (n in-place pivot steps).

    Returns ``(dist, pred or None, stats)``: cupy arrays of shape (n, n), ``dtype``
    and int32 (-1 = none; ``pred[i, j]`` is the vertex before ``j`` on a shortest
    path from ``i``).  Meant for small dense graphs.  Raises
    :class:`NegativeCycleError` (found by Bellman-Ford in float64) on a negative cycle.
    """
    cupy = _cupy()
    dt = d_graph.dtype if dtype is None else _as_dtype(dtype)
    if dt != d_graph.dtype:
        raise ValueError(f"d_graph holds {d_graph.dtype} weights, dtype={dt} was asked")
    graph = d_graph.graph
    n = d_graph.n
    D = cupy.full((n, n), np.inf, dtype=dt)
    rows = cupy.asarray(graph.sources_of_edges)
    D[rows, d_graph.indices] = d_graph.weights
    diag = cupy.arange(n)
    D[diag, diag] = cupy.minimum(D[diag, diag], 0)
    P = None
    if predecessors:
        P = cupy.full((n, n), -1, dtype=cupy.int32)
        P[rows, d_graph.indices] = rows
        P[diag, diag] = cupy.where(D[diag, diag] < 0, diag, -1).astype(cupy.int32)
    del rows
    kern = _kernel("fw_step_f32" if dt == np.float32 else "fw_step_f64")
    grid = (_blocks(n, 32), _blocks(n, 8))
    block = (32, 8)
    Pk = P if P is not None else cupy.empty(1, dtype=cupy.int32)
    flag = np.int32(P is not None)
    nn = np.int64(n)
    for k in range(n):
        kern(grid, block, (D, Pk, flag, nn, np.int64(k)))
    if bool((D.diagonal() < 0).any()):
        g64 = d_graph if dt == np.float64 else upload_graph(graph, np.float64)
        bellman_ford_potentials(g64)  # raises NegativeCycleError with a cycle
        raise UnsupportedError(
            f"with its weights rounded to {dt}, graph {graph.name!r} has a negative "
            "cycle that its float64 weights do not have; use dtype float64"
        )
    return D, P, {"rounds": n, "relaxations": n ** 3}
