"""The fault campaign: real clusters, real processes, real files, damaged on purpose.

Each scenario starts what a user would (a Dask scheduler and workers as separate
processes, the ``mgapsp`` command), breaks something (SIGKILLs, a second run, a
damaged file) and returns what came of it.  ``tests/test_reliability.py`` asserts on
the outcomes; a maintainer repeats the whole campaign with::

    python tests/faults.py            # prints one line per scenario, exit 1 on a failure

"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def env(**extra) -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    e.update({k: str(v) for k, v in extra.items()})
    return e


@dataclass
class Outcome:
    """What a command did: its exit status, standard error's lines, its seconds."""
    rc: int
    out: str
    err: str
    seconds: float

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    @property
    def one_line_error(self) -> bool:
        """Exit status 1 and exactly one line on stderr, ``error: ...``."""
        lines = self.err_lines
        return self.rc == 1 and len(lines) == 1 and lines[0].startswith("error: ")


def mgapsp(*args, timeout: float = 300, **environ) -> Outcome:
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mgapsp", *map(str, args)], capture_output=True,
                       text=True, timeout=timeout, env=env(**environ), cwd=ROOT)
    return Outcome(p.returncode, p.stdout, p.stderr, time.monotonic() - t)


def start_mgapsp(*args, **environ) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mgapsp", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(**environ), cwd=ROOT)


def finish(proc: subprocess.Popen, t0: float, timeout: float = 300) -> Outcome:
    out, err = proc.communicate(timeout=timeout)
    return Outcome(proc.returncode, out, err, time.monotonic() - t0)


class Cluster:
    """A Dask scheduler and workers, each a process of its own, met through a
    scheduler file (as ``cluster/start-cluster.sh`` starts them)."""

    def __init__(self, workdir: Path):
        self.dir = Path(workdir)
        self.file = self.dir / "scheduler.json"
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.log = open(self.dir / "cluster.log", "w")

    def start(self, n_workers: int = 2) -> "Cluster":
        self.scheduler = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--scheduler-file", str(self.file), "--no-dashboard", "--port", "0",
             "--dashboard-address", "127.0.0.1:0"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env())
        deadline = time.monotonic() + 60
        while not self.file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.add_workers(n_workers)
        self.wait_for_workers(n_workers)
        return self

    def add_workers(self, n: int) -> None:
        for _ in range(n):
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                 str(self.file), "--nthreads", "1", "--no-nanny", "--no-dashboard",
                 "--dashboard-address", "127.0.0.1:0", "--host", "127.0.0.1",
                 "--memory-limit", "0"],
                stdout=self.log, stderr=subprocess.STDOUT, env=env()))

    def n_workers(self) -> int:
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout=30) as c:
            return len(c.scheduler_info(n_workers=-1)["workers"])

    def wait_for_workers(self, n: int, timeout: float = 60) -> None:
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout=30) as c:
            c.wait_for_workers(n, timeout=timeout)

    def kill_workers(self) -> None:
        for w in self.workers:
            with contextlib.suppress(ProcessLookupError):
                w.send_signal(signal.SIGKILL)
        for w in self.workers:
            w.wait()
        self.workers = []

    def kill_scheduler(self) -> None:
        self.scheduler.send_signal(signal.SIGKILL)
        self.scheduler.wait()

    def close(self) -> None:
        self.kill_workers()
        if self.scheduler and self.scheduler.poll() is None:
            self.kill_scheduler()
        self.log.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def flags(store: Path) -> int:
    """Batches flagged done in ``store`` (a file each)."""
    d = Path(store) / "batch_done" / "c"
    return len(list(d.iterdir())) if d.exists() else 0


