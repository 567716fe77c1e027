"""Batched PHAST on the GPU: a hierarchy (:mod:`mgapsp.hierarchy`) on the device,
the up walks of a batch's sources and its down sweep: its top levels in one product
(:mod:`mgapsp.hierarchy.chains`) where sums are exact, then one launch per level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..hierarchy import Hierarchy
from .frontier import batch_sources
from .loader import BLOCK_THREADS, grid_blocks, cupy_module, get_kernel, persistent_grid

KERNEL_FILE = "phast.cu"
#: every kernel this module launches from KERNEL_FILE
KERNEL_NAMES = (
    *(f"phast_{kind}_{t}" for t in ("f32", "f64")
      for kind in ("up", "down1", "top1", "down_split", "unpack1")),
    *(f"phast_{kind}4_f32" for kind in ("down", "top", "unpack")),
    *(f"phast_{kind}2_f64" for kind in ("down", "top", "unpack")),
    *(f"phast_unpack{v}_i32" for v in (1, 2, 4)))
_TILE, _TILE_ROWS = 32, 8           # unpack block shape (as in the .cu file)
_MAX_GRID_Y = 65535
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
#: most lanes that share one column of a rank's arcs (``PHAST_MAX_LANES``)
MAX_LANES = 32
#: warps, per multiprocessor, a level of the down sweep should keep busy: below that
#: its ranks' arcs are split over lanes (:func:`lanes`)
BUSY_WARPS_PER_SM = 32
#: columns a lane of the down sweep takes (one vector load: 16 bytes), by dtype
_VECTOR = {np.dtype(np.float32): 4, np.dtype(np.float64): 2}
#: fewest sources for which that many columns a lane pay for the padding: a batch is
#: padded to ``32 * columns`` (700 float32 sources sweep 768 columns: 10% more)
_VECTOR_FROM = 512
#: the sweep's top levels go to one product while each holds at most this many ranks
#: (there a launch per level costs more than the product's work, which grows with
#: the ranks times their depth; the one value measured, on NY and two generated
#: road graphs) ...
TOP_LEVEL_RANKS = 64
#: ... and their chains (ranks times levels) stay within this many entries
TOP_ENTRIES = 2**22
_TOP_MOST_LEVELS = 2**11             # the square root of TOP_ENTRIES: levels <= ranks
_TOP_WARP_RANKS, _TOP_THREADS = 4, 256    # PHAST_TOP_RANKS; 8 warps a block
#: shared memory the up walks' buffers may take in a block (past 48 KiB the kernel is
#: allowed more); a tree too deep for one warp's buffer there walks in global scratch
_WALK_SHARED = 96 * 1024


@dataclass(eq=False)
class DeviceHierarchy:
    """A hierarchy's arrays on the current device, weights in ``dtype``."""

    dtype: np.dtype
    n: int
    arcs: int
    rank: Any
    parent: Any
    up_ptr: Any
    up_head: Any
    w_up: Any
    w_down: Any
    last_up: Any
    last_down: Any
    level_ptr: np.ndarray        # host: the sweep's level bounds
    level_ranks: Any
    pre: Any                     # preorder number and subtree size of each rank
    span: Any
    depth: Any
    height: int                  # levels of the tree
    top: int                     # levels swept as one product (0: none)
    top_ranks: Any               # their ranks and chains (mgapsp.hierarchy.chains)
    chain_rank: Any
    chain_dist: Any
    nbytes: int
    level_width: np.ndarray      # host: each level's most upward arcs of one rank


