"""PHAST: the sweeps of a contraction hierarchy built once per graph (road networks).

Each batch walks its sources up the elimination tree, then sweeps the hierarchy level
by level down; with targets, only the part of the sweep they need (RPHAST).  On the CPU
the Numba kernels of :mod:`mgapsp.cpu_sssp` sweep where they pay, :func:`sweep` (NumPy)
elsewhere and for predecessors; on the GPU the kernels of :mod:`mgapsp.cuda.phast`, with
the hierarchy kept on the device for the job's batches.
"""

from __future__ import annotations

import numpy as np

from .. import cpu_sssp, hierarchy
from ..algorithms import Code
from ..cuda import device as gpu
from ..cuda import phast
from ..hierarchy import Hierarchy
from ..hierarchy.construct import concat_ranges
from .base import BatchResult
from .gpu import array_key

__all__ = ["PHAST", "sweep"]

#: hierarchies (and restricted sweeps) a GPU process keeps
_KEEP_ON_GPU = 2


def _cpu(backend, graph, sources, *, dtype, predecessors, potentials, targets) -> BatchResult:
    h = hierarchy.for_graph(graph)
    if predecessors:
        hierarchy.check_predecessors(graph)
        dist, pred = sweep(h, sources, dtype=dtype, predecessors=True)
        return BatchResult(dist, pred, {"sources": len(sources)})
    return BatchResult(sweep(h, sources, dtype=dtype, targets=targets), None,
                       {"sources": len(sources)}, targets_only=targets is not None)


def _rows(backend, graph, sources, dist, pred, *, potentials, columns, parallel) -> None:
    cpu_sssp.phast_rows(hierarchy.for_graph(graph), sources, dist, targets=columns,
                        parallel=parallel)


def _gpu(backend, graph, src, *, dtype, predecessors, potentials, targets) -> BatchResult:
    if predecessors:
        if targets is not None:
            raise ValueError("predecessors need every target")
        hierarchy.check_predecessors(graph)
    h = hierarchy.for_graph(graph)
    key = (gpu.device_id(), graph.fingerprint, dtype.str)
    needed = phast.batch_bytes(graph.n, len(src), dtype, predecessors)
    if backend.kept("hierarchy", key, lambda: None, _KEEP_ON_GPU) is None:
        needed += phast.device_bytes(h.n, h.arcs, dtype)
    backend.ensure_memory(graph, needed, f"a batch of {len(src)} sources on "
                          f"{graph.n} vertices", hint="use a smaller --batch-size")
    dh = backend.kept("hierarchy", key, lambda: phast.upload(h, dtype), _KEEP_ON_GPU)
    restricted = None
    if targets is not None:     # RPHAST: one sweep for the job's batches
        t = np.ascontiguousarray(targets, dtype=np.int64)
        restricted = backend.kept("sweep", (key[0], h.fingerprint, array_key(t, "<i8")),
                                  lambda: phast.sweep(h, t), _KEEP_ON_GPU)
    dist, pred, stats = phast.phast_batch(dh, src, restricted, predecessors)
    return BatchResult(distances=dist, predecessors=pred, stats=stats,
                       targets_only=restricted is not None)


def _cpu_bytes(graph, batch_size, *, dtype, predecessors, fw_rows=None) -> int:
    # the hierarchy (its arcs guessed before it is built), the sweep's state
    return ((graph.m + graph.n) * 8 * 28
            + batch_size * graph.n * (16 + (8 if predecessors else 0)))


def _gpu_bytes(graph, batch_size, *, dtype, predecessors, fw_rows=None) -> int:
    # the hierarchy (arcs not known before it is built: a road network has a few per
    # edge), the rank-major state and the output block
    arcs = 8 * (graph.m + graph.n)
    return (phast.device_bytes(graph.n, arcs, dtype)
            + phast.batch_bytes(graph.n, batch_size, dtype, predecessors))


