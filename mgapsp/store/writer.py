"""Writing a batch's block into the store: whole chunks, compressed by a thread pool.

Zarr's own ``array[rows, :] = block`` spends its time in per-chunk copies and its
one event loop, not in compression, which scales with threads (``bench/NOTES.md``).
So a worker encodes the chunks itself: it cuts the block into whole chunks (on the GPU for a device block, see
:mod:`mgapsp.cuda.staging`), compresses each with the array's own Blosc settings
on a pool of threads, and puts the bytes under the chunk's key through the array's
store, where Zarr reads them back as if it had written them.  Arrays whose codecs are
anything but ``bytes`` (little-endian) plus an optional ``blosc``, alone or inside
shards that are rows of chunks (the store's default, :class:`ShardRow`), fall back
to Zarr's own write.

Into a local store (Zarr's ``LocalStore``) the pool writes each chunk file itself, as
the store would (a temporary file renamed into place, so that no reader sees half a
chunk), rather than through Zarr's event loop, one thread that every write passes.
Other stores get ``store.set``.

A device block of an array compressed with Blosc LZ4 and bit-shuffle (the store's
default) is compressed on its GPU instead (:mod:`mgapsp.cuda.blosc`), since one
GPU computes distances faster than the host's cores compress them: the host copies
the frames back and only writes bytes.  ``mgapsp.gpu.compress`` false turns that off
(the host compresses, as for zstd).

Chunks the host compresses go to a pool of ``mgapsp.store.write-threads`` threads, by
default this process's share of the cores it may run on: all of them divided by the
GPUs that the host's cluster uses (``CUDA_VISIBLE_DEVICES`` lists them, as dask-cuda
sets it), or a single thread in a process without a GPU, whose cores are busy
computing.  Frames made on the GPU only need storing, which a few threads do: a pool
of ``mgapsp.store.store-threads`` (at most the former).  More
threads only held the interpreter's lock that the batches' kernel launches wait for.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import zarr

from .. import config
from .atomic import write_file_atomic
from .files import ChunkFiles, ChunkLayout, ShardRow

__all__ = ["write_block", "write_chunk", "write_threads", "store_threads",
           "idle_store_threads",
           "update_attributes"]


class _Pool(ThreadPoolExecutor):
    """A pool of threads that knows how many it has."""

    def __init__(self, threads: int, name: str):
        super().__init__(threads, thread_name_prefix=name)
        self.threads = threads


_POOLS: dict[str, _Pool] = {}
_POOL_LOCK = threading.Lock()


def write_threads(gpu: bool = True) -> int:
    """Threads that compress chunks on the host and store them
    (``mgapsp.store.write-threads``); by default this process's share of its cores
    among the GPUs of the host's cluster (``CUDA_VISIBLE_DEVICES`` lists them, as
    dask-cuda sets it), or one in a process without a GPU, whose cores compute."""
    n = config.get("store.write-threads")
    if n is not None:
        return n
    if not gpu:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // _sharing())


def _sharing() -> int:
    """The GPUs of the host's cluster (``CUDA_VISIBLE_DEVICES`` lists them, as dask-cuda
    sets it), at least 1."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or ""
    return max(1, len([v for v in visible.split(",") if v.strip()]))


def store_threads(gpu: bool = True) -> int:
    """Threads that store chunk frames made on the GPU (``mgapsp.store.store-threads``,
    at most :func:`write_threads`)."""
    return min(config.get("store.store-threads"), write_threads(gpu))


def idle_store_threads(gpu: bool = True) -> int:
    """Threads that store frames made on the GPU while no batch of this process
    computes: its share of ``mgapsp.store.idle-store-threads`` among the host's GPUs, at
    least :func:`store_threads`, at most :func:`write_threads`."""
    share = config.get("store.idle-store-threads") // _sharing()
    return min(max(share, store_threads(gpu)), write_threads(gpu))


def _pool(kind: str, gpu: bool) -> _Pool:
    """This process's pool of ``write`` threads (host compression), of ``store``
    threads (frames made on the GPU) or of ``idle`` ones (the same, while no kernel
    waits)."""
    with _POOL_LOCK:
        if kind not in _POOLS:
            n = {"write": write_threads, "store": store_threads,
                 "idle": idle_store_threads}[kind](gpu)
            _POOLS[kind] = _Pool(n, f"mgapsp-{kind}")
        return _POOLS[kind]


_LAYOUTS: dict[tuple, ChunkLayout] = {}


