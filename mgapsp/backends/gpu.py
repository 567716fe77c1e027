"""The GPU backend: batched Bellman-Ford, Crauser's parallel Dijkstra, Johnson, PHAST
and dense Floyd-Warshall with CuPy.

The graph stays resident on the device: each process keeps a small cache of uploaded
CSRs keyed by (device, graph fingerprint, dtype), so the batches of one job upload
the graph once; Johnson's reweighted copy is cached the same way, keyed also by a hash
of the potentials (computed once per job).  Floyd-Warshall computes the whole matrix
once per graph, keeps it on the device and answers every batch from it.  All kernel
work goes through :mod:`mgapsp.cuda`; importing this module imports no CuPy.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

from .. import hierarchy
from ..cuda import (bellman_ford, frontier, fw, fw_slab, host_copy, phast, reduce, sssp,
                    staging)
from ..cuda import device as gpu
from ..cuda.staging import FRAME_GROUP_BYTES
from ..errors import InsufficientMemoryError, UnsupportedError
from ..graph import Graph
from .. import algorithms as registry
from ..reductions import histogram_counts, row_reductions
from .base import Backend, BatchResult, check_exact32, largest_finite

__all__ = ["GPUBackend", "clear_device_cache"]

_LOCK = threading.RLock()
#: (device, fingerprint, dtype) -> DeviceGraph, most recently used last
_GRAPHS: "OrderedDict[tuple, gpu.DeviceGraph]" = OrderedDict()
_MAX_GRAPHS = 4
#: (device, fingerprint, dtype str) -> hierarchy on that device (phast)
_HIERARCHIES: "OrderedDict[tuple, phast.DeviceHierarchy]" = OrderedDict()
_MAX_HIERARCHIES = 2
#: (device, fingerprint, targets hash) -> phast.Sweep restricted to those targets
_SWEEPS: "OrderedDict[tuple, phast.Sweep]" = OrderedDict()
#: (device, fingerprint, dtype) -> (dist, pred or None); one matrix at a time
_FW: "OrderedDict[tuple, tuple]" = OrderedDict()
_MAX_FW = 1
#: (device, fingerprint, dtype, potentials hash) -> (reweighted DeviceGraph, h on device)
_REWEIGHTED: "OrderedDict[tuple, tuple]" = OrderedDict()
_MAX_REWEIGHTED = 2


def clear_device_cache() -> None:
    """Forget every resident graph, reweighted copy, hierarchy and Floyd-Warshall
    matrix of this process."""
    with _LOCK:
        _GRAPHS.clear()
        _FW.clear()
        _REWEIGHTED.clear()
        _HIERARCHIES.clear()
        _SWEEPS.clear()


def _float_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise UnsupportedError(f"the gpu backend computes in float32 or float64, not {dt}")
    return dt


def _csr_bytes(graph: Graph, dtype: np.dtype) -> int:
    """The uploaded CSR plus its classified copy (rows for the round kernels: row
    ends, flagged targets, reordered weights, the sinks' in-edges), an upper bound."""
    n, m, w = graph.n, graph.m, dtype.itemsize
    plain = (n + 1) * 8 + m * 4 + m * w
    classified = n * 8 + m * (4 + w) + n * 4 + (n + 1) * 8 + m * (4 + w)
    return plain + classified + n * w          # + the least out-weights (Dijkstra)


def _array_key(a: np.ndarray, dtype: str) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a, dtype=dtype).tobytes(),
                           digest_size=16).hexdigest()


def _kept(cache: OrderedDict, key, make, limit: int):
    """``cache[key]``, made by ``make()`` where missing (and published to the other
    threads' streams); the least recently used beyond ``limit`` entries dropped."""
    with _LOCK:
        entry = cache.get(key)
        if entry is None:
            entry = cache[key] = gpu.publish(make())
            while len(cache) > limit:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return entry


