"""Graph500's SSSP validation: a row of distances checked against the graph alone, for
graphs too large for SciPy to recompute every row.

A row ``d`` from ``source`` is a shortest-path row exactly when ``d[source] == 0``; no
arc can shorten it (``d[v] <= d[u] + w`` for every arc ``u -> v`` with ``d[u]``
finite, so every vertex reachable from a reached one is reached); and every other
reached vertex has an arc into it that is tight (``d[u] + w == d[v]``), so each
distance is the length of a real path.  With integer weights and distances the
comparisons are exact.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def check_row(csr: sp.csr_matrix, source: int, d: np.ndarray) -> str | None:
    """What is wrong with ``d`` as the distances from ``source`` in ``csr``, or None."""
    d = np.asarray(d, dtype=np.float64)
    if d[source] != 0:
        return f"d[{source}] = {d[source]:g}, not 0"
    tail = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    head, w = csr.indices, csr.data
    reached = np.isfinite(d[tail])
    tail, head, w = tail[reached], head[reached], w[reached]
    slack = d[tail] + w - d[head]           # inf where the head was never reached
    bad = slack < 0
    if np.isinf(slack).any() or bad.any():
        k = int(np.flatnonzero(np.isinf(slack) | bad)[0])
        return (f"arc {tail[k]} -> {head[k]} (weight {w[k]:g}) shortens d[{head[k]}] = "
                f"{d[head[k]]:g} to {d[tail[k]] + w[k]:g}")
    supported = np.zeros(len(d), dtype=bool)
    supported[head[slack == 0]] = True
    supported[source] = True
    lost = np.isfinite(d) & ~supported
    if lost.any():
        v = int(np.flatnonzero(lost)[0])
        return f"d[{v}] = {d[v]:g} is no path's length (no tight arc into it)"
    return None


def check_rows(csr: sp.csr_matrix, sources, rows) -> list[str]:
    """The problems of several rows (an empty list where every row holds)."""
    problems = []
    for s, d in zip(sources, rows):
        p = check_row(csr, int(s), d)
        if p:
            problems.append(f"source {int(s)}: {p}")
    return problems
