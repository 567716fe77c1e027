"""Digests of what a store is made with: every array's metadata and the label arrays'
values, recorded in the group's attributes when the store is made and checked where
they are read.

A chunk's CRC vouches for its bytes, not for the ``zarr.json`` that says how to read
them (a dtype or fill value changed there makes every row read wrong) nor for label
arrays copied from another store of the same graph (rows served under other labels).
These digests do.  Stores made before they were recorded carry none and are read as
before.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from ..errors import StoreError

__all__ = ["KEY", "record", "check_metadata", "check_values"]

#: the group attribute that holds them
KEY = "digests"


def _hex(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def metadata_digest(arr) -> str:
    """Of everything an array's ``zarr.json`` says (shape, dtype, chunks, codecs, fill
    value, attributes)."""
    meta = arr.metadata.to_dict()
    return _hex(json.dumps(meta, sort_keys=True, default=str).encode())


def values_digest(values) -> str:
    """Of an array's values: text as its characters (however Zarr hands strings
    back), numbers as their little-endian bytes and type."""
    values = np.asarray(values)
    if values.dtype.kind in "TUSO":
        return _hex(b"text\0" + "\x1f".join(map(str, values.tolist())).encode("utf-8",
                                                                            "surrogatepass"))
    little = values.astype(values.dtype.newbyteorder("<"), copy=False)
    return _hex(little.dtype.str.encode() + b"\0" + np.ascontiguousarray(little).tobytes())


def _arrays(group, prefix: str = ""):
    for name, member in group.members():
        if hasattr(member, "members"):
            yield from _arrays(member, f"{prefix}{name}/")
        else:
            yield f"{prefix}{name}", member


def record(group, labels: dict) -> dict:
    """The digests of a store just made: the metadata of each of ``group``'s arrays,
    and the values of ``labels`` (name -> the values written)."""
    return {"metadata": {name: metadata_digest(arr) for name, arr in _arrays(group)},
            "values": {name: values_digest(v) for name, v in labels.items()}}


def check_metadata(group, digests: dict, path) -> None:
    """Each array's metadata as recorded; StoreError naming the first that is not."""
    for name, want in sorted(digests.get("metadata", {}).items()):
        try:
            arr = group[name]
        except Exception:   # zarr raises several types for a missing or bad node
            raise StoreError(f"{path}: damaged: array {name!r} is missing or "
                             "unreadable") from None
        if metadata_digest(arr) != want:
            raise StoreError(
                f"{path}: damaged: {name}/zarr.json is not what the store was made with "
                "(its type, shape, chunks, codecs or fill value changed), so its values "
                "cannot be read right; make the store again (--overwrite)")


def check_values(name: str, values, digests: dict, path) -> None:
    """``values`` read from array ``name`` as recorded (where one was)."""
    want = digests.get("values", {}).get(name)
    if want is not None and values_digest(values) != want:
        raise StoreError(
            f"{path}: damaged: the {name} array holds other values than the store was "
            "made with (copied from another store?), so rows would be served under the "
            "wrong labels; make the store again (--overwrite)")
