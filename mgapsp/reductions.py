"""Per-row reductions of distance rows, and the per-source metrics made of them:
plain NumPy, read by the backends (a batch's rows as they are computed; on the GPU
their device's own kernels, :mod:`mgapsp.cuda.reduce`, give the same) and by the
store's verification (the rows SciPy recomputes)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["REDUCTIONS", "HISTOGRAM_BINS", "row_reductions", "lone_reductions",
           "ordered_harmonic", "metric_values",
           "histogram_counts", "histogram_bin_of", "DistanceHistogram",
           "distance_histogram", "betweenness_scale"]

#: the per-row reductions of :meth:`Backend.row_metrics`
REDUCTIONS = ("reachable", "total", "harmonic", "eccentricity")


def row_reductions(block) -> dict:
    """Each row's finite entries (``reachable``), their sum (``total``), the sum of the
    reciprocals of the positive ones (``harmonic``) and the largest (``eccentricity``)
    of a host block, in float64 (counts in int64), a few rows at a time."""
    block = np.asarray(block)
    k = len(block)
    out = {"reachable": np.zeros(k, dtype=np.int64), "total": np.zeros(k),
           "harmonic": np.zeros(k), "eccentricity": np.zeros(k)}
    step = max(1, (1 << 22) // max(block.shape[1], 1))
    with np.errstate(divide="ignore"):
        for lo in range(0, k, step):
            part = block[lo:lo + step].astype(np.float64, copy=False)
            finite = np.isfinite(part)
            out["reachable"][lo:lo + step] = finite.sum(axis=1)
            out["total"][lo:lo + step] = np.sum(part, axis=1, where=finite)
            out["harmonic"][lo:lo + step] = np.sum(1.0 / part, axis=1,
                                                   where=finite & (part > 0))
            out["eccentricity"][lo:lo + step] = np.max(part, axis=1, initial=0.0,
                                                       where=finite)
    return out


def lone_reductions(k: int) -> dict:
    """:func:`row_reductions` of ``k`` rows whose sources reach only themselves (their
    distance 0 to themselves among the columns)."""
    return {"reachable": np.ones(k, dtype=np.int64), "total": np.zeros(k),
            "harmonic": np.zeros(k), "eccentricity": np.zeros(k)}


def ordered_harmonic(block, columns: np.ndarray, acc: np.ndarray, touched: np.ndarray) -> None:
    """Add ``1 / d`` of each row of ``block`` to ``acc[t]`` for column ``columns[t]``
    where ``d`` is finite and not 0, row after row (in place; ``touched[t]``: a term
    was added): each sum in the order of the rows, as a loop over the sources adds
    them, so that the floats are the loop's to the last bit."""
    for row in np.asarray(block)[:, columns]:
        row = row.astype(np.float64, copy=False)
        hit = np.isfinite(row) & (row != 0)
        acc[hit] += 1.0 / row[hit]
        touched |= hit


def metric_values(red: dict, n: int, own=None) -> dict:
    """The per-source metrics a job stores (:data:`mgapsp.plan.METRICS`) from a block's
    :func:`row_reductions`, ``n`` its columns: closeness as NetworkX defines it with
    ``wf_improved`` (``(r - 1) / s`` times ``(r - 1) / (n - 1)``, 0 where nothing but
    the source is reached).

    ``own`` (a bool per row; default all True) says whether the row's source is among
    its columns.  Over a set of targets closeness counts the source once, always: ``r``
    is the targets reached other than the source, plus one, and ``n`` the targets other
    than the source, plus one (the whole graph's definition where every vertex is a
    target).  Harmonic centrality and the sums only ever count other vertices."""
    r = np.asarray(red["reachable"])
    own = np.ones(len(r), dtype=bool) if own is None else np.asarray(own, dtype=bool)
    pairs = (r - own).astype(np.float64)    # targets reached, the source aside
    n_all = n - own + 1                     # the targets and the source, once
    total = np.asarray(red["total"], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        closeness = np.where((total > 0) & (n_all > 1), pairs / total, 0.0)
        # NetworkX's order of operations: its floats, to the last bit
        closeness = np.where(n_all > 1, closeness * (pairs / (n_all - 1)), closeness)
    return {"reachable": r, "distance_sum": total, "closeness": closeness,
            "harmonic": np.asarray(red["harmonic"]),
            "eccentricity": np.asarray(red["eccentricity"])}


# -- the distribution of distances ------------------------------------------------------
#
# A distance's bin is the top 13 bits of its float32 value rounded toward zero: its
# sign, its exponent and the first 4 bits of its mantissa.  The bins are the same for
# every graph and every job (so a job's batches merge by adding their counts, in any
# order, and a resumed job adds to the same bins), 16 to an octave (each 1/16 of its
# octave wide: every integer below 32 has a bin of its own, so hop counts are exact),
# and the float64 rows fall in them exactly: rounding toward zero never carries a value
# across a bin's edge, which is a float32.

#: bins of :func:`histogram_counts`, in the order of their bit patterns
HISTOGRAM_BINS = 1 << 13
_SHIFT = 19     # 32 - 13


def histogram_bin_of(values) -> np.ndarray:
    """The bin of each finite value (:data:`HISTOGRAM_BINS` of them, by bit pattern:
    4096 and up hold the negative values; -0.0 is 0's)."""
    x = np.asarray(values) + 0.0    # -0.0 (Johnson's distance to itself) is 0
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)
    if x.dtype != np.float32:   # rounded to nearest: step back toward zero where it rose
        up = np.abs(f.astype(np.float64)) > np.abs(x.astype(np.float64))
        f[up] = np.nextafter(f[up], np.float32(0))
    return (f.view(np.uint32) >> _SHIFT).astype(np.intp)


