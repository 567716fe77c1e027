"""The chunk writer: bytes identical to Zarr's own, any block shape, device blocks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import ZstdCodec

from mgapsp import config
from mgapsp.store import files as store_files
from mgapsp.store import writer
from mgapsp.store import COMPRESSIONS


def _chunk_files(path: Path) -> dict[str, bytes]:
    root = path / "c"
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _pair(tmp_path, name, shape, chunks, dtype, fill, compressors, shards=None):
    arrays = []
    for tag in ("ours", "zarrs"):
        arrays.append(zarr.create_array(tmp_path / f"{name}-{tag}.zarr", shape=shape,
                                        chunks=chunks, shards=shards, dtype=dtype,
                                        fill_value=fill, compressors=compressors))
    return arrays


def _block(rng, rows, n, dtype):
    if np.dtype(dtype).kind == "f":
        b = rng.integers(0, 50, size=(rows, n)).astype(dtype)
        b[rng.random((rows, n)) < 0.1] = np.inf
        return b
    return rng.integers(-1, 1000, size=(rows, n)).astype(dtype)


@pytest.mark.parametrize("compression", sorted(COMPRESSIONS))
@pytest.mark.parametrize("dtype,fill", [("float32", np.nan), ("float64", np.nan),
                                        ("int32", -1)])
def test_chunk_bytes_match_zarr(tmp_path, compression, dtype, fill):
    """Every chunk file equals the one Zarr writes for the same rows: ragged last
    column chunk, and a last row batch shorter than the chunk."""
    rng = np.random.default_rng(7)
    codec = COMPRESSIONS[compression]
    shape, chunks = (45, 203), (16, 64)
    ours, theirs = _pair(tmp_path, "a", shape, chunks, dtype, fill,
                         [codec] if codec else None)
    for start in range(0, shape[0], chunks[0]):
        stop = min(start + chunks[0], shape[0])
        block = _block(rng, stop - start, shape[1], dtype)
        stats = writer.write_block(ours, start, block)
        theirs[start:stop, :] = block
        assert stats["bytes"] > 0
    assert _chunk_files(tmp_path / "a-ours.zarr") == _chunk_files(tmp_path / "a-zarrs.zarr")
    np.testing.assert_array_equal(ours[:], theirs[:])
    assert len(_chunk_files(tmp_path / "a-ours.zarr")) == 3 * 4


@pytest.mark.parametrize("compression", sorted(COMPRESSIONS))
@pytest.mark.parametrize("dtype,fill", [("float32", np.nan), ("int32", -1)])
@pytest.mark.parametrize("per_shard", [4, 2])
def test_shard_bytes_match_zarr(tmp_path, compression, dtype, fill, per_shard):
    """Into a sharded array every shard file equals the one Zarr writes: the batch's
    row of chunks as one shard (4 chunks a row), or as two, the last with room for a
    chunk past the array's end; a last row batch shorter than the chunk."""
    rng = np.random.default_rng(11)
    codec = COMPRESSIONS[compression]
    shape, chunks = (45, 203), (16, 64)
    ours, theirs = _pair(tmp_path, "h", shape, chunks, dtype, fill,
                         [codec] if codec else None, shards=(16, 64 * per_shard))
    for start in range(0, shape[0], chunks[0]):
        stop = min(start + chunks[0], shape[0])
        block = _block(rng, stop - start, shape[1], dtype)
        stats = writer.write_block(ours, start, block)
        theirs[start:stop, :] = block
        np.testing.assert_array_equal(ours[start:stop, :], block)
        assert stats["bytes"] == sum(len(b) for k, b in _chunk_files(
            tmp_path / "h-ours.zarr").items() if k.startswith(f"c/{start // 16}/"))
    files = _chunk_files(tmp_path / "h-ours.zarr")
    assert files == _chunk_files(tmp_path / "h-zarrs.zarr")
    assert len(files) == 3 * (4 // per_shard)
    np.testing.assert_array_equal(ours[:], theirs[:])


def test_shards_in_a_store_that_is_not_local(tmp_path):
    """A sharded array in a memory store gets its shards through the store."""
    arr = zarr.create_array(zarr.storage.MemoryStore(), shape=(20, 150), chunks=(8, 40),
                            shards=(8, 80), dtype="float32", fill_value=np.nan,
                            compressors=[COMPRESSIONS["lz4"]])
    block = _block(np.random.default_rng(4), 20, 150, "float32")
    for start in range(0, 20, 8):
        writer.write_block(arr, start, block[start:start + 8])
    np.testing.assert_array_equal(arr[:], block)


@pytest.mark.parametrize("failing", ["compress", "write", "rename"])
def test_a_failed_shard_leaves_nothing(tmp_path, monkeypatch, failing):
    """A chunk that fails to compress, a file write that fails once two shards are
    open, or a shard that fails to be renamed into place, fails the batch's write: no
    shard is put in place and no partial file stays behind; the next attempt writes the
    batch whole."""
    arr = zarr.create_array(tmp_path / "f.zarr", shape=(16, 300), chunks=(16, 64),
                            shards=(16, 128), dtype="float32", fill_value=np.nan,
                            compressors=[COMPRESSIONS["lz4"]])
    block = _block(np.random.default_rng(6), 16, 300, "float32")
    where, name, nth = {"compress": (writer, "_host_tile", 4), "write": (store_files, "pwrite", 4),
                        "rename": (os, "replace", 1)}[failing]
    real, calls = getattr(where, name), []

    def fail_nth(*args):
        calls.append(args)
        if len(calls) == nth:
            raise OSError("disk gone")
        return real(*args)

    monkeypatch.setattr(where, name, fail_nth)
    with pytest.raises(OSError, match="disk gone"):
        writer.write_block(arr, 0, block)
    assert len(calls) >= nth
    assert [p for p in (tmp_path / "f.zarr").rglob("*") if p.is_file()] == [
        tmp_path / "f.zarr" / "zarr.json"]
    monkeypatch.setattr(where, name, real)
    writer.write_block(arr, 0, block)
    np.testing.assert_array_equal(arr[:], block)
    assert sorted(_chunk_files(tmp_path / "f.zarr")) == ["c/0/0", "c/0/1", "c/0/2"]


def test_other_codecs_fall_back_to_zarr(tmp_path):
    """A codec chain the writer does not reproduce goes through Zarr itself."""
    arr = zarr.create_array(tmp_path / "z.zarr", shape=(8, 100), chunks=(8, 30),
                            dtype="float32", fill_value=np.nan,
                            compressors=[ZstdCodec(level=1)])
    block = _block(np.random.default_rng(1), 8, 100, "float32")
    writer.write_block(arr, 0, block)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "z.zarr")[:], block)


