"""The job page on the scheduler's dashboard (``/mgapsp``): the scheduler plugin that
keeps the jobs' record and serves the page, and the driver's side that reports to it.

Dask's own Progress panel counts the tasks the scheduler holds, and a job keeps only a
window of batches there, so it cannot tell how far a job is.  The scheduler plugin
(:class:`JobPagePlugin`) keeps a :class:`~.jobstate.JobBoard`: the driver logs the plan
and the finished batches' statistics as Dask events (topic ``mgapsp-job``), which
reach the plugin's ``log_event``; the batch tasks' transitions show which batch runs
where.  The page (:mod:`.jobpage`) is a Bokeh application added beside Dask's own, on
the scheduler's HTTP server, so it is at the dashboard's address + ``/mgapsp``.

The client registers the plugin at each job's start (:func:`reporting`): the embedded
cluster and an attached one alike, where mgapsp is installed beside the scheduler.  A
scheduler started with ``--preload mgapsp.jobs.dashboard`` has the page from its start
(:func:`dask_setup`).  Should any of it fail, the job goes on without the page.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Callable

import numpy as np
from distributed.diagnostics.plugin import SchedulerPlugin

from .. import config
from .jobstate import JobBoard

__all__ = ["JobPagePlugin", "reporting", "add_page", "page_link", "dask_setup",
           "TOPIC", "ROUTE"]

log = logging.getLogger(__name__)

#: the Dask event topic of the driver's reports
TOPIC = "mgapsp-job"
#: the page's path under the dashboard's prefix
ROUTE = "mgapsp"


class JobPagePlugin(SchedulerPlugin):
    """On the scheduler: the jobs' record, fed by the driver's events and the batch
    tasks' transitions, and the page that shows it."""

    name = "mgapsp-jobs"
    # a second job's registration keeps the first one's plugin and its record
    idempotent = True

    def __init__(self):
        self.board = JobBoard()
        self.scheduler = None

    def __getstate__(self):
        return {}       # the record lives on the scheduler; the client sends none

    def __setstate__(self, state):
        self.__init__()

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler
        if _has_dashboard(scheduler):
            # a scheduler with its pages up (an attached cluster): add ours now; the
            # embedded cluster adds it with its own pages (mgapsp.jobs.cluster)
            add_page(scheduler)

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        worker = None
        if finish == "processing":
            ts = self.scheduler.tasks.get(key)
            if ts is not None and ts.processing_on is not None:
                worker = ts.processing_on.address
        self.board.transition(key, finish, worker)

    def log_event(self, topic, msg) -> None:
        if topic == TOPIC and isinstance(msg, dict):
            self.board.event(msg)


def add_page(scheduler, prefix: str | None = None) -> bool:
    """Serve the job page on ``scheduler``'s HTTP server (once); on its event loop.
    ``prefix``: the dashboard's, by default that of Dask's pages there."""
    if getattr(scheduler, "_mgapsp_page", False):
        return False
    from distributed.dashboard.core import BokehApplication
    from distributed.dashboard.scheduler import template_variables
    from tornado.ioloop import IOLoop

    from .jobpage import job_doc

    if prefix is None:
        prefix = next((getattr(app, "prefix", None) for app in
                       scheduler.http_application.applications), None) or "/"
    variables = template_variables(scheduler)
    # the navigation bar of every page made from here on links to ours (Dask keeps one
    # dict of these per scheduler)
    if ROUTE not in variables["pages"]:
        variables["pages"].append(ROUTE)
    app = BokehApplication({f"/{ROUTE}": job_doc}, scheduler, prefix=prefix,
                           template_variables=variables)
    scheduler.http_application.add_application(app)
    app.initialize(IOLoop.current())
    app.start()
    scheduler._mgapsp_page = True
    return True


def page_link(client) -> str | None:
    """The job page's address, beside the client's dashboard link; None without one."""
    link = getattr(client, "dashboard_link", None)
    if not link:
        return None
    base = link.rsplit("/", 1)[0] if link.rstrip("/").endswith("status") else link.rstrip("/")
    return f"{base}/{ROUTE}"


