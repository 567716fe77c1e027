"""Blosc LZ4 bit-shuffle frames made on the GPU (``mgapsp.blosc``).

The oracle is numcodecs' Blosc, the decoder Zarr itself uses: every frame the GPU
makes must decode to the chunk it was cut from.  The layout half (block size,
streams, offsets, headers) is checked on the CPU too, with stored (uncompressed)
streams and a bit-shuffle written here from Blosc's description.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from numcodecs import Blosc

from mgapsp.store import files as store_files
from mgapsp.store import writer
from mgapsp.cuda import blosc, staging
from mgapsp.store import COMPRESSIONS

from conftest import DATA
from helpers import scipy_distances
from test_writer import _block


def _bitshuffle(raw: np.ndarray, typesize: int) -> np.ndarray:
    """Blosc's bit-shuffle of one block: row 8 j + k holds bit k of byte j of every
    element (element 8 m + l in bit l of byte m); unshuffled unless 8 | elements."""
    elems = len(raw) // typesize
    if elems % 8:
        return raw.copy()
    bits = np.unpackbits(raw.reshape(elems // 8, 8, typesize), axis=-1, bitorder="little")
    bits = bits.reshape(elems // 8, 8, typesize, 8)            # m, l, j, k
    return np.packbits(bits.transpose(2, 3, 0, 1).reshape(-1), bitorder="little")


def _stored_frames(chunks: np.ndarray, clevel: int = 5):
    """Frames for ``chunks`` (count x elements) with every stream stored as it is,
    laid out by ``blosc.frame_offsets``: the host twin of the GPU path."""
    count = len(chunks)
    ts = chunks.dtype.itemsize
    lay = blosc.frame_layout(chunks[0].nbytes, ts, clevel)
    sizes = np.tile(lay.lengths, (count, 1))
    starts, at, headers = blosc.frame_offsets(lay, sizes)
    out = np.zeros(int(starts[-1]), dtype=np.uint8)
    for c in range(count):
        raw = chunks[c].view(np.uint8)
        head = headers[c].view(np.uint8)
        out[starts[c]:starts[c] + len(head)] = head
        shuffled = np.concatenate([
            _bitshuffle(raw[b * lay.blocksize:(b + 1) * lay.blocksize], ts)
            for b in range(lay.n_blocks)])
        for s in range(lay.n_streams):
            o, n = int(lay.offsets[s]), int(lay.lengths[s])
            out[at[c, s]:at[c, s] + 4] = np.array([n], "<i4").view(np.uint8)
            out[at[c, s] + 4:at[c, s] + 4 + n] = shuffled[o:o + n]
    return out, starts


# -- layout, on the CPU -------------------------------------------------------------------
@pytest.mark.parametrize("typesize", [4, 8])
@pytest.mark.parametrize("nbytes_elems", [1, 7, 100, 8000, 2**15 + 3, 131072, 2**21,
                                          3 * 2**18 + 40])
@pytest.mark.parametrize("clevel", [1, 5, 9])
def test_blocksize_matches_blosc(typesize, nbytes_elems, clevel):
    """Our block size is the one numcodecs' Blosc writes in its header."""
    data = np.arange(nbytes_elems, dtype=f"u{typesize}")
    frame = Blosc("lz4", clevel, Blosc.BITSHUFFLE).encode(data)
    theirs = int(np.frombuffer(frame[8:12], "<i4")[0])
    assert blosc.blocksize(data.nbytes, typesize, clevel) == theirs


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
@pytest.mark.parametrize("elems", [6, 1000, 8 * 1024 + 4, 2**17, 2**20 + 16, 3 * 2**17 + 8])
def test_frame_layout_decodes(dtype, elems):
    """Frames laid out by frame_layout / frame_offsets, streams stored, decode with
    numcodecs: whole blocks split into byte planes, leftover blocks, blocks whose
    element count is not a multiple of 8, several chunks back to back."""
    rng = np.random.default_rng(elems)
    chunks = rng.integers(0, 2**20, size=(3, elems)).astype(dtype)
    out, starts = _stored_frames(chunks)
    assert len(starts) == 4 and starts[0] == 0 and starts[-1] == len(out)
    for c in range(3):
        frame = out[starts[c]:starts[c + 1]].tobytes()
        assert frame[2] == 0x24 and int(np.frombuffer(frame[12:16], "<i4")[0]) == len(frame)
        got = np.frombuffer(Blosc().decode(frame), dtype=dtype)
        np.testing.assert_array_equal(got, chunks[c])


