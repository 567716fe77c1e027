"""The top of the elimination tree as chains, in compiled code (importing this module
imports Numba): for each rank of the top levels, its ancestors by depth and the
down-sweep distance from each of them to it.

A down sweep lowers a rank by ``d(head) + W[head -> rank]`` over its upward arcs,
whose heads are its ancestors; so after the sweep a rank ``r``'s distance is the
least, over its ancestors ``a`` (``r`` itself included), of the up walk's value at
``a`` plus the shortest path from ``a`` down to ``r`` through ``r``'s ancestors.  The
chains hold those down distances, so that the top of a sweep (the separators: a few
ranks a level, hundreds of arcs each, hundreds of levels) is one product on the GPU
rather than a launch per level.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

__all__ = ["down_chains"]


@jit(nogil=True)
def _down_chains(up_ptr, up_head, w_down, parent, depth, ranks, levels):
    row_of = np.full(len(depth), -1, dtype=np.int64)
    for i in range(len(ranks)):
        row_of[ranks[i]] = i
    chain_rank = np.full((len(ranks), levels), -1, dtype=np.int32)
    chain_dist = np.full((len(ranks), levels), np.inf)
    for i in range(len(ranks)):            # ancestors first: ranks in level order
        r = ranks[i]
        dr = depth[r]
        if parent[r] >= 0:
            chain_rank[i, :dr] = chain_rank[row_of[parent[r]], :dr]
        chain_rank[i, dr] = r
        chain_dist[i, dr] = 0.0
        for a in range(up_ptr[r], up_ptr[r + 1]):
            j = row_of[up_head[a]]          # an ancestor: in the top levels too
            w = w_down[a]
            for d in range(depth[up_head[a]] + 1):
                c = chain_dist[j, d] + w
                if c < chain_dist[i, d]:
                    chain_dist[i, d] = c
    return chain_rank, chain_dist


def down_chains(up_ptr, up_head, w_down, parent, depth, ranks, levels: int):
    """``(chain_rank, chain_dist)``, each ``(len(ranks), levels)``: row ``i`` is rank
    ``ranks[i]``'s ancestor at each depth up to its own (-1 below) and the down
    distance from that ancestor to it (float64, its sums taken from the ancestor
    down).  ``ranks``: the top ``levels`` levels, root level first."""
    return _down_chains(np.ascontiguousarray(up_ptr, dtype=np.int64),
                        np.ascontiguousarray(up_head, dtype=np.int32),
                        np.ascontiguousarray(w_down, dtype=np.float64),
                        np.ascontiguousarray(parent, dtype=np.int32),
                        np.ascontiguousarray(depth, dtype=np.int32),
                        np.ascontiguousarray(ranks, dtype=np.int64), int(levels))
