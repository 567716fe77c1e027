"""Reliability: no job hangs, one run per store, damage found and repaired, one line.

The scenarios are in ``tests/faults.py`` (real scheduler and worker processes, the
``mgapsp`` command, SIGKILLs, damaged files); a maintainer runs them all with
``python tests/faults.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import dask
import numpy as np
import pytest
import zarr

import faults
import mgapsp
from mgapsp import StoreError
from mgapsp.jobs.driver import run_job
from mgapsp.jobs.tasks import run_batch
from mgapsp.store import Store, StoreLock, damaged_batches, new_run_id
from mgapsp.store.lock import process_start

from helpers import assert_distances_equal, scipy_distances


@pytest.fixture(scope="module")
def rome(data_dir):
    return mgapsp.read_graph(data_dir / "rome99.gr")


def _store(graph, client, path, **kw):
    kw.setdefault("batch_size", 256)
    run_job(graph, path, client, dtype="float64", **kw)
    return Store.open(path)


# -- progress or a clear end ------------------------------------------------------

@pytest.mark.slow
def test_all_workers_killed_and_replaced_the_job_completes(tmp_path):
    r = faults.all_workers_killed(tmp_path, replace=True)
    assert 4 <= r["flags_at_kill"] < 48, "the workers were not killed mid-job"
    assert r["outcome"].rc == 0, r["outcome"].err
    assert faults.verify_all(r["store"]).rc == 0


@pytest.mark.slow
def test_all_workers_killed_none_back_one_line_within_the_wait(tmp_path):
    r = faults.all_workers_killed(tmp_path, replace=False)
    assert r["flags_at_kill"] < 48
    assert r["outcome"].one_line_error, r["outcome"].err
    assert "none joined within 8 s" in r["outcome"].err
    assert "--resume" in r["outcome"].err
    assert r["seconds_after_kill"] < 8 + 20


@pytest.mark.slow
def test_a_hung_worker_is_closed_and_the_job_completes(tmp_path):
    """A worker that stops answering (SIGSTOP) is closed once its heartbeats are
    mgapsp.cluster.hung-worker seconds old; its batches run on the other, and the job
    ends within the stall timeout plus 30 s with every row right."""
    r = faults.one_worker_hung(tmp_path, hung_after=5, stall=10)
    assert r["flags_at_stop"] < 48
    assert r["outcome"].rc == 0, r["outcome"].err
    assert r["seconds_after_stop"] < 10 + 30
    assert faults.verify_all(r["store"]).rc == 0


@pytest.mark.slow
def test_a_worker_hung_before_the_job_starts_is_closed(tmp_path):
    """--resume beside a SIGSTOPped worker: the job's first calls, which wait for
    every worker (its settings, the probe), have the scheduler close it once its
    heartbeats are mgapsp.cluster.hung-worker seconds old (it waited 335 s for Dask's
    worker TTL before); the job completes on the other worker."""
    r = faults.worker_hung_at_start(tmp_path, hung_after=5, stall=10)
    assert r["outcome"].rc == 0, r["outcome"].err
    assert r["seconds"] < 5 + 30
    assert faults.verify_all(r["store"]).rc == 0


@pytest.mark.slow
def test_a_hung_scheduler_ends_the_job_in_one_line(tmp_path):
    """A scheduler that stops answering (SIGSTOP): the job ends within the stall
    timeout plus 30 s, in one line; so does a --resume that attaches to it, within the
    connect timeout; the stored batches stand, and --resume finishes the job with every
    row right."""
    r = faults.scheduler_hung(tmp_path, stall=10)
    assert r["flags_at_stop"] < 48
    assert r["outcome"].one_line_error, r["outcome"].err
    assert "lost the Dask scheduler" in r["outcome"].err
    assert r["seconds_after_stop"] < 10 + 30
    # issue 56 item 6: --resume --scheduler-file on the stopped scheduler had waited
    # in Client() for good (900 s and more)
    assert r["attach"].one_line_error, r["attach"].err
    assert "cannot connect to the Dask scheduler" in r["attach"].err
    assert r["attach"].seconds < 5 + 5 + 20
    assert r["resumed"].rc == 0, r["resumed"].err
    assert "already done" in r["resumed"].out
    assert faults.verify_all(r["store"]).rc == 0


@pytest.mark.slow
def test_scheduler_killed_one_line(tmp_path):
    r = faults.scheduler_killed(tmp_path)
    assert r["flags_at_kill"] < 48
    assert r["outcome"].one_line_error, r["outcome"].err
    assert "lost the Dask scheduler" in r["outcome"].err


@pytest.mark.slow       # kills the cluster's workers
def test_workers_lost_with_nannies_the_job_completes(cpu_client, rome, tmp_path):
    """Every worker of a LocalCluster killed mid-job: the nannies restart them and
    Dask reschedules the batches onto the new ones."""
    import signal

    out = tmp_path / "nanny.zarr"
    pids = list(cpu_client.run(os.getpid).values())
    killed = []

    def kill_once(report, done, total):
        if not killed and done >= 256 * 2:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed.append(done)

    run_job(rome, out, cpu_client, dtype="float64", batch_size=64, on_progress=kill_once)
    assert killed and killed[0] < rome.n
    cpu_client.wait_for_workers(2, timeout=60)
    got = Store.open(out).group["distances"][:]
    assert_distances_equal(got, scipy_distances(rome))


@pytest.mark.slow       # waits for the stall timeout
@pytest.mark.parametrize("algorithm, stalled", [
    ("dijkstra", "no batch finished"),
    ("phast", "the contraction hierarchy was not built")])     # a task before the batches
def test_the_watchdog_ends_a_job_that_stalls(cpu_client, rome, tmp_path, algorithm,
                                             stalled):
    """Nothing finishes within mgapsp.jobs.stall-timeout: one error, not a hang."""
    import dask

    # a worker that holds its only thread: the batches wait behind it
    def hold(seconds):
        time.sleep(seconds)

    # every worker, once the cluster has settled (an earlier test's killed workers are
    # restarted by their nannies: one that joined later would run the batches)
    workers, since, deadline = None, time.monotonic(), time.monotonic() + 60
    while (time.monotonic() - since < 1.0 or len(workers) != 2) and \
            time.monotonic() < deadline:
        now = set(cpu_client.scheduler_info(n_workers=-1)["workers"])
        if now != workers:
            workers, since = now, time.monotonic()
        time.sleep(0.1)
    blockers = [cpu_client.submit(hold, 20, pure=False, workers=[w]) for w in workers]
    try:
        with dask.config.set({"mgapsp.jobs.stall-timeout": 2}):
            # the watchdog's own words: it stopped the job, not the blockers' end
            with pytest.raises(mgapsp.MgapspError, match=f"{stalled} in 2 s"):
                run_job(rome, tmp_path / "stall.zarr", cpu_client, batch_size=256,
                        algorithm=algorithm, backend="cpu")
    finally:
        cpu_client.cancel(blockers)


# -- one run per store --------------------------------------------------------------

@pytest.mark.slow       # waits for the lock
def test_a_second_run_on_a_locked_store_is_refused(cpu_client, rome, tmp_path):
    out = tmp_path / "locked.zarr"
    with StoreLock(out, "otherrun0001"):
        with pytest.raises(StoreError, match="in use by run otherrun0001"):
            run_job(rome, out, cpu_client, batch_size=256)
    assert not out.exists()
    run_job(rome, out, cpu_client, batch_size=256)     # released: it runs
    assert not StoreLock(out, "x").path.exists()


def test_odd_store_paths_and_locks_are_one_line(cpu_client, rome, tmp_path):
    """A file system's root as the store, and a lock file that holds no run's record
    (JSON of another shape): one StoreError each, naming what to do, nothing written."""
    with pytest.raises(StoreError, match="not a file system's root"):
        run_job(rome, "/", cpu_client, batch_size=256)
    out = tmp_path / "s.zarr"
    Path(f"{out}.lock").write_text("[1, 2]")
    with pytest.raises(StoreError, match="holds no run's record.*delete it"):
        run_job(rome, out, cpu_client, batch_size=256)
    assert not out.exists()
    assert StoreLock(out, "x").holder() == {}


def test_a_stale_lock_is_taken_over(cpu_client, rome, tmp_path):
    out = tmp_path / "stale.zarr"
    lock = StoreLock(out, "x").path
    # a run of this host whose process has ended
    lock.write_text(json.dumps({"run": "dead", "host": socket.gethostname(),
                                "pid": 2**22 + 12345}))
    run_job(rome, out, cpu_client, batch_size=256)
    assert Store.open(out).done_mask().all()
    # another host's run: alive while it refreshes the lock, stale once it stops
    lock.write_text(json.dumps({"run": "far", "host": "elsewhere", "pid": 1}))
    with pytest.raises(StoreError, match="in use by run far on elsewhere"):
        run_job(rome, out, cpu_client, batch_size=256, resume=True)
    old = time.time() - 3600
    os.utime(lock, (old, old))
    run_job(rome, out, cpu_client, batch_size=256, resume=True)


@pytest.mark.parametrize("pid", [0, -1, "reused"])
def test_a_lock_naming_no_live_run_is_stale(cpu_client, rome, tmp_path, pid):
    """pid 0 and -1 name process groups (kill(0) always succeeds); a pid that is alive
    but started after the lock was written is another process: stale, taken over."""
    out = tmp_path / "pids.zarr"
    lock = StoreLock(out, "x").path
    record = {"run": "dead", "host": socket.gethostname(), "pid": pid}
    if pid == "reused":      # this very process, as if it had another start time
        record.update(pid=os.getpid(), pid_start="another-boot/12345")
    lock.write_text(json.dumps(record))
    run_job(rome, out, cpu_client, batch_size=512)
    assert Store.open(out).done_mask().all()


def test_a_lock_of_a_live_process_holds(cpu_client, rome, tmp_path):
    out = tmp_path / "live.zarr"
    lock = StoreLock(out, "x").path
    lock.write_text(json.dumps({"run": "alive", "host": socket.gethostname(),
                                "pid": os.getpid(),
                                "pid_start": process_start(os.getpid())}))
    with pytest.raises(StoreError, match="in use by run alive"):
        run_job(rome, out, cpu_client, batch_size=512)
    assert not out.exists()


def test_a_lock_that_is_a_directory_is_one_line(cpu_client, rome, tmp_path):
    out = tmp_path / "dir.zarr"
    lock = StoreLock(out, "x").path
    lock.mkdir()
    (lock / "keep.txt").write_text("mine")
    with pytest.raises(StoreError, match="is a directory.*nothing was changed"):
        run_job(rome, out, cpu_client, batch_size=512)
    assert (lock / "keep.txt").read_text() == "mine" and not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == [lock.name]


@pytest.mark.slow
@pytest.mark.parametrize("second", ["--resume", "--overwrite"])
def test_a_second_cli_run_is_refused_while_the_first_runs(tmp_path, second):
    r = faults.second_run_while_first_runs(tmp_path, "--overwrite", second)
    assert r["second"].one_line_error, r["second"].err
    assert "in use by run" in r["second"].err
    assert r["first"].rc == 0, r["first"].err
    assert faults.verify_all(r["store"]).rc == 0


def test_a_worker_of_another_run_writes_nothing(cpu_client, rome, tmp_path):
    """The run id in the store: a batch task of an earlier run (a worker that outlived
    its client) refuses to write once another run owns the store."""
    out = tmp_path / "owned.zarr"
    store = _store(rome, cpu_client, out)
    shard = out / "distances" / "c" / "1" / "0"
    before = shard.read_bytes()
    flag = out / "batch_done" / "c" / "1"
    flag.unlink()
    store.claim(new_run_id())           # a new run owns the store now
    plan = store.plan()
    with pytest.raises(StoreError, match="now belongs to run"):
        run_batch(str(out), rome.fingerprint, "earlier-run", 1, 256, 512,
                  plan.sources[256:512], "cpu", "dijkstra", "float64", False)
    assert shard.read_bytes() == before
    assert not flag.exists()
    assert not list(out.rglob("*.partial"))


def test_an_array_removed_under_a_worker_is_one_store_error(cpu_client, rome, tmp_path):
    """rm -rf takes a store's arrays before its own zarr.json: a worker that opened
    the store then finds an array gone, which is a StoreError naming it (as opening
    such a store is), not a KeyError."""
    import shutil

    out = tmp_path / "half-removed.zarr"
    _store(rome, cpu_client, out)
    store = Store.open(out, mode="r+")
    shutil.rmtree(out / "distances")
    with pytest.raises(StoreError, match="'distances' was removed"):
        store.array("distances")
    with pytest.raises(StoreError, match="'distances' is missing"):
        Store.open(out)


@pytest.mark.slow
def test_a_store_deleted_mid_job_leaves_nothing(tmp_path):
    """rm -rf of the store while workers write it: one line, no folder made again by
    a worker, and the job runs again (before: folders recreated that --overwrite then
    refused to delete as not a store)."""
    r = faults.store_deleted_mid_job(tmp_path)
    assert r["outcome"].one_line_error and "was removed" in r["outcome"].err
    assert r["left"] == []
    assert r["again"].rc == 0, r["again"].err
    assert faults.verify_all(r["store"]).rc == 0


def test_the_empty_folders_of_a_deleted_store_are_no_store(cpu_client, rome, tmp_path):
    from mgapsp.store import check_target, store_state

    out = tmp_path / "remains.zarr"
    (out / "distances" / "c" / "4").mkdir(parents=True)
    (out / "distances" / "c" / "4" / "0.abc.partial").write_bytes(b"half")
    assert store_state(out) == "remains"
    with pytest.raises(StoreError, match="empty folders"):
        Store.open(out)
    assert check_target(out) == "remains"
    _store(rome, cpu_client, out)           # made again, without --overwrite
    assert not list(out.rglob("*.partial"))
    (tmp_path / "theirs" / "distances").mkdir(parents=True)
    (tmp_path / "theirs" / "distances" / "notes.txt").write_text("mine")
    assert store_state(tmp_path / "theirs") == "foreign"


@pytest.mark.slow
def test_a_read_only_remount_mid_job_is_one_line(tmp_path):
    """The store's file system remounted read-only mid-job: the write's error alone (the
    lock's release no longer hides it); the lock it could not remove is stale, so
    --resume after the file system is writable again finishes the job."""
    if not faults.can_mount():
        pytest.skip("mounting a file system needs root")
    r = faults.read_only_mid_job(tmp_path)
    assert r["outcome"].one_line_error, r["outcome"].err
    assert "Read-only file system" in r["outcome"].err and "--resume" in r["outcome"].err
    assert r["lock_left"]
    assert r["resumed"].rc == 0, r["resumed"].err
    assert r["verify"].rc == 0, r["verify"].out


def test_the_clients_own_record_failing_names_what_is_stored(cpu_client, rome, tmp_path,
                                                              monkeypatch):
    """The file system turned read-only between two batches: the client's progress
    record, not a worker's write, may meet it first; the one error still says how many
    batches are stored and how to continue."""
    def read_only(self, *a, **kw):
        raise OSError(30, "Read-only file system", f"{self.path}/zarr.json")

    monkeypatch.setattr(Store, "mark_done", read_only)
    with dask.config.set({"mgapsp.jobs.progress-interval": 1e-6}), \
            pytest.raises(mgapsp.MgapspError) as info:
        run_job(rome, tmp_path / "ro.zarr", cpu_client, batch_size=512)
    assert "Read-only file system" in str(info.value)
    assert "batches are stored; continue the job with --resume" in str(info.value)


@pytest.mark.slow
def test_killed_client_then_overwrite_never_mixes_runs(tmp_path):
    """The issue's silent-wrong-data case: a directed run's client killed while its
    workers compute, then --overwrite --undirected on the same path."""
    r = faults.killed_client_then_overwrite(tmp_path)
    assert r["second"].rc == 0, r["second"].err
    assert "already done" not in r["second"].out
    assert r["verify"].rc == 0, r["verify"].out


# -- --overwrite deletes only mgapsp stores ------------------------------------------

@pytest.mark.parametrize("kind", ["file", "zarr"])
def test_overwrite_refuses_what_mgapsp_did_not_make(tmp_path, kind):
    r = faults.overwrite_foreign(tmp_path, kind)
    assert r["outcome"].one_line_error, r["outcome"].err
    assert "refusing" in r["outcome"].err
    assert r["unchanged"]


def test_overwrite_keeps_a_users_own_files(cpu_client, rome, tmp_path):
    """A file of the user's put inside an mgapsp store: --overwrite names it and
    deletes nothing; moved out, the store is replaced."""
    out = tmp_path / "mine.zarr"
    _store(rome, cpu_client, out, batch_size=512)
    (out / "notes.txt").write_text("my notes")
    (out / "figures").mkdir()
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(StoreError, match=r"did not put there \(figures, notes.txt\).*"
                                         r"nothing was deleted"):
        run_job(rome, out, cpu_client, batch_size=256, overwrite=True)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    (out / "notes.txt").rename(tmp_path / "notes.txt")
    (out / "figures").rmdir()
    run_job(rome, out, cpu_client, batch_size=256, overwrite=True)
    assert Store.open(out).job["batch_size"] == 256


def test_overwrite_replaces_an_mgapsp_store(cpu_client, rome, tmp_path):
    out = tmp_path / "again.zarr"
    _store(rome, cpu_client, out, batch_size=512)
    (out / "distances" / "c" / "0" / "0.x.partial").write_bytes(b"old")
    run_job(rome, out, cpu_client, dtype="float64", batch_size=256, overwrite=True)
    s = Store.open(out)
    assert s.job["batch_size"] == 256 and s.done_mask().all()
    assert not list(out.rglob("*.partial"))
    assert not list(tmp_path.glob("*.deleting-*"))


@pytest.mark.slow       # mgapsp in a subprocess
def test_a_half_created_store_is_explained_and_resumable(cpu_client, rome, tmp_path):
    """A kill while the store was being created leaves zarr.json marked "creating":
    it is named so, and --resume (or --overwrite) makes it again."""
    out = tmp_path / "half.zarr"
    out.mkdir()
    (out / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "group", "attributes": {
            "format_version": 2, "fingerprint": rome.fingerprint, "state": "creating"}}))
    (out / "distances").mkdir()
    with pytest.raises(StoreError, match="creation did not finish.*--resume or --overwrite"):
        Store.open(out)
    r = faults.mgapsp("info", out)
    assert r.one_line_error and "creation did not finish" in r.err
    run_job(rome, out, cpu_client, dtype="float64", batch_size=256, resume=True)
    assert_distances_equal(Store.open(out).group["distances"][:], scipy_distances(rome))


def test_a_failed_creation_leaves_nothing(cpu_client, rome, tmp_path):
    """Creation that fails (here: a path below a file) leaves no store behind."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises((StoreError, OSError)):
        run_job(rome, tmp_path / "afile" / "s.zarr", cpu_client, batch_size=256)
    assert (tmp_path / "afile").read_text() == "x"


# -- damage found and repaired ------------------------------------------------------

#: damage that changes bytes inside a chunk: only the checksums of every chunk
#: (verify, repair) find it; the file checks of info and --resume do not read them
_INSIDE_CHUNKS = ("64 bytes of LZ4 data flipped", "predecessor shard flipped",
                  "chunk bytes flipped")


#: damages the fast tier repairs (a shard's, a chunk file's); the others in the slow one
FAST_DAMAGE = ("64 bytes of LZ4 data flipped", "chunk file deleted")


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in FAST_DAMAGE else pytest.mark.slow)
    for name in faults.DAMAGE])
