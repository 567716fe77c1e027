"""Checking a store: its files against their checksums, then rows against SciPy."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csgraph

from ..cpu_sssp import threads
from ..jit import compiled
from ..plan import PER_BATCH
from ..reductions import histogram_bin_of, histogram_counts, metric_values, row_reductions
from .integrity import damaged_batches
from .layout import Store
from .rows import read as read_rows

__all__ = ["verify_store", "VerifyReport", "tolerance"]


def tolerance(dtype) -> float:
    """Relative tolerance for a stored dtype: float32 sums of many hops drift."""
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-9


@dataclass
class VerifyReport:
    rows_checked: int = 0
    rows_missing: int = 0
    mismatched_rows: list = field(default_factory=list)
    max_error: float = 0.0
    bad_predecessors: int = 0
    #: flagged batches whose files fail their checks: {batch: what is wrong}
    damaged: dict = field(default_factory=dict)
    #: batches not computed yet (no flag)
    missing_batches: list = field(default_factory=list)
    #: batches whose stored distance histogram is not that of SciPy's rows
    histogram_batches: list = field(default_factory=list)
    #: batches whose stored dependencies are not those of NetworkX's Brandes
    betweenness_batches: list = field(default_factory=list)
    #: the batches whose dependencies were checked
    betweenness_checked: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.rows_checked > 0 and not self.mismatched_rows and not self.damaged
                and self.rows_missing == 0 and self.bad_predecessors == 0
                and not self.histogram_batches and not self.betweenness_batches)


def verify_store(path, *, samples: int | None = 64, all_rows: bool = False,
                 seed: int = 0, chunk: int = 256) -> VerifyReport:
    """Check every flagged batch's files against their checksums, then recompute rows
    with SciPy and compare.

    Damaged batches are reported (:attr:`VerifyReport.damaged`) and left out of the
    comparison.  With ``all_rows`` every row must be computed and equal; otherwise ``samples``
    rows are drawn from the finished batches.  Predecessors, when stored, must form
    shortest paths: ``d[s, p] + w(p, v) == d[s, v]`` for every target ``v`` with
    predecessor ``p``, and ``-1`` exactly at the source and unreachable targets.
    """
    store = Store.open(path)
    graph = store.load_graph()
    plan = store.plan()
    done = store.done_mask()
    report = VerifyReport()
    report.missing_batches = [int(b) for b in np.flatnonzero(~done)]
    report.damaged = damaged_batches(store, deep=True)
    rows_done = np.zeros(plan.n_sources, dtype=bool)
    for b in np.flatnonzero(done):
        if int(b) in report.damaged:
            continue
        start, stop = plan.rows(int(b))
        rows_done[start:stop] = True
    if all_rows:
        rows = np.arange(plan.n_sources)
        report.rows_missing = sum(plan.rows(b)[1] - plan.rows(b)[0]
                                  for b in report.missing_batches)
        rows = rows[rows_done]
    else:
        candidates = np.flatnonzero(rows_done)
        k = min(samples or 0, len(candidates))
        rows = np.sort(np.random.default_rng(seed).choice(candidates, size=k, replace=False))
    csr = graph.to_scipy()
    method = "J" if graph.has_negative_weights else "D"
    rtol = tolerance(plan.dtype)
    atol = rtol * max(1.0, float(np.abs(graph.weights).max()))
    dist_arr = store.group["distances"] if plan.distances else None
    pred_arr = store.group["predecessors"] if plan.predecessors else None
    for lo in range(0, len(rows), chunk):
        sel = rows[lo:lo + chunk]
        src = plan.sources[sel]
        ref = csgraph.shortest_path(csr, method=method, directed=True, indices=src)
        if plan.targets is not None:
            ref = ref[:, plan.targets]
        bad = np.zeros(len(sel), dtype=bool)
        if dist_arr is not None:
            got = read_rows(dist_arr, sel).astype(np.float64)
            inf_ok = np.isinf(got) == np.isinf(ref)
            fin = np.isfinite(ref) & inf_ok
            with np.errstate(invalid="ignore"):
                err = np.where(fin, np.abs(got - ref), 0.0)
            bad |= (~inf_ok | (err > rtol * np.abs(np.where(fin, ref, 0.0)) + atol)
                    | np.isnan(got)).any(axis=1)
            report.max_error = max(report.max_error, float(err.max(initial=0.0)))
        if plan.metrics:
            own = None if plan.targets is None else np.isin(src, plan.targets)
            bad |= _metrics_differ(store, plan.metrics, sel, ref, own, rtol, atol)
        report.mismatched_rows += [int(r) for r in sel[bad]]
        if pred_arr is not None:
            pred = read_rows(pred_arr, sel)
            report.bad_predecessors += _check_predecessors(graph, src, ref, pred, rtol, atol)
        report.rows_checked += len(sel)
    if {"histogram", "betweenness"} & set(plan.metrics):
        batches = [int(b) for b in np.flatnonzero(done) if int(b) not in report.damaged]
        if not all_rows and batches:    # one whole batch, drawn as the rows are
            batches = [int(np.random.default_rng(seed).choice(batches))]
        if "histogram" in plan.metrics:
            report.histogram_batches = [b for b in batches if _histogram_differs(
                store, plan, b, csr, method, rtol, atol)]
        if "betweenness" in plan.metrics:
            report.betweenness_checked = batches
            report.betweenness_batches = [b for b in batches if _dependencies_differ(
                store, plan, graph, b)]
    return report


def _dependencies_differ(store, plan, graph, batch) -> bool:
    """Whether batch ``batch``'s stored dependencies are not those of NetworkX's own
    Brandes on every core (:mod:`mgapsp.cpu_sssp.brandes`), to 1e-9 relative: its sums
    are added in another order."""
    start, stop = plan.rows(batch)
    brandes = compiled("mgapsp.cpu_sssp.brandes")
    want, _ = brandes.betweenness_rows(graph.indptr, graph.indices, graph.weights,
                                       plan.sources[start:stop], parts=4 * threads())
    got = store.array("betweenness")[batch]
    return not np.allclose(got, want, rtol=1e-9, atol=1e-9 * max(1.0, want.max()))


def _metrics_differ(store, names, sel, ref, own, rtol, atol) -> np.ndarray:
    """Rows whose stored metrics are not those of SciPy's rows ``ref`` (``own``: whether
    each row's source is among the targets, as :func:`metric_values` takes it)."""
    want = metric_values(row_reductions(ref), ref.shape[1], own)
    bad = np.zeros(len(sel), dtype=bool)
    for name in names:
        if name in PER_BATCH:       # a batch's, not a row's
            continue
        got = store.array(name).get_orthogonal_selection((sel,)).astype(np.float64)
        w = np.asarray(want[name], dtype=np.float64)
        if name == "reachable":
            bad |= got != w
            continue
        # distances' tolerance (a sum's: times the terms); ratios: relative only
        slack = {"distance_sum": atol * ref.shape[1], "eccentricity": atol}.get(name, 1e-12)
        bad |= np.isnan(got) | (np.abs(got - w) > rtol * np.abs(w) + slack)
    return bad


