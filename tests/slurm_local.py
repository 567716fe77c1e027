"""A real SLURM on this machine for the tests: one controller and one node daemon
(``slurm-wlm`` and ``munge`` from the system's packages, as root), configured in a
folder of the test's own, stopped after it.  ``.ci/run`` installs the packages where
it can; elsewhere the tests that need it are skipped with the reason."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

PROGRAMS = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "munged")


def missing() -> str | None:
    """Why no local SLURM can start here, or None."""
    absent = [p for p in PROGRAMS if shutil.which(p) is None]
    if absent:
        return (f"no SLURM here ({', '.join(absent)} missing: apt-get install slurm-wlm "
                "munge)")
    if os.geteuid() != 0:
        return "a local SLURM needs root (its node daemon runs the jobs)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _munge() -> None:
    """munged running, with a key (made once)."""
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode == 0:
        return
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        subprocess.run(["mungekey", "-c", "-k", str(key)], check=True, capture_output=True)
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=True,
                   capture_output=True)


@contextlib.contextmanager
def local_slurm(folder: Path, *, cpus: int | None = None, memory_mb: int = 8000):
    """A controller and a node daemon of ``cpus`` cores (all of them) configured in
    ``folder``; yields the environment that points SLURM's commands at it."""
    folder = Path(folder)
    for d in ("state", "spool"):
        (folder / d).mkdir(parents=True, exist_ok=True)
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=mgapsp-test", f"SlurmctldHost={host}",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        "AuthType=auth/munge", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
        f"StateSaveLocation={folder / 'state'}", f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}",
        f"SlurmdLogFile={folder / 'slurmd.log'}",
        # a job past its time limit is killed at once (2 s of grace, not 30)
        "SlurmUser=root", "ReturnToService=2", "KillWait=2", "OverTimeLimit=0",
        f"NodeName={host} CPUs={cpus or os.cpu_count()} RealMemory={memory_mb} "
        "State=UNKNOWN",
        "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
    env = dict(os.environ, SLURM_CONF=str(conf))
    _munge()
    subprocess.run(["slurmctld", "-f", str(conf)], check=True, env=env)
    subprocess.run(["slurmd", "-f", str(conf)], check=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                                   text=True, env=env).stdout.strip()
            if state == "idle":
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the local SLURM node is {state!r}, not idle: "
                                   f"{(folder / 'slurmctld.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield env
    finally:
        subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True)
        subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True)
        for pid_file in ("slurmctld.pid", "slurmd.pid"):
            with contextlib.suppress(OSError, ValueError):
                pid = int((folder / pid_file).read_text())
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.05)


def jobs(env) -> list[str]:
    """The ids of the SLURM jobs pending or running."""
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True,
                         env=env).stdout
    return out.split()
