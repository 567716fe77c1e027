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
it over makes the holder's next refresh fail (:class:`ObjectStoreLock`).

The lock stops a second client; it cannot stop the workers of a client that died,
which may still be finishing batches.  So the run's id is also written in the store
(``attrs["run"]``), and a worker checks it (:class:`RunGuard`) right before it puts
a finished file in its place: a worker of another run never writes into this store.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
import uuid
from pathlib import Path

from .. import config
from ..errors import StoreError
from .objects import Meta, bucket, check_place, is_url, location

__all__ = ["StoreLock", "ObjectStoreLock", "RunGuard", "lock_path", "new_run_id",
           "process_start"]


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
    another run took it over meanwhile (after this one looked stale).  For a store in
    object storage it is an :class:`ObjectStoreLock`.
    """

    def __new__(cls, store_path, run_id: str):
        if cls is StoreLock and is_url(os.fspath(store_path)):
            cls = ObjectStoreLock
        return super().__new__(cls)

    def __init__(self, store_path, run_id: str):
        check_place(store_path)     # before anything is made for a lock there
        self.run_id = run_id
        self.held = False
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._locate(store_path)

    def _locate(self, store_path) -> None:
        """Where the store and its lock are."""
        self.store = os.fspath(store_path)
        self.path = lock_path(store_path)

    def _record(self) -> dict:
        return {"run": self.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                "pid_start": process_start(os.getpid()),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    def holder(self) -> dict | None:
        """The lock file's record, or None where there is none (or it is unreadable).
        Anything but a regular file there is refused before it is opened: a FIFO would
        block the read, a link would lead elsewhere."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        except OSError:
            return {}
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                    "a symbolic link" if stat.S_ISLNK(st.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file")
            raise StoreError(f"{self.path} is {kind}, where {self.store}'s lock file goes; "
                             "move it away (nothing was changed)")
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                record = json.loads(fh.read(1 << 16))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}     # not one of ours

    def stale_reason(self, record: dict) -> str | None:
        """Why the lock ``record`` no longer holds, or None while its run lives."""
        age = self._age()
        if age is None:
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

    def _age(self) -> float | None:
        """Seconds since the lock was last refreshed; None where it is gone."""
        try:
            return time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return None

    def _start_refreshing(self) -> None:
        self.held = True
        self._thread = threading.Thread(target=self._refresh, daemon=True,
                                        name="mgapsp-store-lock")
        self._thread.start()

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

    def _contended(self) -> StoreError:
        return StoreError(f"{self.path}: could not take the store's lock (other runs keep "
                          "taking it); try again")

    @staticmethod
    def _every() -> float:
        """Seconds between two refreshes of a held lock."""
        return max(1.0, config.get("store.lock-stale") / 4)

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
                if self.stale_reason(record) is None:
                    raise self._refused(record) from None
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
            self._start_refreshing()
            return self
        raise self._contended()

    def _refresh(self) -> None:
        # the first refresh after the shortest interval, before the configuration is read
        # (it imports Dask: a command that refuses its input within a second never does)
        wait = 1.0
        while not self._stop.wait(wait):
            wait = self._every()
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


