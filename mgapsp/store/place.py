"""Where a store lives: a folder of a file system, or a folder of a bucket (``s3://``).

:class:`Place` is what the store asks of the place it lives in, the same way for
either: what is there (:meth:`~Place.state`), its files or objects (the root's
``zarr.json``, its chunks), the lock beside it, its removal and the store that Zarr
opens.  :class:`LocalPlace` and :class:`ObjectPlace` implement it, and
:func:`place_of` is the one function that looks at a path to tell which it names.

Nothing here imports Zarr or Dask when it is imported (only :func:`place_of_zarr`,
given a Zarr store, looks at Zarr's classes): a command refuses a wrong place
(:mod:`.places`) and takes its lock before it imports them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import uuid
from abc import ABC, abstractmethod
from pathlib import Path

from ..errors import StoreError
from ..plan import METRICS
from .atomic import PARTIAL, write_file_atomic
from .objects import Meta, bucket, bucket_of

__all__ = ["Place", "LocalPlace", "ObjectPlace", "place_of", "place_of_zarr", "is_url",
           "location", "check_place", "STORE_MEMBERS", "SCHEMES"]

_URL = re.compile(r"^([a-z][a-z0-9+.-]*)://")
#: the schemes obstore's ``from_url`` opens
SCHEMES = ("s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "memory")
#: what a store holds besides its root's zarr.json: Zarr nodes of these names
STORE_MEMBERS = frozenset({"distances", "predecessors", "vertex", "source",
                           "source_index", "target", "target_index", "batch_done",
                           "graph", "chunk_crc"}) | set(METRICS)


def is_url(where) -> bool:
    """Whether ``where`` names a place in object storage (``s3://...``) rather than a
    path on a file system."""
    m = _URL.match(where) if isinstance(where, str) else None
    return bool(m) and m.group(1) != "file"


def place_of(where) -> Place:
    """The place that ``where`` (a path, or a URL such as ``s3://bucket/out.zarr``)
    names."""
    where = os.fspath(where)
    return ObjectPlace(where) if is_url(where) else LocalPlace(where)


def place_of_zarr(store) -> Place | None:
    """The place of a Zarr store: a local one, or one that :meth:`Place.zarr_store`
    made; None for another kind (a memory store), which only Zarr reads and writes."""
    b = bucket_of(store)
    if b is not None:
        return ObjectPlace(b.url)
    from zarr.storage import LocalStore     # (Zarr is imported: a Zarr store is here)

    return LocalPlace(store.root) if isinstance(store, LocalStore) else None


def location(where) -> str:
    """The form of a store's place that every process reads the same: a URL as given
    (no trailing slash), a path made absolute."""
    where = os.fspath(where)
    if is_url(where):
        scheme = _URL.match(where).group(1)
        if scheme not in SCHEMES:
            raise StoreError(f"{where}: stores in {scheme}:// are not supported; use a "
                             f"path or one of {', '.join(s + '://' for s in SCHEMES[:3])}")
        return where.rstrip("/")
    return os.path.abspath(where)


def check_place(where) -> None:
    """Refuse a store's place that is no place: an empty path (the current folder, which
    a store would fill), or a ``file://`` URL (Zarr reads it as a path, a folder
    named ``file:`` would hold the lock)."""
    text = str(os.fspath(where))
    if not text.strip():
        raise StoreError("an empty store path: give a folder, such as out.zarr")
    if text.startswith("file:"):
        raise StoreError(f"{text}: give a local store as a path (without file://)")


def _state_of(raw: bytes) -> str:
    """The state of a store whose root ``zarr.json`` holds ``raw``."""
    try:
        meta = json.loads(raw)
    except ValueError:
        return "foreign"
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    if (not isinstance(attrs, dict) or meta.get("node_type") != "group"
            or "format_version" not in attrs or "fingerprint" not in attrs):
        return "foreign"
    return "creating" if attrs.get("state") == "creating" else "ready"


def _lock_record(raw: bytes) -> dict:
    """The run's record that a lock holds (``{}``: none of ours)."""
    try:
        record = json.loads(raw)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


