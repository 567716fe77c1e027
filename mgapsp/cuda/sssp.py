"""Crauser-style parallel Dijkstra and Johnson's reweighting on the device.

Launch code for ``kernels/dijkstra.cu``; the state (distances at ``[v * Bp + s]``),
its initialisation, the sinks' pull and the unpack are Bellman-Ford's (see
:mod:`mgapsp.cuda`), so every batched kernel answers in the same layout.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import BELLMAN_FORD, DIJKSTRA
from ..errors import UnsupportedError
from .bellman_ford import (MAX_ROUND_GROUP, BFRun, check_batch, empty_result,
                           source_order)
from .device import DeviceGraph
from .frontier import BFOptions, State, graph_rows, chunking, state_mode
from .loader import cupy_module, get_kernel, sm_count

__all__ = ["dijkstra_batch", "reweight", "johnson_batch", "DIJKSTRA_FILE", "VARIANTS",
           "DIJKSTRA_KERNELS"]

DIJKSTRA_FILE = "dijkstra.cu"
#: every kernel this module launches from DIJKSTRA_FILE
DIJKSTRA_KERNELS = (("cr_row_min_f32", "cr_row_min_f64")
                    + tuple(f"cr_{k}_m{m}" for m in range(3) for k in ("threshold", "settle")))
VARIANTS = ("general", "economic")
_WARPS = 8          # CR_WARPS in dijkstra.cu
_ROUNDS, _RELAXED = 3, 4


def _min_out_weights(d_graph: DeviceGraph):
    """mo(u), the least relaxed out-weight of each vertex (cached on the device graph)."""
    key = ("mo",)
    mo = d_graph.derived.get(key)
    if mo is None:
        cupy = cupy_module()
        rows = graph_rows(d_graph, True)
        mo = cupy.empty(d_graph.n, dtype=d_graph.dtype)
        f32 = d_graph.dtype == np.float32
        get_kernel("cr_row_min_f32" if f32 else "cr_row_min_f64", DIJKSTRA_FILE)(
            (min(-(-d_graph.n // 256), 32 * sm_count()),), (256,),
            (rows.indptr, rows.rend, rows.w, np.int64(d_graph.n), mo))
        d_graph.derived[key] = mo
    return mo


class _CrauserRun:
    """One batched Crauser run: state, fringe masks, thresholds and the phase loop."""

    def __init__(self, d_graph: DeviceGraph, src: np.ndarray, *, predecessors: bool,
                 variant: str):
        cupy = cupy_module()
        self.cupy = cupy
        self.g = d_graph
        self.n = n = d_graph.n
        self.B = B = len(src)
        self.mode = mode = state_mode(d_graph.dtype, predecessors)
        self.rows = graph_rows(d_graph, True)
        self.econ = variant == "economic"
        self.mo = _min_out_weights(d_graph)
        if self.econ:
            finite = self.mo[cupy.isfinite(self.mo)]
            self.minw = float(finite.min()) if finite.size else 0.0
        else:
            self.minw = 0.0
        G, C, Bp = chunking(B)
        self.fmask = cupy.zeros(n * C, dtype=cupy.uint32)
        self.state = State(d_graph, src, B, mode=mode, masks=self.fmask, mask_strides=(1, n))
        ord_dt = cupy.uint64 if mode == 2 else cupy.uint32
        self.T = [cupy.full(Bp, np.iinfo(ord_dt).max, dtype=ord_dt) for _ in range(2)]
        self.ctr = cupy.zeros(8, dtype=cupy.uint64)
        target = 8 * sm_count()
        tiles = max(1, min(-(-n // 32), target // C))
        self.tile = 32 * -(-n // (32 * tiles))
        self.grid = (C, -(-n // self.tile))
        self.k_threshold = get_kernel(f"cr_threshold_m{mode}", DIJKSTRA_FILE)
        self.k_settle = get_kernel(f"cr_settle_m{mode}", DIJKSTRA_FILE)
        self.dist_scalar = np.float32 if mode in (0, 1) else np.float64
        self.phases = 0

    def _phase(self) -> None:
        r = self.phases
        st, rows = self.state, self.rows
        common = (self.fmask, np.int64(self.n), np.int64(st.Bp), np.int64(self.B),
                  np.int32(st.G))
        self.k_threshold(
            self.grid, (32 * _WARPS,),
            common + (st.st, self.mo, self.dist_scalar(self.minw), np.int32(self.econ),
                      self.T[r % 2], self.ctr, np.int64(r), np.int64(self.tile)))
        self.k_settle(
            self.grid, (32 * _WARPS,),
            common + (st.st, self.T[r % 2], self.T[(r + 1) % 2], self.ctr, np.int64(r),
                      np.int64(self.tile), rows.indptr, rows.rend, rows.idx, rows.w))
        self.phases += 1

    def run(self) -> None:
        cupy = self.cupy
        group = 1
        # every phase settles at least one vertex per source with a fringe; a vertex is
        # settled again only when rounding found it a (smaller) second distance
        limit = 4 * self.n + 64
        while True:
            for _ in range(group):
                self._phase()
            c = cupy.asnumpy(self.ctr)
            if c[(self.phases - 1) % 3] == 0:
                break
            if self.phases > limit:
                raise RuntimeError(  # an internal invariant, not bad input
                    f"Crauser phases did not finish after {self.phases} phases "
                    f"({self.n} vertices, {self.B} sources)")
            group = min(2 * group, MAX_ROUND_GROUP)
        self.state.pull(self.rows)
        self.stats = {"rounds": int(c[_ROUNDS]), "relaxations": int(c[_RELAXED])}


def _check_nonnegative(d_graph: DeviceGraph, what: str) -> None:
    if d_graph.has_negative_weights:
        w = d_graph.min_weight if d_graph.min_weight is not None else d_graph.graph.min_weight
        raise UnsupportedError(
            f"{what} needs non-negative weights, but the graph has weight {w:g}; "
            "use johnson or bellman-ford")


def dijkstra_batch(d_graph: DeviceGraph, sources, dtype=None, predecessors: bool = False,
                   *, variant: str = "general"):
    """Distances from each of ``sources`` by Crauser's parallel Dijkstra.

    Parameters
    ----------
    d_graph : DeviceGraph
        Non-negative weights, on the current device; its dtype is the computing dtype.
    sources : array of int, shape (B,)
    dtype : float32 or float64, optional
        Must equal ``d_graph.dtype`` when given.
    predecessors : bool
        Also return the predecessor block (float32 only).
    variant : {"general", "economic"}
        The settling threshold per source: the least ``d(u) + mo(u)`` over unsettled
        ``u`` (``mo``: least out-weight of ``u``), or the least ``d(u)`` plus the
        graph's least edge weight.

    Returns
    -------
    dist : cupy.ndarray (B, n); pred : cupy.ndarray (B, n) int32 or None;
    stats : dict with ``rounds`` (phases) and ``relaxations`` (edges relaxed)
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}. Got {variant=}.")
    dt, src = check_batch(d_graph, sources, dtype, predecessors)
    _check_nonnegative(d_graph, DIJKSTRA.name)
    if len(src) == 0:
        return empty_result(d_graph.n, dt, predecessors)
    order = source_order(src)
    run = _CrauserRun(d_graph, src if order is None else src[order],
                      predecessors=predecessors, variant=variant)
    run.run()
    run.fmask = run.T = None
    dist, pred = run.state.unpack(predecessors, row_of_col=order)
    return dist, pred, run.stats