def _histogram_differs(store, plan, batch, csr, method, rtol, atol) -> bool:
    """Whether batch ``batch``'s stored histogram is not that of SciPy's rows: equal
    counts, but for distances within the tolerance of a bin's edge (computed in
    another order, they may fall on its other side)."""
    start, stop = plan.rows(batch)
    src = plan.sources[start:stop]
    ref = csgraph.shortest_path(csr, method=method, directed=True, indices=src)
    own = len(src)
    if plan.targets is not None:
        ref = ref[:, plan.targets]
        own = int(np.isin(src, plan.targets).sum())
    want = histogram_counts(ref, self_pairs=own).astype(np.int64)
    got = store.array("histogram")[batch].astype(np.int64)
    values = ref[np.isfinite(ref)]
    slack = rtol * np.abs(values) + atol
    edge = np.count_nonzero((histogram_bin_of(values - slack) != histogram_bin_of(values))
                            | (histogram_bin_of(values + slack) != histogram_bin_of(values)))
    return got.sum() != want.sum() or int(np.abs(got - want).sum()) > 2 * edge


def _check_predecessors(graph, sources, dist, pred, rtol, atol) -> int:
    rows, cols = np.nonzero(pred >= 0)
    p = pred[rows, cols]
    w = graph.edge_weights(p, cols)
    with np.errstate(invalid="ignore"):
        lhs = dist[rows, p] + w
    rhs = dist[rows, cols]
    bad = np.isnan(w) | (np.abs(lhs - rhs) > rtol * np.abs(rhs) + atol)
    # -1 exactly at the source and at unreachable targets.
    expect_none = np.isinf(dist)
    expect_none[np.arange(len(sources)), sources] = True
    none_bad = (pred < 0) != expect_none
    return int(bad.sum() + none_bad.sum())
