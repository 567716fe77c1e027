"""The GPU pipeline end to end on a real LocalCUDACluster (device machines only)."""

from __future__ import annotations

import numpy as np
import pytest

import mgapsp
from mgapsp import NegativeCycleError
from mgapsp.jobs.driver import run_job
from mgapsp.store.verify import verify_store

from conftest import cuda_device_count
from helpers import assert_distances_equal, cycle_weight, reweighted, scipy_distances

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name,count", [
    ("p2p-Gnutella08.txt", 512),
    ("rome99.gr", 512),
    ("Austin_net.tntp", 256),
    ("netscience.mtx", None),
    ("ftv170.atsp", None),
])
def test_gpu_pipeline_equals_scipy(gpu_client, data_dir, tmp_path, name, count):
    graph = mgapsp.read_graph(data_dir / name)
    sources = None
    if count is not None:
        rng = np.random.default_rng(7)
        sources = np.sort(rng.choice(graph.vertex_ids, size=count, replace=False))
    # predecessors on the GPU are float32's: asked for, as dtype auto would refuse them
    # where float32 rounds (Austin's lengths)
    group = mgapsp.apsp(graph, out=tmp_path / "g.zarr", client=gpu_client, sources=sources,
                        predecessors=True, dtype="float32")
    assert group.attrs["job"]["backend"] == "gpu"
    idx = None if sources is None else graph.index_of(sources)
    assert_distances_equal(group["distances"][:], scipy_distances(graph, idx),
                           dtype="float32")
    assert verify_store(tmp_path / "g.zarr", all_rows=True).ok


@pytest.mark.parametrize("algorithm,expected", [("auto", "johnson"),
                                                ("bellman-ford", "bellman-ford")])
def test_gpu_pipeline_negative_weights(gpu_client, data_dir, tmp_path, algorithm,
                                       expected):
    graph = reweighted(mgapsp.read_graph(data_dir / "p2p-Gnutella08.txt"), seed=5,
                       spread=10.0)
    sources = graph.vertex_ids[::25]
    group = mgapsp.apsp(graph, out=tmp_path / "n.zarr", client=gpu_client,
                        sources=sources, dtype="float64", algorithm=algorithm)
    assert group.attrs["job"]["algorithm"] == expected
    assert_distances_equal(group["distances"][:],
                           scipy_distances(graph, graph.index_of(sources)))


def test_gpu_pipeline_negative_cycle(gpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "soc-sign-bitcoinalpha.csv")
    with pytest.raises(NegativeCycleError) as info:
        mgapsp.apsp(graph, out=tmp_path / "c.zarr", client=gpu_client)
    assert cycle_weight(graph, info.value.cycle) < 0
    assert not (tmp_path / "c.zarr").exists()


def test_every_gpu_receives_batches(gpu_client, data_dir, tmp_path):
    gpus = cuda_device_count()
    if gpus < 2:
        pytest.skip("needs two or more GPUs")
    graph = mgapsp.read_graph(data_dir / "p2p-Gnutella09.txt")
    report = run_job(graph, tmp_path / "multi.zarr", gpu_client, batch_size=256)
    assert report.batches_run == report.plan.n_batches
    assert len(report.per_worker) == gpus, report.per_worker
    assert verify_store(tmp_path / "multi.zarr", samples=128).ok


def test_at_most_gpu_computing_batches_compute_at_once(gpu_client, data_dir, tmp_path):
    """A GPU worker runs more batches than compute at once: on each worker the spans
    during which its batches computed overlap GPU_COMPUTING deep at most, and reach
    it (the other threads wrote meanwhile); the store is right."""
    from mgapsp import config

    graph = mgapsp.read_graph(data_dir / "p2p-Gnutella09.txt")
    report = run_job(graph, tmp_path / "slots.zarr", gpu_client, batch_size=256)
    assert report.batches_run == report.plan.n_batches
    depth = {}
    for worker, spans in report.computing.items():
        # at equal times an end comes before a start: touching spans do not overlap
        events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
        now = deepest = 0
        for _, step in events:
            now += step
            deepest = max(deepest, now)
        depth[worker] = deepest
    assert set(depth) == set(report.per_worker)
    assert max(depth.values()) == config.get("gpu.computing-batches"), depth
    assert any(b["queued_s"] > 0 for b in report.batches)
    assert verify_store(tmp_path / "slots.zarr", samples=128).ok


def test_gpus_option_picks_devices(data_dir, tmp_path):
    """--gpus 1 on a machine with several GPUs: one worker, on device 1."""
    if cuda_device_count() < 2:
        pytest.skip("needs two or more GPUs")
    from test_cli import mgapsp_cli

    out = tmp_path / "one.zarr"
    proc = mgapsp_cli("run", data_dir / "rome99.gr", "-o", out, "--gpus", "1",
                      "--no-dashboard", "-q", "--batch-size", "256")
    assert "on gpu" in proc.stdout
    assert proc.stdout.count(" batches, writing") == 1, proc.stdout  # one took them all
    assert "ok" in mgapsp_cli("verify", out, "--samples", "32").stdout


def test_hybrid_gpu_and_cpu_workers(data_dir, tmp_path):
    """--cpu-workers: CPU workers take batches beside the GPU workers."""
    from test_cli import mgapsp_cli

    out = tmp_path / "hybrid.zarr"
    proc = mgapsp_cli("run", data_dir / "p2p-Gnutella08.txt", "-o", out, "--cpu-workers",
                      "4", "--batch-size", "64", "--no-dashboard", "-q")
    assert "on gpu +" in proc.stdout and "rows by backend: cpu" in proc.stdout, proc.stdout
    assert "ok" in mgapsp_cli("verify", out, "--all").stdout


def test_dashboard_shows_batches_and_gpus(data_dir, tmp_path):
    """What a user watching the dashboard sees: one task-stream entry per batch named
    apsp-batch-<i>, each worker's GPU memory and utilization (NVML metrics, and the
    dashboard's GPU pages answer), and the report's per-GPU busy fraction."""
    import urllib.request

    from distributed import Client, get_task_stream
    from dask_cuda import LocalCUDACluster

    from mgapsp import config

    g = mgapsp.read_graph(data_dir / "p2p-Gnutella08.txt")
    with LocalCUDACluster(dashboard_address="127.0.0.1:0",
                          threads_per_worker=config.get("cluster.gpu-worker-threads")) as cluster, \
            Client(cluster) as client:
        with get_task_stream(client) as ts:
            report = run_job(g, tmp_path / "dash.zarr", client, batch_size=512)
        batch_keys = {t["key"].rsplit("-", 1)[0] for t in ts.data
                      if t["key"].startswith("apsp-batch-")}
        assert batch_keys == {f"apsp-batch-{i}" for i in range(report.plan.n_batches)}
        for info in client.scheduler_info()["workers"].values():
            metrics = info["metrics"]   # NVML, sampled by each worker's heartbeat
            assert 0 < metrics["gpu_memory_used"] <= metrics["gpu-memory-total"]
            assert 0 <= metrics["gpu_utilization"] <= 100
        base = client.dashboard_link.rsplit("/", 1)[0]
        for page in ("individual-gpu-memory", "individual-gpu-utilization"):
            with urllib.request.urlopen(f"{base}/{page}", timeout=30) as resp:
                assert resp.status == 200
    busy = report.gpu_busy()
    assert set(busy) == set(report.per_worker) and all(0 < b <= 1 for b in busy.values())
