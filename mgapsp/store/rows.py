"""Some rows of a store's array, decoding no more of its chunks than they need.

A chunk holds a whole batch of rows, so Zarr, which decodes chunks whole, reads one
row of NY (264,346 columns) by decoding 7.4 GB.  An ``mgapsp.planes`` block is
computed from at most two blocks of a row above it, named by its descriptor: the
blocks a row needs are found from the descriptors alone
(:func:`~mgapsp.store.planes_kernels.decode_rows`), and on road rows that is a tenth
of the chunk on average.  Here the chunks' bytes are read from their files (a ranged
read of a shard), checked against their CRC-32C as Zarr's codec would, and decoded in
threads, a chunk each.

Only arrays that :class:`~mgapsp.store.files.ChunkLayout` reads itself and whose
chunks are planes frames with a CRC go this way; :func:`read` gives every other array
to Zarr.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..cpu_sssp import threads
from .files import NO_CHUNK, ChunkLayout, crc32c, shard_index
from .planes import decode_rows

__all__ = ["read"]


def read(arr, rows, columns=None, out: np.ndarray | None = None) -> np.ndarray:
    """``arr``'s rows ``rows`` at its columns ``columns`` (each a slice or positions,
    in any order, repeats allowed; ``columns`` None for all), into ``out`` where given.
    A chunk that fails its checksum raises ValueError saying so, as Zarr's codec does;
    a chunk never written reads as the array's fill value, as in Zarr."""
    if columns is None:
        columns = slice(None)
    lay = ChunkLayout(arr)
    positions = (np.arange(arr.shape[0])[rows] if isinstance(rows, slice)
                 else np.asarray(rows, dtype=np.int64).reshape(-1))
    if not (len(positions) and _planes(lay)
            and _partial(positions, lay.chunks[0], arr.shape[0])):
        if out is None:
            return arr.get_orthogonal_selection((rows, columns))
        from zarr.core.buffer import default_buffer_prototype

        arr.get_orthogonal_selection(
            (rows, columns), out=default_buffer_prototype().nd_buffer.from_numpy_array(out))
        return out
    rows = positions
    cols = np.arange(arr.shape[1])[columns] if isinstance(columns, slice) \
        else np.asarray(columns, dtype=np.int64).reshape(-1)
    if out is None:
        out = np.empty((len(rows), len(cols)), dtype=arr.dtype)
    R, W = lay.chunks
    tasks = []          # (batch, column chunk, the batch's rows wanted)
    col_chunks = np.unique(cols // W)
    for b in np.unique(rows // R):
        local = np.unique(rows[rows // R == b] % R)
        tasks += [(int(b), int(j), local) for j in col_chunks]
    fetch = _Fetch(lay, {(b, j) for b, j, _ in tasks})
    with ThreadPoolExecutor(max(1, min(threads(), len(tasks)))) as pool:
        for b, j, tile in pool.map(lambda t: (t[0], t[1], _tile(fetch, *t)), tasks):
            at = np.flatnonzero(rows // R == b)
            cat = np.flatnonzero(cols // W == j)
            out[np.ix_(at, cat)] = tile[np.ix_(rows[at] % R, cols[cat] % W)]
    return out


def _planes(lay: ChunkLayout) -> bool:
    return (lay.ok and lay.stored_whole and lay.crc and len(lay.chunks) == 2
            and (lay.gpu_codec or ("",))[0] == "planes")


def _partial(rows: np.ndarray, R: int, n: int) -> bool:
    """Whether some batch the rows touch is not wanted whole (else Zarr's whole
    chunks are the read)."""
    batches = np.unique(rows // R)
    whole = sum(min(R, n - b * R) for b in batches)
    return len(np.unique(rows)) < whole


class _Fetch:
    """The stored bytes of chunks by their coordinates: from their files, or from their
    shards by the shards' indexes (each read once, here, before the chunks are)."""

    def __init__(self, lay: ChunkLayout, chunks):
        self.lay = lay
        self.indexes = {}
        if lay.shard is not None:
            for b, s in {(b, j // lay.shard) for b, j in chunks}:
                self.indexes[(b, s)] = self._index(lay.key((b, s)))

    def __call__(self, b: int, j: int) -> bytes | None:
        lay = self.lay
        if lay.shard is None:
            return lay.place.read(lay.key((b, j)), None, None)
        s, k = divmod(j, lay.shard)
        index = self.indexes[(b, s)]
        if index is None:
            return None
        offset, size = (int(v) for v in index[k])
        return None if offset == NO_CHUNK else lay.place.read(lay.key((b, s)), offset, size)

    def _index(self, key: str):
        """The shard's index; None where there is no shard (its chunks read as the
        fill value, as in Zarr)."""
        lay = self.lay
        meta = lay.place.head(key)
        if meta is None:
            return None
        tail = 16 * lay.shard + 4
        index = shard_index(lay.place.read(key, meta.size - tail, tail) or b"", lay.shard)
        if index is None:
            raise ValueError(f"{key}: its index fails its checksum")
        return index


def _tile(fetch: _Fetch, b: int, j: int, local: np.ndarray) -> np.ndarray:
    """Chunk ``(b, j)`` as an array of its shape, right at the rows ``local``."""
    lay = fetch.lay
    shape = tuple(lay.chunks)
    data = fetch(b, j)
    if data is None:
        return np.full(shape, lay.fill, dtype=lay.dtype)
    buf = np.frombuffer(data, dtype=np.uint8)
    if len(buf) < 4 or crc32c(buf[:-4]) != bytes(buf[-4:]):
        raise ValueError(f"{lay.key((b, j))}: a chunk fails its checksum")
    words = np.empty(int(np.prod(shape)), dtype=f"<u{lay.dtype.itemsize}")
    try:
        decode_rows(buf[:-4], local, words)
    except ValueError as exc:
        raise ValueError(f"{lay.key((b, j))}: {exc}") from None
    return words.view(lay.dtype.newbyteorder("<")).reshape(shape)