@pytest.mark.parametrize("compressors", [None, [COMPRESSIONS["lz4"]], [ZstdCodec(level=1)]])
def test_single_chunks_match_zarr(tmp_path, compressors):
    """write_chunk: the file Zarr writes for the same chunk (an edge chunk included);
    a codec the writer does not reproduce goes through Zarr."""
    ours, theirs = _pair(tmp_path, "s", (7, 5), (3, 5), "uint8", 0, compressors)
    rng = np.random.default_rng(3)
    for i in range(3):
        chunk = rng.integers(1, 9, size=(3, 5)).astype("uint8")
        writer.write_chunk(ours, (i, 0), chunk)
        theirs[3 * i:min(3 * i + 3, 7), :] = chunk[:min(3, 7 - 3 * i)]
    np.testing.assert_array_equal(ours[:], theirs[:])
    assert _chunk_files(tmp_path / "s-ours.zarr") == _chunk_files(tmp_path / "s-zarrs.zarr")
    with pytest.raises(ValueError, match="shape"):
        writer.write_chunk(ours, (0, 0), np.ones((2, 5), "uint8"))


def test_block_must_be_whole_chunks(tmp_path):
    arr = zarr.create_array(tmp_path / "w.zarr", shape=(40, 10), chunks=(16, 10),
                            dtype="float32", fill_value=np.nan)
    with pytest.raises(ValueError, match="not whole chunks of 16 rows"):
        writer.write_block(arr, 8, np.zeros((8, 10), np.float32))
    with pytest.raises(ValueError, match="not whole chunks"):
        writer.write_block(arr, 16, np.zeros((10, 10), np.float32))
    with pytest.raises(ValueError, match="a block of 9 columns"):
        writer.write_block(arr, 0, np.zeros((16, 9), np.float32))
    assert not (tmp_path / "w.zarr" / "c").exists()  # nothing half-written


