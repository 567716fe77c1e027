"""What is at a store's place, and whether a run may write its store there: read from
the place itself (a folder's entries, the root's ``zarr.json`` as JSON), without Zarr,
so that a command refuses a wrong place before it imports Zarr or reads its graph."""

from __future__ import annotations

import json
import os

from ..errors import StoreError
from ..plan import METRICS
from .objects import bucket, check_place, is_url

__all__ = ["STORE_MEMBERS", "check_target", "foreign_entries", "store_state"]


def store_state(path) -> str:
    """What is at ``path``: ``"absent"``, ``"empty"`` (an empty directory), ``"file"``
    (not a directory), ``"remains"`` (only the empty folders of a store deleted while
    its workers wrote it), ``"foreign"`` (a directory that is not an mgapsp store),
    ``"creating"`` (an mgapsp store whose creation did not finish) or ``"ready"``."""
    path = os.fspath(path)
    if is_url(path):
        return _objects_state(path)
    if not os.path.lexists(path):
        return "absent"
    if not os.path.isdir(path):
        return "file"
    try:
        with open(os.path.join(path, "zarr.json"), "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        if not os.listdir(path):
            return "empty"
        return "remains" if _only_empty_members(path) else "foreign"
    except OSError:
        return "foreign"
    return _state_of(raw)


def _objects_state(url: str) -> str:
    """:func:`store_state` in object storage, where no folder exists without objects:
    nothing there is ``"absent"``, objects of a store's members without its
    ``zarr.json`` (a store deleted while its workers wrote it) ``"remains"``."""
    b = bucket(url)
    raw = b.get("zarr.json")
    if raw is None:
        names = b.top()
        if not names:
            return "absent"
        return "remains" if set(names) <= STORE_MEMBERS else "foreign"
    return _state_of(raw)


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


def _only_empty_members(path) -> bool:
    """Whether the directory ``path`` holds only folders named as a store's members,
    with no file in them but writers' partial files."""
    for entry in os.scandir(path):
        if entry.name not in STORE_MEMBERS or not entry.is_dir(follow_symlinks=False):
            return False
        for _, _, files in os.walk(entry.path):
            if any(not f.endswith(".partial") for f in files):
                return False
    return True


def check_target(path, *, resume: bool = False, overwrite: bool = False) -> str:
    """The :func:`store_state` of ``path``, where a run may write its store there: nothing
    there, an empty directory (or the empty folders of a deleted store), or an mgapsp
    store to ``resume`` or ``overwrite``.  Anything else is refused: ``--overwrite``
    deletes only what mgapsp made.  A place that is none is refused
    (:func:`~mgapsp.store.objects.check_place`)."""
    check_place(path)
    state = store_state(path)
    if state in ("absent", "empty", "remains"):
        return state
    if not is_url(path) and os.path.islink(path) and not resume:
        raise StoreError(f"{path} is a symbolic link; give the store's own path "
                         "(nothing was deleted)")
    if state == "file":
        raise StoreError(f"{path} is a file, not an mgapsp store; refusing to replace it")
    if state == "foreign":
        raise StoreError(f"{path} is not an mgapsp store (no zarr.json with mgapsp's "
                         "format version and fingerprint); refusing to delete it")
    if not (overwrite or resume):
        raise StoreError(f"{path} already exists; pass --resume to continue it or "
                         "--overwrite to replace it")
    if overwrite:
        others = foreign_entries(path)
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more"
                                             if len(others) > 5 else "")
            raise StoreError(f"{path} holds what mgapsp did not put there ({shown}); "
                             "--overwrite deletes only mgapsp's files: move those out "
                             "first (nothing was deleted)")
    return state


#: what a store holds besides its root's zarr.json: Zarr nodes of these names
STORE_MEMBERS = frozenset({"distances", "predecessors", "vertex", "source",
                           "source_index", "target", "target_index", "batch_done",
                           "graph", "chunk_crc"}) | set(METRICS)


def foreign_entries(path) -> list[str]:
    """Names at the top of the store at ``path`` that mgapsp did not make (a user's
    own file or folder put there): anything but ``zarr.json`` and the folders of the
    store's members."""
    if is_url(path):
        return [name for name in bucket(path).top()
                if name != "zarr.json" and name not in STORE_MEMBERS]
    return [entry.name for entry in sorted(os.scandir(path), key=lambda e: e.name)
            if not (entry.name == "zarr.json" and entry.is_file(follow_symlinks=False)
                    or entry.name in STORE_MEMBERS
                    and entry.is_dir(follow_symlinks=False))]