def reweight(d_graph: DeviceGraph, potentials) -> DeviceGraph:
    """Johnson's reweighting on the device: ``w + h[u] - h[v]``, computed in float64
    from the graph's own weights, clamped at 0 (rounding), cast to ``d_graph.dtype``.

    ``potentials`` (host float64 or a cupy array, length n) must satisfy
    ``w + h[u] - h[v] >= 0`` up to rounding (see ``bellman_ford_potentials``).
    The result shares the CSR structure with ``d_graph``.
    """
    cupy = cupy_module()
    graph = d_graph.graph
    h = cupy.asarray(potentials, dtype=cupy.float64).ravel()
    if h.shape[0] != d_graph.n:
        raise ValueError(f"potentials must have length N. Got N={d_graph.n}, "
                         f"length={h.shape[0]}.")
    w64 = cupy.asarray(graph.weights, dtype=cupy.float64)
    src = cupy.asarray(graph.sources_of_edges)
    w = w64 + h[src] - h[d_graph.indices]
    del w64, src
    w = cupy.maximum(w, 0.0).astype(d_graph.dtype)
    return DeviceGraph(graph=graph, dtype=d_graph.dtype, indptr=d_graph.indptr,
                       indices=d_graph.indices, weights=w, device=d_graph.device,
                       min_weight=float(w.min()) if w.size else 0.0)


def johnson_batch(d_rw: DeviceGraph, sources, potentials, dtype=None,
                  predecessors: bool = False, *, inner: str = "auto"):
    """Distances in the original graph from the reweighted one (Johnson).

    ``d_rw`` comes from :func:`reweight` (non-negative weights); ``potentials`` (host
    float64 or a cupy array) are the ones it was made with.  ``inner`` picks the
    non-negative kernel: ``"dijkstra"`` (Crauser, general), ``"bellman-ford"``, or
    ``"auto"`` (:func:`prefer_bellman_ford`).  The reweighting is undone on the
    device, in float64, as the block is unpacked: ``d - h[s] + h[v]``.
    """
    if inner not in ("auto", DIJKSTRA.name, BELLMAN_FORD.name):
        raise ValueError(f"inner must be auto, dijkstra or bellman-ford. Got {inner=}.")
    cupy = cupy_module()
    dt, src = check_batch(d_rw, sources, dtype, predecessors)
    _check_nonnegative(d_rw, "johnson's inner kernel")
    if len(src) == 0:
        return empty_result(d_rw.n, dt, predecessors)
    h = cupy.asarray(potentials, dtype=cupy.float64).ravel()
    if inner == "auto":
        inner = BELLMAN_FORD.name if prefer_bellman_ford(d_rw, len(src)) else DIJKSTRA.name
    order = source_order(src)
    col_src = src if order is None else src[order]
    if inner == DIJKSTRA.name:
        run = _CrauserRun(d_rw, col_src, predecessors=predecessors, variant="general")
    else:
        run = BFRun(d_rw, col_src, len(src), seed_all=False, track=predecessors,
                     options=BFOptions())
    run.run()
    dist, pred = run.state.unpack(predecessors, row_of_col=order, undo=h)
    stats = dict(run.stats, inner=inner)
    return dist, pred, stats


def prefer_bellman_ford(d_graph: DeviceGraph, n_sources: int) -> bool:
    """Whether Bellman-Ford beats Crauser's Dijkstra on this non-negative graph.

    On every graph measured so far, yes (bench/NOTES.md): reweighted weights are
    small and uneven, which costs Crauser many phases.
    """
    del d_graph, n_sources
    return True