class GPUBackend(Backend):
    """Distance blocks on the current CUDA device (one device per process)."""

    name = "gpu"

    # -- checks ------------------------------------------------------------------------
    def _check_algorithm(self, algorithm: str) -> str:
        if not registry.get(algorithm).runs_on(self.name):     # unknown: get says so
            raise UnsupportedError(
                f"the gpu backend runs {', '.join(self.algorithms)}, not "
                f"algorithm={algorithm!r}; use the cpu backend for it"
            )
        return algorithm

    @staticmethod
    def _check_weights(graph: Graph, algorithm: str) -> None:
        registry.get(algorithm).check(graph)

    @staticmethod
    def _check_predecessors(dtype: np.dtype, predecessors: bool) -> None:
        if predecessors and dtype != np.float32:
            raise UnsupportedError(
                f"the gpu backend gives predecessors with dtype float32 only, not {dtype}; "
                "use dtype float32 or the cpu backend"
            )

    @staticmethod
    def _check_sources(graph: Graph, sources) -> np.ndarray:
        src = np.atleast_1d(np.asarray(sources))
        if src.ndim != 1:
            raise ValueError(f"sources must be one-dimensional, got shape {src.shape}")
        if src.size and src.dtype.kind not in "iu":
            raise ValueError(f"sources must be integers, got dtype {src.dtype}")
        src = src.astype(np.int64, copy=False)
        n = graph.n
        bad = (src < 0) | (src >= n)
        if bad.any():
            raise ValueError(
                f"sources must have 0 <= source < N. Got N={n}, source={int(src[bad][0])}."
            )
        return src

    def _ensure_memory(self, graph: Graph, needed: int, what: str, hint: str) -> None:
        available = self.memory_available()
        if needed > available:
            # make room: drop what other graphs keep on this device, then look again
            with _LOCK:
                fp = graph.fingerprint
                for cache in (_FW, _REWEIGHTED, _GRAPHS, _HIERARCHIES, _SWEEPS):
                    for key in [k for k in cache if k[1] != fp]:
                        del cache[key]
            gpu.release_pool()
            available = self.memory_available()
        if needed > available:
            raise InsufficientMemoryError(what, needed, available, hint=hint)

    # -- resident graphs ---------------------------------------------------------------
    def _resident(self, graph: Graph, dtype: np.dtype) -> bool:
        with _LOCK:
            return (gpu.device_id(), graph.fingerprint, dtype.str) in _GRAPHS

    def _device_graph(self, graph: Graph, dtype: np.dtype) -> "gpu.DeviceGraph":
        key = (gpu.device_id(), graph.fingerprint, dtype.str)
        with _LOCK:
            dg = _GRAPHS.get(key)
            if dg is not None:
                _GRAPHS.move_to_end(key)
                return dg
            dg = gpu.publish(gpu.upload_graph(graph, dtype))
            _GRAPHS[key] = dg
            while len(_GRAPHS) > _MAX_GRAPHS:
                _GRAPHS.popitem(last=False)
            return dg

    # -- Backend -----------------------------------------------------------------------
    def potentials(self, graph: Graph) -> np.ndarray:
        f64 = np.dtype(np.float64)
        if not graph.has_negative_weights:
            return np.zeros(graph.n, dtype=np.float64)
        # state and predecessor words, lane masks, queues, the cycle check
        needed = graph.n * (16 + 16) + min(12 * (graph.n + 1), bellman_ford.CHECK_BYTES)
        if not self._resident(graph, f64):
            needed += _csr_bytes(graph, f64)
        self._ensure_memory(graph, needed, f"Johnson potentials on {graph.n} vertices",
                            hint="use the cpu backend")
        return bellman_ford.bellman_ford_potentials(self._device_graph(graph, f64))

    def distances(
        self,
        graph: Graph,
        sources: np.ndarray,
        *,
        algorithm: str,
        dtype: np.dtype,
        predecessors: bool = False,
        potentials: np.ndarray | None = None,
        device: bool = False,
        targets: np.ndarray | None = None,
    ) -> BatchResult:
        """Distances from each of ``sources`` (internal indices) to every vertex.

        With ``device=True`` the blocks stay on the device (CuPy arrays), for a writer
        that stages them to the host itself, and the calling thread's current stream
        becomes its own (:func:`mgapsp.cuda.device.use_thread_stream`); ``stats["gpu_s"]``
        is the device time of the batch (CUDA events).

        ``algorithm`` is ``"bellman-ford"``, ``"dijkstra"`` (Crauser's parallel
        Dijkstra; non-negative weights), ``"johnson"`` or ``"floyd-warshall"``;
        ``dtype`` float32 or float64; predecessors need float32.  ``potentials``
        (johnson): the job's potentials; computed here when None.  ``targets``:
        ``phast`` sweeps only what they need and returns only them (RPHAST).
        """
        self._check_algorithm(algorithm)
        self._check_weights(graph, algorithm)
        entry = self.registered_entry(algorithm)
        if entry is not None:
            return entry(self, graph, sources, dtype=dtype, predecessors=predecessors,
                         potentials=potentials, targets=targets)
        dt = _float_dtype(dtype)
        self._check_predecessors(dt, predecessors)
        src = self._check_sources(graph, sources)
        n, B = graph.n, len(src)
        if B == 0:
            return BatchResult(
                distances=np.empty((0, n), dtype=dt),
                predecessors=np.empty((0, n), dtype=np.int32) if predecessors else None,
                stats={"algorithm": algorithm, "backend": self.name, "rounds": 0,
                       "relaxations": 0},
            )
        if device:
            # this thread's own stream, from now on: the caller's next steps on the
            # block (the writer's compression and copies) follow it there, while the
            # worker's other thread runs its batch
            gpu.use_thread_stream()
        timer = staging.GPUTimer().start()
        if algorithm == registry.FLOYD_WARSHALL.name:
            result = self._floyd_warshall(graph, src, dt, predecessors)
        elif algorithm == registry.PHAST.name:
            result = self._phast(graph, src, dt, targets, predecessors)
        else:
            result = self._batched(graph, src, dt, predecessors, algorithm, potentials)
        result.stats["gpu_s"] = timer.stop()
        if not device:
            result.distances = gpu.to_host(result.distances)
            result.predecessors = gpu.to_host(result.predecessors)
        return result

    def _batched(self, graph, src, dt, predecessors, algorithm, potentials) -> BatchResult:
        B = len(src)
        needed = self.memory_needed(graph, B, algorithm=algorithm, dtype=dt,
                                    predecessors=predecessors)
        if self._resident(graph, dt):
            needed -= _csr_bytes(graph, dt)
        self._ensure_memory(graph, needed, f"a batch of {B} sources on {graph.n} vertices",
                            hint="use a smaller --batch-size")
        dg = self._device_graph(graph, dt)
        if algorithm == registry.BELLMAN_FORD.name:
            dist, pred, stats = bellman_ford.bellman_ford_batch(dg, src, dt, predecessors)
        elif algorithm == registry.DIJKSTRA.name:
            dist, pred, stats = sssp.dijkstra_batch(dg, src, dt, predecessors)
        else:
            d_rw, h = self._reweighted(graph, dg, dt, potentials)
            dist, pred, stats = sssp.johnson_batch(d_rw, src, h, dt, predecessors)
        stats = {"algorithm": algorithm, "backend": self.name, **stats}
        return BatchResult(distances=dist, predecessors=pred, stats=stats)

    def _phast(self, graph: Graph, src: np.ndarray, dt: np.dtype, targets,
               predecessors: bool) -> BatchResult:
        if predecessors:
            if targets is not None:
                raise ValueError("predecessors need every target")
            hierarchy.check_predecessors(graph)
        h = hierarchy.for_graph(graph)
        key = (gpu.device_id(), graph.fingerprint, dt.str)
        with _LOCK:
            dh = _HIERARCHIES.get(key)
        needed = phast.batch_bytes(graph.n, len(src), dt, predecessors)
        if dh is None:
            needed += phast.device_bytes(h.n, h.arcs, dt)
        self._ensure_memory(graph, needed, f"a batch of {len(src)} sources on "
                            f"{graph.n} vertices", hint="use a smaller --batch-size")
        dh = _kept(_HIERARCHIES, key, lambda: phast.upload(h, dt), _MAX_HIERARCHIES)
        sweep = None
        if targets is not None:     # RPHAST: one sweep for the job's batches
            t = np.ascontiguousarray(targets, dtype=np.int64)
            sweep = _kept(_SWEEPS, (key[0], h.fingerprint, _array_key(t, "<i8")),
                          lambda: phast.sweep(h, t), _MAX_HIERARCHIES)
        dist, pred, stats = phast.phast_batch(dh, src, sweep, predecessors)
        return BatchResult(distances=dist, predecessors=pred, targets_only=sweep is not None,
                           stats={"algorithm": registry.PHAST.name, "backend": self.name, **stats})

    def _reweighted(self, graph: Graph, dg, dt: np.dtype, potentials):
        """Johnson's reweighted device graph and the potentials on the device, cached
        per (device, graph, dtype, potentials)."""
        if potentials is None:
            potentials = self.potentials(graph)
        h = np.ascontiguousarray(potentials, dtype=np.float64)
        if h.shape != (graph.n,):
            raise ValueError(f"potentials must have shape ({graph.n},), got {h.shape}")
        key = (gpu.device_id(), graph.fingerprint, dt.str, _array_key(h, "<f8"))
        with _LOCK:
            entry = _REWEIGHTED.get(key)
            if entry is not None:
                _REWEIGHTED.move_to_end(key)
                return entry
            if not h.any() and not graph.has_negative_weights:
                entry = (dg, h)                 # nothing to reweight
            else:
                entry = gpu.publish((sssp.reweight(dg, h), gpu.to_device(h)))
            _REWEIGHTED[key] = entry
            while len(_REWEIGHTED) > _MAX_REWEIGHTED:
                _REWEIGHTED.popitem(last=False)
            return entry

    def _floyd_warshall(self, graph, src, dt, predecessors) -> BatchResult:
        dev = gpu.device_id()
        key = (dev, graph.fingerprint, dt.str)
        with _LOCK:
            entry = _FW.get(key)
            if entry is not None and predecessors and entry[1] is None:
                entry = None           # cached without predecessors: compute again
                del _FW[key]
            cached = entry is not None
            if entry is None:
                needed = self.memory_needed(graph, len(src), algorithm=registry.FLOYD_WARSHALL.name,
                                            dtype=dt, predecessors=predecessors)
                if self._resident(graph, dt):
                    needed -= _csr_bytes(graph, dt)
                _FW.clear()            # the old matrix goes before the new one comes
                self._ensure_memory(
                    graph, needed, f"the {graph.n} x {graph.n} Floyd-Warshall matrix",
                    hint="use algorithm bellman-ford or the cpu backend",
                )
                dg = self._device_graph(graph, dt)
                D, P, _ = fw.floyd_warshall(dg, dt, predecessors)
                entry = gpu.publish((D, P))
                _FW[key] = entry
                while len(_FW) > _MAX_FW:
                    _FW.popitem(last=False)
            D, P = entry
            dist = gpu.take_rows(D, src, host=False)
            pred = gpu.take_rows(P, src, host=False) if predecessors else None
        stats = {"algorithm": registry.FLOYD_WARSHALL.name, "backend": self.name,
                 "rounds": 0 if cached else graph.n,
                 "relaxations": 0 if cached else graph.n ** 3, "cached": cached}
        return BatchResult(distances=dist, predecessors=pred, stats=stats)

    def fill_rows(self, graph, sources, dist, pred=None, *, batch_size, algorithm,
                  potentials=None, columns=None, on_rows=None, checked32=False) -> None:
        """As :meth:`Backend.fill_rows`; each block leaves the device through pinned
        buffers while the next batch computes (:mod:`mgapsp.cuda.host_copy`).  A
        batch's check (``checked32``) is read one batch later, so that the device
        never waits for it."""
        self._check_algorithm(algorithm)         # before the output is touched
        self._check_weights(graph, algorithm)
        self._check_predecessors(_float_dtype(dist.dtype), pred is not None)
        checks: list = []       # (first row, the batch's largest distance on the device)
        with gpu.caller_stream(), host_copy.HostCopier(dist, pred) as copier:
            for lo in range(0, len(sources), batch_size):
                hi = min(lo + batch_size, len(sources))
                # one block drains while the next computes: two on the device at most,
                # as the planner's batches allow
                copier.wait(backlog=1)
                if checks:
                    check_exact32(float(checks[0][1]), checks.pop(0)[0])
                res = self.distances(graph, sources[lo:hi], algorithm=algorithm,
                                     dtype=dist.dtype, predecessors=pred is not None,
                                     potentials=potentials, device=True, targets=columns)
                block = self.columns(res, columns)
                if checked32:
                    checks.append((lo, self.largest_finite(block)))
                copier.put(block, dist[lo:hi])
                if pred is not None:
                    copier.put(res.predecessors, pred[lo:hi])
                del res, block
                if on_rows:     # computed; its copy may still be draining
                    on_rows(hi)
            for lo, largest in checks:
                check_exact32(float(largest), lo)

    def row_reductions(self, block) -> dict:
        """As :meth:`Backend.row_reductions`; a device block is reduced on its device
        (:mod:`mgapsp.cuda.reduce`) and only the results leave it."""
        if staging.is_device_array(block):
            return {k: gpu.to_host(v) for k, v in reduce.row_reductions(block).items()}
        return row_reductions(block)

    def histogram_counts(self, block, self_pairs: int = 0):
        """As :meth:`Backend.histogram_counts`, on a device block's device."""
        if staging.is_device_array(block):
            return gpu.to_host(reduce.histogram_counts(block, self_pairs=self_pairs))
        return histogram_counts(block, self_pairs=self_pairs)

    def _harmonic_state(self, columns: np.ndarray):
        cupy = gpu.cupy_module()
        k = len(columns)
        return (cupy.zeros(k, dtype=cupy.float64), cupy.zeros(k, dtype=cupy.bool_),
                cupy.asarray(columns, dtype=cupy.int64))

    def _harmonic_add(self, block, columns, acc, touched) -> None:
        if staging.is_device_array(block):
            reduce.ordered_harmonic(block, columns, acc, touched)
        else:           # a block that came back on the host (a CPU fallback)
            cupy = gpu.cupy_module()
            reduce.ordered_harmonic(cupy.asarray(block), columns, acc, touched)

    def _harmonic_result(self, acc, touched) -> tuple[np.ndarray, np.ndarray]:
        return gpu.to_host(acc), gpu.to_host(touched)

    def largest_finite(self, block):
        """As :func:`~mgapsp.backends.base.largest_finite`, for a device block too (a
        device scalar then, read when needed)."""
        if staging.is_device_array(block):
            return gpu.largest_finite(block)
        return largest_finite(block)

    staging = staging

    def select_columns(self, block, columns: np.ndarray):
        return staging.select_columns(block, columns)

    @staticmethod
    def fw_methods(dtype, weights, n: int) -> list:
        """The Floyd-Warshall methods to try for a slab job, best first."""
        return fw_slab.plan_methods(dtype, weights, n)

    def floyd_warshall_slab(self, n, r0, r1, edges, dtype, exchange, bounds, info):
        cupy = gpu.cupy_module()
        with cupy.cuda.Stream(non_blocking=True) as stream:
            timer = staging.GPUTimer().start()
            dist, stats = fw_slab.floyd_warshall_rows(
                n, r0, r1, *edges, dtype, exchange, bounds, methods=info["methods"],
                wmax=info["wmax"], nonneg=info["nonneg"], name=info["name"])
            stats["gpu_s"] = timer.stop()
            stream.synchronize()
        return dist, stats

    def memory_available(self) -> int:
        """Free bytes on the current device plus what CuPy's memory pool holds free."""
        return gpu.memory_available()

    def memory_needed(self, graph: Graph, batch_size: int, *, algorithm: str,
                      dtype: np.dtype, predecessors: bool, fw_rows: int | None = None) -> int:
        """Bytes one batch of ``batch_size`` sources needs on the device, the graph's
        CSR included (an upper bound)."""
        self._check_algorithm(algorithm)
        dt = _float_dtype(dtype)
        n, B = graph.n, int(batch_size)
        out = dt.itemsize + (4 if predecessors else 0)   # per (source, vertex) output
        # the graph, and the writer's scratch: it compresses a batch's chunks on the
        # device, FRAME_GROUP_BYTES at a time (a shuffled copy, LZ4 output, frames)
        fixed = _csr_bytes(graph, dt) + 3 * min(FRAME_GROUP_BYTES, B * n * out)
        if algorithm == registry.PHAST.name:
            # the hierarchy (arcs not known before it is built: a road network has
            # a few per edge), the rank-major state and the output block
            arcs = 8 * (graph.m + n)
            return (fixed + phast.device_bytes(n, arcs, dt)
                    + phast.batch_bytes(n, B, dt, predecessors))
        if algorithm == registry.FLOYD_WARSHALL.name:
            if fw_rows is not None:
                # an integer (or the float) slab, its float copy, the pivot panels,
                # the transposed column panel, the slab's edges
                return (fixed + (2 * fw_rows + 3 * 256) * n * dt.itemsize + 256 * fw_rows * 8
                        + graph.m * 24)
            matrix = n * n * dt.itemsize * (3 if predecessors else 2)
            return fixed + matrix + graph.m * 4 + B * n * out + B * 8
        # the batched kernels: state words (see kernels/bellman_ford.cu), per-chunk
        # lane masks and queues, the (B, n) output, the sources and their row map
        _G, C, Bp = frontier.chunking(B)
        negative = graph.has_negative_weights
        items = n * C
        if algorithm == registry.BELLMAN_FORD.name:
            mode = frontier.state_mode(dt, predecessors or negative)
            work = 4 * items * 4 + 8 * 32                    # 2 mask arrays, 2 queues
            if negative:                                      # predecessor-cycle check
                work += min(B * (n + 1) * 12, bellman_ford.CHECK_BYTES) + 4 * items
        else:
            mode = frontier.state_mode(dt, predecessors)
            work = 4 * items + 2 * 8 * Bp + 64               # fringe masks, thresholds
            if algorithm == registry.JOHNSON.name:
                work += graph.m * (dt.itemsize + 2 * 8) + n * 8   # reweighted copy, h
        state = frontier.state_bytes(n, B, mode)
        return fixed + state + work + B * n * out + B * 16
