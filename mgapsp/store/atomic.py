"""Files put in their place whole: written beside it as a partial file, then renamed.

A reader (Zarr, a worker of another run, ``verify``) sees the old file or the new one,
never part of one; a writer that dies leaves only a file ending in :data:`PARTIAL`,
which no reader takes for a chunk and the next run removes.  Nothing here imports
Zarr.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from ..errors import StoreError

__all__ = ["PARTIAL", "write_file_atomic", "open_partial", "commit", "discard", "pwrite"]

#: the suffix of a file being written, renamed into place once whole
PARTIAL = ".partial"


def write_file_atomic(path: Path, data, guard=None) -> int:
    """``data`` (a buffer, or a list of buffers written one after another) into the file
    ``path`` as a whole: written beside it, then renamed, ``guard()`` (which may raise
    to refuse the file) called just before."""
    tmp, fd = open_partial(path, guard)
    try:
        n = 0
        for part in (data if isinstance(data, list) else [data]):
            n += pwrite(fd, part, n, tmp)
        if guard is not None:
            guard()
    except BaseException:
        discard(tmp, fd)
        raise
    commit(tmp, fd, path)
    return n


def open_partial(path: Path, guard=None) -> tuple[Path, int]:
    """A new file beside ``path``, to be renamed there once whole, open for writing
    (the directory made if need be, once ``guard()`` says the store is still there):
    its path and descriptor."""
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}{PARTIAL}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileNotFoundError:       # the chunk's directory is new
            if guard is not None:       # or the store was deleted: not made again
                guard()
            _make_folders(path)
            try:
                return tmp, os.open(tmp, flags, 0o666)
            except FileNotFoundError:   # the folder just made is gone already
                raise _removed(path.parent) from None
    except OSError as exc:
        raise _named(exc, tmp) from None


def _make_folders(path: Path) -> None:
    """The missing folders of ``path``.  For a chunk (``<array>/c/...``) only those
    below its array's folder, a level at a time: where that folder is gone, the store
    is being removed, and neither it nor the store's folder is made again.  A node's
    metadata (``zarr.json``) makes no folder: its node's is gone."""
    if path.name == "zarr.json":
        raise _removed(path.parent)
    parts = path.parent.parts
    if "c" not in parts:
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    at = len(parts) - 1 - parts[::-1].index("c")
    folder = Path(*parts[:at])
    for part in parts[at:]:
        folder = folder / part
        try:
            folder.mkdir(exist_ok=True)
        except FileNotFoundError:
            raise _removed(folder.parent) from None


def _removed(folder: Path) -> StoreError:
    return StoreError(f"{folder} was removed while a worker wrote into it (the store "
                      "deleted?); this worker stops writing")


def commit(tmp: Path, fd: int, path: Path) -> None:
    """Close the partial file ``tmp`` (open as ``fd``) and rename it to ``path``; it is
    removed if that fails."""
    try:
        os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, FileNotFoundError) and not path.parent.is_dir():
            raise _removed(path.parent) from None
        if isinstance(exc, OSError):
            raise _named(exc, path) from None
        raise


def discard(tmp: Path, fd: int) -> None:
    """Close and remove the partial file ``tmp`` (open as ``fd``)."""
    os.close(fd)
    tmp.unlink(missing_ok=True)


def _named(exc: OSError, path) -> OSError:
    """``exc`` with the file it concerns named (a full disk names none by itself)."""
    if path is not None and exc.filename is None and exc.errno is not None:
        return type(exc)(exc.errno, exc.strerror, str(path))
    return exc


def pwrite(fd: int, data, offset: int, path=None) -> int:
    """All of ``data`` into the file ``fd`` (at ``path``) at ``offset``; returns its
    bytes."""
    view = memoryview(data).cast("B")
    n = len(view)
    try:
        while view:
            done = os.pwrite(fd, view, offset)
            view, offset = view[done:], offset + done
    except OSError as exc:
        raise _named(exc, path) from None
    return n
