"""``apsp(device=True)`` and CuPy inputs: the distances stay on the GPU as CuPy arrays,
equal to SciPy's; where no GPU answers, one line says why."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csgraph

import mgapsp
from mgapsp import MgapspError, UnsupportedError

from helpers import assert_distances_equal, assert_predecessors


def test_device_output_is_refused_without_a_gpu_backend(data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    with pytest.raises(UnsupportedError, match="device=True needs the gpu backend, not cpu"):
        mgapsp.apsp(graph, backend="cpu", device=True, sources=graph.labels[:3])
    with pytest.raises(MgapspError, match="goes without out= and client="):
        mgapsp.apsp(graph, out=tmp_path / "d.zarr", device=True)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ["auto", "dijkstra", "bellman-ford", "johnson",
                                       "floyd-warshall", "phast"])
def test_device_rows_are_scipys(data_dir, algorithm):
    import cupy

    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    labels = graph.labels[::37]
    got = mgapsp.apsp(graph, algorithm=algorithm, sources=labels, device=True,
                      batch_size=16)
    assert isinstance(got, cupy.ndarray)
    want = csgraph.dijkstra(graph.to_scipy(), indices=graph.index_of(labels))
    assert_distances_equal(cupy.asnumpy(got), want)
    assert_distances_equal(cupy.asnumpy(got), mgapsp.apsp(graph, algorithm=algorithm,
                                                          sources=labels))


@pytest.mark.gpu
def test_device_targets_predecessors_and_one_row(data_dir):
    import cupy

    graph = mgapsp.read_graph(data_dir / "p2p-Gnutella09.txt")
    src, tgt = graph.labels[:40], graph.labels[100:900:3]
    got = mgapsp.apsp(graph, sources=src, targets=tgt, device=True, batch_size=7)
    assert isinstance(got, cupy.ndarray) and got.shape == (40, len(tgt))
    np.testing.assert_array_equal(cupy.asnumpy(got),
                                  mgapsp.apsp(graph, sources=src, targets=tgt))
    dist, pred = mgapsp.apsp(graph, sources=src, predecessors=True, device=True)
    assert isinstance(pred, cupy.ndarray) and pred.dtype == np.int32
    host_dist, _ = mgapsp.apsp(graph, sources=src, predecessors=True)
    np.testing.assert_array_equal(cupy.asnumpy(dist), host_dist)
    # ties among shortest paths may be broken otherwise from one run to the next
    assert_predecessors(graph, graph.index_of(src), cupy.asnumpy(dist),
                        cupy.asnumpy(pred))
    row = mgapsp.apsp(graph, sources=src[0], device=True)
    assert isinstance(row, cupy.ndarray) and row.shape == (graph.n,)
    empty = mgapsp.apsp(graph, sources=[], device=True)
    assert isinstance(empty, cupy.ndarray) and empty.shape == (0, graph.n)


@pytest.mark.gpu
def test_cupy_input_gives_cupy_output(data_dir):
    import cupy
    import cupyx.scipy.sparse as cusparse

    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    csr = graph.to_scipy()
    got = mgapsp.apsp(cusparse.csr_matrix(csr), sources=[0, 5, 9])
    assert isinstance(got, cupy.ndarray)
    assert_distances_equal(cupy.asnumpy(got), csgraph.dijkstra(csr, indices=[0, 5, 9]))
    dense = cupy.asarray([[0, 1, 0], [0, 0, 2], [4, 0, 0]], dtype=cupy.float64)
    np.testing.assert_array_equal(cupy.asnumpy(mgapsp.apsp(dense)),
                                  mgapsp.apsp(cupy.asnumpy(dense)))
    assert isinstance(mgapsp.apsp(cusparse.csr_matrix(csr), sources=[0], device=False),
                      np.ndarray)


@pytest.mark.gpu
def test_device_rows_widen_past_float32(data_dir):
    """Sums past 2**24 in float32 are computed again in float64, on the device too."""
    import cupy

    n = 64      # a chain; the last source alone reaches past 2**24, in the last batch
    src = np.append(np.arange(n - 2), n - 1)
    dst = np.append(np.arange(1, n - 1), 0)
    graph = mgapsp.Graph.from_edges(src, dst, np.append(np.ones(n - 2), 2**25), n=n)
    assert mgapsp.plan.choose_dtype(graph, "auto")[2], "float32, checked per batch"
    got = mgapsp.apsp(graph, device=True, batch_size=8)
    want = csgraph.dijkstra(graph.to_scipy())
    assert got.dtype == np.float64
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


@pytest.mark.gpu
def test_device_rows_reserve_the_planned_dtype_and_say_when_float64_has_no_room(
        monkeypatch):
    """A float32 answer reserves 4 bytes a distance (not float64's 8): an 80 GB GPU
    holds a 115,000-vertex road network's all pairs.  Should a checked batch need
    float64 where the device has no room for it, one line says so."""
    import cupy

    from mgapsp import InsufficientMemoryError
    from mgapsp.backends.gpu import GPUBackend

    n = 1024    # a chain, as above
    src = np.append(np.arange(n - 2), n - 1)
    dst = np.append(np.arange(1, n - 1), 0)
    graph = mgapsp.Graph.from_edges(src, dst, np.append(np.ones(n - 2), 2**25), n=n)
    room = n * n * 6                 # float32's rows fit, float64's would not
    monkeypatch.setattr(GPUBackend, "memory_available", lambda self: room)
    got = mgapsp.apsp(graph, device=True, batch_size=64, sources=np.arange(n - 1))
    assert got.dtype == np.float32
    empty = cupy.empty

    def no_float64(shape, dtype=float, *args, **kwargs):
        if np.dtype(dtype) == np.float64 and tuple(np.atleast_1d(shape)) == (n, n):
            raise cupy.cuda.memory.OutOfMemoryError(n * n * 8, 0, 0)
        return empty(shape, dtype, *args, **kwargs)

    monkeypatch.setattr(cupy, "empty", no_float64)
    with pytest.raises(InsufficientMemoryError,
                       match=r"float64 rows of 1,024 x 1,024 on the GPU .*reach 2\*\*24"):
        mgapsp.apsp(graph, device=True, batch_size=64)