class ObjectStoreLock(StoreLock):
    """The lock of a store in object storage: the object ``STORE.lock`` beside it.

    Of two runs creating it at once exactly one succeeds (``If-None-Match: *``).  Its
    holder replaces it every ``lock-stale / 4`` seconds, on the condition that it is
    still the version it wrote (``If-Match``): its age is the server's time of that
    last write, and a run that took a stale lock over (with ``If-Match`` the stale
    version, so that of two such runs only one can) makes the old holder's next
    refresh fail, which marks the lock :attr:`lost`.
    """

    def _locate(self, store_path) -> None:
        self.store = location(store_path)
        self.objects = bucket(self.store)
        self.key = self.objects.beside(".lock")
        self.path = f"{self.store}.lock"
        self._tag: str | None = None        # the version this run wrote last
        self._seen: Meta | None = None      # the version last read

    def _read(self) -> tuple[dict | None, Meta | None]:
        meta = self._seen = self.objects.head(at=self.key)
        if meta is None:
            return None, None
        raw = self.objects.get(at=self.key)
        if raw is None:
            return None, None
        try:
            record = json.loads(raw)
        except ValueError:
            return {}, meta
        return (record if isinstance(record, dict) else {}), meta

    def holder(self) -> dict | None:
        return self._read()[0]

    def _age(self) -> float | None:
        # the age of the version whose record was read, not of whatever is there now
        # (another run may have replaced it since)
        meta = self._seen
        return None if meta is None else time.time() - meta.modified

    def acquire(self) -> "ObjectStoreLock":
        data = json.dumps(self._record()).encode()
        for _ in range(3):
            try:
                self._tag = self.objects.put("", data, mode="create", at=self.key)
            except FileExistsError:
                record, meta = self._read()
                if record is None:
                    continue        # released meanwhile: try again
                if record.get("run") == self.run_id:
                    self._tag = meta.e_tag  # this run's own create, its reply lost
                elif self.stale_reason(record) is None:
                    raise self._refused(record) from None
                else:
                    try:    # over the stale version only: of two runs, one gets it
                        self._tag = self.objects.put("", data, mode={"e_tag": meta.e_tag},
                                                     at=self.key)
                    except (InterruptedError, FileExistsError):
                        continue
            self._start_refreshing()
            return self
        raise self._contended()

    def _refresh(self) -> None:
        data = json.dumps(self._record()).encode()
        while not self._stop.wait(self._every()):
            try:
                self._tag = self.objects.put("", data, mode={"e_tag": self._tag},
                                             at=self.key)
            except InterruptedError:
                record = self.holder()
                self.lost = (f"{self.path} was deleted" if record is None else
                             f"run {record.get('run')} on {record.get('host')} took "
                             f"{self.store} over")
                return
            except StoreError:
                pass            # the server out of reach for now: the next refresh

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.held and not self.lost:
            try:
                meta = self.objects.head(at=self.key)
                if meta is not None and meta.e_tag == self._tag:
                    self.objects.delete(at=self.key)
            except StoreError:
                pass        # left to go stale; the job's own error is the one to show
        self.held = False


class RunGuard:
    """Raises :class:`~mgapsp.errors.StoreError` unless the store at ``store_path``
    still belongs to run ``run_id``.  Cheap to call before every file a worker puts
    in place: ``zarr.json`` is read again only when its inode or time changed (every
    rewrite of it is a new file renamed into place)."""

    def __init__(self, store_path, run_id: str):
        self.store = os.fspath(store_path)
        self.objects = bucket(self.store) if is_url(self.store) else None
        self.file = (f"{self.store}/zarr.json" if self.objects
                     else os.path.join(self.store, "zarr.json"))
        self.run_id = run_id
        self._seen: tuple | None = None

    def _version(self) -> tuple | None:
        """What tells one ``zarr.json`` from the next: its inode and time on disk, its
        ETag in object storage; None where it is gone."""
        if self.objects is not None:
            meta = self.objects.head("zarr.json")
            return None if meta is None else (meta.e_tag, meta.size)
        try:
            st = os.stat(self.file)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def __call__(self) -> None:
        key = self._version()
        if key is None:
            raise StoreError(f"{self.store} was removed while run {self.run_id} wrote "
                             "it; this worker stops writing")
        if key == self._seen:
            return
        try:
            if self.objects is not None:
                raw = self.objects.get("zarr.json")
                if raw is None:
                    raise OSError(self.file)
            else:
                with open(self.file, "rb") as fh:
                    raw = fh.read()
            attrs = json.loads(raw).get("attributes", {})
        except (OSError, ValueError, AttributeError):
            raise StoreError(f"{self.file}: unreadable while run {self.run_id} wrote "
                             "the store; this worker stops writing") from None
        owner = (attrs.get("run") or {}).get("id")
        if owner != self.run_id:
            raise StoreError(f"{self.store} now belongs to run {owner}; a worker of run "
                             f"{self.run_id} stops writing into it")
        self._seen = key