def _layout(arr: zarr.Array) -> ChunkLayout:
    # keyed by what decides the bytes, so that a store replaced under the same path
    # (--overwrite) never reuses the old array's layout or shard identity
    key = (str(arr.store_path), arr.shape, arr.chunks, str(arr.dtype),
           repr(arr.metadata.codecs), repr(arr.fill_value),
           repr(arr.attrs.get("mgapsp_shard_id")))
    lay = _LAYOUTS.get(key)
    if lay is None:
        if len(_LAYOUTS) >= 16:
            _LAYOUTS.clear()
        lay = _LAYOUTS[key] = ChunkLayout(arr)
    return lay


def write_chunk(arr: zarr.Array, coords: tuple, chunk: np.ndarray,
                guard=None) -> int | None:
    """Store one whole chunk (its values, shaped as the array's chunks) at ``coords``,
    as Zarr would, without a pass through Zarr's event loop where the layout allows:
    in a worker whose threads are busy, each such pass cost about 2 ms.  Returns the
    CRC-32C its stored bytes end with, or None where Zarr wrote it or it keeps none."""
    lay = _layout(arr)
    chunk = np.ascontiguousarray(chunk, dtype=lay.dtype)
    if chunk.shape != tuple(lay.chunks):
        raise ValueError(f"a chunk of shape {chunk.shape}, the array's are {lay.chunks}")
    where = tuple(slice(c * n, min((c + 1) * n, size))
                  for c, n, size in zip(coords, lay.chunks, arr.shape))
    inside = tuple(slice(0, w.stop - w.start) for w in where)
    if not lay.ok or lay.shard is not None:      # Zarr writes it (into its shard)
        if guard is not None:
            guard()
        arr[where] = chunk[inside]
        return None
    if any(s.stop < n for s, n in zip(inside, lay.chunks)):
        # an edge chunk: Zarr stores the fill value beyond the array's end
        padded = np.full(lay.chunks, lay.fill, dtype=lay.dtype)
        padded[inside] = chunk[inside]
        chunk = padded
    data = lay.encode(chunk)
    lay.put_key(tuple(coords), data, guard)
    return int.from_bytes(data[-4:], "little") if lay.crc else None


def update_attributes(group: zarr.Group, updates: dict) -> None:
    """``group.attrs.update(updates)``: the same ``zarr.json``, but written here where
    the group is in a local store rather than through Zarr's event loop, which in the
    client process is the loop that also talks to the scheduler."""
    from zarr.storage import LocalStore

    store = group.store_path.store
    if not isinstance(store, LocalStore) or group.metadata.zarr_format != 3:
        group.attrs.update(updates)
        return
    from zarr.core.buffer import default_buffer_prototype

    # as Zarr does: the group's metadata object is updated in place, then saved
    group.metadata.attributes.update(updates)
    prefix = group.store_path.path
    for key, buf in group.metadata.to_buffer_dict(default_buffer_prototype()).items():
        write_file_atomic(Path(store.root) / (f"{prefix}/{key}" if prefix else key), buf.to_bytes())


def _host_tile(block: np.ndarray, j: int, cr: int, cc: int, fill) -> np.ndarray:
    rows, n = block.shape
    c0, c1 = j * cc, min((j + 1) * cc, n)
    part = block[:, c0:c1]
    if rows == cr and c1 - c0 == cc:
        return np.ascontiguousarray(part)
    tile = np.full((cr, cc), fill, dtype=block.dtype)
    tile[:rows, :c1 - c0] = part
    return tile


