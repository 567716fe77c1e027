"""What runs on the workers: the batch task and what a worker keeps between batches.

A worker keeps the run's store (opened once per run, keyed by the run's token, so that
a later run into the same path never sees this one's) and the graph (keyed by its
fingerprint, a hash of the CSR: a rerun on the same graph does not load it again).
It loads the graph from the store itself rather than receiving it by
``scatter(broadcast=True)``, so that a replacement worker has it too.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from pathlib import Path

import numpy as np

from .. import config, hierarchy
from ..algorithms import needs_hierarchy
from ..backends import BatchResult, get_backend
from ..backends.base import check_exact32
from ..reductions import HISTOGRAM_BINS, lone_reductions, metric_values
from ..gpu_count import gpu_count
from ..errors import MgapspError
from ..graph import Graph
from ..store import Store, location, place_of

__all__ = ["run_batch", "job_store", "prepare_backend", "compute_potentials", "compute_hierarchy",
           "hierarchy_dir",
           "probe_worker", "cached_rows", "keep_slab", "drop_slabs"]

_LOCK = threading.Lock()
_RUNS: dict[tuple[str, str, str], "_Run"] = {}
_GRAPHS: dict[str, Graph] = {}
_SLOTS: list[threading.BoundedSemaphore] = []
#: (fingerprint, dtype str) -> (r0, r1, rows r0:r1 of the distance matrix): this
#: process's slab of a Floyd-Warshall run across workers (mgapsp.jobs.floyd_warshall_slabs)
_SLABS: dict[tuple[str, str], tuple[int, int, object]] = {}


class _Run:
    """What a worker keeps of one run: its store, opened with the arrays that batches
    write, and its targets and potentials where it has them."""

    def __init__(self, store_path: str, fingerprint: str, run: str):
        store = Store.open(store_path, mode="r+")
        if store.fingerprint != fingerprint:
            raise MgapspError(f"{store_path}: stored graph does not match the job's "
                              f"fingerprint {fingerprint}")
        rows = store.job.get("distances", True)
        for name in (("distances",) if rows else ()) + ("batch_done",) + (
                ("predecessors",) if store.job["predecessors"] else ()):
            store.array(name)
        self.store = store
        self.guard = store.guard(run)     # another run's store gets nothing from us
        self.targets = store.target_index()
        self.potentials = store.potentials()


def _run(store_path: str, fingerprint: str, run: str) -> _Run:
    """The run ``run``'s store and inputs, opened once per process (one run at a time)."""
    key = (location(store_path), fingerprint, run)
    with _LOCK:
        if key not in _RUNS:
            _RUNS.clear()
            _RUNS[key] = _Run(store_path, fingerprint, run)
        return _RUNS[key]


def job_store(store_path: str, fingerprint: str, run: str) -> Store:
    """The store of run ``run``; refuses another graph's store."""
    return _run(store_path, fingerprint, run).store


def _graph(job: _Run, fingerprint: str) -> Graph:
    with _LOCK:
        if fingerprint not in _GRAPHS:
            graph = job.store.load_graph()
            if graph.fingerprint != fingerprint:
                raise MgapspError(f"{job.store.path}: stored graph does not match the "
                                  f"job's fingerprint {fingerprint}")
            _GRAPHS.clear()     # free the last graph
            _GRAPHS[fingerprint] = graph
        return _GRAPHS[fingerprint]


