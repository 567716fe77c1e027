"""The Numba kernels of :mod:`mgapsp.cpu_sssp` (importing this module imports Numba
and compiles them, or loads them from Numba's on-disk cache)."""

from __future__ import annotations

import logging

import numba
import numpy as np

log = logging.getLogger(__name__)

inf = np.inf


def _jit(**options):
    """``numba.njit`` with its on-disk cache where one is writable: Numba refuses
    ``cache=True`` (RuntimeError) where neither the package's ``__pycache__`` nor its
    user cache folder can be written, and then the kernels compile in every process."""
    def wrap(fn):
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError as exc:
            log.info("Numba cannot cache %s (%s); it compiles in each process",
                     fn.__name__, exc)
            return numba.njit(**options)(fn)
    return wrap


@_jit(nogil=True)
def sift_up(heap, pos, dist, i):
    v = heap[i]
    dv = dist[v]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[parent]
        if dist[p] <= dv:
            break
        heap[i] = p
        pos[p] = i
        i = parent
    heap[i] = v
    pos[v] = i


@_jit(nogil=True)
def sift_down(heap, pos, dist, size, i):
    v = heap[i]
    dv = dist[v]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and dist[heap[c + 1]] < dist[heap[c]]:
            c += 1
        if dist[heap[c]] >= dv:
            break
        heap[i] = heap[c]
        pos[heap[c]] = i
        i = c
    heap[i] = v
    pos[v] = i


@_jit(nogil=True)
def start(dist, pred, mark, unmarked, s):
    """Every vertex unreached (``mark`` set to ``unmarked``) but ``s``, at 0."""
    dist[:] = inf
    pred[:] = -1
    mark[:] = unmarked
    dist[s] = 0.0


@_jit(nogil=True)
def dijkstra_one(indptr, indices, weights, s, dist, pred, heap, pos):
    # pos: -1 never reached, -2 settled, else the vertex's place in the heap
    start(dist, pred, pos, -1, s)
    heap[0] = s
    pos[s] = 0
    size = 1
    while size > 0:
        u = heap[0]
        pos[u] = -2
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            sift_down(heap, pos, dist, size, 0)
        du = dist[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if pos[v] == -2:
                continue
            nd = du + weights[e]
            if nd < dist[v]:
                dist[v] = nd
                pred[v] = u
                if pos[v] == -1:
                    heap[size] = v
                    size += 1
                    sift_up(heap, pos, dist, size - 1)
                else:
                    sift_up(heap, pos, dist, pos[v])


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
def dijkstra_source(indptr, indices, weights, sources, targets, shift, out, pred, i):
    n = len(indptr) - 1
    dist = np.empty(n, np.float64)
    heap = np.empty(n, np.int32)
    pos = np.empty(n, np.int32)
    p = pred[i] if pred.shape[0] else np.empty(n, np.int32)
    s = sources[i]
    dijkstra_one(indptr, indices, weights, s, dist, p, heap, pos)
    emit(dist, out[i], targets, shift, shift[s] if len(shift) else 0.0)


@_jit(nogil=True)
def spfa_source(indptr, indices, weights, sources, targets, out, pred, i):
    n = len(indptr) - 1
    dist = np.empty(n, np.float64)
    queue = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    p = pred[i] if pred.shape[0] else np.empty(n, np.int32)
    if spfa_one(indptr, indices, weights, sources[i], dist, p, queue, count):
        return True
    emit(dist, out[i], targets, dist[:0], 0.0)
    return False


# Two drivers each: prange over the batch's sources, or a plain loop for a caller
# whose own threads share the cores.  Separate functions, so that Numba's cache
# keeps one entry per form.
@_jit(nogil=True, parallel=True)
def dijkstra_par(indptr, indices, weights, sources, targets, shift, out, pred):
    for i in numba.prange(len(sources)):
        dijkstra_source(indptr, indices, weights, sources, targets, shift, out, pred, i)


@_jit(nogil=True)
def dijkstra_ser(indptr, indices, weights, sources, targets, shift, out, pred):
    for i in range(len(sources)):
        dijkstra_source(indptr, indices, weights, sources, targets, shift, out, pred, i)


@_jit(nogil=True, parallel=True)
def spfa_par(indptr, indices, weights, sources, targets, shift, out, pred):
    cycles = 0
    for i in numba.prange(len(sources)):
        cycles += spfa_source(indptr, indices, weights, sources, targets, out, pred, i)
    return cycles > 0


@_jit(nogil=True)
def spfa_ser(indptr, indices, weights, sources, targets, shift, out, pred):
    for i in range(len(sources)):
        if spfa_source(indptr, indices, weights, sources, targets, out, pred, i):
            return True
    return False



ENTRY_POINTS = {"dijkstra_par": dijkstra_par, "dijkstra_ser": dijkstra_ser,
        "spfa_par": spfa_par, "spfa_ser": spfa_ser}
