"""Chunk and shard files as Zarr v3 reads them, written whole or not at all.

:class:`ChunkLayout` reads an array's codecs once and says how its chunk bytes are made
and where they go; a chunk file is put whole by the store's place
(:meth:`~mgapsp.store.place.Place.put`); a shard (Zarr's ``sharding_indexed``, index and CRC-32C at its
end) is a row of chunks written in pieces by several threads, then its identity
(:class:`ShardIdentity`), its index, then renamed into place (:class:`_ShardFile`).  This relies on ``zarr.core`` (buffers,
metadata encoding), so ``pyproject.toml`` pins Zarr to the tested minor version.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Callable

import numpy as np
import zarr

from .atomic import commit, discard, open_partial, pwrite
from .place import place_of_zarr
from .planes import PlanesCodec, encode_bytes, special_word

_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


class ChunkLayout:
    """How chunk bytes of one array are made and where they go."""

    def __init__(self, arr: zarr.Array):
        from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, ShardingCodec

        meta = arr.metadata
        self.ok = getattr(meta, "zarr_format", 2) == 3
        self.codec = None
        self.crc = False
        #: how a device makes the chunks' stored bytes itself: ("blosc", level) for
        #: Blosc LZ4 bit-shuffle, ("planes", special word); None where it cannot
        self.gpu_codec = None
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
            # a trailing crc32c: each chunk's bytes end with their CRC-32C
            self.crc = bool(codecs) and isinstance(codecs[-1], Crc32cCodec)
            if self.crc:
                codecs.pop()
            self.ok = (self.ok and _little(first, BytesCodec)
                       and np.dtype(arr.dtype).byteorder in ("<", "=", "|")
                       and len(codecs) <= 1
                       and all(isinstance(c, (BloscCodec, PlanesCodec)) for c in codecs))
            if self.ok and codecs and isinstance(codecs[0], PlanesCodec):
                self.codec = _Planes(arr.chunks[-1], special_word(arr.dtype))
                self.gpu_codec = ("planes", special_word(arr.dtype))
            elif self.ok and codecs:
                from numcodecs import Blosc

                c = codecs[0]
                shuffle = str(getattr(c.shuffle, "value", c.shuffle))
                cname = str(getattr(c.cname, "value", c.cname))
                self.codec = Blosc(cname=cname, clevel=int(c.clevel),
                                   shuffle=_SHUFFLE[shuffle], blocksize=int(c.blocksize),
                                   typesize=c.typesize)
                item = np.dtype(arr.dtype).itemsize
                if (cname == "lz4" and shuffle == "bitshuffle" and int(c.blocksize) == 0
                        and c.typesize in (None, item)):
                    self.gpu_codec = ("blosc", int(c.clevel))
        self.arr = arr
        #: what each shard of this array says it belongs to (stores made before shards
        #: carried one: None)
        self.identity = ShardIdentity.of(arr) if self.shard is not None else None
        # chunk files: the path (within the store) of the array recording each
        # written chunk's CRC-32C, a row per batch (stores made before: None)
        record = arr.attrs.get("mgapsp_chunk_crcs")
        self.record = (record if self.shard is None and self.crc and isinstance(record, str)
                       else None)
        self._record_layout: ChunkLayout | None = None
        #: where the store lives (:mod:`.place`), where this module writes and reads
        #: its files itself; None for another kind of Zarr store (a memory store)
        self.place = place_of_zarr(arr.store_path.store)
        #: the store's folder, where a shard's file is written in pieces by several
        #: threads; None where files are put whole
        self.root = self.place.folder if self.place is not None else None
        self.chunks = arr.chunks        # a shard's inner chunks, where sharded
        self.fill = arr.fill_value
        self.dtype = np.dtype(arr.dtype)

    @property
    def stored_whole(self) -> bool:
        """Whether its chunks (shards) are files or objects this module writes and
        reads itself (else only Zarr knows them)."""
        return self.place is not None

    def encode(self, tile: np.ndarray):
        """A whole chunk's stored bytes."""
        data = self.codec.encode(tile) if self.codec is not None else tile.tobytes()
        return data + crc32c(data) if self.crc else data

    def with_crc(self, frame):
        """The stored bytes of a chunk whose encoded bytes are ``frame`` (a uint8
        array or bytes): a list of buffers, the CRC-32C last where the array keeps one."""
        return [frame, crc32c(frame)] if self.crc else [frame]

    def record_layout(self) -> "ChunkLayout":
        """The layout of the array recording this one's chunk CRCs (:attr:`record`)."""
        if self._record_layout is None:
            parent = self.arr.store_path.path.rpartition("/")[0]
            path = f"{parent}/{self.record}" if parent else self.record
            store = self.arr.store_path.store
            self._record_layout = ChunkLayout(zarr.open_array(
                store=store, path=path, mode="r" if store.read_only else "r+"))
        return self._record_layout

    def put_record(self, row: int, crcs: np.ndarray, guard=None) -> int:
        """Record the CRCs of the chunks of ``row`` (a uint32 each) once they are
        stored."""
        rec = self.record_layout()
        crcs = np.ascontiguousarray(crcs, "<u4")
        if rec.chunks[1] == len(crcs) + 1:      # the record says its batch (see layout)
            crcs = np.append(crcs, np.uint32(row)).astype("<u4")
        return rec.put_key((row, 0), rec.encode(crcs), guard)

    def put(self, row_chunk: int, col_chunk: int, tile: np.ndarray, guard=None) -> int:
        return self.put_key((row_chunk, col_chunk), self.encode(tile), guard)

    def put_bytes(self, row_chunk: int, col_chunk: int, frame, guard=None) -> int:
        """Store a chunk whose encoded bytes are ``frame`` (``bytes`` or a uint8 array,
        its CRC still to add) under its key."""
        return self.put_key((row_chunk, col_chunk), self.with_crc(frame), guard)

    def key(self, coords: tuple) -> str:
        """The store key of the chunk (or shard) at ``coords``."""
        key = self.arr.metadata.encode_chunk_key(coords)
        path = self.arr.store_path.path
        return f"{path}/{key}" if path else key

    def put_key(self, coords: tuple, data, guard=None) -> int:
        """Store the stored bytes of the chunk at ``coords`` (a buffer, or a list of
        buffers to join) under its key; ``guard()`` is called right before the file is
        put in place (see :meth:`put_whole`)."""
        return self.put_whole(self.key(coords), data, guard)

    def put_whole(self, key: str, data, guard=None) -> int:
        """``data`` (a buffer, or a list of buffers to join) under ``key``, whole, by
        the store's place (:meth:`~mgapsp.store.place.Place.put`); in another kind of
        store through Zarr.  Its bytes."""
        if self.place is not None:
            return self.place.put(key, data, guard)
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        if guard is not None:
            guard()
        if isinstance(data, list):
            data = b"".join(bytes(memoryview(d).cast("B")) for d in data)
        store = self.arr.store_path.store
        sync(store.set(key, default_buffer_prototype().buffer.from_bytes(bytes(data))))
        return len(data)


