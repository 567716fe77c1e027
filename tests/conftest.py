"""Shared fixtures: test data paths, a real Dask cluster per session, GPU detection."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@functools.cache
def cuda_device_count() -> int:
    """Visible CUDA devices; 0 where CuPy or a driver is missing."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def pytest_collection_modifyitems(config, items):
    if cuda_device_count() > 0:
        return
    skip = pytest.mark.skip(reason="no CUDA device visible")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def cpu_client():
    """A real LocalCluster of two single-threaded worker processes, shared by the session.

    With ``SCHEDULER_FILE`` set, attach to that cluster instead.
    """
    from distributed import Client, LocalCluster

    if os.environ.get("SCHEDULER_FILE"):
        with Client(scheduler_file=os.environ["SCHEDULER_FILE"]) as client:
            yield client
        return
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster:
        with Client(cluster) as client:
            yield client


@pytest.fixture(scope="session")
def gpu_client():
    """A real LocalCUDACluster, one worker per visible GPU with the threads of
    mgapsp's embedded clusters (device tests only)."""
    if cuda_device_count() == 0:
        pytest.skip("no CUDA device visible")
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    from mgapsp import config

    with LocalCUDACluster(dashboard_address=None, host="127.0.0.1",
                          threads_per_worker=config.get("cluster.gpu-worker-threads")) as cluster:
        with Client(cluster) as client:
            yield client
