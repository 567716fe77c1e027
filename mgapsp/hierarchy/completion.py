"""The elimination's structure as compiled code (importing this module imports
Numba): completing an elimination that is not yet a perfect one (each rank's upward
neighbours other than its parent become its parent's, ranks taken in increasing
order, so that what a rank passes on already holds what its children passed to it),
and the elimination tree's depths and heights."""

from __future__ import annotations

import numpy as np
from numba.typed import List

from ..jit import jit

__all__ = ["complete", "depth_and_height"]


@jit(nogil=True)
def _complete(up_ptr, up_head, n):
    rows = List()
    for r in range(n):
        rows.append(up_head[up_ptr[r]:up_ptr[r + 1]].copy())
    for r in range(n):
        row = rows[r]
        if len(row) < 2:
            continue
        p = row[0]                  # the parent: the lowest above (each row is sorted)
        a, b = rows[p], row[1:]
        out = np.empty(len(a) + len(b), dtype=up_head.dtype)
        i = j = k = 0
        while i < len(a) or j < len(b):         # sorted union, without repeats
            if j == len(b) or (i < len(a) and a[i] < b[j]):
                out[k] = a[i]
                i += 1
            elif i == len(a) or b[j] < a[i]:
                out[k] = b[j]
                j += 1
            else:
                out[k] = a[i]
                i += 1
                j += 1
            k += 1
        rows[p] = out[:k]
    counts = np.empty(n, dtype=np.int64)
    for r in range(n):
        counts[r] = len(rows[r])
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(counts)
    head = np.empty(ptr[n], dtype=up_head.dtype)
    for r in range(n):
        head[ptr[r]:ptr[r + 1]] = rows[r]
    return ptr, head


def complete(up_ptr: np.ndarray, up_head: np.ndarray, n: int):
    """The completed arcs ``(up_ptr, up_head)`` (each rank's heads sorted)."""
    return _complete(np.ascontiguousarray(up_ptr, dtype=np.int64),
                     np.ascontiguousarray(up_head, dtype=np.int32), n)


@jit(nogil=True)
def _depth_and_height(parent):
    n = len(parent)
    depth = np.zeros(n, dtype=np.int32)
    height = np.zeros(n, dtype=np.int32)
    for r in range(n - 1, -1, -1):          # a parent's rank is higher: done first
        if parent[r] >= 0:
            depth[r] = depth[parent[r]] + 1
    for r in range(n):                      # children first
        p = parent[r]
        if p >= 0 and height[r] + 1 > height[p]:
            height[p] = height[r] + 1
    return depth, height


def depth_and_height(parent: np.ndarray):
    """Each rank's depth (root 0) and height (leaf 0) in the elimination tree of
    ``parent`` (-1 at a root; a parent's rank above its child's)."""
    return _depth_and_height(np.ascontiguousarray(parent, dtype=np.int32))
