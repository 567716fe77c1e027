"""One run per store: the lock beside a store, and the run id that workers check.

A run holds ``STORE.lock`` (beside the store, so that ``--overwrite`` can replace the
store while holding it) for its whole life: a JSON file naming the run, its host and
process, made with ``O_EXCL`` so that of two runs started together exactly one gets
it.  The holder refreshes the file's time while it runs; a lock whose process is gone
(same host: its pid and the process's start time, so that a reused pid does not keep
it) or whose time is older than ``mgapsp.store.lock-stale`` seconds (another host) is
stale, and the next run takes it over.

In object storage (``s3://``) the lock is the object ``STORE.lock`` beside the store,
created with ``If-None-Match: *`` (again exactly one of two runs gets it) and
refreshed by replacing it with ``If-Match`` its own version, so that a run that took
it over makes the holder's next refresh fail.  The lock's making, reading and
refreshing are the place's (:class:`~mgapsp.store.place.Place`); one
:class:`StoreLock` takes and holds either.

The lock stops a second client; it cannot stop the workers of a client that died,
which may still be finishing batches.  So the run's id is also written in the store
(``attrs["run"]``), and a worker checks it (:class:`RunGuard`) right before it puts
a finished file in its place: a worker of another run never writes into this store.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from .. import config
from ..errors import StoreError
from .objects import Meta
from .place import check_place, place_of

__all__ = ["StoreLock", "RunGuard", "new_run_id", "process_start"]


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _pid_alive(pid: int) -> bool:
    if pid <= 0:                # 0 and -1 name process groups, not a process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # another user's process
        return True
    except OverflowError:
        return False
    return True


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, as this boot's id and its clock ticks since boot
    (Linux; None elsewhere or where it is gone): with the pid it names one process,
    so that a lock whose pid was reused after its run ended is seen to be stale."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
        return f"{boot}/{stat.rsplit(')', 1)[1].split()[19]}"     # field 22, starttime
    except (OSError, IndexError, ValueError):
        return None


class StoreLock:
    """The lock of the store at ``store_path`` for run ``run_id``; a context manager.

    :meth:`acquire` raises :class:`~mgapsp.errors.StoreError` naming the holder when
    a live run holds it.  While held, a thread refreshes it; :attr:`lost` says whether
    another run took it over meanwhile (after this one looked stale).  Where the lock
    is and how it is made, read and refreshed is the store's place's
    (:class:`~mgapsp.store.place.Place`): a file beside a local store, an object
    beside one in object storage.
    """

    def __init__(self, store_path, run_id: str):
        check_place(store_path)     # before anything is made for a lock there
        self.place = place_of(store_path)
        self.store = self.place.name
        self.path = self.place.lock_path
        self.run_id = run_id
        self.held = False
        self.lost: str | None = None
        self._tag: str | None = None        # the version this run wrote last
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> dict:
        return {"run": self.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                "pid_start": process_start(os.getpid()),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    def holder(self) -> dict | None:
        """The lock's record, or None where there is none (``{}`` where it is
        unreadable, or not one of ours)."""
        return self.place.read_lock()[0]

    def stale_reason(self, record: dict, seen: Meta | None) -> str | None:
        """Why the lock ``record`` (its version ``seen``) no longer holds, or None while
        its run lives."""
        if seen is None:
            return "gone"
        # the age of the version whose record was read, not of whatever is there now
        # (another run may have replaced it since)
        age = time.time() - seen.modified
        pid = record.get("pid")
        if record.get("host") == socket.gethostname() and isinstance(pid, int):
            if not _pid_alive(pid):
                return f"process {pid} has ended" if pid > 0 else f"it names process {pid}"
            started = record.get("pid_start")
            now = process_start(pid)
            if started and now and started != now:
                return f"process {pid} has ended (its id is another process's now)"
            return None
        # another host's run, or a record being written (unreadable for a moment):
        # alive while it is refreshed
        if age > config.get("store.lock-stale"):
            return f"not refreshed for {age:.0f} s"
        return None

    def _refused(self, record: dict) -> StoreError:
        """The error for a lock that a live run holds (``record``, or ``{}``: not
        readable as one of ours)."""
        if not record:
            return StoreError(
                f"{self.path} holds no run's record (one being written, or a file that "
                f"is not mgapsp's); wait for that run, or delete it if no run uses "
                f"{self.store}")
        return StoreError(
            f"{self.store} is in use by run {record.get('run', '?')} on "
            f"{record.get('host', '?')} (process {record.get('pid', '?')}, started "
            f"{record.get('started', '?')}); wait for it, or delete {self.path} if that "
            "run is gone")

    @staticmethod
    def _every() -> float:
        """Seconds between two refreshes of a held lock."""
        return max(1.0, config.get("store.lock-stale") / 4)

    def acquire(self) -> "StoreLock":
        data = json.dumps(self._record()).encode()
        for _ in range(3):
            try:
                self._tag = self.place.create_lock(data)
            except FileExistsError:
                record, seen = self.place.read_lock()
                if record is None:
                    continue        # released meanwhile: try again
                if record.get("run") == self.run_id:
                    self._tag = seen.e_tag  # this run's own create, its reply lost
                elif self.stale_reason(record, seen) is None:
                    raise self._refused(record) from None
                else:
                    try:
                        self._tag = self.place.take_lock(data, seen, self.run_id)
                    except (InterruptedError, FileExistsError):
                        continue    # another run took it first
            self.held = True
            self._thread = threading.Thread(target=self._refresh, daemon=True,
                                            name="mgapsp-store-lock")
            self._thread.start()
            return self
        raise StoreError(f"{self.path}: could not take the store's lock (other runs keep "
                         "taking it); try again")

    def _refresh(self) -> None:
        data = json.dumps(self._record()).encode()
        # the first refresh after the shortest interval, before the configuration is read
        # (it imports Dask: a command that refuses its input within a second never does)
        wait = 1.0
        while not self._stop.wait(wait):
            wait = self._every()
            try:
                self._tag = self.place.refresh_lock(data, self._tag, self.run_id)
            except InterruptedError:
                record = self.holder()
                self.lost = (f"{self.path} was deleted" if record is None else
                             f"run {record.get('run')} on {record.get('host')} took "
                             f"{self.store} over")
                return

    def check(self) -> None:
        """Raise if another run took this lock over."""
        if self.lost:
            raise StoreError(f"{self.lost} while this run wrote it; this run stops")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.held and not self.lost:
            self.place.drop_lock(self._tag, self.run_id)
        self.held = False

    def __enter__(self) -> "StoreLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class RunGuard:
    """Raises :class:`~mgapsp.errors.StoreError` unless the store at ``store_path``
    still belongs to run ``run_id``.  Cheap to call before every file a worker puts
    in place: ``zarr.json`` is read again only when its version changed (every
    rewrite of it is a new file renamed into place, or a new object)."""

    def __init__(self, store_path, run_id: str):
        self.place = place_of(store_path)
        self.store = self.place.name
        self.file = self.place.name_of("zarr.json")
        self.run_id = run_id
        self._seen: tuple | None = None

    def __call__(self) -> None:
        meta = self.place.head("zarr.json")
        if meta is None:
            raise StoreError(f"{self.store} was removed while run {self.run_id} wrote "
                             "it; this worker stops writing")
        key = (meta.e_tag, meta.size)
        if key == self._seen:
            return
        try:
            raw = self.place.read("zarr.json")
            if raw is None:
                raise OSError(self.file)
            attrs = json.loads(raw).get("attributes", {})
        except (OSError, ValueError, AttributeError):
            raise StoreError(f"{self.file}: unreadable while run {self.run_id} wrote "
                             "the store; this worker stops writing") from None
        owner = (attrs.get("run") or {}).get("id")
        if owner != self.run_id:
            raise StoreError(f"{self.store} now belongs to run {owner}; a worker of run "
                             f"{self.run_id} stops writing into it")
        self._seen = key