def test_only_lz4_bitshuffle_and_planes_arrays_take_the_gpu_path(tmp_path):
    from zarr.codecs import BloscCodec

    def gpu_codec(codec, dtype="float32"):
        arr = zarr.create_array(tmp_path / f"{len(list(tmp_path.iterdir()))}.zarr",
                                shape=(4, 4), chunks=(4, 4), dtype=dtype,
                                compressors=[codec] if codec else None)
        lay = store_files.ChunkLayout(arr)
        return lay.gpu_codec if writer._device_frames(lay, staging) else None

    assert gpu_codec(COMPRESSIONS["lz4"]) == ("blosc", 5)
    assert gpu_codec(COMPRESSIONS["lz4"], "float64") == ("blosc", 5)
    assert gpu_codec(COMPRESSIONS["lz4"], "int16") is None
    assert gpu_codec(COMPRESSIONS["zstd"]) is None
    assert gpu_codec(None) is None
    assert gpu_codec(BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")) is None
    assert gpu_codec(BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle",
                                blocksize=4096)) is None
    # planes: the special word is +inf of a float type, all ones of an integer one
    assert gpu_codec(COMPRESSIONS["planes"]) == ("planes", 0x7F800000)
    assert gpu_codec(COMPRESSIONS["planes"], "float64") == ("planes", 0x7FF0000000000000)
    assert gpu_codec(COMPRESSIONS["planes"], "int32") == ("planes", 0xFFFFFFFF)


# -- the kernels ------------------------------------------------------------------------
def _gnutella_rows(rows: int) -> np.ndarray:
    import mgapsp

    g = mgapsp.read_graph(DATA / "p2p-Gnutella31.txt")
    return scipy_distances(g, np.arange(rows)).astype(np.float32)


def _decode_all(frames, starts, shape, dtype):
    out = []
    for k in range(len(starts) - 1):
        frame = frames[starts[k]:starts[k + 1]].tobytes()
        out.append(np.frombuffer(Blosc().decode(frame), dtype=dtype).reshape(shape))
    return out