def wait_for_flags(store: Path, k: int, proc: subprocess.Popen | None = None,
                   timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = flags(store)
        if n >= k:
            return n
        if proc is not None and proc.poll() is not None:
            return n
        time.sleep(0.02)
    return flags(store)


#: a job of some seconds on two CPU workers: 96 sources of New York's road network in
#: batches of 2 (SciPy's Dijkstra over 264,346 vertices per source)
SLOW_JOB = [DATA / "NY.pace.gr.gz", "--sources", None, "--batch-size", 2, "--backend", "cpu",
            "-q"]


def slow_job(workdir: Path, n_sources: int = 96) -> list:
    src = Path(workdir) / "sources.txt"
    src.write_text("\n".join(str(i) for i in range(1, 264_346, 264_346 // n_sources)
                             [:n_sources]))
    job = list(SLOW_JOB)
    job[2] = src
    return job


def verify_all(store) -> Outcome:
    return mgapsp("verify", store, "--all")


# -- scenarios ----------------------------------------------------------------------

def all_workers_killed(workdir: Path, *, replace: bool) -> dict:
    """Every worker SIGKILLed mid-job; new ones join (``replace``) or none do."""
    workdir = Path(workdir)
    out = workdir / "killed.zarr"
    with Cluster(workdir).start(2) as cluster:
        t0 = time.monotonic()
        proc = start_mgapsp("run", *slow_job(workdir), "-o", out, "--scheduler-file",
                            cluster.file, DASK_MGAPSP__CLUSTER__WORKER_WAIT=8)
        before = wait_for_flags(out, 4, proc)
        cluster.kill_workers()
        t_kill = time.monotonic()
        if replace:
            cluster.add_workers(2)
        result = finish(proc, t0)
    return {"outcome": result, "flags_at_kill": before, "store": out,
            "seconds_after_kill": time.monotonic() - t_kill}


def one_worker_hung(workdir: Path, *, hung_after: float = 5, stall: float = 10) -> dict:
    """One of two workers SIGSTOPped mid-job (a hung node: its process alive, its
    heartbeats gone); it is woken again once the job has ended."""
    workdir = Path(workdir)
    out = workdir / "hung.zarr"
    with Cluster(workdir).start(2) as cluster:
        t0 = time.monotonic()
        proc = start_mgapsp("run", *slow_job(workdir), "-o", out, "--scheduler-file",
                            cluster.file, DASK_MGAPSP__CLUSTER__HUNG_WORKER=hung_after,
                            DASK_MGAPSP__JOBS__STALL_TIMEOUT=stall)
        before = wait_for_flags(out, 4, proc)
        stopped = cluster.workers[0]
        stopped.send_signal(signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            result = finish(proc, t0)
            seconds = time.monotonic() - t_stop
        finally:
            stopped.send_signal(signal.SIGCONT)
    return {"outcome": result, "flags_at_stop": before, "store": out,
            "seconds_after_stop": seconds}


def worker_hung_at_start(workdir: Path, *, hung_after: float = 5, stall: float = 10) -> dict:
    """One of two workers SIGSTOPped before ``mgapsp run --resume`` starts on a store
    of the first batches (the job's first calls wait for every worker)."""
    workdir = Path(workdir)
    out = workdir / "hung-at-start.zarr"
    job = slow_job(workdir)
    with Cluster(workdir).start(2) as cluster:
        first = start_mgapsp("run", *job, "-o", out, "--scheduler-file", cluster.file)
        wait_for_flags(out, 4, first)
        first.send_signal(signal.SIGINT)
        finish(first, time.monotonic())
        stopped = cluster.workers[0]
        stopped.send_signal(signal.SIGSTOP)
        t0 = time.monotonic()
        try:
            result = finish(start_mgapsp("run", *job, "-o", out, "--resume",
                                         "--scheduler-file", cluster.file,
                                         DASK_MGAPSP__CLUSTER__HUNG_WORKER=hung_after,
                                         DASK_MGAPSP__JOBS__STALL_TIMEOUT=stall), t0)
        finally:
            stopped.send_signal(signal.SIGCONT)
    return {"outcome": result, "store": out, "seconds": result.seconds}


def scheduler_hung(workdir: Path, *, stall: float = 10) -> dict:
    """The scheduler SIGSTOPped mid-job (alive, answering nothing); woken again once
    the job has ended."""
    workdir = Path(workdir)
    out = workdir / "hung-scheduler.zarr"
    with Cluster(workdir).start(2) as cluster:
        t0 = time.monotonic()
        proc = start_mgapsp("run", *slow_job(workdir), "-o", out, "--scheduler-file",
                            cluster.file, DASK_MGAPSP__JOBS__STALL_TIMEOUT=stall)
        before = wait_for_flags(out, 4, proc)
        cluster.scheduler.send_signal(signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            result = finish(proc, t0)
            seconds = time.monotonic() - t_stop
            # --resume on the still stopped scheduler: the connection has a deadline
            attach = mgapsp("run", *slow_job(workdir), "-o", out, "--resume",
                            "--scheduler-file", cluster.file, timeout=120,
                            DASK_MGAPSP__CLUSTER__CONNECT_TIMEOUT=5)
        finally:
            cluster.scheduler.send_signal(signal.SIGCONT)
    # the stored batches stand: --resume on an embedded cluster finishes the job
    resumed = mgapsp("run", *slow_job(workdir), "-o", out, "--resume", "--workers", 2)
    return {"outcome": result, "flags_at_stop": before, "store": out,
            "seconds_after_stop": seconds, "attach": attach, "resumed": resumed}


def scheduler_killed(workdir: Path) -> dict:
    workdir = Path(workdir)
    out = workdir / "sched.zarr"
    with Cluster(workdir).start(2) as cluster:
        t0 = time.monotonic()
        proc = start_mgapsp("run", *slow_job(workdir), "-o", out, "--scheduler-file",
                            cluster.file)
        before = wait_for_flags(out, 4, proc)
        cluster.kill_scheduler()
        result = finish(proc, t0)
    return {"outcome": result, "flags_at_kill": before, "store": out}


def second_run_while_first_runs(workdir: Path, first: str, second: str) -> dict:
    """A second ``mgapsp run`` (``--resume`` or ``--overwrite``) on the store of a run
    in progress."""
    workdir = Path(workdir)
    out = workdir / "two.zarr"
    job = slow_job(workdir)
    t0 = time.monotonic()
    proc = start_mgapsp("run", *job, "-o", out, first, "--workers", 2)
    wait_for_flags(out, 2, proc)
    running = proc.poll() is None
    other = mgapsp("run", *job, "-o", out, second, "--workers", 2)
    result = finish(proc, t0)
    return {"first": result, "second": other, "second_while_first_ran": running,
            "store": out}


def killed_client_then_overwrite(workdir: Path) -> dict:
    """The issue's silent-wrong-data case: a directed run's client SIGKILLed while its
    workers (an external cluster) compute; an ``--overwrite --undirected`` run on the
    same path right after.  The old run's workers must write nothing into the new
    store."""
    workdir = Path(workdir)
    out = workdir / "over.zarr"
    job = slow_job(workdir, 48)
    with Cluster(workdir).start(2) as cluster:
        proc = start_mgapsp("run", *job, "-o", out, "--overwrite", "--directed",
                            "--scheduler-file", cluster.file)
        before = wait_for_flags(out, 2, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        second = mgapsp("run", *job, "-o", out, "--overwrite", "--undirected",
                        "--scheduler-file", cluster.file)
    return {"flags_at_kill": before, "second": second, "verify": verify_all(out),
            "store": out}


def store_deleted_mid_job(workdir: Path) -> dict:
    """The store removed (``rm -rf``) while the job writes it; the job run again."""
    workdir = Path(workdir)
    out = workdir / "gone.zarr"
    job = slow_job(workdir)
    t0 = time.monotonic()
    proc = start_mgapsp("run", *job, "-o", out, "--workers", 2)
    wait_for_flags(out, 4, proc)
    for _ in range(50):     # a file written meanwhile into a folder not yet removed
        try:
            shutil.rmtree(out)
            break
        except OSError:
            time.sleep(0.05)
    result = finish(proc, t0)
    left = sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*")
                  if p.name != "sources.txt")
    return {"outcome": result, "left": left,
            "again": mgapsp("run", *job, "-o", out, "--workers", 2, "--overwrite"),
            "store": out}


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "200m"):
    """A small file system of its own at ``where`` (root only), unmounted after."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                   check=True, capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def read_only_mid_job(workdir: Path) -> dict:
    """The store's file system remounted read-only while the job writes it, then
    read-write again and the job resumed."""
    workdir = Path(workdir)
    job = slow_job(workdir)
    with tmpfs(workdir / "mnt") as mnt:
        out = mnt / "ro.zarr"
        t0 = time.monotonic()
        proc = start_mgapsp("run", *job, "-o", out, "--workers", 2)
        before = wait_for_flags(out, 4, proc)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        result = finish(proc, t0)
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        lock_left = (mnt / "ro.zarr.lock").exists()
        resumed = mgapsp("run", *job, "-o", out, "--workers", 2, "--resume")
        verified = verify_all(out)
    return {"outcome": result, "flags_at_remount": before, "lock_left": lock_left,
            "resumed": resumed, "verify": verified}


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root, with the capability)."""
    with tempfile.TemporaryDirectory() as d:
        try:
            with tmpfs(Path(d), "1m"):
                return True
        except (subprocess.CalledProcessError, OSError):
            return False


def overwrite_foreign(workdir: Path, kind: str) -> dict:
    """``--overwrite`` aimed at a regular file or at someone else's Zarr group."""
    workdir = Path(workdir)
    target = workdir / f"theirs-{kind}"
    if kind == "file":
        target.write_bytes(os.urandom(4096))
    else:
        import zarr

        g = zarr.open_group(target, mode="w")
        g.create_array("x", shape=(100,), dtype="f8")[:] = np.arange(100.0)
    before = _snapshot(target)
    result = mgapsp("run", DATA / "rome99.gr", "-o", target, "--overwrite", "--backend",
                    "cpu", "--workers", 1, "-q")
    return {"outcome": result, "unchanged": _snapshot(target) == before}


def _snapshot(path: Path) -> dict:
    path = Path(path)
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


#: damage done to a finished store, each to a different batch: (name, shards, action)
DAMAGE = {
    "shard deleted": (True, lambda s: os.remove(_shard(s, 1))),
    "shard emptied": (True, lambda s: open(_shard(s, 2), "wb").close()),
    "shard truncated": (True, lambda s: _truncate(_shard(s, 3))),
    "shard index flipped": (True, lambda s: _flip(_shard(s, 4), -12, 1)),
    "64 bytes of LZ4 data flipped": (True, lambda s: _flip(_shard(s, 5), 40, 64)),
    "predecessor shard flipped": (True, lambda s: _flip(_shard(s, 6, "predecessors"), 40, 8)),
    "shard copied over another": (True, lambda s: shutil.copyfile(_shard(s, 8),
                                                                   _shard(s, 9))),
    "flag deleted": (True, lambda s: os.remove(Path(s) / "batch_done" / "c" / "7")),
    "flag overwritten with garbage": (True, lambda s: (Path(s) / "batch_done" / "c" / "7")
                                      .write_bytes(b"xyz")),
    "partial file left": (True, lambda s: (_shard(s, 0).parent / "0.dead.partial")
                          .write_bytes(b"half")),
    "chunk file deleted": (False, lambda s: os.remove(Path(s) / "distances" / "c" / "1" / "0")),
    "chunk bytes flipped": (False, lambda s: _flip(Path(s) / "distances" / "c" / "2" / "0",
                                                   30, 16)),
}


def _shard(store, batch: int, array: str = "distances") -> Path:
    return Path(store) / array / "c" / str(batch) / "0"


def _truncate(path: Path) -> None:
    os.truncate(path, os.path.getsize(path) // 2)


def _flip(path: Path, offset: int, n: int) -> None:
    data = bytearray(Path(path).read_bytes())
    start = offset % len(data)
    for k in range(start, min(start + n, len(data))):
        data[k] ^= 0xA5
    Path(path).write_bytes(bytes(data))


def damaged_store(workdir: Path, name: str) -> dict:
    """A finished store damaged one way: what ``verify``, ``info``, ``path`` say, then
    ``repair`` and ``verify --all``."""
    workdir = Path(workdir)
    shards, damage = DAMAGE[name]
    out = workdir / "damaged.zarr"
    made = mgapsp("run", DATA / "rome99.gr", "-o", out, "--backend", "cpu", "--workers", 2,
                  "--batch-size", 256, "--predecessors", "-q", "--overwrite",
                  "--shards" if shards else "--no-shards")
    assert made.rc == 0, made.err
    damage(out)
    return {"verify": mgapsp("verify", out, "--samples", 8), "info": mgapsp("info", out),
            "repair": mgapsp("repair", out, "--backend", "cpu", "--workers", 2),
            "verify_all": verify_all(out),
            "partials": [str(p) for p in out.rglob("*.partial")]}


def misplaced_shards(workdir: Path) -> dict:
    """Shards whose bytes are whole but in the wrong place: two of a store swapped, one
    copied from another store of the same job.  What ``info``, a read, ``--resume`` and
    ``verify --all`` then say."""
    workdir = Path(workdir)
    job = [DATA / "rome99.gr", "--backend", "cpu", "--workers", 2, "--batch-size", 256,
           "--predecessors", "-q"]
    a, b = workdir / "a.zarr", workdir / "b.zarr"
    for out in (a, b):
        made = mgapsp("run", *job, "-o", out)
        assert made.rc == 0, made.err
    first, second = _shard(a, 2), _shard(a, 3)
    swap = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(swap)
    shutil.copyfile(_shard(b, 5), _shard(a, 5))
    return {"info": mgapsp("info", a), "read": mgapsp("path", a, 513, 5),
            "resume": mgapsp("run", *job, "-o", a, "--resume"), "verify_all": verify_all(a)}


def huge_declared_counts(workdir: Path) -> dict:
    """Two-line files declaring two billion vertices, in every format."""
    workdir = Path(workdir)
    files = {
        "snap": ("big.txt", "0 1\n2000000000 1\n"),
        "dimacs": ("big.gr", "p sp 2000000000 1\na 1 2 1\n"),
        "pace": ("big-tw.gr", "p tw 2000000000 1\n1 2\n"),
        "mtx": ("big.mtx", "%%MatrixMarket matrix coordinate real general\n"
                           "2000000000 2000000000 1\n1 2 1.0\n"),
        "mtx-array": ("bigarr.mtx", "%%MatrixMarket matrix array real general\n"
                                    "2000000000 2000000000\n1.0\n"),
        "tntp": ("big_net.tntp", "<NUMBER OF ZONES> 1\n<NUMBER OF NODES> 2000000000\n"
                                 "<FIRST THRU NODE> 1\n<NUMBER OF LINKS> 1\n"
                                 "<END OF METADATA>\n~ init term cap len\n1 2 1 1 ;\n"),
        "tsplib": ("big.tsp", "NAME: big\nTYPE: TSP\nDIMENSION: 2000000000\n"
                              "EDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: FULL_MATRIX\n"
                              "EDGE_WEIGHT_SECTION\n0 1\n1 0\nEOF\n"),
    }
    results = {}
    for fmt, (name, text) in files.items():
        path = workdir / name
        path.write_text(text)
        out = workdir / f"{fmt}.zarr"
        # the peak from /proc (VmHWM, this process image's own): ru_maxrss carries
        # over from the forked parent, a test runner of a gigabyte
        code = ("import resource, sys, mgapsp\n"
                "try:\n    g = mgapsp.read_graph(sys.argv[1])\n    msg = f'read n={g.n}'\n"
                "except mgapsp.MgapspError as e:\n    msg = 'error: ' + str(e)\n"
                "print(msg)\n"
                "try:\n"
                "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
                "    print(int(hwm[0].split()[1]))\n"
                "except (OSError, IndexError):\n"
                "    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
        p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                           text=True, env=env(), timeout=120)
        lines = p.stdout.splitlines()
        results[fmt] = {"read": lines[0] if lines else p.stderr[-300:],
                        "max_rss_mb": int(lines[1]) / 1024 if len(lines) > 1 else None,
                        "cli": mgapsp("run", path, "-o", out, "--backend", "cpu",
                                      "--workers", 1, "-q"),
                        "store_made": out.exists()}
    return results


# -- the campaign -------------------------------------------------------------------


# -- issue 56: every byte vouched for ---------------------------------------------------
def _rome_store(out: Path, *extra) -> None:
    made = mgapsp("run", DATA / "rome99.gr", "-o", out, "--backend", "cpu", "-q",
                  "--no-dashboard", "--workers", 1, *extra)
    assert made.rc == 0, made.err


def _sources(workdir: Path, first: int, count: int, name: str = "sources.txt") -> Path:
    src = Path(workdir) / name
    src.write_text("\n".join(map(str, range(first, first + count))))
    return src


def _swap(folder: Path, a: str = "0", b: str = "1") -> None:
    (folder / a).rename(folder / "swap")
    (folder / b).rename(folder / a)
    (folder / "swap").rename(folder / b)


def metadata_changed(workdir: Path, change: dict) -> dict:
    """``distances/zarr.json`` edited (``change``: its dtype, its fill value): what
    info, repair, verify and --resume say."""
    import json

    workdir = Path(workdir)
    out, src = workdir / "meta.zarr", _sources(workdir, 1, 64)
    _rome_store(out, "--sources", src)
    meta = out / "distances" / "zarr.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), **change}))
    return {"info": mgapsp("info", out), "repair": mgapsp("repair", out),
            "verify": mgapsp("verify", out),
            "resume": mgapsp("run", DATA / "rome99.gr", "-o", out, "--resume", "--sources",
                             src, "--backend", "cpu", "-q", "--no-dashboard")}


def labels_copied(workdir: Path) -> dict:
    """The source labels of another store of the same graph copied in; another
    store's vertex labels reversed: what verify and path say."""
    import zarr

    workdir = Path(workdir)
    a, b = workdir / "a.zarr", workdir / "b.zarr"
    for out, first in ((a, 1), (b, 101)):
        _rome_store(out, "--sources", _sources(workdir, first, 64, f"{out.stem}.txt"),
                    "--predecessors")
    for name in ("source", "source_index"):
        shutil.rmtree(a / name)
        shutil.copytree(b / name, a / name)
    vertex = zarr.open_array(b / "vertex", mode="r+")
    vertex[:] = vertex[:][::-1]
    return {"verify": mgapsp("verify", a), "path": mgapsp("path", a, "1", "100"),
            "reversed": mgapsp("path", b, "101", "100")}


def chunk_files_moved(workdir: Path) -> dict:
    """Without shards, two batches' chunk files swapped together with their records of
    CRCs: what a read, info and repair say, and the rows after repair."""
    workdir = Path(workdir)
    out = workdir / "files.zarr"
    _rome_store(out, "--sources", _sources(workdir, 1, 128), "--no-shards",
                "--batch-size", 64)
    before = read_rows(out)
    for folder in (out / "distances" / "c", out / "chunk_crc" / "distances" / "c"):
        _swap(folder)
    reads = {"read": python_read(out, "r.distances()"),
             "raw": python_read(out, "r['distances'][:64]"),
             "xarray": python_read(out, "r.to_xarray()"), "info": mgapsp("info", out)}
    return {**reads, "repair": mgapsp("repair", out), "same_after": read_rows(out) == before}


def metric_chunks_swapped(workdir: Path, with_record: bool) -> dict:
    """Two batches' closeness chunks swapped (and their records of CRCs, or not)."""
    workdir = Path(workdir)
    out = workdir / "metrics.zarr"
    _rome_store(out, "--sources", _sources(workdir, 1, 128), "--batch-size", 64,
                "--metrics", "closeness,eccentricity", "--no-distances")
    before = read_rows(out, "r.metric('closeness')")
    _swap(out / "closeness" / "c")
    if with_record:
        _swap(out / "chunk_crc" / "metrics" / "c")
    return {"read": python_read(out, "r.metric('closeness')"),
            "resume_check": mgapsp("info", out), "repair": mgapsp("repair", out),
            "same_after": read_rows(out, "r.metric('closeness')") == before}


def shards_to_xarray(workdir: Path) -> dict:
    """Two batches' shards swapped, read through ``Result.to_xarray()``."""
    workdir = Path(workdir)
    out = workdir / "xr.zarr"
    _rome_store(out, "--sources", _sources(workdir, 1, 128), "--batch-size", 64)
    _swap(out / "distances" / "c")
    return {"read": python_read(out, "r.to_xarray()['distances'].values")}


def stored_graph_damaged(workdir: Path, how: str) -> dict:
    """The graph a store keeps, its weights' bytes overwritten or other values written
    through Zarr: what repair and verify say."""
    import zarr

    workdir = Path(workdir)
    out = workdir / "graph.zarr"
    _rome_store(out)
    if how == "bytes":
        for chunk in (out / "graph" / "weights" / "c").rglob("*"):
            if chunk.is_file():
                chunk.write_bytes(b"\x07" * chunk.stat().st_size)
    else:
        weights = zarr.open_array(out / "graph" / "weights", mode="r+")
        weights[:5] = weights[:5] + 1
    return {"repair": mgapsp("repair", out), "verify": mgapsp("verify", out)}


def python_read(out: Path, expr: str) -> Outcome:
    """``expr`` of ``r = mgapsp.Result(out)`` in a process of its own: its error's last
    line, as a user's script would show it."""
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-c", f"import mgapsp; r = mgapsp.Result({str(out)!r}); "
                        f"print(repr({expr})[:80])"], capture_output=True, text=True,
                       env=env(), cwd=ROOT, timeout=300)
    return Outcome(p.returncode, p.stdout, p.stderr, time.monotonic() - t)


def read_rows(out: Path, expr: str = "r.distances()") -> str:
    """A digest of what a read returns (for: the same after repair)."""
    r = python_read(out, f"__import__('hashlib').sha1(({expr}).tobytes()).hexdigest()")
    assert r.rc == 0, r.err
    return r.out.strip()


def main() -> int:
    rows: list[tuple[str, bool, str]] = []

    def record(name, ok, detail):
        rows.append((name, bool(ok), detail))
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)

    def scratch():
        return Path(tempfile.mkdtemp(prefix="mgapsp-faults-"))

    r = all_workers_killed(scratch(), replace=True)
    v = verify_all(r["store"])
    record("all workers killed, two new ones join", r["outcome"].rc == 0 and v.rc == 0,
           f"killed at {r['flags_at_kill']} batches; job exit {r['outcome'].rc}, "
           f"{r['seconds_after_kill']:.1f} s after the kill; verify --all exit {v.rc}")
    r = all_workers_killed(scratch(), replace=False)
    record("all workers killed, none back", r["outcome"].one_line_error,
           f"exit {r['outcome'].rc} after {r['seconds_after_kill']:.1f} s: "
           f"{r['outcome'].err_lines[-1:]}")
    r = one_worker_hung(scratch())
    v = verify_all(r["store"])
    record("one of two workers hung (SIGSTOP)", r["outcome"].rc == 0 and v.rc == 0,
           f"stopped at {r['flags_at_stop']} batches; job exit {r['outcome'].rc}, "
           f"{r['seconds_after_stop']:.1f} s after the stop; verify --all exit {v.rc}")
    r = worker_hung_at_start(scratch())
    v = verify_all(r["store"])
    record("one of two workers hung before --resume starts",
           r["outcome"].rc == 0 and v.rc == 0,
           f"job exit {r['outcome'].rc} in {r['seconds']:.1f} s; verify --all exit {v.rc}")
    r = hung = scheduler_hung(scratch())
    v = verify_all(r["store"])
    record("scheduler hung (SIGSTOP) mid-job",
           r["outcome"].one_line_error and r["resumed"].rc == 0 and v.rc == 0,
           f"stopped at {r['flags_at_stop']} batches; exit {r['outcome'].rc} "
           f"{r['seconds_after_stop']:.1f} s after the stop: {r['outcome'].err_lines[-1:]}; "
           f"--resume exit {r['resumed'].rc}; verify --all exit {v.rc}")
    r = scheduler_killed(scratch())
    record("scheduler killed mid-job", r["outcome"].one_line_error,
           f"exit {r['outcome'].rc}: {r['outcome'].err_lines[-1:]}")
    for first, second in (("--overwrite", "--resume"), ("--overwrite", "--overwrite")):
        r = second_run_while_first_runs(scratch(), first, second)
        v = verify_all(r["store"])
        record(f"{second} while a run is in progress",
               r["second"].one_line_error and "in use by run" in r["second"].err
               and r["first"].rc == 0 and v.rc == 0,
               f"second exit {r['second'].rc}: {r['second'].err_lines[-1:]}; first exit "
               f"{r['first'].rc}; verify --all exit {v.rc}")
    r = killed_client_then_overwrite(scratch())
    record("client killed, --overwrite --undirected on its store",
           r["second"].rc == 0 and r["verify"].rc == 0,
           f"killed at {r['flags_at_kill']} batches; second exit {r['second'].rc}; "
           f"verify --all exit {r['verify'].rc}")
    r = store_deleted_mid_job(scratch())
    record("store deleted mid-job", r["outcome"].one_line_error and not r["left"]
           and r["again"].rc == 0 and verify_all(r["store"]).rc == 0,
           f"{r['outcome'].err_lines[-1:]}; left behind: {r['left'] or 'nothing'}; "
           f"run again with --overwrite: exit {r['again'].rc}")
    if can_mount():
        r = read_only_mid_job(scratch())
        record("file system remounted read-only mid-job",
               r["outcome"].one_line_error and r["resumed"].rc == 0 and r["verify"].rc == 0,
               f"{r['outcome'].err_lines[-1:]}; lock left: {r['lock_left']}; --resume "
               f"exit {r['resumed'].rc}; verify --all exit {r['verify'].rc}")
    else:
        record("file system remounted read-only mid-job", True,
               "not run: this process may not mount a file system")
    for kind in ("file", "zarr"):
        r = overwrite_foreign(scratch(), kind)
        record(f"--overwrite on a foreign {kind}", r["outcome"].one_line_error and r["unchanged"],
               f"{r['outcome'].err_lines[-1:]}; bytes unchanged: {r['unchanged']}")
    for name in DAMAGE:
        r = damaged_store(scratch(), name)
        record(f"damage: {name}", r["repair"].rc == 0 and r["verify_all"].rc == 0
               and not r["partials"],
               f"verify exit {r['verify'].rc}, repair exit {r['repair'].rc}, "
               f"verify --all exit {r['verify_all'].rc}")
    r = misplaced_shards(scratch())
    record("shards swapped, one copied from another store",
           "damaged: 3 flagged batch(es)" in r["info"].out and r["read"].one_line_error
           and "damaged" in r["read"].err
           and r["resume"].rc == 0 and r["verify_all"].rc == 0,
           f"info: {[x for x in r['info'].out.splitlines() if 'damaged' in x][:1]}; "
           f"read exit {r['read'].rc}: {r['read'].err_lines[-1:]}; --resume exit "
           f"{r['resume'].rc}; verify --all exit {r['verify_all'].rc}")
    for fmt, r in huge_declared_counts(scratch()).items():
        ok = (r["cli"].one_line_error or r["cli"].rc == 0) and (r["max_rss_mb"] or 1e9) < 1024
        record(f"two billion vertices declared ({fmt})", ok and not (
            r["cli"].rc and r["store_made"]),
               f"{r['read'][:100]}; peak {r['max_rss_mb'] or 0:.0f} MB")
    # issue 56
    r = hung
    record("--resume --scheduler-file on a stopped scheduler", r["attach"].one_line_error
           and r["attach"].seconds < 30,
           f"exit {r['attach'].rc} after {r['attach'].seconds:.1f} s: "
           f"{r['attach'].err_lines[-1:]}")
    for change in ({"data_type": "int32", "fill_value": 0}, {"fill_value": 0.0}):
        r = metadata_changed(scratch(), change)
        record(f"distances/zarr.json changed: {change}",
               all(o.one_line_error and "zarr.json is not what" in o.err for o in r.values()),
               "; ".join(f"{k} exit {o.rc}" for k, o in r.items())
               + f": {r['info'].err_lines[-1:]}")
    r = labels_copied(scratch())
    record("source labels of another store; vertex labels reversed",
           all(o.one_line_error and "other values" in o.err for o in r.values()),
           "; ".join(f"{k} exit {o.rc}" for k, o in r.items())
           + f": {r['verify'].err_lines[-1:]}")
    r = chunk_files_moved(scratch())
    record("chunk files swapped with their CRC records (--no-shards)",
           r["read"].rc != 0 and "damaged" in r["read"].err
           and "2 flagged batch(es)" in r["info"].out and r["repair"].rc == 0
           and r["same_after"],
           f"read: {r['read'].err.strip().splitlines()[-1:]}; repair exit {r['repair'].rc}; "
           f"rows as before after repair: {r['same_after']}")
    for with_record in (False, True):
        r = metric_chunks_swapped(scratch(), with_record)
        record(f"closeness chunks swapped{' with their record' if with_record else ''}",
               r["read"].rc != 0 and "damaged" in r["read"].err
               and "2 damaged batch(es)" in r["repair"].out and r["same_after"],
               f"read: {r['read'].err.strip().splitlines()[-1:]}; repair: "
               f"{r['repair'].out.splitlines()[:1]}; as before: {r['same_after']}")
    r = shards_to_xarray(scratch())
    record("shards swapped, read through to_xarray",
           r["read"].rc != 0 and "damaged: batch 0" in r["read"].err,
           f"{r['read'].err.strip().splitlines()[-1:]}")
    for how in ("bytes", "values"):
        r = stored_graph_damaged(scratch(), how)
        record(f"the stored graph damaged ({how})",
               all(o.one_line_error and "give the graph again" in o.err for o in r.values()),
               f"{r['repair'].err_lines[-1:]}")
    failed = [name for name, ok, _ in rows if not ok]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} scenarios held"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
