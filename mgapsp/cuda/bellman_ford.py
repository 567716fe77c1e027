"""Batched Bellman-Ford on the GPU (H-BF style frontier rounds), its negative-cycle
checks and Johnson potentials.  Native failures surface as CuPy exceptions; the
graph-level outcomes of a run (a negative cycle, a float32 rounding artefact) are
translated here into :mod:`mgapsp.errors`."""

from __future__ import annotations

import math

import numpy as np

from ..errors import NegativeCycleError, UnsupportedError
from ..graph import Graph
from .device import DeviceGraph, as_dtype
from .frontier import (BFOptions, State, graph_rows, batch_sources, chunking, ordered_to_float,
                       state_mode)
from .loader import BLOCK_THREADS, grid_blocks, cupy_module, get_kernel, persistent_grid, sm_count

#: every kernel this module launches from KERNEL_FILE (``extern "C" __global__`` there)
KERNEL_NAMES = (
    ("bf_compact",)
    + tuple(f"bf_{kind}_m{mode}" for mode in range(4)
            for kind in ("relax", "init", "pull", "unpack"))
    + tuple(f"bf_relax_m{mode}_full" for mode in range(4))
)
#: first round after which a batch with negative weights looks for a predecessor
#: cycle; then again after twice as many rounds, and so on (and always at round n)
FIRST_CYCLE_CHECK = 32
#: device memory the predecessor-cycle check may use for its pointer jumping
CHECK_BYTES = 256 * 2**20
#: most rounds launched back to back before the host looks at the device counters
MAX_ROUND_GROUP = 32
#: tuning switches (measured in bench/NOTES.md): read a target's distance before
#: its atomicMin, and order a batch's sources by vertex id, so that the 32 sources of
#: a chunk tend to be near each other and their frontiers overlap
PREREAD = True
SORT_SOURCES = True
#: read d(u, s) in the same step as the lane mask (one dependent load less per item)
EAGER_LOADS = True

# relax_round / bf_compact flags and counter words (as #defined in bellman_ford.cu)
_F_SWEEP, _F_PRODUCE, _F_PUSH, _F_DIRECT, _F_VWARP, _F_EXIT_UNCHANGED = 1, 2, 4, 8, 16, 32
_F_PREREAD, _F_EAGER = 64, 128
_C_DEGREES, _C_IF_OVERFLOW = 1, 2
_CTR_SLOT, _CTR_PUSHED, _CTR_QUEUED, _CTR_DEGREES, _CTR_CHANGED, _CTR_OVERFLOW = 8, 0, 1, 2, 3, 4
_CTR_ROUNDS, _CTR_SCANNED, _CTR_WORDS = 24, 25, 32


# -- negative cycles -------------------------------------------------------------------
def cycle_weight(graph: Graph, cycle) -> float:
    """Weight of ``cycle`` (internal indices, closed from last to first), from the
    graph's float64 weights (the lightest edge between consecutive vertices); NaN when
    an edge is missing.  Summed exactly (``math.fsum``), so its sign is right."""
    cyc = [int(v) for v in cycle]
    terms = []
    for a, b in zip(cyc, cyc[1:] + cyc[:1]):
        beg, end = int(graph.indptr[a]), int(graph.indptr[a + 1])
        row = graph.indices[beg:end]
        lo = int(np.searchsorted(row, b, side="left"))
        hi = int(np.searchsorted(row, b, side="right"))
        if lo == hi:
            return math.nan
        terms.append(float(graph.weights[beg + lo:beg + hi].min()))
    return math.fsum(terms)


def _extract_cycle(pred: np.ndarray, x: int) -> list[int] | None:
    """The predecessor cycle through ``x``, in edge order (pred[c[i+1]] == c[i])."""
    n = len(pred)
    cyc = [int(x)]
    y = int(pred[x])
    while y != x:
        if y < 0 or len(cyc) > n:
            return None
        cyc.append(y)
        y = int(pred[y])
    cyc.reverse()
    return cyc


def _pred_cycle_vertex(P) -> tuple[int, int] | None:
    """A vertex on a cycle of the predecessor graphs ``P`` (n, C) int32 (-1 = none),
    as (vertex, column), or None when every column's graph is a forest.

    Pointer jumping: after 2**k >= n steps a walk that never meets a root is on a cycle.
    """
    cupy = cupy_module()
    n, C = P.shape
    Q = cupy.empty((n + 1, C), dtype=cupy.int32)
    Q[:n] = cupy.where(P < 0, np.int32(n), P)
    Q[n] = n
    steps = 1
    while steps < n + 1:
        Q = cupy.take_along_axis(Q, Q, axis=0)
        steps *= 2
    bad = (Q[:n] != n).ravel()
    if not bool(bad.any()):
        return None
    v, c = divmod(int(cupy.flatnonzero(bad)[0]), C)
    return int(Q[v, c]), c


