"""Writing a batch's block into the store: whole chunks, compressed by a thread pool.

Zarr's own ``array[rows, :] = block`` wrote a 2 GB block of p2p-Gnutella31 rows at
1.0-1.5 GB/s on the device machines whatever the codec (even none): the time went to
its per-chunk copies and its one event loop, not to compression, which reached 13.8
GB/s on 32 threads (``bench/write_path_notes.md``).  So a worker encodes the chunks
itself: it cuts the block into whole chunks (on the GPU for a device block, see
:mod:`mgapsp._kernels.staging`), compresses each with the array's own Blosc settings
on a pool of threads, and puts the bytes under the chunk's key through the array's
store, where Zarr reads them back as if it had written them.  Arrays whose codecs are
anything but ``bytes`` (little-endian) plus an optional ``blosc``, alone or inside
shards that are rows of chunks (the store's default, :class:`_ShardRow`), fall back
to Zarr's own write.

Into a local store (Zarr's ``LocalStore``) the pool writes each chunk file itself, as
the store would (a temporary file renamed into place, so that no reader sees half a
chunk): through Zarr's event loop, one thread that every write passes, one GPU
worker wrote all rows of p2p-Gnutella31 (490 chunk files) at 96k rows/s, against 141k
written directly (``bench/write_path_notes.md``).  Other stores get ``store.set``.

A device block of an array compressed with Blosc LZ4 and bit-shuffle (the store's
default) is compressed on its GPU instead (:mod:`mgapsp._kernels.blosc`), since one
GPU computes distances faster than the host's cores compress them: the host copies
the frames back and only writes bytes.  ``MGAPSP_GPU_COMPRESS=0`` turns that off
(the host compresses, as for zstd).

Chunks the host compresses go to a pool of ``MGAPSP_WRITE_THREADS`` threads, by
default this process's share of the cores it may run on: all of them divided by the
GPUs that the host's cluster uses (``CUDA_VISIBLE_DEVICES`` lists them, as dask-cuda
sets it), or a single thread in a process without a GPU, whose cores are busy
computing.  Frames made on the GPU only need storing, which a few threads do: a pool
of ``MGAPSP_STORE_THREADS`` (default :data:`STORE_THREADS`, at most the former).  More
threads only held the interpreter's lock that the batches' kernel launches wait for.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np
import zarr

__all__ = ["write_block", "write_chunk", "write_threads", "store_threads", "gpu_compress",
           "update_attributes", "STORE_THREADS"]

#: threads of a process that store frames made on its GPU.  On nvidia-h200-x4 (all rows
#: of p2p-Gnutella31, batches of 1,956, median of 5 jobs): with two batch threads per
#: GPU, 16, 6, 4, 3 and 2 such threads took one GPU 475, 427, 402, 374 and 373 ms, four
#: GPUs 139.5, 142.8, 130.7, 123.8 and 116.3 ms (they hold the interpreter lock that the
#: batches' kernel launches wait on); with four batch threads, two of them computing,
#: 2, 4 and 8 took four GPUs 115.6, 106.0 and (another call) 117.9 against 119.3 ms,
#: one GPU the same (bench/write_path_notes.md).
STORE_THREADS = 4


class _Pool(ThreadPoolExecutor):
    """A pool of threads that knows how many it has."""

    def __init__(self, threads: int, name: str):
        super().__init__(threads, thread_name_prefix=name)
        self.threads = threads


_POOLS: dict[str, _Pool] = {}
_POOL_LOCK = threading.Lock()
_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def positive_from_env(name: str) -> int | None:
    """The positive integer in the environment variable ``name``; None where unset."""
    env = os.environ.get(name)
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{name} must be a positive integer, got {env!r}")
    return n


def write_threads() -> int:
    """Threads that compress chunks on the host and store them (``MGAPSP_WRITE_THREADS``)."""
    n = positive_from_env("MGAPSP_WRITE_THREADS")
    if n is not None:
        return n
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    from .cluster import gpu_count

    if gpu_count() == 0:
        return 1
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    sharing = len([v for v in visible.split(",") if v.strip()]) if visible else gpu_count()
    return max(1, cores // max(sharing, 1))


def gpu_compress() -> bool:
    """Whether device blocks of Blosc LZ4 bit-shuffle arrays are compressed on the GPU
    (``MGAPSP_GPU_COMPRESS``, on unless ``0``/``no``/``false``/``off``)."""
    env = os.environ.get("MGAPSP_GPU_COMPRESS", "1").strip().lower()
    return env not in ("0", "no", "false", "off")


def store_threads() -> int:
    """Threads that store chunk frames made on the GPU (``MGAPSP_STORE_THREADS``)."""
    n = positive_from_env("MGAPSP_STORE_THREADS")
    return n if n is not None else min(STORE_THREADS, write_threads())


def _pool(kind: str = "write") -> _Pool:
    """This process's pool of ``write`` threads (host compression) or of ``store``
    threads (frames made on the GPU)."""
    with _POOL_LOCK:
        if kind not in _POOLS:
            n = write_threads() if kind == "write" else store_threads()
            _POOLS[kind] = _Pool(n, f"mgapsp-{kind}")
        return _POOLS[kind]


class _Layout:
    """How chunk bytes of one array are made and where they go."""

    def __init__(self, arr: zarr.Array):
        from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, ShardingCodec

        meta = arr.metadata
        self.ok = getattr(meta, "zarr_format", 2) == 3
        self.codec = None
        self.gpu_clevel = None      # the level, where the GPU can make the frames
        self.shard = None           # chunks per shard, where a shard is a row of chunks
        if self.ok:
            codecs = list(meta.codecs)
            if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec):
                sharding = codecs[0]
                index = list(sharding.index_codecs)
                outer, inner = meta.chunk_grid.chunk_shape, sharding.chunk_shape
                self.ok = (str(getattr(sharding.index_location, "value",
                                       sharding.index_location)) == "end"
                           and len(index) == 2 and _little(index[0], BytesCodec)
                           and isinstance(index[1], Crc32cCodec)
                           and tuple(outer[:-1]) == tuple(inner[:-1]))
                if self.ok:
                    self.shard = outer[-1] // inner[-1]
                codecs = list(sharding.codecs)
            first = codecs.pop(0) if codecs else None
            self.ok = (self.ok and _little(first, BytesCodec)
                       and np.dtype(arr.dtype).byteorder in ("<", "=", "|")
                       and len(codecs) <= 1
                       and all(isinstance(c, BloscCodec) for c in codecs))
            if self.ok and codecs:
                from numcodecs import Blosc

                c = codecs[0]
                shuffle = str(getattr(c.shuffle, "value", c.shuffle))
                cname = str(getattr(c.cname, "value", c.cname))
                self.codec = Blosc(cname=cname, clevel=int(c.clevel),
                                   shuffle=_SHUFFLE[shuffle], blocksize=int(c.blocksize),
                                   typesize=c.typesize)
                from ._kernels.blosc import TYPESIZES

                item = np.dtype(arr.dtype).itemsize
                if (cname == "lz4" and shuffle == "bitshuffle" and int(c.blocksize) == 0
                        and item in TYPESIZES and c.typesize in (None, item)):
                    self.gpu_clevel = int(c.clevel)
        from zarr.storage import LocalStore

        self.arr = arr
        store = arr.store_path.store
        self.root = Path(store.root) if isinstance(store, LocalStore) else None
        self.chunks = arr.chunks        # a shard's inner chunks, where sharded
        self.fill = arr.fill_value
        self.dtype = np.dtype(arr.dtype)

    def encode(self, tile: np.ndarray):
        """A whole chunk's stored bytes."""
        return self.codec.encode(tile) if self.codec is not None else tile.tobytes()

    def put(self, row_chunk: int, col_chunk: int, tile: np.ndarray) -> int:
        return self.put_bytes(row_chunk, col_chunk, self.encode(tile))

    def put_bytes(self, row_chunk: int, col_chunk: int, data) -> int:
        """Store a chunk's encoded bytes (``bytes`` or a uint8 array) under its key."""
        return self.put_key((row_chunk, col_chunk), data)

    def key(self, coords: tuple) -> str:
        """The store key of the chunk (or shard) at ``coords``."""
        key = self.arr.metadata.encode_chunk_key(coords)
        path = self.arr.store_path.path
        return f"{path}/{key}" if path else key

    def put_key(self, coords: tuple, data) -> int:
        """Store the encoded bytes of the chunk at ``coords`` under its key."""
        key = self.key(coords)
        if self.root is not None:
            return _write_file(self.root / key, data)
        self.store_set(key, data)
        return len(data)

    def store_set(self, key: str, data) -> None:
        """``data`` under ``key``, through the store (not a local one)."""
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        store = self.arr.store_path.store
        sync(store.set(key, default_buffer_prototype().buffer.from_bytes(bytes(data))))


