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
from typing import Callable

import numpy as np
from distributed import as_completed

from .. import config, hierarchy
from ..errors import MgapspError, UnsupportedError
from ..graph import Graph
from ..plan import fw_by_slabs, owner_of_rows, plan_job
from ..store import Store, StoreLock, check_target, damaged_batches, new_run_id
from . import fw_slabs
from .cluster import ConfigPlugin
from .report import JobReport
from .tasks import (compute_hierarchy, compute_potentials, drop_slabs, hierarchy_dir,
                    prepare_backend, probe_worker, run_batch)
from .watchdog import Watchdog

__all__ = ["run_job", "check_for_repair", "repair_job"]

log = logging.getLogger(__name__)


def run_job(graph: Graph, out, client, *, algorithm: str = "auto", backend: str = "auto",
            dtype: str = "float32", sources=None, targets=None,
            batch_size: int | None = None, compression: str = "lz4", shards: bool = True,
            predecessors: bool = False, resume: bool = False, overwrite: bool = False,
            check: str = "quick", lock: StoreLock | None = None,
            on_start: Callable[[JobReport], None] | None = None,
            on_progress: Callable[[JobReport, int, int], None] | None = None) -> JobReport:
    """Compute the rows of ``sources`` into the store at ``out`` on ``client``'s workers.

    The run holds the store's lock throughout (:mod:`mgapsp.store.lock`): ``lock``,
    taken by the caller, or one it takes.  A resumed store's flagged batches are
    checked first (``check``: ``"quick"``, each file whole, or ``"deep"``, every
    chunk's checksum too); damaged ones are computed again.
    """
    t_call = time.perf_counter()
    if resume and overwrite:
        raise MgapspError("--resume and --overwrite contradict each other; pick one")
    out = os.fspath(out)
    # The run's id: task keys are apsp-batch-<i>-<id> (the dashboard groups them as
    # "apsp-batch", and two jobs on one cluster, or a rerun after a failure whose
    # erred keys the scheduler may still hold, never share a key), and the store
    # records it so that only this run's workers write into it.
    own = lock is None          # else the caller took it, before its own preparations
    if own:
        lock = StoreLock(out, new_run_id()).acquire()
    try:
        return _run_locked(graph, out, client, lock.run_id, lock, algorithm=algorithm,
                           backend=backend, dtype=dtype, sources=sources, targets=targets,
                           batch_size=batch_size, compression=compression, shards=shards,
                           predecessors=predecessors, resume=resume, overwrite=overwrite,
                           check=check, on_start=on_start, on_progress=on_progress,
                           t_call=t_call)
    finally:
        if own:
            lock.release()


