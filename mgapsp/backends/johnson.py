"""Johnson's algorithm: Dijkstra on the graph reweighted by potentials that a job
computes once (:meth:`mgapsp.backends.Backend.potentials`), its code on each backend
and what a batch needs.  The reweighted graph is kept for the job's batches, keyed by
the graph and a hash of the potentials."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from .. import algorithms as registry
from .. import cpu_sssp
from ..algorithms import Code
from ..cuda import device as gpu
from ..cuda import sssp
from ..graph import Graph
from .base import BatchResult
from .frontier_sssp import cpu_batch_bytes, gpu_batch_bytes
from .gpu import array_key
from .cpu import scipy_rows

__all__ = ["JOHNSON", "reweighted"]

#: reweighted graphs a GPU process keeps (a job's, and the one before)
_KEEP_ON_GPU = 2


def reweighted(graph: Graph, h: np.ndarray) -> Graph:
    """``graph`` with weights ``w + h[u] - h[v]`` (non-negative: rounding's tiny
    negatives on tight edges clamped to 0)."""
    w = graph.weights + h[graph.sources_of_edges] - h[graph.indices]
    np.maximum(w, 0.0, out=w)
    return Graph(graph.indptr, graph.indices, w, vertex_ids=graph.vertex_ids)


def _on_cpu(backend, graph: Graph, potentials) -> tuple[Graph, np.ndarray]:
    h = backend.potentials(graph) if potentials is None else potentials
    key = (graph.fingerprint, h.tobytes().__hash__())
    return backend.cached("reweighted", key, lambda: reweighted(graph, h)), h


def _cpu(backend, graph, sources, *, dtype, predecessors, potentials, targets) -> BatchResult:
    g, h = _on_cpu(backend, graph, potentials)
    res = scipy_rows(csgraph.dijkstra, g.to_scipy(), sources, dtype=np.float64,
                     predecessors=predecessors)
    res.distances -= h[sources][:, None]
    res.distances += h[None, :]
    res.distances = res.distances.astype(dtype, copy=False)
    return res


def _rows(backend, graph, sources, dist, pred, *, potentials, columns, parallel) -> None:
    g, h = _on_cpu(backend, graph, potentials)
    cpu_sssp.dijkstra_rows(g.indptr, g.indices, g.weights, sources, dist, pred,
                           targets=columns, shift=h, parallel=parallel)


def _gpu(backend, graph, src, *, dtype, predecessors, potentials, targets) -> BatchResult:
    dg = backend.batch_graph(graph, registry.JOHNSON, len(src), dtype, predecessors)
    if potentials is None:
        potentials = backend.potentials(graph)
    h = np.ascontiguousarray(potentials, dtype=np.float64)
    if h.shape != (graph.n,):
        raise ValueError(f"potentials must have shape ({graph.n},), got {h.shape}")

    def make():
        if not h.any() and not graph.has_negative_weights:
            return dg, h                # nothing to reweight
        return sssp.reweight(dg, h), gpu.to_device(h)

    key = (gpu.device_id(), graph.fingerprint, dtype.str, array_key(h, "<f8"))
    d_rw, d_h = backend.kept("reweighted", key, make, _KEEP_ON_GPU)
    dist, pred, stats = sssp.johnson_batch(d_rw, src, d_h, dtype, predecessors)
    return BatchResult(distances=dist, predecessors=pred, stats=stats)


def _gpu_bytes(graph, batch_size, *, dtype, predecessors, fw_rows=None) -> int:
    # Dijkstra's batch, and the reweighted copy of the weights with h
    return (gpu_batch_bytes(graph, batch_size, dtype=dtype, predecessors=predecessors,
                            bellman_ford_kernels=False)
            + graph.m * (dtype.itemsize + 2 * 8) + graph.n * 8)


JOHNSON = Code(run={"cpu": _cpu, "gpu": _gpu}, rows={"cpu": _rows},
               memory={"cpu": cpu_batch_bytes, "gpu": _gpu_bytes})