def reporting(client, run: str, n: int, on_start: Callable | None,
              on_progress: Callable | None):
    """Register the page's plugin on ``client``'s scheduler and return the job's
    ``on_start`` and ``on_progress`` callbacks (:func:`mgapsp.jobs.driver.run_job`),
    reporting to it besides calling the caller's own.  Where the scheduler cannot take
    the plugin (mgapsp not installed there), the caller's callbacks come back as they
    were."""
    try:
        client.register_plugin(JobPagePlugin())
    except Exception as exc:      # an optional page must never stop a job
        log.info("the job page is not served by the scheduler: %s", exc)
        return on_start, on_progress
    reporter = _Reporter(client, run, n)

    def start(report):
        reporter.start(report)
        if on_start:
            on_start(report)

    def progress(report, done, total):
        reporter.progress(report, done, total)
        if on_progress:
            on_progress(report, done, total)

    return start, progress


class _Reporter:
    """The driver's events: the plan at the start, then batches' statistics at most
    every ``jobs.progress-interval``, sent without waiting for the scheduler."""

    def __init__(self, client, run: str, n: int):
        self.client = client
        self.run = run
        self.n = n              # the graph's vertices: a predecessors row's length
        self.every = config.get("jobs.progress-interval")
        self.sent_at = 0.0
        self.sent = 0           # report.batches already sent

    def start(self, report) -> None:
        plan, store = report.plan, report.store
        n_targets = plan.n_targets(self.n)
        itemsize = 4 if plan.dtype == "float32" else 8
        row_bytes = n_targets * itemsize + (self.n * 4 if plan.predecessors else 0)
        # which batches an earlier run stored (a fresh job has none: no read)
        done = (np.flatnonzero(store.done_mask()).tolist()
                if store is not None and report.resumed_batches else [])
        msg = {"op": "start", "run": self.run,
               "store": getattr(store, "path", ""),
               "done": done,
               "repaired": [int(b) for b in report.repaired_batches],
               "plan": {"algorithm": plan.algorithm, "backend": plan.backend,
                        "cpu_algorithm": plan.cpu_algorithm, "dtype": plan.dtype,
                        "dtype_reason": plan.dtype_reason, "batch_size": plan.batch_size,
                        "n_sources": plan.n_sources, "n_batches": plan.n_batches,
                        "n_targets": n_targets, "predecessors": plan.predecessors,
                        "row_bytes": row_bytes}}
        # waits for the scheduler: the record exists before the first batch's task
        self.client.log_event(TOPIC, msg)
        self.sent_at = time.perf_counter()

    def progress(self, report, done: int, total: int) -> None:
        last = done >= total
        if not last and time.perf_counter() - self.sent_at < self.every:
            return
        stats = [[b["batch"], b["worker"], b["rows"], round(b["compute_s"], 4),
                  round(b["write_s"], 4), b["stored_bytes"], b.get("gpu_s")]
                 for b in report.batches[self.sent:]]
        self.sent = len(report.batches)
        self._send({"op": "batches", "run": self.run, "stats": stats})
        if last:
            self._send({"op": "end", "run": self.run})
        self.sent_at = time.perf_counter()

    def _send(self, msg: dict) -> None:
        # on the client's event loop, unawaited: the job never waits for the page; a
        # scheduler gone meanwhile is the job's own error to tell, in its one line
        async def send():
            try:
                await self.client.scheduler.log_event(topic=TOPIC, msg=msg)
            except Exception as exc:
                log.debug("the job page missed an update: %s", exc)
        self.client.loop.add_callback(send)


def _has_dashboard(scheduler) -> bool:
    """Whether Dask's pages are served by ``scheduler`` (Bokeh imported, an app up)."""
    app = getattr(scheduler, "http_application", None)
    return "bokeh" in sys.modules and bool(getattr(app, "applications", None))


def dask_setup(scheduler) -> None:
    """``dask scheduler --preload mgapsp.jobs.dashboard``: the page from the start."""
    scheduler.add_plugin(JobPagePlugin())
