"""What every algorithm on a GPU shares: the graph resident on the device, the
per-process caches of what the algorithms keep there, the device's memory, the checks
of a batch, its timing and stream, the copies to the host and the reductions on the
device.  Each algorithm's own code is in its room (:mod:`.frontier_sssp`,
:mod:`.johnson`, :mod:`.floyd_warshall`, :mod:`.phast`).

The graph stays resident: each process keeps a small cache of uploaded CSRs keyed by
(device, graph fingerprint, dtype), so the batches of one job upload the graph once;
an algorithm's own state (Johnson's reweighted copy, a hierarchy, a Floyd-Warshall
matrix) is kept the same way (:meth:`GPUBackend.kept`).  All kernel work goes through
:mod:`mgapsp.cuda`; importing this module imports no CuPy.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

from .. import algorithms as registry
from ..cuda import bellman_ford, brandes, host_copy, reduce, staging
from ..cuda import device as gpu
from ..cuda.staging import FRAME_GROUP_BYTES
from ..errors import InsufficientMemoryError, UnsupportedError
from ..graph import Graph
from ..reductions import histogram_counts, row_reductions
from .base import FLOAT32_EXACT, Backend, BatchResult, check_exact32, largest_finite

__all__ = ["GPUBackend", "array_key", "clear_device_cache", "csr_bytes", "float_dtype"]

#: guards the caches: a worker's threads share them
_LOCK = threading.RLock()
#: (device, fingerprint, dtype) -> DeviceGraph, most recently used last
_GRAPHS: "OrderedDict[tuple, gpu.DeviceGraph]" = OrderedDict()
_MAX_GRAPHS = 4
#: kind -> the algorithms' caches (:meth:`GPUBackend.kept`), keys (device,
#: fingerprint, ...), most recently used last
_KEPT: "dict[str, OrderedDict]" = {}


def clear_device_cache() -> None:
    """Forget every resident graph, and all the algorithms keep on the devices of this
    process (reweighted copies, hierarchies, Floyd-Warshall matrices)."""
    with _LOCK:
        _GRAPHS.clear()
        for cache in _KEPT.values():
            cache.clear()


def float_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise UnsupportedError(f"the gpu backend computes in float32 or float64, not {dt}")
    return dt


def csr_bytes(graph: Graph, dtype: np.dtype) -> int:
    """The uploaded CSR plus its classified copy (rows for the round kernels: row
    ends, flagged targets, reordered weights, the sinks' in-edges), an upper bound."""
    n, m, w = graph.n, graph.m, dtype.itemsize
    plain = (n + 1) * 8 + m * 4 + m * w
    classified = n * 8 + m * (4 + w) + n * 4 + (n + 1) * 8 + m * (4 + w)
    return plain + classified + n * w          # + the least out-weights (Dijkstra)


def array_key(a: np.ndarray, dtype: str) -> str:
    """A key for the values of ``a`` (as ``dtype``): what a cache keyed by an array's
    contents (potentials, targets) uses."""
    return hashlib.blake2b(np.ascontiguousarray(a, dtype=dtype).tobytes(),
                           digest_size=16).hexdigest()


class GPUBackend(Backend):
    """Distance blocks on the current CUDA device (one device per process)."""

    name = "gpu"
    staging = staging

    # -- checks ------------------------------------------------------------------------
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

    def _spec(self, graph: Graph, algorithm) -> registry.Algorithm:
        spec = registry.resolve(algorithm)
        if not spec.runs_on(self.name):
            raise UnsupportedError(
                f"the gpu backend does not run {spec.name}; it runs "
                f"{', '.join(self.algorithms)}; use the cpu backend for it")
        spec.check(graph)
        return spec

    def ensure_memory(self, graph: Graph, needed: int, what: str, hint: str) -> None:
        """Refuse, with :class:`~mgapsp.errors.InsufficientMemoryError`, work that needs
        more than the device has, after dropping what other graphs keep on it."""
        available = self.memory_available()
        if needed > available:
            with _LOCK:
                fp = graph.fingerprint
                for cache in (_GRAPHS, *_KEPT.values()):
                    for key in [k for k in cache if k[1] != fp]:
                        del cache[key]
            gpu.release_pool()
            available = self.memory_available()
        if needed > available:
            raise InsufficientMemoryError(what, needed, available, hint=hint)

    # -- what stays on the device --------------------------------------------------------
    def resident(self, graph: Graph, dtype: np.dtype) -> bool:
        """Whether ``graph`` is on this device in ``dtype`` already."""
        with _LOCK:
            return (gpu.device_id(), graph.fingerprint, dtype.str) in _GRAPHS

    def device_graph(self, graph: Graph, dtype: np.dtype) -> "gpu.DeviceGraph":
        """``graph`` on this device in ``dtype``, uploaded once for a job's batches."""
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

    def batch_graph(self, graph: Graph, spec, batch_size: int, dtype: np.dtype,
                    predecessors: bool) -> "gpu.DeviceGraph":
        """:meth:`device_graph`, once the device is known to hold a batch of
        ``batch_size`` sources of ``spec`` beside it (:meth:`memory_needed`)."""
        needed = self.memory_needed(graph, batch_size, algorithm=spec, dtype=dtype,
                                    predecessors=predecessors)
        if self.resident(graph, dtype):
            needed -= csr_bytes(graph, dtype)
        self.ensure_memory(graph, needed, f"a batch of {batch_size} sources on "
                           f"{graph.n} vertices", hint="use a smaller --batch-size")
        return self.device_graph(graph, dtype)

    @staticmethod
    def kept(kind: str, key: tuple, make, limit: int):
        """What an algorithm keeps on the device: the ``kind`` cache's entry for ``key``
        (``(device, fingerprint, ...)``), made by ``make()`` where missing and published
        to the other threads' streams; the least recently used beyond ``limit``
        entries dropped.  ``make`` returning None keeps nothing."""
        with _LOCK:
            cache = _KEPT.setdefault(kind, OrderedDict())
            entry = cache.get(key)
            if entry is not None:
                cache.move_to_end(key)
                return entry
            entry = make()
            if entry is not None:
                entry = cache[key] = gpu.publish(entry)
                while len(cache) > limit:
                    cache.popitem(last=False)
            return entry

    @staticmethod
    def cache(kind: str) -> OrderedDict:
        """The ``kind`` cache itself, for an algorithm that manages its entries (hold
        :meth:`lock` meanwhile)."""
        with _LOCK:
            return _KEPT.setdefault(kind, OrderedDict())

    @staticmethod
    def lock() -> threading.RLock:
        """The lock of the caches."""
        return _LOCK

    # -- Backend -----------------------------------------------------------------------
    def potentials(self, graph: Graph) -> np.ndarray:
        f64 = np.dtype(np.float64)
        if not graph.has_negative_weights:
            return np.zeros(graph.n, dtype=np.float64)
        # state and predecessor words, lane masks, queues, the cycle check
        needed = graph.n * (16 + 16) + min(12 * (graph.n + 1), bellman_ford.CHECK_BYTES)
        if not self.resident(graph, f64):
            needed += csr_bytes(graph, f64)
        self.ensure_memory(graph, needed, f"Johnson potentials on {graph.n} vertices",
                           hint="use the cpu backend")
        return bellman_ford.bellman_ford_potentials(self.device_graph(graph, f64))

    def distances(
        self,
        graph: Graph,
        sources: np.ndarray,
        *,
        algorithm,
        dtype: np.dtype,
        predecessors: bool = False,
        potentials: np.ndarray | None = None,
        device: bool = False,
        targets: np.ndarray | None = None,
    ) -> BatchResult:
        """Distances from each of ``sources`` (internal indices) to every vertex, by
        ``algorithm`` (a name or a spec; its room's code for this backend).

        With ``device=True`` the blocks stay on the device (CuPy arrays), for a writer
        that stages them to the host itself, and the calling thread's current stream
        becomes its own (:func:`mgapsp.cuda.device.use_thread_stream`); ``stats["gpu_s"]``
        is the device time of the batch (CUDA events).

        ``dtype`` float32 or float64; predecessors need float32.  ``potentials``
        (johnson): the job's potentials; computed here when None.  ``targets``: an
        algorithm that gains by it (``phast``) returns only those columns.
        """
        spec = self._spec(graph, algorithm)
        run = spec.implementation().run.get(self.name)
        if run is None:
            raise UnsupportedError(f"{spec.name} brings no code for the gpu backend")
        dt = float_dtype(dtype)
        self._check_predecessors(dt, predecessors)
        src = self._check_sources(graph, sources)
        if len(src) == 0:
            return BatchResult(
                distances=np.empty((0, graph.n), dtype=dt),
                predecessors=np.empty((0, graph.n), dtype=np.int32) if predecessors else None,
                stats={"algorithm": spec.name, "backend": self.name, "rounds": 0,
                       "relaxations": 0},
            )
        if device:
            # this thread's own stream, from now on: the caller's next steps on the
            # block (the writer's compression and copies) follow it there, while the
            # worker's other thread runs its batch
            gpu.use_thread_stream()
        timer = staging.GPUTimer().start()
        result = run(self, graph, src, dtype=dt, predecessors=predecessors,
                     potentials=potentials, targets=targets)
        result.stats = {"algorithm": spec.name, "backend": self.name,
                        **(result.stats or {}), "gpu_s": timer.stop()}
        if not device:
            result.distances = gpu.to_host(result.distances)
            result.predecessors = gpu.to_host(result.predecessors)
        return result

    def fill_rows(self, graph, sources, dist, pred=None, *, batch_size, algorithm,
                  potentials=None, columns=None, on_rows=None, checked32=False) -> None:
        """As :meth:`Backend.fill_rows`; each block leaves the device through pinned
        buffers while the next batch computes (:mod:`mgapsp.cuda.host_copy`).  A
        batch's check (``checked32``) is read one batch later, so that the device
        never waits for it."""
        spec = self._spec(graph, algorithm)           # before the output is touched
        self._check_predecessors(float_dtype(dist.dtype), pred is not None)
        checks: list = []       # (first row, the batch's largest distance on the device)
        with gpu.caller_stream(), host_copy.HostCopier(dist, pred) as copier:
            for lo in range(0, len(sources), batch_size):
                hi = min(lo + batch_size, len(sources))
                # one block drains while the next computes: two on the device at most,
                # as the planner's batches allow
                copier.wait(backlog=1)
                if checks:
                    check_exact32(float(checks[0][1]), checks.pop(0)[0])
                res = self.distances(graph, sources[lo:hi], algorithm=spec,
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

    def device_rows(self, graph, sources, shape, dtype, *, predecessors, batch_size,
                    algorithm, potentials=None, columns=None, on_rows=None,
                    checked32=False) -> tuple:
        """As :meth:`Backend.device_rows`: the rows stay on this device, each batch's
        block copied into one CuPy array.  ``checked32``: from a batch whose largest
        distance reaches 2**24 on, the rows are computed in float64 (the array
        becomes float64), as :meth:`Backend.fill_rows_exact` does on the host."""
        spec = self._spec(graph, algorithm)           # before anything is allocated
        dt = float_dtype(dtype)
        self._check_predecessors(dt, predecessors)
        cupy = gpu.cupy_module()
        dist = cupy.empty(shape, dtype=dt)
        pred = cupy.empty((len(sources), graph.n), dtype=cupy.int32) if predecessors else None
        with gpu.caller_stream():
            for lo in range(0, len(sources), batch_size):
                hi = min(lo + batch_size, len(sources))
                while True:
                    res = self.distances(graph, sources[lo:hi], algorithm=spec,
                                         dtype=dist.dtype, predecessors=predecessors,
                                         potentials=potentials, device=True,
                                         targets=columns)
                    block = self.columns(res, columns)
                    if not (checked32 and dist.dtype == np.float32 and
                            float(self.largest_finite(block)) >= FLOAT32_EXACT):
                        break
                    dist = self._widened(dist, lo)
                dist[lo:hi] = block
                if pred is not None:
                    pred[lo:hi] = res.predecessors
                del res, block
                if on_rows:
                    on_rows(hi)
            # the rows are whole before the caller's stream reads them
            cupy.cuda.get_current_stream().synchronize()
        return dist, pred

    def _widened(self, dist, done: int):
        """``dist`` as float64 (its first ``done`` rows kept), or a one-line refusal
        where the device has no room for it beside the float32 rows."""
        cupy = gpu.cupy_module()
        try:
            wide = cupy.empty(dist.shape, dtype=cupy.float64)
        except cupy.cuda.memory.OutOfMemoryError:
            raise InsufficientMemoryError(
                f"float64 rows of {dist.shape[0]:,} x {dist.shape[1]:,} on the GPU (a "
                "batch's distances reach 2**24, past float32's exact integers)",
                dist.size * 8, self.memory_available(),
                "pass out= to stream them into a store instead") from None
        wide[:done] = dist[:done]
        return wide

    def dependencies(self, graph: Graph, sources, *, algorithm, dtype, batch_size: int,
                     checked32: bool = False, endpoints: bool = False,
                     edges: bool = False) -> tuple:
        """Brandes' dependencies of ``sources`` (distinct internal indices) summed per
        vertex, and per arc of ``graph``'s CSR with ``edges`` (else None), unscaled:
        host float64 arrays.  Each batch's distances by ``algorithm`` stay on the
        device, where its path counts and dependencies are computed
        (:mod:`mgapsp.cuda.brandes`) and added up; nothing per source leaves it.
        Ties are ``==`` on NetworkX's distances: the caller gives positive weights;
        integer ones in a ``dtype`` whose sums are exact (float32 ``checked32`` as in
        :meth:`Backend.row_metrics`), others in float64 by an algorithm that sums along
        paths (:func:`mgapsp.plan.brandes_algorithm`), whose distances are then
        brought to NetworkX's (:func:`mgapsp.cuda.brandes.add_dependencies`)."""
        spec = self._spec(graph, algorithm)
        dt = float_dtype(dtype)
        src = self._check_sources(graph, sources)
        searched = src[np.diff(graph.indptr)[src] > 0]   # an arcless source adds nothing
        cupy = gpu.cupy_module()
        with gpu.caller_stream():
            width = self._brandes_width(graph, spec, dt, min(batch_size, len(searched)))
            bc = cupy.zeros(graph.n, dtype=cupy.float64)
            ebc = cupy.zeros(graph.m, dtype=cupy.float64) if edges else None
            for lo in range(0, len(searched), width):
                chunk = searched[lo:lo + width]
                block = self.distances(graph, chunk, algorithm=spec, dtype=dt,
                                       device=True).distances
                if (checked32 and dt == np.float32
                        and float(self.largest_finite(block)) >= FLOAT32_EXACT):
                    dt = np.dtype(np.float64)           # this batch and the rest
                    block = self.distances(graph, chunk, algorithm=spec, dtype=dt,
                                           device=True).distances
                self._add_dependencies(graph, block, chunk, bc, ebc, endpoints)
                del block
            return gpu.to_host(bc), (gpu.to_host(ebc) if edges else None)

    def batch_dependencies(self, graph: Graph, block, sources: np.ndarray) -> np.ndarray:
        """As :meth:`Backend.batch_dependencies`, from ``block`` on its device where the
        weights are positive (zero weights: NetworkX's searches on the host)."""
        if graph.min_weight <= 0:
            return super().batch_dependencies(graph, block, sources)
        cupy = gpu.cupy_module()
        bc = cupy.zeros(graph.n, dtype=cupy.float64)
        if len(sources):
            self._add_dependencies(graph, cupy.asarray(block),
                                   np.asarray(sources, dtype=np.int64), bc, None, False)
        return gpu.to_host(bc)

    def dependency_bytes(self, graph: Graph) -> int:
        return brandes.column_bytes(graph.n, graph.m, np.float64)

    def _add_dependencies(self, graph, block, sources, bc, ebc, endpoints) -> None:
        dt = np.dtype(block.dtype)
        brandes.add_dependencies(self.device_graph(graph, dt), block, sources, bc, ebc,
                                 endpoints=endpoints,
                                 nearest=dt == np.float64 and not graph.exact_float64_sums)

    def _brandes_width(self, graph: Graph, spec, dtype: np.dtype, most: int) -> int:
        """Sources a batch of :meth:`dependencies` takes: at most ``most``, halved
        until the search's batch and Brandes' state fit on the device."""
        per = self.dependency_bytes(graph)
        width = max(1, most)
        needed = self.memory_needed(graph, width, algorithm=spec, dtype=dtype,
                                    predecessors=False) + width * per
        while width > 32 and needed > self.memory_available() * 0.9:
            width //= 2
            needed = self.memory_needed(graph, width, algorithm=spec, dtype=dtype,
                                        predecessors=False) + width * per
        self.ensure_memory(graph, needed, f"betweenness of {width} sources on "
                           f"{graph.n} vertices", hint="use the cpu backend")
        return width

    def to_device(self, array):
        """A host array on this device (a CuPy array)."""
        return gpu.to_device(array)

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

    def select_columns(self, block, columns: np.ndarray):
        return staging.select_columns(block, columns)

    def memory_available(self) -> int:
        """Free bytes on the current device plus what CuPy's memory pool holds free."""
        return gpu.memory_available()

    def memory_needed(self, graph: Graph, batch_size: int, *, algorithm,
                      dtype: np.dtype, predecessors: bool, fw_rows: int | None = None) -> int:
        """Bytes one batch of ``batch_size`` sources needs on the device, the graph's
        CSR included (an upper bound)."""
        spec = registry.resolve(algorithm)
        if not spec.runs_on(self.name):
            raise UnsupportedError(f"the gpu backend does not run {spec.name}; it runs "
                                   f"{', '.join(self.algorithms)}")
        dt = float_dtype(dtype)
        n, B = graph.n, int(batch_size)
        out = dt.itemsize + (4 if predecessors else 0)   # per (source, vertex) output
        # the graph, and the writer's scratch: it compresses a batch's chunks on the
        # device, FRAME_GROUP_BYTES at a time (a shuffled copy, LZ4 output, frames)
        fixed = csr_bytes(graph, dt) + 3 * min(FRAME_GROUP_BYTES, B * n * out)
        memory = spec.implementation().memory.get(self.name)
        if memory is None:      # the output block
            return fixed + B * n * out
        return fixed + memory(graph, B, dtype=dt, predecessors=predecessors,
                              fw_rows=fw_rows)