PHAST = Code(run={"cpu": _cpu, "gpu": _gpu}, rows={"cpu": _rows}, rows_predecessors=False,
             memory={"cpu": _cpu_bytes, "gpu": _gpu_bytes})


# -- the CPU's sweep in NumPy ------------------------------------------------------------
#: elements (arcs x sources) one step of the CPU sweep works on at a time
_CPU_PIECE = 2**22


def sweep(h: Hierarchy, sources, dtype=np.float64, targets=None,
          predecessors: bool = False):
    """Distances ``(len(sources), n)`` from ``sources`` (vertex indices), by the up
    walks and the down sweep on the CPU; ``inf`` where unreachable.  With ``targets``
    (vertex indices): ``(len(sources), len(targets))``, the sweep restricted to what
    they need (RPHAST).  With ``predecessors`` (every target; see
    :func:`mgapsp.hierarchy.check_predecessors`): ``(distances, predecessors)``, the latter int32 with
    -1 at each source and where unreachable."""
    dtype = np.dtype(dtype)
    src = np.asarray(sources, dtype=np.int64).ravel()
    n, B = h.n, len(src)
    if predecessors and targets is not None:
        raise ValueError("predecessors need every target")
    out_rank = h.rank if targets is None else h.rank[np.asarray(targets, dtype=np.int64)]
    D = np.full((n, B), np.inf, dtype=dtype)        # rank-major: a row per rank
    P = np.full((n, B), -1, dtype=np.int32) if predecessors else None
    if B == 0:
        empty = np.empty((0, len(out_rank)), dtype=dtype)
        return (empty, np.empty((0, n), dtype=np.int32)) if predecessors else empty
    cols = np.arange(B)
    cur = h.rank[src].astype(np.int64)
    D[cur, cols] = 0
    w_up = h.w_up.astype(dtype)
    w_down = h.w_down.astype(dtype)
    counts = np.diff(h.up_ptr)
    # up: every source walks its elimination-tree path, all sources in step (a step's
    # (rank, column) pairs are distinct: one rank per column, its arcs' heads distinct)
    alive = np.ones(B, dtype=bool)
    while alive.any():
        x, b = cur[alive], cols[alive]
        k = counts[x]
        arcs = np.repeat(h.up_ptr[x], k) + concat_ranges(k)
        head, bb = h.up_head[arcs], np.repeat(b, k)
        cand = np.repeat(D[x, b], k) + w_up[arcs]
        won = cand < D[head, bb]
        D[head[won], bb[won]] = cand[won]
        if predecessors:
            P[head[won], bb[won]] = h.last_up[arcs[won]]
        cur[alive] = h.parent[x]
        alive &= cur >= 0
    # down: levels from the roots; each level's arcs in pieces of bounded size
    ptr, ranks = h.levels(targets)
    for lv in range(1, len(ptr) - 1):
        xs = ranks[ptr[lv]:ptr[lv + 1]]
        xs = xs[counts[xs] > 0]
        if not len(xs):
            continue
        step = max(1, _CPU_PIECE // max(1, B * int(counts[xs].max(initial=1))))
        for i in range(0, len(xs), step):
            part = xs[i:i + step]
            k = counts[part]
            arcs = np.repeat(h.up_ptr[part], k) + concat_ranges(k)
            first = np.cumsum(k) - k
            cand = D[h.up_head[arcs]] + w_down[arcs][:, None]
            best = np.minimum.reduceat(cand, first, axis=0)
            won = best < D[part]
            D[part] = np.where(won, best, D[part])
            if predecessors:
                # the first arc of each rank's segment that gives its best
                row = np.where(cand == np.repeat(best, k, axis=0),
                               np.arange(len(arcs))[:, None], len(arcs))
                pick = np.minimum.reduceat(row, first, axis=0)
                via = h.last_down[arcs[np.minimum(pick, len(arcs) - 1)]]
                P[part] = np.where(won, via, P[part])
    dist = np.ascontiguousarray(D[out_rank].T)
    return (dist, np.ascontiguousarray(P[out_rank].T)) if predecessors else dist