def histogram_counts(block, *, self_pairs: int = 0) -> np.ndarray:
    """How many finite entries of ``block`` fall in each bin (uint64, by bit
    pattern), less ``self_pairs`` distances 0 (its rows' sources among its columns: a
    vertex's distance to itself is no pair's)."""
    block = np.asarray(block)
    counts = np.zeros(HISTOGRAM_BINS, dtype=np.uint64)
    step = max(1, (1 << 22) // max(block.shape[1], 1)) if block.ndim == 2 else len(block)
    for lo in range(0, len(block), max(step, 1)):
        part = block[lo:lo + step]
        finite = part[np.isfinite(part)]
        counts += np.bincount(histogram_bin_of(finite),
                              minlength=HISTOGRAM_BINS).astype(np.uint64)
    counts[0] -= np.uint64(self_pairs)
    return counts


def _bin_edges() -> tuple[np.ndarray, np.ndarray]:
    """Each non-negative bin's ``[low, high)``, in float64."""
    i = np.arange(HISTOGRAM_BINS // 2, dtype=np.uint64)
    low = (i << np.uint64(_SHIFT)).astype(np.uint32).view(np.float32)
    high = ((i + np.uint64(1)) << np.uint64(_SHIFT)).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):     # the bins past inf: NaNs, never filled
        return low.astype(np.float64), high.astype(np.float64)


class DistanceHistogram(tuple):
    """The distribution of the distances between pairs ``(source, target)`` of
    distinct vertices: ``counts, edges = h`` as :func:`numpy.histogram` gives them
    (``counts[i]`` distances in ``[edges[i], edges[i + 1])``; by magnitude for negative
    ones), only the span of non-empty bins, plus ``unreachable`` (pairs with no path)
    and ``pairs`` (all of them)."""

    def __new__(cls, counts, edges, unreachable: int):
        self = super().__new__(cls, (counts, edges))
        self.unreachable = int(unreachable)
        self.pairs = int(counts.sum()) + self.unreachable
        return self

    @property
    def counts(self) -> np.ndarray:
        return self[0]

    @property
    def edges(self) -> np.ndarray:
        return self[1]

    def __repr__(self) -> str:
        return (f"DistanceHistogram({len(self.counts)} bins from {self.edges[0]:g} to "
                f"{self.edges[-1]:g}, {self.pairs - self.unreachable:,} distances, "
                f"{self.unreachable:,} pairs unreachable)")


def distance_histogram(counts, unreachable: int, *,
                       integral: bool = False) -> DistanceHistogram:
    """:class:`DistanceHistogram` of bit-pattern ``counts`` (:func:`histogram_counts`,
    summed over batches): the bins put in the order of their values, the empty ones at
    both ends left out.  The bin of 0 takes in the empty bins around it (the octaves
    of tiny values, some two thousand bins, between 0 and the shortest arc).
    ``integral`` (every distance an integer: integer weights, or hops): a bin that
    starts between two integers holds none, and joins the one before it, so that
    every edge is an integer (below 32, a bin for each)."""
    counts = np.asarray(counts, dtype=np.uint64)
    _, high = _bin_edges()
    half = HISTOGRAM_BINS // 2
    ordered = np.concatenate([counts[half:][::-1], counts[:half]]).astype(np.int64)
    edges = np.concatenate([-high[::-1], [0.0], high])
    zero = half         # the bin [0, smallest positive edge)
    nz = np.flatnonzero(ordered)
    if not len(nz):
        return DistanceHistogram(np.zeros(0, dtype=np.int64), np.zeros(1), unreachable)
    below, above = nz[nz < zero], nz[nz > zero]
    lo = below[-1] + 1 if len(below) else zero      # first bin the zero bin takes in
    hi = above[0] if len(above) else zero + 1       # first bin past it
    ordered = np.concatenate([ordered[:lo], [ordered[lo:hi].sum()], ordered[hi:]])
    edges = np.concatenate([edges[:lo + 1], edges[hi:]])
    if not len(below):
        edges[lo] = 0.0
    nz = np.flatnonzero(ordered)
    a, b = nz[0], nz[-1] + 1
    ordered, edges = ordered[a:b], edges[a:b + 1]
    if integral:
        # a group of bins per integer: from it up for 0 and above, down to it below
        whole = edges == np.round(edges)
        p = int(np.searchsorted(edges[:-1], 0.0))       # the first bin from 0 up
        starts = np.unique(np.concatenate([
            [0], np.flatnonzero(whole[1:p]) + 1, [p] if p < len(ordered) else [],
            p + np.flatnonzero(whole[p:-1])])).astype(np.intp)
        ordered = np.add.reduceat(ordered, starts)
        top = edges[-1] if whole[-1] or edges[-1] < 0 else np.ceil(edges[-1])
        edges = np.append(edges[starts], top)
    return DistanceHistogram(ordered, edges, unreachable)


def betweenness_scale(n: int, sampled, *, normalized: bool, directed: bool, endpoints: bool):
    """NetworkX 3.6's ``_rescale``: the factor of each vertex's (or edge's) sum."""
    N = n if endpoints else n - 1
    if N < 2:
        return 1.0
    K = N if sampled is None else int(sampled.sum())
    correction = 1 if directed else 2
    if sampled is None or endpoints:
        return 1 / (K * (N - 1)) if normalized else N / (K * correction)
    if normalized:
        source = 1 / ((K - 1) * (N - 1)) if K > 1 else math.nan
        other = 1 / (K * (N - 1))
    else:
        source = N / ((K - 1) * correction) if K > 1 else math.nan
        other = N / (K * correction)
    return np.where(sampled, source, other)
