"""Zarr chunks of a device block compressed on the GPU, as Blosc LZ4 bit-shuffle frames.

``kernels/blosc_lz4.cu`` describes the frame and the kernels.  The host side here
lays the frames out: Blosc's block size for the codec's level (:func:`blocksize`, as
Blosc's own encoder picks it, so the frames have the shape the host encoder gives),
the streams of a chunk (:class:`FrameLayout`), and, once the kernels have told the
compressed size of every stream, where each frame and stream goes in one output
buffer.  :func:`encode_chunks` returns that buffer on the device with the frames'
offsets; the writer (:mod:`mgapsp.store.writer`) copies it to the host and stores each
frame under its chunk's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .loader import grid_blocks, cupy_module, get_kernel, persistent_grid

__all__ = ["KERNEL_FILE", "KERNEL_NAMES", "FrameLayout", "blocksize", "frame_layout",
           "encode_chunks", "TYPESIZES"]

KERNEL_FILE = "blosc_lz4.cu"
KERNEL_NAMES = ("blosc_bitshuffle4", "blosc_bitshuffle8", "blosc_lz4", "blosc_lz4_sizes",
                "blosc_join")
#: element sizes the kernels shuffle (float32 / int32, float64 / int64)
TYPESIZES = (4, 8)
_LZ4_WARPS = 4                  # as LZ4_WARPS in the .cu file
_LZ4_REC = 5                    # as LZ4_REC: int32s of a segment's record
_L1 = 32 * 1024                 # Blosc's L1 size, the base of its block size
_MIN_BUFFERSIZE = 128           # Blosc splits a block only from this many elements
_MAX_SPLITS = 16
_FLAGS = 0x04 | (1 << 5)        # bit-shuffle, LZ4 (format code 1 in bits 5-7)
_VERSION, _LZ4_VERSION = 2, 1   # Blosc format version, LZ4 format version
_PAD = 16                       # bytes past a buffer's end the 4-byte loads may touch
#: the shortest match the LZ4 parse takes (``LZ4_ACCEPT_MATCH`` in the kernel, 4 to 8
#: bytes; the format's shortest is 4): with 8 the kernel ran 18-23% faster on
#: p2p-Gnutella31 and NY rows, their frames 2% larger and 5% smaller (blosc_lz4.cu)
ACCEPT_MATCH = 8
#: bytes of a stream one warp parses (``blosc_lz4`` in the kernel file: the segments of
#: a stream are parsed at once, then joined); a segment's hash table starts with every
#: PRIME_STRIDE-th position of the 64 KB before it (``LZ4_PRIME_STRIDE``; 0: empty)
#: and holds 2**HASH_LOG positions (``LZ4_HASH_LOG``).  Segments keep a stream's warps
#: from waiting on its longest part, for frames 2% larger (bench/NOTES.md).
SEGMENT_BYTES = 16 * 1024
PRIME_STRIDE = 8
HASH_LOG = 11


def _lz4_kernel(name: str):
    return get_kernel(name, KERNEL_FILE, (f"-DLZ4_ACCEPT_MATCH={int(ACCEPT_MATCH)}",
                                       f"-DLZ4_PRIME_STRIDE={int(PRIME_STRIDE)}",
                                       f"-DLZ4_HASH_LOG={int(HASH_LOG)}"))


def blocksize(nbytes: int, typesize: int, clevel: int) -> int:
    """Blosc 1.x's block size for LZ4 at ``clevel`` (its ``compute_blocksize``)."""
    if nbytes < typesize:
        return 1
    size = nbytes
    if nbytes >= _L1:
        size = _L1 * {0: 0.25, 1: 0.5, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 8, 8: 8,
                      9: 8}[int(clevel)]
        size = int(size)
    if clevel > 0 and typesize <= _MAX_SPLITS and size // typesize >= _MIN_BUFFERSIZE:
        # codecs that split (LZ4 among them) get larger blocks
        size = min(size, 1 << 18) * typesize
        size = min(max(size, 1 << 16), 1 << 20)
    size = min(size, nbytes)
    if size > typesize:
        size = size // typesize * typesize
    return size


@dataclass(frozen=True)
class FrameLayout:
    """The shape of one chunk's frame: blocks, and streams within them."""

    nbytes: int                 # the chunk's bytes
    typesize: int
    blocksize: int
    n_blocks: int
    offsets: np.ndarray         # each stream's first byte within the chunk (int64)
    lengths: np.ndarray         # each stream's bytes (int32)
    block_first: np.ndarray     # the index of each block's first stream (int64)

    @property
    def n_streams(self) -> int:
        return len(self.offsets)

    @property
    def head_bytes(self) -> int:
        """Header and block offsets, before the first stream."""
        return 16 + 4 * self.n_blocks


