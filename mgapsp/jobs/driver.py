"""The client side of a job: plan, create the store, run the batches on Dask, record.

The client never computes distances.  It probes the workers, plans the job, checks
the graph for negative cycles (one task), creates the store, and keeps a bounded
window of batch tasks (``apsp-batch-<i>-<run token>``) in flight with
``as_completed``; Dask places each on a worker as a thread frees.  Each worker loads
the graph from the store once per process, computes its block with its backend and
writes the block's whole chunks itself (:mod:`mgapsp.jobs.tasks`).  A worker flags
its batch in ``batch_done`` once the batch's rows are written, so a killed job
resumes exactly where its store says; the client records the progress attributes.

A run holds the store's lock and writes its id into the store, which every worker
checks before it puts a file in place (:mod:`mgapsp.store.lock`); a watchdog ends a
job that can no longer progress with one error (:mod:`mgapsp.jobs.watchdog`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from distributed import as_completed

from .. import config, hierarchy
from ..algorithms import needs_hierarchy
from ..errors import Float32Inexact, MgapspError, UnsupportedError
from ..graph import Graph
from ..plan import float64_after, fw_by_slabs, owner_of_rows, plan_job
from ..store import (Store, StoreLock, check_target, damaged_batches, location, new_run_id,
                     store_size)
from . import floyd_warshall_slabs as slabs
from .cluster import ConfigPlugin
from .dashboard import reporting
from .report import JobReport
from .tasks import (compute_hierarchy, compute_potentials, drop_slabs, hierarchy_dir,
                    prepare_backend, probe_worker, run_batch)
from .watchdog import Watchdog, beside_hung_workers

__all__ = ["run_job", "JobRequest", "check_for_repair", "repair_job"]

log = logging.getLogger(__name__)


@dataclass
class JobRequest:
    """What a caller asks of a job (:func:`run_job`'s arguments), before any choice."""

    graph: Graph
    out: str
    algorithm: str = "auto"
    backend: str = "auto"
    dtype: str = "auto"
    sources: object = None
    targets: object = None
    batch_size: int | None = None
    compression: str = "auto"
    shards: bool = True
    predecessors: bool = False
    #: per-source metrics stored beside the rows (mgapsp.plan.METRICS)
    metrics: tuple = ()
    #: store the rows (False: the metrics alone)
    distances: bool = True
    resume: bool = False
    overwrite: bool = False
    check: str = "auto"
    on_start: Callable[[JobReport], None] | None = None
    on_progress: Callable[[JobReport, int, int], None] | None = None


def run_job(graph: Graph, out, client, *, lock: StoreLock | None = None,
            **options) -> JobReport:
    """Compute the rows of ``sources`` into the store at ``out`` on ``client``'s workers;
    ``options`` are :class:`JobRequest`'s fields (algorithm, backend, dtype, sources,
    targets, batch_size, compression, shards, predecessors, metrics, resume, overwrite,
    check, on_start, on_progress).

    The run holds the store's lock throughout (:mod:`mgapsp.store.lock`): ``lock``,
    taken by the caller, or one it takes.  A resumed store's flagged batches are
    checked first (``check``: ``"quick"``, each file whole, ``"deep"``, every
    chunk's checksum too, or ``"auto"``, deep for a store of at most
    ``mgapsp.store.deep-check-bytes``); damaged ones are computed again.
    """
    t_call = time.perf_counter()
    request = JobRequest(graph, os.fspath(out), **options)
    if request.resume and request.overwrite:
        raise MgapspError("--resume and --overwrite contradict each other; pick one")
    # The run's id: task keys are apsp-batch-<i>-<id> (the dashboard groups them as
    # "apsp-batch", and two jobs on one cluster, or a rerun after a failure whose
    # erred keys the scheduler may still hold, never share a key), and the store
    # records it so that only this run's workers write into it.
    own = lock is None          # else the caller took it, before its own preparations
    if own:
        lock = StoreLock(request.out, new_run_id()).acquire()
    try:
        return _Job(request, client, lock, t_call).run()
    finally:
        if own:
            lock.release()


class _Job:
    """One run of a job, step by step (:meth:`run`): each step a method, its state on
    the instance."""

    def __init__(self, request: JobRequest, client, lock: StoreLock, t_call: float):
        self.req, self.client, self.lock, self.t_call = request, client, lock, t_call
        self.token = lock.run_id
        self.store: Store | None = None
        self.existing = False
        self.damaged: dict[int, str] = {}
        self.resume_check: str | None = None    # "deep" or "quick", for a resumed store
        #: seconds of each step before the batches (JobReport.setup)
        self.setup: dict[str, float] = {}

    def step(self, name: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, its seconds added to the setup step ``name``."""
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.setup[name] = self.setup.get(name, 0.0) + time.perf_counter() - t0

    def run(self) -> JobReport:
        state = check_target(self.req.out, resume=self.req.resume,
                             overwrite=self.req.overwrite)
        self.step("probe", self.probe)
        self.step("store opened", self.open_existing, state)
        self.plan = self.step("plan", self.make_plan, may_build=True)
        self.step("kernels", self.prepare)
        self.step("resume check", self.check_existing)
        potentials = self.step("negative-cycle check", self.potentials)
        self.step("hierarchy", self.hierarchy)
        if not self.existing:
            self.step("store", self.create_store, potentials)
        try:
            return self.compute()
        except Float32Inexact as exc:
            if not self.plan.checked32:
                raise
            return self.again_in_float64(exc)

    def create_store(self, potentials=None) -> None:
        self.store = Store.create(self.req.out, self.req.graph, self.plan,
                                  overwrite=self.overwrite, potentials=potentials,
                                  compression=self.req.compression,
                                  shards=self.req.shards, run_id=self.token)

    def again_in_float64(self, exc: Float32Inexact) -> JobReport:
        """A batch checked in float32 reached 2**24 (see :func:`mgapsp.plan.choose_dtype`):
        the job runs again in float64, into a new store (the float32 one cannot hold
        its rows), as a new run whose id the old run's batches, still finishing, do
        not match, so that they write nothing into it."""
        log.info("%s: %s; the job runs again in float64", self.req.out, exc)
        self.plan = float64_after(self.plan, exc)
        if self.plan.predecessors and self.plan.backend in ("gpu", "hybrid"):
            raise UnsupportedError(f"predecessors on the GPU need float32, and {exc}; "
                                   "use the cpu backend")
        self.token = new_run_id()
        self.req.on_start, self.req.on_progress = reporting(
            self.client, self.token, self.req.graph.n, *self.callbacks)
        self.step("kernels", self.prepare)
        self.existing, self.overwrite, self.damaged = False, True, {}
        self.resume_check = None
        self.step("store", self.create_store)
        return self.compute()

    # -- before anything is written ----------------------------------------------------
    def probe(self) -> None:
        """The workers, and what they offer: the backend to run and its memory."""
        client, req = self.client, self.req
        # the workers compute with our settings
        beside_hung_workers(client, lambda: client.register_plugin(ConfigPlugin()),
                            "registering the job's settings on the workers")
        # the job page on the dashboard (/mgapsp) follows the job through its callbacks
        self.callbacks = (req.on_start, req.on_progress)
        req.on_start, req.on_progress = reporting(client, self.token, req.graph.n,
                                                  *self.callbacks)
        if not client.scheduler_info(n_workers=-1)["workers"]:
            wait_s = config.get("cluster.worker-wait")
            # A cluster being started (a recipe, a batch system) may have no worker yet.
            try:
                client.wait_for_workers(1, timeout=wait_s)
            except TimeoutError:
                raise MgapspError(f"no worker joined the Dask cluster at "
                                  f"{client.scheduler.address} within {wait_s:g} s") from None
        workers = beside_hung_workers(client, lambda: client.run(probe_worker,
                                                                 self.req.backend),
                                      "asking the workers what they offer")
        if not workers:
            raise MgapspError("the Dask cluster has no workers")
        with_gpu = [w for w in workers.values() if w["gpus"] > 0]
        backend = self.req.backend
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
            key = "gpu_memory" if backend == "gpu" else "cpu_memory"
            memory = min(w[key] for w in workers.values())
        self.workers, self.backend, self.memory = workers, backend, memory

    def open_existing(self, state: str) -> None:
        """A store to resume: its options stand where the caller left them open."""
        req = self.req
        self.algorithm, self.batch_size = req.algorithm, req.batch_size
        self.overwrite = req.overwrite
        # a store whose creation was cut short holds no rows: resuming it makes it again
        self.existing = req.resume and state == "ready"
        if req.resume and state == "creating":
            log.info("%s: its creation did not finish; making it again", req.out)
            self.overwrite = True
        if self.existing:
            self.store = Store.open(req.out, mode="r+")
            self.store.refuse_links()       # no write may leave the store through one
            job = self.store.job
            if self.algorithm == "auto":
                self.algorithm = job["algorithm"]
            if self.batch_size is None:
                self.batch_size = job["batch_size"]
        self.ready = (self.algorithm == "auto" and self.backend in ("gpu", "cpu")
                      and hierarchy.known(req.graph, hierarchy_dir(req.out)))

    def make_plan(self, may_build: bool):
        req = self.req
        plan = plan_job(req.graph, algorithm=self.algorithm, backend=self.backend,
                        dtype=req.dtype, sources=req.sources, batch_size=self.batch_size,
                        predecessors=req.predecessors, n_workers=len(self.workers),
                        memory=self.memory, targets=req.targets,
                        hierarchy_ready=self.ready, may_build=may_build,
                        threads=sum(self.client.nthreads().values()),
                        metrics=req.metrics, distances=req.distances)
        if self.existing and req.dtype == "auto" and plan.checked32:
            job = self.store.job
            if job["dtype"] == "float64":   # its float32 failed the check before
                plan = replace(plan, dtype="float64", checked32=False,
                               dtype_reason=job.get("dtype_reason", ""))
        return plan

    def prepare(self) -> None:
        """What the batches need loads (kernels compile) while the job checks the
        graph and makes its store."""
        plan, graph = self.plan, self.req.graph
        if plan.backend in ("cpu", "gpu"):
            beside_hung_workers(self.client, lambda: self.client.run(
                prepare_backend, plan.backend, plan.algorithm, plan.dtype,
                plan.n_sources * (graph.n + graph.m)), "preparing the workers")

    def check_existing(self) -> None:
        """A resumed store: the same job, this run's from now on, damage found."""
        if not self.existing:
            return
        store, out = self.store, self.req.out
        store.check_resume(self.req.graph, self.plan)
        # the flags read before the store is claimed: a server that cannot serve them
        # ends the run with the store as it was
        store.done_mask()
        store.claim(self.token)     # from here on, an earlier run's workers write nothing
        removed = store.remove_partials()
        if removed:
            log.info("%s: removed %d file(s) a killed writer left half written",
                     out, removed)
        deep = self.req.check == "deep" or (
            self.req.check == "auto"
            and store_size(store.path) <= config.get("store.deep-check-bytes"))
        self.resume_check = "deep" if deep else "quick"
        self.damaged = damaged_batches(store, deep=deep)
        for b, problem in sorted(self.damaged.items()):
            log.warning("%s: batch %d is damaged (%s); computing it again", out, b, problem)
        store.unmark_batches(sorted(self.damaged))

    def potentials(self):
        """Johnson's potentials: one task checks the whole graph for negative cycles
        before anything is written, and every batch reuses them."""
        potentials = self.store.potentials() if self.existing else None
        graph = self.req.graph
        if graph.has_negative_weights and potentials is None:
            fut = self.client.submit(compute_potentials, graph, self.backend,
                                     key=f"apsp-potentials-{self.token}")
            potentials = self.wait(fut, "the negative-cycle check did not finish")
        return potentials

    def hierarchy(self) -> None:
        """One worker builds the graph's hierarchy (or finds it from an earlier job)
        before the store exists (a graph that fills in is refused with nothing
        written) and before the batches, which then read it."""
        if not needs_hierarchy(self.plan.algorithm, self.plan.cpu_algorithm):
            return
        fut = self.client.submit(compute_hierarchy, self.req.graph,
                                 location(self.req.out),
                                 key=f"apsp-hierarchy-{self.token}")
        try:
            info = self.wait(fut, "the contraction hierarchy was not built")
        except UnsupportedError as e:
            if self.algorithm != "auto" or self.ready:
                raise
            # auto took the graph for a road network, but its hierarchy fills in (or
            # would not fit in memory)
            log.info("%s: %s; running without a hierarchy", self.req.out, e)
            info = None
            self.plan = self.make_plan(may_build=False)
        if info:
            log.info("%s: contraction hierarchy of %s arcs, %d levels, in %.2f s",
                     self.req.out, f"{info['arcs']:,}", info["levels"], info["seconds"])

    def wait(self, fut, stalled: str):
        """The result of one task run before the batches, watched as the batches are
        (workers that all leave or hang, a lost scheduler, no end within the stall
        timeout): one line rather than a wait without end."""
        watchdog = Watchdog(self.client, cancel=lambda: fut.cancel(reason="mgapsp watchdog"),
                            lock=self.lock, stalled=stalled).start()
        try:
            return _result(fut, watchdog)
        except MgapspError:
            raise
        except Exception as exc:
            if not watchdog.reason:
                raise       # the task's own error (a negative cycle, a hierarchy too big)
            raise _job_error(exc, watchdog, None) from exc
        finally:
            watchdog.stop()
            fut.release()

    # -- the batches -------------------------------------------------------------------
    def compute(self) -> JobReport:
        """Run the batches not done yet (after the slabs, for Floyd-Warshall across
        workers) and record the job's end."""
        plan, store = self.plan, self.store
        done = store.done_mask()
        log.info("%s: %s on the %s backend, %s, %d rows in %d batches of %d (%d done "
                 "before)", store.path, plan.algorithm, plan.backend, plan.dtype,
                 plan.n_sources, plan.n_batches, plan.batch_size, int(done.sum()))
        report = JobReport(plan=plan, store=store, resumed_batches=int(done.sum()),
                           repaired_batches=sorted(self.damaged),
                           resume_check=self.resume_check)
        todo = [b for b in range(plan.n_batches) if not done[b]]
        self.rows_done = sum(plan.rows(b)[1] - plan.rows(b)[0] for b in np.flatnonzero(done))
        self.n_done = int(done.sum())
        if self.req.on_start:
            self.req.on_start(report)
        self.t0 = time.perf_counter()
        report.started = time.time()
        report.setup_s = self.t0 - self.t_call
        report.setup = dict(self.setup)
        self.owner: Callable[[int], str] | None = None
        self.slab_rows: dict[str, str] = {}
        self.slabs = bool(todo) and fw_by_slabs(plan.algorithm, plan.backend,
                                                plan.predecessors, plan.sources,
                                                self.req.graph.n)
        if self.slabs:
            self.run_slabs(report)
        self.unrecorded: list[int] = []
        try:
            self.watch(todo, report)
        finally:
            if self.slabs and self.client.status == "running":
                with contextlib.suppress(Exception):
                    self.client.run(drop_slabs)
        try:
            return self.finish(report)
        except OSError as exc:      # every batch stored, the job's end not recorded
            raise _job_error(exc, None, store) from exc

    def run_slabs(self, report: JobReport) -> None:
        """Floyd-Warshall as one slab of rows per worker; a slab's batches then go to
        the worker holding its rows (if it is lost, the watchdog ends the job: its rows
        are gone, and --resume remakes them)."""
        bounds, ranks = slabs.run_slabs(self.client, self.store, self.req.graph,
                                           self.plan, sorted(self.workers), self.token,
                                           report)
        self.slab_rows = {ranks[k]: f"{lo}:{hi}" for k, (lo, hi) in enumerate(bounds)}
        self.owner = lambda b: ranks[owner_of_rows(bounds, self.plan.rows(b)[0])]

    def submit(self, b: int):
        plan, store = self.plan, self.store
        start, stop = plan.rows(b)
        where = (dict(workers=[self.owner(b)], allow_other_workers=True) if self.owner
                 else {})
        return self.client.submit(
            run_batch, store.path, self.req.graph.fingerprint, self.token, b, start, stop,
            plan.sources[start:stop], plan.backend, plan.algorithm, plan.dtype,
            plan.predecessors, plan.cpu_algorithm, self.slabs, plan.checked32,
            key=f"apsp-batch-{b}-{self.token}", pure=False, **where)

    def record(self) -> None:
        """Progress into the store's attributes (the batches' own flags are the
        workers')."""
        if self.unrecorded:
            self.guard()         # never over another run's attributes
            self.store.mark_done(self.unrecorded, self.rows_done, self.n_done)
            self.unrecorded.clear()
        self.recorded_at = time.perf_counter()

    def watch(self, todo: list[int], report: JobReport) -> None:
        """Every batch submitted at once where they are few enough
        (``jobs.whole-job-batches``: Dask's own progress then counts the whole job),
        else a bounded window of them in flight (the client's and scheduler's memory
        stay flat on long jobs); Dask places them as worker threads free.  Each result
        is counted as it comes; progress recorded at most every progress-interval,
        since each record rewrites zarr.json."""
        client = self.client
        whole = len(todo) <= config.get("jobs.whole-job-batches")
        window = (len(todo) if whole else max(1, config.get("jobs.in-flight-per-thread")
                                                * sum(client.nthreads().values())))
        # a whole job's finished batches stay held until it ends: the scheduler keeps
        # them, so that Dask's Progress panel counts the whole job, not what is left
        held: list = []
        pending = iter(todo)
        running = as_completed([self.submit(b) for _, b in zip(range(window), pending)])
        self.recorded_at = time.perf_counter()
        every = config.get("jobs.progress-interval")
        self.guard = self.store.guard(self.token)
        current: list = []      # the batch whose result is being fetched

        def cancel_all():
            for fut in list(running.futures) + current:
                fut.cancel(reason="mgapsp watchdog")

        watchdog = Watchdog(client, cancel=cancel_all, lock=self.lock,
                            slab_workers=self.slab_rows).start()
        try:
            for fut in running:
                current[:] = [fut]
                try:
                    stats = _result(fut, watchdog)  # raises the batch's error
                except Exception as exc:
                    raise _job_error(exc, watchdog, self.store) from exc
                watchdog.progress(stats["compute_s"] + stats["write_s"])
                if whole:
                    held.append(fut)
                else:
                    fut.release()
                nxt = next(pending, None)
                if nxt is not None:
                    running.add(self.submit(nxt))
                self.count(stats, report)
                if time.perf_counter() - self.recorded_at >= every:
                    try:
                        self.record()
                    except OSError as exc:  # the store's disk, met by the client first
                        raise _job_error(exc, watchdog, self.store) from exc
        except BaseException:
            watchdog.stop()
            for fut in list(running.futures):
                fut.cancel()
            try:
                self.record()
            except Exception as exc:
                # the job's own error says more (a read-only or full disk fails both);
                # the batches' flags, not this summary, say what is done
                log.debug("%s: progress not recorded: %s", self.store.path, exc)
            raise
        finally:
            watchdog.stop()
            for fut in held:
                fut.release()

    def count(self, stats: dict, report: JobReport) -> None:
        """A finished batch into the report and the progress."""
        self.n_done += 1
        self.rows_done += stats["rows"]
        self.unrecorded.append(stats["batch"])
        report.add_batch(stats)
        log.debug("batch %d: %d rows on %s in %.3f s", stats["batch"], stats["rows"],
                  stats["worker"], stats["compute_s"])
        report.seconds = time.perf_counter() - self.t0
        if self.req.on_progress:
            self.req.on_progress(report, self.rows_done, self.plan.n_sources)

    def finish(self, report: JobReport) -> JobReport:
        """The job's end: the last batches and the end in one update of the store."""
        t0, store = self.t0, self.store
        report.marks["last_result"] = time.perf_counter() - t0
        if self.n_done == self.plan.n_batches:
            store.remove_partials()     # a killed writer's leftovers
            self.guard()
            store.mark_done(self.unrecorded, self.rows_done, self.n_done, complete=True,
                            extra={"last_run_seconds": round(time.perf_counter() - t0, 3),
                                   "last_run_rows": report.rows_run,
                                   "last_run_workers": dict(report.per_worker)})
            self.unrecorded.clear()
        else:
            self.record()
        report.marks["recorded"] = report.seconds = time.perf_counter() - t0
        return report


def _result(fut, watchdog: Watchdog):
    """A finished batch's statistics.  They are on its worker: fetched with a deadline,
    so that a worker that hangs meanwhile ends the wait when the watchdog acts (it
    closes the worker, and Dask computes the batch again elsewhere, or it ends the
    job)."""
    while True:
        try:
            return fut.result(timeout=watchdog.interval)
        except TimeoutError:
            if fut.status == "error" or watchdog.reason:    # the batch's own error
                raise


def check_for_repair(path) -> tuple[dict[int, str], int]:
    """Check every chunk of the store at ``path`` against its checksum, under the
    store's lock; clear the flags of damaged batches and remove half-written files.
    Returns the damaged batches ``{batch: what is wrong}`` and the batches left to
    compute (damaged or never computed)."""
    with StoreLock(path, new_run_id()):
        store = Store.open(path, mode="r+")
        store.load_graph()      # a damaged graph cannot be repaired from the store
        damaged = damaged_batches(store, deep=True)
        store.unmark_batches(sorted(damaged))
        store.remove_partials()
        return damaged, int((~store.done_mask()).sum())


def repair_job(path, client, *, backend: str = "auto") -> JobReport:
    """Compute the batches of the store at ``path`` that are not flagged (after
    :func:`check_for_repair`, the damaged ones among them), with the store's own
    options, on ``client``'s workers."""
    store = Store.open(path)
    job = store.job
    # a store checked in float32 is repaired checked too
    dtype = "auto" if job.get("checked32") else job["dtype"]
    return run_job(store.load_graph(), path, client, algorithm=job["algorithm"],
                   backend=backend, dtype=dtype, sources=store.labels("source"),
                   metrics=tuple(job.get("metrics", ())),
                   distances=job.get("distances", True),
                   targets=None if job["all_targets"] else store.labels("target"),
                   batch_size=job["batch_size"], predecessors=job["predecessors"],
                   resume=True)


def _job_error(exc: BaseException, watchdog: Watchdog | None,
               store: Store | None) -> BaseException:
    """The one error a failed batch means for the job."""
    from distributed import KilledWorker

    try:
        done = store.done_mask()
        stored = (f"{int(done.sum())} of {len(done)} batches are stored; continue the "
                  "job with --resume")
    except AttributeError:      # before the store was made
        stored = "nothing was written"
    except Exception:   # the store itself may be what failed
        stored = "continue the job with --resume"
    if watchdog is not None and watchdog.reason:
        return MgapspError(f"{watchdog.reason}; {stored}")
    if isinstance(exc, MgapspError):
        return exc
    if isinstance(exc, KilledWorker):
        return MgapspError(f"every worker that ran batch task {exc.task} died (killed, or "
                           f"out of memory); {stored}")
    name = type(exc).__name__
    if "Cancelled" in name or "CommClosed" in name:
        return MgapspError(f"lost the Dask scheduler ({name}); {stored}")
    if isinstance(exc, OSError):
        return MgapspError(f"{exc.filename + ': ' if exc.filename else ''}"
                           f"{exc.strerror or exc}; {stored}")
    return exc
