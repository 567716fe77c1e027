"""Floyd-Warshall on the device, for dense graphs: blocked, register-tiled, with
integer paths on Hopper's DPX instructions.

The kernels are ``kernels/floyd_warshall.cu`` (its header describes the three phases
and the tiles).  Methods, by storage type of the matrix:

======================  ========  ==============================  ===================
method                  storage   "no path"                       predecessors
======================  ========  ==============================  ===================
``"fp32"``              float32   ``inf``                         yes
``"fp64"``              float64   ``inf``                         yes
``"int32-dpx"``         int32     :data:`INF_I32` (2**30 - 1)     yes
``"int16x2-dpx"``       int16     :data:`INF_I16` (2**14 - 1)     through int32-dpx
======================  ========  ==============================  ===================

``"fp32"`` on a matrix without negative entries runs a variant that folds two pivots
into one DPX 3-way minimum on the floats' bit patterns (same sums, same results).

Integer matrices.  Put the sentinel ``INF_*`` where there is no edge.  A stored value
never exceeds it and a sum of two never overflows.  When every finite distance and
every partial path weight lies within ``±(INF // 2)`` (``(n - 1) * max|w| <= INF // 2``
is enough), an entry ``>= INF // 2 + 1`` after the run means "no path" (an entry
reached from ``INF`` through negative edges can sit a little below ``INF``).  With
non-negative weights, "no path" is exactly ``INF`` and any distance ``< INF`` is exact
if no entry lies in ``[INF - max w, INF)`` (:func:`floyd_warshall` checks this and
falls back to the next method).  ``int16x2-dpx`` packs two adjacent columns into one
32-bit word, so its rows must start at 4-byte boundaries: for odd ``n`` (or any
misaligned or strided input) the matrix is copied into an ``(n, n + 1)`` buffer and
back.

Predecessors.  The blocked phases take the minimum over a whole pivot block at once,
so among equally short paths they would pick per entry, and with zero-weight cycles
two entries of one row could point into each other.  With predecessors the kernels
therefore also carry hop counts and compare (distance, hops) lexicographically: of
equally short paths the one with fewer edges wins, which keeps every row of P a
tree.  After the run P is -1 wherever there is no path (integers: above ``INF // 2``).

One module of about 500 lines: the kernel configurations, the blocked driver and the
methods' fallbacks share their private tables; the slab form is :mod:`.floyd_warshall_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import UnsupportedError
from .bellman_ford import bellman_ford_potentials
from .device import as_dtype, upload_graph
from .loader import cupy_module, get_kernel

if TYPE_CHECKING:  # pragma: no cover
    from .device import DeviceGraph

__all__ = [
    "INF_I32",
    "INF_I16",
    "METHODS",
    "floyd_warshall",
    "floyd_warshall_dense",
    "choose_fw_method",
]

FW_FILE = "floyd_warshall.cu"
#: "no path" in an int32 matrix (also in kernels/floyd_warshall.cu: FW_INF_I32)
INF_I32 = 2**30 - 1
#: "no path" in an int16 matrix (FW_INF_I16)
INF_I16 = 2**14 - 1
METHODS = ("fp32", "fp64", "int32-dpx", "int16x2-dpx")
#: largest weight for which auto tries int16x2 speculatively (non-negative weights,
#: result checked, int32 on failure)
SPECULATE_I16_MAX_W = 1024

#: set by tests: fill the scratch panels with values that would corrupt any result
#: (-inf, -INF) before each pivot block, so that a panel entry the kernels fail to
#: write before reading it shows up
POISON_SCRATCH = False

#: set by bench/fw_bench.py to a list: (kernel, start event, end event) per launch
_TRACE = None

PACK_THREADS = 256
MP_THREADS = 256


@dataclass(frozen=True)
class _Config:
    """One compiled variant; the names must match the FW_* lines of the .cu file."""

    tag: str            # element type in kernel names: f32, f64, i32, i16
    dtype: str          # storage dtype
    word: str           # word dtype (two int16 lanes: uint32)
    epw: int            # elements per word
    B: int              # pivot block
    BM: int             # output tile rows
    BNW: int            # output tile columns, in words
    TM: int
    TNW: int
    KS: int
    stages: int
    pred: bool
    p1_threads: int = 1024
    mp_tag: str = ""    # the min-plus kernel's element type, when not ``tag``

    @property
    def p1(self) -> str:
        return f"fw_p1_{self.tag}_b{self.B}" + ("_p" if self.pred else "")

    @property
    def pack(self) -> str:
        return f"fw_pack_{self.tag}" + ("_p" if self.pred else "")

    @property
    def mp(self) -> str:
        return (f"fw_mp_{self.mp_tag or self.tag}_b{self.B}_{self.BM}x{self.BNW}"
                f"_t{self.TM}x{self.TNW}"
                f"_k{self.KS}s{self.stages}" + ("_p" if self.pred else ""))

    @property
    def word_bytes(self) -> int:
        return np.dtype(self.word).itemsize

    @property
    def p1_smem(self) -> int:
        if self.pred:   # the tile, its P and hop counts (int32 each) in shared memory
            return self.B * self.B * (np.dtype(self.dtype).itemsize + 8)
        # else the tile is in registers; row k and column k pass through shared memory
        return 2 * (self.B // self.epw + self.B) * self.word_bytes

    @property
    def mp_smem(self) -> int:
        per = self.word_bytes + (4 if self.pred else 0)       # + hop counts
        return self.stages * self.KS * (self.BM + self.BNW) * per


def _cfg(tag, dtype, word, epw, B, BM, BNW, TM, TNW, KS=32, stages=3, pred=False,
         p1_threads=1024, mp_tag=""):
    return _Config(tag, dtype, word, epw, B, BM, BNW, TM, TNW, KS, stages, pred,
                   p1_threads, mp_tag)


#: the variant each method runs, without and with predecessors
CONFIGS = {
    ("fp32", False): _cfg("f32", "float32", "float32", 1, 128, 128, 128, 8, 8),
    ("fp32", True): _cfg("f32", "float32", "float32", 1, 128, 64, 64, 4, 4, pred=True),
    ("fp64", False): _cfg("f64", "float64", "float64", 1, 128, 64, 64, 4, 4, p1_threads=512),
    ("fp64", True): _cfg("f64", "float64", "float64", 1, 64, 64, 64, 4, 4, KS=16, pred=True),
    ("int32-dpx", False): _cfg("i32", "int32", "int32", 1, 128, 128, 128, 8, 8),
    ("int32-dpx", True): _cfg("i32", "int32", "int32", 1, 128, 64, 64, 4, 4, pred=True),
    ("int16x2-dpx", False): _cfg("i16", "int16", "uint32", 2, 256, 128, 128, 8, 8,
                                 p1_threads=512),
}
#: "fp32" when every entry of D is >= 0: two pivots per DPX 3-way min (VIMNMX3)
FP32_NONNEG = _cfg("f32", "float32", "float32", 1, 128, 128, 128, 8, 8, mp_tag="f32nn")
#: other compiled variants, for bench/fw_bench.py
_VARIANTS = {
    "fp32-k16s4": _cfg("f32", "float32", "float32", 1, 128, 128, 128, 8, 8, KS=16, stages=4),
    "int16x2-b128": _cfg("i16", "int16", "uint32", 2, 128, 128, 64, 8, 4),
}
_DTYPE_METHOD = {"float32": "fp32", "float64": "fp64", "int32": "int32-dpx",
                 "int16": "int16x2-dpx"}
_METHOD_DTYPE = {m: d for d, m in _DTYPE_METHOD.items()}


def device_ptr(a) -> np.uint64:
    return np.uint64(a.data.ptr)


def get_launcher(name: str, smem: int):
    kern = get_kernel(name, FW_FILE)
    if smem > 48 * 1024 and kern.max_dynamic_shared_size_bytes < smem:
        kern.max_dynamic_shared_size_bytes = smem
    return kern


def poison_word(word: str):
    """A scratch value that corrupts any result it leaks into (POISON_SCRATCH)."""
    return {"float32": -np.inf, "float64": -np.inf, "int32": -INF_I32,
            "uint32": (((-INF_I16) & 0xFFFF) << 16) | ((-INF_I16) & 0xFFFF)}[word]


def _run_blocked(D, P, H, cfg: _Config) -> dict:
    """In-place blocked FW on ``D`` (a view whose rows are contiguous, ``cfg.dtype``,
    rows 4-byte aligned for int16) and, with predecessors, ``P`` and the hop counts
    ``H`` (int32 views with contiguous rows; else both None)."""
    cupy = cupy_module()
    n = int(D.shape[0])
    item = D.itemsize
    lda = D.strides[0] // item
    ldp = P.strides[0] // 4 if P is not None else 0
    ldh = H.strides[0] // 4 if H is not None else 0
    B, epw = cfg.B, cfg.epw
    nblk = -(-n // B)
    Mpad = nblk * B
    nw = -(-n // epw)
    rwp = -(-nw // 4) * 4
    stats = {"method": None, "n": n, "updates": n**3, "pivot_blocks": nblk,
             "tiles": {"pivot_block": B, "tile": (cfg.BM, cfg.BNW * epw),
                       "thread_tile": (cfg.TM, cfg.TNW * epw), "k_slab": cfg.KS,
                       "stages": cfg.stages, "kernel": cfg.mp}}
    if n == 0:
        return stats
    p1 = get_launcher(cfg.p1, cfg.p1_smem)
    null = np.uint64(0)
    common = (device_ptr(D), np.int64(lda), device_ptr(P) if P is not None else null, np.int64(ldp),
              device_ptr(H) if H is not None else null, np.int64(ldh), np.int32(n))
    if nblk == 1:
        p1((1,), (cfg.p1_threads,), common + (np.int32(0),), shared_mem=cfg.p1_smem)
        return stats
    pack = get_kernel(cfg.pack, FW_FILE)
    mp = get_launcher(cfg.mp, cfg.mp_smem)
    pred = P is not None
    At = cupy.empty((B, Mpad), dtype=cfg.word)
    Rw = cupy.empty((B, rwp), dtype=cfg.word)
    Prw = cupy.empty((B, n) if pred else (1,), dtype=cupy.int32)
    AtH = cupy.empty((B, Mpad) if pred else (1,), dtype=cupy.int32)
    RwH = cupy.empty((B, n) if pred else (1,), dtype=cupy.int32)
    n_at = (Mpad // 32) * (B // 32) * (2 if pred else 1)
    n_snap = B * nw + (2 * B * n if pred else 0)
    pack_grid = (n_at + -(-n_snap // (4 * PACK_THREADS)),)
    ntj = -(-nw // cfg.BNW)
    nti = -(-n // cfg.BM)
    p2_grid = ((B // cfg.BM) * ntj + nti * (B // (cfg.BNW * epw)),)
    p3_grid = (ntj, nti)
    mp_tail = (device_ptr(At), np.int64(Mpad), device_ptr(Rw), np.int64(rwp), device_ptr(Prw), np.int64(n),
               device_ptr(AtH), device_ptr(RwH), np.int32(0), np.int32(n))
    ldw = lda // epw
    poison = poison_word(cfg.word)
    for kb in range(nblk):
        k0 = np.int32(kb * B)
        if POISON_SCRATCH:
            At.fill(poison)
            Rw.fill(poison)
            Prw.fill(-2)
            AtH.fill(-(2**30))
            RwH.fill(-(2**30))
        # the B operand of the column panel and of phase 3: rows K of D
        args = common + (k0,) + mp_tail + (
            np.uint64(D.data.ptr + int(k0) * ldw * cfg.word_bytes), np.int64(ldw))
        launches = (
            ("phase1", p1, (1,), cfg.p1_threads, common + (k0,), cfg.p1_smem),
            ("pack", pack, pack_grid, PACK_THREADS,
             common + (np.int32(0), np.int32(n), k0, np.int32(B), np.int32(Mpad), device_ptr(At),
                       np.int64(Mpad), device_ptr(Rw), np.int64(rwp), device_ptr(Prw), np.int64(n),
                       device_ptr(AtH), device_ptr(RwH)), 0),
            ("phase2", mp, p2_grid, MP_THREADS, args + (np.int32(2),), cfg.mp_smem),
            ("phase3", mp, p3_grid, MP_THREADS, args + (np.int32(3),), cfg.mp_smem),
        )
        for what, kern, grid, threads, kargs, smem in launches:
            if _TRACE is not None:
                ev = (cupy.cuda.Event(), cupy.cuda.Event())
                ev[0].record()
            kern(grid, (threads,), kargs, shared_mem=smem)
            if _TRACE is not None:
                ev[1].record()
                _TRACE.append((what,) + ev)
    del At, Rw, Prw, AtH, RwH
    return stats


def _rows_ok(a, align: int) -> bool:
    """Rows contiguous, stride a whole number of elements, base aligned."""
    return (a.ndim == 2 and a.strides[1] == a.itemsize and a.strides[0] % a.itemsize == 0
            and a.strides[0] >= a.shape[1] * a.itemsize and a.data.ptr % align == 0)


def floyd_warshall_dense(D, *, method: str = "auto", P=None) -> dict:
    """Floyd-Warshall in place on the square device matrix ``D``.

    Parameters
    ----------
    D : cupy.ndarray, shape (n, n)
        float32 (``"fp32"``), float64 (``"fp64"``), int32 (``"int32-dpx"``) or int16
        (``"int16x2-dpx"``); ``D[i, j]`` the weight of edge i -> j, ``D[i, i]`` usually
        0, "no path" ``inf`` or the sentinel :data:`INF_I32` / :data:`INF_I16` (module
        docstring: what the integer results mean).  Rows must be contiguous; a strided
        or, for int16, odd-width matrix is copied and copied back.
    method : {"auto", "fp32", "fp64", "int32-dpx", "int16x2-dpx"}
        ``"auto"`` picks the method of ``D``'s dtype.
    P : cupy.ndarray of int32, shape (n, n), optional
        Predecessors, updated alongside: on input ``P[i, j] = i`` where ``D[i, j]`` is
        an edge (``P[i, i] = i`` for a negative self-loop) and -1 elsewhere; on output
        ``P[i, j]`` is the vertex before ``j`` on a shortest path from ``i`` with the
        fewest edges, -1 where there is no path and on the diagonal.  With
        ``"int16x2-dpx"`` the run goes through an int32 copy (``int32-dpx``; stats
        say so).

    Returns
    -------
    dict
        ``method`` (what ran), ``n``, ``updates`` (n**3), ``pivot_blocks``, ``tiles``.
    """
    cupy = cupy_module()
    if not isinstance(D, cupy.ndarray) or D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"D must be a square 2-D cupy array. Got "
                         f"{type(D).__name__} of shape {getattr(D, 'shape', None)}.")
    dname = D.dtype.name
    if method == "auto":
        if dname not in _DTYPE_METHOD:
            raise ValueError(f"D must be float32, float64, int32 or int16. Got {dname}.")
        method = _DTYPE_METHOD[dname]
    if method not in METHODS:
        raise ValueError(f"method must be 'auto' or one of {METHODS}. Got {method!r}.")
    if dname != _METHOD_DTYPE[method]:
        raise ValueError(f"method {method!r} needs a {_METHOD_DTYPE[method]} matrix. "
                         f"Got {dname}.")
    if P is not None:
        if not isinstance(P, cupy.ndarray) or P.shape != D.shape or P.dtype != np.int32:
            raise ValueError(f"P must be an int32 cupy array of shape {D.shape}. Got "
                             f"{getattr(P, 'dtype', type(P).__name__)} "
                             f"{getattr(P, 'shape', '')}.")
        if method == "int16x2-dpx":
            D32 = D.astype(cupy.int32)
            D32[D32 >= INF_I16] = INF_I32
            stats = floyd_warshall_dense(D32, method="int32-dpx", P=P)
            D[...] = cupy.where(D32 > INF_I32 // 2, INF_I16,
                                cupy.clip(D32, -INF_I16, INF_I16)).astype(cupy.int16)
            return stats
    cfg = CONFIGS[(method, P is not None)]
    if method == "fp32" and P is None and D.size and bool(D.min() >= 0):
        cfg = FP32_NONNEG
    return _dense(D, P, cfg, method)


def _dense(D, P, cfg: _Config, method: str) -> dict:
    """floyd_warshall_dense with a given variant (bench/fw_bench.py tries several)."""
    cupy = cupy_module()
    n = D.shape[0]
    if cfg.dtype != D.dtype.name or cfg.pred != (P is not None):
        raise ValueError(f"variant {cfg.mp} does not fit a {D.dtype.name} matrix "
                         f"{'with' if P is not None else 'without'} predecessors")
    align = 4 if cfg.epw == 2 else D.itemsize
    work = D
    if not _rows_ok(D, align) or (cfg.epw == 2 and (D.strides[0] // D.itemsize) % 2):
        width = n + (n % 2 if cfg.epw == 2 else 0)
        work = cupy.empty((n, width), dtype=D.dtype)[:, :n]
        work[...] = D
    pwork = H = None
    if P is not None:
        pwork = P if _rows_ok(P, 4) else cupy.ascontiguousarray(P)
        # hop counts: 1 for an edge (P >= 0 off the diagonal, or a negative self-loop),
        # 0 for the empty path; ties in distance go to the path with fewer edges
        H = (pwork >= 0).astype(cupy.int32)
    stats = _run_blocked(work, pwork, H, cfg)
    del H
    stats["method"] = method
    if work is not D:
        D[...] = work
    if pwork is not None:
        # no path, no predecessor (integer "no path": module docstring)
        if cfg.dtype in ("int32", "int16"):
            inf = INF_I32 if cfg.dtype == "int32" else INF_I16
            pwork[work > inf // 2] = -1
        else:
            pwork[cupy.isinf(work)] = -1
        if pwork is not P:
            P[...] = pwork
    return stats


# -- choosing a method ------------------------------------------------------------------
def fw_plan(dtype, weights, n: int, predecessors: bool = False) -> list[tuple[str, bool]]:
    """Methods to try in order, each with ``exact``: True when its bound holds a
    priori, False when the result must be checked (non-negative weights only).  The
    last entry is always exact."""
    dt = as_dtype(dtype)
    fallback = ("fp32" if dt == np.float32 else "fp64", True)
    w = np.asarray(weights, dtype=np.float64)
    if w.size and not (np.isfinite(w).all() and (w == np.round(w)).all()):
        return [fallback]
    wmax = float(np.abs(w).max()) if w.size else 0.0
    nonneg = not w.size or float(w.min()) >= 0
    bound = max(n - 1, 0) * wmax
    plan: list[tuple[str, bool]] = []
    if not predecessors:
        if bound <= INF_I16 // 2:
            return [("int16x2-dpx", True)]
        if nonneg and wmax <= SPECULATE_I16_MAX_W:
            plan.append(("int16x2-dpx", False))
    if bound <= INF_I32 // 2:
        return plan + [("int32-dpx", True)]
    if nonneg and wmax <= INF_I32 // 4 and not predecessors:
        plan.append(("int32-dpx", False))
    return plan + [fallback]


def choose_fw_method(dtype, weights, n: int) -> str:
    """The method :func:`floyd_warshall` tries first for a graph of ``n`` vertices
    with edge ``weights`` (host array), computing in ``dtype`` (float32 / float64).

    Integer weights (all whole numbers) run on the DPX integer paths: ``int16x2-dpx``
    when ``(n - 1) * max|w| <= INF_I16 // 2``, or speculatively when the weights are
    non-negative and at most :data:`SPECULATE_I16_MAX_W` (the result is checked and,
    if any distance may have reached int16's range, computed again in int32);
    ``int32-dpx`` likewise with int32's bounds; otherwise ``"fp32"`` / ``"fp64"``.
    (With predecessors :func:`floyd_warshall` skips int16x2 and takes int32 only
    with its a-priori bound.)
    """
    return fw_plan(dtype, weights, n)[0][0]


# -- the graph-level entry point ------------------------------------------------------------
def _dense_int(d_graph, rows, n, itype, inf):
    cupy = cupy_module()
    width = n + (n % 2 if itype == np.int16 else 0)
    D = cupy.full((n, width), inf, dtype=itype)[:, :n]
    w = np.asarray(d_graph.graph.weights, dtype=np.float64)
    D[rows, d_graph.indices] = cupy.asarray(np.rint(w).astype(itype))
    return D


def _grid(total: int) -> tuple[int]:
    return (max(1, min(-(-total // PACK_THREADS), 132 * 32)),)


def to_float(D, tag: str, dt, thr: int):
    """The integer result ``D`` (rows x n, rows contiguous) as a new contiguous ``dt``
    matrix, entries above ``thr`` as inf (one pass; no temporaries)."""
    cupy = cupy_module()
    rows, n = D.shape
    out = cupy.empty((rows, n), dtype=dt)
    f = "f32" if dt == np.float32 else "f64"
    get_kernel(f"fw_{tag}_to_{f}", FW_FILE)(
        _grid(rows * n), (PACK_THREADS,),
        (device_ptr(D), np.int64(D.strides[0] // D.itemsize), device_ptr(out), np.int64(rows),
         np.int64(n), np.int32(thr)))
    return out


def count_range(D, tag: str, lo: int, hi: int) -> int:
    """How many entries of the integer matrix ``D`` (rows x n) lie in [lo, hi)."""
    cupy = cupy_module()
    rows, n = D.shape
    count = cupy.zeros(1, dtype=cupy.uint64)
    get_kernel(f"fw_count_range_{tag}", FW_FILE)(
        _grid(rows * n), (PACK_THREADS,),
        (device_ptr(D), np.int64(D.strides[0] // D.itemsize), np.int64(rows), np.int64(n),
         np.int32(lo), np.int32(hi), count))
    return int(count.get()[0])


def floyd_warshall(d_graph: DeviceGraph, dtype=None, predecessors: bool = False):
    """The dense n x n distance matrix by blocked Floyd-Warshall.

    The method is chosen by :func:`choose_fw_method`: integer weights run exactly on
    the DPX integer kernels (the result converted to ``dtype``), others in ``dtype``.

    Returns ``(dist, pred or None, stats)``: cupy arrays of shape (n, n), ``dtype``
    (``inf`` where there is no path) and int32 (-1 = none; ``pred[i, j]`` is the vertex
    before ``j`` on a shortest path from ``i``); ``stats`` has ``method``, ``attempts``
    (methods run, a speculative one that failed its check included), ``rounds`` (n)
    and ``relaxations`` (n**3).  Raises :class:`NegativeCycleError` (found by
    Bellman-Ford in float64) on a negative cycle.
    """
    cupy = cupy_module()
    dt = d_graph.dtype if dtype is None else as_dtype(dtype)
    if dt != d_graph.dtype:
        raise ValueError(f"d_graph holds {d_graph.dtype} weights, dtype={dt} was asked")
    graph = d_graph.graph
    n = d_graph.n
    plan = fw_plan(dt, graph.weights, n, predecessors)
    rows = cupy.asarray(graph.sources_of_edges)
    diag = cupy.arange(n)
    wmax = float(np.abs(graph.weights).max()) if graph.m else 0.0
    attempts = []
    for method, exact in plan:
        attempts.append(method)
        P = None
        if predecessors:
            P = cupy.full((n, n), -1, dtype=cupy.int32)
            P[rows, d_graph.indices] = rows
        if method in ("int32-dpx", "int16x2-dpx"):
            itype, inf = ((np.int32, INF_I32) if method == "int32-dpx"
                          else (np.int16, INF_I16))
            D = _dense_int(d_graph, rows, n, itype, inf)
        else:
            D = cupy.full((n, n), np.inf, dtype=dt)
            D[rows, d_graph.indices] = d_graph.weights
        D[diag, diag] = cupy.minimum(D[diag, diag], 0)
        if P is not None:
            P[diag, diag] = cupy.where(D[diag, diag] < 0, diag, -1).astype(cupy.int32)
        stats = floyd_warshall_dense(D, method=method, P=P)
        if method in ("int32-dpx", "int16x2-dpx"):
            tag = "i32" if method == "int32-dpx" else "i16"
            if not exact and count_range(D, tag, int(inf - wmax), inf):
                del D, P
                continue        # a distance may have reached the sentinel: next method
            # exact bound: "no path" is anything above INF // 2 (negative weights can
            # pull it a little below INF); speculative (non-negative): exactly INF
            D = to_float(D, tag, dt, inf // 2 if exact else inf - 1)
        break
    del rows
    if bool((D.diagonal() < 0).any()):
        g64 = d_graph if dt == np.float64 else upload_graph(graph, np.float64)
        bellman_ford_potentials(g64)  # raises NegativeCycleError with a cycle
        raise UnsupportedError(
            f"with its weights rounded to {dt}, graph {graph.name!r} has a negative "
            "cycle that its float64 weights do not have; use dtype float64"
        )
    stats = {**stats, "attempts": attempts, "rounds": n, "relaxations": n**3}
    return D, P, stats