def test_damage_is_found_and_repaired(cpu_client, rome, tmp_path, name):
    from mgapsp.jobs.driver import check_for_repair, repair_job
    from mgapsp.store.verify import verify_store

    shards, damage = faults.DAMAGE[name]
    out = tmp_path / "d.zarr"
    run_job(rome, out, cpu_client, dtype="float64", batch_size=256, predecessors=True,
            shards=shards)
    damage(out)
    found = verify_store(out, samples=8)
    quick = damaged_batches(Store.open(out))
    if name in ("flag deleted", "flag overwritten with garbage", "partial file left"):
        assert not found.damaged and not quick
        assert found.missing_batches == ([] if name == "partial file left" else [7])
    else:
        assert not found.ok and len(found.damaged) == 1
        assert bool(quick) == (name not in _INSIDE_CHUNKS)
    damaged, todo = check_for_repair(out)
    assert damaged == found.damaged
    assert todo == len(found.damaged) + len(found.missing_batches)
    assert not list(out.rglob("*.partial"))
    if todo:
        report = repair_job(out, cpu_client, backend="cpu")
        assert report.rows_run == 256 * todo
    final = verify_store(out, all_rows=True)
    assert final.ok, final


@pytest.mark.slow
def test_repair_from_the_command_line(tmp_path):
    r = faults.damaged_store(tmp_path, "shard truncated")
    assert r["verify"].rc == 1 and "batch 3: damaged:" in r["verify"].out
    assert "damaged: 1 flagged batch(es) fail their checks: 3" in r["info"].out
    assert r["repair"].rc == 0 and "1 damaged batch(es): 3" in r["repair"].out
    assert r["verify_all"].rc == 0, r["verify_all"].out