def _find_negative_cycle(state: State, cols: np.ndarray, *, final: bool, rounds: int) -> None:
    """Look for a predecessor cycle in columns ``cols``; raise NegativeCycleError for a
    negative one.  ``final`` (still improving after n rounds): one must exist."""
    cupy = state.cupy
    graph = state.g.graph
    n = state.n
    per_chunk = max(1, CHECK_BYTES // (12 * (n + 1)))
    seen = None
    for start in range(0, len(cols), per_chunk):
        chunk = cols[start:start + per_chunk]
        found = _pred_cycle_vertex(state.pred_columns(cupy.asarray(chunk)))
        if found is None:
            continue
        x, c = found
        cycle = _extract_cycle(state.pred_column_host(int(chunk[c])), x)
        if cycle is None:
            continue
        weight = cycle_weight(graph, cycle)
        if weight < 0:
            raise NegativeCycleError(graph.vertex_ids[np.asarray(cycle)], weight)
        seen = weight
    if not final:
        return
    if state.mode == 1 and seen is not None:
        raise UnsupportedError(
            f"with its weights rounded to float32, graph {graph.name!r} has a "
            f"negative cycle that its float64 weights do not have (float64 weight "
            f"{seen:g}); use dtype float64"
        )
    raise RuntimeError(  # an internal invariant, not bad input
        f"Bellman-Ford still improving after {rounds} rounds ({n} vertices), but no "
        f"negative predecessor cycle was found (dtype {state.dtype}, {state.B} sources)"
    )


# -- Bellman-Ford --------------------------------------------------------------------------
class BFRun:
    """One batched Bellman-Ford run: state, frontier and the round loop."""

    def __init__(self, d_graph: DeviceGraph, sources: np.ndarray | None, B: int, *,
                 seed_all: bool, track: bool, options: BFOptions):
        cupy = cupy_module()
        self.cupy = cupy
        self.opt = options
        self.g = d_graph
        self.n = n = d_graph.n
        self.B = B
        self.track = track
        mode = state_mode(d_graph.dtype, track)
        self.rows = graph_rows(d_graph, options.classify)
        G, C, _Bp = chunking(B)
        self.items = n * C
        self.frontier = options.frontier
        if self.frontier:
            self.masks = [cupy.zeros(self.items, dtype=cupy.uint32) for _ in range(2)]
            # dedup off: room for duplicates; an overflow falls back to compaction
            self.qcap = self.items if options.dedup else 4 * self.items
            self.queues = [cupy.empty(max(1, self.qcap), dtype=cupy.uint32) for _ in range(2)]
            masks0, strides = self.masks[0], (C, 1)
        else:
            dummy = cupy.zeros(1, dtype=cupy.uint32)
            self.masks = [dummy, dummy]
            self.qcap = 0
            self.queues = [cupy.zeros(1, dtype=cupy.uint32)] * 2
            masks0, strides = None, (0, 0)
        self.state = State(d_graph, sources, B, mode=mode, seed_all=seed_all,
                           masks=masks0, mask_strides=strides)
        self.ctr = cupy.zeros(_CTR_WORDS, dtype=cupy.uint64)
        self.full = G == 32
        self.relax_fn = get_kernel(f"bf_relax_m{mode}" + ("_full" if self.full else ""))
        self.relax_grid = persistent_grid(self.relax_fn)
        self.compact_fn = get_kernel("bf_compact")
        self.compact_grid = min(grid_blocks(self.items, 256 * 16), 8 * sm_count())
        self.rounds = 0        # rounds launched
        if self.frontier:
            # the sources' items, compacted: round 0's queue (marked as a compacted
            # queue also when dedup is off, by the overflow word of slot 0)
            self.ctr[_CTR_OVERFLOW] = 1
            self._compact(-1, if_overflow=False)
        else:
            self.ctr[_CTR_CHANGED] = 1             # slot 0: "round -1 changed something"

    # launches
    def _relax(self, r: int, *, sweep: bool, produce: bool, exit_unchanged: bool) -> None:
        st, rows, opt = self.state, self.rows, self.opt
        flags = 0
        if sweep:
            flags |= _F_SWEEP
        if produce:
            flags |= _F_PRODUCE
        if produce and not opt.dedup:
            flags |= _F_PUSH
        if rows.classified:     # the kernel writes directly only where items are unique
            flags |= _F_DIRECT
        if opt.virtual_warp:
            flags |= _F_VWARP
        if exit_unchanged:
            flags |= _F_EXIT_UNCHANGED
        if PREREAD:
            flags |= _F_PREREAD
        if EAGER_LOADS:
            flags |= _F_EAGER
        q_in, q_out = self.queues[r % 2], self.queues[(r + 1) % 2]
        m_in, m_out = self.masks[r % 2], self.masks[(r + 1) % 2]
        self.relax_fn(
            (self.relax_grid,), (BLOCK_THREADS,),
            (q_in, q_out, np.uint64(self.qcap), self.ctr, np.int64(r), np.int32(flags),
             np.int64(self.n), np.int64(st.Bp), np.int64(self.B), np.int32(st.G),
             np.int64(st.C), rows.indptr, rows.rend, rows.idx, rows.w, st.st, st.pw,
             m_in, m_out, np.float64(rows.avg_degree)))

    def _compact(self, r: int, *, if_overflow: bool) -> None:
        flags = _C_IF_OVERFLOW if if_overflow else 0
        if not self.full and self.opt.virtual_warp:
            flags |= _C_DEGREES
        rows = self.rows
        self.compact_fn(
            (self.compact_grid,), (256,),
            (self.masks[(r + 1) % 2], np.uint64(self.items), self.queues[(r + 1) % 2],
             self.ctr, np.int64(r), rows.indptr, rows.rend, np.int64(self.state.C),
             np.int32(flags)))

    def _round(self, *, confirm: bool = False) -> None:
        """Launch round ``self.rounds`` (no host wait)."""
        r = self.rounds
        if not self.frontier:
            self._relax(r, sweep=True, produce=False, exit_unchanged=True)
        else:
            self._relax(r, sweep=confirm, produce=True, exit_unchanged=False)
            self._compact(r, if_overflow=not self.opt.dedup)
        self.rounds += 1

    def _pending(self, c: np.ndarray) -> int:
        """Work for round ``self.rounds`` from host-copied counters ``c``."""
        slot = c[_CTR_SLOT * (self.rounds % 3):][:_CTR_SLOT]
        if not self.frontier:
            return int(slot[_CTR_CHANGED])
        if self.opt.dedup or slot[_CTR_OVERFLOW]:
            return int(slot[_CTR_QUEUED])
        return int(slot[_CTR_PUSHED])

    def _improving_columns(self) -> np.ndarray:
        """Columns (batch positions) with a (vertex, source) still to relax."""
        if not self.frontier:
            return np.arange(self.B)
        cupy = self.cupy
        st = self.state
        m = self.masks[self.rounds % 2].reshape(self.n, st.C)
        bits = np.zeros((st.C, st.G), dtype=bool)
        for g in range(st.G):
            bits[:, g] = cupy.asnumpy(((m >> np.uint32(g)) & np.uint32(1)).any(axis=0))
        cols = np.flatnonzero(bits.ravel())
        return cols[cols < self.B]

    def run(self) -> None:
        """Rounds until no (vertex, source) improves; raise on a negative cycle."""
        cupy = self.cupy
        check_cycles = self.g.has_negative_weights and self.track
        next_check = FIRST_CYCLE_CHECK
        group = 1
        confirmations = 0
        while True:
            for _ in range(group):
                self._round()
            c = cupy.asnumpy(self.ctr)
            done_rounds = int(c[_CTR_ROUNDS])
            if self._pending(c) == 0:
                if not self.frontier or self.opt.early_stop:
                    break
                # early stop off: an empty frontier must survive a full sweep
                self._round(confirm=True)
                confirmations += 1
                c = cupy.asnumpy(self.ctr)
                if self._pending(c) == 0:
                    break
                done_rounds = int(c[_CTR_ROUNDS])
            if done_rounds >= self.n:
                # still improving after n rounds: a negative cycle is reachable
                _find_negative_cycle(self.state, self._improving_columns(), final=True,
                                     rounds=done_rounds)
            if check_cycles and done_rounds >= next_check:
                next_check *= 2
                _find_negative_cycle(self.state, self._improving_columns(), final=False,
                                     rounds=done_rounds)
            group = min(2 * group, MAX_ROUND_GROUP)
        self.state.pull(self.rows)
        self.stats = {"rounds": int(c[_CTR_ROUNDS]), "relaxations": int(c[_CTR_SCANNED])}
        if confirmations:
            # sweeps that confirmed an empty frontier; more than one means a round
            # dropped work that a sweep then found (never, unless the kernels are wrong)
            self.stats["confirmations"] = confirmations

    def release(self) -> None:
        """Drop what the unpack does not need (back to CuPy's pool)."""
        self.masks = self.queues = None


# -- public entry points ---------------------------------------------------------------
def check_batch(d_graph: DeviceGraph, sources, dtype, predecessors: bool):
    dt = d_graph.dtype if dtype is None else as_dtype(dtype)
    if dt != d_graph.dtype:
        raise ValueError(f"d_graph holds {d_graph.dtype} weights, dtype={dt} was asked")
    if predecessors and dt != np.float32:
        raise UnsupportedError(
            "the gpu kernels give predecessors in float32 only; use dtype float32 "
            "or the cpu backend"
        )
    return dt, batch_sources(sources, d_graph.n)


def source_order(src: np.ndarray) -> np.ndarray | None:
    """The column order of a batch's sources (``src[order]`` fill the state columns,
    column j answers output row ``order[j]``), or None to keep the given order."""
    if not SORT_SOURCES or len(src) < 2 or bool(np.all(src[:-1] <= src[1:])):
        return None
    return np.argsort(src, kind="stable")


def empty_result(n: int, dt, predecessors: bool):
    cupy = cupy_module()
    return (cupy.empty((0, n), dtype=dt),
            cupy.empty((0, n), dtype=cupy.int32) if predecessors else None,
            {"rounds": 0, "relaxations": 0})


def bellman_ford_batch(d_graph: DeviceGraph, sources, dtype=None, predecessors: bool = False,
                       *, options: BFOptions | None = None):
    """Distances from each of ``sources`` (internal indices) to every vertex.

    Parameters
    ----------
    d_graph : DeviceGraph
        The graph on the current device; its weight dtype is the computing dtype.
    sources : array of int, shape (B,)
    dtype : float32 or float64, optional
        Must equal ``d_graph.dtype`` when given.
    predecessors : bool
        Also return the predecessor block (float32 only).
    options : BFOptions, optional
        Switch optimisations off (for measurements); the default has them all on.

    Returns
    -------
    dist : cupy.ndarray, shape (B, n), ``dtype``; ``inf`` where unreachable
    pred : cupy.ndarray, shape (B, n), int32 (-1 = none), or None
    stats : dict with ``rounds`` and ``relaxations`` (edges scanned)

    Raises
    ------
    NegativeCycleError
        A negative cycle is reachable from some source of the batch (cycle in input ids).
    """
    dt, src = check_batch(d_graph, sources, dtype, predecessors)
    n, B = d_graph.n, len(src)
    if B == 0:
        return empty_result(n, dt, predecessors)
    opt = options if options is not None else BFOptions()
    # predecessors are tracked on request and for the negative-cycle check
    track = predecessors or d_graph.has_negative_weights
    order = source_order(src)
    run = BFRun(d_graph, src if order is None else src[order], B, seed_all=False,
                 track=track, options=opt)
    run.run()
    run.release()
    dist, pred = run.state.unpack(predecessors, row_of_col=order)
    return dist, pred, run.stats


def bellman_ford_potentials(d_graph: DeviceGraph) -> np.ndarray:
    """Johnson potentials ``h`` (host float64, length n): distances from a virtual
    source joined to every vertex by a 0-weight edge, so ``w + h[u] - h[v] >= 0``.

    ``d_graph`` must hold float64 weights.  Raises :class:`NegativeCycleError` when
    the graph has a negative cycle anywhere.
    """
    if d_graph.dtype != np.float64:
        raise ValueError(f"potentials need float64 weights, d_graph holds {d_graph.dtype}")
    n = d_graph.n
    if not d_graph.has_negative_weights:
        return np.zeros(n, dtype=np.float64)
    run = BFRun(d_graph, None, 1, seed_all=True, track=True, options=BFOptions())
    run.run()
    words = run.cupy.asnumpy(run.state.st)
    return ordered_to_float(words, run.state.mode).astype(np.float64, copy=False)
