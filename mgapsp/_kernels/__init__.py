"""The only module that compiles or launches GPU kernels.

Kernel sources live in ``kernels/*.cu`` (shipped inside the wheel as
``mgapsp/kernels``, see ``force-include`` in ``pyproject.toml``).  They are compiled
with CuPy's ``RawModule`` on first use, once per device; importing this module
imports no CuPy and creates no CUDA context.  Native (CUDA) failures surface here
as CuPy exceptions; the graph-level outcomes of a run (a negative cycle, a float32
rounding artefact) are translated here, in one place, into :mod:`mgapsp.errors`.

Functions
---------
upload_graph(graph, dtype) -> DeviceGraph
bellman_ford_batch(d_graph, sources, dtype=None, predecessors=False, *, options=None)
    -> (dist (B, n), pred (B, n) int32 or None, stats)
bellman_ford_potentials(d_graph) -> h (host float64, length n)
dijkstra_batch(d_graph, sources, dtype=None, predecessors=False, *, variant="general")
    -> (dist (B, n), pred (B, n) int32 or None, stats)      (see sssp.py)
reweight(d_graph, potentials) -> DeviceGraph                 (see sssp.py)
johnson_batch(d_rw, sources, potentials, dtype=None, predecessors=False)
    -> (dist (B, n), pred (B, n) int32 or None, stats)      (see sssp.py)
floyd_warshall(d_graph, dtype=None, predecessors=False)
    -> (dist (n, n), pred (n, n) int32 or None, stats)      (see fw.py)

The batched single-source kernels share one state layout (``kernels/bellman_ford.cu``
describes it): per (vertex, source) a distance word at ``[v * Bp + s]``, the batch
padded to ``Bp = C * G`` (chunks of ``G`` sources, ``G = 32`` for ``B >= 32``).
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import NegativeCycleError, UnsupportedError
from ..graph import Graph

if TYPE_CHECKING:  # pragma: no cover
    import cupy

__all__ = [
    "KERNEL_FILE",
    "KERNEL_NAMES",
    "BFOptions",
    "DeviceGraph",
    "kernel_source",
    "upload_graph",
    "bellman_ford_batch",
    "bellman_ford_potentials",
    "dijkstra_batch",
    "johnson_batch",
    "reweight",
    "floyd_warshall",
    "state_bytes",
    "memory_available",
    "release_pool",
    "device_id",
    "to_host",
    "to_device",
    "take_rows",
    "cycle_weight",
    "GPUTimer",
    "use_thread_stream",
    "publish",
]

KERNEL_FILE = "bellman_ford.cu"
#: every kernel this module launches from KERNEL_FILE (``extern "C" __global__`` there)
KERNEL_NAMES = (
    ("bf_compact",)
    + tuple(f"bf_{kind}_m{mode}" for mode in range(4)
            for kind in ("relax", "init", "pull", "unpack"))
    + tuple(f"bf_relax_m{mode}_full" for mode in range(4))
)
_COMPILE_OPTIONS = ("-std=c++17",)
_THREADS = 256
_TILE, _TILE_ROWS = 32, 8          # unpack block shape (as in the .cu file)
_MAX_BATCH = 65535 * _TILE         # gridDim.y limit of the unpack kernels
#: first round after which a batch with negative weights looks for a predecessor
#: cycle; then again after twice as many rounds, and so on (and always at round n)
FIRST_CYCLE_CHECK = 32
#: device memory the predecessor-cycle check may use for its pointer jumping
CHECK_BYTES = 256 * 2**20
#: set by tests: fill outputs with NaN / -2 before unpacking, so that an element
#: the unpack kernel failed to write shows up
_POISON_OUTPUTS = False
#: most rounds launched back to back before the host looks at the device counters
MAX_ROUND_GROUP = 32
#: tuning switches (measured in bench/sssp_notes.md): read a target's distance before
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
_NONE = 0xFFFFFFFF


# -- sources and compilation ---------------------------------------------------------
#: ``#include "file"`` of another file of ``kernels/`` (nvcc finds it beside the
#: including file; NVRTC compiles a string, so :func:`kernel_source` inlines it).
_LOCAL_INCLUDE = re.compile(r'^#include "([\w.-]+)"[ \t]*\n', re.M)


def kernel_source(name: str = KERNEL_FILE) -> str:
    """Text of ``kernels/<name>`` with its local ``#include "..."`` files inlined."""
    return _LOCAL_INCLUDE.sub(lambda m: kernel_source(m.group(1)), _kernel_file(name))


def _kernel_file(name: str) -> str:
    """Text of ``kernels/<name>``: from the installed package, else the source tree."""
    try:
        res = resources.files("mgapsp") / "kernels" / name
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, ModuleNotFoundError):
        pass
    path = Path(__file__).resolve().parents[2] / "kernels" / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"kernel source {name!r} is neither in the installed package "
            f"(mgapsp/kernels) nor at {path}"
        ) from None