@pytest.mark.slow
def test_resume_recomputes_a_damaged_batch(cpu_client, rome, tmp_path):
    """--resume does not trust a flag whose shard is gone, emptied or truncated."""
    out = tmp_path / "res.zarr"
    _store(rome, cpu_client, out)
    faults._shard(out, 2).unlink()
    faults._truncate(faults._shard(out, 5))
    report = run_job(rome, out, cpu_client, dtype="float64", batch_size=256, resume=True)
    assert report.repaired_batches == [2, 5]
    assert report.rows_run == 512
    assert not damaged_batches(Store.open(out), deep=True)
    assert_distances_equal(Store.open(out).group["distances"][:], scipy_distances(rome))


@pytest.mark.slow
def test_resume_checks_a_small_store_deeply(cpu_client, rome, tmp_path):
    """Flipped bytes inside a shard's data pass the quick check (the file is whole):
    --resume of a store under mgapsp.store.deep-check-bytes checks every chunk's
    checksum and computes that batch again; over it, the run says it checked quickly."""
    import dask.config

    out = tmp_path / "deep.zarr"
    _store(rome, cpu_client, out)
    faults._flip(faults._shard(out, 3), 40, 64)
    with dask.config.set({"mgapsp.store.deep-check-bytes": 1}):
        quick = run_job(rome, out, cpu_client, dtype="float64", batch_size=256,
                        resume=True)
    assert quick.resume_check == "quick" and quick.repaired_batches == []
    assert damaged_batches(Store.open(out), deep=True)          # still there
    deep = run_job(rome, out, cpu_client, dtype="float64", batch_size=256, resume=True)
    assert deep.resume_check == "deep" and deep.repaired_batches == [3]
    assert not damaged_batches(Store.open(out), deep=True)
    assert_distances_equal(Store.open(out).group["distances"][:], scipy_distances(rome))


