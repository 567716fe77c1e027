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
bellman_ford_batch(d_graph, sources, dtype=None, predecessors=False)
    -> (dist (B, n), pred (B, n) int32 or None, stats)
bellman_ford_potentials(d_graph) -> h (host float64, length n)
floyd_warshall(d_graph, dtype=None, predecessors=False)
    -> (dist (n, n), pred (n, n) int32 or None, stats)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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
    "DeviceGraph",
    "kernel_source",
    "upload_graph",
    "bellman_ford_batch",
    "bellman_ford_potentials",
    "floyd_warshall",
    "memory_available",
    "release_pool",
    "device_id",
    "to_host",
    "take_rows",
    "cycle_weight",
]

KERNEL_FILE = "bellman_ford.cu"
#: every kernel this module launches; each is an ``extern "C" __global__`` in KERNEL_FILE
KERNEL_NAMES = (
    "bf_init_f32",
    "bf_init_f64",
    "bf_relax_f32",
    "bf_relax_f64",
    "bf_unpack_f32",
    "bf_unpack_f64",
    "fw_step_f32",
    "fw_step_f64",
)
_COMPILE_OPTIONS = ("-std=c++17",)
_THREADS = 256
_TILE, _TILE_ROWS = 32, 8          # bf_unpack_* block shape (as in the .cu file)
_MAX_BATCH = 65535 * _TILE         # gridDim.y limit of bf_unpack_*
#: first round after which a batch with negative weights looks for a predecessor
#: cycle; then again after twice as many rounds, and so on (and always at round n)
FIRST_CYCLE_CHECK = 32
#: device memory the predecessor-cycle check may use for its pointer jumping
CHECK_BYTES = 256 * 2**20
#: set by tests: fill outputs with NaN / -2 before unpacking, so that an element
#: the unpack kernel failed to write shows up
_POISON_OUTPUTS = False

_INF_KEY32 = (0xFF800000 << 32) | 0xFFFFFFFF   # +inf, no predecessor (float32 keys)


# -- sources and compilation ---------------------------------------------------------
def kernel_source(name: str = KERNEL_FILE) -> str:
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


def _module(file: str = KERNEL_FILE):
    """The compiled RawModule of ``kernels/<file>`` for the current device (compiled
    once per device and file, at first use)."""
    if file not in _compilers:
        cupy = _cupy()

        @cupy.memoize(for_each_device=True)
        def compile_module():
            return cupy.RawModule(code=kernel_source(file), options=_COMPILE_OPTIONS)

        _compilers[file] = compile_module
    return _compilers[file]()


def _kernel(name: str, file: str = KERNEL_FILE):
    return _module(file).get_function(name)


