"""Floyd-Warshall across workers (mgapsp/jobs/floyd_warshall_slabs.py): slabs of rows, pivot rows
exchanged each round, on real Dask clusters with real Zarr stores.

CPU workers exchange through Dask (CI); the ``gpu`` tests run the kernels' slab modes
with NCCL between GPUs and with the Dask exchange.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import zarr

import mgapsp
from mgapsp import plan
from mgapsp.jobs import floyd_warshall_slabs as fw_dist
from mgapsp.errors import MgapspError
from mgapsp.graph import Graph
from mgapsp.jobs.driver import run_job
from mgapsp.store import Store
from mgapsp.store.verify import verify_store

from helpers import assert_distances_equal, random_graph, scipy_distances


@pytest.mark.parametrize("n,ranks,batch", [(1000, 2, 128), (32768, 2, 8192),
                                           (32768, 4, 4096), (32768, 3, 5376),
                                           (700, 4, 64), (100, 2, 100), (5000, 3, 1000)])
def test_slab_bounds_cover_the_rows_in_whole_batches(n, ranks, batch):
    bounds = plan.slab_bounds(n, ranks, batch)
    align = math.lcm(batch, plan.SLAB_ALIGN)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert 1 <= len(bounds) <= ranks
    for (lo, hi), (lo2, _) in zip(bounds, bounds[1:]):
        assert hi == lo2
    for lo, hi in bounds:
        assert hi > lo and lo % align == 0
    # as even as the alignment allows
    sizes = [hi - lo for lo, hi in bounds]
    assert max(sizes) - min(sizes) <= 2 * align
    # every batch lies in one slab
    for start in range(0, n, batch):
        r = plan.owner_of_rows(bounds, start)
        assert bounds[r][0] <= min(start + batch, n) - 1 < bounds[r][1]


def test_slab_bounds_of_a_real_shape():
    assert plan.slab_bounds(32768, 2, 8192) == [(0, 16384), (16384, 32768)]
    assert plan.slab_bounds(1000, 2, 128) == [(0, 512), (512, 1000)]
    assert plan.slab_bounds(300, 4, 64) == [(0, 256), (256, 300)]


def _check_job(graph, report, group, ranks, dtype="float64"):
    assert report.floyd_warshall["ranks"] == ranks, report.floyd_warshall
    assert_distances_equal(group["distances"][:], scipy_distances(graph), dtype)
    assert group.attrs["progress"]["complete"] is True


@pytest.mark.slow
def test_real_graph_two_cpu_slabs_equal_scipy(cpu_client, data_dir, tmp_path):
    # SuiteSparse test_FW_1000: rows 0-511 on one worker, 512-999 on the other
    graph = mgapsp.read_graph(data_dir / "test_FW_1000.mtx")
    out = tmp_path / "fw.zarr"
    report = run_job(graph, out, cpu_client, algorithm="floyd-warshall", dtype="float64",
                     batch_size=128)
    _check_job(graph, report, zarr.open_group(str(out), mode="r"), 2)
    assert report.floyd_warshall["exchange"] == "dask"
    assert report.floyd_warshall["exchanged_bytes"] > 0
    # each worker wrote the batches of its own slab: 4 and 4 of the 8
    assert sorted(report.per_worker.values()) == [4, 4], report.per_worker
    assert verify_store(out, all_rows=True).ok


def test_negative_weights_and_unreachable_rows(cpu_client, tmp_path):
    rng = np.random.default_rng(7)
    graph = random_graph(rng, 600, 9000, low=1, negative=True, zero_fraction=0)
    # vertex 5 reaches no one, no one reaches vertex 17
    keep = (graph.sources_of_edges != 5) & (graph.indices != 17)
    graph = Graph.from_edges(graph.sources_of_edges[keep], graph.indices[keep],
                             graph.weights[keep], n=600)
    assert graph.has_negative_weights
    out = tmp_path / "neg.zarr"
    report = run_job(graph, out, cpu_client, algorithm="floyd-warshall", dtype="float64",
                     batch_size=64)
    group = zarr.open_group(str(out), mode="r")
    _check_job(graph, report, group, 2)
    d = group["distances"][:]
    assert np.isinf(d[:, 17]).sum() == 599 and np.isinf(d[5]).sum() == 599


@pytest.mark.slow
def test_resume_runs_the_slabs_again_for_missing_batches(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "test_FW_1000.mtx")
    out = tmp_path / "r.zarr"
    run_job(graph, out, cpu_client, algorithm="floyd-warshall", dtype="float64",
            batch_size=128)
    store = Store.open(out, mode="r+")
    mask = store.group["batch_done"][:]
    mask[[1, 6]] = 0
    store.group["batch_done"][:] = mask
    for b in (1, 6):
        store.group["distances"][b * 128:(b + 1) * 128, :] = np.nan
    report = run_job(graph, out, cpu_client, resume=True, dtype="float64")
    assert report.batches_run == 2 and report.resumed_batches == 6
    assert report.floyd_warshall["ranks"] == 2
    assert verify_store(out, all_rows=True).ok
    assert_distances_equal(zarr.open_group(str(out), mode="r")["distances"][:],
                           scipy_distances(graph))


def test_predecessors_or_some_sources_do_not_use_slabs(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "test_FW_1000.mtx")
    # the cpu backend named: on a GPU machine the CPU cluster's workers see the GPU
    report = run_job(graph, tmp_path / "p.zarr", cpu_client, algorithm="floyd-warshall",
                     backend="cpu", dtype="float64", batch_size=128, predecessors=True)
    assert report.floyd_warshall == {}
    sources = graph.vertex_ids[::3]
    report = run_job(graph, tmp_path / "s.zarr", cpu_client, algorithm="floyd-warshall",
                     backend="cpu", dtype="float64", batch_size=128, sources=sources)
    assert report.floyd_warshall == {}
    assert_distances_equal(zarr.open_group(str(tmp_path / "s.zarr"), mode="r")["distances"][:],
                           scipy_distances(graph, graph.index_of(sources)))


@pytest.mark.slow
def test_a_failed_rank_fails_the_job_without_hanging(cpu_client, data_dir, tmp_path):
    """Rank 1 cannot load its graph; rank 0, which waits for rank 1's pivot rows, sees
    the abort and stops; the job reports rank 1's error."""
    graph = mgapsp.read_graph(data_dir / "test_FW_1000.mtx")
    out = tmp_path / "f.zarr"
    run_job(graph, out, cpu_client, algorithm="floyd-warshall", dtype="float64",
            batch_size=128)
    bounds = plan.slab_bounds(graph.n, 2, 128)
    workers = sorted(cpu_client.scheduler_info()["workers"])
    prefix = "apsp-fw-test-fail"
    info = fw_dist.job_info(graph, "float64", "cpu")
    futures = [cpu_client.submit(fw_dist.fw_rank, str(out),
                                 graph.fingerprint if r == 0 else "not-this-graph",
                                 "test-fail", prefix, r, bounds, "cpu", "float64", info, key=f"{prefix}-{r}",
                                 workers=[workers[r]], allow_other_workers=False)
               for r in range(2)]
    with pytest.raises(MgapspError, match="does not match"):
        fw_dist.gather_ranks(cpu_client, futures, prefix)
    assert futures[0].status == "error"
    assert isinstance(futures[0].exception(), fw_dist.PeerFailedError)
    assert set(cpu_client.run(fw_dist.drop_slabs).values()) == {0}   # no rank kept a slab


