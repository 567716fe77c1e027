"""The batch-system recipes: what they generate, and that the node command really works."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml


REPO = Path(__file__).resolve().parent.parent


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def slurm():
    pytest.importorskip("dask_jobqueue")
    return _load(REPO / "cluster" / "slurm" / "slurm_cluster.py")


def _worker_line(script: str) -> str:
    return next(line for line in script.splitlines() if "-m mgapsp.jobs.worker" in line)


def _network_address() -> str | None:
    """An address of this host other than loopback, or None where it has none."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this picks the outgoing interface
        address = s.getsockname()[0]
        if not address.startswith("127.") and address != "0.0.0.0":
            return address
    return None


def _listens(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
        return True
    except OSError:
        return False


def _assert_loopback_only(port: int, network: str | None) -> None:
    assert _listens("127.0.0.1", port)
    if network:
        assert not _listens(network, port), f"port {port} answers on {network}"


def test_slurm_job_script_is_one_gpu_node(slurm):
    cluster = slurm.make_cluster(gpus_per_node=4, memory_per_gpu="120GB", cores_per_gpu=8,
                                 queue="gpu", account="proj", walltime="02:00:00",
                                 dashboard_address=":0")
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#SBATCH --gres=gpu:4" in script
    assert "#SBATCH -p gpu" in script and "#SBATCH -A proj" in script
    assert "#SBATCH -t 02:00:00" in script
    assert "#SBATCH --cpus-per-task=32" in script
    assert f"#SBATCH --mem={4 * 120 * 10**9 // 2**20}M" in script  # the node's share
    line = _worker_line(script)
    # Each GPU worker is limited to one GPU's share of the memory.
    assert "--memory-limit 111.76GiB" in line and "--nthreads 8" in line


def test_slurm_dashboards_are_loopback_by_default(slurm):
    """The scheduler's dashboard listens on 127.0.0.1 unless asked (Dask's ":8787" is
    every interface), the workers' on their nodes' loopback, and the link printed
    names where it listens."""
    default = inspect.signature(slurm.make_cluster).parameters["dashboard_address"].default
    assert default == slurm.DASHBOARD_ADDRESS == "127.0.0.1:8787"
    assert "ssh -L" in slurm.__doc__
    cluster = slurm.make_cluster(gpus_per_node=1, memory_per_gpu="2GB", cores_per_gpu=1,
                                 dashboard_address="127.0.0.1:0")
    try:
        line = _worker_line(cluster.job_script())
        port = cluster.scheduler_info["services"]["dashboard"]
        _assert_loopback_only(port, _network_address())
        assert slurm.dashboard_link(cluster, "127.0.0.1:0") == \
            f"http://127.0.0.1:{port}/status"
    finally:
        cluster.close()
    assert "--dashboard-address 127.0.0.1:0" in line


@pytest.mark.slow
def test_slurm_job_script_with_tls(slurm, tmp_path):
    tls = tmp_path / "tls"
    subprocess.run(["bash", str(REPO / "cluster" / "make-tls.sh"), str(tls)], check=True,
                   capture_output=True)
    cluster = slurm.make_cluster(gpus_per_node=2, memory_per_gpu="8GB", cores_per_gpu=2,
                                 tls_dir=str(tls), dashboard_address=":0")
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    line = _worker_line(script)
    assert " tls://" in line
    for flag, name in (("--tls-ca-file", "ca.pem"), ("--tls-cert", "cert.pem"),
                       ("--tls-key", "key.pem")):
        assert f"{flag} {tls / name}" in line


@pytest.mark.slow
def test_slurm_worker_command_joins_a_real_scheduler(slurm, tmp_path):
    """Run the exact worker command of the generated job script on this machine."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=":0") as local:
        cluster = slurm.make_cluster(gpus_per_node=1, memory_per_gpu="2GB",
                                     cores_per_gpu=1, dashboard_address=":0")
        try:
            line = _worker_line(cluster.job_script())
        finally:
            cluster.close()
        args = shlex.split(line)
        module_at = args.index("mgapsp.jobs.worker")
        cmd = [sys.executable, "-m", "mgapsp.jobs.worker", local.scheduler_address,
               *args[module_at + 2:]]
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            with Client(local) as client:
                client.wait_for_workers(1, timeout=60)
                (info,) = client.scheduler_info()["workers"].values()
                assert info["nthreads"] == 1
                # jobqueue writes the limit through format_bytes: 1.86 GiB
                assert info["memory_limit"] == pytest.approx(2 * 10**9, rel=0.01)
                assert client.submit(sum, [1, 2, 3]).result() == 6
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def test_gpu_workers_get_the_configured_threads():
    """python -m mgapsp.jobs.worker (what every recipe runs) gives GPU nodes dask-cuda
    workers with mgapsp's threads, unless the recipe names its own."""
    import dask

    from mgapsp.jobs.worker import worker_args

    assert worker_args(["tcp://s:8786", "--nworkers", "2"], gpus=0) == (
        "dask worker", ["tcp://s:8786", "--nworkers", "2"])
    with dask.config.set({"mgapsp.cluster.gpu-worker-threads": 6}):
        command, args = worker_args(["tcp://s:8786", "--nworkers", "2", "--nanny"], gpus=2)
    assert command == "dask cuda worker"
    assert args == ["tcp://s:8786", "--nthreads", "6"]
    assert worker_args(["s", "--nthreads", "3"], gpus=1)[1] == ["s", "--nthreads", "3"]


def test_recipes_start_workers_through_mgapsp():
    """The recipes run mgapsp's worker command rather than copying its settings."""
    script = (REPO / "cluster" / "start-cluster.sh").read_text()
    assert "-m mgapsp.jobs.worker" in script and "--nthreads 4" not in script
    daskcluster = (REPO / "cluster" / "kubernetes" / "daskcluster.yaml").read_text()
    assert "mgapsp.jobs.worker" in daskcluster and "--preload" not in daskcluster


@pytest.mark.slow       # subprocesses
def test_start_cluster_dashboards_default_to_loopback():
    script = (REPO / "cluster" / "start-cluster.sh").read_text()
    assert "\ndashboard=127.0.0.1:8787\n" in script
    assert '--dashboard-address "$dashboard"' in script
    # both kinds of workers: Dask's default for a worker's dashboard is every interface
    assert script.count('--dashboard-address "$worker_dashboard"') == 2
    assert "$host:0" not in script
    help_text = subprocess.run(["bash", str(REPO / "cluster" / "start-cluster.sh"), "-h"],
                               capture_output=True, text=True, check=True).stdout
    assert "-d ADDR" in help_text and "ssh -L 8787:127.0.0.1:8787" in help_text
    assert help_text.rstrip().endswith("disk they all see.")  # the whole header


@pytest.mark.slow
def test_start_cluster_dashboards_listen_on_loopback_only(tmp_path):
    """With -H on the node's network address, the scheduler listens there but its
    dashboard and the workers' only on 127.0.0.1."""
    from distributed import Client

    network = _network_address()
    if network is None:
        pytest.skip("this host has no address other than loopback")
    sched = tmp_path / "scheduler.json"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["bash", str(REPO / "cluster" / "start-cluster.sh"), "-f",
                             str(sched), "-n", "1", "--cpu", "-H", network, "--plain"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    try:
        deadline = time.time() + 60
        while not sched.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        info = json.loads(sched.read_text())
        assert info["address"].startswith(f"tcp://{network}:")
        _assert_loopback_only(info["services"]["dashboard"], network)
        with Client(scheduler_file=str(sched), timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
            (worker,) = client.scheduler_info()["workers"].values()
        _assert_loopback_only(worker["services"]["dashboard"], network)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_config_plugin_sets_a_workers_settings():
    """ConfigPlugin (what every job registers) gives the process it runs in the values
    it carries (here: this one, restored after)."""
    import dask

    from mgapsp import config
    from mgapsp.jobs.cluster import ConfigPlugin

    with dask.config.set({"mgapsp.store.store-threads": 2}):
        plugin = ConfigPlugin()
        assert plugin.values["mgapsp.store.store-threads"] == 2
    before = config.get("store.store-threads")
    try:
        ConfigPlugin({"mgapsp.store.store-threads": 9}).setup()
        assert config.get("store.store-threads") == 9
        ConfigPlugin(plugin.values).setup()
        assert config.get("store.store-threads") == 2
    finally:
        dask.config.set({"mgapsp.store.store-threads": before})


def test_kubernetes_manifests():
    docs = []
    for path in sorted((REPO / "cluster" / "kubernetes").glob("*.yaml")):
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    kinds = {d["kind"]: d for _, d in docs}
    assert {"DaskCluster", "Job", "PersistentVolumeClaim"} <= set(kinds)
    dc = kinds["DaskCluster"]
    assert dc["apiVersion"] == "kubernetes.dask.org/v1"
    name = dc["metadata"]["name"]
    worker = dc["spec"]["worker"]["spec"]["containers"][0]
    assert worker["args"][:3] == ["python3", "-m", "mgapsp.jobs.worker"]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "--memory-limit" in worker["args"]
    # The job attaches to the cluster's scheduler service and writes to the shared volume.
    job = kinds["Job"]["spec"]["template"]["spec"]["containers"][0]
    command = " ".join(job["args"])
    assert f"tcp://{name}-scheduler" in command or f"tls://{name}-scheduler" in command
    claim = kinds["PersistentVolumeClaim"]["metadata"]["name"]
    for spec in (dc["spec"]["worker"]["spec"], kinds["Job"]["spec"]["template"]["spec"]):
        claims = [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]
                  if "persistentVolumeClaim" in v]
        assert claims == [claim]
    assert kinds["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteMany"]
    # The dashboard (no login) is reached only inside the cluster, or by port-forward.
    service = dc["spec"]["scheduler"]["service"]
    assert service["type"] == "ClusterIP"
    assert "http-dashboard" in {p["name"] for p in service["ports"]}
    for _, doc in docs:
        assert doc.get("spec", {}).get("type") not in ("LoadBalancer", "NodePort")
    assert "kubectl port-forward svc/mgapsp-scheduler 8787" in \
        (REPO / "cluster" / "kubernetes" / "daskcluster.yaml").read_text()


@pytest.mark.slow
def test_embedded_cluster_workers_get_the_clients_settings(data_dir, tmp_path):
    """A job's workers, and one that joins later, compute with the client's mgapsp
    settings (mgapsp.jobs.cluster.ConfigPlugin)."""
    import dask
    from distributed import Nanny

    import mgapsp
    from mgapsp.jobs.cluster import connect
    from mgapsp.jobs.driver import run_job

    def setting():
        from mgapsp import config

        return config.get("store.write-threads")

    graph = mgapsp.read_graph(data_dir / "karate.mtx")
    with dask.config.set({"mgapsp.store.write-threads": 3}), \
            connect(backend="cpu", n_workers=1, dashboard=False) as client:
        run_job(graph, tmp_path / "k.zarr", client, backend="cpu")
        assert list(client.run(setting).values()) == [3]

        async def late():
            # the embedded cluster's credentials (TLS by default: mgapsp.cluster.tls)
            async with Nanny(client.scheduler.address, nthreads=1,
                             security=client.security):
                await client.wait_for_workers(2, timeout=60)
                return await client.run(setting)

        assert list(client.sync(late).values()) == [3, 3]
