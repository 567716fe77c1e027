"""The ``mgapsp.planes`` chunk format: lossless on every word, read by Zarr and xarray
through the entry point alone, and encoded on the GPU into the very bytes the CPU
encoder makes.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numcodecs import Blosc

import mgapsp
from mgapsp.store import COMPRESSIONS, planes

from conftest import DATA
from helpers import scipy_distances

DTYPES = ("float32", "float64", "int32", "int64", "uint32")


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    u = f"u{a.dtype.itemsize}"
    return a.shape == b.shape and np.array_equal(a.view(u), b.view(u))


def _roundtrip(x: np.ndarray) -> np.ndarray:
    return planes.decode(planes.encode(x)).view(x.dtype).reshape(x.shape)


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(st.sampled_from(DTYPES),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=200)))
def test_every_word_comes_back(x):
    """Any bits at all (NaN payloads, -0.0, the special words, wrapping differences)."""
    assert _same_bits(_roundtrip(x), x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (63,), (64,), (65,), (3, 64), (5, 70), (64, 1),
                                   (2, 63), (130, 129)])
def test_rows_and_blocks_of_every_shape(dtype, shape):
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    x = np.cumsum(rng.integers(-3, 9, shape), axis=-1).astype(dtype)
    flat = x.reshape(-1)
    flat.view(f"u{x.itemsize}")[::5] = planes.special_word(x.dtype)
    assert _same_bits(_roundtrip(x), x)
    # the same words shifted far apart: every residual as wide as a word
    y = x.view(f"u{x.itemsize}") ^ rng.integers(0, 2, shape).astype(f"u{x.itemsize}") << (
        8 * x.itemsize - 1)
    assert _same_bits(_roundtrip(y), y)


def _modes(frame, nb):
    return (frame[32:32 + 2 * nb].view("<u2") >> 13) & 7


def test_each_mode_is_used_and_the_smallest_chosen():
    rng = np.random.default_rng(3)
    smooth = np.cumsum(rng.integers(0, 20, (64, 256)), axis=0).astype(np.float32)
    frame = planes.encode(smooth)
    nb = smooth.size // 64
    modes = _modes(frame, nb)
    assert modes[0] < 2 and (modes[4:] == 2).mean() > 0.9     # the first row has no row above
    sparse = np.full((4, 256), np.inf, dtype=np.float32)
    sparse[:, ::9] = rng.integers(1, 50, sparse[:, ::9].shape)
    frame = planes.encode(sparse)
    assert (_modes(frame, 16) == 1).any()
    assert len(frame) < sparse.nbytes / 3


@pytest.mark.parametrize("period", [3, 5, 6, 9, 16])
def test_the_nearest_row_of_the_fewest_bytes_is_the_reference(period):
    """Rows that repeat every ``period`` rows (sorted sources, where the nearest source
    is not the one just above): blocks refer to the row ``period`` above, mode
    ``period + 1`` up to 5 rows, mode 7 with the distance in the payload beyond."""
    rng = np.random.default_rng(period)
    base = rng.integers(0, 1 << 20, (period, 128)).astype(np.uint32)
    x = np.tile(base, (4, 1)) + rng.integers(0, 2, (4 * period, 128)).astype(np.uint32)
    frame = planes.encode(x)
    modes = _modes(frame, x.size // 64)
    later = modes[2 * period:]           # blocks with the whole period above them
    assert (later == (period + 1 if period <= 5 else 7)).all()
    assert _same_bits(planes.decode(frame).view(x.dtype).reshape(x.shape), x)
    # two planes a later block (differences -1, 0, 1), and for far rows their distance
    nb = x.size // 64
    far = 0 if period <= 5 else 4
    assert len(frame) <= 32 + 2 * nb + 2 * period * (4 + 8 * 21) + len(later) * (16 + far)
    if period > 5:
        # a frame that claims a row further up than the chunk has is refused
        bad = frame.copy()
        desc_end = 32 + -(-2 * nb // 4) * 4
        first_far = int(np.flatnonzero(modes == 7)[0])
        # the first far block's payload starts where the blocks before it end
        pos = desc_end + sum(_payload(frame, desc_end, nb)[:first_far])
        assert int(bad[pos:pos + 4].view("<u4")[0]) == period
        bad[pos:pos + 4] = np.array([1000], dtype="<u4").view(np.uint8)
        with pytest.raises(ValueError, match="damaged"):
            planes.decode(bad)


def _payload(frame, desc_end, nb):
    """Each block's payload bytes, from its descriptor (and a far row's distance)."""
    itemsize = int(frame[5])
    out = []
    for d in frame[32:32 + 2 * nb].view("<u2").astype(int):
        w, mode = d & 127, (d >> 13) & 7
        out.append(8 * w + (itemsize if mode < 2 else 0) + (8 if mode == 1 else 0)
                   + (4 if mode == 7 else 0))
    return out


def test_version_1_frames_still_read():
    """Version 1 had the modes 0-2 alone, with the same meaning."""
    x = np.cumsum(np.random.default_rng(2).integers(0, 9, (8, 256)), axis=0).astype(
        np.float32)
    frame = planes.encode(x)
    assert frame[4] == 2 and _modes(frame, x.size // 64).max() <= 2
    frame[4] = 1
    assert _same_bits(planes.decode(frame).view(x.dtype).reshape(x.shape), x)
    frame[4] = 3
    with pytest.raises(ValueError, match="version 1 or 2"):
        planes.decode(frame)


def test_a_damaged_frame_is_refused():
    frame = planes.encode(np.arange(1000, dtype=np.float32))
    with pytest.raises(ValueError, match="damaged"):
        planes.decode(frame[:-8])
    bad = frame.copy()
    bad[:4] = 0
    with pytest.raises(ValueError, match="not a mgapsp.planes frame"):
        planes.decode(bad)
    with pytest.raises(ValueError, match="4- or 8-byte"):
        planes.encode(np.arange(10, dtype=np.int16))


def test_road_rows_compress_better_than_lz4():
    """What the format is for: rows of a road network's distances, consecutive sources."""
    g = mgapsp.read_graph(DATA / "rome99.gr")
    rows = scipy_distances(g, np.arange(256)).astype(np.float32)
    lz4 = len(Blosc(cname="lz4", clevel=5, shuffle=Blosc.BITSHUFFLE).encode(rows))
    assert len(planes.encode(rows)) < lz4


