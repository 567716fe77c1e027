"""The pipeline: plan batches, run them on Dask workers, record progress.

The client never computes distances.  It plans the job, checks the graph for negative
cycles (one task), creates the store, and keeps a bounded number of batch tasks
(``apsp-batch-<i>-<run token>``) in flight, each in the queue of
the worker whose share of the batches it is (``_Shares``).  Each worker loads the
graph from the store once per process (no ``scatter(broadcast=True)``: a lost worker
would lose it), computes its block with its backend, and writes the block's whole
chunks itself.
A worker flags its batch in ``batch_done`` once the batch's rows are written, so a
killed job resumes exactly where its store says; the client records the progress
attributes.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections import Counter, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import dask
import numpy as np

from . import fw_dist
from .backends.base import Backend, BatchResult
from .errors import InsufficientMemoryError, MgapspError, StoreError
from .graph import Graph
from .plan import DTYPES, JobPlan, choose_algorithm, choose_batch_size, column_chunk
from .store import Store

__all__ = ["get_backend", "run_job", "plan_job", "JobReport", "run_batch", "fw_by_slabs"]

#: Seconds to wait for the first worker of an attached cluster.
WORKER_WAIT_S = 120
#: Most seconds between two records of finished batches in the store.
PROGRESS_EVERY_S = 0.5
#: Batches in flight per worker thread: enough that a thread that frees always finds
#: one waiting in its worker's queue while the client hands out the next.
IN_FLIGHT_PER_THREAD = 4
#: Batches whose kernels run on one GPU at once (``MGAPSP_GPU_COMPUTING``); a GPU
#: worker's other threads meanwhile compress, copy and write their finished blocks.
#: All rows of p2p-Gnutella31 on nvidia-h200-x4, four threads per GPU, median of 5 jobs,
#: three calls: with 2 one GPU took 326.6, 312.8 and 306.6 ms, with 1 341.3, 325.5 and
#: 333.4 (four GPUs 129.2, 117.4, 114.5 against 127.3, 123.2, 115.2 ms).
GPU_COMPUTING = 2

#: The Dask event topic on which workers announce finished batches (``_announce``).
#: Every run uses this one topic (the scheduler keeps a bounded log of each topic's
#: events), and the client keeps the events of its own runs.
BATCH_TOPIC = "mgapsp-batches"

_BACKENDS: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The per-process backend singleton (it owns the device-resident caches)."""
    if name not in _BACKENDS:
        if name == "cpu":
            from .backends.cpu import CPUBackend

            _BACKENDS[name] = CPUBackend()
        elif name == "gpu":
            from .backends.gpu import GPUBackend

            _BACKENDS[name] = GPUBackend()
        else:
            raise MgapspError(f"unknown backend {name!r}; choose auto, gpu or cpu")
    return _BACKENDS[name]


def backend_algorithms(name: str) -> tuple[str, ...]:
    if name not in ("cpu", "gpu"):
        raise MgapspError(f"unknown backend {name!r}; choose auto, gpu, cpu or hybrid")
    if name == "cpu":
        from .backends.cpu import CPUBackend

        return CPUBackend.algorithms
    from .backends.gpu import GPUBackend

    return GPUBackend.algorithms


# -- worker side --------------------------------------------------------------
# A worker keeps what a run needs between its batches (``_Run``, keyed by the run's
# token, so that a later run into the same path, with other sources or targets, never
# sees this one's) and the graph (keyed by its fingerprint, a hash of the CSR: a rerun
# on the same graph does not load it again).  A run's store is opened in the
# background while its first batches compute: in a worker whose threads are busy
# each read through Zarr cost about 2 ms, and a thread's first batch waited 7.5 ms on
# them on an H200 machine.
_RUNS: dict[tuple[str, str, str], Future] = {}
_GRAPHS: dict[str, Graph] = {}
_LOADING = threading.Lock()
_GRAPH_LOADING = threading.Lock()
_OPENER = ThreadPoolExecutor(1, thread_name_prefix="mgapsp-open")
_SLOTS: dict[str, threading.BoundedSemaphore] = {}


def gpu_computing() -> int:
    """Batches computing at once on this process's GPU (``MGAPSP_GPU_COMPUTING``)."""
    from .writer import positive_from_env

    n = positive_from_env("MGAPSP_GPU_COMPUTING")
    return GPU_COMPUTING if n is None else n


def _gpu_slots() -> threading.BoundedSemaphore:
    with _LOADING:
        if "gpu" not in _SLOTS:
            _SLOTS["gpu"] = threading.BoundedSemaphore(gpu_computing())
        return _SLOTS["gpu"]


