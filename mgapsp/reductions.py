"""Per-row reductions of distance rows, and the per-source metrics made of them:
plain NumPy, read by the backends (a batch's rows as they are computed; on the GPU
their device's own kernels, :mod:`mgapsp.cuda.reduce`, give the same) and by the
store's verification (the rows SciPy recomputes)."""

from __future__ import annotations

import numpy as np

__all__ = ["REDUCTIONS", "row_reductions", "metric_values"]

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


def metric_values(red: dict, n: int) -> dict:
    """The per-source metrics a job stores (:data:`mgapsp.plan.METRICS`) from a block's
    :func:`row_reductions`, ``n`` its columns: closeness as NetworkX defines it with
    ``wf_improved`` (``(r - 1) / s`` times ``(r - 1) / (n - 1)``, 0 where nothing but
    the source is reached)."""
    r = np.asarray(red["reachable"])
    total = np.asarray(red["total"], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        closeness = np.where((total > 0) & (n > 1), (r - 1.0) / total, 0.0)
        if n > 1:       # NetworkX's order of operations: its floats, to the last bit
            closeness = closeness * ((r - 1.0) / (n - 1))
    return {"reachable": r, "distance_sum": total, "closeness": closeness,
            "harmonic": np.asarray(red["harmonic"]),
            "eccentricity": np.asarray(red["eccentricity"])}