def _tiles(block: np.ndarray, chunk_rows: int, chunk_cols: int, fill) -> list[np.ndarray]:
    rows, n = block.shape
    tiles = []
    for j in range(-(-n // chunk_cols)):
        t = np.full((chunk_rows, chunk_cols), fill, dtype=block.dtype)
        part = block[:, j * chunk_cols:(j + 1) * chunk_cols]
        t[:rows, :part.shape[1]] = part
        tiles.append(t)
    return tiles


def grid_blocks():
    rng = np.random.default_rng(11)
    dist = rng.integers(1, 12, size=(37, 3001)).astype(np.float32)
    dist[:, rng.random(3001) < 0.2] = np.inf
    yield "distances", dist, 64, 512, np.nan
    noise = rng.integers(0, 2**32, size=(16, 70000), dtype=np.uint32).view(np.float32)
    yield "random bits", noise, 16, 2**16, np.nan
    yield "constant", np.full((64, 4096), 3.0, np.float32), 64, 4096, np.nan
    yield "float64", rng.integers(0, 9, size=(9, 5000)).astype(np.float64), 16, 1000, np.nan
    yield "int32 ragged", rng.integers(-1, 300, size=(5, 777)).astype(np.int32), 8, 100, -1
    yield "tiny", np.arange(21, dtype=np.float32).reshape(3, 7), 3, 7, np.nan
    yield "odd elements", rng.integers(0, 4, size=(7, 999)).astype(np.float32), 7, 333, np.nan


@pytest.mark.gpu
@pytest.mark.parametrize("segment", [64, 1000, None])
@pytest.mark.parametrize("accept", [4, 6, 8])
@pytest.mark.parametrize("case", list(grid_blocks()), ids=lambda c: c[0])
def test_gpu_frames_decode_to_the_chunks(case, accept, segment, monkeypatch):
    """Each frame decodes (numcodecs) to its chunk, padded with the fill value; the
    same block gives the same bytes twice; an incompressible stream is stored.  Each
    shortest match the parse may take (``blosc.ACCEPT_MATCH``), and streams parsed in
    segments of 64 and 1,000 bytes (many seams: a match ends at each, the literals
    run on across them) as well as the encoder's own."""
    import cupy

    monkeypatch.setattr(blosc, "ACCEPT_MATCH", accept)
    if segment:
        monkeypatch.setattr(blosc, "SEGMENT_BYTES", segment)
    name, block, cr, cc, fill = case
    n_chunks = -(-block.shape[1] // cc)
    frames, starts = blosc.encode_chunks(cupy.asarray(block), cr, cc, 0, n_chunks, fill)
    host = frames.get()
    want = _tiles(block, cr, cc, fill)
    got = _decode_all(host, starts, (cr, cc), block.dtype)
    assert len(got) == n_chunks
    uint = f"u{block.dtype.itemsize}"
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.view(uint), w.view(uint))
    again, starts2 = blosc.encode_chunks(cupy.asarray(block), cr, cc, 0, n_chunks, fill)
    assert np.array_equal(starts, starts2) and np.array_equal(again.get(), host)
    # a part of the row of chunks: chunks 1 .. of the same block
    if n_chunks > 1:
        part, pstarts = blosc.encode_chunks(cupy.asarray(block), cr, cc, 1, n_chunks - 1,
                                            fill)
        assert part.get().tobytes() == host[starts[1]:].tobytes()
    if name == "random bits":
        assert starts[-1] > 0.9 * block.nbytes     # stored, not grown
    if segment is None:     # (a segment of 64 bytes holds a sequence at least)
        if name == "random bits":
            assert starts[-1] < block.nbytes * 1.01
        if name == "constant":
            assert starts[-1] < block.nbytes / 100


@pytest.mark.gpu
def test_shortest_match_reaches_the_kernel(monkeypatch):
    """The parse's shortest match is compiled into the kernel: rows of p2p-Gnutella31
    give other frames with 4 than with 8, and both decode to the rows."""
    import cupy

    block = _gnutella_rows(64)
    cr, cc = 64, 8192
    n_chunks = -(-block.shape[1] // cc)
    made = {}
    for accept in (4, 8):
        monkeypatch.setattr(blosc, "ACCEPT_MATCH", accept)
        frames, starts = blosc.encode_chunks(cupy.asarray(block), cr, cc, 0, n_chunks,
                                             np.nan)
        made[accept] = frames.get()
        for g, w in zip(_decode_all(made[accept], starts, (cr, cc), np.float32),
                        _tiles(block, cr, cc, np.nan)):
            np.testing.assert_array_equal(g, w)
    assert made[4].tobytes() != made[8].tobytes()


@pytest.mark.gpu
def test_gpu_frames_compress_like_blosc():
    """On real distance rows (p2p-Gnutella31) the GPU's frames are at most 1.5 times
    the size of numcodecs' LZ4 bit-shuffle frames of the same chunks."""
    import cupy

    block = _gnutella_rows(128)
    cr, cc = 128, 8192
    frames, starts = blosc.encode_chunks(cupy.asarray(block), cr, cc, 0,
                                         -(-block.shape[1] // cc), np.nan)
    host = frames.get()
    theirs = sum(len(Blosc("lz4", 5, Blosc.BITSHUFFLE).encode(t))
                 for t in _tiles(block, cr, cc, np.nan))
    for g, w in zip(_decode_all(host, starts, (cr, cc), np.float32),
                    _tiles(block, cr, cc, np.nan)):
        np.testing.assert_array_equal(g, w)
    assert starts[-1] <= 1.5 * theirs, (starts[-1], theirs)
    assert block.nbytes / starts[-1] > 5


@pytest.mark.gpu
@pytest.mark.parametrize("per_shard", [None, 11, 4])
@pytest.mark.parametrize("dtype,fill", [("float32", np.nan), ("float64", np.nan),
                                        ("int32", -1)])
def test_device_blocks_compressed_on_the_gpu(tmp_path, monkeypatch, dtype, fill, per_shard):
    """write_block with a CuPy block stores GPU frames (groups of three chunks,
    reusing both pinned buffers) that Zarr reads back as the block; with
    MGAPSP_GPU_COMPRESS=0 the host compresses instead, byte for byte as Zarr.  Into
    shards of a whole row of chunks, or of four (a group then spans two shards), the
    storing threads write the frames in pieces of 1 KB."""
    import cupy

    from mgapsp.cuda import staging

    monkeypatch.setattr(staging, "FRAME_GROUP_BYTES", 3 * 16 * 64 * np.dtype(dtype).itemsize)
    monkeypatch.setattr(store_files, "PIECE_BYTES", 1024)
    shape, chunks = (45, 650), (16, 64)
    shards = (16, 64 * per_shard) if per_shard else None
    for mode in ("1", "0"):
        monkeypatch.setenv("MGAPSP_GPU_COMPRESS", mode)
        arr, host = (zarr.create_array(tmp_path / f"{dtype}-{mode}-{tag}.zarr", shape=shape,
                                       chunks=chunks, shards=shards, dtype=dtype,
                                       fill_value=fill, compressors=[COMPRESSIONS["lz4"]])
                     for tag in ("gpu", "host"))
        rng = np.random.default_rng(5)
        for start in range(0, shape[0], chunks[0]):
            stop = min(start + chunks[0], shape[0])
            block = _block(rng, stop - start, shape[1], dtype)
            stats = writer.write_block(arr, start, cupy.asarray(block), staging)
            host[start:stop, :] = block
            assert stats["bytes"] > 0
        np.testing.assert_array_equal(arr[:], host[:])
        ours, theirs = (tmp_path / f"{dtype}-{mode}-{tag}.zarr" for tag in ("gpu", "host"))
        files = sorted(f.relative_to(ours) for f in (ours / "c").rglob("*") if f.is_file())
        assert files == sorted(f.relative_to(theirs) for f in (theirs / "c").rglob("*")
                               if f.is_file())
        assert len(files) == 3 * (-(-11 // per_shard) if per_shard else 11)
        same = all((ours / f).read_bytes() == (theirs / f).read_bytes() for f in files)
        assert same == (mode == "0")