def _run_locked(graph: Graph, out: str, client, token: str, lock: StoreLock, *,
                algorithm, backend, dtype, sources, targets, batch_size, compression,
                shards, predecessors, resume, overwrite, check, on_start, on_progress,
                t_call) -> JobReport:
    state = check_target(out, resume=resume, overwrite=overwrite)
    client.register_plugin(ConfigPlugin())   # the workers compute with our settings
    if not client.scheduler_info(n_workers=-1)["workers"]:
        wait_s = config.get("cluster.worker-wait")
        # A cluster being started (a recipe, a batch system) may have no worker yet.
        try:
            client.wait_for_workers(1, timeout=wait_s)
        except TimeoutError:
            raise MgapspError(f"no worker joined the Dask cluster at "
                              f"{client.scheduler.address} within {wait_s:g} s") from None
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

    # a store whose creation was cut short holds no rows: resuming it makes it again
    existing = resume and state == "ready"
    if resume and state == "creating":
        log.info("%s: its creation did not finish; making it again", out)
        overwrite = True
    if existing:
        store = Store.open(out, mode="r+")
        job = store.job
        if algorithm == "auto":
            algorithm = job["algorithm"]
        if batch_size is None:
            batch_size = job["batch_size"]
    ready = (algorithm == "auto" and backend == "gpu"
             and hierarchy.known(graph, hierarchy_dir(out)))

    def make_plan(may_build: bool):
        return plan_job(graph, algorithm=algorithm, backend=backend, dtype=dtype,
                        sources=sources, batch_size=batch_size, predecessors=predecessors,
                        n_workers=len(workers), memory=memory, targets=targets,
                        hierarchy_ready=ready, may_build=may_build,
                        threads=sum(client.nthreads().values()))

    plan = make_plan(may_build=True)
    if plan.backend in ("cpu", "gpu"):
        # what the batches need loads while the job checks the graph and makes its store
        client.run(prepare_backend, plan.backend, plan.algorithm,
                   plan.n_sources * (graph.n + graph.m))
    damaged: dict[int, str] = {}
    if existing:
        store.check_resume(graph, plan)
        store.claim(token)      # from here on, an earlier run's workers write nothing
        removed = store.remove_partials()
        if removed:
            log.info("%s: removed %d file(s) a killed writer left half written",
                     out, removed)
        damaged = damaged_batches(store, deep=check == "deep")
        for b, problem in sorted(damaged.items()):
            log.warning("%s: batch %d is damaged (%s); computing it again", out, b, problem)
        store.unmark_batches(sorted(damaged))
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
    if "phast" in (plan.algorithm, plan.cpu_algorithm):
        # one worker builds the hierarchy (or finds it from an earlier job) before
        # the store exists (a graph that fills in is refused with nothing written)
        # and before the batches, which then read it
        fut = client.submit(compute_hierarchy, graph, os.path.abspath(out),
                            key=f"apsp-hierarchy-{token}")
        try:
            info = fut.result()
        except UnsupportedError as e:
            if algorithm != "auto" or ready:
                raise
            # auto took the graph for a road network, but its hierarchy fills in
            log.info("%s: %s; running without a hierarchy", out, e)
            info = None
            plan = make_plan(may_build=False)
        finally:
            fut.release()
        if info:
            log.info("%s: contraction hierarchy of %s arcs, %d levels, in %.2f s", out,
                     f"{info['arcs']:,}", info["levels"], info["seconds"])
    if not existing:
        store = Store.create(out, graph, plan, overwrite=overwrite,
                             potentials=potentials, compression=compression,
                             shards=shards, run_id=token)

    done = store.done_mask()
    log.info("%s: %s on the %s backend, %s, %d rows in %d batches of %d (%d done before)",
             store.path, plan.algorithm, plan.backend, plan.dtype, plan.n_sources,
             plan.n_batches, plan.batch_size, int(done.sum()))
    report = JobReport(plan=plan, store=store, resumed_batches=int(done.sum()),
                       repaired_batches=sorted(damaged))
    todo = [b for b in range(plan.n_batches) if not done[b]]
    rows_done = sum(plan.rows(b)[1] - plan.rows(b)[0] for b in np.flatnonzero(done))
    n_done = int(done.sum())
    if on_start:
        on_start(report)
    t0 = time.perf_counter()
    report.started = time.time()
    report.setup_s = t0 - t_call
    slabs = bool(todo) and fw_by_slabs(plan.algorithm, plan.backend, plan.predecessors,
                                       plan.sources, graph.n)
    owner: Callable[[int], str] | None = None
    slab_rows: dict[str, str] = {}
    if slabs:
        bounds, ranks = fw_slabs.run_slabs(client, store, graph, plan, sorted(workers),
                                           token, report)
        slab_rows = {ranks[k]: f"{lo}:{hi}" for k, (lo, hi) in enumerate(bounds)}

        def owner(b: int) -> str:     # noqa: F811
            # a slab's batches go to the worker holding its rows; if it is lost, the
            # watchdog ends the job (its rows are gone, and --resume remakes them)
            return ranks[owner_of_rows(bounds, plan.rows(b)[0])]

    def submit(b: int):
        start, stop = plan.rows(b)
        where = dict(workers=[owner(b)], allow_other_workers=True) if owner else {}
        return client.submit(
            run_batch, store.path, graph.fingerprint, token, b, start, stop,
            plan.sources[start:stop], plan.backend, plan.algorithm, plan.dtype,
            plan.predecessors, plan.cpu_algorithm, slabs,
            key=f"apsp-batch-{b}-{token}", pure=False, **where)

    # A bounded window of batches in flight keeps the client's and scheduler's memory
    # flat on long jobs; Dask places them as worker threads free.
    window = max(1, config.get("jobs.in-flight-per-thread") * sum(client.nthreads().values()))
    pending = iter(todo)
    running = as_completed([submit(b) for _, b in zip(range(window), pending)])
    # Progress is recorded in the store's attributes at most every progress-interval
    # (and at the end, or when the job fails): each record rewrites zarr.json.  The
    # batches' own flags are the workers'.
    unrecorded: list[int] = []
    recorded_at = time.perf_counter()
    every = config.get("jobs.progress-interval")

    guard = store.guard(token)

    def record():
        nonlocal recorded_at
        if unrecorded:
            guard()         # never over another run's attributes
            store.mark_done(unrecorded, rows_done, n_done)
            unrecorded.clear()
        recorded_at = time.perf_counter()

    current: list = []      # the batch whose result is being fetched

    def cancel_all():
        for fut in list(running.futures) + current:
            fut.cancel(reason="mgapsp watchdog")

    watchdog = Watchdog(client, cancel=cancel_all, lock=lock, slab_workers=slab_rows).start()
    try:
        for fut in running:
            current[:] = [fut]
            try:
                stats = fut.result()        # raises the batch's error
            except Exception as exc:
                raise _job_error(exc, watchdog, store) from exc
            watchdog.progress(stats["compute_s"] + stats["write_s"])
            fut.release()
            nxt = next(pending, None)
            if nxt is not None:
                running.add(submit(nxt))
            n_done += 1
            rows_done += stats["rows"]
            unrecorded.append(stats["batch"])
            report.add_batch(stats)
            log.debug("batch %d: %d rows on %s in %.3f s", stats["batch"], stats["rows"],
                      stats["worker"], stats["compute_s"])
            report.seconds = time.perf_counter() - t0
            if time.perf_counter() - recorded_at >= every:
                record()
            if on_progress:
                on_progress(report, rows_done, plan.n_sources)
    except BaseException:
        watchdog.stop()
        for fut in list(running.futures):
            fut.cancel()
        try:
            record()
        except Exception as exc:    # the job's own error says more
            log.warning("%s: progress not recorded: %s", store.path, exc)
        raise
    finally:
        watchdog.stop()
        if slabs and client.status == "running":
            with contextlib.suppress(Exception):
                client.run(drop_slabs)
    report.marks["last_result"] = time.perf_counter() - t0
    if n_done == plan.n_batches:
        store.remove_partials()     # a killed writer's leftovers
        guard()
        # the last batches and the job's end in one update of the store
        store.mark_done(unrecorded, rows_done, n_done, complete=True, extra={
            "last_run_seconds": round(time.perf_counter() - t0, 3),
            "last_run_rows": report.rows_run,
            "last_run_workers": dict(report.per_worker)})
        unrecorded.clear()
    else:
        record()
    report.marks["recorded"] = report.seconds = time.perf_counter() - t0
    return report


def check_for_repair(path) -> tuple[dict[int, str], int]:
    """Check every chunk of the store at ``path`` against its checksum, under the
    store's lock; clear the flags of damaged batches and remove half-written files.
    Returns the damaged batches ``{batch: what is wrong}`` and the batches left to
    compute (damaged or never computed)."""
    with StoreLock(path, new_run_id()):
        store = Store.open(path, mode="r+")
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
    return run_job(store.load_graph(), path, client, algorithm=job["algorithm"],
                   backend=backend, dtype=job["dtype"], sources=store.labels("source"),
                   targets=None if job["all_targets"] else store.labels("target"),
                   batch_size=job["batch_size"], predecessors=job["predecessors"],
                   resume=True)


def _job_error(exc: BaseException, watchdog: Watchdog, store: Store) -> BaseException:
    """The one error a failed batch means for the job."""
    from distributed import KilledWorker

    try:
        done = store.done_mask()
        stored = (f"{int(done.sum())} of {len(done)} batches are stored; continue the "
                  "job with --resume")
    except Exception:   # the store itself may be what failed
        stored = "continue the job with --resume"
    if watchdog.reason:
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
