"""Some rows of a store read by decoding only the blocks of its chunks that they need
(:mod:`mgapsp.store.rows`): the same values as Zarr's whole chunks, damage refused."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

import mgapsp
from mgapsp import StoreError
from mgapsp.store import planes
from mgapsp.store.files import ChunkLayout
from mgapsp.store.rows import read

from conftest import DATA


def _words(x):
    return x.view(f"u{x.itemsize}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("shape", [(40, 200), (33, 64), (20, 50), (7, 129), (1, 300)])
def test_the_rows_wanted_decode_as_the_whole_frame(dtype, shape):
    """Rows of every width: shorter than a block (no row above is ever a reference),
    blocks straddling rows, a frame of one row; references near and far."""
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    x = np.cumsum(rng.integers(0, 9, shape), axis=1).astype(dtype)
    x[3::5] = x[::5][:len(x[3::5])]         # rows repeating 3 rows above, some far
    _words(x).reshape(-1)[::11] = planes.special_word(x.dtype)
    frame = planes.encode(x)
    for wanted in ([0], [shape[0] - 1], sorted({min(1, shape[0] - 1), shape[0] // 2, shape[0] - 1})):
        out = np.zeros(x.size, dtype=f"u{x.itemsize}")
        planes.decode_rows(frame, wanted, out)
        got = out.reshape(shape)[wanted]
        assert np.array_equal(got, _words(x)[wanted])


def test_an_early_row_decodes_few_blocks():
    """Smooth rows, each block computed from the row above: the first rows need only
    their own blocks and those above them."""
    from mgapsp.jit import compiled

    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(0, 4, (256, 1024)), axis=0).astype(np.float32)
    frame = planes.encode(x)
    kernels = compiled("mgapsp.store.planes_kernels")
    blocks = x.size // 64
    out = np.zeros(x.size, dtype=np.uint32)
    early = kernels.decode_rows(frame, out, np.array([3], np.int64))
    late = kernels.decode_rows(frame, out, np.array([255], np.int64))
    assert early <= 4 * 1024 // 64 < late <= blocks


def test_a_frame_of_other_words_is_refused():
    frame = planes.encode(np.arange(128, dtype=np.float32).reshape(2, 64))
    with pytest.raises(ValueError, match="not a mgapsp.planes frame"):
        planes.decode_rows(frame, [0], np.zeros(128, dtype=np.uint64))
    with pytest.raises(ValueError, match="not a mgapsp.planes frame"):
        planes.decode_rows(frame, [0], np.zeros(64, dtype=np.uint32))
    with pytest.raises(ValueError, match="damaged"):
        planes.decode_rows(frame[:40], [0], np.zeros(128, dtype=np.uint32))


@pytest.fixture(scope="module", params=[True, False], ids=["shards", "chunk-files"])
def store(request, tmp_path_factory):
    """rome99 from 700 sources by a CPU job, planes chunks (narrow, so that rows cross
    several), sharded or a file per chunk."""
    out = tmp_path_factory.mktemp("rows") / "r.zarr"
    import dask

    with dask.config.set({"mgapsp.store.chunk-elements": 128 * 1024}):
        mgapsp.apsp(DATA / "rome99.gr", out=out, sources=list(range(1, 701)),
                    backend="cpu", compression="planes", shards=request.param,
                    batch_size=128, predecessors=True)
    return out


@pytest.mark.parametrize("name", ["distances", "predecessors"])
def test_rows_and_columns_in_any_order_are_zarrs(store, name):
    arr = zarr.open_group(store, mode="r")[name]
    lay = ChunkLayout(arr)
    assert lay.chunks[0] == 128 and arr.shape[1] > 2 * lay.chunks[1]
    rng = np.random.default_rng(1)
    for rows in ([0], [699], [5, 5, 300, 2, 640], rng.choice(700, 40)):
        for cols in (None, slice(700, 2900), rng.choice(arr.shape[1], 30)):
            want = arr.get_orthogonal_selection(
                (np.asarray(rows), slice(None) if cols is None else cols))
            assert np.array_equal(_words(read(arr, rows, cols)), _words(want))
    # every row of a batch: Zarr's own whole chunks
    out = np.empty((128, arr.shape[1]), dtype=arr.dtype)
    assert read(arr, slice(128, 256), out=out) is out
    assert np.array_equal(_words(out), _words(arr[128:256]))


def test_results_and_verify_read_the_same(store, monkeypatch):
    from mgapsp.store import rows as module
    from mgapsp.store.verify import verify_store

    decoded = []
    monkeypatch.setattr(module, "decode_rows", lambda frame, rows, out: decoded.append(
        len(rows)) or planes.decode_rows(frame, rows, out))
    r = mgapsp.open(store)
    g = mgapsp.read_graph(DATA / "rome99.gr")
    from helpers import scipy_distances

    want = scipy_distances(g, np.array([9, 0, 400]))
    np.testing.assert_array_equal(r.distances([10, 1, 401]), want)
    assert r.distance(10, 3000) == want[0, 2999]
    assert r.path(10, 10) == [10]
    assert decoded and max(decoded) <= 3         # a few rows of a chunk, not Zarr's all
    assert verify_store(store, samples=20).ok


def test_a_damaged_chunk_is_refused_not_read(tmp_path):
    """A byte flipped inside a chunk's frame: its checksum fails, and the read says
    so, as Zarr's whole-chunk read does."""
    out = tmp_path / "d.zarr"
    mgapsp.apsp(DATA / "rome99.gr", out=out, sources=list(range(1, 201)), backend="cpu",
                compression="planes", shards=False, batch_size=100)
    arr = zarr.open_group(out, mode="r")["distances"]
    lay = ChunkLayout(arr)
    path = out / lay.key((1, 0))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        read(arr, [150])
    assert np.array_equal(_words(read(arr, [50])), _words(arr[50:51]))
    with pytest.raises(StoreError, match="damaged"):
        mgapsp.open(out).distances([151])


def test_other_codecs_read_through_zarr(tmp_path):
    out = tmp_path / "l.zarr"
    mgapsp.apsp(DATA / "rome99.gr", out=out, sources=list(range(1, 101)), backend="cpu",
                compression="lz4", batch_size=50)
    arr = zarr.open_group(out, mode="r")["distances"]
    assert np.array_equal(read(arr, [7, 60], [0, 5]), arr.get_orthogonal_selection(
        (np.array([7, 60]), np.array([0, 5]))))
