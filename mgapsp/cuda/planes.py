"""Zarr chunks of a device block encoded on the GPU in the ``mgapsp.planes`` format.

``kernels/planes.cu`` holds the kernels, :mod:`mgapsp.store.planes` the format and its
CPU twin, which makes the same bytes.  :func:`encode_chunks` returns the frames of a
group of chunks back to back on the device, with their offsets; the writer
(:mod:`mgapsp.store.writer`) copies them to the host and stores each frame under its
chunk's key, as it does Blosc frames made on the device (:mod:`mgapsp.cuda.blosc`).
"""

from __future__ import annotations

import numpy as np

from .loader import cupy_module, get_kernel, grid_blocks, persistent_grid

__all__ = ["KERNEL_FILE", "KERNEL_NAMES", "TYPESIZES", "encode_chunks"]

KERNEL_FILE = "planes.cu"
KERNEL_NAMES = ("planes_size4", "planes_pack4", "planes_size8", "planes_pack8")
#: element sizes the kernels encode
TYPESIZES = (4, 8)
_LANES = 64
_HEADER = 32


def encode_chunks(block, chunk_rows: int, chunk_cols: int, first: int, count: int,
                  fill, special: int):
    """Encode chunks ``first .. first + count`` of the device ``block``'s row of chunks.

    ``block`` is a CuPy array ``(rows, n)`` of 4- or 8-byte elements, C-contiguous
    along its rows, ``rows <= chunk_rows``; chunk ``j`` is its columns
    ``[j chunk_cols, +chunk_cols)``, padded with ``fill`` past its last row or column
    as Zarr stores edge chunks.  ``special`` is the format's special word (the bits of
    ``+inf``, or all ones).  Returns ``(frames, starts)``: a CuPy uint8 array of the
    frames back to back and a NumPy int64 array of ``count + 1`` offsets into it.
    Waits for the device once, for the frames' sizes.
    """
    cupy = cupy_module()
    rows, n = block.shape
    ts = block.dtype.itemsize
    if ts not in TYPESIZES:
        raise ValueError(f"GPU planes frames take 4- or 8-byte elements, not {block.dtype}")
    if rows > chunk_rows or block.strides[1] != ts:
        raise ValueError("the block must be contiguous along its rows and at most one "
                         "chunk of rows")
    ld = block.strides[0] // ts if rows > 1 else n
    fill_bits = int(np.asarray(fill, dtype=block.dtype).reshape(1).view(
        np.uint32 if ts == 4 else np.uint64)[0])
    nb = -(-chunk_rows * chunk_cols // _LANES)
    args = (block, np.int32(rows), np.int64(ld), np.int32(n), np.int32(chunk_cols),
            np.int32(chunk_rows), np.int32(first), np.int32(count), np.uint64(fill_bits),
            np.uint64(special), np.int64(nb))
    desc = cupy.empty(count * nb, dtype=cupy.uint16)
    size = cupy.empty(count * nb, dtype=cupy.int32)
    rows_at = cupy.empty(count * nb, dtype=cupy.int32)
    fn = get_kernel(f"planes_size{ts}", KERNEL_FILE)
    grid = min(grid_blocks(count * nb * 32), persistent_grid(fn) * 8)
    fn((grid,), (256,), args + (desc, size, rows_at))
    sizes = size.reshape(count, nb).astype(cupy.int64)
    ends = cupy.cumsum(sizes, axis=1)
    head = _HEADER + -(-2 * nb // 4) * 4
    starts = cupy.zeros(count + 1, dtype=cupy.int64)
    starts[1:] = cupy.cumsum(head + ends[:, -1])
    pos = (starts[:-1, None] + head + ends - sizes).ravel()
    host_starts = starts.get()
    frames = cupy.empty(int(host_starts[-1]), dtype=cupy.uint8)
    fn = get_kernel(f"planes_pack{ts}", KERNEL_FILE)
    grid = min(grid_blocks(count * nb * 32), persistent_grid(fn) * 8)
    fn((grid,), (256,), args + (desc, rows_at, pos, starts, frames))
    return frames, host_starts
