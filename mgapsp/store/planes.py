"""``mgapsp.planes``: the chunk format a GPU writes as fast as it computes rows.

A Zarr v3 bytes-to-bytes codec, registered through Zarr's ``zarr.codecs`` entry point,
so that ``zarr.open`` and ``xarray.open_zarr`` read such a store wherever mgapsp is
installed, with or without a GPU (the CPU encoder and decoder here are compiled with
Numba; ``kernels/planes.cu`` encodes the same bytes on the GPU).

Why a format of our own.  Distance rows are smooth: a vertex's distance differs little
from its distance in the row of a nearby source (the triangle inequality bounds it by
the two sources' distance), and integer weights leave float words with long runs of trailing
zero bits.  Blosc's bit-shuffle + LZ4 finds that structure through a byte matcher
that a GPU runs at 3-15 GB/s; here each group of 64 words says it outright, so
encoding is a few reads and a write per word (bench/NOTES.md has the ratios and speeds).

The frame of a chunk of ``N`` words of ``W`` bytes (4 or 8: the chunk's little-endian
bytes read as unsigned words), whose rows hold ``C`` words (the chunk's last
dimension), little-endian throughout:

- header, 32 bytes: ``b"MGPL"``, format version 2 (a byte), ``W`` (a byte), two zero
  bytes, ``N`` (uint64), ``C`` (uint64), the special word (uint64: the bits of
  ``+inf`` for floats, all ones for integers);
- a uint16 descriptor for each block of 64 words (``ceil(N / 64)`` blocks; the last
  may be short), zero-padded to a multiple of 4 bytes: the width ``w`` in bits 0-6,
  the shift ``s`` in bits 7-12, the mode in bits 13-15;
- each block's payload, in order:

  - mode 0, *offset*: the block's smallest word ``base`` (``W`` bytes), then ``w``
    planes (8 bytes each); word ``i`` is ``base + (r_i << s)``;
  - mode 1, *offset except special*: a mask (8 bytes; bit ``i`` set: word ``i`` is the
    special word), ``base``, ``w`` planes; the other words as in mode 0;
  - modes 2-7, *rows above*: mode 7 only, the distance ``k`` in rows (uint32), then
    ``w`` planes (modes 2-6 stand for ``k`` = 1-5); word ``i`` (overall index ``j``)
    is word ``j - k C`` plus ``unzigzag(r_i) << s``, a ``W``-byte two's-complement
    difference; used only where ``C >= 64`` and the block starts at ``k C`` or later.

  Plane ``k`` holds bit ``k`` of every residual ``r_i`` in bit ``i``.  All arithmetic
  wraps at ``W`` bytes.  The encoders try, per block, offset, offset except special,
  then the rows 1 to 16 above, nearest first, and keep the first of fewest bytes;
  ``s`` is the residuals' common trailing zero bits.

Version 1 (no mode above 2) reads as version 2.  Why 16 rows: a job's sources are
sorted, not adjacent, and a row's best reference is the nearest source among those
above it, not always the one just above (bench/NOTES.md, issue 50).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from zarr.abc.codec import BytesBytesCodec
from zarr.core.common import JSON, parse_named_configuration
from zarr.registry import register_codec

from ..jit import compiled

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer

__all__ = ["NAME", "PlanesCodec", "encode", "decode", "decode_rows", "bound",
           "special_word", "WORD_SIZES"]

NAME = "mgapsp.planes"
#: bytes of the words the format holds
WORD_SIZES = (4, 8)
_HEADER = 32


def _kernels():
    return compiled("mgapsp.store.planes_kernels")


def special_word(dtype) -> int:
    """The word that mode 1 sets aside: ``+inf`` of a float dtype (unreachable), all
    ones (``-1``, no predecessor) of an integer one."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return int(np.array(np.inf, dtype=dtype).view(f"<u{dtype.itemsize}")[()])
    return (1 << (8 * dtype.itemsize)) - 1


