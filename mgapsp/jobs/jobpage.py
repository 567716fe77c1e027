"""The job page (``/mgapsp`` on the scheduler's dashboard): a Bokeh document drawing
the latest job of the scheduler's :class:`~.jobstate.JobBoard`.

Rows done of the total and the time left, rows/s over time, a grid of the batches
by state (the worker in each cell's tooltip), each worker's batches, seconds and GPU
time, the store's bytes and compression, and the plan.  It redraws twice a second
what changed; the record stays after the job, so the page shows how it ended.
Made as Dask's own pages are (its template, its theme), and served beside them.
"""

from __future__ import annotations

import html
import math

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, Div, HoverTool
from bokeh.plotting import figure
from distributed.dashboard.components import add_periodic_callback
from distributed.dashboard.components.scheduler import BOKEH_THEME, env

from .jobstate import RUNNING, STATE_NAMES, JobRecord

__all__ = ["job_doc", "JobPage"]

#: a colour per batch state (jobstate.STATE_NAMES' order): Dask's grey for waiting,
#: its blue for running, greens for stored, orange for computed again, red for failed
COLOURS = ("#d9d9d9", "#1f77b4", "#2ca02c", "#a1d99b", "#ff7f0e", "#d62728")
#: cells of the batch grid at most: beyond, a cell is several batches (the least
#: advanced state among them shows), so that a job of a million batches draws quickly
MAX_CELLS = 8192
PLUGIN = "mgapsp-jobs"      # JobPagePlugin.name (not imported: .dashboard imports us)