def upload(h: Hierarchy, dtype) -> DeviceHierarchy:
    cupy = cupy_module()
    dt = np.dtype(dtype)
    if dt not in _SUFFIX:
        raise UnsupportedError(f"phast computes in float32 or float64, not {dt}")
    ptr, ranks = h.levels()
    pre, span = h.spans()
    top = h.top(TOP_LEVEL_RANKS, TOP_ENTRIES) if exact_sums(h) else 0
    top_ranks, chain_rank, chain_dist = h.chains(top)
    arrays = dict(pre=cupy.asarray(pre), span=cupy.asarray(span),
                  depth=cupy.asarray(h.depth, dtype=cupy.int32),
                  top_ranks=cupy.asarray(top_ranks, dtype=cupy.int32),
                  chain_rank=cupy.asarray(chain_rank),
                  chain_dist=cupy.asarray(chain_dist.astype(dt)),
                  rank=cupy.asarray(h.rank, dtype=cupy.int32),
                  parent=cupy.asarray(h.parent, dtype=cupy.int32),
                  up_ptr=cupy.asarray(h.up_ptr, dtype=cupy.int64),
                  up_head=cupy.asarray(h.up_head, dtype=cupy.int32),
                  w_up=cupy.asarray(h.w_up.astype(dt)),
                  w_down=cupy.asarray(h.w_down.astype(dt)),
                  last_up=cupy.asarray(h.last_up, dtype=cupy.int32),
                  last_down=cupy.asarray(h.last_down, dtype=cupy.int32),
                  level_ranks=cupy.asarray(ranks, dtype=cupy.int32))
    return DeviceHierarchy(dtype=dt, n=h.n, arcs=h.arcs, level_ptr=ptr, top=top,
                           height=h.height,
                           level_width=_widths(h, ptr, ranks),
                           nbytes=sum(int(a.nbytes) for a in arrays.values()), **arrays)


def exact_sums(h: Hierarchy) -> bool:
    """Whether every finite arc weight is an integer: then the top levels' product
    (whose sums add a path's weights in another order) gives the level sweep's bits
    wherever the dtype holds the sums exactly."""
    w = np.concatenate([h.w_up, h.w_down])
    w = w[np.isfinite(w)]
    return bool(np.array_equal(w, np.round(w)))