def _little(codec, kind) -> bool:
    """``codec`` is a ``kind`` (Zarr's bytes codec) of little-endian (or no) order."""
    return (isinstance(codec, kind)
            and str(getattr(codec.endian, "value", codec.endian)) in ("little", "None"))


def _write_file(path: Path, data) -> int:
    """``data`` into the file ``path`` as a whole: written beside it, then renamed."""
    tmp, fd = _open_partial(path)
    try:
        n = _pwrite(fd, data, 0)
    except BaseException:
        _discard(tmp, fd)
        raise
    _commit(tmp, fd, path)
    return n


def _open_partial(path: Path) -> tuple[Path, int]:
    """A new file beside ``path``, to be renamed there once whole, open for writing
    (the directory made if need be): its path and descriptor."""
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        return tmp, os.open(tmp, flags, 0o666)
    except FileNotFoundError:       # the chunk's directory is new
        path.parent.mkdir(parents=True, exist_ok=True)
        return tmp, os.open(tmp, flags, 0o666)


def _commit(tmp: Path, fd: int, path: Path) -> None:
    """Close the partial file ``tmp`` (open as ``fd``) and rename it to ``path``; it is
    removed if that fails."""
    try:
        os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _discard(tmp: Path, fd: int) -> None:
    """Close and remove the partial file ``tmp`` (open as ``fd``)."""
    os.close(fd)
    tmp.unlink(missing_ok=True)


