"""A job either makes progress or ends with one clear line.

Dask reschedules the batches of a worker it loses onto the others, and onto workers
that join later (nannies restarting them, or new workers added to a cluster).  What
it cannot do is tell a job that no worker will come back, that the scheduler is gone,
or that a batch hangs.  The watchdog, a thread of the client, looks every second:

- no worker connected for ``mgapsp.cluster.worker-wait`` seconds;
- a worker sent no heartbeat for ``mgapsp.cluster.hung-worker`` seconds (stopped, or
  stuck on a GPU or a file system): the scheduler closes it, so that Dask runs its
  batches on the others (every worker hung ends the job);
- no batch finished for ``mgapsp.jobs.stall-timeout`` seconds (or ten times the
  slowest batch so far, if longer) while batches are pending;
- the client lost its scheduler;
- a worker holding rows of a Floyd-Warshall run across workers left (its rows are
  gone with it: the run starts again from the store with ``--resume``);
- another run took the store's lock over.

Every call it makes to the scheduler has a deadline, so that a hung scheduler ends
the job too.  It then cancels the job's batches with a reason, which :func:`reason` gives back to
the job's loop, and which the job raises as one :class:`~mgapsp.errors.MgapspError`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from .. import config
from ..errors import MgapspError

__all__ = ["Watchdog", "beside_hung_workers"]

log = logging.getLogger(__name__)

#: seconds a call of the watchdog to the scheduler may take
SCHEDULER_DEADLINE = 30.0


def _on_scheduler():
    """The two calls the watchdog runs on the scheduler, made here so that they travel
    by value: a scheduler without mgapsp installed runs them too."""

    def workers_state(hung_after: float, dask_scheduler=None) -> dict[str, bool]:
        # each worker, and whether its last heartbeat is older than hung_after seconds
        # (the scheduler's own clock: no skew between hosts)
        import time

        now = time.time()
        return {addr: now - ws.last_seen > hung_after
                for addr, ws in dask_scheduler.workers.items()}

    async def close_worker(address: str, dask_scheduler=None) -> str:
        # its tasks go to the other workers
        import time

        return await dask_scheduler.remove_worker(
            address=address, stimulus_id=f"mgapsp-hung-{time.time()}")

    return workers_state, close_worker


def beside_hung_workers(client, call: Callable, what: str):
    """``call()``, a client call that waits for every worker (registering a worker
    plugin, ``client.run``), while the scheduler closes workers whose heartbeats are
    ``mgapsp.cluster.hung-worker`` seconds old, as the watchdog does during a job: one
    such worker would hold the call until Dask's worker TTL (300 s by default).  A call
    that failed because a worker was closed meanwhile is made again, once.  ``what``
    names the call in an error."""
    state, close = _on_scheduler()
    hung_after = config.get("cluster.hung-worker")
    for attempt in range(2):
        box: dict = {}
        done = threading.Event()

        def run():
            try:
                box["value"] = call()
            except Exception as exc:
                box["error"] = exc
            finally:
                done.set()
        threading.Thread(target=run, daemon=True, name="mgapsp-beside-hung").start()
        closed = []
        while not done.wait(1.0):
            try:
                workers = client.run_on_scheduler(state, hung_after,
                                                  callback_timeout=SCHEDULER_DEADLINE)
                for addr in sorted(a for a, hung in workers.items() if hung):
                    log.warning("worker %s sent no heartbeat for %g s while %s: closing "
                                "it", addr, hung_after, what)
                    client.run_on_scheduler(close, addr,
                                            callback_timeout=SCHEDULER_DEADLINE)
                    closed.append(addr)
            except Exception as exc:
                raise MgapspError(f"lost the Dask scheduler while {what} "
                                  f"({type(exc).__name__}: {exc})") from None
        if "error" not in box:
            return box.get("value")
        if not closed or attempt:
            raise box["error"]


class Watchdog:
    """Watches ``client``'s cluster for a job; :meth:`progress` on every batch done."""

    def __init__(self, client, *, cancel: Callable[[], None], lock=None,
                 slab_workers: dict[str, str] | None = None, interval: float = 1.0,
                 stalled: str = "no batch finished"):
        self.client = client
        self.stalled = stalled      # what the stall's message says did not happen
        self.cancel = cancel
        self.lock = lock
        self.slab_workers = dict(slab_workers or {})   # address -> rows it holds
        self.interval = interval
        self.stall = config.get("jobs.stall-timeout")
        self.worker_wait = config.get("cluster.worker-wait")
        self.hung = config.get("cluster.hung-worker")
        self.closed: list[str] = []     # hung workers this job had closed
        self._state, self._close = _on_scheduler()
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
        state = self.client.run_on_scheduler(self._state, self.hung,
                                             callback_timeout=SCHEDULER_DEADLINE)
        hung = sorted(a for a, h in state.items() if h)
        if hung and len(hung) == len(state):
            return (f"every worker stopped answering (no heartbeat for {self.hung:g} s, "
                    f"mgapsp.cluster.hung-worker): {', '.join(hung)}")
        for addr in hung:
            log.warning("worker %s sent no heartbeat for %g s: closing it, so that its "
                        "batches run on the others", addr, self.hung)
            self.client.run_on_scheduler(self._close, addr,
                                         callback_timeout=SCHEDULER_DEADLINE)
            self.closed.append(addr)
        workers = [a for a, h in state.items() if not h]
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
            return (f"{self.stalled} in {limit:g} s with {len(workers)} worker(s) "
                    "connected (mgapsp.jobs.stall-timeout)")
        return None
