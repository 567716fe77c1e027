"""The scheduler's record of mgapsp jobs, for the job page (:mod:`.jobpage`).

Two streams feed it, both on the scheduler's event loop (so nothing here locks):

- the driver's events (:mod:`.dashboard`): the plan when the batches start, then the
  statistics of finished batches (rows, seconds, bytes, worker), a message every
  ``jobs.progress-interval`` at most;
- the scheduler's own transitions of the batch tasks (``apsp-batch-<i>-<run>``): which
  batch runs where, which is stored, which ran twice.  They cost the driver nothing and
  are live, where the driver's statistics come in bundles.

No Bokeh, no Dask import: the record is plain data, the page reads it.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict

import numpy as np

__all__ = ["JobBoard", "JobRecord", "PENDING", "RUNNING", "STORED", "BEFORE",
           "RECOMPUTED", "ERRED", "STATE_NAMES", "BATCH_PREFIX"]

#: task keys of batches: ``apsp-batch-<batch>-<run id>`` (mgapsp.jobs.driver)
BATCH_PREFIX = "apsp-batch-"

# a batch's state, one byte each: a job of a million batches is a megabyte here
PENDING, RUNNING, STORED, BEFORE, RECOMPUTED, ERRED = range(6)
STATE_NAMES = ("pending", "running", "stored", "stored before", "recomputed", "erred")

#: jobs the board remembers (the latest is the page's); older ones are dropped
KEEP_JOBS = 8
#: points of the rows-over-time series kept per job (halved when reached)
TIMELINE_POINTS = 4096


class JobRecord:
    """One run of a job: its plan, each batch's state and worker, each worker's
    statistics, and the rows stored over time."""

    def __init__(self, start: dict, now: float):
        plan = start["plan"]
        self.run = start["run"]
        self.store = start.get("store", "")
        self.plan = plan
        self.n_batches = int(plan["n_batches"])
        self.batch_size = int(plan["batch_size"])
        self.n_rows = int(plan["n_sources"])
        #: bytes of one row before compression (distances, and predecessors if any)
        self.row_bytes = int(plan["row_bytes"])
        # bytearrays, not NumPy: a transition reads and writes one item, which NumPy's
        # scalars make several times slower (the scheduler calls it for every batch)
        self.state = bytearray(self.n_batches)          # PENDING is 0
        self.tries = bytearray(self.n_batches)
        #: index into ``workers`` of the worker that ran (or runs) each batch, -1 none
        self.worker = np.full(self.n_batches, -1, dtype=np.int32)
        self.workers: list[str] = []
        self._worker_index: dict[str, int] = {}
        before = [int(b) for b in start.get("done", ())]
        for b in before:
            self.state[b] = BEFORE
        # batches a resumed run found damaged: computed again, shown so
        self.repaired = set(int(b) for b in start.get("repaired", ()))
        self.rows_before = sum(self._rows(b) for b in before)
        self.rows_stored = self.rows_before
        self.started = now
        self.finished: float | None = None
        self.failed = ""
        #: (seconds since the start, rows stored by this run)
        self.timeline: list[tuple[float, int]] = [(0.0, 0)]
        # from the driver's statistics
        self.batches_reported = 0
        self.rows_reported = 0
        self.stored_bytes = 0
        self.write_s: Counter = Counter()
        self.compute_s: Counter = Counter()
        self.gpu_s: Counter = Counter()
        self.stored_by: Counter = Counter()
        #: bumped on every change: the page redraws only what changed
        self.version = 0

    # --- the feeds ----------------------------------------------------------
    def task(self, batch: int, finish: str, worker: str | None, now: float) -> None:
        """A batch task's transition to ``finish`` (a scheduler task state)."""
        if not 0 <= batch < self.n_batches:
            return
        if finish == "processing":
            self.tries[batch] = min(self.tries[batch] + 1, 255)
            self.state[batch] = RUNNING
            if worker is not None:
                self.worker[batch] = self._index(worker)
        elif finish == "memory":
            if self.state[batch] not in (STORED, RECOMPUTED):
                again = self.tries[batch] > 1 or batch in self.repaired
                self.state[batch] = RECOMPUTED if again else STORED
                self.rows_stored += self._rows(batch)
                self._sample(now)
        elif finish == "erred":
            self.state[batch] = ERRED
            self.failed = f"batch {batch} failed"
        elif self.state[batch] == RUNNING:
            # released, queued or waiting again: its worker left, or the job stopped
            self.state[batch] = PENDING
        self.version += 1

    def batches(self, stats: list, now: float) -> None:
        """Statistics of finished batches: ``[batch, worker, rows, compute_s, write_s,
        stored_bytes, gpu_s or None]`` each."""
        for batch, worker, rows, compute_s, write_s, stored, gpu_s in stats:
            self.batches_reported += 1
            self.rows_reported += int(rows)
            self.stored_bytes += int(stored)
            self.write_s[worker] += float(write_s)
            self.compute_s[worker] += float(compute_s)
            self.stored_by[worker] += 1
            if gpu_s is not None:
                self.gpu_s[worker] += float(gpu_s)
            self._index(worker)
        self.version += 1

    def end(self, msg: dict, now: float) -> None:
        """The driver's last word: the job finished (``failed``: why not)."""
        self.finished = now
        self.failed = msg.get("failed", "") or self.failed
        self.version += 1

    # --- what the page shows ------------------------------------------------
    def elapsed(self, now: float) -> float:
        return (self.finished or now) - self.started

    def rate(self, now: float, window: float = 10.0) -> float:
        """Rows per second over the last ``window`` seconds (the whole run if shorter)."""
        t_end = self.elapsed(now)
        t_from = max(0.0, t_end - window)
        rows_then = 0
        for t, rows in reversed(self.timeline):
            if t <= t_from:
                rows_then = rows
                t_from = t
                break
        rows_now = self.timeline[-1][1]
        span = t_end - t_from
        return (rows_now - rows_then) / span if span > 0 else 0.0

    def eta(self, now: float) -> float | None:
        """Seconds left at the recent rate; None before any row (or when done)."""
        left = self.n_rows - self.rows_stored
        if left <= 0 or self.finished:
            return None
        rate = self.rate(now)
        return left / rate if rate > 0 else None

    def counts(self) -> dict[str, int]:
        return {name: self.state.count(i) for i, name in enumerate(STATE_NAMES)}

    def states(self) -> np.ndarray:
        """Each batch's state (a view, for drawing)."""
        return np.frombuffer(self.state, dtype=np.uint8)

    def raw_bytes(self) -> int:
        """Bytes the reported batches' rows take uncompressed."""
        return self.rows_reported * self.row_bytes

    def complete(self) -> bool:
        return self.rows_stored >= self.n_rows

    # --- helpers --------------------------------------------------------------
    def _rows(self, batch: int) -> int:
        start = batch * self.batch_size
        return min(start + self.batch_size, self.n_rows) - start

    def _index(self, worker: str) -> int:
        i = self._worker_index.get(worker)
        if i is None:
            i = self._worker_index[worker] = len(self.workers)
            self.workers.append(worker)
        return i

    def _sample(self, now: float) -> None:
        self.timeline.append((now - self.started, self.rows_stored - self.rows_before))
        if len(self.timeline) >= TIMELINE_POINTS:
            # every other point: a long job's series stays bounded and spans its life
            self.timeline = self.timeline[::2] + [self.timeline[-1]]


class JobBoard:
    """The jobs one scheduler has seen, the latest last."""

    def __init__(self, clock=time.time):
        self.jobs: OrderedDict[str, JobRecord] = OrderedDict()
        self.clock = clock

    @property
    def latest(self) -> JobRecord | None:
        return next(reversed(self.jobs.values()), None)

    def event(self, msg: dict) -> None:
        """A message of the driver (:mod:`.dashboard`)."""
        op, run, now = msg.get("op"), msg.get("run"), self.clock()
        if op == "start":
            self.jobs[run] = JobRecord(msg, now)
            while len(self.jobs) > KEEP_JOBS:
                self.jobs.popitem(last=False)
            return
        job = self.jobs.get(run)
        if job is None:
            return
        if op == "batches":
            job.batches(msg["stats"], now)
        elif op == "end":
            job.end(msg, now)

    def transition(self, key, finish: str, worker: str | None) -> None:
        """A task's transition; those of other tasks than batches cost one test."""
        if not isinstance(key, str) or not key.startswith(BATCH_PREFIX):
            return
        batch, _, run = key[len(BATCH_PREFIX):].partition("-")
        job = self.jobs.get(run)
        if job is not None and batch.isdigit():
            job.task(int(batch), finish, worker, self.clock())
