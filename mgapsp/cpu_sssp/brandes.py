"""Brandes' betweenness on the CPU, a batch of sources on every core (Numba).

Each source's search is NetworkX's own (``_single_source_dijkstra_path_basic``): a
heap of ``(distance, push order)`` entries, path counts added where a candidate's
distance equals the best seen so far (``==`` on float64 sums made in the same order,
so two paths are tied exactly where NetworkX ties them, zero-weight edges included),
and the dependencies accumulated in reverse order of settling, each vertex's
predecessors in the order they were found.  Path counts are float64, as NetworkX's
are: exact up to 2**53 paths, and ties are decided on the distances, not on them.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import jit as _jit

__all__ = ["betweenness_rows", "betweenness_serial"]


@_jit(nogil=True)
def _push(keys, order, items, preds, size, k, c, v, p):
    """Add the entry ``(k, c)`` for vertex ``v`` reached from ``p`` to the binary
    heap of ``size`` entries ordered by ``(keys, order)``."""
    i = size
    while i > 0:
        q = (i - 1) >> 1
        if keys[q] < k or (keys[q] == k and order[q] < c):
            break
        keys[i] = keys[q]
        order[i] = order[q]
        items[i] = items[q]
        preds[i] = preds[q]
        i = q
    keys[i] = k
    order[i] = c
    items[i] = v
    preds[i] = p


@_jit(nogil=True)
def _pop(keys, order, items, preds, size):
    """Remove entry 0 of the heap of ``size + 1`` entries (the caller read it)."""
    k, c, v, p = keys[size], order[size], items[size], preds[size]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= size:
            break
        b = a + 1
        if b < size and (keys[b] < keys[a] or (keys[b] == keys[a] and order[b] < order[a])):
            a = b
        if keys[a] > k or (keys[a] == k and order[a] > c):
            break
        keys[i], order[i], items[i], preds[i] = keys[a], order[a], items[a], preds[a]
        i = a
    keys[i], order[i], items[i], preds[i] = k, c, v, p


@_jit(nogil=True)
def _one(indptr, indices, weights, s, bc, ebc, endpoints, target, seen, done, sigma,
         delta, stack, p_head, p_tail, p_next, p_from, p_edge, keys, order, items, preds):
    """Add source ``s``'s dependencies to ``bc`` (and each edge's to ``ebc``): the
    paths to the vertices of ``target`` (NetworkX's ``_accumulate_subset``; where it
    is empty, to every vertex: its ``_accumulate_basic``)."""
    n = len(indptr) - 1
    seen[:] = np.inf
    done[:] = False
    sigma[:] = 0.0
    p_head[:] = -1
    sigma[s] = 1.0
    seen[s] = 0.0
    size = 0
    count = 0
    _push(keys, order, items, preds, size, 0.0, count, s, s)
    size += 1
    count += 1
    top = 0
    used = 0
    while size > 0:
        d, v, p = keys[0], items[0], preds[0]
        size -= 1
        _pop(keys, order, items, preds, size)
        if done[v]:
            continue
        sigma[v] += sigma[p]
        done[v] = True
        stack[top] = v
        top += 1
        for e in range(indptr[v], indptr[v + 1]):
            w = indices[e]
            vw = d + weights[e]
            if not done[w] and vw < seen[w]:
                seen[w] = vw
                _push(keys, order, items, preds, size, vw, count, w, v)
                size += 1
                count += 1
                sigma[w] = 0.0
                p_head[w] = used            # P[w] = [v]
                p_tail[w] = used
                p_next[used] = -1
                p_from[used] = v
                p_edge[used] = e
                used += 1
            elif vw == seen[w]:
                sigma[w] += sigma[v]
                if p_head[w] < 0:
                    p_head[w] = used
                else:
                    p_next[p_tail[w]] = used
                p_tail[w] = used
                p_next[used] = -1
                p_from[used] = v
                p_edge[used] = e
                used += 1
    for i in range(top):
        delta[stack[i]] = 0.0
    if endpoints:
        bc[s] += top - 1
    for i in range(top - 1, -1, -1):
        w = stack[i]
        # NetworkX's (1 + delta) / sigma; delta / sigma where only some vertices are
        # targets and w is not one (the source never is; it can be reached again over
        # zero weights)
        own = len(target) == 0 or (target[w] and w != s)
        coeff = ((1.0 if own else 0.0) + delta[w]) / sigma[w]
        j = p_head[w]
        while j >= 0:
            v = p_from[j]
            c = sigma[v] * coeff
            delta[v] += c
            ebc[p_edge[j]] += c
            j = p_next[j]
        if w != s:
            bc[w] += delta[w] + (1.0 if endpoints else 0.0)


@_jit(nogil=True)
def _block(indptr, indices, weights, sources, bc, ebc, endpoints, target, lo, hi):
    n = len(indptr) - 1
    m = len(indices)
    seen = np.empty(n)
    done = np.empty(n, dtype=np.bool_)
    sigma = np.empty(n)
    delta = np.empty(n)
    stack = np.empty(n, dtype=np.int64)
    p_head = np.empty(n, dtype=np.int64)
    p_tail = np.empty(n, dtype=np.int64)
    p_next = np.empty(m + 1, dtype=np.int64)
    p_from = np.empty(m + 1, dtype=np.int64)
    p_edge = np.empty(m + 1, dtype=np.int64)
    cap = m + 2
    keys = np.empty(cap)
    order = np.empty(cap, dtype=np.int64)
    items = np.empty(cap, dtype=np.int64)
    preds = np.empty(cap, dtype=np.int64)
    for i in range(lo, hi):
        _one(indptr, indices, weights, sources[i], bc, ebc, endpoints, target, seen, done,
             sigma, delta, stack, p_head, p_tail, p_next, p_from, p_edge, keys, order,
             items, preds)


@_jit(nogil=True, parallel=True)
def _rows_par(indptr, indices, weights, sources, bc, ebc, endpoints, target, width):
    parts = bc.shape[0]
    for t in numba.prange(parts):
        _block(indptr, indices, weights, sources, bc[t], ebc[t], endpoints, target,
               t * width, min((t + 1) * width, len(sources)))


def betweenness_rows(indptr, indices, weights, sources, *, endpoints: bool = False,
                     targets=None, parts: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The dependencies of ``sources`` summed, per vertex and per edge (CSR order),
    unscaled, in ``parts`` pieces of the sources computed at once and then added.
    ``targets``: a mask of the vertices whose paths count (None: every vertex)."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    n, m = len(indptr) - 1, len(indices)
    parts = max(1, min(parts, len(sources)))
    width = -(-len(sources) // parts)
    bc = np.zeros((parts, n))
    ebc = np.zeros((parts, m))
    _rows_par(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
              np.asarray(weights, dtype=np.float64), sources, bc, ebc, bool(endpoints),
              _mask(targets, n), width)
    return bc.sum(axis=0), ebc.sum(axis=0)


def betweenness_serial(indptr, indices, weights, sources) -> np.ndarray:
    """:func:`betweenness_rows`' sums per vertex, on the calling thread alone (a job's
    batch: its worker runs a batch per thread)."""
    n, m = len(indptr) - 1, len(indices)
    bc, ebc = np.zeros(n), np.zeros(m)
    _block(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
           np.asarray(weights, dtype=np.float64),
           np.ascontiguousarray(sources, dtype=np.int64), bc, ebc, False, _mask(None, n), 0,
           len(sources))
    return bc


def _mask(targets, n: int) -> np.ndarray:
    """The kernels' targets: none given (an empty mask) for every vertex."""
    return (np.zeros(0, dtype=np.bool_) if targets is None
            else np.ascontiguousarray(targets, dtype=np.bool_))
