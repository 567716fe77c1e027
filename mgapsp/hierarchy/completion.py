"""Completing an elimination that is not yet a perfect one, as compiled code
(importing this module imports Numba): each rank's upward neighbours other than its
parent become its parent's, ranks taken in increasing order, so that what a rank
passes on already holds what its children passed to it."""

from __future__ import annotations

import numpy as np
from numba.typed import List

from ..jit import jit

__all__ = ["complete"]


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