def _pwrite(fd: int, data, offset: int) -> int:
    """All of ``data`` into the file ``fd`` at ``offset``; returns its bytes."""
    view = memoryview(data).cast("B")
    n = len(view)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done
    return n


#: a shard's index gives this offset and size for a chunk it does not hold
_NO_CHUNK = 2**64 - 1
#: a span of frames made on the GPU goes to the file in pieces of at least this many
#: bytes, one per storing thread at most
PIECE_BYTES = 2 * 2**20


class _ShardFile:
    """One shard being written (Zarr v3 ``sharding_indexed``, its index at the end):
    its chunks' bytes back to back in their order, then the index, an ``(offset,
    size)`` pair of uint64 little-endian per chunk, and the index's CRC-32C.  Into a
    local store the bytes go by positional writes into a file beside the shard's
    place, which :meth:`close` renames there; into other stores they are gathered
    and set whole."""

    def __init__(self, lay: _Layout, coords: tuple, n_chunks: int):
        self.lay = lay
        self.key = lay.key(coords)
        self.index = np.full((n_chunks, 2), _NO_CHUNK, dtype="<u8")
        self.end = 0
        self.fd = None
        self.parts: list[tuple[int, bytes]] = []
        if lay.root is not None:
            self.path = lay.root / self.key
            self.tmp, self.fd = _open_partial(self.path)

    def place(self, k: int, sizes) -> int:
        """Room for chunks ``k, k + 1, ..`` of ``sizes`` bytes after those placed
        before; returns the offset of the first."""
        sizes = np.asarray(sizes, dtype=np.uint64)
        start = self.end
        ends = start + np.cumsum(sizes, dtype=np.uint64)
        self.index[k:k + len(sizes), 0] = ends - sizes
        self.index[k:k + len(sizes), 1] = sizes
        self.end = int(ends[-1]) if len(sizes) else start
        return start

    def write(self, offset: int, data) -> int:
        """Put ``data`` at ``offset``; threads may write disjoint ranges at once."""
        if self.fd is not None:
            return _pwrite(self.fd, data, offset)
        part = bytes(memoryview(data).cast("B"))
        self.parts.append((offset, part))
        return len(part)

    def close(self) -> int:
        """Write the index and put the shard in its place; returns its bytes."""
        import google_crc32c

        index = self.index.tobytes()
        tail = index + int(google_crc32c.value(index)).to_bytes(4, "little")
        if self.fd is None:
            whole = bytearray(self.end + len(tail))
            for offset, data in self.parts:
                whole[offset:offset + len(data)] = data
            whole[self.end:] = tail
            self.lay.store_set(self.key, whole)
            return len(whole)
        _pwrite(self.fd, tail, self.end)
        fd, self.fd = self.fd, None
        _commit(self.tmp, fd, self.path)
        return self.end + len(tail)

    def abort(self) -> None:
        """Drop the shard's file (nothing was put in its place)."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            _discard(self.tmp, fd)


class _ChunkFiles:
    """A batch's row of chunks stored as a file per chunk, each by a pool thread."""

    def __init__(self, lay: _Layout, row: int):
        self.lay, self.row = lay, row

    def frames(self, pool, first: int, frames, starts) -> list[Future]:
        lay, i = self.lay, self.row
        return [pool.submit(lay.put_bytes, i, first + k, frames[starts[k]:starts[k + 1]])
                for k in range(len(starts) - 1)]

    def tile(self, pool, j: int, make: Callable[[], np.ndarray]) -> Future:
        return pool.submit(lambda: self.lay.put(self.row, j, make()))

    def finish(self, futures: list[Future]) -> int:
        return sum(f.result() for f in futures)

    def abort(self) -> None:
        pass