class _Computing:
    """The batches of this process that compute on its GPU or wait to: while there are
    none, a batch's writes may take every thread (no kernel launch waits for the
    interpreter), as the last batches of a job do.  Not the rows of a Floyd-Warshall
    slab: every rank writes at once there, and more threads per rank slowed the
    host's page cache (two GPUs)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.count = 0

    @contextlib.contextmanager
    def batch(self):
        with self._lock:
            self.count += 1
        try:
            with _gpu_slot():
                yield
        finally:
            with self._lock:
                self.count -= 1

    def idle(self) -> bool:
        return self.count == 0


_COMPUTING = _Computing()


def _gpu_slot() -> threading.BoundedSemaphore:
    """At most ``mgapsp.gpu.computing-batches`` batches compute at once on this
    process's GPU; the worker's other threads write finished blocks meanwhile."""
    with _LOCK:
        if not _SLOTS:
            _SLOTS.append(threading.BoundedSemaphore(config.get("gpu.computing-batches")))
        return _SLOTS[0]


def local_backend() -> str:
    """The backend this process runs: its GPU where it sees one."""
    return "gpu" if gpu_count() > 0 else "cpu"


def run_batch(store_path: str, fingerprint: str, run: str, batch: int, start: int,
              stop: int, sources: np.ndarray, backend: str, algorithm: str, dtype: str,
              predecessors: bool, cpu_algorithm: str | None = None,
              slab: bool = False, checked32: bool = False) -> dict:
    """Worker task: compute rows ``start:stop`` of the store (the distances from
    ``sources``, internal indices) and write them; returns the batch's statistics.

    ``run`` names the run (:func:`mgapsp.jobs.driver.run_job`'s token).  With
    ``backend="hybrid"`` the worker uses its GPU when it has one, else the CPU backend
    with ``cpu_algorithm``.  With ``slab`` the rows come from this worker's slab of a
    Floyd-Warshall run across workers (:mod:`mgapsp.jobs.floyd_warshall_slabs`).  With
    ``checked32`` (a float32 plan's ``checked32``) a batch whose largest distance
    reaches 2**24 raises :class:`~mgapsp.errors.Float32Inexact` before it writes.
    """
    t0 = time.perf_counter()
    job = _run(store_path, fingerprint, run)
    computing: list[float] = []
    queued_s = 0.0          # waiting for the GPU's computing slot
    result = None
    if slab:
        # a worker that lacks the rows (it replaced a lost one) computes them below
        rows = cached_rows(fingerprint, dtype, np.arange(start, stop))
        if rows is not None:
            result = BatchResult(distances=rows, predecessors=None,
                                 stats={"algorithm": algorithm, "cached": True})
    if backend == "hybrid":
        backend = local_backend()
        if backend == "cpu":
            algorithm = cpu_algorithm
    impl = get_backend(backend)
    load_s = time.perf_counter() - t0
    metrics = job.store.job.get("metrics")
    keep_rows = job.store.job.get("distances", True)
    searched = None         # (rows searched, rows of the batch), where not all of them
    if result is None:
        graph = _graph(job, fingerprint)
        if not keep_rows and job.targets is None:
            # metrics alone: a source without arcs reaches itself only, no search
            searched = (np.flatnonzero(np.diff(graph.indptr)[sources] > 0), len(sources))
            sources = np.asarray(sources)[searched[0]]
        potentials = job.potentials if graph.has_negative_weights else None
        if needs_hierarchy(algorithm):   # the job's hierarchy, once per process
            hierarchy.for_graph(graph, hierarchy_dir(store_path))
        load_s = time.perf_counter() - t0
        # a GPU block stays on the device: the writer cuts (and compresses) it there
        slot = _COMPUTING.batch() if backend == "gpu" else contextlib.nullcontext()
        t = time.perf_counter()
        with slot:
            queued_s = time.perf_counter() - t
            computing = [time.time()]
            if len(sources):
                result = impl.distances(graph, np.asarray(sources, dtype=np.int64),
                                        algorithm=algorithm, dtype=np.dtype(dtype),
                                        predecessors=predecessors, potentials=potentials,
                                        device=True, targets=job.targets)
            computing.append(time.time())
    first_row = None
    if result is not None:
        result.distances = impl.columns(result, job.targets)
        if checked32:
            check_exact32(float(impl.largest_finite(result.distances)), 0, batch)
        if start == 0 and keep_rows:
            # what the job's summary says of the store's first row, reduced here: read
            # back, that row would cost the decoding of its batch's every chunk
            red = impl.row_reductions(result.distances[:1])
            first_row = {"reachable": int(red["reachable"][0]),
                         "farthest": float(red["eccentricity"][0])}
    if metrics:         # reduced on the block's device, before the writer frees it
        # Brandes' counting takes the GPU as a search does: one batch at a time
        slot = (_COMPUTING.batch() if backend == "gpu" and "betweenness" in metrics
                else contextlib.nullcontext())
        with slot:
            values = _batch_metrics(impl, result, metrics, sources, job.targets, searched,
                                    _graph(job, fingerprint))
    t1 = time.perf_counter()
    if keep_rows:
        written = job.store.write_block(start, result.distances, result.predecessors,
                                        staging=impl.staging, guard=job.guard,
                                        wide=_COMPUTING.idle() and not slab)
    else:               # the metrics alone (--no-distances)
        written = {"copy_s": 0.0, "encode_s": 0.0, "bytes": 0, "stages": {}, "spans": []}
    if metrics:
        job.store.write_metrics(batch, values, guard=job.guard)
    if job.store.workers_mark_batches:
        # after its rows: a flag always means written
        job.store.mark_batch(batch, guard=job.guard)
    t2 = time.perf_counter()
    return _plain({"batch": batch, "rows": stop - start, "compute_s": t1 - t0,
                   "load_s": load_s, "queued_s": queued_s, "computing": computing, "write_s": t2 - t1,
                   "stage_s": written["copy_s"], "stages": written["stages"],
                   "encoding": written["spans"],
                   "written": time.time(),
                   "worker": worker_name(),
                   "backend": backend, "stored_bytes": written["bytes"],
                   **({"first_row": first_row} if first_row else {}),
                   **((result and result.stats) or {})})


def _batch_metrics(impl, result, metrics, sources, targets, searched, graph) -> dict:
    """The batch's metrics (:func:`metric_values`, and its histogram and its sources'
    betweenness where asked) from its block, on the block's device.  ``searched``:
    ``(rows, k)`` where the block holds only those rows of the batch's ``k`` (the others
    reach only themselves, and add nothing to any betweenness)."""
    n = graph.n if result is None else result.distances.shape[1]
    if searched is None:
        red = impl.row_reductions(result.distances)
    else:
        rows, k = searched
        red = lone_reductions(k)
        if result is not None:
            for name, values in impl.row_reductions(result.distances).items():
                red[name][rows] = values
    own = None if targets is None else np.isin(sources, targets)
    values = metric_values(red, n, own)
    if "histogram" in metrics:
        if result is None:
            values["histogram"] = np.zeros(HISTOGRAM_BINS, dtype=np.uint64)
        else:
            own = (len(sources) if targets is None
                   else int(np.isin(sources, targets).sum()))
            values["histogram"] = impl.histogram_counts(result.distances, own)
    if "betweenness" in metrics:
        values["betweenness"] = (np.zeros(graph.n) if result is None else
                                 impl.batch_dependencies(graph, result.distances,
                                                         np.asarray(sources, np.int64)))
    return values


def keep_slab(fingerprint: str, dtype, r0: int, r1: int, rows) -> None:
    """Keep rows ``r0:r1`` of the graph's distance matrix for the batches that write
    them."""
    _SLABS[(fingerprint, np.dtype(dtype).str)] = (r0, r1, rows)


def cached_rows(fingerprint: str, dtype, rows: np.ndarray):
    """Rows ``rows`` (ascending and contiguous) of this process's slab of the graph's
    distance matrix, as a view; None when this process does not hold them all."""
    entry = _SLABS.get((fingerprint, np.dtype(dtype).str))
    rows = np.asarray(rows)
    if entry is None or len(rows) == 0:
        return None
    r0, r1, dist = entry
    a, b = int(rows[0]), int(rows[-1]) + 1
    if a < r0 or b > r1 or b - a != len(rows) or not (np.diff(rows) == 1).all():
        return None
    return dist[a - r0:b - r0]


def drop_slabs() -> int:
    """Free this process's slabs (run on every worker when a job ends)."""
    k = len(_SLABS)
    _SLABS.clear()
    return k