# -- GPUs ----------------------------------------------------------------------------------
def _quarter_graph(seed, n, m, negative):
    """Weights in quarters (sums exact in float32), with negative ones by potentials."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 41, m) / 4.0
    if negative:
        p = rng.integers(0, 40, n) / 4.0
        w = w + p[src] - p[dst]
    return Graph.from_edges(src, dst, w, n=n)


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", ["nccl", "dask"])
@pytest.mark.parametrize("kind,dtype", [("integer", "float32"), ("quarters", "float32"),
                                        ("negative", "float32"), ("negative", "float64"),
                                        ("wide-integer", "float32")])
def test_gpu_slabs_equal_scipy(gpu_client, tmp_path, monkeypatch, exchange, kind, dtype):
    monkeypatch.setenv("MGAPSP_FW_EXCHANGE", exchange)
    n = 1500                                  # not a multiple of 128 or 256
    if kind == "integer":                     # int16x2, proved in range
        rng = np.random.default_rng(3)
        graph = random_graph(rng, n, 40000, low=1, high=9)
    elif kind == "wide-integer":              # int16x2 speculatively, then int32
        # a path both ways and jumps of two: distances up to about 700,000
        rng = np.random.default_rng(4)
        i = np.arange(n - 2)
        src = np.concatenate([i, i + 1, i, i + 2])
        dst = np.concatenate([i + 1, i, i + 2, i])
        graph = Graph.from_edges(src, dst, rng.integers(900, 1001, len(src)).astype(float),
                                 n=n)
    else:
        graph = _quarter_graph(5, n, 30000, negative=kind == "negative")
    out = tmp_path / "g.zarr"
    report = run_job(graph, out, gpu_client, algorithm="floyd-warshall", dtype=dtype,
                     batch_size=256)
    ranks = len(gpu_client.scheduler_info()["workers"])
    fwr = report.floyd_warshall
    assert fwr["ranks"] == min(ranks, len(plan.slab_bounds(n, ranks, 256)))
    assert fwr["exchange"] == ("none" if fwr["ranks"] == 1 else exchange)
    if kind == "integer":
        assert fwr["attempts"] == ["int16x2-dpx"]
    if kind == "wide-integer":
        assert fwr["attempts"] == ["int16x2-dpx", "int32-dpx"], fwr
    if kind == "negative":
        assert fwr["method"] == ("fp32" if dtype == "float32" else "fp64")
    _check_job(graph, report, zarr.open_group(str(out), mode="r"), fwr["ranks"], dtype)
    if exchange == "nccl" and fwr["ranks"] > 1:
        # the next job of the same ranks reuses the communicator; one per worker stays
        again = run_job(graph, tmp_path / "h.zarr", gpu_client, algorithm="floyd-warshall",
                        dtype=dtype, batch_size=256)
        assert all(r["reused_communicator"] for r in again.floyd_warshall["per_rank"])
        assert set(gpu_client.run(lambda: len(fw_dist._COMMS)).values()) == {1}
        _check_job(graph, again, zarr.open_group(str(tmp_path / "h.zarr"), mode="r"),
                   fwr["ranks"], dtype)


@pytest.mark.gpu
def test_gpu_slabs_on_two_workers_of_one_gpu(data_dir, tmp_path):
    """Two ranks even on a one-GPU machine: two worker processes share device 0, and
    since NCCL refuses two ranks on one device they find out and use Dask."""
    from distributed import Client, LocalCluster

    graph = mgapsp.read_graph(data_dir / "test_FW_1000.mtx")
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      host="127.0.0.1", env={"CUDA_VISIBLE_DEVICES": "0"}) as cluster, \
            Client(cluster) as client:
        out = tmp_path / "two.zarr"
        report = run_job(graph, out, client, backend="gpu", algorithm="floyd-warshall",
                         dtype="float64", batch_size=128)
        _check_job(graph, report, zarr.open_group(str(out), mode="r"), 2)
        assert report.floyd_warshall["exchange"] == "dask"
        assert len(report.gpu_s) == 2


class _Alone:
    """The exchange of a single rank: nothing to send, nothing to wait for."""

    rank, size, kind = 0, 1, "none"

    def bcast(self, buf, root):
        assert root == 0

    def allreduce_sum(self, values):
        return np.asarray(values)

    def wait(self, event):
        event.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["fp32", "fp64", "int32-dpx", "int16x2-dpx"])
@pytest.mark.parametrize("n", [5, 300, 1001])
def test_gpu_slab_kernels_of_one_rank_equal_the_dense_ones(monkeypatch, method, n):
    """The slab modes (rows passed in, pivot rows as an operand, row and column panels
    apart) against the one-device launches, scratch poisoned, odd sizes."""
    import cupy

    from mgapsp.cuda import floyd_warshall as fw
    from mgapsp.cuda import floyd_warshall_rows as fw_slab

    monkeypatch.setattr(fw, "POISON_SCRATCH", True)
    rng = np.random.default_rng(n)
    dt = {"fp32": np.float32, "fp64": np.float64, "int32-dpx": np.int32,
          "int16x2-dpx": np.int16}[method]
    inf = {"int32-dpx": fw.INF_I32, "int16x2-dpx": fw.INF_I16}.get(method, np.inf)
    A = np.where(rng.random((n, n)) < 0.05, rng.integers(1, 30, (n, n)), inf).astype(dt)
    np.fill_diagonal(A, 0)
    ref = cupy.asarray(A)
    fw.floyd_warshall_dense(ref, method=method)
    S = cupy.zeros((n, n + (n % 2 if dt == np.int16 else 0)), dtype=dt)
    S[:, :n] = cupy.asarray(A)
    stats = fw_slab.floyd_warshall_slab(S, 0, n, method, _Alone(), [(0, n)])
    assert stats["rounds"] == -(-n // (256 if dt == np.int16 else 128))
    np.testing.assert_array_equal(S[:, :n].get(), ref.get())