@pytest.mark.slow
def test_shards_in_the_wrong_place_are_damage(cpu_client, rome, tmp_path):
    """Whole shards in another batch's place, or from another store of the same job,
    pass every checksum; their identity says where they belong, so every quick check
    (info, reads, --resume) finds them and --resume computes those batches again."""
    a, b = tmp_path / "a.zarr", tmp_path / "b.zarr"
    _store(rome, cpu_client, a)
    _store(rome, cpu_client, b)
    first, second = faults._shard(a, 2), faults._shard(a, 3)
    swap = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(swap)
    shutil.copyfile(faults._shard(b, 5), faults._shard(a, 5))
    found = damaged_batches(Store.open(a))
    assert sorted(found) == [2, 3, 5]
    assert "holds the rows of batch 3" in found[2] and "batch 2" in found[3]
    assert "belongs to another store" in found[5]
    with pytest.raises(StoreError, match="batch 2"):
        mgapsp.open(a).distances([513])
    assert mgapsp.open(a).distances([1])[0, 4] == scipy_distances(rome, [0])[0, 4]
    report = run_job(rome, a, cpu_client, dtype="float64", batch_size=256, resume=True)
    assert report.repaired_batches == [2, 3, 5]
    assert not damaged_batches(Store.open(a), deep=True)
    assert_distances_equal(mgapsp.open(a).distances(), scipy_distances(rome))