def write_block(arr: zarr.Array, start: int, block, staging=None, guard=None,
                wide: bool = False) -> dict:
    """Write ``block`` as rows ``start ..`` of ``arr``, whole chunks (whole shards,
    where the array's shards are rows of chunks).

    ``block`` is a NumPy array, or an array of a device that ``staging`` (a backend's
    :attr:`~mgapsp.backends.Backend.staging`, such as :mod:`mgapsp.cuda.staging`) cuts
    into chunks, or compresses into frames, on the device.

    ``start`` must be a multiple of the row chunk; the block must end at a chunk
    boundary or at the array's last row.  ``guard()`` is called right before each
    file is put in place; it raises to refuse the write (see
    :class:`mgapsp.store.lock.RunGuard`), and the files are then left out.  ``wide``
    says that no kernel of this process waits for the interpreter meanwhile (a job's
    last batches): frames made on the device are then
    stored by the idle pool (:func:`idle_store_threads`), rather than by the few store
    threads.  Returns ``{"copy_s", "encode_s", "bytes", "stages"}``:
    seconds cutting and copying the block to the host, seconds until every chunk was
    stored after that, the stored bytes, and the first of these in parts where the
    device made the frames (``{"encode_s", "wait_s", "copy_out_s"}``: see
    :func:`mgapsp.cuda.staging.frame_groups`), and the spans of its encoding there.
    """
    cr, cc = arr.chunks[0], arr.chunks[1]
    rows = block.shape[0]
    stop = start + rows
    if start % cr or (stop % cr and stop != arr.shape[0]) or rows > cr:
        raise ValueError(f"rows {start}:{stop} are not whole chunks of {cr} rows")
    if block.shape[1] != arr.shape[1]:
        raise ValueError(f"a block of {block.shape[1]} columns for an array of "
                         f"{arr.shape[1]}")
    lay = _layout(arr)
    device = staging is not None and staging.is_device_array(block)
    t0 = time.perf_counter()
    if not lay.ok:
        host = block.get() if device else block
        if guard is not None:
            guard()
        arr[start:stop, :] = host
        return {"copy_s": 0.0, "encode_s": time.perf_counter() - t0, "bytes": 0,
                "stages": {}, "spans": []}
    gpu_frames = device and _device_frames(lay, staging)
    pool = _pool(("idle" if wide else "store") if gpu_frames else "write",
                 gpu=staging is not None)
    i = start // cr
    n_chunks = -(-arr.shape[1] // cc)
    row = ShardRow(lay, i, guard) if lay.shard is not None else ChunkFiles(lay, i, guard)
    futures: list[Future] = []
    copy_s = 0.0
    stages: dict = {}
    try:
        try:
            copy_s = _submit(pool, lay, row, block, staging if device else None, gpu_frames,
                             cr, cc, n_chunks, futures, stages)
        finally:
            # no chunk may still be reading a staging buffer or the block when we return
            errors = [f.exception() for f in futures]
        for exc in errors:
            if exc is not None:
                raise exc
        stored = row.finish(futures)
    except BaseException:
        row.abort()
        raise
    spans = stages.pop("spans", [])
    return {"copy_s": copy_s, "encode_s": time.perf_counter() - t0 - copy_s,
            "bytes": stored, "stages": stages, "spans": spans}


def _device_frames(lay: ChunkLayout, staging) -> bool:
    """Whether ``staging``'s device makes the chunks' compressed frames itself: Blosc LZ4
    bit-shuffle or ``mgapsp.planes`` arrays of a type size it handles, unless
    ``mgapsp.gpu.compress`` is off."""
    return (lay.gpu_codec is not None and lay.dtype.itemsize in staging.TYPESIZES
            and config.get("gpu.compress"))


def _submit(pool, lay: ChunkLayout, row, block, staging, gpu_frames: bool, cr: int,
            cc: int, n_chunks: int, futures: list, stages: dict) -> float:
    """Queue every chunk of the block for ``row`` (a :class:`ChunkFiles` or
    :class:`ShardRow`) on ``pool``, appending to ``futures``; the seconds spent
    cutting (or compressing) and copying device groups to the host."""
    if staging is None:
        host = np.asarray(block, dtype=lay.dtype)
        futures.extend(row.tile(pool, j, lambda j=j: _host_tile(host, j, cr, cc, lay.fill))
                       for j in range(n_chunks))
        return 0.0
    in_slot: dict[int, list[Future]] = {0: [], 1: []}

    def wait(slot):
        for f in in_slot[slot]:
            f.result()
        in_slot[slot] = []

    block = block.astype(lay.dtype, copy=False)
    if gpu_frames:
        # frames made on the device: the pool only stores them
        groups = ((slot, lambda first=first, frames=frames, starts=starts:
                   row.frames(pool, first, frames, starts))
                  for slot, first, frames, starts in staging.frame_groups(
                      block, cr, cc, lay.fill, lay.gpu_codec, wait, stages))
    else:
        groups = ((slot, lambda first=first, tiles=tiles:
                   [row.tile(pool, first + k, lambda t=tiles[k]: t) for k in range(len(tiles))])
                  for slot, first, tiles in staging.chunk_groups(block, cr, cc, lay.fill, wait))
    copy_s = 0.0
    t = time.perf_counter()
    for slot, queue in groups:
        copy_s += time.perf_counter() - t
        fs = queue()
        in_slot[slot] = fs
        futures.extend(fs)
        t = time.perf_counter()
    return copy_s