class JobPage:
    """The page's models and their update from the scheduler's record."""

    def __init__(self, scheduler, width: int = 1000):
        self.scheduler = scheduler
        self.drawn: tuple | None = None     # (run, version) last drawn
        self.header = Div(text="<h2>mgapsp</h2><p>no mgapsp job has run on this "
                               "scheduler yet</p>", width=width)
        self.plan = Div(text="", width=width)
        self.store = Div(text="", width=width)

        self.bar_source = ColumnDataSource({"done": [0], "total": [1]})
        self.bar = figure(title="Rows: 0 / 0", height=90, width=width, tools="",
                          toolbar_location=None, x_range=(0, 1), y_range=(-0.5, 0.5))
        self.bar.hbar(y=0, left=0, right="total", height=0.8, color="#d9d9d9",
                      source=self.bar_source)
        self.bar.hbar(y=0, left=0, right="done", height=0.8, color="#2ca02c",
                      source=self.bar_source)
        self.bar.yaxis.visible = False

        self.rate_source = ColumnDataSource({"t": [], "rate": []})
        self.rate = figure(title="Rows/s", height=220, width=width // 2, tools="",
                           toolbar_location=None, x_axis_label="seconds")
        self.rate.line("t", "rate", source=self.rate_source, line_width=2)

        self.grid_source = ColumnDataSource({k: [] for k in
                                             ("x", "y", "colour", "state", "batches",
                                              "worker")})
        self.grid = figure(title="Batches", height=300, width=width, tools="",
                           toolbar_location=None, match_aspect=True)
        self.grid.rect("x", "y", width=0.9, height=0.9, color="colour",
                       source=self.grid_source)
        self.grid.add_tools(HoverTool(tooltips=[("batches", "@batches"), ("state", "@state"),
                                                ("worker", "@worker")]))
        self.grid.axis.visible = False
        self.grid.grid.visible = False
        self.grid.y_range.flipped = True
        # the key of the colours, above the grid (a legend inside it hides cells)
        self.legend = Div(text=" ".join(
            f'<span style="background:{c};padding:0 0.6em">&nbsp;</span> {name}&emsp;'
            for c, name in zip(COLOURS, STATE_NAMES)), width=width)

        self.worker_source = ColumnDataSource({"worker": [], "write_s": []})
        self.write = figure(title="Write seconds per worker", height=220,
                            width=width // 2, tools="", toolbar_location=None,
                            y_range=[""])
        self.write.hbar(y="worker", right="write_s", height=0.7, source=self.worker_source)
        # an HTML table (Bokeh's DataTable kept its first rows in Chromium, 3.9)
        self.workers = Div(text="", width=width)
        self.root = column(self.header, self.bar, row(self.rate, self.write), self.legend,
                           self.grid, self.workers, self.store, self.plan)

    def update(self) -> None:
        plugin = getattr(self.scheduler, "plugins", {}).get(PLUGIN)
        job = plugin.board.latest if plugin is not None else None
        if job is None:
            return
        now = plugin.board.clock()
        self._header(job, now)
        if self.drawn == (job.run, job.version):
            return          # the rest changes only with the record
        self.drawn = (job.run, job.version)
        self._bar(job)
        self._rate(job)
        self._grid(job)
        self._workers(job, now)
        self._store(job)
        self._plan(job)

    # --- parts ---------------------------------------------------------------
    def _header(self, job: JobRecord, now: float) -> None:
        done, total = job.rows_stored, job.n_rows
        if job.failed:
            state = f"failed: {html.escape(job.failed)}"
        elif job.complete():
            state = f"done in {_duration(job.elapsed(now))}"
        else:
            eta = job.eta(now)
            state = f"{_duration(eta) if eta is not None else '?'} left"
        if not job.failed and not job.complete():
            state += f"; running {_duration(job.elapsed(now))}"
        rate = job.rate(now)
        self.header.text = (
            f"<h2>mgapsp job {html.escape(job.run)}</h2>"
            f"<p><b>Rows {done:,} / {total:,}</b> ({done / max(total, 1):.1%}), "
            f"{rate:,.0f} rows/s, {state}"
            f" &middot; store <code>{html.escape(job.store)}</code></p>")

    def _bar(self, job: JobRecord) -> None:
        self.bar.x_range.end = max(job.n_rows, 1)
        self.bar_source.data = {"done": [job.rows_stored], "total": [job.n_rows]}
        self.bar.title.text = f"Rows: {job.rows_stored:,} / {job.n_rows:,}"

    def _rate(self, job: JobRecord) -> None:
        t = np.array([p[0] for p in job.timeline])
        rows = np.array([p[1] for p in job.timeline], dtype=float)
        if len(t) < 2:
            self.rate_source.data = {"t": [], "rate": []}
            return
        # rows/s over about 50 steps of the run so far: smooth, and one batch's arrival
        # never reads as a spike of thousands of rows per second
        grid = np.linspace(0, t[-1], min(len(t), 51))
        stored = np.interp(grid, t, rows)
        rate = np.diff(stored) / np.maximum(np.diff(grid), 1e-9)
        self.rate_source.data = {"t": grid[1:].tolist(), "rate": rate.tolist()}

    def _grid(self, job: JobRecord) -> None:
        n = job.n_batches
        group = max(1, math.ceil(n / MAX_CELLS))
        cells = math.ceil(n / group)
        state = job.states()
        if group > 1:
            # the least advanced state of each cell's batches (pending < running < ...)
            pad = np.full(cells * group - n, 255, dtype=np.uint8)
            state = np.concatenate([state, pad]).reshape(cells, group).min(axis=1)
        width = max(1, math.ceil(math.sqrt(cells * 3)))   # about three times as wide
        idx = np.arange(cells)
        names = [job.workers[w] if w >= 0 else "" for w in job.worker[::group][:cells]]
        first = idx * group
        self.grid_source.data = {
            "x": (idx % width).tolist(), "y": (idx // width).tolist(),
            "colour": [COLOURS[s] for s in state], "state": [STATE_NAMES[s] for s in state],
            "batches": [f"{a}" if group == 1 else f"{a}-{min(a + group, n) - 1}"
                        for a in first.tolist()],
            "worker": names}
        counts = job.counts()
        self.grid.title.text = "Batches: " + ", ".join(
            f"{k} {v:,}" for k, v in counts.items() if v)

    def _workers(self, job: JobRecord, now: float) -> None:
        running = np.bincount(job.worker[job.states() == RUNNING], minlength=len(job.workers))
        elapsed = job.elapsed(now)
        gpus = bool(job.gpu_s)      # the GPU column only where a worker has a GPU
        head = ["worker", "running", "stored", "compute s", "write s"] + (
            ["GPU busy"] if gpus else [])
        lines = []
        for i, w in enumerate(job.workers):
            cells = [html.escape(w), f"{running[i]:,}", f"{job.stored_by[w]:,}",
                     f"{job.compute_s[w]:,.2f}", f"{job.write_s[w]:,.2f}"]
            if gpus:
                gpu = job.gpu_s.get(w)
                cells.append(f"{min(gpu / elapsed, 1):.0%}" if gpu and elapsed > 0 else "")
            lines.append("".join(f"<td>{c}</td>" for c in cells))
        self.workers.text = (
            '<table style="border-collapse:collapse;width:100%;text-align:right">'
            "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
            + "".join(f"<tr>{line}</tr>" for line in lines) + "</table>")
        self.worker_source.data = {"worker": list(job.workers),
                                   "write_s": [job.write_s[w] for w in job.workers]}
        self.write.y_range.factors = list(job.workers) or [""]

    def _store(self, job: JobRecord) -> None:
        raw = job.raw_bytes()
        ratio = f", {raw / job.stored_bytes:.2f}x compression" if job.stored_bytes else ""
        self.store.text = (f"<p><b>Store</b>: {_bytes(job.stored_bytes)} written for "
                           f"{job.rows_reported:,} rows ({_bytes(raw)} uncompressed{ratio})"
                           "</p>")

    def _plan(self, job: JobRecord) -> None:
        p = job.plan
        algorithm = p["algorithm"] + (f" (CPU workers: {p['cpu_algorithm']})"
                                      if p.get("cpu_algorithm") else "")
        why = f" ({html.escape(p['dtype_reason'])})" if p.get("dtype_reason") else ""
        self.plan.text = (
            f"<p><b>Plan</b>: {html.escape(algorithm)} on the {p['backend']} backend; "
            f"{p['dtype']}{why}; {p['n_sources']:,} rows x {p['n_targets']:,} columns in "
            f"{p['n_batches']:,} batches of {p['batch_size']:,}"
            f"{'; predecessors' if p['predecessors'] else ''}</p>")


def job_doc(scheduler, extra, doc) -> None:
    """The Bokeh document of ``/mgapsp`` (a function of Dask's dashboard applications)."""
    page = JobPage(scheduler)
    page.update()
    doc.title = "Dask: mgapsp job"
    add_periodic_callback(doc, page, 500)
    doc.add_root(page.root)
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n} B"
