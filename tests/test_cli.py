"""The command line as a user meets it: real subprocesses, real clusters, real stores."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

import mgapsp
from mgapsp.store import Store

from helpers import assert_distances_equal, scipy_distances

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "mgapsp.cli"]


def mgapsp_cli(*args, check=True, timeout=300, **kw):
    proc = subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"mgapsp {args} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def assert_one_line_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.slow
def test_run_info_verify_path(data_dir, tmp_path):
    out = tmp_path / "sioux.zarr"
    proc = mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", out, "--backend", "cpu",
                      "--workers", "2", "--predecessors", "--no-dashboard")
    assert "floyd-warshall on cpu" in proc.stdout and "24 rows" in proc.stdout  # dense: 13%
    graph = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    assert_distances_equal(zarr.open_group(out)["distances"][:], scipy_distances(graph),
                           dtype="float32")
    info = mgapsp_cli("info", out).stdout
    assert "n=24 m=76" in info and "24/24 rows" in info and "(complete)" in info
    assert "x 24, lz4, a file per batch (a shard of its chunks)" in info
    verify = mgapsp_cli("verify", out, "--all")
    assert "24 rows checked" in verify.stdout and "ok" in verify.stdout
    path = mgapsp_cli("path", out, 1, 20).stdout.splitlines()
    hops = [int(x) for x in path[0].split(" -> ")]
    assert hops[0] == 1 and hops[-1] == 20
    idx = graph.index_of(hops)
    length = graph.edge_weights(idx[:-1], idx[1:]).sum()
    assert length == pytest.approx(scipy_distances(graph, [0])[0, 19])
    assert f"distance {length:g}" in path[1]


@pytest.mark.slow
def test_verify_fails_on_a_corrupted_store(data_dir, tmp_path):
    out = tmp_path / "c.zarr"
    mgapsp_cli("run", data_dir / "ftv33.atsp", "-o", out, "--backend", "cpu",
               "--workers", "1", "--no-dashboard", "-q")
    # a wrong value in a whole, well-placed shard: only recomputing finds it
    from mgapsp.store import Store

    store = Store.open(out, mode="r+")
    dist = store.group["distances"][:]
    dist[3, 7] += 1
    store.write_block(0, dist)
    proc = mgapsp_cli("verify", out, "--all", check=False)
    assert proc.returncode == 1 and "1 rows differ (rows 3)" in proc.stdout
    # the same edit through Zarr rewrites the shard without its identity: damage
    zarr.open_group(out, mode="r+")["distances"][3, 7] = dist[3, 7] - 1
    proc = mgapsp_cli("verify", out, "--all", check=False)
    assert proc.returncode == 1 and "batch 0: damaged" in proc.stdout
    assert "no identity of this store" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("content,needles", [
    ("0 1 2.5\n1 2 abc\n", ["bad.txt:2", "abc"]),
    ("0 1 2.5\n1 2 nan\n", ["bad.txt:2", "nan"]),
    ("# only a comment\n", ["bad.txt", "no edges"]),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, content, needles):
    src = tmp_path / "bad.txt"
    src.write_text(content)
    out = tmp_path / "never.zarr"
    proc = mgapsp_cli("run", src, "-o", out, "--backend", "cpu", check=False)
    assert_one_line_error(proc, *needles)
    assert not out.exists()


@pytest.mark.slow
def test_unknown_format_and_missing_file(tmp_path):
    weird = tmp_path / "graph.xyz"
    weird.write_text("0 1\n")
    assert_one_line_error(mgapsp_cli("run", weird, "-o", tmp_path / "o.zarr", check=False),
                          "graph.xyz")
    assert_one_line_error(
        mgapsp_cli("run", tmp_path / "missing.gr", "-o", tmp_path / "o.zarr", check=False),
        "missing.gr")


@pytest.mark.slow
def test_negative_cycle_message(data_dir, tmp_path):
    out = tmp_path / "cycle.zarr"
    proc = mgapsp_cli("run", data_dir / "soc-sign-bitcoinalpha.csv", "-o", out,
                      "--backend", "cpu", "--workers", "1", "--no-dashboard", check=False)
    assert_one_line_error(proc, "negative cycle")
    cycle = [int(v) for v in proc.stderr.split(":", 2)[2].split("->")]
    assert cycle[0] == cycle[-1] and len(cycle) >= 2
    graph = mgapsp.read_graph(data_dir / "soc-sign-bitcoinalpha.csv")
    idx = graph.index_of(cycle)
    assert graph.edge_weights(idx[:-1], idx[1:]).sum() < 0
    assert not out.exists()


@pytest.mark.slow
def test_bad_sources_file(data_dir, tmp_path):
    srcs = tmp_path / "sources.txt"
    srcs.write_text("1\n2 3\n# comment\n99999\n")
    proc = mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", tmp_path / "o.zarr",
                      "--sources", srcs, check=False)
    assert_one_line_error(proc, "sources.txt:4", "99999")


@pytest.mark.slow
def test_existing_store_refused(data_dir, tmp_path):
    out = tmp_path / "e.zarr"
    args = ["run", data_dir / "gr17.tsp", "-o", out, "--backend", "cpu", "--workers", "1",
            "--no-dashboard", "-q"]
    mgapsp_cli(*args)
    assert_one_line_error(mgapsp_cli(*args, check=False), "already exists", "--resume")
    mgapsp_cli(*args, "--overwrite")


def _chunk_mtimes(store: Path, batches, batch_size):
    # distances/c/<row chunk>/<shard>: a row of chunks per batch, one shard
    return {b: sorted((p.name, p.stat().st_mtime_ns)
                      for p in (store / "distances" / "c" / str(b)).iterdir())
            for b in batches}


@pytest.mark.slow
def test_kill_then_resume(data_dir, tmp_path):
    """Kill a running job (driver and cluster), resume it, and check the result."""
    out = tmp_path / "gnutella.zarr"
    graph_file = data_dir / "p2p-Gnutella08.txt"
    args = ["run", graph_file, "-o", out, "--backend", "cpu", "--workers", "2",
            "--batch-size", "8", "--no-dashboard", "-q"]
    proc = subprocess.Popen(CLI + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 120
    done = 0
    try:
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if Store.exists(out):
                try:
                    done = int(Store.open(out).done_mask().sum())
                except Exception:  # the driver may be mid-write
                    continue
                if done >= 40:
                    break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert done >= 40, f"job did not progress: {proc.stderr.read().decode()}"
    store = Store.open(out)
    finished = np.flatnonzero(store.done_mask())
    n_batches = store.plan().n_batches
    assert 40 <= len(finished) < n_batches, "kill came too late to test resume"
    before = _chunk_mtimes(out, finished, 8)

    resumed = mgapsp_cli(*args, "--resume")
    assert f"{len(finished)} already done" in resumed.stdout, resumed.stdout
    after = _chunk_mtimes(out, finished, 8)
    assert after == before, "finished batches were recomputed"
    assert Store.open(out).done_mask().all()
    verify = mgapsp_cli("verify", out, "--all")
    assert "6,301 rows checked" in verify.stdout


@contextlib.contextmanager
def recipe_cluster(tmp_path, *extra):
    """cluster/start-cluster.sh on loopback with 2 CPU workers; yields the scheduler file."""
    sched = tmp_path / "scheduler.json"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["bash", str(REPO / "cluster" / "start-cluster.sh"), "-f",
                             str(sched), "-n", "2", "--cpu", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        deadline = time.time() + 60
        while not sched.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert sched.exists(), f"scheduler file never appeared: {proc.stdout.read1()}"
        yield sched, env
    finally:
        # the script may have ended already (it failed to start): its error, above,
        # is the one to report
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
def test_scheduler_file_recipe(data_dir, tmp_path):
    """cluster/start-cluster.sh on loopback with 2 CPU workers, then run against it:
    TLS by default, with credentials beside the scheduler file, which mgapsp run
    --scheduler-file finds there."""
    from distributed import Client

    from mgapsp.jobs.cluster import tls_security

    with recipe_cluster(tmp_path) as (sched, env):
        assert json.loads(sched.read_text())["address"].startswith("tls://")
        tls = Path(f"{sched}.tls")
        assert (tls / "key.pem").stat().st_mode & 0o777 == 0o600
        security = tls_security(*(str(tls / f) for f in ("ca.pem", "cert.pem", "key.pem")))
        with Client(scheduler_file=str(sched), security=security, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            assert len(client.scheduler_info()["workers"]) == 2
        out = tmp_path / "attached.zarr"
        run = mgapsp_cli("run", data_dir / "rome99.gr", "-o", out, "--scheduler-file",
                         sched, "--sources", _write_sources(tmp_path, range(1, 257)),
                         "--batch-size", "32", "--no-dashboard", "-q", env=env)
        assert "dijkstra on cpu" in run.stdout
        assert run.stdout.count(" batches, writing") == 2, run.stdout  # both took some
        assert "256 rows checked" in mgapsp_cli("verify", out, "--all").stdout


@pytest.mark.slow
def test_tls_cluster_recipe(data_dir, tmp_path):
    """A TLS cluster on loopback runs a job for a client with the certificates and
    refuses one without them."""
    from distributed import Client

    tls = tmp_path / "tls"
    with recipe_cluster(tmp_path, "--tls", str(tls)) as (sched, env):
        address = json.loads(sched.read_text())["address"]
        assert address.startswith("tls://")
        certs = ["--tls-ca-file", tls / "ca.pem", "--tls-cert", tls / "cert.pem",
                 "--tls-key", tls / "key.pem"]
        out = tmp_path / "tls.zarr"
        mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", out, "--scheduler-file",
                   sched, "--no-dashboard", "-q", *certs, env=env)
        assert "24 rows checked" in mgapsp_cli("verify", out, "--all").stdout
        # A client without certificates cannot talk to it, over TLS or plain TCP.
        with pytest.raises(TypeError, match="TLS"):
            Client(address, timeout=5)
        # (in a process of its own: the failed TLS client above may leave this one's
        # Distributed IO loop busy, and a second client's loop then fails to start)
        plain = subprocess.run(
            [sys.executable, "-c", "import sys\nfrom distributed import Client\ntry:\n"
             f"    Client({address.replace('tls://', 'tcp://')!r}, timeout=5)\n"
             "except (OSError, TimeoutError) as e:\n    sys.exit(3)"],
            capture_output=True, text=True, timeout=120)
        assert plain.returncode == 3, plain.stderr[-2000:]
        refused = mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o",
                             tmp_path / "no.zarr", "--scheduler-file", sched, "-q",
                             check=False, env=env, timeout=120)
        assert_one_line_error(refused, "uses TLS", "--tls-ca-file")
        assert not (tmp_path / "no.zarr").exists()
        missing = mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o",
                             tmp_path / "no.zarr", "--scheduler-file", tmp_path / "nope.json",
                             check=False, env=env)
        assert_one_line_error(missing, "nope.json")
    key_mode = (tls / "key.pem").stat().st_mode & 0o777
    assert key_mode == 0o600


@pytest.mark.slow
def test_plain_cluster_recipe_only_when_asked(data_dir, tmp_path):
    """--plain: plain TCP, no credentials made; --plain with --tls is refused."""
    with recipe_cluster(tmp_path, "--plain") as (sched, env):
        assert json.loads(sched.read_text())["address"].startswith("tcp://")
        assert not Path(f"{sched}.tls").exists()
        out = tmp_path / "plain.zarr"
        mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", out, "--scheduler-file",
                   sched, "--no-dashboard", "-q", env=env)
        assert "24 rows checked" in mgapsp_cli("verify", out, "--all").stdout
    both = subprocess.run(["bash", str(REPO / "cluster" / "start-cluster.sh"), "--plain",
                           "--tls", str(tmp_path / "t")], capture_output=True, text=True)
    assert both.returncode == 2 and "contradict" in both.stderr


def _write_sources(tmp_path, ids):
    path = tmp_path / "sources.txt"
    path.write_text("\n".join(str(i) for i in ids) + "\n")
    return path


@pytest.mark.slow
def test_job_too_large_for_memory(data_dir, tmp_path):
    """Floyd-Warshall on 264,346 vertices keeps 521 GiB of distances on its one
    worker: refused up front, with what would help."""
    out = tmp_path / "huge.zarr"
    proc = mgapsp_cli("run", data_dir / "NY.pace.gr.gz", "-o", out, "--backend", "cpu",
                      "--algorithm", "floyd-warshall", "--workers", "1", "--no-dashboard",
                      check=False)
    assert_one_line_error(proc, "floyd-warshall on 264346 vertices", "264346 rows",
                          "needs 52", "GiB", "available", "more workers")
    assert not out.exists()


@pytest.mark.slow
def test_sources_and_targets_files(data_dir, tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("1, 2\n24\n")
    dst = tmp_path / "dst.txt"
    dst.write_text("# origins to these zones\n5\n6 7\n")
    out = tmp_path / "od.zarr"
    mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", out, "--backend", "cpu",
               "--workers", "1", "--no-dashboard", "-q", "--sources", src, "--targets", dst,
               "--dtype", "float64", "--no-shards")
    graph = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    ref = scipy_distances(graph, [0, 1, 23])[:, [4, 5, 6]]
    assert_distances_equal(zarr.open_group(out)["distances"][:], ref)
    info = mgapsp_cli("info", out).stdout
    assert "3 sources x 3 targets" in info and "a file per chunk" in info
    assert (out / "distances" / "c" / "0" / "0").is_file()
    bad = tmp_path / "bad.txt"
    bad.write_text("5\nseven\n")
    proc = mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", tmp_path / "x.zarr",
                      "--targets", bad, check=False)
    assert_one_line_error(proc, "bad.txt:2", "target 'seven' is not a vertex")


@pytest.mark.slow
def test_performance_report(data_dir, tmp_path):
    report = tmp_path / "perf.html"
    mgapsp_cli("run", data_dir / "rome99.gr", "-o", tmp_path / "p.zarr", "--backend", "cpu",
               "--workers", "2", "--batch-size", "256", "-q", "--performance-report", report)
    html = report.read_text()
    assert "apsp-batch" in html and "<html" in html.lower()


@pytest.mark.slow
def test_gpus_option_needs_the_gpu_backend(data_dir, tmp_path):
    proc = mgapsp_cli("run", data_dir / "gr17.tsp", "-o", tmp_path / "g.zarr", "--backend",
                      "cpu", "--gpus", "0", check=False)
    assert_one_line_error(proc, "--gpus")


@pytest.mark.slow
def test_floyd_warshall_across_two_workers_summary(data_dir, tmp_path):
    """Every row by Floyd-Warshall on two workers: one slab of rows each, and the
    summary says so."""
    out = tmp_path / "fw.zarr"
    proc = mgapsp_cli("run", data_dir / "test_FW_1000.mtx", "-o", out, "--backend", "cpu",
                      "--workers", "2", "--algorithm", "floyd-warshall", "--batch-size",
                      "128", "--dtype", "float64", "--no-dashboard")
    assert "floyd-warshall: 2 slab(s) of rows, numpy-fp64, pivot rows exchanged " \
           "through dask" in proc.stdout, proc.stdout
    graph = mgapsp.read_graph(data_dir / "test_FW_1000.mtx")
    assert_distances_equal(zarr.open_group(out)["distances"][:], scipy_distances(graph))


# -- in process, through click's runner: the fast twins of the subprocess tests above ----
def _invoke(*args):
    from click.testing import CliRunner

    from mgapsp.cli import main

    try:
        runner = CliRunner(mix_stderr=False)      # click 8.1
    except TypeError:                             # click >= 8.2 keeps stderr apart
        runner = CliRunner()
    return runner.invoke(main, [str(a) for a in args])


def assert_one_line_result(result, *needles):
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_one_line_errors_in_process(data_dir, tmp_path):
    """The errors found before any cluster starts: bad input, unknown format, missing
    file, a bad sources file, --gpus without the gpu backend; nothing is written."""
    out = tmp_path / "never.zarr"
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 2.5\n1 2 abc\n")
    assert_one_line_result(_invoke("run", bad, "-o", out, "--backend", "cpu"),
                           "bad.txt:2", "abc")
    weird = tmp_path / "graph.xyz"
    weird.write_text("0 1\n")
    assert_one_line_result(_invoke("run", weird, "-o", out), "graph.xyz")
    assert_one_line_result(_invoke("run", tmp_path / "missing.gr", "-o", out), "missing.gr")
    srcs = tmp_path / "sources.txt"
    srcs.write_text("1\n2 3\n# comment\n99999\n")
    assert_one_line_result(_invoke("run", data_dir / "SiouxFalls_net.tntp", "-o", out,
                                   "--sources", srcs), "sources.txt:4", "99999")
    assert_one_line_result(_invoke("run", data_dir / "gr17.tsp", "-o", out, "--backend",
                                   "cpu", "--gpus", "0"), "--gpus")
    assert not out.exists()


def test_run_info_verify_path_in_process(cpu_client, data_dir, tmp_path):
    """run (attached to the session's cluster), info, verify and path; a second run into
    the store is refused; a negative cycle is named in one line and writes nothing."""
    sched = cpu_client.scheduler.address
    out = tmp_path / "gr17.zarr"
    args = ["run", data_dir / "gr17.tsp", "-o", out, "--scheduler", sched, "--predecessors",
            "--no-dashboard", "-q"]
    result = _invoke(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    assert "floyd-warshall on cpu" in result.output and "17 sources" in result.output
    # each worker's time split: writing (staging, files) and computing
    split = re.findall(r": \d+ batches, writing ([\d.]+) s \(staging ([\d.]+) s, files "
                       r"([\d.]+) s\), computing ([\d.]+) s", result.output)
    assert split, result.output
    for write, stage, files, _ in split:
        assert abs(float(write) - float(stage) - float(files)) <= 0.011
    assert_one_line_result(_invoke(*args), "already exists", "--resume")
    info = _invoke("info", out).output
    assert "17/17 rows" in info and "(complete)" in info
    verify = _invoke("verify", out, "--all")
    assert verify.exit_code == 0 and "17 rows checked" in verify.output
    graph = mgapsp.read_graph(data_dir / "gr17.tsp")
    hops_line, dist_line = _invoke("path", out, 1, 5).output.splitlines()
    hops = [int(x) for x in hops_line.split(" -> ")]
    assert hops[0] == 1 and hops[-1] == 5
    assert f"distance {scipy_distances(graph, [0])[0, 4]:g}" in dist_line
    cycle = tmp_path / "cycle.txt"
    cycle.write_text("0 1 1\n1 2 -3\n2 0 1\n2 3 1\n")
    assert_one_line_result(_invoke("run", cycle, "-o", tmp_path / "c.zarr", "--scheduler",
                                   sched, "--no-dashboard", "-q"), "negative cycle")
    assert not (tmp_path / "c.zarr").exists()


@pytest.mark.slow       # subprocesses
def test_python_m_mgapsp_is_the_command():
    """``python -m mgapsp`` is the ``mgapsp`` command (its version, its commands)."""
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("mgapsp, version "), proc
    assert proc.stdout.split()[-1] == mgapsp.__version__


@pytest.mark.slow
def test_ctrl_c_while_the_cluster_starts_is_one_line(data_dir, tmp_path):
    """Ctrl-C before the embedded cluster has started: one line and 130, as later (a
    cluster interrupted half started once printed a page of tracebacks at exit); then
    --resume computes SciPy's distances."""
    import psutil

    out = tmp_path / "rome.zarr"
    run = CLI + ["run", str(data_dir / "rome99.gr"), "-o", str(out), "--backend", "cpu",
                 "--workers", "2", "--no-dashboard"]
    # Ctrl-C as at a terminal: SIGINT's default action, whatever this process inherited
    proc = subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    me, t0 = psutil.Process(proc.pid), time.monotonic()

    def worker_started():       # a worker's process (not multiprocessing's tracker)
        try:
            return any("spawn_main" in " ".join(c.cmdline()) for c in me.children())
        except psutil.Error:    # a child gone while looked at
            return False
    # the cluster starts when its first worker process appears: interrupt it there
    while not worker_started() and proc.poll() is None and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["error: interrupted; continue the job with --resume"]
    mgapsp_cli(*run[3:], "--resume")
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    assert_distances_equal(zarr.open_group(out)["distances"][:], scipy_distances(graph),
                           dtype="float32")