def bound(n: int, itemsize: int) -> int:
    """The most bytes a frame of ``n`` words of ``itemsize`` bytes takes."""
    nb = -(-n // 64)
    return _HEADER + -(-2 * nb // 4) * 4 + nb * (8 + itemsize + 8 * 8 * itemsize)


def encode(chunk: np.ndarray) -> np.ndarray:
    """The frame of ``chunk`` (any shape, 4- or 8-byte elements; its rows are its last
    axis), as a uint8 array."""
    chunk = np.ascontiguousarray(chunk)
    dtype = chunk.dtype
    if dtype.itemsize not in WORD_SIZES:
        raise ValueError(f"{NAME} holds 4- or 8-byte elements, not {dtype}")
    row = chunk.shape[-1] if chunk.ndim else 1
    return encode_bytes(chunk.reshape(-1).view(np.uint8), dtype.itemsize, row,
                        special_word(dtype))


def encode_bytes(raw: np.ndarray, itemsize: int, row: int, special: int) -> np.ndarray:
    """The frame of the little-endian words in ``raw`` (uint8), rows of ``row`` words."""
    if len(raw) % itemsize:
        raise ValueError(f"{len(raw)} bytes are not whole words of {itemsize}")
    words = raw.view(f"<u{itemsize}")
    out = np.empty(bound(len(words), itemsize), dtype=np.uint8)
    size = _kernels().encode_words(words, int(row), 8 * itemsize, np.uint64(special), out)
    return out[:size]


def _frame(frame) -> tuple[np.ndarray, int, int]:
    """``frame`` as contiguous bytes, with its words' size and count; ValueError for a
    frame that is not one."""
    frame = np.frombuffer(frame, dtype=np.uint8) if not isinstance(frame, np.ndarray) \
        else frame.reshape(-1).view(np.uint8)
    if len(frame) < _HEADER or bytes(frame[:4]) != b"MGPL" or frame[4] not in (1, 2) \
            or int(frame[5]) not in WORD_SIZES:
        raise ValueError(f"not a {NAME} frame (version 1 or 2)")
    return np.ascontiguousarray(frame), int(frame[5]), int(frame[8:16].view("<u8")[0])


def decode(frame, out: np.ndarray | None = None) -> np.ndarray:
    """The little-endian bytes ``frame`` holds (a uint8 array), into ``out`` where
    given (its bytes).  Raises ValueError for a frame that is not one."""
    frame, itemsize, n = _frame(frame)
    if out is None:
        raw = np.empty(n * itemsize, dtype=np.uint8)
    else:
        raw = out.reshape(-1).view(np.uint8)
        if raw.nbytes != n * itemsize:
            raise ValueError(f"a frame of {n * itemsize} bytes for {raw.nbytes}")
    if _kernels().decode_words(frame, raw.view(f"<u{itemsize}")) < 0:
        raise ValueError(f"a damaged {NAME} frame: shorter than its descriptors say")
    return raw if out is None else out


def decode_rows(frame, rows, out: np.ndarray) -> np.ndarray:
    """The rows ``rows`` (ascending positions) of the chunk ``frame`` holds, decoded
    into ``out`` (unsigned words, the chunk's every one; the other rows' words are left
    as they were, save those the wanted rows are computed from).  Raises ValueError for
    a frame that is not one, or not of ``out``'s count and size of words."""
    frame, itemsize, n = _frame(frame)
    if (itemsize, n) != (out.itemsize, out.size):
        raise ValueError(f"not a {NAME} frame of {out.size} words of {out.itemsize} bytes")
    if _kernels().decode_rows(frame, out.reshape(-1), np.asarray(rows, np.int64)) < 0:
        raise ValueError(f"a damaged {NAME} frame: shorter than its descriptors say")
    return out


@dataclass(frozen=True)
class PlanesCodec(BytesBytesCodec):
    """Zarr v3 codec ``mgapsp.planes`` (see the module): 4- and 8-byte elements, after
    the ``bytes`` codec (little-endian)."""

    is_fixed_size = False

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        parse_named_configuration(data, NAME, require_configuration=False)
        return cls()

    def to_dict(self) -> dict[str, JSON]:
        return {"name": NAME}

    def validate(self, *, shape, dtype, chunk_grid) -> None:
        size = np.dtype(dtype.to_native_dtype()).itemsize
        if size not in WORD_SIZES:
            raise ValueError(f"{NAME} holds 4- or 8-byte elements, not {dtype}")

    def _encode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        dtype = np.dtype(chunk_spec.dtype.to_native_dtype())
        row = chunk_spec.shape[-1] if chunk_spec.shape else 1
        frame = encode_bytes(chunk_bytes.as_numpy_array().view(np.uint8), dtype.itemsize,
                             row, special_word(dtype))
        return chunk_spec.prototype.buffer.from_array_like(frame)

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        raw = decode(chunk_bytes.as_numpy_array())
        return chunk_spec.prototype.buffer.from_array_like(raw)

    # in threads, as Zarr's own codecs: the compiled coders release the interpreter's
    # lock, so the chunks of one read (a row crosses every chunk of its batch) decode
    # on every core, not one after another on the event loop's thread
    async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, _input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        raise NotImplementedError


# a program that runs mgapsp from its source tree (no entry point installed) reads
# such stores too
register_codec(NAME, PlanesCodec)