_READ = """
import sys, numpy as np, zarr, xarray as xr
a = zarr.open_array(sys.argv[1], mode="r")
ds = xr.open_zarr(sys.argv[1].rsplit("/", 1)[0], consolidated=False)
np.save(sys.argv[2], a[:])
print(type(a.metadata.codecs[1]).__name__, ds["d"].shape)
"""


@pytest.mark.slow
def test_zarr_and_xarray_read_it_through_the_entry_point(tmp_path):
    """A process that never imports mgapsp reads the chunks: Zarr loads the codec from
    the ``zarr.codecs`` entry point."""
    x = np.cumsum(np.random.default_rng(1).random((100, 300)), axis=1).astype(np.float32)
    group = zarr.open_group(tmp_path / "g.zarr", mode="w")
    arr = group.create_array("d", shape=x.shape, chunks=(64, 128), dtype="float32",
                             compressors=[COMPRESSIONS["planes"]], fill_value=np.nan,
                             dimension_names=("source", "target"))
    arr[:] = x
    out = tmp_path / "x.npy"
    proc = subprocess.run([sys.executable, "-c", _READ, str(tmp_path / "g.zarr" / "d"),
                           str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "PlanesCodec"
    assert _same_bits(np.load(out), x)


def test_a_row_across_many_chunks_decodes_them_in_threads(tmp_path, monkeypatch):
    """Zarr's event loop hands each chunk to a thread (as its own codecs do), so that
    one row, which crosses every chunk of its batch, decodes on every core."""
    import threading

    x = np.cumsum(np.random.default_rng(2).random((16, 1024)), axis=1).astype(np.float32)
    arr = zarr.open_group(tmp_path / "g.zarr", mode="w").create_array(
        "d", shape=x.shape, chunks=(16, 64), dtype="float32", fill_value=np.nan,
        compressors=[COMPRESSIONS["planes"]])
    arr[:] = x
    seen, decode = set(), planes.PlanesCodec._decode_sync

    def spy(self, chunk_bytes, chunk_spec):
        seen.add(threading.get_ident())
        return decode(self, chunk_bytes, chunk_spec)

    monkeypatch.setattr(planes.PlanesCodec, "_decode_sync", spy)
    assert _same_bits(zarr.open_array(tmp_path / "g.zarr" / "d", mode="r")[5, :], x[5])
    from zarr.core.sync import iothread

    assert seen and iothread[0].ident not in seen      # not on Zarr's event loop


# -- on the GPU: the same bytes --------------------------------------------------------
def _host_frames(block: np.ndarray, chunk_rows: int, chunk_cols: int, fill) -> list:
    rows, n = block.shape
    out = []
    for j in range(-(-n // chunk_cols)):
        tile = np.full((chunk_rows, chunk_cols), fill, dtype=block.dtype)
        part = block[:, j * chunk_cols:(j + 1) * chunk_cols]
        tile[:rows, :part.shape[1]] = part
        out.append(planes.encode(tile).tobytes())
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("rows,chunk_rows,n,chunk_cols", [
    (64, 64, 1000, 256), (50, 64, 1000, 256), (3, 8, 130, 64), (64, 64, 129, 32),
    (128, 128, 4096, 4096)])
def test_gpu_frames_are_the_cpu_encoders_bytes(dtype, rows, chunk_rows, n, chunk_cols):
    import cupy

    from mgapsp.cuda import planes as gpu_planes

    rng = np.random.default_rng(rows + n)
    block = np.cumsum(rng.integers(-2, 40, (rows, n)), axis=0).astype(dtype)
    block[rng.random(block.shape) < 0.2] = np.inf if block.dtype.kind == "f" else -1
    fill = np.nan if block.dtype.kind == "f" else -1
    special = planes.special_word(block.dtype)
    want = _host_frames(block, chunk_rows, chunk_cols, fill)
    count = len(want)
    for first in (0, count // 2):
        frames, starts = gpu_planes.encode_chunks(cupy.asarray(block), chunk_rows,
                                                  chunk_cols, first, count - first, fill,
                                                  special)
        got = frames.get()
        for k in range(count - first):
            assert got[starts[k]:starts[k + 1]].tobytes() == want[first + k]


@pytest.mark.gpu
def test_gpu_frames_of_distance_rows_decode_to_them():
    import cupy

    from mgapsp.cuda import planes as gpu_planes

    g = mgapsp.read_graph(DATA / "p2p-Gnutella31.txt")
    rows = scipy_distances(g, np.arange(128)).astype(np.float32)
    frames, starts = gpu_planes.encode_chunks(cupy.asarray(rows), 128, 8192, 0,
                                              -(-rows.shape[1] // 8192), np.nan,
                                              planes.special_word(np.float32))
    got = frames.get()
    for k in range(len(starts) - 1):
        tile = planes.decode(got[starts[k]:starts[k + 1]]).view(np.float32)
        part = rows[:, k * 8192:(k + 1) * 8192]
        assert _same_bits(tile.reshape(128, 8192)[:, :part.shape[1]],
                          np.ascontiguousarray(part))


@pytest.mark.slow
@pytest.mark.parametrize("shards", [True, False])
def test_a_job_stores_planes_chunks_that_verify_and_read_by_label(tmp_path, shards):
    """A job writing planes on the host (the CPU backend's writer), sharded or a file
    per chunk: verified against SciPy, read back by label through xarray."""
    from mgapsp.store.verify import verify_store

    out = tmp_path / "p.zarr"
    mgapsp.apsp(DATA / "rome99.gr", out=out, sources=list(range(1, 300)), backend="cpu",
                compression="planes", shards=shards, batch_size=64)
    assert verify_store(out, all_rows=True).ok
    r = mgapsp.open(out)
    assert r.store.job["compression"] == "planes"
    ds = r.to_xarray()
    g = mgapsp.read_graph(DATA / "rome99.gr")
    want = scipy_distances(g, np.array([0, 4]))
    np.testing.assert_array_equal(ds["distances"].sel(source=[1, 5]).values, want)
