"""Stores in object storage (``s3://``) against a real S3-protocol server started here
(moto's server mode, :mod:`s3_local`): a job on a real Dask cluster, resume, verify,
repair, the lock by conditional writes, reading back with xarray, and the server
restarted while a job writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("obstore", reason="obstore (the s3 extra) is not installed")
pytest.importorskip("moto.server", reason="moto[server] (the test extra) is not installed")

import dask  # noqa: E402

import mgapsp  # noqa: E402
from helpers import scipy_distances  # noqa: E402
from mgapsp.errors import StoreError  # noqa: E402
from mgapsp.readers import read_graph  # noqa: E402
from mgapsp.store import StoreLock, damaged_batches, store_state  # noqa: E402
from mgapsp.store.objects import bucket  # noqa: E402
from s3_local import S3Server  # noqa: E402

pytestmark = pytest.mark.s3
BUCKET = "mgapsp-test"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The server, and this process's environment pointing at it (set before any
    cluster of this module starts, so that its workers inherit it)."""
    server = S3Server(tmp_path_factory.mktemp("s3")).start()
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    try:
        server.create_bucket(BUCKET)
        yield server
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def s3_client(s3):
    """A real LocalCluster of two worker processes that reach the server."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster:
        with Client(cluster) as client:
            yield client


@pytest.fixture(scope="module")
def rome(data_dir):
    graph = read_graph(data_dir / "rome99.gr")
    return graph, scipy_distances(graph, np.arange(graph.n))


def url(name: str) -> str:
    return f"s3://{BUCKET}/runs/{name}.zarr"


def shards(b) -> int:
    return len([m for m in b.list("distances") if "/c/" in m.key])


def wait_for_shards(b, count: int, running) -> int:
    """Wait (up to two minutes, while ``running()``) until ``count`` shards are
    stored; the number stored."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and running() and shards(b) < count:
        time.sleep(0.05)
    return shards(b)


def assert_stored(out, ref) -> None:
    """The store at ``out`` holds SciPy's distances, and ``mgapsp verify --all`` says
    so too."""
    np.testing.assert_array_equal(mgapsp.Result(out)["distances"][:], ref.astype(np.float32))
    check = cli("verify", out, "--all")
    assert check.returncode == 0, check.stdout + check.stderr


def cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "mgapsp", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_a_job_into_object_storage_equals_scipy_and_reads_back_by_label(s3_client, rome):
    graph, ref = rome
    out = url("job")
    res = mgapsp.apsp(graph, out=out, client=s3_client, backend="cpu", batch_size=512)
    objects = {m.key: m for m in bucket(out).list()}
    shards = sorted(k for k in objects if k.startswith("distances/c/"))
    assert shards == [f"distances/c/{b}/0" for b in range(7)]   # a shard per batch
    assert not [k for k in objects if k.endswith(".partial")]
    assert store_state(out) == "ready"
    ds = res.to_xarray()
    labels = graph.labels
    got = float(ds.distances.sel(source=labels[10], target=labels[2000]))
    assert got == ref[10, 2000]
    info = cli("info", out)
    assert info.returncode == 0 and out in info.stdout and "complete" in info.stdout
    assert_stored(out, ref)


@pytest.mark.slow
def test_a_few_rows_of_a_planes_store_read_by_ranges(s3_client, rome, monkeypatch):
    """A few rows of a planes store in object storage: each chunk's bytes by a ranged
    read through its shard's index, only the blocks the rows need decoded."""
    from mgapsp.store import planes
    from mgapsp.store import rows as module

    graph, ref = rome
    out = url("planes")
    mgapsp.apsp(graph, out=out, client=s3_client, backend="cpu", batch_size=512,
                compression="planes")
    decoded = []
    monkeypatch.setattr(module, "decode_rows", lambda frame, rows, buf: decoded.append(
        len(rows)) or planes.decode_rows(frame, rows, buf))
    res = mgapsp.open(out)
    labels = graph.labels
    got = res.distances([labels[10], labels[2900], labels[11]])
    np.testing.assert_array_equal(got, ref[[10, 2900, 11]].astype(np.float32))
    assert res.distance(labels[700], labels[5]) == ref[700, 5]
    assert decoded and max(decoded) <= 2


