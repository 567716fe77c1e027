"""The client side of a job: plan, create the store, run the batches on Dask, record.

The client never computes distances.  It probes the workers, plans the job, checks
the graph for negative cycles (one task), creates the store, and keeps a bounded
window of batch tasks (``apsp-batch-<i>-<run token>``) in flight with
``as_completed``; Dask places each on a worker as a thread frees.  Each worker loads
the graph from the store once per process, computes its block with its backend and
writes the block's whole chunks itself (:mod:`mgapsp.jobs.tasks`).  A worker flags
its batch in ``batch_done`` once the batch's rows are written, so a killed job
resumes exactly where its store says; the client records the progress attributes.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from typing import Callable

import numpy as np
from distributed import as_completed

from .. import config
from ..errors import MgapspError, StoreError
from ..graph import Graph
from ..plan import fw_by_slabs, owner_of_rows, plan_job
from ..store import Store
from . import fw_slabs
from .cluster import ConfigPlugin
from .report import JobReport
from .tasks import compute_potentials, drop_slabs, probe_worker, run_batch

__all__ = ["run_job"]

log = logging.getLogger(__name__)


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
    client.register_plugin(ConfigPlugin())   # the workers compute with our settings
    if not client.scheduler_info()["workers"]:
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
    log.info("%s: %s on the %s backend, %s, %d rows in %d batches of %d (%d done before)",
             store.path, plan.algorithm, plan.backend, plan.dtype, plan.n_sources,
             plan.n_batches, plan.batch_size, int(done.sum()))
    report = JobReport(plan=plan, store=store, resumed_batches=int(done.sum()))
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
    if slabs:
        bounds, ranks = fw_slabs.run_slabs(client, store, graph, plan, sorted(workers),
                                           token, report)

        def owner(b: int) -> str:     # noqa: F811
            # a slab's batches go to the worker holding its rows (elsewhere only if it
            # is lost: there the backend computes the whole matrix)
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

    def record():
        nonlocal recorded_at
        if unrecorded:
            store.mark_done(unrecorded, rows_done, n_done)
            unrecorded.clear()
        recorded_at = time.perf_counter()

    try:
        for fut in running:
            stats = fut.result()        # raises the batch's error
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
        for fut in list(running.futures):
            fut.cancel()
        record()
        raise
    finally:
        if slabs:
            client.run(drop_slabs)
    report.marks["last_result"] = time.perf_counter() - t0
    if n_done == plan.n_batches:
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
