"""The batched Bellman-Ford's data: the classified CSR (H-BF's edge classes) and
the per-(vertex, source) state.

The batched single-source kernels share one state layout (``kernels/bellman_ford.cu``
describes it): per (vertex, source) a distance word at ``[v * Bp + s]``, the batch
padded to ``Bp = C * G`` (chunks of ``G`` sources, ``G = 32`` for ``B >= 32``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .device import DeviceGraph
from .loader import BLOCK_THREADS, grid_blocks, cupy_module, get_kernel, persistent_grid, sm_count

_TILE, _TILE_ROWS = 32, 8          # unpack block shape (as in the .cu file)
_MAX_BATCH = 65535 * _TILE         # gridDim.y limit of the unpack kernels
#: set by tests: fill outputs with NaN / -2 before unpacking, so that an element
#: the unpack kernel failed to write shows up
_POISON_OUTPUTS = False
_NONE = 0xFFFFFFFF



# -- the classified CSR (edge classification, H-BF) -------------------------------------
@dataclass(eq=False)
class Rows:
    """The CSR as the round kernels read it.

    Row ``u`` relaxes edges ``indptr[u] .. rend[u]`` (``idx``/``w``); with
    classification, the rest of the row (non-negative self-loops, edges into sinks)
    is skipped, bit 31 of ``idx`` marks a target of in-degree 1 (a direct write), and
    ``sinks`` (with in-edges ``rptr``/``rsrc``/``rw``) are finished by ``bf_pull``.
    ``avg_degree``: mean relaxed out-degree of the vertices with any.
    """

    classified: bool
    indptr: Any
    rend: Any
    idx: Any
    w: Any
    sinks: Any
    rptr: Any
    rsrc: Any
    rw: Any
    n_sinks: int
    avg_degree: float
    arrays: tuple = ()


def classify_host(indptr: np.ndarray, indices: np.ndarray, negative_self_loop: np.ndarray):
    """The host half of the edge classification (pure numpy; tested without a GPU).

    Returns ``order`` (edge permutation: each row's relaxed edges first, both parts
    in CSR order), ``rcount`` (relaxed edges per row), ``flagged`` (int32 targets in
    ``order``, bit 31 set for a target of in-degree 1), ``sinks`` (int32, the sinks
    with in-edges), ``rptr`` (int64, len(sinks) + 1) and ``rorder`` (edge ids into
    the sinks, grouped by sink, CSR order within).
    """
    n = len(indptr) - 1
    m = len(indices)
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    dst = indices.astype(np.int64)
    outdeg = np.diff(indptr)
    indeg = np.bincount(dst, minlength=n)
    sink = outdeg == 0
    relax = ((src != dst) | negative_self_loop) & ~sink[dst]
    order = np.lexsort((~relax, src)) if m else np.zeros(0, dtype=np.int64)
    rcount = np.bincount(src[relax], minlength=n).astype(np.int64)
    tgt = dst[order]
    flagged = (tgt | np.where(indeg[tgt] == 1, 1 << 31, 0)).astype(np.uint32).view(np.int32)
    into_sink = np.flatnonzero(sink[dst])
    rorder = into_sink[np.argsort(dst[into_sink], kind="stable")]
    sinks, counts = np.unique(dst[rorder], return_counts=True)
    rptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return order, rcount, flagged, sinks.astype(np.int32), rptr, rorder


def graph_rows(d_graph: DeviceGraph, classify: bool) -> Rows:
    """The (cached) rows of ``d_graph`` for the round kernels."""
    key = ("rows", bool(classify))
    rows = d_graph.derived.get(key)
    if rows is not None:
        return rows
    cupy = cupy_module()
    graph = d_graph.graph
    deg = np.diff(graph.indptr)
    if not classify:
        nz = deg[deg > 0]
        rows = Rows(False, d_graph.indptr, d_graph.indptr[1:], d_graph.indices,
                    d_graph.weights, None, None, None, None, 0,
                    float(nz.mean()) if len(nz) else 1.0)
        d_graph.derived[key] = rows
        return rows
    src = graph.sources_of_edges
    if d_graph.min_weight is not None:      # reweighted: every weight >= 0
        neg_loop = np.zeros(d_graph.m, dtype=bool)
    else:
        neg_loop = (src == graph.indices) & (graph.weights < 0)
    order, rcount, flagged, sinks, rptr, rorder = classify_host(
        graph.indptr, graph.indices, neg_loop)
    d_order = cupy.asarray(order)
    w = d_graph.weights[d_order]
    del d_order
    rend = cupy.asarray(graph.indptr[:-1] + rcount)
    idx = cupy.asarray(flagged)
    nz = rcount[rcount > 0]
    if len(sinks):
        d_sinks = cupy.asarray(sinks)
        d_rptr = cupy.asarray(rptr)
        d_rsrc = cupy.asarray(src[rorder].astype(np.int32))
        d_rw = d_graph.weights[cupy.asarray(rorder)]
    else:
        d_sinks = d_rptr = d_rsrc = d_rw = None
    arrays = tuple(a for a in (rend, idx, w, d_sinks, d_rptr, d_rsrc, d_rw) if a is not None)
    rows = Rows(True, d_graph.indptr, rend, idx, w, d_sinks, d_rptr, d_rsrc, d_rw,
                len(sinks), float(nz.mean()) if len(nz) else 1.0, arrays)
    d_graph.derived[key] = rows
    return rows


# -- the batched state ------------------------------------------------------------------
@dataclass(frozen=True)
class BFOptions:
    """Switches for the Bellman-Ford optimisations (all on by default); every
    combination computes the same distances.

    frontier
        Relax only the (vertex, source) pairs that improved in the last round; off:
        every reached pair relaxes every round.
    dedup
        Queue each vertex (chunk) once per round, by lane masks and a compaction pass;
        off: push one queue entry per successful relaxation (duplicates).
    classify
        Skip non-negative self-loops and edges into sinks (finished by a pull pass
        after the last round); plain stores for targets of in-degree 1.
    virtual_warp
        With fewer than 32 sources, split each source's edge list over several lanes,
        as many as the frontier's mean out-degree (up to the warp).
    early_stop
        Stop when a round leaves the frontier empty; off: only after a full sweep of
        every reached pair changes nothing.
    """

    frontier: bool = True
    dedup: bool = True
    classify: bool = True
    virtual_warp: bool = True
    early_stop: bool = True


def batch_sources(sources, n: int) -> np.ndarray:
    """A batch's sources as int64 vertex indices, checked: within ``0 .. n-1`` and
    at most :data:`_MAX_BATCH` of them (the batched kernels' shared limit)."""
    src = np.asarray(sources, dtype=np.int64).ravel()
    B = len(src)
    if B > _MAX_BATCH:
        raise UnsupportedError(f"a batch of {B} sources exceeds the gpu limit of {_MAX_BATCH}")
    if B and (src.min() < 0 or src.max() >= n):
        bad = int(src[(src < 0) | (src >= n)][0])
        raise ValueError(f"sources must have 0 <= source < N. Got N={n}, source={bad}.")
    return src


def state_mode(dtype, track: bool) -> int:
    """The state word (see bellman_ford.cu): 0 float32, 1 float32 with predecessors,
    2 float64, 3 float64 with predecessors."""
    f32 = np.dtype(dtype) == np.float32
    if f32:
        return 1 if track else 0
    return 3 if track else 2


def chunking(B: int) -> tuple[int, int, int]:
    """(G, C, Bp): sources per chunk, chunks, padded batch."""
    G = 32 if B >= 32 else max(1, B)
    C = -(-B // G)
    return G, C, C * G


def state_bytes(n: int, B: int, mode: int) -> int:
    """Device bytes of the per-(vertex, source) state words of a batch."""
    _G, _C, Bp = chunking(B)
    return n * Bp * (4 if mode == 0 else 8) * (2 if mode == 3 else 1)


class State:
    """Distances (and predecessors) of a batch, ``[v * Bp + s]``; shared by the
    Bellman-Ford and Dijkstra runs, unpacked by ``bf_unpack_m*``."""

    def __init__(self, d_graph: DeviceGraph, sources: np.ndarray | None, B: int, *,
                 mode: int, seed_all: bool = False, masks=None, mask_strides=(0, 0)):
        cupy = cupy_module()
        self.cupy = cupy
        self.g = d_graph
        self.n = n = d_graph.n
        self.B = B
        self.mode = mode
        self.G, self.C, self.Bp = chunking(B)
        if n * self.C >= 2**32:
            raise UnsupportedError(
                f"a batch of {B} sources on {n} vertices has {n * self.C} work items, "
                "more than the kernels index (2**32); use a smaller batch")
        total = n * self.Bp
        self.st = cupy.empty(total, dtype=cupy.uint32 if mode == 0 else cupy.uint64)
        self.pw = cupy.empty(total if mode == 3 else 1, dtype=cupy.uint64)
        if sources is None:
            self.d_src = cupy.zeros(1, dtype=cupy.int64)
        else:
            self.d_src = cupy.asarray(sources, dtype=cupy.int64)
        init = get_kernel(f"bf_init_m{mode}")
        set_masks = masks is not None
        if masks is None:
            masks = cupy.zeros(1, dtype=cupy.uint32)
        init((min(grid_blocks(total), 32 * sm_count()),), (BLOCK_THREADS,),
             (self.st, self.pw, np.int64(n), np.int64(self.Bp), np.int64(B),
              np.int32(self.G), self.d_src, np.int32(1 if seed_all else 0), masks,
              np.int64(mask_strides[0]), np.int64(mask_strides[1]),
              np.int32(1 if set_masks else 0)))

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float32) if self.mode in (0, 1) else np.dtype(np.float64)

    def pull(self, rows: Rows) -> None:
        """Finish the sinks from their in-edges (after the last round)."""
        if not rows.classified or rows.n_sinks == 0:
            return
        fn = get_kernel(f"bf_pull_m{self.mode}")
        items = rows.n_sinks * self.C
        per_warp = 32 // self.G
        warps = -(-items // per_warp)
        grid = min(grid_blocks(warps * 32), persistent_grid(fn))
        fn((grid,), (BLOCK_THREADS,),
           (self.st, self.pw, np.int64(self.Bp), np.int64(self.B), np.int32(self.G),
            np.int64(self.C), rows.sinks, np.int64(rows.n_sinks), rows.rptr, rows.rsrc,
            rows.rw))

    def unpack(self, predecessors: bool, *, row_of_col=None, undo=None):
        """The (B, n) distance block (and predecessors, mode 1), on the device; state
        column j becomes output row ``row_of_col[j]`` (host int array; identity when
        None).  ``undo`` = (h on the device, float64): Johnson's d - h[s] + h[v]."""
        cupy = self.cupy
        n, B = self.n, self.B
        dist = cupy.empty((B, n), dtype=self.dtype)
        pred = cupy.empty((B, n), dtype=cupy.int32) if predecessors else None
        if _POISON_OUTPUTS:
            dist.fill(np.nan)
            if pred is not None:
                pred.fill(-2)
        if row_of_col is None:
            row_of_col = cupy.arange(B, dtype=cupy.int32)
        else:
            row_of_col = cupy.asarray(np.asarray(row_of_col, dtype=np.int32))
        h = undo if undo is not None else cupy.zeros(1, dtype=cupy.float64)
        grid = (grid_blocks(n, _TILE), grid_blocks(B, _TILE))
        get_kernel(f"bf_unpack_m{self.mode}")(
            grid, (_TILE, _TILE_ROWS),
            (self.st, np.int64(n), np.int64(self.Bp), np.int64(B), row_of_col, dist,
             pred if pred is not None else cupy.empty(1, dtype=cupy.int32),
             np.int32(pred is not None), h, self.d_src, np.int32(undo is not None)))
        return dist, pred

    # predecessors, for the negative-cycle check
    def pred_columns(self, cols):
        """Predecessors of columns ``cols`` (cupy int64), (n, len(cols)) int32, -1 none."""
        words = self.pw if self.mode == 3 else self.st
        low = words.view(self.cupy.int32).reshape(self.n, self.Bp, 2)[:, :, 0]
        return low[:, cols]

    def pred_column_host(self, col: int) -> np.ndarray:
        cupy = self.cupy
        return cupy.asnumpy(self.pred_columns(cupy.asarray([col]))[:, 0]).astype(np.int64)


def ordered_to_float(words: np.ndarray, mode: int) -> np.ndarray:
    """Host decoding of state words (modes 2 and 3: ordered float64 bits)."""
    w = np.asarray(words, dtype=np.uint64)
    if mode in (2, 3):
        neg = (w >> np.uint64(63)) == 0
        bits = np.where(neg, ~w, w & np.uint64(0x7FFFFFFFFFFFFFFF))
        return bits.view(np.float64)
    raise ValueError(f"mode {mode}")