def _plain(value):
    """``value`` with NumPy scalars as Python numbers and tuples as lists (what Dask's
    messages carry)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def hierarchy_dir(store_path: str) -> Path:
    """Where a job's contraction hierarchies are kept (``mgapsp.phast.hierarchy-dir``,
    else a folder beside its store)."""
    where = config.get("phast.hierarchy-dir")
    if where:
        return Path(where)
    beside = place_of(store_path).beside("mgapsp-hierarchies")
    if beside is None:
        # object storage is no folder to keep files in: each host keeps its own
        cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(cache) / "mgapsp" / "hierarchies"
    return beside


def compute_hierarchy(graph: Graph, store_path: str) -> dict:
    """Worker task: the job's contraction hierarchy, read from its folder or built
    and saved there (before any batch needs it); returns its size."""
    t0 = time.perf_counter()
    h = hierarchy.for_graph(graph, hierarchy_dir(store_path))
    return {**hierarchy.describe(h), "seconds": time.perf_counter() - t0}


def compute_potentials(graph: Graph, backend: str) -> np.ndarray:
    """Worker task: Johnson potentials; raises NegativeCycleError."""
    if backend == "hybrid":
        backend = local_backend()
    return get_backend(backend).potentials(graph)


def prepare_backend(backend: str, algorithm: str, dtype: str, steps: int) -> None:
    """Worker task (``client.run``): let the job's backend start loading what its
    batches need (:meth:`mgapsp.backends.Backend.prepare`)."""
    get_backend(backend).prepare(algorithm, dtype, steps)


def probe_worker(backend: str) -> dict:
    """Run on every worker by ``client.run``: what it has to offer."""
    info = {"gpus": gpu_count()}
    if backend in ("gpu", "auto", "hybrid") and info["gpus"]:
        info["gpu_memory"] = get_backend("gpu").memory_available()
    info["cpu_memory"] = get_backend("cpu").memory_available()
    return info


def worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:
        return "local"
