"""The CPU's PHAST sweep: a batch's up walks and its level-by-level down sweep of a
contraction hierarchy (:mod:`mgapsp.hierarchy`), in NumPy."""

from __future__ import annotations

import numpy as np

from ..hierarchy import Hierarchy
from ..hierarchy.construct import concat_ranges

__all__ = ["distances"]

#: elements (arcs x sources) one step of the CPU sweep works on at a time
_CPU_PIECE = 2**22


def distances(h: Hierarchy, sources, dtype=np.float64, targets=None,
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


