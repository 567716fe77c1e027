"""The Numba kernels of :mod:`mgapsp.cpu_sssp` (importing this module imports Numba
and compiles them, or loads them from Numba's on-disk cache)."""

from __future__ import annotations

import numba
import numpy as np

from ..jit import jit as _jit

inf = np.inf


@_jit(nogil=True)
def heap_pop(keys, items, size):
    """Remove the least key of the 4-ary heap ``keys[:size]`` (``items`` beside it);
    the caller has read it from position 0 and passes the size after removal."""
    k = keys[size]
    v = items[size]
    i = 0
    while True:
        c = 4 * i + 1
        if c >= size:
            break
        best = c
        bk = keys[c]
        for j in range(c + 1, min(c + 4, size)):
            if keys[j] < bk:
                bk = keys[j]
                best = j
        if bk >= k:
            break
        keys[i] = bk
        items[i] = items[best]
        i = best
    keys[i] = k
    items[i] = v


@_jit(nogil=True)
def heap_push(keys, items, size, k, v):
    """Add ``(k, v)`` to the 4-ary heap ``keys[:size]``."""
    i = size
    while i > 0:
        p = (i - 1) >> 2
        if keys[p] <= k:
            break
        keys[i] = keys[p]
        items[i] = items[p]
        i = p
    keys[i] = k
    items[i] = v


@_jit(nogil=True)
def start(dist, pred, mark, unmarked, s):
    """Every vertex unreached (``mark`` set to ``unmarked``) but ``s``, at 0."""
    dist[:] = inf
    pred[:] = -1
    mark[:] = unmarked
    dist[s] = 0.0


@_jit(nogil=True)
def dijkstra_one(indptr, indices, weights, s, dist, pred, keys, items):
    # A 4-ary heap of (distance, vertex) entries, pushed at each improvement and
    # skipped when popped stale (no decrease-key): the keys sit in the heap itself, so
    # sifting reads no other array.  Each edge pushes at most once (its tail is
    # settled once).  Returns False, unfinished, where the heap's arrays are full.
    dist[:] = inf
    pred[:] = -1
    dist[s] = 0.0
    keys[0] = 0.0
    items[0] = s
    size = 1
    while size > 0:
        du = keys[0]
        u = items[0]
        size -= 1
        if size > 0:
            heap_pop(keys, items, size)
        if du > dist[u]:
            continue        # a stale entry: u was settled nearer
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            nd = du + weights[e]
            if nd < dist[v]:
                dist[v] = nd
                pred[v] = u
                if size == len(keys):
                    return False        # out of room: the caller grows the heap
                heap_push(keys, items, size, nd, v)
                size += 1
    return True