def _blocks(total: int, threads: int = _THREADS) -> int:
    return max(1, -(-int(total) // threads))


# -- device state ----------------------------------------------------------------------
@dataclass(eq=False)
class DeviceGraph:
    """A graph's CSR resident on one device, weights in one dtype."""

    graph: Graph
    dtype: np.dtype
    indptr: Any      # cupy int64 (n + 1,)
    indices: Any     # cupy int32 (m,)
    weights: Any     # cupy dtype (m,)
    device: int

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def m(self) -> int:
        return self.graph.m

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + self.weights.nbytes)


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


def to_host(arr) -> np.ndarray | None:
    """A device array copied to the host (None stays None); waits for the device."""
    if arr is None:
        return None
    return _cupy().asnumpy(arr)


def take_rows(mat, rows) -> np.ndarray:
    """Rows ``rows`` of a device matrix, copied to the host."""
    cupy = _cupy()
    idx = cupy.asarray(np.asarray(rows, dtype=np.int64))
    return cupy.asnumpy(mat[idx])


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


class _Run:
    """The state of one batched Bellman-Ford run on the device and its round loop."""

    def __init__(self, d_graph: DeviceGraph, sources: np.ndarray | None, B: int,
                 *, seed_all: bool, track: bool):
        cupy = _cupy()
        self.cupy = cupy
        self.g = d_graph
        self.n = n = d_graph.n
        self.B = B
        self.f32 = d_graph.dtype == np.float32
        self.negative = d_graph.graph.has_negative_weights
        # float32 keys always carry predecessors; float64 tracks them on request
        self.track = True if self.f32 else track
        total = n * B
        if self.f32:
            self.state = cupy.empty(total, dtype=cupy.uint64)
            self.pred = None
        else:
            self.state = cupy.empty(total, dtype=cupy.float64)
            self.pred = cupy.empty(total if self.track else 1, dtype=cupy.uint64)
        self.active_cur = cupy.empty(total, dtype=cupy.uint8)
        self.active_next = cupy.zeros(total, dtype=cupy.uint8)
        self.vflag_cur = cupy.zeros(n, dtype=cupy.uint8)
        self.vflag_next = cupy.zeros(n, dtype=cupy.uint8)
        self.counter = cupy.zeros(1, dtype=cupy.uint64)
        if sources is None:
            d_src = cupy.zeros(1, dtype=cupy.int64)
        else:
            d_src = cupy.asarray(sources, dtype=cupy.int64)
        args_n = (np.int64(n), np.int64(B), np.int32(1 if seed_all else 0))
        if self.f32:
            _kernel("bf_init_f32")(
                (_blocks(total),), (_THREADS,),
                (self.state, self.active_cur, self.vflag_cur, d_src) + args_n,
            )
        else:
            _kernel("bf_init_f64")(
                (_blocks(total),), (_THREADS,),
                (self.state, self.pred, np.int32(self.track), self.active_cur,
                 self.vflag_cur, d_src) + args_n,
            )
        self.rounds = 0

    # one round
    def _relax(self, frontier, fl: int) -> None:
        g = self.g
        total = fl * self.B
        common = (frontier, np.int64(fl), np.int64(self.B), g.indptr, g.indices, g.weights)
        flags = (self.active_cur, self.vflag_cur, self.active_next, self.vflag_next,
                 self.counter)
        if self.f32:
            _kernel("bf_relax_f32")((_blocks(total),), (_THREADS,),
                                    common + (self.state,) + flags)
        else:
            _kernel("bf_relax_f64")((_blocks(total),), (_THREADS,),
                                    common + (self.state, self.pred, np.int32(self.track))
                                    + flags)
        # relax cleared every current flag it consumed: the current arrays are zero
        self.active_cur, self.active_next = self.active_next, self.active_cur
        self.vflag_cur, self.vflag_next = self.vflag_next, self.vflag_cur

    def run(self) -> None:
        """Rounds until no (vertex, source) improves; raise on a negative cycle."""
        cupy = self.cupy
        check_cycles = self.negative and self.track
        next_check = FIRST_CYCLE_CHECK
        while True:
            frontier = cupy.flatnonzero(self.vflag_cur)
            fl = int(frontier.size)
            if fl == 0:
                return
            if self.rounds >= self.n:
                # still improving after n rounds: a negative cycle is reachable
                self._negative_cycle(frontier, final=True)
            if check_cycles and self.rounds >= next_check:
                next_check *= 2
                self._negative_cycle(frontier, final=False)
            self._relax(frontier, fl)
            self.rounds += 1

    def release_flags(self) -> None:
        """Drop what the unpack does not need (back to CuPy's pool)."""
        self.active_cur = self.active_next = self.vflag_cur = self.vflag_next = None
        if not self.f32:
            self.pred = None

    @property
    def relaxations(self) -> int:
        return int(self.counter.get()[0])

    # predecessors
    def _pred_columns(self, cols):
        """Predecessors of columns ``cols`` (cupy int64), (n, len(cols)) int32, -1 none."""
        words = self.state if self.f32 else self.pred
        low = words.view(self.cupy.int32).reshape(self.n, self.B, 2)[:, :, 0]
        return low[:, cols]

    def _pred_column_host(self, col: int) -> np.ndarray:
        return self.cupy.asnumpy(self._pred_columns(self.cupy.asarray([col]))[:, 0]).astype(
            np.int64
        )

    def _negative_cycle(self, frontier, *, final: bool) -> None:
        """Look for a predecessor cycle in the columns still improving; raise
        NegativeCycleError for a negative one.  ``final`` (round n): one must exist."""
        cupy = self.cupy
        graph = self.g.graph
        n, B = self.n, self.B
        if self.track:
            rows = self.active_cur.reshape(n, B)[frontier]
            cols = cupy.asnumpy(cupy.flatnonzero(rows.any(axis=0)))
            per_chunk = max(1, CHECK_BYTES // (12 * (n + 1)))
            seen = None
            for start in range(0, len(cols), per_chunk):
                chunk = cols[start:start + per_chunk]
                found = _pred_cycle_vertex(self._pred_columns(cupy.asarray(chunk)))
                if found is None:
                    continue
                x, c = found
                cycle = _extract_cycle(self._pred_column_host(int(chunk[c])), x)
                if cycle is None:
                    continue
                weight = cycle_weight(graph, cycle)
                if weight < 0:
                    raise NegativeCycleError(graph.vertex_ids[np.asarray(cycle)], weight)
                seen = weight
        else:
            seen = None
        if not final:
            return
        if self.f32 and seen is not None:
            raise UnsupportedError(
                f"with its weights rounded to float32, graph {graph.name!r} has a "
                f"negative cycle that its float64 weights do not have (float64 weight "
                f"{seen:g}); use dtype float64"
            )
        raise RuntimeError(  # an internal invariant, not bad input
            f"Bellman-Ford still improving after {n} rounds, but no negative "
            f"predecessor cycle was found (dtype {self.g.dtype}, {B} sources)"
        )


# -- public entry points ---------------------------------------------------------------
def bellman_ford_batch(d_graph: DeviceGraph, sources, dtype=None, predecessors: bool = False):
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
    cupy = _cupy()
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
    if B == 0:
        return (cupy.empty((0, n), dtype=dt),
                cupy.empty((0, n), dtype=cupy.int32) if predecessors else None,
                {"rounds": 0, "relaxations": 0})
    if B > _MAX_BATCH:
        raise UnsupportedError(f"a batch of {B} sources exceeds the gpu limit of {_MAX_BATCH}")
    if src.min() < 0 or src.max() >= n:
        bad = int(src[(src < 0) | (src >= n)][0])
        raise ValueError(f"sources must have 0 <= source < N. Got N={n}, source={bad}.")

    run = _Run(d_graph, src, B, seed_all=False, track=d_graph.graph.has_negative_weights)
    run.run()
    run.release_flags()

    dist = cupy.empty((B, n), dtype=dt)
    pred = cupy.empty((B, n), dtype=cupy.int32) if predecessors else None
    if _POISON_OUTPUTS:
        dist.fill(np.nan)
        if pred is not None:
            pred.fill(-2)
    grid = (_blocks(n, _TILE), _blocks(B, _TILE))
    block = (_TILE, _TILE_ROWS)
    if run.f32:
        dummy = cupy.empty(1, dtype=cupy.int32)
        _kernel("bf_unpack_f32")(
            grid, block,
            (run.state, np.int64(n), np.int64(B), dist,
             pred if pred is not None else dummy, np.int32(pred is not None)),
        )
    else:
        _kernel("bf_unpack_f64")(grid, block, (run.state, np.int64(n), np.int64(B), dist))
    stats = {"rounds": run.rounds, "relaxations": run.relaxations}
    return dist, pred, stats


def bellman_ford_potentials(d_graph: DeviceGraph) -> np.ndarray:
    """Johnson potentials ``h`` (host float64, length n): distances from a virtual
    source joined to every vertex by a 0-weight edge, so ``w + h[u] - h[v] >= 0``.

    ``d_graph`` must hold float64 weights.  Raises :class:`NegativeCycleError` when
    the graph has a negative cycle anywhere.
    """
    if d_graph.dtype != np.float64:
        raise ValueError(f"potentials need float64 weights, d_graph holds {d_graph.dtype}")
    n = d_graph.n
    if not d_graph.graph.has_negative_weights:
        return np.zeros(n, dtype=np.float64)
    run = _Run(d_graph, None, 1, seed_all=True, track=True)
    run.run()
    return run.cupy.asnumpy(run.state).astype(np.float64, copy=False)


from .fw import floyd_warshall  # noqa: E402  (uses the helpers above)