@pytest.mark.slow
def test_a_job_stopped_midway_resumes_and_verifies(s3, rome, data_dir):
    """A CLI job killed while it writes; ``--resume`` computes only what is missing."""
    graph, ref = rome
    out = url("killed")
    src = data_dir / "rome99.gr"
    job = subprocess.Popen([sys.executable, "-m", "mgapsp", "run", str(src), "-o", out,
                            "--backend", "cpu", "--batch-size", "64", "--workers", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    b = bucket(out)
    wait_for_shards(b, 5, lambda: job.poll() is None)
    job.kill()
    job.wait()
    stored = shards(b)
    assert 5 <= stored < 53, f"not killed mid-job ({stored} of 53 shards)"
    again = cli("run", str(src), "-o", out, "--resume", "--backend", "cpu",
                "--batch-size", "64", "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert_stored(out, ref)


@pytest.mark.slow
def test_a_damaged_shard_is_found_and_repaired(s3, rome):
    graph, ref = rome
    out = url("damaged")
    mgapsp.apsp(graph, out=out, backend="cpu", batch_size=1024)
    b = bucket(out)
    key = "distances/c/2/0"
    whole = b.get(key)
    b.put(key, whole[: len(whole) // 2])            # truncated, as a torn upload
    store = mgapsp.Result(out).store
    assert list(damaged_batches(store)) == [2]
    fixed = cli("repair", out)
    assert fixed.returncode == 0, fixed.stderr
    assert damaged_batches(mgapsp.Result(out).store) == {}
    assert_stored(out, ref)


@pytest.mark.slow
def test_the_lock_is_one_runs_and_a_stale_one_goes_to_one_taker(s3):
    out = url("locked")
    first = StoreLock(out, "run-a").acquire()
    try:
        with pytest.raises(StoreError, match="is in use by run run-a"):
            StoreLock(out, "run-b").acquire()
        assert first.holder()["run"] == "run-a"
    finally:
        first.release()
    assert bucket(out).head(at=bucket(out).beside(".lock")) is None
    # a lock of a run on another host that stopped refreshing it
    b = bucket(out)
    b.put("", json.dumps({"run": "gone", "host": "elsewhere", "pid": 1}).encode(),
          at=b.beside(".lock"))
    with dask.config.set({"mgapsp.store.lock-stale": 1}):
        time.sleep(2.2)
        won, lost = [], []

        def take(run):
            try:
                won.append(StoreLock(out, run).acquire())
            except StoreError as exc:
                lost.append(str(exc))

        threads = [threading.Thread(target=take, args=(f"taker-{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, (won, lost)
        assert all("in use by run taker-" in m for m in lost), lost
        holder = won[0]
        # a run that took it over: the old holder's next refresh sees it lost
        b.put("", json.dumps({"run": "intruder", "host": "elsewhere"}).encode(),
              at=b.beside(".lock"))
        time.sleep(1.5)
        assert holder.lost and "intruder" in holder.lost
        with pytest.raises(StoreError, match="intruder"):
            holder.check()
        holder.release()
    b.delete(at=b.beside(".lock"))


def test_overwrite_deletes_only_what_mgapsp_made(s3, rome):
    graph, _ = rome
    out = url("foreign")
    mgapsp.apsp(graph, sources=graph.labels[:10], out=out, backend="cpu")
    bucket(out).put("notes.txt", b"mine")
    with pytest.raises(StoreError, match="notes.txt"):
        mgapsp.apsp(graph, sources=graph.labels[:10], out=out, backend="cpu",
                    overwrite=True)
    assert bucket(out).get("notes.txt") == b"mine"
    assert mgapsp.Result(out)["distances"].shape == (10, graph.n)
    with pytest.raises(StoreError, match="not a bucket's root|folder of its own"):
        StoreLock(f"s3://{BUCKET}", "x")


@pytest.mark.slow
def test_a_server_restart_mid_job_is_ridden_out(rome, tmp_path, monkeypatch):
    """The server killed and started again (its objects put back) while a job
    writes: the writers' requests are retried through the outage, and the job ends
    whole.  A server of its own, whose recording holds this job's requests alone."""
    from distributed import Client, LocalCluster

    graph, ref = rome
    server = S3Server(tmp_path).start()
    try:
        for k, v in server.env.items():
            monkeypatch.setenv(k, v)
        server.create_bucket("mgapsp-restart")
        out = "s3://mgapsp-restart/job.zarr"
        done = {}
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None, host="127.0.0.1") as cluster, \
                Client(cluster) as client:

            def job():
                try:
                    done["result"] = mgapsp.apsp(graph, out=out, client=client,
                                                 backend="cpu", batch_size=64)
                except Exception as exc:        # reported by the assertion below
                    done["error"] = exc

            t = threading.Thread(target=job)
            t.start()
            before = wait_for_shards(bucket(out), 5, t.is_alive)
            server.restart(down=2.0)
            t.join(timeout=300)
        assert not t.is_alive() and "error" not in done, done.get("error")
        assert 5 <= before < 53, f"the restart came after the job ({before} of 53 shards)"
        assert_stored(out, ref)
    finally:
        server.stop()


@pytest.mark.slow
def test_what_goes_wrong_with_the_server_is_said_in_the_user_s_terms(s3, data_dir,
                                                                      tmp_path):
    """Issue 51, item 10: a missing bucket, missing credentials, a plain-HTTP endpoint
    without AWS_ALLOW_HTTP and a server that is down each end in one line that says
    so; the retries against a server that is down last the configured window."""
    src = tmp_path / "src.txt"
    src.write_text("1 2 3")
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}

    def run(url, **env):
        proc = subprocess.run(
            [sys.executable, "-m", "mgapsp", "run", str(data_dir / "rome99.gr"), "-o", url,
             "--backend", "cpu", "--no-dashboard", "-q", "--sources", str(src)],
            capture_output=True, text=True, env={**base, **env}, timeout=300)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        return proc.stderr.strip().splitlines()[-1]

    line = run("s3://no-such-bucket/out.zarr", **s3.env)
    assert "the bucket 'no-such-bucket' does not exist" in line, line
    no_keys = {k: v for k, v in s3.env.items() if not k.startswith("AWS_SECRET")
               and k != "AWS_ACCESS_KEY_ID"}
    line = run(f"s3://{BUCKET}/keys.zarr", **no_keys)
    assert "no credentials: set AWS_ACCESS_KEY_ID" in line, line
    no_http = {k: v for k, v in s3.env.items() if k != "AWS_ALLOW_HTTP"}
    line = run(f"s3://{BUCKET}/http.zarr", **no_http)
    assert "is plain HTTP: set AWS_ALLOW_HTTP=true" in line, line
    from s3_local import free_port

    down = {**s3.env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
            "DASK_MGAPSP__STORE__OBJECT_RETRY_SECONDS": "3"}
    line = run(f"s3://{BUCKET}/down.zarr", **down)
    assert "the server does not answer (tried for 3.0 s)" in line, line


@pytest.mark.slow
def test_a_server_that_stops_answering_for_the_flags_ends_resume_in_one_line(
        s3, data_dir, tmp_path):
    """Issue 56, item 7: a server that still answers for the metadata but not for the
    batches' flags is no damage: --resume, info and verify end in one line within the
    retry window, not a read per flag each with its own retries (27 minutes and more
    for a job of 420 batches), and nothing is recomputed or written."""
    from s3_local import FailingProxy

    out = url("flags-gone")
    src = tmp_path / "sources.txt"
    src.write_text("\n".join(str(s) for s in range(1, 121)))
    job = [str(data_dir / "rome99.gr"), "-o", out, "--backend", "cpu", "--no-dashboard",
           "-q", "--batch-size", "2", "--sources", str(src)]
    made = cli("run", *job, "--workers", "2")
    assert made.returncode == 0, made.stderr
    b = bucket(out)
    before = sorted((m.key, m.size) for m in b.list())
    proxy = FailingProxy(s3.endpoint, lambda path: "/batch_done/c/" in path)
    try:
        env = {"AWS_ENDPOINT_URL": proxy.endpoint,
               "DASK_MGAPSP__STORE__OBJECT_RETRY_SECONDS": "2"}
        for args in (["run", *job, "--resume"], ["info", out], ["verify", out]):
            t = time.monotonic()
            proc = cli(*args, env=env, timeout=120)
            seconds = time.monotonic() - t
            lines = proc.stderr.strip().splitlines()
            assert proc.returncode != 0 and len(lines) == 1, (args[0], proc.stderr)
            assert "cannot read it in the object store: the server does not answer" \
                in lines[0] or "503" in lines[0], lines[0]
            assert seconds < 2 * 3 + 20, (args[0], seconds)
    finally:
        proxy.close()
    assert sorted((m.key, m.size) for m in b.list()) == before