class _Planes:
    """:mod:`.planes` frames of an array's chunks, made on the host."""

    def __init__(self, row: int, special: int):
        self.row, self.special = int(row), int(special)

    def encode(self, tile: np.ndarray) -> bytes:
        raw = np.ascontiguousarray(tile).reshape(-1).view(np.uint8)
        return encode_bytes(raw, tile.dtype.itemsize, self.row, self.special).tobytes()


def _little(codec, kind) -> bool:
    """``codec`` is a ``kind`` (Zarr's bytes codec) of little-endian (or no) order."""
    return (isinstance(codec, kind)
            and str(getattr(codec.endian, "value", codec.endian)) in ("little", "None"))


def crc32c(data) -> bytes:
    """The CRC-32C of ``data`` (a buffer) as Zarr's crc32c codec stores it (4 bytes,
    little-endian)."""
    if isinstance(data, np.ndarray):
        buf = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        buf = np.frombuffer(data, dtype=np.uint8)
    value = _crc32c_value()
    if value is not None:
        crc = value(buf.ctypes.data, buf.nbytes)
    else:
        import google_crc32c

        crc = google_crc32c.value(buf)
    return int(crc).to_bytes(4, "little")


_CRC_LIB: list = []


def _crc32c_value():
    """The C function ``crc32c_value(data, size)`` of the library that google-crc32c
    bundles, called through ctypes, which lets go of the interpreter lock while it runs
    (google_crc32c.value holds it: on a GPU worker the checksums of every frame then
    queued behind the kernel launches); None where the library is not found."""
    if not _CRC_LIB:
        import ctypes
        import glob

        import google_crc32c

        site = os.path.dirname(os.path.dirname(google_crc32c.__file__))
        found = sorted(glob.glob(os.path.join(site, "google_crc32c.libs", "libcrc32c*.so*")))
        fn = None
        if found:
            try:
                fn = ctypes.CDLL(found[0]).crc32c_value
                fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_size_t], ctypes.c_uint32
            except (OSError, AttributeError):
                fn = None
        _CRC_LIB.append(fn)
    return _CRC_LIB[0]