class Place(ABC):
    """Where a store lives.  :attr:`name` is the place as messages say it,
    :attr:`location` the form that every process reads the same (an absolute path, or
    the URL), :attr:`lock_path` where the store's lock is (:mod:`.lock`).  Names of
    files are relative to the store (``zarr.json``, ``distances/c/0/0``)."""

    name: str
    location: str
    lock_path: Path | str
    #: the folder the store is, where its files can be written in pieces at any
    #: offset (a shard by several threads); None where files are put whole
    folder: Path | None = None

    def __str__(self) -> str:
        return self.name

    # -- what is there -----------------------------------------------------------
    @abstractmethod
    def state(self) -> str:
        """What is there: ``"absent"``, ``"empty"`` (an empty directory), ``"file"``
        (not a directory), ``"remains"`` (only the empty folders of a store deleted
        while its workers wrote it), ``"foreign"`` (not an mgapsp store),
        ``"creating"`` (an mgapsp store whose creation did not finish) or
        ``"ready"``."""

    @abstractmethod
    def foreign_entries(self) -> list[str]:
        """Names at the top of the store that mgapsp did not make (a user's own file or
        folder put there): anything but ``zarr.json`` and its members' folders."""

    @abstractmethod
    def is_link(self) -> bool:
        """Whether the store's own path is a symbolic link."""

    @abstractmethod
    def size(self) -> int:
        """Bytes the store takes."""

    # -- its files -----------------------------------------------------------------
    @abstractmethod
    def name_of(self, name: str) -> str:
        """The file ``name`` as messages say it."""

    @abstractmethod
    def exists(self, name: str) -> bool:
        """Whether the file ``name`` is there."""

    @abstractmethod
    def read(self, name: str, start: int | None = None,
             length: int | None = None) -> bytes | None:
        """The bytes of ``name`` (``length`` of them from ``start``); None where it is
        not there."""

    @abstractmethod
    def head(self, name: str) -> Meta | None:
        """Its size and a tag that changes with every write of it; None where it is not
        there."""

    @abstractmethod
    def put(self, name: str, data, guard=None) -> int:
        """Write ``name`` whole (a reader sees the old or the new, never part of it)
        from ``data`` (a buffer, or a list of them), ``guard()`` called right before it
        takes its place; its bytes."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Remove ``name``, where it is there."""

    # -- the store as a whole --------------------------------------------------------
    @abstractmethod
    def zarr_store(self, read_only: bool = False):
        """What ``zarr.open_group`` opens for the store."""

    @abstractmethod
    def remove(self, run_id: str = "") -> None:
        """Remove the store, first of all its root's ``zarr.json``, so that a worker of
        the run that made it finds no store to write into."""

    @abstractmethod
    def discard(self) -> None:
        """Remove what is there (a store that could not be made), errors aside."""

    @abstractmethod
    def remove_partials(self) -> int:
        """Remove files that writers left half written (a killed worker's); the count."""

    @abstractmethod
    def refuse_links(self) -> None:
        """Refuse a store with a symbolic link anywhere inside it: a run that writes
        into it would write wherever the link leads."""

    @abstractmethod
    def beside(self, name: str) -> Path | None:
        """A folder ``name`` beside the store, for files its jobs keep; None where the
        store is no folder to keep files beside."""

    # -- the lock beside it (:mod:`.lock`) -------------------------------------------
    @abstractmethod
    def create_lock(self, data: bytes) -> str | None:
        """Make the lock, holding ``data``, where there is none (else
        :class:`FileExistsError`); its version tag."""

    @abstractmethod
    def read_lock(self) -> tuple[dict | None, Meta | None]:
        """The lock's record (None where there is none, ``{}`` where it is no run's
        record) and the version read, whose ``modified`` is its last refresh."""

    @abstractmethod
    def take_lock(self, data: bytes, seen: Meta, run_id: str) -> str | None:
        """Take over the stale lock whose version ``seen`` was read: of two runs, only
        one does (the other gets :class:`InterruptedError` or :class:`FileExistsError`);
        the new version's tag."""

    @abstractmethod
    def refresh_lock(self, data: bytes, tag: str | None, run_id: str) -> str | None:
        """Mark the lock that run ``run_id`` holds (version ``tag``) alive; its new tag.
        :class:`InterruptedError` where another run took it over, or it was deleted."""

    @abstractmethod
    def drop_lock(self, tag: str | None, run_id: str) -> None:
        """Remove the lock, where it is still run ``run_id``'s (version ``tag``);
        errors aside (left to go stale, the job's own error is the one to show)."""


