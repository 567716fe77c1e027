"""The embedded cluster's shape: in this process where one worker is all there is, its
dashboard on loopback and made a moment after the start."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import dask.config
import numpy as np
import pytest
from scipy.sparse import csgraph

import mgapsp
from mgapsp.jobs import cluster as embedded
from mgapsp.jobs.cluster import connect, one_process
from mgapsp.jobs.driver import run_job


def test_one_process_only_where_one_worker_is_all_there_is(monkeypatch):
    import mgapsp.gpu_count

    monkeypatch.setattr(mgapsp.gpu_count, "gpu_count", lambda: 1)
    assert one_process("gpu")
    assert one_process("gpu", gpus="0")
    assert not one_process("gpu", gpus="1")          # another device: its own process
    assert not one_process("gpu", n_workers=2)
    assert not one_process("gpu", cpu_workers=1)
    monkeypatch.setattr(mgapsp.gpu_count, "gpu_count", lambda: 2)
    assert not one_process("gpu")
    assert one_process("cpu", small=True)
    assert not one_process("cpu", small=True, n_workers=3)
    # the CPU kernels release the GIL: one process, a thread per core
    monkeypatch.setattr(embedded, "multicore", lambda: True)
    assert one_process("cpu", small=False)
    monkeypatch.setattr(embedded, "multicore", lambda: False)
    assert not one_process("cpu", small=False)        # SciPy holds the GIL: processes


@pytest.mark.slow
def test_a_cpu_job_runs_on_a_thread_per_core_in_this_process(data_dir, tmp_path,
                                                              monkeypatch):
    """The in-process CPU worker has a thread per core, and as many write threads;
    its batches run on the kernels (loaded as the job starts), SciPy's answer."""
    import mgapsp.store.writer as writer
    from mgapsp import cpu_sssp

    monkeypatch.setattr(embedded, "cpu_threads", lambda: 3)
    monkeypatch.setattr(writer, "_POOLS", {})
    g = mgapsp.read_graph(data_dir / "rome99.gr")
    with connect(backend="cpu", processes=False, dashboard=False) as client:
        assert list(client.nthreads().values()) == [3]
        assert writer.write_threads(gpu=False) == 3
        report = run_job(g, tmp_path / "r.zarr", client, backend="cpu", dtype="float64")
    assert writer.write_threads(gpu=False) == 1       # the setting ends with the cluster
    assert report.plan.n_batches >= 3 and cpu_sssp.loading()
    got = mgapsp.Result(tmp_path / "r.zarr").group["distances"][:]
    np.testing.assert_array_equal(got, csgraph.dijkstra(g.to_scipy()))


def test_a_small_job_runs_on_an_in_process_worker(data_dir, tmp_path):
    g = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    with connect(backend="cpu", processes=False, dashboard=False) as client:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        assert [a.split("://")[0] for a in workers] == ["inproc"]
        report = run_job(g, tmp_path / "s.zarr", client, backend="cpu", dtype="float64")
    assert report.plan.n_batches == 1
    got = mgapsp.Result(tmp_path / "s.zarr").group["distances"][:]
    np.testing.assert_allclose(got, csgraph.dijkstra(g.to_scipy()), rtol=1e-12)


@pytest.mark.parametrize("processes", [False, True])
def test_the_dashboard_comes_up_on_loopback_after_the_start(monkeypatch, processes):
    monkeypatch.setattr(embedded, "DASHBOARD_DELAY", 0.2)
    with dask.config.set({"mgapsp.cluster.dashboard-address": "127.0.0.1:0"}), \
            connect(backend="cpu", processes=processes, n_workers=1) as client:
        link = client.dashboard_link
        assert link.startswith("http://127.0.0.1:") and link.endswith("/status")
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(link, timeout=5) as page:
                    assert page.status == 200
                    assert b"bokeh" in page.read().lower()
                break
            except urllib.error.HTTPError as exc:      # 404 until the pages are made
                if exc.code != 404 or time.monotonic() > deadline:
                    raise


def test_no_dashboard_no_pages(monkeypatch):
    monkeypatch.setattr(embedded, "DASHBOARD_DELAY", 0.0)
    with connect(backend="cpu", processes=False, dashboard=False) as client:
        time.sleep(0.5)
        port = client.scheduler_info()["services"].get("dashboard")
        if port:                     # Dask's bare HTTP server (health, metrics) only
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5)