def test_write_threads(monkeypatch):
    monkeypatch.setenv("MGAPSP_WRITE_THREADS", "3")
    assert writer.write_threads() == 3
    monkeypatch.setenv("MGAPSP_WRITE_THREADS", "zero")
    with pytest.raises(ValueError, match="MGAPSP_WRITE_THREADS must be"):
        writer.write_threads()
    monkeypatch.delenv("MGAPSP_WRITE_THREADS")
    assert 1 <= writer.write_threads() <= (os.cpu_count() or 1)
    assert writer.write_threads(gpu=False) == 1     # a CPU worker's cores compute


def test_store_threads(monkeypatch):
    monkeypatch.delenv("MGAPSP_STORE_THREADS", raising=False)
    monkeypatch.setenv("MGAPSP_WRITE_THREADS", "1")
    assert writer.store_threads() == 1          # never more than the write threads
    monkeypatch.setenv("MGAPSP_WRITE_THREADS", "64")
    assert writer.store_threads() == config.KNOBS["store.store-threads"].default
    monkeypatch.setenv("MGAPSP_STORE_THREADS", "5")
    assert writer.store_threads() == 5
    monkeypatch.setenv("MGAPSP_STORE_THREADS", "-1")
    with pytest.raises(ValueError, match="MGAPSP_STORE_THREADS must be"):
        writer.store_threads()


