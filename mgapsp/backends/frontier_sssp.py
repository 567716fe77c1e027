"""Bellman-Ford and Dijkstra from a batch of sources at once: their code on each
backend and what a batch of them needs in memory.

On the GPU both run on the frontier kernels of :mod:`mgapsp.cuda` (H-BF-style
Bellman-Ford; Crauser's parallel Dijkstra); on the CPU on the Numba kernels of
:mod:`mgapsp.cpu_sssp` where they pay, else on SciPy's ``csgraph``.  Johnson's
algorithm (:mod:`.johnson`) runs Dijkstra's code on a reweighted graph and sizes its
batches with :func:`gpu_batch_bytes`.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from .. import cpu_sssp
from .. import algorithms as registry
from ..algorithms import Code
from ..cuda import bellman_ford, frontier, sssp
from ..errors import NegativeCycleError
from ..graph import Graph
from .base import BatchResult
from .cpu import csr_bytes, scipy_rows
from .potentials import find_negative_cycle

__all__ = ["BELLMAN_FORD", "DIJKSTRA", "cpu_batch_bytes", "gpu_batch_bytes"]


# -- the CPU --------------------------------------------------------------------------
def _bellman_ford_cpu(backend, graph, sources, *, dtype, predecessors, potentials,
                      targets) -> BatchResult:
    try:
        return scipy_rows(csgraph.bellman_ford, backend.scipy_csr(graph), sources,
                          dtype=dtype, predecessors=predecessors)
    except csgraph.NegativeCycleError:
        find_negative_cycle(graph)  # raises ours, with the cycle
        raise


def _bellman_ford_rows(backend, graph, sources, dist, pred, *, potentials, columns,
                       parallel) -> None:
    if cpu_sssp.bellman_ford_rows(graph.indptr, graph.indices, graph.weights, sources,
                                  dist, pred, targets=columns, parallel=parallel):
        find_negative_cycle(graph)     # raises ours, with the cycle
        raise NegativeCycleError([], float("-inf"), "negative cycle (could not extract it)")


def _dijkstra_cpu(backend, graph, sources, *, dtype, predecessors, potentials,
                  targets) -> BatchResult:
    return scipy_rows(csgraph.dijkstra, backend.scipy_csr(graph), sources, dtype=dtype,
                      predecessors=predecessors)


def _dijkstra_rows(backend, graph, sources, dist, pred, *, potentials, columns,
                   parallel) -> None:
    registry.DIJKSTRA.check(graph)      # the kernels assume its rule: refuse before them
    cpu_sssp.dijkstra_rows(graph.indptr, graph.indices, graph.weights, sources, dist,
                           pred, targets=columns, parallel=parallel)


def cpu_batch_bytes(graph: Graph, batch_size: int, *, dtype, predecessors, fw_rows=None) -> int:
    """A batch's host bytes beyond the graph: a copy of its CSR, each row's distances
    (and the kernels' float64 labels), predecessors."""
    per_row = graph.n * (8 + np.dtype(dtype).itemsize + (8 if predecessors else 0))
    return csr_bytes(graph) + batch_size * per_row


# -- the GPU --------------------------------------------------------------------------
def _gpu(kernel, spec):
    def run(backend, graph, src, *, dtype, predecessors, potentials, targets):
        dg = backend.batch_graph(graph, spec, len(src), dtype, predecessors)
        dist, pred, stats = kernel(dg, src, dtype, predecessors)
        return BatchResult(distances=dist, predecessors=pred, stats=stats)
    return run


def gpu_batch_bytes(graph: Graph, batch_size: int, *, dtype, predecessors,
                    bellman_ford_kernels: bool) -> int:
    """A batch's device bytes on the frontier kernels, beyond the graph: state words
    (see ``kernels/bellman_ford.cu``), per-chunk lane masks and queues, the (B, n)
    output, the sources and their row map."""
    n, B = graph.n, int(batch_size)
    out = dtype.itemsize + (4 if predecessors else 0)
    _G, C, Bp = frontier.chunking(B)
    negative = graph.has_negative_weights
    items = n * C
    if bellman_ford_kernels:
        mode = frontier.state_mode(dtype, predecessors or negative)
        work = 4 * items * 4 + 8 * 32                    # 2 mask arrays, 2 queues
        if negative:                                      # predecessor-cycle check
            work += min(B * (n + 1) * 12, bellman_ford.CHECK_BYTES) + 4 * items
    else:
        mode = frontier.state_mode(dtype, predecessors)
        work = 4 * items + 2 * 8 * Bp + 64               # fringe masks, thresholds
    return frontier.state_bytes(n, B, mode) + work + B * n * out + B * 16


def _gpu_bytes(bellman_ford_kernels: bool):
    def memory(graph, batch_size, *, dtype, predecessors, fw_rows=None) -> int:
        return gpu_batch_bytes(graph, batch_size, dtype=dtype, predecessors=predecessors,
                               bellman_ford_kernels=bellman_ford_kernels)
    return memory


_bellman_ford_gpu = _gpu(bellman_ford.bellman_ford_batch, registry.BELLMAN_FORD)
_dijkstra_gpu = _gpu(sssp.dijkstra_batch, registry.DIJKSTRA)

BELLMAN_FORD = Code(
    run={"cpu": _bellman_ford_cpu, "gpu": _bellman_ford_gpu},
    rows={"cpu": _bellman_ford_rows},
    memory={"cpu": cpu_batch_bytes, "gpu": _gpu_bytes(True)})
DIJKSTRA = Code(
    run={"cpu": _dijkstra_cpu, "gpu": _dijkstra_gpu},
    rows={"cpu": _dijkstra_rows},
    memory={"cpu": cpu_batch_bytes, "gpu": _gpu_bytes(False)})
