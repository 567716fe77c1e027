"""A job either makes progress or ends with one clear line.

Dask reschedules the batches of a worker it loses onto the others, and onto workers
that join later (nannies restarting them, or new workers added to a cluster).  What
it cannot do is tell a job that no worker will come back, that the scheduler is gone,
or that a batch hangs.  The watchdog, a thread of the client, looks every second:

- no worker connected for ``mgapsp.cluster.worker-wait`` seconds;
- no batch finished for ``mgapsp.jobs.stall-timeout`` seconds (or ten times the
  slowest batch so far, if longer) while batches are pending;
- the client lost its scheduler;
- a worker holding rows of a Floyd-Warshall run across workers left (its rows are
  gone with it: the run starts again from the store with ``--resume``);
- another run took the store's lock over.

It then cancels the job's batches with a reason, which :func:`reason` gives back to
the job's loop, and which the job raises as one :class:`~mgapsp.errors.MgapspError`.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from .. import config

__all__ = ["Watchdog"]


class Watchdog:
    """Watches ``client``'s cluster for a job; :meth:`progress` on every batch done."""

    def __init__(self, client, *, cancel: Callable[[], None], lock=None,
                 slab_workers: dict[str, str] | None = None, interval: float = 1.0):
        self.client = client
        self.cancel = cancel
        self.lock = lock
        self.slab_workers = dict(slab_workers or {})   # address -> rows it holds
        self.interval = interval
        self.stall = config.get("jobs.stall-timeout")
        self.worker_wait = config.get("cluster.worker-wait")
        self.reason: str | None = None
        self._last = time.monotonic()
        self._slowest = 0.0
        self._no_workers_since: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="mgapsp-watchdog")

    def start(self) -> "Watchdog":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def progress(self, batch_seconds: float = 0.0) -> None:
        """A batch finished (after ``batch_seconds`` on its worker)."""
        self._last = time.monotonic()
        self._slowest = max(self._slowest, batch_seconds)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                reason = self._look()
            except Exception as exc:     # the client itself failing is a reason too
                reason = f"lost the Dask scheduler ({type(exc).__name__}: {exc})"
            if reason:
                self.reason = reason
                self.cancel()
                return

    def _look(self) -> str | None:
        now = time.monotonic()
        if self.lock is not None and self.lock.lost:
            return f"{self.lock.lost} while this run wrote it"
        if self.client.status not in ("running", "connecting", "newly-created"):
            return "lost the Dask scheduler (the client's connection closed)"
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if not workers:
            if self._no_workers_since is None:
                self._no_workers_since = now
            elif now - self._no_workers_since > self.worker_wait:
                return (f"every worker left the Dask cluster and none joined within "
                        f"{self.worker_wait:g} s (mgapsp.cluster.worker-wait)")
        else:
            self._no_workers_since = None
        gone = [rows for addr, rows in self.slab_workers.items() if addr not in workers]
        if gone:
            return (f"a worker holding Floyd-Warshall rows {gone[0]} left the cluster, "
                    "and its rows with it")
        limit = max(self.stall, 10 * self._slowest)
        if now - self._last > limit:
            return (f"no batch finished in {limit:g} s with {len(workers)} worker(s) "
                    "connected (mgapsp.jobs.stall-timeout)")
        return None
