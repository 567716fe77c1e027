"""The output store: a Zarr v3 group that a job fills batch by batch.

- :mod:`.layout`: :class:`Store`, the arrays and attributes, resume checks, records
- :mod:`.writer`: whole chunks and shards written by a pool of threads
- :mod:`.files`: chunk and shard files as Zarr reads them, written whole or not at all
- :mod:`.verify`: rows recomputed with SciPy and compared

The store imports neither CuPy nor Dask: a device block reaches the writer with the
backend's ``staging`` that cuts it on its device.
"""

from .layout import COMPRESSIONS, FORMAT_VERSION, Store, package_versions, store_size

__all__ = ["Store", "COMPRESSIONS", "FORMAT_VERSION", "package_versions", "store_size"]