class LocalPlace(Place):
    """A store in a folder of a file system.  Its files are written beside their place
    and renamed there (:mod:`.atomic`); its lock is the file ``STORE.lock`` beside it,
    made with ``O_EXCL`` so that of two runs exactly one gets it, its time refreshed
    while its run lives."""

    def __init__(self, path):
        self.name = os.fspath(path)     # as given: messages say what the user wrote
        self.location = os.path.abspath(self.name)
        self.folder = Path(self.name)

    def state(self) -> str:
        if not os.path.lexists(self.name):
            return "absent"
        if not os.path.isdir(self.name):
            return "file"
        try:
            raw = self.read("zarr.json")
        except OSError:
            return "foreign"
        if raw is not None:
            return _state_of(raw)
        if not os.listdir(self.name):
            return "empty"
        return "remains" if self._only_empty_members() else "foreign"

    def _only_empty_members(self) -> bool:
        """Whether the folder holds only folders named as a store's members, with no
        file in them but writers' partial files."""
        for entry in os.scandir(self.name):
            if entry.name not in STORE_MEMBERS or not entry.is_dir(follow_symlinks=False):
                return False
            for _, _, files in os.walk(entry.path):
                if any(not f.endswith(PARTIAL) for f in files):
                    return False
        return True

    def foreign_entries(self) -> list[str]:
        return [entry.name for entry in sorted(os.scandir(self.name), key=lambda e: e.name)
                if not (entry.name == "zarr.json" and entry.is_file(follow_symlinks=False)
                        or entry.name in STORE_MEMBERS
                        and entry.is_dir(follow_symlinks=False))]

    def is_link(self) -> bool:
        return os.path.islink(self.name)

    def size(self) -> int:
        return sum(f.stat().st_size for f in self.folder.rglob("*") if f.is_file())

    def name_of(self, name: str) -> str:
        return os.path.join(self.name, name)

    def exists(self, name: str) -> bool:
        return os.path.exists(self.name_of(name))

    def read(self, name, start=None, length=None):
        try:
            with open(self.name_of(name), "rb") as fh:
                fh.seek(start or 0)
                return fh.read() if length is None else fh.read(length)
        except FileNotFoundError:
            return None

    def head(self, name: str) -> Meta | None:
        try:
            st = os.stat(self.name_of(name))
        except FileNotFoundError:
            return None
        # a rewrite is a new file renamed into place: a new inode, or a new time
        return Meta(key=name, size=st.st_size, e_tag=f"{st.st_ino}-{st.st_mtime_ns}",
                    modified=st.st_mtime)

    def put(self, name: str, data, guard=None) -> int:
        return write_file_atomic(self.folder / name, data, guard)

    def delete(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    def zarr_store(self, read_only: bool = False):
        return self.name

    def remove(self, run_id: str = "") -> None:
        # moved aside first, so that a worker of the old run finds no store to write into
        aside = f"{self.location}.deleting-{run_id or uuid.uuid4().hex[:12]}"
        try:
            os.rename(self.name, aside)
            shutil.rmtree(aside)
        except OSError as exc:
            raise StoreError(f"{exc.filename or self.name}: cannot remove the old store: "
                             f"{exc.strerror or exc}") from None

    def discard(self) -> None:
        shutil.rmtree(self.name, ignore_errors=True)

    def remove_partials(self) -> int:
        n = 0
        for f in self.folder.rglob(f"*{PARTIAL}"):
            try:
                f.unlink()
                n += 1
            except FileNotFoundError:
                pass
        return n

    def refuse_links(self) -> None:
        # nothing is followed while looking
        folders = [self.name]
        while folders:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        raise StoreError(f"{entry.path} is a symbolic link inside the "
                                         "store; a run would write through it, so none "
                                         "does (move it away, or --overwrite)")
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)

    def beside(self, name: str) -> Path:
        return Path(self.location).parent / name

    # -- the lock --------------------------------------------------------------------
    @functools.cached_property
    def lock_path(self) -> Path:
        """``STORE.lock``, beside the store; a store needs a name of its own."""
        p = Path(self.location)
        if not p.name:
            raise StoreError(f"{self.name}: a store is a directory of its own (such as "
                             "out.zarr), not a file system's root")
        return p.with_name(p.name + ".lock")

    def create_lock(self, data: bytes) -> None:
        path = self.lock_path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if path.is_dir() and not path.is_symlink():
                raise StoreError(f"{path} is a directory, where {self.name}'s lock file "
                                 "goes; move it away (nothing was changed)") from None
            raise
        except OSError as exc:
            raise StoreError(f"{path}: cannot create the store's lock: "
                             f"{exc.strerror or exc}") from None
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        return None         # a file's version is its run's record (see refresh_lock)

    def read_lock(self) -> tuple[dict | None, Meta | None]:
        # anything but a regular file is refused before it is opened: a FIFO would
        # block the read, a link would lead elsewhere
        path = self.lock_path
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None, None
        except OSError:
            return {}, None
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                    "a symbolic link" if stat.S_ISLNK(st.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file")
            raise StoreError(f"{path} is {kind}, where {self.name}'s lock file goes; "
                             "move it away (nothing was changed)")
        seen = Meta(key=path.name, size=st.st_size, e_tag=None, modified=st.st_mtime)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(1 << 16)
        except FileNotFoundError:
            return None, None
        except OSError:
            return {}, seen
        return _lock_record(raw), seen

    def take_lock(self, data: bytes, seen: Meta, run_id: str) -> None:
        # of two runs taking a stale lock over, only one renames it away
        path = self.lock_path
        aside = path.with_name(f"{path.name}.stale-{run_id}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            raise InterruptedError(str(path)) from None
        aside.unlink(missing_ok=True)
        return self.create_lock(data)

    def refresh_lock(self, data: bytes, tag: str | None, run_id: str) -> None:
        # the file's time is its age: touched, its record kept
        record = self.read_lock()[0]
        if record and record.get("run") != run_id:
            raise InterruptedError(str(self.lock_path))
        try:
            os.utime(self.lock_path)
        except FileNotFoundError:
            raise InterruptedError(str(self.lock_path)) from None
        except OSError:
            pass
        return None

    def drop_lock(self, tag: str | None, run_id: str) -> None:
        record = self.read_lock()[0]
        if record and record.get("run") == run_id:
            try:
                self.lock_path.unlink(missing_ok=True)
            except OSError:
                # a file system gone read-only: the lock stays, naming a process that
                # ends now, so the next run takes it as stale
                pass


class ObjectPlace(Place):
    """A store in a folder of a bucket (:mod:`.objects`).  Each object is put whole in
    one PUT, so nothing is ever partial, and nothing there is a link.  Its lock is the
    object ``STORE.lock`` beside it, created with ``If-None-Match: *`` (again exactly
    one of two runs gets it) and refreshed by replacing it with ``If-Match`` its own
    version, so that a run that took it over makes the holder's next refresh fail."""

    def __init__(self, url: str):
        self.location = location(url)
        self.name = self.location
        self.bucket = bucket(self.location)
        self.lock_path = f"{self.location}.lock"
        self._lock_key = self.bucket.beside(".lock")

    def state(self) -> str:
        # no folder exists without objects: nothing there is "absent", objects of a
        # store's members without its zarr.json (a store deleted while its workers
        # wrote it) "remains"
        raw = self.bucket.get("zarr.json")
        if raw is not None:
            return _state_of(raw)
        names = self.bucket.top()
        if not names:
            return "absent"
        return "remains" if set(names) <= STORE_MEMBERS else "foreign"

    def foreign_entries(self) -> list[str]:
        return [name for name in self.bucket.top()
                if name != "zarr.json" and name not in STORE_MEMBERS]

    def is_link(self) -> bool:
        return False

    def size(self) -> int:
        return sum(m.size for m in self.bucket.list())

    def name_of(self, name: str) -> str:
        return f"{self.location}/{name}"

    def exists(self, name: str) -> bool:
        return self.bucket.head(name) is not None

    def read(self, name, start=None, length=None):
        data = self.bucket.get(name, start, length)
        return data if data is None or length is None else data[:length]

    def head(self, name: str) -> Meta | None:
        return self.bucket.head(name)

    def put(self, name: str, data, guard=None) -> int:
        # one PUT from this thread, not through Zarr's event loop (which one thread
        # runs for the whole process)
        if guard is not None:
            guard()
        if isinstance(data, list):
            data = b"".join(bytes(memoryview(d).cast("B")) for d in data)
        self.bucket.put(name, data)
        return len(data)

    def delete(self, name: str) -> None:
        self.bucket.delete([name])

    def zarr_store(self, read_only: bool = False):
        return self.bucket.zarr_store(read_only)

    def remove(self, run_id: str = "") -> None:
        # no rename in object storage: the root's zarr.json goes first (a worker's
        # guard reads it)
        self.bucket.delete(["zarr.json"])
        self.bucket.delete([m.key for m in self.bucket.list()])

    def discard(self) -> None:
        try:
            self.remove()
        except StoreError:
            pass

    def remove_partials(self) -> int:
        return 0

    def refuse_links(self) -> None:
        return None

    def beside(self, name: str) -> None:
        return None

    # -- the lock --------------------------------------------------------------------
    def create_lock(self, data: bytes) -> str | None:
        return self.bucket.put("", data, mode="create", at=self._lock_key)

    def read_lock(self) -> tuple[dict | None, Meta | None]:
        meta = self.bucket.head(at=self._lock_key)
        raw = None if meta is None else self.bucket.get(at=self._lock_key)
        if raw is None:
            return None, None
        return _lock_record(raw), meta

    def take_lock(self, data: bytes, seen: Meta, run_id: str) -> str | None:
        # over the stale version only: of two runs, one gets it
        return self.bucket.put("", data, mode={"e_tag": seen.e_tag}, at=self._lock_key)

    def refresh_lock(self, data: bytes, tag: str | None, run_id: str) -> str | None:
        try:
            return self.bucket.put("", data, mode={"e_tag": tag}, at=self._lock_key)
        except StoreError:
            return tag          # the server out of reach for now: the next refresh

    def drop_lock(self, tag: str | None, run_id: str) -> None:
        try:
            meta = self.bucket.head(at=self._lock_key)
            if meta is not None and meta.e_tag == tag:
                self.bucket.delete(at=self._lock_key)
        except StoreError:
            pass