@pytest.mark.slow
def test_chunk_files_in_the_wrong_place_are_damage(cpu_client, rome, tmp_path):
    """Without shards a file's name is all that says where a chunk belongs: each
    batch records its chunks' CRCs, so a chunk file copied over another is found by
    the quick check and computed again; the record itself is checked."""
    out = tmp_path / "files.zarr"
    _store(rome, cpu_client, out, shards=False)
    chunk = out / "distances" / "c"
    shutil.copyfile(chunk / "4" / "0", chunk / "6" / "0")
    (out / "chunk_crc" / "distances" / "c" / "8" / "0").unlink()
    found = damaged_batches(Store.open(out))
    assert sorted(found) == [6, 8]
    assert "not the chunk written there" in found[6] and "missing" in found[8]
    with pytest.raises(StoreError, match="batch 6"):
        mgapsp.open(out).distances([6 * 256 + 1])
    report = run_job(rome, out, cpu_client, dtype="float64", batch_size=256, resume=True)
    assert report.repaired_batches == [6, 8]
    assert not damaged_batches(Store.open(out), deep=True)
    assert_distances_equal(mgapsp.open(out).distances(), scipy_distances(rome))


def test_a_shard_says_where_it_belongs(cpu_client, rome, tmp_path):
    """The identity block is inside the shard, before its index, with its own CRC: a
    flipped bit in it is damage; Zarr reads the shard as before."""
    from mgapsp.store.files import ShardIdentity

    out = tmp_path / "id.zarr"
    s = _store(rome, cpu_client, out)
    ident = ShardIdentity.of(s.group["distances"])
    assert ident is not None and ident.array == "distances"
    assert ident.store_id != ShardIdentity.of(
        _store(rome, cpu_client, tmp_path / "other.zarr").group["distances"]).store_id
    data = faults._shard(out, 4).read_bytes()
    per = 1 + (rome.n - 1) // s.job["col_chunk"]
    block = data[-(16 * per + 4) - ident.SIZE:-(16 * per + 4)]
    assert ident.problem(block, (4, 0)) is None
    assert "batch 4" in ident.problem(block, (6, 0))
    faults._flip(faults._shard(out, 4), -(16 * per + 4) - 20, 1)
    assert "no identity" in damaged_batches(Store.open(out))[4]
    fresh = zarr.open_group(out, mode="r")
    np.testing.assert_array_equal(fresh["distances"][:256], s.group["distances"][:256])


def test_every_chunk_carries_a_checksum(cpu_client, rome, tmp_path):
    s = _store(rome, cpu_client, tmp_path / "crc.zarr")
    codecs = s.group["distances"].metadata.codecs[0].codecs    # inside the shard
    assert type(codecs[-1]).__name__ == "Crc32cCodec"
    # Zarr itself checks it on read: a flipped byte is an error, never a value
    faults._flip(faults._shard(tmp_path / "crc.zarr", 0), 100, 1)
    fresh = zarr.open_group(tmp_path / "crc.zarr", mode="r")
    with pytest.raises(Exception, match="checksum"):
        fresh["distances"][:256]


def test_checksums_are_zarrs_crc32c():
    """The checksum written beside each chunk is the one Zarr's crc32c codec checks, for
    every kind of buffer the writers pass (frames in pinned arrays, encoded bytes)."""
    import google_crc32c

    from mgapsp.store.files import crc32c

    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, 100_003, dtype=np.uint8)
    for buf in (data, data[7:], data.tobytes(), bytearray(data[:99]), memoryview(data)[5:],
                data[:0], rng.random(17).astype(np.float32)):
        raw = np.ascontiguousarray(buf).tobytes() if isinstance(buf, np.ndarray) else bytes(buf)
        assert crc32c(buf) == int(google_crc32c.value(raw)).to_bytes(4, "little")


@pytest.mark.slow       # mgapsp in a subprocess
def test_reads_refuse_damaged_rows(cpu_client, rome, tmp_path):
    """Result.distance and `mgapsp path` never answer from a damaged row."""
    out = tmp_path / "p.zarr"
    run_job(rome, out, cpu_client, dtype="float64", batch_size=256, predecessors=True)
    faults._shard(out, 0, "predecessors").unlink()
    faults._flip(faults._shard(out, 1), 50, 32)
    res = mgapsp.open(out)
    with pytest.raises(StoreError, match="damaged"):
        res.path(1, 5)
    with pytest.raises(StoreError, match="damaged"):
        res.distance(300, 5)
    assert res.distance(600, 5) == scipy_distances(rome, [599])[0, 4]
    r = faults.mgapsp("path", out, 1, 5)
    assert r.one_line_error and "mgapsp repair" in r.err and "no path" not in r.out