class _Run:
    """What a worker keeps of one run: its store, opened with the arrays that batches
    write, and its targets and potentials where it has them."""

    def __init__(self, store_path: str, fingerprint: str):
        store = Store.open(store_path, mode="r+")
        if store.fingerprint != fingerprint:
            raise MgapspError(f"{store_path}: stored graph does not match the job's "
                              f"fingerprint {fingerprint}")
        for name in ("distances", "batch_done") + (
                ("predecessors",) if store.job["predecessors"] else ()):
            store.array(name)
        self.store = store
        self.targets = store.target_index()
        self.potentials = store.potentials()
        self._sources: np.ndarray | None = None

    def sources(self) -> np.ndarray:
        """Internal index of every row (read once, when a task needs it)."""
        if self._sources is None:
            self._sources = self.store.source_index()
        return self._sources


def _open_run(store_path: str, fingerprint: str, run: str) -> Future:
    """The ``_Run`` of run ``run``: a future, opened once per process."""
    key = (os.path.abspath(store_path), fingerprint, run)
    with _LOADING:
        opening = _RUNS.get(key)
        if opening is None:
            _RUNS.clear()   # one run per worker at a time
            opening = _RUNS[key] = _OPENER.submit(_Run, store_path, fingerprint)
    return opening


def _job_store(store_path: str, fingerprint: str, run: str) -> Store:
    """The store of run ``run``; refuses another graph's store (by the fingerprint it
    records: cheap, for tasks that do not load the graph)."""
    return _open_run(store_path, fingerprint, run).result().store


def _graph(store_path: str, fingerprint: str, opening: Future) -> Graph:
    with _GRAPH_LOADING:    # a worker's threads start their first batches together
        if fingerprint not in _GRAPHS:
            graph = opening.result().store.load_graph()
            if graph.fingerprint != fingerprint:
                raise MgapspError(f"{store_path}: stored graph does not match the job's "
                                  f"fingerprint {fingerprint}")
            _GRAPHS.clear()     # free the last graph
            _GRAPHS[fingerprint] = graph
        return _GRAPHS[fingerprint]


def run_batch(store_path: str, fingerprint: str, run: str, batch: int, start: int,
              stop: int, sources: tuple[int, int] | None, backend: str, algorithm: str,
              dtype: str, predecessors: bool, cpu_algorithm: str | None = None,
              slab: bool = False) -> dict:
    """Worker task: compute rows ``start:stop`` of the store and write them.

    ``run`` names the run (``run_job``'s token): what a worker keeps of the store
    belongs to it.  ``sources`` is ``(lo, hi)`` where the rows' sources are the
    vertices ``lo .. hi - 1`` (internal indices), else None: the store lists them.
    With ``backend="hybrid"`` the worker uses its GPU when it has one, else the CPU
    backend with ``cpu_algorithm``.  With ``slab`` the rows come from this worker's
    slab of a Floyd-Warshall run across workers (``mgapsp.fw_dist``).
    """
    t0 = time.perf_counter()
    opening = _open_run(store_path, fingerprint, run)   # opens while the kernels run
    waited = queued = 0.0
    computing: list[float] = []
    result = None
    if slab:
        # rows of this worker's slab of the job's Floyd-Warshall (mgapsp.fw_dist); a
        # worker that lacks them (it replaced a lost one) computes them below
        rows = fw_dist.cached_rows(fingerprint, dtype, np.arange(start, stop))
        if rows is not None:
            result = BatchResult(distances=rows, predecessors=None,
                                 stats={"algorithm": algorithm, "cached": True})
    if result is None:
        t = time.perf_counter()
        graph = _graph(store_path, fingerprint, opening)
        if sources is not None:
            rows = np.arange(*sources, dtype=np.int64)
        else:
            rows = opening.result().sources()[start:stop]
        potentials = opening.result().potentials if graph.has_negative_weights else None
        waited += time.perf_counter() - t
        if backend == "hybrid":
            backend = _local_backend()
            if backend == "cpu":
                algorithm = cpu_algorithm
        # A GPU block stays on the device: the writer cuts it into chunks there and
        # stages them through pinned buffers (mgapsp.writer).  At most gpu_computing()
        # batches compute at once on a GPU; the worker's other threads write.
        slot = _gpu_slots() if backend == "gpu" else contextlib.nullcontext()
        t = time.perf_counter()
        with slot:
            queued = time.perf_counter() - t
            computing = [time.time()]
            result = get_backend(backend).distances(
                graph, rows, algorithm=algorithm, dtype=np.dtype(dtype),
                predecessors=predecessors, potentials=potentials, device=True)
            computing.append(time.time())
    t = time.perf_counter()
    job = opening.result()
    waited += time.perf_counter() - t
    store = job.store
    if job.targets is not None:
        from ._kernels.staging import select_columns

        result.distances = select_columns(result.distances, job.targets)
    t1 = time.perf_counter()
    written = store.write_block(start, result.distances, result.predecessors)
    t2 = time.perf_counter()
    if store.workers_mark_batches:
        store.mark_batch(batch)     # after its rows: a flag always means written
    t3 = time.perf_counter()
    stats = _plain({"batch": batch, "rows": stop - start, "compute_s": t1 - t0,
                    "load_s": waited, "queued_s": queued, "computing": computing,
                    "write_s": t3 - t1, "mark_s": t3 - t2,
                    "stage_s": written["copy_s"], "worker": _worker_name(),
                    "backend": backend,
                    "stored_bytes": written["bytes"], **(result.stats or {})})
    _announce(run, stats)
    return stats