class _ShardRow:
    """A batch's row of chunks stored as shards (:class:`_ShardFile`) of ``lay.shard``
    chunks each.  Frames made on the GPU go from the pinned buffer to the file, a
    piece per pool thread; chunks the pool compresses are written in their order by
    the caller, as they come."""

    def __init__(self, lay: _Layout, row: int):
        self.lay, self.row = lay, row
        self.shards: dict[int, _ShardFile] = {}
        self.encoded: list[tuple[int, Future]] = []

    def _shard(self, s: int) -> _ShardFile:
        sh = self.shards.get(s)
        if sh is None:
            sh = self.shards[s] = _ShardFile(self.lay, (self.row, s), self.lay.shard)
        return sh

    def frames(self, pool, first: int, frames, starts) -> list[Future]:
        per = self.lay.shard
        futures = []
        j, stop = first, first + len(starts) - 1
        while j < stop:
            s = j // per
            last = min(stop, (s + 1) * per)
            a, b = int(starts[j - first]), int(starts[last - first])
            sh = self._shard(s)
            at = sh.place(j - s * per, np.diff(starts[j - first:last - first + 1]))
            span = frames[a:b]
            pieces = max(1, min(pool.threads, len(span) // PIECE_BYTES))
            cuts = [len(span) * p // pieces for p in range(pieces + 1)]
            futures.extend(pool.submit(sh.write, at + c0, span[c0:c1])
                           for c0, c1 in zip(cuts, cuts[1:]))
            j = last
        return futures

    def tile(self, pool, j: int, make: Callable[[], np.ndarray]) -> Future:
        f = pool.submit(lambda: self.lay.encode(make()))
        self.encoded.append((j, f))
        return f

    def finish(self, futures: list[Future]) -> int:
        """Write the chunks compressed on the host, then close every shard; the
        stored bytes.  A shard with room past the array's last chunk leaves it empty."""
        per = self.lay.shard
        for f in futures:
            f.result()
        for j, f in self.encoded:
            data = f.result()
            sh = self._shard(j // per)
            sh.write(sh.place(j % per, [len(data)]), data)
        return sum(sh.close() for _, sh in sorted(self.shards.items()))

    def abort(self) -> None:
        for sh in self.shards.values():
            sh.abort()


_LAYOUTS: dict[tuple, _Layout] = {}


def _layout(arr: zarr.Array) -> _Layout:
    # keyed by what decides the bytes, so that a store replaced under the same path
    # (--overwrite) never reuses the old array's layout
    key = (str(arr.store_path), arr.shape, arr.chunks, str(arr.dtype),
           repr(arr.metadata.codecs), repr(arr.fill_value))
    lay = _LAYOUTS.get(key)
    if lay is None:
        if len(_LAYOUTS) >= 16:
            _LAYOUTS.clear()
        lay = _LAYOUTS[key] = _Layout(arr)
    return lay


def write_chunk(arr: zarr.Array, coords: tuple, chunk: np.ndarray) -> int:
    """Store one whole chunk (its values, shaped as the array's chunks) at ``coords``,
    as Zarr would, without a pass through Zarr's event loop where the layout allows:
    in a worker whose threads are busy, each such pass cost about 2 ms."""
    lay = _layout(arr)
    chunk = np.ascontiguousarray(chunk, dtype=lay.dtype)
    if chunk.shape != tuple(lay.chunks):
        raise ValueError(f"a chunk of shape {chunk.shape}, the array's are {lay.chunks}")
    where = tuple(slice(c * n, min((c + 1) * n, size))
                  for c, n, size in zip(coords, lay.chunks, arr.shape))
    inside = tuple(slice(0, w.stop - w.start) for w in where)
    if not lay.ok or lay.shard is not None:      # Zarr writes it (into its shard)
        arr[where] = chunk[inside]
        return 0
    if any(s.stop < n for s, n in zip(inside, lay.chunks)):
        # an edge chunk: Zarr stores the fill value beyond the array's end
        padded = np.full(lay.chunks, lay.fill, dtype=lay.dtype)
        padded[inside] = chunk[inside]
        chunk = padded
    return lay.put_key(tuple(coords), lay.encode(chunk))


def update_attributes(group: zarr.Group, updates: dict) -> None:
    """``group.attrs.update(updates)``: the same ``zarr.json``, but written here where
    the group is in a local store rather than through Zarr's event loop.  The store's
    last record ends every job: through Zarr it took 3.1 ms of a 0.14 s job on four
    GPUs, in a client process whose loop thread also runs the scheduler."""
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
        _write_file(Path(store.root) / (f"{prefix}/{key}" if prefix else key), buf.to_bytes())


def _host_tile(block: np.ndarray, j: int, cr: int, cc: int, fill) -> np.ndarray:
    rows, n = block.shape
    c0, c1 = j * cc, min((j + 1) * cc, n)
    part = block[:, c0:c1]
    if rows == cr and c1 - c0 == cc:
        return np.ascontiguousarray(part)
    tile = np.full((cr, cc), fill, dtype=block.dtype)
    tile[:rows, :c1 - c0] = part
    return tile


def write_block(arr: zarr.Array, start: int, block) -> dict:
    """Write ``block`` (NumPy or CuPy) as rows ``start ..`` of ``arr``, whole chunks
    (whole shards, where the array's shards are rows of chunks).

    ``start`` must be a multiple of the row chunk; the block must end at a chunk
    boundary or at the array's last row.  Returns ``{"copy_s", "encode_s", "bytes"}``:
    seconds cutting and copying the block to the host, seconds until every chunk was
    stored after that, and the stored bytes.
    """
    from ._kernels.staging import is_device_array

    cr, cc = arr.chunks[0], arr.chunks[1]
    rows = block.shape[0]
    stop = start + rows
    if start % cr or (stop % cr and stop != arr.shape[0]) or rows > cr:
        raise ValueError(f"rows {start}:{stop} are not whole chunks of {cr} rows")
    if block.shape[1] != arr.shape[1]:
        raise ValueError(f"a block of {block.shape[1]} columns for an array of "
                         f"{arr.shape[1]}")
    lay = _layout(arr)
    device = is_device_array(block)
    t0 = time.perf_counter()
    if not lay.ok:
        host = block.get() if device else block
        arr[start:stop, :] = host
        return {"copy_s": 0.0, "encode_s": time.perf_counter() - t0, "bytes": 0}
    gpu_frames = device and lay.gpu_clevel is not None and gpu_compress()
    pool = _pool("store" if gpu_frames else "write")
    i = start // cr
    n_chunks = -(-arr.shape[1] // cc)
    row = _ShardRow(lay, i) if lay.shard is not None else _ChunkFiles(lay, i)
    futures: list[Future] = []
    copy_s = 0.0
    try:
        try:
            copy_s = _submit(pool, lay, row, block, device, gpu_frames, cr, cc, n_chunks,
                             futures)
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
    return {"copy_s": copy_s, "encode_s": time.perf_counter() - t0 - copy_s,
            "bytes": stored}


def _submit(pool, lay: _Layout, row, block, device: bool, gpu_frames: bool, cr: int,
            cc: int, n_chunks: int, futures: list) -> float:
    """Queue every chunk of the block for ``row`` (a :class:`_ChunkFiles` or
    :class:`_ShardRow`) on ``pool``, appending to ``futures``; the seconds spent
    cutting (or compressing) and copying device groups to the host."""
    if not device:
        host = np.asarray(block, dtype=lay.dtype)
        futures.extend(row.tile(pool, j, lambda j=j: _host_tile(host, j, cr, cc, lay.fill))
                       for j in range(n_chunks))
        return 0.0
    from ._kernels.staging import chunk_groups, frame_groups

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
                  for slot, first, frames, starts in frame_groups(
                      block, cr, cc, lay.fill, lay.gpu_clevel, wait))
    else:
        groups = ((slot, lambda first=first, tiles=tiles:
                   [row.tile(pool, first + k, lambda t=tiles[k]: t) for k in range(len(tiles))])
                  for slot, first, tiles in chunk_groups(block, cr, cc, lay.fill, wait))
    copy_s = 0.0
    t = time.perf_counter()
    for slot, queue in groups:
        copy_s += time.perf_counter() - t
        fs = queue()
        in_slot[slot] = fs
        futures.extend(fs)
        t = time.perf_counter()
    return copy_s