@lru_cache(maxsize=32)
def frame_layout(nbytes: int, typesize: int, clevel: int) -> FrameLayout:
    bs = blocksize(nbytes, typesize, clevel)
    full, left = divmod(nbytes, bs)
    offsets, lengths, block_first = [], [], []
    for b in range(full + (left > 0)):
        block_first.append(len(offsets))
        size = bs if b < full else left
        # whole blocks of enough elements are split into one stream per byte plane;
        # the leftover block is one stream (as Blosc's encoder and decoder agree)
        splits = (typesize if b < full and typesize <= _MAX_SPLITS
                  and bs // typesize >= _MIN_BUFFERSIZE else 1)
        part = size // splits
        offsets.extend(b * bs + s * part for s in range(splits))
        lengths.extend([part] * splits)
    return FrameLayout(nbytes=nbytes, typesize=typesize, blocksize=bs,
                       n_blocks=len(block_first),
                       offsets=np.asarray(offsets, dtype=np.int64),
                       lengths=np.asarray(lengths, dtype=np.int32),
                       block_first=np.asarray(block_first, dtype=np.int64))


def frame_offsets(layout: FrameLayout, sizes, xp=np):
    """Where everything goes, given each stream's stored size (``sizes``, shape
    ``(chunks, streams)``): ``(starts, at, headers)``.

    ``starts`` (chunks + 1) are the frames' offsets in the output, the last one its
    length; ``at`` (chunks x streams) is where each stream's int32 size goes, its
    bytes after it; ``headers`` (chunks x (4 + blocks), int32) are each frame's
    header and block offsets, to be stored at ``starts[:-1]``.  ``xp`` is NumPy or
    CuPy, whichever holds ``sizes``.
    """
    per = sizes.astype(xp.int64) + 4
    within = xp.cumsum(per, axis=1) - per + layout.head_bytes
    frame = layout.head_bytes + per.sum(axis=1)
    starts = xp.zeros(len(frame) + 1, dtype=xp.int64)
    starts[1:] = xp.cumsum(frame)
    at = starts[:-1, None] + within
    word0 = _VERSION | (_LZ4_VERSION << 8) | (_FLAGS << 16) | (layout.typesize << 24)
    headers = xp.empty((len(frame), 4 + layout.n_blocks), dtype=xp.int32)
    headers[:, 0] = np.int32(word0)
    headers[:, 1] = layout.nbytes
    headers[:, 2] = layout.blocksize
    headers[:, 3] = frame.astype(xp.int32)
    headers[:, 4:] = within[:, xp.asarray(layout.block_first)].astype(xp.int32)
    return starts, at, headers


def encode_chunks(block, chunk_rows: int, chunk_cols: int, first: int, count: int,
                  fill, clevel: int = 5):
    """Compress chunks ``first .. first + count`` of the device ``block``'s row of
    chunks into Blosc LZ4 bit-shuffle frames.

    ``block`` is a C-contiguous CuPy array ``(rows, n)`` of 4- or 8-byte elements,
    ``rows <= chunk_rows``; chunk ``j`` is its columns ``[j chunk_cols, +chunk_cols)``,
    padded with ``fill`` past its last row or column as Zarr stores edge chunks.
    Returns ``(frames, starts)``: a CuPy uint8 array holding the frames back to back
    and a NumPy int64 array of ``count + 1`` offsets into it (frame ``k`` is
    ``frames[starts[k]:starts[k + 1]]``).  Waits for the device once, for the sizes.
    """
    cupy = cupy_module()
    rows, n = block.shape
    ts = block.dtype.itemsize
    if ts not in TYPESIZES:
        raise ValueError(f"GPU Blosc frames take 4- or 8-byte elements, not {block.dtype}")
    if rows > chunk_rows or not block.flags.c_contiguous:
        raise ValueError("the block must be C-contiguous and at most one chunk of rows")
    layout = frame_layout(chunk_rows * chunk_cols * ts, ts, clevel)
    cb = layout.nbytes
    fill_bits = int(np.asarray(fill, dtype=block.dtype).reshape(1).view(
        np.uint32 if ts == 4 else np.uint64)[0])
    shuffled = cupy.empty(count * cb + _PAD, dtype=cupy.uint8)
    fn = _lz4_kernel(f"blosc_bitshuffle{ts}")
    groups = count * (-(-cb // (8 * ts)) + layout.n_blocks)
    fn((min(grid_blocks(groups), persistent_grid(fn) * 4),), (256,),
       (block, np.int32(rows), np.int64(n), np.int32(n), np.int32(chunk_cols),
        np.int32(first), np.int32(count), np.int64(cb), np.int32(layout.blocksize),
        np.uint64(fill_bits), shuffled))
    n_streams = count * layout.n_streams
    in_off = (cupy.arange(count, dtype=cupy.int64)[:, None] * cb
              + cupy.asarray(layout.offsets)[None, :]).ravel()
    lengths = cupy.tile(cupy.asarray(layout.lengths), count)
    packed = cupy.empty_like(shuffled)
    seg = max(64, int(SEGMENT_BYTES))
    n_seg = max(1, -(-int(layout.lengths.max()) // seg))
    records = cupy.empty(n_streams * n_seg * _LZ4_REC, dtype=cupy.int32)
    fn = _lz4_kernel("blosc_lz4")
    # a block of warps for each few segments, not a grid that strides: segments take
    # unequal times, and the device deals blocks to whichever multiprocessor frees
    fn((max(1, -(-n_streams * n_seg // _LZ4_WARPS)),), (32 * _LZ4_WARPS,),
       (shuffled, in_off, lengths, np.int32(seg), np.int32(n_seg), packed, records,
        np.int64(n_streams)))
    sizes = cupy.empty(n_streams, dtype=cupy.int32)
    fn = _lz4_kernel("blosc_lz4_sizes")
    fn((grid_blocks(n_streams),), (256,),
       (lengths, records, np.int32(n_seg), sizes, np.int64(n_streams)))
    starts, at, headers = frame_offsets(layout, sizes.reshape(count, layout.n_streams),
                                        xp=cupy)
    host_starts = starts.get()
    frames = cupy.empty(int(host_starts[-1]), dtype=cupy.uint8)
    head = headers.view(cupy.uint8).reshape(count, layout.head_bytes)
    frames[starts[:-1, None] + cupy.arange(layout.head_bytes)[None, :]] = head
    fn = _lz4_kernel("blosc_join")
    fn((min(grid_blocks(n_streams * 32), persistent_grid(fn) * 4),), (256,),
       (shuffled, packed, in_off, lengths, sizes, records, np.int32(seg), np.int32(n_seg),
        at.ravel(), frames, np.int64(n_streams)))
    return frames, host_starts
