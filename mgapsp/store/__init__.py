"""The output store: a Zarr v3 group that a job fills batch by batch.

- :mod:`.layout`: :class:`Store`, its arrays and attributes, resume checks, records
- :mod:`.create`: a new store's arrays and attributes, and the codecs of its rows
- :mod:`.writer`: whole chunks and shards written by a pool of threads
- :mod:`.files`: chunk and shard files as Zarr reads them, written whole or not at all
- :mod:`.lock`: one run per store (a lock beside it, the run's id inside it)
- :mod:`.place`: where a store lives, a folder or a bucket: one interface for both
- :mod:`.places`: whether a run may write its store at a place
- :mod:`.atomic`: files put in their place whole (a partial file, renamed)
- :mod:`.planes`: the ``mgapsp.planes`` chunk format, a Zarr codec
- :mod:`.rows`: a few rows read, decoding only the parts of their chunks they need
- :mod:`.objects`: object storage (``s3://``): whole objects and conditional writes
- :mod:`.integrity`: damaged batches found by their checksums
- :mod:`.verify`: rows recomputed with SciPy and compared

The store imports neither CuPy nor Dask: a device block reaches the writer with the
backend's ``staging`` that cuts it on its device.
"""

import importlib

#: each public name and the module that holds it, imported on first use: a command that
#: only checks a store's place (or refuses its input) never imports Zarr
_PUBLIC = {
    "batch_ranges": "integrity", "damaged_batches": "integrity",
    "COMPRESSIONS": "create", "FORMAT_VERSION": "create", "Store": "layout",
    "compression_for": "create", "package_versions": "create", "store_size": "layout",
    "RunGuard": "lock", "StoreLock": "lock", "new_run_id": "lock",
    "Place": "place", "location": "place", "place_of": "place",
    "check_target": "places", "store_state": "places",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value