@_jit(nogil=True)
def spfa_one(indptr, indices, weights, s, dist, pred, queue, count):
    # count[v]: times v entered the queue; with a FIFO queue each vertex enters
    # at most once per Bellman-Ford round, and without a negative cycle every
    # distance is final after n - 1 rounds, so an n-th entry proves a cycle
    n = len(dist)
    start(dist, pred, count, 0, s)
    inq = count < 0         # all False
    queue[0] = s
    inq[s] = True
    count[s] = 1
    head = 0
    size = 1
    while size > 0:
        u = queue[head]
        head = head + 1 if head + 1 < n else 0
        size -= 1
        inq[u] = False
        du = dist[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            nd = du + weights[e]
            if nd < dist[v]:
                dist[v] = nd
                pred[v] = u
                if not inq[v]:
                    count[v] += 1
                    if count[v] > n:
                        return True
                    tail = head + size
                    queue[tail if tail < n else tail - n] = v
                    size += 1
                    inq[v] = True
    return False


@_jit(nogil=True)
def emit(dist, row, targets, shift, hs):
    # the float64 answer, corrected by Johnson's potentials as numpy did
    # ((d - h[s]) + h[t]), rounded once to the output's dtype
    if len(targets) == 0:
        for t in range(len(dist)):
            d = dist[t]
            if len(shift):
                d = (d - hs) + shift[t]
            row[t] = d
    else:
        for j in range(len(targets)):
            t = targets[j]
            d = dist[t]
            if len(shift):
                d = (d - hs) + shift[t]
            row[j] = d


@_jit(nogil=True)
def dijkstra_block(indptr, indices, weights, sources, targets, shift, out, pred, lo, hi):
    """Sources ``lo:hi`` of a batch, one after another on this thread, sharing its
    work arrays (allocated once per block, not per source)."""
    n = len(indptr) - 1
    dist = np.empty(n, np.float64)
    scratch = np.empty(0 if pred.shape[0] else n, np.int32)
    # room for every push (more than m) would be many times n on dense graphs, and
    # searches seldom push more than 2n: a search that runs out starts again in twice
    # the room
    room = min(len(indices), 2 * n) + 1
    keys = np.empty(room, np.float64)
    items = np.empty(room, np.int32)
    for i in range(lo, hi):
        s = sources[i]
        p = pred[i] if pred.shape[0] else scratch
        while not dijkstra_one(indptr, indices, weights, s, dist, p, keys, items):
            room *= 2
            keys = np.empty(room, np.float64)
            items = np.empty(room, np.int32)
        emit(dist, out[i], targets, shift, shift[s] if len(shift) else 0.0)


@_jit(nogil=True)
def spfa_block(indptr, indices, weights, sources, targets, out, pred, lo, hi):
    """As :func:`dijkstra_block`; True at the first source that reaches a negative
    cycle."""
    n = len(indptr) - 1
    dist = np.empty(n, np.float64)
    scratch = np.empty(0 if pred.shape[0] else n, np.int32)
    queue = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    for i in range(lo, hi):
        if spfa_one(indptr, indices, weights, sources[i], dist,
                    pred[i] if pred.shape[0] else scratch, queue, count):
            return True
        emit(dist, out[i], targets, dist[:0], 0.0)
    return False


# Two drivers each: prange over blocks of ``width`` sources, or a plain loop for a
# caller whose own threads share the cores.  Separate functions, so that Numba's
# cache keeps one entry per form.
@_jit(nogil=True, parallel=True)
def dijkstra_par(indptr, indices, weights, sources, targets, shift, out, pred, width):
    blocks = (len(sources) + width - 1) // width
    for b in numba.prange(blocks):
        dijkstra_block(indptr, indices, weights, sources, targets, shift, out, pred,
                       b * width, min((b + 1) * width, len(sources)))


@_jit(nogil=True)
def dijkstra_ser(indptr, indices, weights, sources, targets, shift, out, pred, width):
    dijkstra_block(indptr, indices, weights, sources, targets, shift, out, pred,
                   0, len(sources))


@_jit(nogil=True, parallel=True)
def spfa_par(indptr, indices, weights, sources, targets, shift, out, pred, width):
    blocks = (len(sources) + width - 1) // width
    cycles = 0
    for b in numba.prange(blocks):
        cycles += spfa_block(indptr, indices, weights, sources, targets, out, pred,
                             b * width, min((b + 1) * width, len(sources)))
    return cycles > 0


@_jit(nogil=True)
def spfa_ser(indptr, indices, weights, sources, targets, shift, out, pred, width):
    return spfa_block(indptr, indices, weights, sources, targets, out, pred,
                      0, len(sources))


@_jit(nogil=True)
def phast_block(up_ptr, up_head, w_up, w_down, parent, start_rank, out_rank, out, lo, hi):
    """PHAST for sources ``lo:hi`` of a batch: their columns of the rank-major
    distance table live in ``D`` (a row per rank, ``hi - lo`` columns side by side,
    so that each arc's relaxation reads and writes one short contiguous row)."""
    n = len(up_ptr) - 1
    width = hi - lo
    D = np.full((n, width), inf, dtype=w_up.dtype)
    for j in range(width):
        # up: the source's path to its elimination tree's root holds every vertex
        # its upward search reaches, in increasing rank
        x = start_rank[lo + j]
        D[x, j] = 0
        while x >= 0:
            dx = D[x, j]
            if dx < inf:
                for a in range(up_ptr[x], up_ptr[x + 1]):
                    c = dx + w_up[a]
                    if c < D[up_head[a], j]:
                        D[up_head[a], j] = c
            x = parent[x]
    # down: every rank after all those above it, pulling along its arcs from them
    for x in range(n - 1, -1, -1):
        for a in range(up_ptr[x], up_ptr[x + 1]):
            h = up_head[a]
            w = w_down[a]
            for j in range(width):
                c = D[h, j] + w
                if c < D[x, j]:
                    D[x, j] = c
    for j in range(width):
        row = out[lo + j]
        for t in range(len(out_rank)):
            row[t] = D[out_rank[t], j]


@_jit(nogil=True, parallel=True)
def phast_par(up_ptr, up_head, w_up, w_down, parent, start_rank, out_rank, out, width):
    blocks = (len(start_rank) + width - 1) // width
    for b in numba.prange(blocks):
        phast_block(up_ptr, up_head, w_up, w_down, parent, start_rank, out_rank, out,
                    b * width, min((b + 1) * width, len(start_rank)))


@_jit(nogil=True)
def phast_ser(up_ptr, up_head, w_up, w_down, parent, start_rank, out_rank, out, width):
    for lo in range(0, len(start_rank), width):
        phast_block(up_ptr, up_head, w_up, w_down, parent, start_rank, out_rank, out,
                    lo, min(lo + width, len(start_rank)))


ENTRY_POINTS = {"heap_par": dijkstra_par, "heap_ser": dijkstra_ser,
                "spfa_par": spfa_par, "spfa_ser": spfa_ser,
                "sweep_par": phast_par, "sweep_ser": phast_ser}
