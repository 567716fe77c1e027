"""One run per store: the lock beside a store, and the run id that workers check.

A run holds ``STORE.lock`` (beside the store, so that ``--overwrite`` can replace the
store while holding it) for its whole life: a JSON file naming the run, its host and
process, made with ``O_EXCL`` so that of two runs started together exactly one gets
it.  The holder refreshes the file's time while it runs; a lock whose process is gone
(same host: its pid and the process's start time, so that a reused pid does not keep
it) or whose time is older than ``mgapsp.store.lock-stale`` seconds (another host) is
stale, and the next run takes it over.

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

__all__ = ["StoreLock", "RunGuard", "lock_path", "new_run_id", "process_start"]


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def lock_path(store_path) -> Path:
    """``STORE.lock``, beside the store; a store needs a name of its own."""
    p = Path(os.path.abspath(os.fspath(store_path)))
    if not p.name:
        raise StoreError(f"{os.fspath(store_path)}: a store is a directory of its own "
                         "(such as out.zarr), not a file system's root")
    return p.with_name(p.name + ".lock")


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
    another run took it over meanwhile (after this one looked stale).
    """

    def __init__(self, store_path, run_id: str):
        self.store = os.fspath(store_path)
        self.path = lock_path(store_path)
        self.run_id = run_id
        self.held = False
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> dict:
        return {"run": self.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                "pid_start": process_start(os.getpid()),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    def holder(self) -> dict | None:
        """The lock file's record, or None where there is none (or it is unreadable)."""
        try:
            record = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}     # not one of ours

    def stale_reason(self, record: dict) -> str | None:
        """Why the lock ``record`` no longer holds, or None while its run lives."""
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return "gone"
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

    def acquire(self) -> "StoreLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(self._record()).encode()
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                if self.path.is_dir() and not self.path.is_symlink():
                    raise StoreError(f"{self.path} is a directory, where {self.store}'s "
                                     "lock file goes; move it away (nothing was "
                                     "changed)") from None
                record = self.holder()
                if record is None:
                    continue        # released meanwhile: try again
                why = self.stale_reason(record)
                if why is None and not record:
                    raise StoreError(
                        f"{self.path} holds no run's record (one being written, or a "
                        f"file that is not mgapsp's); wait for that run, or delete it if "
                        f"no run uses {self.store}") from None
                if why is None:
                    raise StoreError(
                        f"{self.store} is in use by run {record.get('run', '?')} on "
                        f"{record.get('host', '?')} (process {record.get('pid', '?')}, "
                        f"started {record.get('started', '?')}); wait for it, or delete "
                        f"{self.path} if that run is gone") from None
                # of two runs taking a stale lock over, only one renames it away
                aside = self.path.with_name(f"{self.path.name}.stale-{self.run_id}")
                try:
                    os.rename(self.path, aside)
                except FileNotFoundError:
                    continue
                aside.unlink(missing_ok=True)
                continue
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot create the store's lock: "
                                 f"{exc.strerror or exc}") from None
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            self.held = True
            self._thread = threading.Thread(target=self._refresh, daemon=True,
                                            name="mgapsp-store-lock")
            self._thread.start()
            return self
        raise StoreError(f"{self.path}: could not take the store's lock (other runs keep "
                         "taking it); try again")

    def _refresh(self) -> None:
        every = max(1.0, config.get("store.lock-stale") / 4)
        while not self._stop.wait(every):
            record = self.holder()
            if record and record.get("run") != self.run_id:
                self.lost = (f"run {record.get('run')} on {record.get('host')} took "
                             f"{self.store} over")
                return
            try:
                os.utime(self.path)
            except FileNotFoundError:
                self.lost = f"{self.path} was deleted"
                return
            except OSError:
                pass

    def check(self) -> None:
        """Raise if another run took this lock over."""
        if self.lost:
            raise StoreError(f"{self.lost} while this run wrote it; this run stops")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.held and not self.lost:
            record = self.holder()
            if record and record.get("run") == self.run_id:
                try:
                    self.path.unlink(missing_ok=True)
                except OSError:
                    # a file system gone read-only: the lock stays, naming a process
                    # that ends now, so the next run takes it as stale; the job's own
                    # error is the one to show
                    pass
        self.held = False

    def __enter__(self) -> "StoreLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class RunGuard:
    """Raises :class:`~mgapsp.errors.StoreError` unless the store at ``store_path``
    still belongs to run ``run_id``.  Cheap to call before every file a worker puts
    in place: ``zarr.json`` is read again only when its inode or time changed (every
    rewrite of it is a new file renamed into place)."""

    def __init__(self, store_path, run_id: str):
        self.store = os.fspath(store_path)
        self.file = os.path.join(self.store, "zarr.json")
        self.run_id = run_id
        self._seen: tuple | None = None

    def __call__(self) -> None:
        try:
            st = os.stat(self.file)
        except FileNotFoundError:
            raise StoreError(f"{self.store} was removed while run {self.run_id} wrote "
                             "it; this worker stops writing") from None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key == self._seen:
            return
        try:
            with open(self.file, "rb") as fh:
                attrs = json.loads(fh.read()).get("attributes", {})
        except (OSError, ValueError, AttributeError):
            raise StoreError(f"{self.file}: unreadable while run {self.run_id} wrote "
                             "the store; this worker stops writing") from None
        owner = (attrs.get("run") or {}).get("id")
        if owner != self.run_id:
            raise StoreError(f"{self.store} now belongs to run {owner}; a worker of run "
                             f"{self.run_id} stops writing into it")
        self._seen = key