def test_idle_store_threads_are_the_hosts_share(monkeypatch):
    """While no kernel waits, a GPU worker stores with its share of the host's idle
    store threads: never fewer than its store threads, never more than its write
    threads."""
    monkeypatch.delenv("MGAPSP_STORE_THREADS", raising=False)
    monkeypatch.setenv("MGAPSP_WRITE_THREADS", "64")
    host = config.KNOBS["store.idle-store-threads"].default
    for gpus in (1, 2, 8):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(map(str, range(gpus))))
        assert writer.idle_store_threads() == max(host // gpus, writer.store_threads())
    monkeypatch.setenv("MGAPSP_WRITE_THREADS", "6")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert writer.idle_store_threads() == 6


def test_attributes_written_as_zarr_writes_them(tmp_path):
    """The direct update writes the very zarr.json that Zarr's own update writes, and
    the open group sees the new attributes; a store that is not local goes through
    Zarr."""
    first = {"progress": {"done": 0, "complete": False}, "name": "g"}
    update = {"progress": {"done": 3, "complete": True, "when": "now"}}
    ours = zarr.open_group(tmp_path / "a.zarr", mode="w-")
    theirs = zarr.open_group(tmp_path / "b.zarr", mode="w-")
    for g in (ours, theirs):
        g.create_array("x", shape=(4,), dtype="int8")
        g.attrs.update(first)
    writer.update_attributes(ours, update)
    theirs.attrs.update(update)
    assert ((tmp_path / "a.zarr" / "zarr.json").read_bytes()
            == (tmp_path / "b.zarr" / "zarr.json").read_bytes())
    assert dict(ours.attrs) == {**first, **update}
    assert dict(zarr.open_group(tmp_path / "a.zarr", mode="r").attrs) == {**first, **update}
    assert not list((tmp_path / "a.zarr").glob("*.partial"))
    memory = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    writer.update_attributes(memory, update)
    assert dict(memory.attrs) == update


@pytest.mark.gpu
@pytest.mark.parametrize("stage_bytes", [None, 3 * 16 * 64 * 4])
def test_device_blocks_match_host_blocks(tmp_path, monkeypatch, stage_bytes):
    """A CuPy block, cut into chunks on the device and staged through the pinned
    buffers (in groups of three chunks, reusing both buffers), writes the same files
    as the same block from the host (when the host compresses: test_gpu_blosc.py
    checks the frames the GPU makes)."""
    import cupy

    from mgapsp.cuda import staging

    monkeypatch.setenv("MGAPSP_GPU_COMPRESS", "0")
    if stage_bytes:
        monkeypatch.setattr(staging, "STAGE_BYTES", stage_bytes)
    rng = np.random.default_rng(3)
    shape, chunks = (45, 650), (16, 64)
    for dtype, fill in (("float32", np.nan), ("int32", -1)):
        dev, host = _pair(tmp_path, dtype, shape, chunks, dtype, fill,
                          [COMPRESSIONS["lz4"]])
        for start in range(0, shape[0], chunks[0]):
            stop = min(start + chunks[0], shape[0])
            block = _block(rng, stop - start, shape[1], dtype)
            stats = writer.write_block(dev, start, cupy.asarray(block), staging)
            writer.write_block(host, start, block)
            assert stats["copy_s"] > 0
        assert (_chunk_files(tmp_path / f"{dtype}-ours.zarr")
                == _chunk_files(tmp_path / f"{dtype}-zarrs.zarr"))
        np.testing.assert_array_equal(dev[:], host[:])


@pytest.mark.gpu
def test_wide_writes_store_the_same_shards(tmp_path, monkeypatch):
    """Frames made on the GPU and stored by the idle pool (``wide``: a job's last
    batches, a slab's rows) make the same shard files as through the store pool, in
    pieces across more threads."""
    import cupy

    from mgapsp.cuda import staging

    monkeypatch.setattr(store_files, "PIECE_BYTES", 4096)     # many pieces a span
    pools = []
    real = writer._pool
    monkeypatch.setattr(writer, "_pool", lambda kind, gpu: pools.append(kind) or real(kind, gpu))
    rng = np.random.default_rng(5)
    shape, chunks = (48, 4000), (16, 500)
    narrow, wide = _pair(tmp_path, "w", shape, chunks, "float32", np.nan,
                         [COMPRESSIONS["lz4"]], shards=(16, 4000))
    for start in range(0, shape[0], chunks[0]):
        block = cupy.asarray(_block(rng, chunks[0], shape[1], "float32"))
        writer.write_block(narrow, start, block, staging)
        writer.write_block(wide, start, block, staging, wide=True)
    assert pools == ["store", "idle"] * 3
    assert _chunk_files(tmp_path / "w-ours.zarr") == _chunk_files(tmp_path / "w-zarrs.zarr")
    np.testing.assert_array_equal(narrow[:], wide[:])


def test_local_store_files_written_whole(tmp_path):
    """Chunk files of a local store are written beside their place and renamed: none
    is left half-written, and a store replaced under the same path (--overwrite, with
    the writer's cached layout) gets its new chunk directories."""
    block = _block(np.random.default_rng(2), 16, 100, "float32")
    for attempt in range(2):
        arr = zarr.create_array(tmp_path / "s.zarr", shape=(16, 100), chunks=(16, 30),
                                dtype="float32", fill_value=np.nan, overwrite=True,
                                compressors=[COMPRESSIONS["lz4"]])
        assert not (tmp_path / "s.zarr" / "c").exists()
        writer.write_block(arr, 0, block + attempt)
        np.testing.assert_array_equal(zarr.open_array(tmp_path / "s.zarr")[:], block + attempt)
        names = [p.name for p in (tmp_path / "s.zarr").rglob("*")]
        assert not [nm for nm in names if nm.endswith(".partial")]
        assert len(list((tmp_path / "s.zarr" / "c").rglob("*"))) == 1 + 4
