"""Finding damaged batches in a store without recomputing them.

Every chunk of a store made by this mgapsp ends with its CRC-32C (Zarr's ``crc32c``
codec), and every shard with its identity (:class:`~.files.ShardIdentity`: which store
and batch it is) and its index's CRC-32C.  :func:`damaged_batches` reads a
batch's files and checks them:

- ``quick``: each file is there, each shard is the one of its place (its identity)
  and its index is whole (its CRC holds, its chunks lie inside the file).  One small read per shard: what ``--resume`` and
  ``info`` do.
- ``deep``: every chunk's bytes against their CRC too (or, in a store made before
  chunks had one, through their decoder).  Reads everything: what ``verify`` and
  ``repair`` do.

A flagged batch that fails is damaged; its rows are computed again by ``repair``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .files import NO_CHUNK, ChunkLayout, crc32c, shard_index
from .layout import Store
from .objects import raise_if_unreachable

__all__ = ["damaged_batches", "batch_ranges"]


def damaged_batches(store: Store, batches=None, *, deep: bool = False,
                    threads: int = 8) -> dict[int, str]:
    """``{batch: what is wrong}`` for the batches (default: the flagged ones) whose
    stored rows are damaged or missing."""
    if batches is None:
        batches = np.flatnonzero(store.done_mask())
    batches = [int(b) for b in batches]
    names = ((["distances"] if store.job.get("distances", True) else [])
             + (["predecessors"] if store.job["predecessors"] else []))
    layouts = [(name, ChunkLayout(store.array(name))) for name in names]
    # the job's metrics: a chunk of each per batch (a file of its own), and where the
    # store keeps one, each batch's record of their CRCs
    record = (ChunkLayout(store.array("chunk_crc/metrics"))
              if "chunk_crc/metrics" in store.group else None)
    recorded = list(record.arr.attrs.get("metrics", ())) if record else []
    # each metric's layout and its column in the record (None: not recorded)
    metrics = [(ChunkLayout(store.array(name)),
                recorded.index(name) if name in recorded else None)
               for name in store.job.get("metrics", ())]
    if not batches:
        return {}

    def check(b: int) -> str | None:
        for name, lay in layouts:
            problem = _check_row(lay, b, deep)
            if problem:
                return problem
        crcs = None
        if record is not None and record.ok and record.stored_whole:
            crcs, problem = _record_row(record, b, len(recorded))
            if problem:
                return problem
        for lay, at in metrics:
            if lay.ok and lay.stored_whole:
                want = None if crcs is None or at is None else crcs[4 * at:4 * at + 4]
                problem = _check_chunk_file(lay, lay.key((b,)), deep,
                                            None if want == bytes(4) else want)
                if problem:
                    return problem
        return None

    with ThreadPoolExecutor(max(1, min(threads, len(batches)))) as pool:
        found = list(pool.map(check, batches))
    return {b: p for b, p in zip(batches, found) if p}


def batch_ranges(batches) -> list[str]:
    """``[3, 4, 5, 9]`` -> ``["3-5", "9"]``."""
    out: list[str] = []
    batches = sorted(int(b) for b in batches)
    k = 0
    while k < len(batches):
        j = k
        while j + 1 < len(batches) and batches[j + 1] == batches[j] + 1:
            j += 1
        out.append(str(batches[k]) if j == k else f"{batches[k]}-{batches[j]}")
        k = j + 1
    return out


def _check_row(lay: ChunkLayout, row: int, deep: bool) -> str | None:
    """What is wrong with the stored row of chunks ``row`` of ``lay``'s array."""
    arr = lay.arr
    if not lay.ok or not lay.stored_whole:
        return _check_by_reading(arr, row) if deep else None
    n_cols = -(-arr.shape[1] // lay.chunks[1])
    if lay.shard is None:
        recorded, problem = _recorded_crcs(lay, row, n_cols)
        if problem:
            return problem
        for j in range(n_cols):
            problem = _check_chunk_file(lay, lay.key((row, j)), deep,
                                        None if recorded is None
                                        else recorded[4 * j:4 * j + 4])
            if problem:
                return problem
        return None
    per = lay.shard
    for s in range(-(-n_cols // per)):
        problem = _check_shard(lay, (row, s), min(per, n_cols - s * per), per, deep)
        if problem:
            return problem
    return None


def _read(lay: ChunkLayout, key: str, offset: int = 0, size: int | None = None) -> bytes:
    """The bytes of the chunk (or shard) ``key`` of ``lay``'s array (``size`` of them
    from ``offset``); none where it is gone."""
    data = lay.place.read(key, offset or None, size)
    return b"" if data is None else data


def _size(lay: ChunkLayout, key: str) -> tuple[int, str | None]:
    """The file's (or object's) size, and what is wrong where it is missing or empty."""
    meta = lay.place.head(key)
    if meta is None:
        return 0, f"{key} is missing"
    return meta.size, (f"{key} is empty" if meta.size == 0 else None)


def _recorded_crcs(lay: ChunkLayout, row: int,
                   n_cols: int) -> tuple[bytes | None, str | None]:
    """The CRCs recorded for the ``n_cols`` chunk files of ``row`` (4 bytes each), where
    the array keeps a record; else None.  A record that names its batch (stores made
    since) must name ``row``: chunk files moved together with their record are found."""
    if lay.record is None:
        return None, None
    return _record_row(lay.record_layout(), row, n_cols)


def _record_row(rec: ChunkLayout, row: int, n_cols: int) -> tuple[bytes | None, str | None]:
    """Row ``row`` of a record of CRCs (``n_cols`` of them, 4 bytes each), checked."""
    key = rec.key((row, 0))
    size, problem = _size(rec, key)
    if problem:
        return None, problem
    data = _read(rec, key)
    if _check_chunk(rec, data, key) or len(data) != 4 * rec.chunks[1] + 4:
        return None, f"{key}: the record of its chunks' checksums is damaged"
    if rec.chunks[1] == n_cols + 1:
        whose = int.from_bytes(data[4 * n_cols:4 * n_cols + 4], "little")
        if whose != row:
            return None, (f"{key}: the record of batch {whose}'s chunks, not of batch "
                          f"{row}'s (moved, with its chunk files?)")
    return data[:4 * n_cols], None


def _check_chunk_file(lay: ChunkLayout, key: str, deep: bool,
                      recorded: bytes | None = None) -> str | None:
    """What is wrong with a chunk file; ``recorded``: the CRC its batch recorded."""
    size, problem = _size(lay, key)
    if problem:
        return problem
    if lay.crc and size <= 4:
        return f"{key} is too short"
    if deep:
        data = _read(lay, key)
        problem = _check_chunk(lay, data, key)
        end = data[-4:]
    else:
        end = _read(lay, key, size - 4, 4) if recorded is not None else None
    if not problem and recorded is not None and end != recorded:
        problem = f"{key} is not the chunk written there (its checksum is not the recorded one)"
    return problem


def _check_chunk(lay: ChunkLayout, data: bytes, where: str) -> str | None:
    """A chunk's stored bytes against their CRC, or through their decoder."""
    if lay.crc:
        if len(data) < 4 or crc32c(data[:-4]) != data[-4:]:
            return f"{where} fails its checksum"
        return None
    want = int(np.prod(lay.chunks)) * lay.dtype.itemsize
    try:
        raw = lay.codec.decode(data) if lay.codec is not None else data
        if len(memoryview(raw).cast("B")) != want:
            raise ValueError("size")
    except Exception:   # numcodecs raises several types for a bad frame
        return f"{where} cannot be decoded"
    return None


def _check_shard(lay: ChunkLayout, coords: tuple, n_chunks: int, per: int,
                 deep: bool) -> str | None:
    key = lay.key(coords)
    tail = 16 * per + 4
    ident = lay.identity.SIZE if lay.identity is not None else 0
    size, problem = _size(lay, key)
    if problem:
        return problem
    if size < tail + ident:
        return f"{key} is truncated ({size} bytes)"
    data = _read(lay, key) if deep else None
    end = data[-tail - ident:] if deep else _read(lay, key, size - tail - ident, tail + ident)
    end, block = end[ident:], end[:ident]
    index = shard_index(end, per)
    if index is None:
        return f"{key}: its index fails its checksum (damaged or truncated)"
    if ident:
        problem = lay.identity.problem(block, coords)
        if problem:
            return f"{key} {problem}"
    for k in range(n_chunks):
        offset, nbytes = (int(x) for x in index[k])
        if offset == NO_CHUNK:
            return f"{key}: chunk {k} is missing"
        if offset + nbytes > size - tail - ident:
            return f"{key}: chunk {k} lies beyond the file's end (truncated)"
        if deep:
            problem = _check_chunk(lay, data[offset:offset + nbytes], f"{key}: chunk {k}")
            if problem:
                return problem
    return None


def _check_by_reading(arr, row: int) -> str | None:
    """A store laid out otherwise: read the row of chunks through Zarr."""
    r0 = row * arr.chunks[0]
    try:
        arr[r0:min(r0 + arr.chunks[0], arr.shape[0]), :]
    except Exception as exc:    # zarr and its codecs raise several types
        raise_if_unreachable(arr.path, exc)     # else damage
        return f"{arr.path} rows {r0}.. cannot be read: {str(exc)[:120]}"
    return None
