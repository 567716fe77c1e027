"""Whether a run may write its store at a place: what is there (:meth:`Place.state
<mgapsp.store.place.Place.state>`), read from the place itself (a folder's entries, the
root's ``zarr.json`` as JSON) without Zarr, so that a command refuses a wrong place
before it imports Zarr or reads its graph."""

from __future__ import annotations

from ..errors import StoreError
from .place import check_place, place_of

__all__ = ["check_target", "store_state"]


def store_state(path) -> str:
    """What is at ``path`` (see :meth:`mgapsp.store.place.Place.state`)."""
    return place_of(path).state()


def check_target(path, *, resume: bool = False, overwrite: bool = False) -> str:
    """The :func:`store_state` of ``path``, where a run may write its store there: nothing
    there, an empty directory (or the empty folders of a deleted store), or an mgapsp
    store to ``resume`` or ``overwrite``.  Anything else is refused: ``--overwrite``
    deletes only what mgapsp made.  A place that is none is refused
    (:func:`~mgapsp.store.place.check_place`)."""
    check_place(path)
    place = place_of(path)
    state = place.state()
    if state in ("absent", "empty", "remains"):
        return state
    if place.is_link() and not resume:
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
        others = place.foreign_entries()
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more"
                                             if len(others) > 5 else "")
            raise StoreError(f"{path} holds what mgapsp did not put there ({shown}); "
                             "--overwrite deletes only mgapsp's files: move those out "
                             "first (nothing was deleted)")
    return state