def _cupy():
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UnsupportedError(
            "the gpu backend needs CuPy: pip install 'mgapsp[cuda13]' (or [cuda12])"
        ) from exc
    return cupy


_compilers: dict = {}
_functions: dict = {}
_sm_counts: dict = {}


def _module(file: str = KERNEL_FILE, options: tuple[str, ...] = ()):
    """The compiled RawModule of ``kernels/<file>`` for the current device (compiled
    once per device, file and extra NVRTC ``options``, at first use)."""
    key = (file, options)
    if key not in _compilers:
        cupy = _cupy()

        @cupy.memoize(for_each_device=True)
        def compile_module():
            return cupy.RawModule(code=kernel_source(file),
                                  options=_COMPILE_OPTIONS + tuple(options))

        _compilers[key] = compile_module
    return _compilers[key]()


def _kernel(name: str, file: str = KERNEL_FILE, options: tuple[str, ...] = ()):
    key = (device_id(), file, name, options)
    fn = _functions.get(key)
    if fn is None:
        fn = _functions[key] = _module(file, options).get_function(name)
    return fn


def _blocks(total: int, threads: int = _THREADS) -> int:
    return max(1, -(-int(total) // threads))


def _sm_count() -> int:
    dev = device_id()
    if dev not in _sm_counts:
        attrs = _cupy().cuda.Device(dev).attributes
        _sm_counts[dev] = int(attrs["MultiProcessorCount"])
    return _sm_counts[dev]


def _persistent_grid(fn, threads: int = _THREADS) -> int:
    """Blocks that fit on the device at once: the grid of a kernel whose warps stride
    over their work (one wave, no tail of late blocks)."""
    try:
        regs = max(1, int(fn.num_regs))
    except Exception:  # noqa: BLE001 - attribute missing in some CuPy versions
        regs = 64
    per_sm = max(1, min(2048 // threads, 65536 // (regs * threads)))
    return _sm_count() * per_sm


# -- device state ----------------------------------------------------------------------
@dataclass(eq=False)
class DeviceGraph:
    """A graph's CSR resident on one device, weights in one dtype.

    ``min_weight`` overrides the graph's (a reweighted copy, see :func:`reweight`);
    ``derived`` caches what the kernels prepare from the CSR (the classified rows).
    """

    graph: Graph
    dtype: np.dtype
    indptr: Any      # cupy int64 (n + 1,)
    indices: Any     # cupy int32 (m,)
    weights: Any     # cupy dtype (m,)
    device: int
    min_weight: float | None = None
    derived: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def m(self) -> int:
        return self.graph.m

    @property
    def has_negative_weights(self) -> bool:
        if self.min_weight is not None:
            return self.min_weight < 0
        return self.graph.has_negative_weights

    @property
    def nbytes(self) -> int:
        extra = sum(int(a.nbytes) for p in self.derived.values()
                    for a in getattr(p, "arrays", ()))
        return int(self.indptr.nbytes + self.indices.nbytes + self.weights.nbytes) + extra


def _as_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise UnsupportedError(f"the gpu kernels compute in float32 or float64, not {dt}")
    return dt


def upload_graph(graph: Graph, dtype) -> DeviceGraph:
    """Copy ``graph``'s CSR to the current device, weights cast to ``dtype``."""
    cupy = _cupy()
    dt = _as_dtype(dtype)
    return DeviceGraph(
        graph=graph,
        dtype=dt,
        indptr=cupy.asarray(graph.indptr, dtype=cupy.int64),
        indices=cupy.asarray(graph.indices, dtype=cupy.int32),
        weights=cupy.asarray(graph.weights.astype(dt, copy=False)),
        device=int(cupy.cuda.runtime.getDevice()),
    )


def memory_available() -> int:
    """Free bytes on the current device plus what CuPy's pool holds unused."""
    cupy = _cupy()
    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free) + int(cupy.get_default_memory_pool().free_bytes())


def release_pool() -> None:
    """Give the unused blocks of CuPy's memory pool back to the device."""
    _cupy().get_default_memory_pool().free_all_blocks()


def device_id() -> int:
    return int(_cupy().cuda.runtime.getDevice())


_THREAD = threading.local()


def use_thread_stream():
    """Make this thread's own CUDA stream (one per thread and device) its current one,
    and return it.

    A GPU worker runs two batches at once, one per thread: on their own streams one
    batch's kernels overlap the other's compression and copies, where on the default
    stream they queued behind each other.  The streams are blocking (they still wait
    for work on the legacy default stream).  Device data shared between threads (the
    resident graph, its reweighted copy) must be complete before it is shared: see
    :func:`publish`.
    """
    cupy = _cupy()
    dev = device_id()
    streams = getattr(_THREAD, "streams", None)
    if streams is None:
        streams = _THREAD.streams = {}
    stream = streams.get(dev)
    if stream is None:
        stream = streams[dev] = cupy.cuda.Stream(non_blocking=False)
    stream.use()
    return stream


def publish(obj):
    """Wait until the current stream has made ``obj`` (device data about to be cached
    for other threads, whose streams do not wait for this one); returns it."""
    _cupy().cuda.get_current_stream().synchronize()
    return obj


def to_host(arr) -> np.ndarray | None:
    """A device array copied to the host (None stays None); waits for the device."""
    if arr is None:
        return None
    return _cupy().asnumpy(arr)


def to_device(arr):
    """A host array copied to the current device."""
    return _cupy().asarray(arr)


def take_rows(mat, rows, host: bool = True):
    """Rows ``rows`` of a device matrix, copied to the host (or a new device array)."""
    cupy = _cupy()
    idx = cupy.asarray(np.asarray(rows, dtype=np.int64))
    return cupy.asnumpy(mat[idx]) if host else mat[idx]


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


def _rows(d_graph: DeviceGraph, classify: bool) -> Rows:
    """The (cached) rows of ``d_graph`` for the round kernels."""
    key = ("rows", bool(classify))
    rows = d_graph.derived.get(key)
    if rows is not None:
        return rows
    cupy = _cupy()
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
        cupy = _cupy()
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
        init = _kernel(f"bf_init_m{mode}")
        set_masks = masks is not None
        if masks is None:
            masks = cupy.zeros(1, dtype=cupy.uint32)
        init((min(_blocks(total), 32 * _sm_count()),), (_THREADS,),
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
        fn = _kernel(f"bf_pull_m{self.mode}")
        items = rows.n_sinks * self.C
        per_warp = 32 // self.G
        warps = -(-items // per_warp)
        grid = min(_blocks(warps * 32), _persistent_grid(fn))
        fn((grid,), (_THREADS,),
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
        grid = (_blocks(n, _TILE), _blocks(B, _TILE))
        _kernel(f"bf_unpack_m{self.mode}")(
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
    cupy = _cupy()
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
class _BFRun:
    """One batched Bellman-Ford run: state, frontier and the round loop."""

    def __init__(self, d_graph: DeviceGraph, sources: np.ndarray | None, B: int, *,
                 seed_all: bool, track: bool, options: BFOptions):
        cupy = _cupy()
        self.cupy = cupy
        self.opt = options
        self.g = d_graph
        self.n = n = d_graph.n
        self.B = B
        self.track = track
        mode = state_mode(d_graph.dtype, track)
        self.rows = _rows(d_graph, options.classify)
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
        self.relax_fn = _kernel(f"bf_relax_m{mode}" + ("_full" if self.full else ""))
        self.relax_grid = _persistent_grid(self.relax_fn)
        self.compact_fn = _kernel("bf_compact")
        self.compact_grid = min(_blocks(self.items, 256 * 16), 8 * _sm_count())
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
            (self.relax_grid,), (_THREADS,),
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
def _check_batch(d_graph: DeviceGraph, sources, dtype, predecessors: bool):
    dt = d_graph.dtype if dtype is None else _as_dtype(dtype)
    if dt != d_graph.dtype:
        raise ValueError(f"d_graph holds {d_graph.dtype} weights, dtype={dt} was asked")
    if predecessors and dt != np.float32:
        raise UnsupportedError(
            "the gpu kernels give predecessors in float32 only; use dtype float32 "
            "or the cpu backend"
        )
    src = np.asarray(sources, dtype=np.int64).ravel()
    n, B = d_graph.n, len(src)
    if B > _MAX_BATCH:
        raise UnsupportedError(f"a batch of {B} sources exceeds the gpu limit of {_MAX_BATCH}")
    if B and (src.min() < 0 or src.max() >= n):
        bad = int(src[(src < 0) | (src >= n)][0])
        raise ValueError(f"sources must have 0 <= source < N. Got N={n}, source={bad}.")
    return dt, src


def source_order(src: np.ndarray) -> np.ndarray | None:
    """The column order of a batch's sources (``src[order]`` fill the state columns,
    column j answers output row ``order[j]``), or None to keep the given order."""
    if not SORT_SOURCES or len(src) < 2 or bool(np.all(src[:-1] <= src[1:])):
        return None
    return np.argsort(src, kind="stable")


def _empty_result(n: int, dt, predecessors: bool):
    cupy = _cupy()
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
    dt, src = _check_batch(d_graph, sources, dtype, predecessors)
    n, B = d_graph.n, len(src)
    if B == 0:
        return _empty_result(n, dt, predecessors)
    opt = options if options is not None else BFOptions()
    # predecessors are tracked on request and for the negative-cycle check
    track = predecessors or d_graph.has_negative_weights
    order = source_order(src)
    run = _BFRun(d_graph, src if order is None else src[order], B, seed_all=False,
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
    run = _BFRun(d_graph, None, 1, seed_all=True, track=True, options=BFOptions())
    run.run()
    words = run.cupy.asnumpy(run.state.st)
    return ordered_to_float(words, run.state.mode).astype(np.float64, copy=False)


from .fw import floyd_warshall  # noqa: E402  (uses the helpers above)
from .sssp import dijkstra_batch, johnson_batch, reweight  # noqa: E402
from .staging import GPUTimer  # noqa: E402