# -- one line everywhere -------------------------------------------------------------

@pytest.fixture(scope="module")
def finished(cpu_client, rome, tmp_path_factory):
    """A finished store with predecessors, made once; tests damage copies of it."""
    out = tmp_path_factory.mktemp("finished") / "s.zarr"
    run_job(rome, out, cpu_client, batch_size=512, predecessors=True)
    return out


def _copy(finished, tmp_path) -> Path:
    import shutil

    return Path(shutil.copytree(finished, tmp_path / "s.zarr"))


def _edit_attrs(out: Path, edit) -> None:
    meta = json.loads((out / "zarr.json").read_text())
    edit(meta["attributes"])
    (out / "zarr.json").write_text(json.dumps(meta))


@pytest.mark.slow       # mgapsp in subprocesses
def test_a_garbage_flag_is_damage_not_a_crash(finished, tmp_path, data_dir, rome):
    """A batch's flag overwritten with garbage: info names it, a read of the store says
    its rows are not computed (one line), --resume computes them again, and every row
    then equals SciPy's."""
    out = _copy(finished, tmp_path)
    (out / "batch_done" / "c" / "3").write_bytes(b"xyz")
    info = faults.mgapsp("info", out)
    assert info.rc == 0, info.err
    assert "the flags of 1 batch(es) are unreadable: 3" in info.out
    with pytest.raises(mgapsp.MgapspError, match="not computed yet"):
        mgapsp.open(out).distances()
    r = faults.mgapsp("run", data_dir / "rome99.gr", "-o", out, "--resume", "--predecessors",
                      "--backend", "cpu", "--workers", 1, "-q")
    assert r.rc == 0, r.err
    assert_distances_equal(mgapsp.open(out).distances(), scipy_distances(rome))


@pytest.mark.parametrize("damage", [
    "truncated shard", "damaged index", "attribute missing", "array missing",
    "job key missing", "batch size edited"])
@pytest.mark.parametrize("slow_too", [False, True])
@pytest.mark.slow       # mgapsp in subprocesses
def test_damaged_stores_get_one_line(finished, tmp_path, data_dir, damage, slow_too):
    """info, verify, path (and, in the slow tier, run --resume) on a damaged store."""
    out = _copy(finished, tmp_path)
    if damage == "truncated shard":
        faults._truncate(faults._shard(out, 0))
    elif damage == "damaged index":
        faults._flip(faults._shard(out, 0), -20, 4)
    elif damage == "attribute missing":
        _edit_attrs(out, lambda a: a.pop("job"))
    elif damage == "array missing":
        import shutil

        shutil.rmtree(out / "distances")
    elif damage == "job key missing":
        _edit_attrs(out, lambda a: a["job"].pop("n_batches"))
    else:
        _edit_attrs(out, lambda a: a["job"].update(batch_size=100))
    commands = [["info", out], ["verify", out], ["path", out, 1, 5]]
    if slow_too:
        commands.append(["run", data_dir / "rome99.gr", "-o", out, "--resume",
                         "--predecessors", "--backend", "cpu", "--workers", 1, "-q"])
    for cmd in commands:
        r = faults.mgapsp(*cmd)
        if damage in ("truncated shard", "damaged index") and cmd[0] in ("info", "run"):
            # found and reported (info) or computed again (--resume)
            assert r.rc == 0, r.err
            continue
        assert r.one_line_error, (cmd[0], r.err)


@pytest.mark.slow       # mgapsp in a subprocess
def test_targets_that_the_first_source_never_reaches(tmp_path, data_dir):
    """A successful job whose first row reaches none of the targets: a summary, not
    a traceback."""
    edges = tmp_path / "g.txt"
    edges.write_text("0 1 1\n2 3 1\n3 2 1\n")
    (tmp_path / "t.txt").write_text("2 3\n")
    r = faults.mgapsp("run", edges, "-o", tmp_path / "t.zarr", "--targets",
                      tmp_path / "t.txt", "--backend", "cpu", "--workers", 1, "-q")
    assert r.rc == 0, r.err
    assert "0 of 2 targets reachable" in r.out


@pytest.mark.slow       # mgapsp in a subprocess
def test_unexpected_errors_are_one_line(tmp_path):
    """What no check foresaw still prints one line (-vv shows the traceback)."""
    r = faults.mgapsp("info", tmp_path)     # a directory that is no store at all
    assert r.one_line_error, r.err


def test_disk_errors_name_the_file(tmp_path):
    """A write that fails names the file it was writing: a full disk (/dev/full
    answers every write with ENOSPC) and a directory that cannot be made."""
    import errno

    from mgapsp.store.atomic import pwrite, write_file_atomic

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as info:
            pwrite(fd, b"x" * 4096, 0, tmp_path / "s.zarr" / "c" / "0.partial")
    finally:
        os.close(fd)
    assert info.value.errno == errno.ENOSPC
    assert str(tmp_path / "s.zarr" / "c" / "0.partial") in str(info.value)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OSError) as info:
        write_file_atomic(tmp_path / "afile" / "c" / "0", b"data")
    assert str(tmp_path / "afile") in str(info.value)


