"""The output store: a Zarr v3 group that a job fills batch by batch.

- :mod:`.layout`: :class:`Store`, the arrays and attributes, resume checks, records
- :mod:`.writer`: whole chunks and shards written by a pool of threads
- :mod:`.files`: chunk and shard files as Zarr reads them, written whole or not at all
- :mod:`.lock`: one run per store (a lock beside it, the run's id inside it)
- :mod:`.planes`: the ``mgapsp.planes`` chunk format, a Zarr codec
- :mod:`.objects`: stores in object storage (``s3://``), whole objects and
  conditional writes
- :mod:`.integrity`: damaged batches found by their checksums
- :mod:`.verify`: rows recomputed with SciPy and compared

The store imports neither CuPy nor Dask: a device block reaches the writer with the
backend's ``staging`` that cuts it on its device.
"""

from .integrity import batch_ranges, damaged_batches
from .layout import (COMPRESSIONS, FORMAT_VERSION, Store, check_target, compression_for,
                     package_versions, store_size, store_state)
from .lock import RunGuard, StoreLock, new_run_id
from .objects import is_url, location

__all__ = ["Store", "COMPRESSIONS", "compression_for", "FORMAT_VERSION", "package_versions", "store_size",
           "store_state", "check_target", "StoreLock", "RunGuard", "new_run_id", "damaged_batches",
           "batch_ranges", "is_url", "location"]