#: a shard's index gives this offset and size for a chunk it does not hold
NO_CHUNK = 2**64 - 1


def shard_index(end: bytes, per: int) -> np.ndarray | None:
    """A shard's index from its last ``16 * per + 4`` bytes: an ``(offset, size)`` row
    per chunk; None where the index fails its CRC-32C (damaged or truncated)."""
    if len(end) != 16 * per + 4 or crc32c(end[:-4]) != end[-4:]:
        return None
    return np.frombuffer(end[:-4], dtype="<u8").reshape(per, 2)


class ShardIdentity:
    """Which store, array and batch a shard belongs to.

    A CRC says that a file's bytes are whole, not that they are in their place: a shard
    copied from another batch or another store passes every checksum.  So each shard
    ends, right before its index, with a block of :attr:`SIZE` bytes: a tag, the store's
    id (made once, when the store is; the same for every run), a CRC of the array's name,
    the shard's coordinates, and the block's own CRC-32C.  Zarr reads a shard's chunks
    through its index and never looks at these bytes.  The array's attribute
    ``mgapsp_shard_id`` (``{"store": hex, "array": name}``) says that its shards carry
    one; stores made before that carry none and are checked as before.
    """

    TAG = b"MGAPSPID"
    SIZE = 8 + 16 + 4 + 8 + 8 + 4

    def __init__(self, store_id: str, array: str):
        self.store_id, self.array = store_id, array
        self._head = self.TAG + bytes.fromhex(store_id) + crc32c(array.encode())

    @classmethod
    def of(cls, arr: zarr.Array) -> "ShardIdentity | None":
        rec = arr.attrs.get("mgapsp_shard_id")
        try:
            return cls(rec["store"], rec["array"]) if rec else None
        except (KeyError, TypeError, ValueError):
            return None

    def block(self, coords: tuple) -> bytes:
        """The identity block of the shard at ``coords`` (row, column)."""
        body = (self._head + int(coords[0]).to_bytes(8, "little")
                + int(coords[-1]).to_bytes(8, "little"))
        return body + crc32c(body)

    def problem(self, block: bytes, coords: tuple) -> str | None:
        """What is wrong with ``block`` as the identity of the shard at ``coords``."""
        if len(block) != self.SIZE or not block.startswith(self.TAG) \
                or crc32c(block[:-4]) != block[-4:]:
            return "carries no identity of this store (damaged, or not written by it)"
        if block[8:24] != self._head[8:24]:
            return f"belongs to another store (id {block[8:24].hex()})"
        if block[24:28] != self._head[24:28]:
            return "belongs to another array of this store"
        row = int.from_bytes(block[28:36], "little")
        col = int.from_bytes(block[36:44], "little")
        if (row, col) != (int(coords[0]), int(coords[-1])):
            return (f"holds the rows of batch {row}" if col == int(coords[-1])
                    else f"belongs at shard ({row}, {col})")
        return None
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

    def __init__(self, lay: ChunkLayout, coords: tuple, n_chunks: int, guard=None):
        self.lay = lay
        self.guard = guard
        self.key = lay.key(coords)
        self.coords = coords
        self.index = np.full((n_chunks, 2), NO_CHUNK, dtype="<u8")
        self.end = 0
        self.fd = None
        self.parts: list[tuple[int, bytes]] = []
        if lay.root is not None:
            self.path = lay.root / self.key
            self.tmp, self.fd = open_partial(self.path, guard)

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
            return pwrite(self.fd, data, offset, self.tmp)
        part = bytes(memoryview(data).cast("B"))
        self.parts.append((offset, part))
        return len(part)

    def close(self) -> int:
        """Write the identity and the index and put the shard in its place; returns its
        bytes."""
        index = self.index.tobytes()
        tail = index + crc32c(index)
        if self.lay.identity is not None:
            tail = self.lay.identity.block(self.coords) + tail
        if self.fd is None:
            whole = bytearray(self.end + len(tail))
            for offset, data in self.parts:
                whole[offset:offset + len(data)] = data
            whole[self.end:] = tail
            return self.lay.put_whole(self.key, whole, self.guard)
        pwrite(self.fd, tail, self.end, self.tmp)
        if self.guard is not None:
            self.guard()    # raising here leaves the file to abort()
        fd, self.fd = self.fd, None
        commit(self.tmp, fd, self.path)
        return self.end + len(tail)

    def abort(self) -> None:
        """Drop the shard's file (nothing was put in its place)."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            discard(self.tmp, fd)


class ChunkFiles:
    """A batch's row of chunks stored as a file per chunk, each by a pool thread;
    ``guard()`` is called before each file is put in place.  A file's name is all that
    says where a chunk belongs, so where the array keeps a record (``lay.record``) the
    row's CRCs are recorded after its chunks: a chunk file copied into another's place
    then differs from the record."""

    def __init__(self, lay: ChunkLayout, row: int, guard=None):
        self.lay, self.row, self.guard = lay, row, guard
        self.crcs = (np.zeros(-(-lay.arr.shape[1] // lay.chunks[1]), dtype="<u4")
                     if lay.record else None)

    def _put(self, j: int, data: list) -> int:
        if self.crcs is not None:
            self.crcs[j] = int.from_bytes(bytes(data[-1]), "little")
        return self.lay.put_key((self.row, j), data, self.guard)

    def frames(self, pool, first: int, frames, starts) -> list[Future]:
        lay = self.lay
        return [pool.submit(lambda j=first + k, f=frames[starts[k]:starts[k + 1]]:
                            self._put(j, lay.with_crc(f)))
                for k in range(len(starts) - 1)]

    def tile(self, pool, j: int, make: Callable[[], np.ndarray]) -> Future:
        def put():
            data = self.lay.encode(make())
            return self._put(j, [data[:-4], data[-4:]] if self.lay.crc else [data])
        return pool.submit(put)

    def finish(self, futures: list[Future]) -> int:
        stored = sum(f.result() for f in futures)
        if self.crcs is not None:
            stored += self.lay.put_record(self.row, self.crcs, self.guard)
        return stored

    def abort(self) -> None:
        pass


def _pieces(pool, sh: _ShardFile, at: int, span) -> list[Future]:
    """Write ``span`` at ``at`` of ``sh``, in pieces of at least PIECE_BYTES, one per
    pool thread at most."""
    pieces = max(1, min(pool.threads, len(span) // PIECE_BYTES))
    cuts = [len(span) * p // pieces for p in range(pieces + 1)]
    return [pool.submit(sh.write, at + c0, span[c0:c1]) for c0, c1 in zip(cuts, cuts[1:])]


class ShardRow:
    """A batch's row of chunks stored as shards (:class:`_ShardFile`) of ``lay.shard``
    chunks each.  Frames made on the GPU go from the pinned buffer to the file, a
    piece per pool thread; chunks the pool compresses are written in their order by
    the caller, as they come."""

    def __init__(self, lay: ChunkLayout, row: int, guard=None):
        self.lay, self.row, self.guard = lay, row, guard
        self.shards: dict[int, _ShardFile] = {}
        self.encoded: list[tuple[int, Future]] = []

    def _shard(self, s: int) -> _ShardFile:
        sh = self.shards.get(s)
        if sh is None:
            sh = self.shards[s] = _ShardFile(self.lay, (self.row, s), self.lay.shard,
                                             self.guard)
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
            sizes = np.diff(starts[j - first:last - first + 1])
            if not self.lay.crc:    # the frames' span goes to the file as it is
                at = sh.place(j - s * per, sizes)
                futures.extend(_pieces(pool, sh, at, frames[a:b]))
            else:                   # each frame followed by its CRC-32C
                at = sh.place(j - s * per, sizes + 4)
                for k in range(j - first, last - first):
                    frame = frames[int(starts[k]):int(starts[k + 1])]
                    futures.extend(_pieces(pool, sh, at, frame))
                    futures.append(pool.submit(
                        lambda at=at + len(frame), frame=frame: sh.write(at, crc32c(frame))))
                    at += len(frame) + 4
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