def test_a_chunk_never_makes_its_removed_store_again(tmp_path):
    """A chunk's folders are made below its array's folder only: where the array (or
    the store) is being removed, or a folder made for the chunk vanishes before the
    chunk is in place, the write stops with one line saying so, and no folder of the
    store is made again."""
    import shutil

    from mgapsp.errors import StoreError
    from mgapsp.store.atomic import commit, open_partial, write_file_atomic

    store = tmp_path / "s.zarr"
    (store / "distances").mkdir(parents=True)
    (store / "zarr.json").write_text("{}")
    (store / "distances" / "zarr.json").write_text("{}")
    assert write_file_atomic(store / "distances" / "c" / "2" / "0", b"data") == 4
    assert (store / "distances" / "c" / "2" / "0").read_bytes() == b"data"
    shutil.rmtree(store / "distances")
    with pytest.raises(StoreError, match="distances was removed while a worker wrote"):
        write_file_atomic(store / "distances" / "c" / "3" / "0", b"data")
    assert sorted(p.name for p in store.iterdir()) == ["zarr.json"]
    (store / "distances").mkdir()
    (store / "distances" / "zarr.json").write_text("{}")
    tmp, fd = open_partial(store / "distances" / "c" / "4" / "0")
    shutil.rmtree(store / "distances" / "c")
    with pytest.raises(StoreError, match=r"c/4 was removed while a worker wrote"):
        commit(tmp, fd, store / "distances" / "c" / "4" / "0")
    assert not (store / "distances" / "c").exists()
    shutil.rmtree(store)
    with pytest.raises(StoreError, match="s.zarr was removed while a worker wrote"):
        write_file_atomic(store / "zarr.json", b"{}")     # the job's attributes
    assert not store.exists()


@pytest.mark.slow
def test_huge_declared_counts_are_one_line_in_little_memory(tmp_path):
    results = faults.huge_declared_counts(tmp_path)
    for fmt, r in results.items():
        assert r["max_rss_mb"] is not None and r["max_rss_mb"] < 1024, (fmt, r)
        if fmt == "snap":       # ids of an edge list are labels: a 3-vertex graph
            assert r["read"] == "read n=3" and r["cli"].rc == 0, (fmt, r)
            continue
        assert r["read"].startswith("error: "), (fmt, r)
        # the value (or, for a dense MatrixMarket array, its unsupported banner) named
        assert any(v in r["read"] for v in ("2,000,000,000", "2000000000", "'array'")), r
        assert r["cli"].one_line_error, (fmt, r["cli"].err)
        assert not r["store_made"]


# -- on the GPU: frames compressed on the device carry their checksums too -------------

@pytest.mark.gpu
@pytest.mark.parametrize("shards", [True, False])
@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_gpu_written_chunks_pass_their_checksums(gpu_client, data_dir, tmp_path, shards,
                                                 compression):
    """LZ4 frames made on the GPU (and zstd chunks compressed on the host) are stored
    with the CRC-32C that Zarr checks on read; a damaged one is found and repaired."""
    from mgapsp.jobs.driver import check_for_repair, repair_job

    graph = mgapsp.read_graph(data_dir / "p2p-Gnutella08.txt")
    out = tmp_path / "g.zarr"
    run_job(graph, out, gpu_client, backend="gpu", batch_size=512, shards=shards,
            compression=compression, sources=graph.labels[:2048])
    store = Store.open(out)
    assert not damaged_batches(store, deep=True)
    assert_distances_equal(store.group["distances"][:], scipy_distances(graph, range(2048)),
                           dtype="float32")
    victim = faults._shard(out, 1) if shards else out / "distances" / "c" / "1" / "0"
    faults._flip(victim, 64, 32)
    damaged, todo = check_for_repair(out)
    assert list(damaged) == [1] and todo == 1
    repair_job(out, gpu_client, backend="gpu")
    assert not damaged_batches(Store.open(out), deep=True)
    assert_distances_equal(Store.open(out).group["distances"][:],
                           scipy_distances(graph, range(2048)), dtype="float32")


# -- what is not a store's own file (issue 56, items 8 and 9) ------------------------

