"""Device blocks into host arrays through pinned buffers (mgapsp.cuda.host_copy), and the
in-process paths built on it: ``apsp()`` without a store, the SciPy drop-ins, and the
CLI's one-process cluster on one GPU (CUDA device only)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.sparse import csgraph

import mgapsp
from mgapsp.cuda import host_copy
from mgapsp.graph import Graph

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape", [(1, 1), (3, 1001), (257, 4099),
                                   (2, host_copy.PIECE_BYTES // 4 + 12_345)])
def test_blocks_arrive_whole_and_in_place(cupy, dtype, shape):
    """Blocks of every size (one element, ragged pages, more than a piece, several
    pieces per buffer ring) land exactly where they belong, rows of one array filled
    by several puts."""
    rng = np.random.default_rng(0)
    full = rng.integers(-10**6, 10**6, (2 * shape[0], shape[1])).astype(dtype)
    out = np.full_like(full, 7)
    with host_copy.HostCopier(out) as copier:
        for lo in (0, shape[0]):
            block = cupy.asarray(full[lo:lo + shape[0]])
            copier.put(block, out[lo:lo + shape[0]])
            del block                    # the copier holds it until it has landed
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.empty(full.nbytes, dtype=np.uint8).fill(255)   # reuse its memory
    np.testing.assert_array_equal(out, full)


def test_a_block_computed_on_the_current_stream_is_copied_after_its_kernels(cupy):
    """The copy waits for what the caller's stream has queued: a block written by a
    long chain of kernels comes out final, never half made."""
    out = np.zeros((64, 1 << 16), dtype=np.float32)
    with cupy.cuda.Stream(non_blocking=True):
        block = cupy.zeros(out.shape, dtype=np.float32)
        with host_copy.HostCopier(out) as copier:
            for _ in range(200):
                block += 1
            copier.put(block, out)
    assert (out == 200).all()


def test_a_wrong_destination_is_refused(cupy):
    block = cupy.zeros((4, 5), dtype=np.float32)
    with host_copy.HostCopier() as copier:
        with pytest.raises(ValueError, match="cannot copy"):
            copier.put(block, np.empty((4, 5), dtype=np.float64))
        with pytest.raises(ValueError, match="C-contiguous"):
            copier.put(block, np.empty((5, 4), dtype=np.float32).T)


def test_in_process_apsp_matches_scipy_and_keeps_the_callers_stream(cupy, data_dir):
    """Several batches (each drained while the next computes), targets kept on the
    device, predecessors: all as SciPy says; and the caller's current stream is its
    own again afterwards."""
    g = mgapsp.read_graph(data_dir / "p2p-Gnutella08.txt")
    w = np.random.default_rng(3).integers(1, 9, g.m).astype(np.float64)
    g = Graph(g.indptr, g.indices, w, vertex_ids=g.labels)
    ref = csgraph.dijkstra(g.to_scipy())
    mine = cupy.cuda.Stream(non_blocking=True)
    with mine:
        got = mgapsp.apsp(g, backend="gpu", batch_size=1000)
        assert cupy.cuda.get_current_stream() == mine
    np.testing.assert_array_equal(got.astype(np.float64), ref)
    cols = g.labels[::7]
    part = mgapsp.apsp(g, backend="gpu", targets=cols, sources=g.labels[:1500],
                       batch_size=512)
    np.testing.assert_array_equal(part.astype(np.float64), ref[:1500, ::7])
    dist, pred = mgapsp.apsp(g, backend="gpu", sources=g.labels[:600], predecessors=True,
                             batch_size=256)
    np.testing.assert_array_equal(dist.astype(np.float64), ref[:600])
    # every predecessor closes a shortest path: d(p) + w(p, v) == d(v)
    csr = g.to_scipy().tocsr()
    s, v = np.nonzero(pred >= 0)
    p = pred[s, v]
    np.testing.assert_array_equal(ref[s, p] + np.asarray(csr[p, v]).ravel(), ref[s, v])


def test_dropin_rows_equal_scipys(cupy, data_dir):
    csr = mgapsp.read_graph(data_dir / "rome99.gr").to_scipy()
    np.testing.assert_array_equal(mgapsp.shortest_path(csr, method="D"),
                                  csgraph.shortest_path(csr, method="D"))
    np.testing.assert_array_equal(mgapsp.bellman_ford(csr, indices=[5, 0, 5]),
                                  csgraph.bellman_ford(csr, indices=[5, 0, 5]))


def test_cli_on_one_gpu_runs_in_one_process(cupy, data_dir, tmp_path):
    """On one visible GPU the CLI's embedded cluster is this process (an inproc
    worker), and the store it writes holds SciPy's distances."""
    out = tmp_path / "g.zarr"
    run = subprocess.run([sys.executable, "-m", "mgapsp", "run",
                          str(data_dir / "p2p-Gnutella08.txt"), "-o", str(out),
                          "--backend", "gpu", "--gpus", "0", "--no-dashboard"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    if cupy.cuda.runtime.getDeviceCount() == 1:
        assert "inproc://" in run.stdout
    g = mgapsp.read_graph(data_dir / "p2p-Gnutella08.txt")
    ref = csgraph.dijkstra(g.to_scipy())
    got = mgapsp.Result(out).group["distances"][:]
    np.testing.assert_array_equal(got.astype(np.float64), ref)
