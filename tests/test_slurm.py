"""The SLURM recipe against a real SLURM on this machine (``tests/slurm_local.py``):
workers that ``sbatch`` starts, on CPU nodes, computing what SciPy computes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import faults
import slurm_local

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "cluster" / "slurm" / "slurm_cluster.py"
#: two CPU nodes of one core each (SLURM jobs on this machine's one node)
NODES = ["--gpus-per-node", "0", "--cores-per-node", "1", "--memory-per-node", "1GB",
         "--interface", "lo", "--dashboard-address", "127.0.0.1:0"]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    pytest.importorskip("dask_jobqueue")
    reason = slurm_local.missing()
    if reason:
        pytest.skip(reason)
    with slurm_local.local_slurm(tmp_path_factory.mktemp("slurm"), cpus=2) as env:
        yield env


def _recipe(env, cwd, *args, timeout=300, **popen):
    """The recipe run from ``cwd``, where sbatch leaves its jobs' output files."""
    cmd = [sys.executable, str(RECIPE), *map(str, args)]
    if popen:
        return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def _masked(script: str) -> str:
    """A job script without what differs between two clusters: the scheduler's
    address and the job's name."""
    script = re.sub(r"tcp://127\.0\.0\.1:\d+", "tcp://ADDRESS", script)
    return re.sub(r"(#SBATCH -J|--name) \S+", r"\1 NAME", script)


def test_a_job_on_sbatch_workers_equals_scipy_and_ran_the_printed_script(slurm, data_dir,
                                                                         tmp_path,
                                                                         monkeypatch):
    printed = _recipe(slurm, tmp_path, *NODES, "--walltime", "00:10:00", "--print-job-script")
    assert printed.returncode == 0, printed.stderr
    # the script SLURM holds for a running worker job is the one printed
    sys.path.insert(0, str(RECIPE.parent))
    import slurm_cluster

    monkeypatch.chdir(tmp_path)         # sbatch writes its output files where it runs
    cluster = slurm_cluster.make_cluster(
        gpus_per_node=0, cores_per_node=1, memory_per_node="1GB", interface="lo",
        walltime="00:10:00", dashboard_address="127.0.0.1:0")
    import os

    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = slurm["SLURM_CONF"]
    try:
        cluster.scale(jobs=1)
        deadline = time.monotonic() + 60
        while not slurm_local.jobs(slurm) and time.monotonic() < deadline:
            time.sleep(0.2)
        job = slurm_local.jobs(slurm)[0]
        held = subprocess.run(["scontrol", "write", "batch_script", job, "-"],
                              capture_output=True, text=True, env=slurm).stdout
    finally:
        cluster.close()
        if old is None:
            os.environ.pop("SLURM_CONF")
        else:
            os.environ["SLURM_CONF"] = old
    assert "mgapsp.jobs.worker" in held
    assert _masked(held).strip() == _masked(printed.stdout).strip()
    out = tmp_path / "rome.zarr"
    ran = _recipe(slurm, tmp_path, *NODES, "--nodes", 2, "--walltime", "00:10:00", "run",
                  data_dir / "rome99.gr", "-o", out, "--batch-size", 256)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "3,353 rows" in ran.stdout and "on 2 CPU nodes" in ran.stdout
    assert faults.verify_all(out).rc == 0


def test_a_worker_job_cancelled_mid_run_the_others_finish(slurm, tmp_path):
    """scancel of one node's SLURM job while the batches run: Dask runs its batches
    on the other, and every row is SciPy's."""
    job = faults.slow_job(tmp_path)
    out = tmp_path / "cancelled.zarr"
    proc = _recipe(slurm, tmp_path, *NODES, "--nodes", 2, "--walltime", "00:10:00", "run",
                   job[0], "-o", out, "--sources", job[2], "--batch-size", 2, popen=True)
    assert faults.wait_for_flags(out, 4, proc) >= 4, proc.communicate()[1][-3000:]
    running = slurm_local.jobs(slurm)
    assert len(running) == 2
    subprocess.run(["scancel", running[0]], env=slurm, check=True)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    assert faults.flags(out) == 48
    assert faults.verify_all(out).rc == 0


def test_the_allocation_ends_at_its_walltime_then_resume_finishes(slurm, tmp_path):
    """The allocation's one worker job killed by SLURM at its time limit (a minute,
    SLURM's least) mid-run: the job ends in one line saying how to continue; --resume
    in a new allocation of two nodes finishes it.  3,000 rows of New York, some
    minutes of one core: SciPy recomputes a sample of them (every row would take it
    minutes more)."""
    job = faults.slow_job(tmp_path, n_sources=3000)
    out = tmp_path / "walltime.zarr"
    env = dict(slurm, DASK_MGAPSP__CLUSTER__WORKER_WAIT="5")
    first = _recipe(env, tmp_path, *NODES, "--nodes", 1, "--walltime", "00:01:00", "run",
                    job[0], "-o", out, "--sources", job[2], "--batch-size", 10,
                    timeout=600)
    assert first.returncode == 1, first.stderr[-3000:]
    errors = [line for line in first.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "continue the job with --resume" in errors[0], \
        first.stderr[-3000:]
    done = faults.flags(out)
    assert 0 < done < 300
    second = _recipe(slurm, tmp_path, *NODES, "--nodes", 2, "--walltime", "00:10:00", "run",
                     job[0], "-o", out, "--sources", job[2], "--batch-size", 10,
                     "--resume", timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    assert faults.flags(out) == 300
    assert faults.mgapsp("verify", out, "--samples", 200).rc == 0