@pytest.mark.slow
def test_a_lock_that_is_a_fifo_is_refused_without_opening_it(data_dir, tmp_path):
    """A FIFO where the lock goes would block the open that reads it: run and info say
    what is there in one line, at once, and change nothing."""
    import subprocess
    import sys

    out = tmp_path / "f.zarr"
    os.mkfifo(f"{out}.lock")
    cmd = [sys.executable, "-m", "mgapsp"]
    run = subprocess.run(cmd + ["run", str(data_dir / "rome99.gr"), "-o", str(out),
                                "--backend", "cpu", "-q", "--no-dashboard"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "is a FIFO" in run.stderr.splitlines()[-1], run.stderr
    assert not out.exists()
    os.unlink(f"{out}.lock")
    (tmp_path / "src.txt").write_text("1 2")
    subprocess.run(cmd + ["run", str(data_dir / "rome99.gr"), "-o", str(out), "--backend",
                          "cpu", "-q", "--no-dashboard", "--sources",
                          str(tmp_path / "src.txt")], check=True, capture_output=True)
    os.mkfifo(f"{out}.lock")
    info = subprocess.run(cmd + ["info", str(out)], capture_output=True, text=True,
                          timeout=60)
    assert info.returncode != 0 and "is a FIFO" in info.stderr, info.stderr


@pytest.mark.slow
def test_a_link_out_of_the_store_is_never_written_through(data_dir, tmp_path):
    """A batch's folder replaced by a link to a folder outside the store: --resume and
    repair refuse the store in one line; nothing is written outside."""
    import subprocess
    import sys

    out, outside = tmp_path / "s.zarr", tmp_path / "outside"
    (tmp_path / "src.txt").write_text(" ".join(str(v) for v in range(1, 201)))
    cmd = [sys.executable, "-m", "mgapsp"]
    args = ["--backend", "cpu", "-q", "--no-dashboard"]
    subprocess.run(cmd + ["run", str(data_dir / "rome99.gr"), "-o", str(out), *args,
                          "--batch-size", "64", "--sources", str(tmp_path / "src.txt")],
                   check=True, capture_output=True)
    batch = out / "distances" / "c" / "1"
    shutil.rmtree(batch)                # its rows lost: a resumed run must write them
    outside.mkdir()
    batch.symlink_to(outside, target_is_directory=True)
    for sub in (["run", str(data_dir / "rome99.gr"), "-o", str(out), *args, "--batch-size",
                 "64", "--sources", str(tmp_path / "src.txt"), "--resume"],
                ["repair", str(out), "--backend", "cpu"]):
        proc = subprocess.run(cmd + sub, capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0, proc.stdout
        assert "is a symbolic link inside the store" in proc.stderr.splitlines()[-1]
        assert list(outside.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("out,words", [("", "an empty store path"),
                                       ("file://{tmp}/out.zarr", "without file://")])
def test_a_store_place_that_is_none_is_refused_before_anything_is_made(
        data_dir, tmp_path, out, words):
    """Issue 56, item 14: ``-o ""`` filled the current folder with a store's folders,
    ``-o file://...`` made a folder ``file:`` for the lock: one line now, nothing
    made."""
    import subprocess
    import sys

    work = tmp_path / "here"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "run", str(data_dir / "rome99.gr"),
                           "-o", out.format(tmp=work), "--backend", "cpu", "-q",
                           "--no-dashboard"], capture_output=True, text=True, cwd=work,
                          timeout=120)
    assert proc.returncode != 0 and words in proc.stderr.splitlines()[-1], proc.stderr
    assert list(work.iterdir()) == []



@pytest.mark.slow
@pytest.mark.parametrize("how", ["bytes", "values"])
def test_a_damaged_stored_graph_is_one_line_for_repair_and_verify(tmp_path, how):
    """Issue 56, item 14: the graph arrays a store keeps (for repair and verify) damaged:
    their bytes overwritten (they had failed in Blosc with a traceback, after repair
    said "no damage"), or other values written in their place through Zarr (read
    without a word): one line that says to give the graph again."""
    r = faults.stored_graph_damaged(tmp_path, how)
    for command, outcome in r.items():
        assert outcome.one_line_error, (command, outcome.err)
        assert "the graph stored in it" in outcome.err
        assert "give the graph again" in outcome.err


@pytest.mark.slow
@pytest.mark.parametrize("change", [{"data_type": "int32", "fill_value": 0},
                                    {"fill_value": 0.0}])
def test_changed_array_metadata_is_damage_everywhere(tmp_path, change):
    """Issue 56, item 1: ``distances/zarr.json`` with its dtype or fill value changed
    (no chunk checksum covers it: every row had been served wrong, and resume and
    repair said "no damage"): info, --resume, repair, verify and Result each refuse
    the store in one line naming the file."""
    r = faults.metadata_changed(tmp_path, change)
    for command, outcome in r.items():
        assert outcome.one_line_error, (command, outcome.err)
        assert "distances/zarr.json is not what the store was made with" in outcome.err
    with pytest.raises(StoreError, match="distances/zarr.json"):
        mgapsp.Result(tmp_path / "meta.zarr")


@pytest.mark.slow
def test_label_arrays_of_another_store_are_damage(tmp_path):
    """Issue 56, item 2: the source labels copied from another store of the same graph
    with other sources (rows had been served under the wrong labels, and verify passed
    with the copied labels), and the vertex labels reversed in place (a wrong path
    printed): each read refuses in one line."""
    r = faults.labels_copied(tmp_path)
    for command in ("verify", "path"):
        assert r[command].one_line_error, (command, r[command].err)
        assert "the source" in r[command].err
        assert "other values than the store was made with" in r[command].err
    assert r["reversed"].one_line_error, r["reversed"].err
    assert "the vertex array holds other values" in r["reversed"].err
    with pytest.raises(StoreError, match="other values"):
        mgapsp.Result(tmp_path / "a.zarr").distances([1], [5])


@pytest.mark.slow
def test_chunk_files_moved_with_their_crc_records_are_damage(tmp_path):
    """Issue 56, item 3: without shards, two batches' chunk files swapped together with
    their records of CRCs (each file whole, each record matching its files: 128 wrong
    rows had been served, and info, resume and repair found nothing). The record says
    whose it is: reads refuse, info names the batches, repair computes them again."""
    r = faults.chunk_files_moved(tmp_path)
    for read in ("read", "raw", "xarray"):
        assert r[read].rc != 0 and "not of batch 0's" in r[read].err, (read, r[read].err)
    assert "damaged: 2 flagged batch(es) fail their checks: 0-1" in r["info"].out
    assert r["repair"].rc == 0 and "2 damaged batch(es)" in r["repair"].out
    assert r["same_after"]


@pytest.mark.slow
def test_to_xarray_refuses_shards_swapped_between_batches(tmp_path):
    """Issue 56, item 5: two batches' shards swapped (each whole): Result's own reads
    refused them, to_xarray served 70 of 70 rows wrong; now it refuses too, as does the
    raw array Result hands out."""
    r = faults.shards_to_xarray(tmp_path)
    assert r["read"].rc != 0 and "damaged: batch 0" in r["read"].err, r["read"].err
    with pytest.raises(StoreError, match="damaged: batch 0"):
        mgapsp.Result(tmp_path / "xr.zarr")["distances"]


@pytest.mark.slow
@pytest.mark.parametrize("with_record", [False, True])
def test_metric_chunks_swapped_between_batches_are_damage(tmp_path, with_record):
    """Issue 56, item 4: two batches' closeness chunks swapped (each whole; with and
    without their record of CRCs): verify had found it but resume and repair said "no
    damage". Reads refuse, and repair computes both batches again."""
    r = faults.metric_chunks_swapped(tmp_path, with_record)
    assert r["read"].rc != 0 and "damaged: batch 0" in r["read"].err, r["read"].err
    assert r["repair"].rc == 0 and "2 damaged batch(es)" in r["repair"].out
    assert r["same_after"]
