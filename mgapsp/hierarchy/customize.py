"""The hierarchy's customization as compiled code: each arc's weight in both
directions lowered by its lower triangles, the arcs of a level of the elimination
tree in parallel (importing this module imports Numba).

An arc ``c = (u, v)``, ``u < v`` in rank space, has a lower triangle for each ``x <
u`` with arcs ``(x, u)`` and ``(x, v)``: ``u -> x -> v`` bounds its upward weight,
``v -> x -> u`` its downward one.  Those ``x`` are the common entries of the lists of
arcs coming up into ``u`` and into ``v`` (both sorted by ``x``), merged.  Every such
``x`` lies below ``u`` in the elimination tree, so taking the arcs by their tail's
height (leaves first) finishes each arc before another reads it, and each arc is
written by one thread only: no atomics, and the result does not depend on the
threads.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import jit

__all__ = ["customize_levels"]


@jit(nogil=True)
def _arc(c, arc_tail, up_head, down_ptr, down_tail, down_arc, w_up, w_down, last_up,
         last_down):
    """Arc ``c``'s lower triangles: the arcs into its tail and into its head merged by
    their tails (the merge ends with the first list: no common tail lies above it)."""
    u = arc_tail[c]
    v = up_head[c]
    best_up, best_down = w_up[c], w_down[c]
    via_up, via_down = last_up[c], last_down[c]
    i, i_end = down_ptr[u], down_ptr[u + 1]
    j, j_end = down_ptr[v], down_ptr[v + 1]
    while i < i_end and j < j_end:
        xi, xj = down_tail[i], down_tail[j]
        if xi < xj:
            i += 1
        elif xi > xj:
            j += 1
        else:
            a, b = down_arc[i], down_arc[j]     # (x, u) and (x, v)
            cand = w_down[a] + w_up[b]          # u -> x -> v: ends as x -> v
            if cand < best_up:
                best_up, via_up = cand, last_up[b]
            cand = w_down[b] + w_up[a]          # v -> x -> u: ends as x -> u
            if cand < best_down:
                best_down, via_down = cand, last_up[a]
            i += 1
            j += 1
    w_up[c], w_down[c] = best_up, best_down
    last_up[c], last_down[c] = via_up, via_down


@jit(nogil=True, parallel=True)
def _level(arcs, arc_tail, up_head, down_ptr, down_tail, down_arc, w_up, w_down,
           last_up, last_down):
    """One level's arcs, in parallel."""
    for t in numba.prange(len(arcs)):
        _arc(arcs[t], arc_tail, up_head, down_ptr, down_tail, down_arc, w_up, w_down,
             last_up, last_down)


@jit(nogil=True)
def _levels(arcs, arc_tail, up_head, down_ptr, down_tail, down_arc, w_up, w_down,
            last_up, last_down):
    """Levels too small to share out (each would cost more to start on every core
    than to run), one after another: ``arcs`` in their levels' order."""
    for t in range(len(arcs)):
        _arc(arcs[t], arc_tail, up_head, down_ptr, down_tail, down_arc, w_up, w_down,
             last_up, last_down)


#: a level of less merging than this (the arcs' lists summed, about a millisecond on
#: one core) runs on one core: sharing it out would cost more than it saves.  Counted
#: by merging, not by arcs: the top of a grid's elimination tree holds levels of a few
#: hundred arcs whose lists run to thousands, which alone took most of a build on one
#: core while the other cores waited
PARALLEL_WORK = 1 << 18


def customize_levels(up_ptr: np.ndarray, up_head: np.ndarray, height: np.ndarray,
                     w_up: np.ndarray, w_down: np.ndarray, last_up: np.ndarray,
                     last_down: np.ndarray) -> None:
    """Lower ``w_up``/``w_down`` (the edges' weights on their arcs, ``inf`` else) by
    every lower triangle, in place; ``last_up``/``last_down`` follow each weight's
    path (the vertex before the arc's head)."""
    n = len(up_ptr) - 1
    counts = np.diff(up_ptr)
    arc_tail = np.repeat(np.arange(n, dtype=np.int64), counts)
    # the arcs into each vertex, by tail (a stable sort keeps the tails ascending)
    into = np.argsort(up_head, kind="stable")
    into_count = np.bincount(up_head, minlength=n)
    down_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(into_count, out=down_ptr[1:])
    down_tail = arc_tail[into]
    # the arcs by their tail's height, and each level's merging (at most the lengths
    # of its arcs' two lists)
    by_height = np.argsort(height[arc_tail], kind="stable")
    bounds = np.searchsorted(height[arc_tail][by_height],
                             np.arange(int(height.max(initial=0)) + 2))
    merging = np.zeros(len(by_height) + 1, dtype=np.int64)
    np.cumsum(into_count[arc_tail[by_height]] + into_count[up_head[by_height]],
              out=merging[1:])
    work = np.diff(merging[bounds])
    args = (arc_tail, up_head, down_ptr, down_tail, into, w_up, w_down, last_up,
            last_down)
    h = 0
    while h < len(work):
        lo = bounds[h]
        while h < len(work) and work[h] < PARALLEL_WORK:
            h += 1      # consecutive light levels: one serial call
        if bounds[h] > lo:
            _levels(by_height[lo:bounds[h]], *args)
        if h < len(work):
            _level(by_height[bounds[h]:bounds[h + 1]], *args)
            h += 1