def _widths(h: Hierarchy, ptr: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The most upward arcs of a rank in each level (0 for an empty one)."""
    width = np.zeros(len(ptr) - 1, dtype=np.int64)
    full = np.flatnonzero(np.diff(ptr) > 0)
    if len(full):
        width[full] = np.maximum.reduceat(np.diff(h.up_ptr)[ranks], ptr[full])
    return width


def lanes(size: int, width: int, Bp: int, busy_warps: int) -> int:
    """Lanes per column for a level of ``size`` ranks, the widest with ``width``
    upward arcs, in a batch of ``Bp`` columns: doubled while the level's warps
    (``size * Bp / 32`` times the lanes) leave the GPU short of ``busy_warps`` and
    each lane still has four arcs or more of the widest rank."""
    k = 1
    warps = size * (Bp // 32)
    while k < MAX_LANES and warps * k < busy_warps and 8 * k <= width:
        k *= 2
    return k


@dataclass(eq=False)
class Sweep:
    """The down sweep restricted to some targets (RPHAST), on the current device:
    their ranks' levels and the ranks of the output columns."""

    level_ptr: np.ndarray        # host
    level_ranks: Any
    out_rank: Any
    arcs: int                    # upward arcs of the swept ranks
    level_width: np.ndarray      # host, as DeviceHierarchy's


def sweep(h: Hierarchy, targets) -> Sweep:
    """The sweep that gives the distances to ``targets`` (vertex indices) alone."""
    cupy = cupy_module()
    t = np.asarray(targets, dtype=np.int64)
    ptr, ranks = h.levels(t)
    return Sweep(level_ptr=ptr, level_ranks=cupy.asarray(ranks, dtype=cupy.int32),
                 out_rank=cupy.asarray(h.rank[t], dtype=cupy.int32),
                 arcs=int(np.diff(h.up_ptr)[ranks].sum()), level_width=_widths(h, ptr, ranks))


def device_bytes(n: int, arcs: int, dtype) -> int:
    """Device bytes of an uploaded hierarchy."""
    w = np.dtype(dtype).itemsize
    return (n * 4 * 6 + (n + 1) * 8 + arcs * (4 + 2 * w + 2 * 4)
            + min(TOP_ENTRIES, n * n) * (4 + w))


def batch_bytes(n: int, B: int, dtype, predecessors: bool = False) -> int:
    """Device bytes of one batch: the rank-major state (``B`` padded to a multiple of
    ``32 * columns_per_lane``: at most 127 more) and the output block, and as much
    again in int32 for predecessors; and the walks' top entries (a rank and a value
    each, at most one a level of the top); linear in ``B``, as the planner's
    per-source cost is the difference of two batch sizes."""
    w = np.dtype(dtype).itemsize
    walks = min(n, _TOP_MOST_LEVELS) * (4 + w)
    return (B + 127) * (n * 2 * (w + (4 if predecessors else 0)) + walks)


def phast_batch(dh: DeviceHierarchy, sources, restricted: Sweep | None = None,
                predecessors: bool = False):
    """Distances ``(B, n)`` (CuPy, ``dh.dtype``) from ``sources`` (vertex indices);
    ``(B, len(targets))`` with the ``restricted`` sweep of some targets.

    Returns ``(dist, pred, stats)``: ``pred`` (int32 ``(B, n)``, -1 at each source
    and where unreachable) when ``predecessors``, else None (not with ``restricted``:
    a path runs through vertices other than the targets); ``stats`` has ``rounds``
    (levels swept) and ``relaxations`` (arcs times sources in the sweep).
    """
    cupy = cupy_module()
    if predecessors and restricted is not None:
        raise ValueError("predecessors need the full sweep")
    src = batch_sources(sources, dh.n)
    n, B = dh.n, len(src)
    dt = dh.dtype
    ptr, level_ranks, out_rank, arcs, width_of = (
        (dh.level_ptr, dh.level_ranks, dh.rank, dh.arcs, dh.level_width)
        if restricted is None else
        (restricted.level_ptr, restricted.level_ranks, restricted.out_rank, restricted.arcs,
         restricted.level_width))
    width = len(out_rank)
    if B == 0:
        pred = cupy.empty((0, width), dtype=cupy.int32) if predecessors else None
        return cupy.empty((0, width), dtype=dt), pred, {"rounds": 0, "relaxations": 0}
    sfx = _SUFFIX[dt]
    V = columns_per_lane(dt, B)
    Bp = -(-B // (32 * V)) * (32 * V)
    # nothing is filled: a column's rows are written by its up walk (the ranks on it)
    # and by the down sweep (every rank the output reads), which takes inf where the
    # rank is not on the column's walk; padding columns are on no walk
    D = cupy.empty(n * Bp, dtype=dt)
    P = cupy.empty(n * Bp, dtype=cupy.int32) if predecessors else None
    # a null pointer where no predecessors are kept: the kernels skip them
    P_arg = P if predecessors else np.uint64(0)
    src_rank = dh.rank[cupy.asarray(src)]
    col_pre = cupy.full(Bp, -1, dtype=cupy.int32)
    col_pre[:B] = dh.pre[src_rank]
    # the top levels as one product (never for predecessors: it keeps no arcs)
    top = 0 if predecessors else dh.top
    walk_rank = cupy.full(top * Bp, -1, dtype=cupy.int32) if top else np.uint64(0)
    walk_value = cupy.empty(top * Bp, dtype=dt) if top else np.uint64(0)
    _up_walks(dh, src_rank, B, Bp, D, P_arg, top, walk_rank, walk_value)
    if top:
        count = len(dh.top_ranks)
        per_block = _TOP_WARP_RANKS * _TOP_THREADS // 32
        get_kernel(f"phast_top{V}_{sfx}", KERNEL_FILE)(
            (Bp // (32 * V), grid_blocks(count, per_block)), (_TOP_THREADS,),
            (dh.top_ranks, np.int64(count), np.int32(top), dh.chain_rank, dh.chain_dist,
             dh.depth, walk_rank, walk_value, np.int64(Bp), D))
    down = get_kernel(f"phast_down{V}_{sfx}", KERNEL_FILE)
    split = get_kernel(f"phast_down_split_{sfx}", KERNEL_FILE)
    threads = min(BLOCK_THREADS, Bp // V)
    gx = grid_blocks(Bp // V, threads)
    busy = BUSY_WARPS_PER_SM * cupy.cuda.Device().attributes["MultiProcessorCount"]
    for lv in range(top, len(ptr) - 1):          # level 0 too: roots take inf off walks
        lo, hi = int(ptr[lv]), int(ptr[lv + 1])
        if hi <= lo:
            continue
        args = (level_ranks[lo:hi], np.int64(hi - lo), np.int64(Bp), dh.up_ptr,
                dh.up_head, dh.w_down, D, dh.pre, dh.span, col_pre, dh.last_down, P_arg)
        k = lanes(hi - lo, int(width_of[lv]), Bp, busy)
        if k == 1:
            down((gx, min(hi - lo, _MAX_GRID_Y)), (threads,), args)
        else:
            split((Bp // 32, min(hi - lo, _MAX_GRID_Y)), (32, k), args)
    out = cupy.empty((B, width), dtype=dt)
    pred = cupy.empty((B, width), dtype=cupy.int32) if predecessors else None
    if width:
        grid2 = (grid_blocks(width, _TILE), grid_blocks(Bp, _TILE * V))
        args = (np.int64(width), np.int64(Bp), np.int64(B), out_rank)
        get_kernel(f"phast_unpack{V}_{sfx}", KERNEL_FILE)(grid2, (_TILE, _TILE_ROWS),
                                                        (D,) + args + (out,))
        if predecessors:
            get_kernel(f"phast_unpack{V}_i32", KERNEL_FILE)(grid2, (_TILE, _TILE_ROWS),
                                                          (P,) + args + (pred,))
    del D, P
    return out, pred, {"rounds": max(0, len(ptr) - 2), "relaxations": arcs * B}


def walk_bytes(height: int, dtype, predecessors: bool) -> int:
    """Bytes of one warp's walk buffer (``up_walks``): a value, a rank and, with
    predecessors, a predecessor per level, rounded up to 16."""
    per_level = np.dtype(dtype).itemsize + (8 if predecessors else 4)
    return -(-height * per_level // 16) * 16


def _up_walks(dh: DeviceHierarchy, src_rank, B: int, Bp: int, D, P_arg, top: int,
              walk_rank, walk_value) -> None:
    """The batch's up walks, a warp each, their buffers in shared memory (as many
    warps a block as fit in :data:`_WALK_SHARED`) or, for a tree too deep, in global
    scratch of a warp each of a grid that strides over the sources."""
    cupy = cupy_module()
    up = get_kernel(f"phast_up_{_SUFFIX[dh.dtype]}", KERNEL_FILE)
    per_warp = walk_bytes(dh.height, dh.dtype, not isinstance(P_arg, np.uint64))
    warps = min(BLOCK_THREADS // 32, _WALK_SHARED // per_warp)
    common = (src_rank, np.int64(B), np.int64(Bp), dh.parent, dh.up_ptr, dh.up_head,
              dh.w_up, D, dh.last_up, P_arg, dh.depth, np.int32(top), walk_rank,
              walk_value, np.int32(dh.height))
    if warps:
        shared = warps * per_warp
        if shared > 48 * 1024 and up.max_dynamic_shared_size_bytes < shared:
            up.max_dynamic_shared_size_bytes = shared
        up((grid_blocks(B, warps),), (32 * warps,), common + (np.uint64(0),),
           shared_mem=shared)
    else:
        grid = min(persistent_grid(up), grid_blocks(B * 32))
        scratch = cupy.empty(grid * BLOCK_THREADS // 32 * per_warp, dtype=cupy.uint8)
        up((grid,), (BLOCK_THREADS,), common + (scratch,))


def columns_per_lane(dtype, B: int) -> int:
    """Columns of a batch of ``B`` sources each lane of the down sweep takes."""
    return _VECTOR[np.dtype(dtype)] if B >= _VECTOR_FROM else 1