def _plain(value):
    """``value`` with NumPy scalars as Python numbers and tuples as lists: what Dask's
    messages carry (msgpack)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _announce(run: str, stats: dict) -> None:
    """Tell the client of run ``run`` that a batch is written: its statistics as a Dask
    event on :data:`BATCH_TOPIC`, sent with the worker's next message to the scheduler
    (before the task's own end), so that the client need not fetch the task's result."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):   # not in a Dask worker's task
        return
    worker.log_event(BATCH_TOPIC, {"run": run, "stats": stats})


def _as_range(sources: np.ndarray) -> tuple[int, int] | None:
    """``(lo, hi)`` where ``sources`` are the vertices ``lo .. hi - 1``, else None (the
    worker reads them from the store): with 16 KB of sources in each task the first
    batch on four GPUs started 9.3 ms into the job, with ranges 5.9 ms."""
    if len(sources) and sources[-1] - sources[0] == len(sources) - 1 and (
            np.diff(sources) == 1).all():
        return int(sources[0]), int(sources[-1]) + 1
    return None


def _local_backend() -> str:
    from .cluster import gpu_count

    if "local" not in _BACKENDS_OF_PROCESS:
        _BACKENDS_OF_PROCESS["local"] = "gpu" if gpu_count() > 0 else "cpu"
    return _BACKENDS_OF_PROCESS["local"]


_BACKENDS_OF_PROCESS: dict[str, str] = {}


def compute_potentials(graph: Graph, backend: str) -> np.ndarray:
    """Worker task: Johnson potentials; raises NegativeCycleError."""
    if backend == "hybrid":
        backend = _local_backend()
    return get_backend(backend).potentials(graph)


def probe_worker(backend: str) -> dict:
    """Run on every worker by ``client.run``: what it has to offer."""
    from .cluster import gpu_count

    info = {"gpus": gpu_count()}
    if backend in ("gpu", "auto", "hybrid") and info["gpus"]:
        info["gpu_memory"] = get_backend("gpu").memory_available()
    info["cpu_memory"] = get_backend("cpu").memory_available()
    return info


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:
        return "local"


# -- client side --------------------------------------------------------------
@dataclass
class JobReport:
    """What a run did: for summaries, progress attributes and tests."""

    plan: JobPlan
    store: Store | None
    seconds: float = 0.0
    batches_run: int = 0
    rows_run: int = 0
    resumed_batches: int = 0
    per_worker: Counter = field(default_factory=Counter)
    per_backend: Counter = field(default_factory=Counter)
    compute_s: float = 0.0
    #: device seconds (CUDA events) of each GPU worker's batches
    gpu_s: Counter = field(default_factory=Counter)
    #: each worker's spans of wall-clock time (its own clock) during which a batch of
    #: it computed: ``[(start, end), ...]``; batches computing at once overlap
    computing: dict = field(default_factory=dict)
    #: seconds each worker spent writing its blocks
    worker_write_s: Counter = field(default_factory=Counter)
    stored_bytes: int = 0
    #: what each batch's task returned (rows, seconds computing, loading the run's
    #: inputs, writing, marking, the worker...), in the order they finished
    batches: list = field(default_factory=list)
    #: a distributed Floyd-Warshall (mgapsp.fw_dist): ranks, exchange, method,
    #: seconds (its wall time), exchanged_bytes; empty otherwise
    floyd_warshall: dict = field(default_factory=dict)
    #: seconds before the batches: the workers probed, the job planned, the store
    #: created (the graph written into it) or opened; not in ``seconds``
    setup_s: float = 0.0
    #: seconds from the batches' start (``seconds`` counts from there, to the end of
    #: the last task, after the store's last record) to: the first tasks sent
    #: ("first_sent"), all of the first window sent ("window_sent"), the last batch
    #: announced ("last_result"), the store's last record written ("recorded")
    marks: dict = field(default_factory=dict)
    #: the client's wall clock (``time.time()``) when the batches started
    started: float = 0.0

    @property
    def rows_per_second(self) -> float:
        return self.rows_run / self.seconds if self.seconds > 0 else 0.0

    @property
    def write_s(self) -> float:
        """Seconds all workers together spent writing blocks."""
        return sum(self.worker_write_s.values())

    def gpu_busy(self) -> dict[str, float]:
        """Fraction of the job's wall time during which each GPU worker had a batch
        computing (batches computing at once count once); from the kernels' device
        time where the spans are not known (Floyd-Warshall slabs)."""
        if self.seconds <= 0:
            return {}
        busy = {w: min(1.0, s / self.seconds) for w, s in self.gpu_s.items()}
        for w, spans in self.computing.items():
            if w in busy:
                busy[w] = min(1.0, _covered(spans) / self.seconds)
        return busy

    def idle_ends(self) -> tuple[float, float] | None:
        """Seconds at the job's two ends during which no batch computed anywhere: from
        the batches' start to the first batch computing (Dask's hops to the workers),
        and from the last batch's kernels to the job's end (the last batches' writes,
        the notice of their end, the store's last record).  For a short job these are
        what it pays whatever its workers; None where no batch computed.  The spans are
        the workers' clocks: exact on one host, as good as the hosts' agreement across
        several."""
        spans = [s for w in self.computing.values() for s in w]
        if not spans or self.seconds <= 0:
            return None
        end = self.started + self.seconds
        first = min(a for a, _ in spans) - self.started
        last = end - max(b for _, b in spans)
        return (min(max(first, 0.0), self.seconds), min(max(last, 0.0), self.seconds))


def _covered(spans) -> float:
    """Seconds covered by the union of ``(start, end)`` spans."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


class _Shares:
    """Which batches each worker runs next.

    Each worker starts with a share of the batches in proportion to its threads, dealt
    in turn (a smooth weighted round robin: batch ``i`` of a two-worker job goes to
    worker ``i % 2``), and takes from its front.  Dealing spreads a graph's trends over
    every worker.  In p2p-Gnutella31 the sources that reach the giant strongly connected
    component (the costly ones) crowd the last quarter of the ids: contiguous shares gave
    the last of four workers 21% more of them than the mean, dealt shares 3%.
    One whose share is used up takes from the back of the largest share left, so the
    shares even out at each worker's pace (a hybrid job's CPU workers, a slower GPU,
    one that joined late or replaces a lost one).
    """

    def __init__(self, batches: list[int], threads: dict[str, int]):
        self.shares: dict[str, deque] = {w: deque() for w in sorted(threads)}
        total = sum(threads.values())
        credit = dict.fromkeys(self.shares, 0)
        for b in batches:
            for w in credit:
                credit[w] += threads[w]
            w = max(credit, key=credit.get)     # the first of the largest, in name order
            credit[w] -= total
            self.shares[w].append(b)

    @classmethod
    def by_owner(cls, batches: list[int], owner: Callable[[int], str]) -> "_Shares":
        """Shares of batches that belong to a worker (a Floyd-Warshall slab's rows)."""
        shares = cls([], {})
        for b in batches:
            shares.shares.setdefault(owner(b), deque()).append(b)
        return shares

    def take(self, worker: str, k: int, *, borrow: bool = True) -> list[int]:
        """Up to ``k`` batches for ``worker``: its own first, then (with ``borrow``) the
        largest share's last."""
        out: list[int] = []
        own = self.shares.get(worker, deque())
        while len(out) < k:
            if own:
                out.append(own.popleft())
                continue
            if not borrow:
                break
            largest = max(self.shares.values(), key=len, default=None)
            if not largest:
                break
            out.append(largest.pop())
        return out


class _Finished:
    """The batches of one run as they end, on the client.

    A worker announces each batch it wrote, with the batch's statistics, as its task's
    last step (``_announce``).  A batch ends for the client when its announcement
    arrives: its rows are written and flagged by then, and the announcement comes
    ahead of the task's own end (it leaves the worker first, and the task's end then
    waits for the next send of the worker's batched stream, up to 2 ms), with no
    fetch of the task's result through the scheduler.  The futures say how a batch
    failed; one that finished unannounced has its result fetched.  Each future is
    released once it finished (released sooner, its task would be cancelled while it
    returns, and its entry in the dashboard's task stream lost).
    """

    #: the runs in progress, by their token (events of other runs are dropped)
    _runs: dict[str, "_Finished"] = {}
    _lock = threading.Lock()

    def __init__(self, run: str):
        import queue

        self.run = run
        #: batches handed out that have not ended yet
        self.outstanding: set[int] = set()
        self._tasks: dict = {}      # key -> (batch, future), until the future ends
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._open = True
        with self._lock:
            self._runs[run] = self

    @staticmethod
    def subscribe(client) -> None:
        """Hear the workers' announcements on ``client``.  Called as a run starts, well
        before its first tasks: the client's messages to the scheduler go in batches at
        least 10 ms apart, and its first tasks must not wait behind this one.  Again for
        every run (a client that reconnected to its scheduler is subscribed anew)."""
        client.subscribe_topic(BATCH_TOPIC, _Finished._on_event)

    @classmethod
    def _on_event(cls, event) -> None:
        """On the client's event loop: an announced batch of one of this process's runs."""
        msg = event[1]
        if not isinstance(msg, dict):
            return
        mine = cls._runs.get(msg.get("run"))
        if mine is not None:
            mine._queue.put(("announced", _plain(msg["stats"])))   # lists, not tuples

    def _ended(self, fut) -> None:
        """A future's done callback (Dask's callback thread)."""
        if self._open:
            self._queue.put(("ended", fut))
        else:
            fut.release()

    def watch(self, futures: list, batches: list[int]) -> None:
        for fut, b in zip(futures, batches):
            self._tasks[fut.key] = (b, fut)
            self.outstanding.add(b)
            fut.add_done_callback(self._ended)

    def _get(self):
        import queue

        while True:
            try:
                return self._queue.get(timeout=1.0)
            except queue.Empty:     # let a KeyboardInterrupt in now and then
                continue

    def next(self) -> dict:
        """The statistics of the next batch to end; raises a batch's error."""
        while True:
            kind, item = self._get()
            if kind == "announced":
                if item["batch"] in self.outstanding:     # else a retried task's
                    self.outstanding.discard(item["batch"])
                    return item
                continue
            fut = item
            batch = self._tasks.pop(fut.key, (None, None))[0]
            if batch not in self.outstanding:
                fut.release()
                continue
            # raises the task's error (or CancelledError); else it finished, its
            # announcement lost
            stats = fut.result()
            fut.release()
            self.outstanding.discard(batch)
            return stats

    def close(self, *, cancel: bool = False) -> None:
        """Stop listening.  With ``cancel`` (a failed run), cancel the batches not ended;
        else wait until the tasks of the ended batches finished too (so that the task
        stream, and a performance report, holds every batch) and release them."""
        import queue

        if cancel:
            for batch, fut in list(self._tasks.values()):
                if batch in self.outstanding:
                    fut.cancel()
        else:
            while self._tasks:
                kind, item = self._get()
                if kind == "ended":
                    self._tasks.pop(item.key, None)
                    item.release()
        self._open = False
        with self._lock:
            self._runs.pop(self.run, None)
        while True:
            try:
                kind, item = self._queue.get_nowait()
            except queue.Empty:
                break
            if kind == "ended":
                item.release()


def _floyd_warshall_slabs(client, store: Store, graph: Graph, plan: JobPlan,
                          addresses: list[str], token: str, report: JobReport):
    """Run the job's Floyd-Warshall as one slab per worker (mgapsp.fw_dist); returns
    ``(bounds, address of each rank)`` for placing the batches."""
    bounds = fw_dist.slab_bounds(graph.n, len(addresses), plan.batch_size)
    ranks = addresses[:len(bounds)]
    prefix = f"apsp-fw-{token}"
    # GPU ranks exchange pivot rows with NCCL where every one has it (MGAPSP_FW_EXCHANGE
    # = dask forces Dask's comms); CPU ranks through Dask
    exchange = (os.environ.get("MGAPSP_FW_EXCHANGE", "nccl") if plan.backend == "gpu"
                else "dask")
    t0 = time.perf_counter()
    info = fw_dist.job_info(graph, plan.dtype, plan.backend)
    t_info = time.perf_counter() - t0
    futures = [client.submit(fw_dist.fw_rank, store.path, graph.fingerprint, token, prefix,
                             r, bounds, plan.backend, plan.dtype, info, tuple(ranks), exchange,
                             key=f"{prefix}-{r}", workers=[addr], allow_other_workers=False,
                             pure=False)
               for r, addr in enumerate(ranks)]
    try:
        results = fw_dist.gather_ranks(client, futures, prefix)
    finally:
        for f in futures:
            f.release()
    report.floyd_warshall = {
        "ranks": len(ranks), "exchange": results[0]["exchange"],
        "method": results[0]["method"], "attempts": results[0].get("attempts", []),
        "seconds": time.perf_counter() - t0, "info_s": t_info,
        "exchanged_bytes": sum(r.get("exchanged_bytes", 0) for r in results),
        "per_rank": results}
    for r in results:
        report.compute_s += r["seconds"]
        if "gpu_s" in r:
            report.gpu_s[r["worker"]] += r["gpu_s"]
    return bounds, ranks


def plan_job(graph: Graph, *, algorithm: str, backend: str, dtype: str, sources,
             batch_size: int | None, predecessors: bool, n_workers: int,
             memory: int, targets=None) -> JobPlan:
    """Resolve every choice of a job; raises before anything is written."""
    if str(dtype) not in DTYPES:
        raise MgapspError(f"unknown dtype {dtype!r}; choose float32 or float64")
    dtype = str(dtype)
    sources = (np.arange(graph.n, dtype=np.int64) if sources is None
               else graph.index_of(sources, what="source"))
    if len(sources) == 0:
        raise MgapspError("no sources given")
    if targets is not None:
        targets = graph.index_of(targets, what="target")
        if len(targets) == 0:
            raise MgapspError("no targets given")
        if predecessors:
            raise MgapspError("predecessors need every target (a path runs through other "
                              "vertices); drop --targets or --predecessors")
    cpu_algorithm = None
    if backend == "hybrid":
        cpu_algorithm = choose_algorithm(graph, algorithm, "cpu", len(sources),
                                         backend_algorithms("cpu"))
        backend_for_plan = "gpu"
    else:
        backend_for_plan = backend
    algorithm = choose_algorithm(graph, algorithm, backend_for_plan, len(sources),
                                 backend_algorithms(backend_for_plan))
    impl = get_backend("cpu") if backend == "cpu" else _gpu_sizer()
    slabs = fw_by_slabs(algorithm, backend, predecessors, sources, graph.n)
    per_row = max(1, impl.memory_needed(graph, 1, algorithm=algorithm, dtype=dtype,
                                        predecessors=predecessors)
                  - impl.memory_needed(graph, 0, algorithm=algorithm, dtype=dtype,
                                       predecessors=predecessors))
    if batch_size is None:
        batch_size = choose_batch_size(graph, len(sources), backend=backend_for_plan,
                                       n_workers=n_workers, bytes_per_row=per_row,
                                       memory=memory)
        if slabs and batch_size >= fw_dist.SLAB_ALIGN:
            # slabs are cut at multiples of lcm(batch, SLAB_ALIGN): keep it small
            batch_size -= batch_size % fw_dist.SLAB_ALIGN
    elif batch_size < 1:
        raise MgapspError(f"batch size must be >= 1, got {batch_size}")
    batch_size = int(min(batch_size, len(sources)))
    fw_rows = None
    if slabs:
        fw_rows = max(hi - lo for lo, hi in fw_dist.slab_bounds(graph.n, n_workers,
                                                                 batch_size))
    needed = impl.memory_needed(graph, batch_size, algorithm=algorithm, dtype=dtype,
                                predecessors=predecessors, fw_rows=fw_rows)
    if needed > memory:
        if fw_rows is not None:
            what = (f"floyd-warshall on {graph.n} vertices, {fw_rows} rows of the matrix "
                    f"per worker on the {backend} backend")
            hint = "use more workers, or dijkstra / johnson for a sparse graph"
        else:
            what = (f"{algorithm} on {graph.n} vertices and {graph.m} edges with batches "
                    f"of {batch_size} sources on the {backend} backend")
            hint = "use a smaller --batch-size" if batch_size > 1 else ""
        raise InsufficientMemoryError(what, needed, memory, hint)
    return JobPlan(algorithm=algorithm, backend=backend, dtype=dtype,
                   batch_size=batch_size, sources=sources, predecessors=predecessors,
                   col_chunk=column_chunk(graph.n if targets is None else len(targets),
                                          batch_size),
                   targets=targets, cpu_algorithm=cpu_algorithm)


def fw_by_slabs(algorithm: str, backend: str, predecessors: bool, sources: np.ndarray,
                n: int) -> bool:
    """Whether a job runs Floyd-Warshall as slabs across its workers (mgapsp.fw_dist):
    every row in order, no predecessors, one kind of worker."""
    return (algorithm == "floyd-warshall" and not predecessors and backend in ("cpu", "gpu")
            and len(sources) == n and bool((sources == np.arange(n)).all()))


def _gpu_sizer():
    # GPUBackend's sizing is plain arithmetic; constructing it touches no device.
    from .backends.gpu import GPUBackend

    return GPUBackend()


def run_job(graph: Graph, out, client, *, algorithm: str = "auto", backend: str = "auto",
            dtype: str = "float32", sources=None, targets=None,
            batch_size: int | None = None, compression: str = "lz4", shards: bool = True,
            predecessors: bool = False, resume: bool = False, overwrite: bool = False,
            on_start: Callable[[JobReport], None] | None = None,
            on_progress: Callable[[JobReport, int, int], None] | None = None) -> JobReport:
    """Compute the rows of ``sources`` into the store at ``out`` on ``client``'s workers."""
    t_call = time.perf_counter()
    if resume and overwrite:
        raise MgapspError("--resume and --overwrite contradict each other; pick one")
    out = os.fspath(out)
    # Task keys are apsp-batch-<i>-<token>: the dashboard groups them as
    # "apsp-batch", and two jobs on one cluster (or a rerun after a failure, whose
    # erred keys the scheduler may still hold) never share a key.
    token = uuid.uuid4().hex[:8]
    _Finished.subscribe(client)
    if not client.scheduler_info()["workers"]:
        # A cluster being started (a recipe, a batch system) may have no worker yet.
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            raise MgapspError(f"no worker joined the Dask cluster at "
                              f"{client.scheduler.address} within {WORKER_WAIT_S} s") from None
    workers = client.run(probe_worker, backend)
    if not workers:
        raise MgapspError("the Dask cluster has no workers")
    with_gpu = [w for w in workers.values() if w["gpus"] > 0]
    if backend == "auto":
        backend = ("gpu" if len(with_gpu) == len(workers) else
                   "hybrid" if with_gpu else "cpu")
    if backend == "gpu" and len(with_gpu) < len(workers):
        raise MgapspError("the gpu backend was asked for, but some workers see no GPU")
    if backend == "hybrid":
        # Batches are sized for the GPUs; CPU workers get the same rows at their pace.
        memory = min((w["gpu_memory"] for w in with_gpu),
                     default=min(w["cpu_memory"] for w in workers.values()))
    else:
        memory_key = "gpu_memory" if backend == "gpu" else "cpu_memory"
        memory = min(w[memory_key] for w in workers.values())

    existing = Store.exists(out) and resume
    if existing:
        store = Store.open(out, mode="r+")
        job = store.job
        if algorithm == "auto":
            algorithm = job["algorithm"]
        if batch_size is None:
            batch_size = job["batch_size"]
    plan = plan_job(graph, algorithm=algorithm, backend=backend, dtype=dtype,
                    sources=sources, batch_size=batch_size, predecessors=predecessors,
                    n_workers=len(workers), memory=memory, targets=targets)
    if existing:
        store.check_resume(graph, plan)
    elif os.path.exists(out) and not overwrite:
        raise StoreError(f"{out} already exists; pass --resume to continue it or "
                         "--overwrite to replace it")
    potentials = store.potentials() if existing else None
    if graph.has_negative_weights and potentials is None:
        # One task checks the whole graph for negative cycles before anything is
        # written; Johnson reuses its potentials for every batch.
        fut = client.submit(compute_potentials, graph, backend,
                            key=f"apsp-potentials-{token}")
        try:
            potentials = fut.result()
        finally:
            fut.release()
    if not existing:
        store = Store.create(out, graph, plan, overwrite=overwrite,
                             potentials=potentials, compression=compression,
                             shards=shards)

    done = store.done_mask()
    report = JobReport(plan=plan, store=store, resumed_batches=int(done.sum()))
    todo = [b for b in range(plan.n_batches) if not done[b]]
    rows_done = sum(plan.rows(b)[1] - plan.rows(b)[0] for b in np.flatnonzero(done))
    if on_start:
        on_start(report)
    threads = client.nthreads()
    t0 = time.perf_counter()
    report.started = time.time()
    report.setup_s = t0 - t_call
    slabs = bool(todo) and fw_by_slabs(plan.algorithm, plan.backend, plan.predecessors,
                                       plan.sources, graph.n)
    if slabs:
        bounds, ranks = _floyd_warshall_slabs(client, store, graph, plan, sorted(workers),
                                              token, report)

        def owner(b: int) -> str:
            # a slab's batches go to the worker holding it (elsewhere only if it is
            # lost: there the backend computes the whole matrix)
            return ranks[fw_dist.owner_of_rows(bounds, plan.rows(b)[0])]

        shares = _Shares.by_owner(todo, owner)
    else:
        owner = None
        shares = _Shares(todo, threads)

    def submit(placed: list[tuple[int, str]]) -> list:
        """Futures of ``(batch, worker)`` pairs: one ``client.map``, so one message to
        the scheduler, each task (loosely) restricted to its worker.  Restricted tasks
        skip the scheduler's queue and wait in the worker's own, where a thread that
        frees finds the next batch at once."""
        if not placed:
            return []
        keys = [f"apsp-batch-{b}-{token}" for b, _ in placed]
        where = {k: [w] for k, (_, w) in zip(keys, placed)}
        rows = [plan.rows(b) for b, _ in placed]
        k = len(placed)
        # allow_other_workers: a lost worker's batches run elsewhere, and Dask's work
        # stealing may move queued ones to an idle worker (one that joined late)
        with dask.annotate(workers=where.get, allow_other_workers=True):
            futures = client.map(
                run_batch, [store.path] * k, [graph.fingerprint] * k, [token] * k,
                [b for b, _ in placed],
                [r[0] for r in rows], [r[1] for r in rows],
                [_as_range(plan.sources[r[0]:r[1]]) for r in rows], [plan.backend] * k,
                [plan.algorithm] * k, [plan.dtype] * k, [plan.predecessors] * k,
                [plan.cpu_algorithm] * k, [slabs] * k, key=keys)
        finished.watch(futures, [b for b, _ in placed])
        return futures

    def place(b: int, runner: str) -> tuple[int, str]:
        return b, (owner(b) if owner else runner)

    # Each worker keeps IN_FLIGHT_PER_THREAD batches per thread in flight; every
    # finished batch's worker gets the next one, so work follows each worker's pace.
    # A batch per thread goes first, in a message of its own, so that the scheduler
    # need not read the whole window before the first batches start; the rest follow
    # while those run.
    # Until a worker finishes a batch it takes from its own share only.
    first = [place(b, w) for w in sorted(threads)
             for b in shares.take(w, threads[w], borrow=False)]
    more = [place(b, w) for w in sorted(threads)
            for b in shares.take(w, (IN_FLIGHT_PER_THREAD - 1) * threads[w], borrow=False)]
    finished = _Finished(token)
    submit(first)
    report.marks["first_sent"] = time.perf_counter() - t0
    submit(more)
    report.marks["window_sent"] = time.perf_counter() - t0
    n_done = int(done.sum())
    # Progress is recorded in the store's attributes at most every PROGRESS_EVERY_S
    # (and at the end, or when the job fails): a record per batch cost the client a
    # rewrite of zarr.json each time, in the loop that hands out work.  The batches'
    # flags are the workers' (a store from before, with one chunk for all flags, gets
    # them in these records: a killed driver loses at most that long of records, and
    # those batches are computed again on --resume).
    unrecorded: list[int] = []
    recorded_at = time.perf_counter()

    def record():
        nonlocal recorded_at
        if unrecorded:
            store.mark_done(unrecorded, rows_done, n_done)
            unrecorded.clear()
        recorded_at = time.perf_counter()

    try:
        while finished.outstanding:
            stats = finished.next()
            nxt = shares.take(stats["worker"], 1)
            if nxt:
                submit([place(nxt[0], stats["worker"])])
            n_done += 1
            rows_done += stats["rows"]
            unrecorded.append(stats["batch"])
            report.batches_run += 1
            report.batches.append(stats)
            report.rows_run += stats["rows"]
            report.per_worker[stats["worker"]] += 1
            report.per_backend[stats["backend"]] += stats["rows"]
            report.compute_s += stats["compute_s"]
            report.worker_write_s[stats["worker"]] += stats["write_s"]
            report.stored_bytes += stats["stored_bytes"]
            if "gpu_s" in stats:
                report.gpu_s[stats["worker"]] += stats["gpu_s"]
            if stats["computing"]:
                report.computing.setdefault(stats["worker"], []).append(
                    tuple(stats["computing"]))
            report.seconds = time.perf_counter() - t0
            if time.perf_counter() - recorded_at >= PROGRESS_EVERY_S:
                record()
            if on_progress:
                on_progress(report, rows_done, plan.n_sources)
    except BaseException:
        finished.close(cancel=True)
        record()
        raise
    finally:
        if slabs:
            client.run(fw_dist.drop_slabs)
    report.marks["last_result"] = time.perf_counter() - t0
    try:
        if n_done == plan.n_batches:
            # the last batches and the job's end in one update of the store
            store.mark_done(unrecorded, rows_done, n_done, complete=True, extra={
                "last_run_seconds": round(time.perf_counter() - t0, 3),
                "last_run_rows": report.rows_run,
                "last_run_workers": dict(report.per_worker)})
            unrecorded.clear()
        else:
            record()
        report.marks["recorded"] = time.perf_counter() - t0
    finally:
        # the last tasks finish while the store's record is written
        finished.close()
    report.seconds = time.perf_counter() - t0
    return report
