"""The CPU pipeline end to end: real graphs, a real LocalCluster, real Zarr stores."""

from __future__ import annotations

import os
import time

import dask.array as da
import numpy as np
import pytest
import zarr

import mgapsp
from mgapsp import NegativeCycleError, algorithms, ResumeMismatchError, StoreError
from mgapsp.graph import Graph
from mgapsp.jobs.driver import run_job
from mgapsp.store import Store
from mgapsp.store.verify import verify_store

from helpers import assert_distances_equal, cycle_weight, reweighted, scipy_distances

# (file, number of sources: None = all)
REAL_GRAPHS = [
    ("p2p-Gnutella08.txt", 300),        # SNAP
    ("SiouxFalls_net.tntp", None),      # TNTP road network
    ("Anaheim_net.tntp", None),
    ("rome99.gr", 400),                 # DIMACS 9
    ("ftv33.atsp", None),               # TSPLIB, directed
    ("gr120.tsp", None),                # TSPLIB, dense undirected: Floyd-Warshall
    ("netscience.mtx", None),           # MatrixMarket, weighted symmetric
    ("ldbc-directed-example.mtx", None),
    ("karate.mtx", None),               # MatrixMarket pattern
    ("cugraph_toy_graph.csv", None),
]


def _sources(graph, count, seed=0):
    if count is None:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(graph.vertex_ids, size=count, replace=False))


@pytest.mark.parametrize("name,count", REAL_GRAPHS)
def test_real_graph_equals_scipy(cpu_client, data_dir, tmp_path, name, count):
    graph = mgapsp.read_graph(data_dir / name)
    sources = _sources(graph, count)
    out = tmp_path / "out.zarr"
    group = mgapsp.apsp(graph, out=out, client=cpu_client, sources=sources,
                        dtype="float64")
    idx = None if sources is None else graph.index_of(sources)
    assert_distances_equal(group["distances"][:], scipy_distances(graph, idx))
    expected_ids = graph.vertex_ids if sources is None else sources
    np.testing.assert_array_equal(group["source"][:], expected_ids)
    np.testing.assert_array_equal(group["vertex"][:], graph.vertex_ids)
    assert group.attrs["progress"]["complete"] is True


def test_negative_weights_without_cycle(cpu_client, data_dir, tmp_path):
    graph = reweighted(mgapsp.read_graph(data_dir / "rome99.gr"), seed=3)
    sources = _sources(graph, 200, seed=1)
    group = mgapsp.apsp(graph, out=tmp_path / "neg.zarr", client=cpu_client,
                        sources=sources, dtype="float64", predecessors=True)
    assert group.attrs["job"]["algorithm"] == "johnson"
    assert "potentials" in group["graph"]
    assert_distances_equal(group["distances"][:],
                           scipy_distances(graph, graph.index_of(sources)))
    report = verify_store(tmp_path / "neg.zarr", all_rows=True)
    assert report.ok, report


@pytest.mark.parametrize("algorithm", [
    pytest.param(a, marks=pytest.mark.slow) if a == "bellman-ford" else a
    for a in algorithms.names("cpu")])
def test_every_cpu_algorithm(cpu_client, data_dir, tmp_path, algorithm):
    """Every algorithm the registry says the CPU backend runs, as a job."""
    graph = mgapsp.read_graph(data_dir / "ChicagoSketch_net.tntp")
    # predecessors wherever the algorithm gives them on this graph
    predecessors = not (algorithms.get(algorithm).positive_for_predecessors
                        and (graph.weights <= 0).any())
    group = mgapsp.apsp(graph, out=tmp_path / "a.zarr", client=cpu_client,
                        algorithm=algorithm, dtype="float64", batch_size=100,
                        predecessors=predecessors)
    assert group.attrs["job"]["algorithm"] == algorithm
    assert_distances_equal(group["distances"][:], scipy_distances(graph))
    assert verify_store(tmp_path / "a.zarr", all_rows=True).ok


def test_float32_store_and_readers(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    out = tmp_path / "f32.zarr"
    mgapsp.apsp(graph, out=out, client=cpu_client, batch_size=5)
    group = zarr.open_group(out, mode="r")
    arr = group["distances"]
    assert arr.dtype == np.float32
    assert arr.chunks[0] == 5 and arr.metadata.dimension_names == ("source", "target")
    assert_distances_equal(arr[:], scipy_distances(graph), dtype="float32")
    lazy = da.from_zarr(str(out), component="distances")
    assert lazy.shape == (24, 24)
    np.testing.assert_array_equal(lazy.compute(), arr[:])
    xr = pytest.importorskip("xarray")
    ds = xr.open_zarr(out, consolidated=False)
    assert ds["distances"].dims == ("source", "target")
    np.testing.assert_array_equal(ds["distances"].values, arr[:])
    attrs = group.attrs
    assert attrs["fingerprint"] == graph.fingerprint
    assert attrs["graph"]["n"] == 24 and attrs["graph"]["m"] == 76
    assert attrs["job"]["backend"] == "cpu" and attrs["job"]["batch_size"] == 5
    assert {"numpy", "zarr", "dask", "mgapsp"} <= set(attrs["versions"])


@pytest.mark.slow
def test_negative_cycle_raises_and_writes_nothing(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "soc-sign-bitcoinalpha.csv")
    out = tmp_path / "cycle.zarr"
    with pytest.raises(NegativeCycleError) as info:
        mgapsp.apsp(graph, out=out, client=cpu_client)
    assert cycle_weight(graph, info.value.cycle) < 0
    assert info.value.weight == pytest.approx(cycle_weight(graph, info.value.cycle))
    assert not out.exists()


def test_existing_store_is_refused_and_overwritten_on_request(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    out = tmp_path / "s.zarr"
    mgapsp.apsp(graph, out=out, client=cpu_client)
    before = Store.open(out).attrs["created"]
    with pytest.raises(StoreError, match="already exists"):
        mgapsp.apsp(graph, out=out, client=cpu_client)
    mgapsp.apsp(graph, out=out, client=cpu_client, overwrite=True, dtype="float64")
    assert Store.open(out).job["dtype"] == "float64"
    assert Store.open(out).attrs["created"] >= before
    other = tmp_path / "not-a-store"
    other.mkdir()
    (other / "precious.txt").write_text("keep me")
    with pytest.raises(StoreError, match="not an mgapsp store"):
        mgapsp.apsp(graph, out=other, client=cpu_client, overwrite=True)
    assert (other / "precious.txt").exists()


def test_resume_refuses_other_graph_or_options(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    out = tmp_path / "r.zarr"
    mgapsp.apsp(graph, out=out, client=cpu_client, batch_size=8)
    other = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp", unweighted=True)
    with pytest.raises(ResumeMismatchError, match="another graph"):
        mgapsp.apsp(other, out=out, client=cpu_client, resume=True)
    with pytest.raises(ResumeMismatchError, match="dtype"):
        mgapsp.apsp(graph, out=out, client=cpu_client, resume=True, dtype="float64")
    with pytest.raises(ResumeMismatchError, match="batch_size"):
        mgapsp.apsp(graph, out=out, client=cpu_client, resume=True, batch_size=4)
    # Same graph and options: nothing left to do, nothing recomputed.
    report = run_job(graph, out, cpu_client, resume=True)
    assert report.batches_run == 0 and report.resumed_batches == 3


def test_resume_computes_only_missing_batches(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "Anaheim_net.tntp")
    out = tmp_path / "partial.zarr"
    full = run_job(graph, out, cpu_client, batch_size=32)
    assert full.batches_run == 13
    # Simulate an interruption: forget three batches and blank their rows.
    store = Store.open(out, mode="r+")
    done = store.group["batch_done"]
    mask = done[:]
    mask[[2, 5, 12]] = 0
    done[:] = mask
    dist = store.group["distances"]
    for b in (2, 5, 12):
        dist[b * 32:min((b + 1) * 32, graph.n), :] = np.nan
    report = run_job(graph, out, cpu_client, resume=True)
    assert report.batches_run == 3 and report.resumed_batches == 10
    assert verify_store(out, all_rows=True).ok


def test_the_first_row_is_summed_up_where_it_is_computed(cpu_client, data_dir, tmp_path):
    """A job tells its summary of the store's first row (over the targets' columns)
    without reading it back; a run that did not compute it tells nothing of it."""
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    out = tmp_path / "f.zarr"
    targets = graph.vertex_ids[::7]
    full = run_job(graph, out, cpu_client, batch_size=256, targets=targets,
                   sources=graph.vertex_ids[3:900])
    row = Store.open(out).group["distances"][0, :].astype(np.float64)
    finite = row[np.isfinite(row)]
    assert len(row) == len(targets) and 0 < len(finite) < len(row) + 1
    assert full.first_row == {"reachable": len(finite), "farthest": finite.max()}
    store = Store.open(out, mode="r+")
    mask = store.group["batch_done"][:]
    mask[1] = 0
    store.group["batch_done"][:] = mask
    again = run_job(graph, out, cpu_client, resume=True, targets=targets,
                    sources=graph.vertex_ids[3:900])
    assert again.batches_run == 1 and again.first_row is None


def test_workers_flag_their_batches_and_old_stores_still_resume(cpu_client, data_dir,
                                                                tmp_path):
    """Each batch's flag is a chunk file of its own, written by the worker; a store
    from before (one chunk for every flag, written by the client) still resumes."""
    graph = mgapsp.read_graph(data_dir / "Anaheim_net.tntp")
    out = tmp_path / "flags.zarr"
    run_job(graph, out, cpu_client, batch_size=32)
    store = Store.open(out, mode="r+")
    assert store.workers_mark_batches
    flags = out / "batch_done" / "c"
    assert sorted(int(p.name) for p in flags.iterdir()) == list(range(13))
    # the flags alone say what is done (a driver killed before its last record)
    for b in (3, 7):
        (flags / str(b)).unlink()
        store.group["distances"][b * 32:(b + 1) * 32, :] = np.nan
    report = run_job(graph, out, cpu_client, resume=True)
    assert report.batches_run == 2 and report.resumed_batches == 11
    assert sorted(int(p.name) for p in flags.iterdir()) == list(range(13))
    assert verify_store(out, all_rows=True).ok

    # the layout before: one chunk for all flags (and no digests of the arrays)
    del store.group.attrs["digests"]
    mask = np.ones(13, dtype="uint8")
    mask[[1, 12]] = 0
    del store.group["batch_done"]
    store.group.create_array("batch_done", shape=(13,), chunks=(13,), dtype="uint8",
                             fill_value=0, dimension_names=("batch",))[:] = mask
    for b in (1, 12):
        store.group["distances"][b * 32:(b + 1) * 32, :] = np.nan
    assert not Store.open(out).workers_mark_batches
    report = run_job(graph, out, cpu_client, resume=True)
    assert report.batches_run == 2 and report.resumed_batches == 11
    assert [p.name for p in flags.iterdir()] == ["0"]
    assert Store.open(out).done_mask().all()
    assert verify_store(out, all_rows=True).ok


def test_a_file_per_batch_and_stores_of_chunk_files_still_resume(cpu_client, data_dir,
                                                                  tmp_path, monkeypatch):
    """A new store keeps each batch's rows in one file, a shard of its row of chunks;
    ``shards=False`` writes a file per chunk, and such a store resumes as it is."""
    import dask

    # 1,024-column chunks
    monkeypatch.setitem(dask.config.config["mgapsp"]["store"], "chunk-elements", 64 * 1024)
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    sources = _sources(graph, 300)
    for shards in (True, False):
        out = tmp_path / f"s{shards}.zarr"
        run_job(graph, out, cpu_client, batch_size=64, sources=sources, shards=shards)
        store = Store.open(out)
        dist = store.group["distances"]
        cols = -(-graph.n // dist.chunks[1])
        assert dist.chunks == (64, store.job["col_chunk"]) and cols == 4
        assert store.job["shards"] is shards
        assert dist.shards == ((64, cols * dist.chunks[1]) if shards else None)
        files = sorted(str(p.relative_to(out / "distances" / "c"))
                       for p in (out / "distances" / "c").rglob("*") if p.is_file())
        assert files == sorted(f"{b}/{j}" for b in range(5) for j in range(1 if shards else 4))
        assert verify_store(out, all_rows=True).ok
    # an interrupted store of chunk files goes on as one
    store = Store.open(out, mode="r+")
    for b in (1, 4):
        (out / "batch_done" / "c" / str(b)).unlink()
        for f in (out / "distances" / "c" / str(b)).iterdir():
            f.unlink()
    report = run_job(graph, out, cpu_client, resume=True, sources=sources)
    assert report.batches_run == 2 and report.resumed_batches == 3
    assert Store.open(out).group["distances"].shards is None
    assert len(list((out / "distances" / "c" / "4").iterdir())) == 4
    assert verify_store(out, all_rows=True).ok


def test_two_workers_share_the_batches(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    report = run_job(graph, tmp_path / "w.zarr", cpu_client, batch_size=64,
                     sources=graph.vertex_ids[:1024])
    assert report.batches_run == 16
    assert len(report.per_worker) == 2, report.per_worker


def test_every_batch_is_a_task_of_the_stream(data_dir, tmp_path):
    """Every batch is one Dask task ``apsp-batch-<i>-<run>`` (the dashboard's task
    stream and a performance report show each), its statistics the task's result."""
    from distributed import Client, LocalCluster, get_task_stream

    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        with get_task_stream(client) as ts:
            report = run_job(graph, tmp_path / "t.zarr", client, backend="cpu",
                             batch_size=32, sources=graph.vertex_ids[:32 * 4])
        keys = [t["key"] for t in ts.data if t["key"].startswith("apsp-batch-")]
    assert sorted(int(k.split("-")[2]) for k in keys) == list(range(4))
    assert sorted(s["batch"] for s in report.batches) == list(range(4))
    assert all(s["rows"] == 32 and s["stored_bytes"] > 0 for s in report.batches)
    assert report.rows_run == 128 and sum(report.per_worker.values()) == 4


@pytest.mark.parametrize("whole", [True, False])
def test_a_job_submits_its_batches_whole_or_in_a_window(data_dir, tmp_path, monkeypatch,
                                                        whole):
    """A job of at most ``mgapsp.jobs.whole-job-batches`` batches submits them all at
    once, so that Dask's own progress counts the whole job (the dashboard's Progress
    panel reads the scheduler's task prefixes); a longer one keeps at most
    ``mgapsp.jobs.in-flight-per-thread`` per worker thread (the client's and
    scheduler's memory stay flat)."""
    import dask
    from distributed import Client, LocalCluster

    from mgapsp.jobs import driver

    most = [0]
    real = driver.as_completed

    class Counting(real):
        def __init__(self, futures=(), **kwargs):
            super().__init__(futures, **kwargs)
            most[0] = max(most[0], self.count())

        def add(self, future):
            super().add(future)
            most[0] = max(most[0], self.count())

    monkeypatch.setattr(driver, "as_completed", Counting)
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    seen = []

    def batches(states):
        return client.run_on_scheduler(
            lambda dask_scheduler: sum(tp.states.get(state, 0) for tp in
                                       dask_scheduler.task_prefixes.values()
                                       if tp.name == "apsp-batch" for state in states))

    live = ("processing", "queued", "no-worker", "waiting", "memory", "released")

    held = []       # batches the scheduler still holds, done or not (not forgotten)

    def on_progress(report, done, total):     # the scheduler's count of the job's batches
        held.append(batches(("processing", "queued", "no-worker", "waiting", "memory")))
        if whole and not seen:
            # every batch the client submitted, done or not, reaches the scheduler (its
            # messages may lag behind the client's on a loaded machine)
            deadline = time.monotonic() + 30
            while batches(live + ("forgotten",)) < 12 and time.monotonic() < deadline:
                time.sleep(0.05)
            seen.append(batches(live + ("forgotten",)))
        else:
            seen.append(batches(live))
    settings = {"mgapsp.jobs.in-flight-per-thread": 1,
                "mgapsp.jobs.whole-job-batches": 12 if whole else 11}
    with dask.config.set(settings), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        report = run_job(graph, tmp_path / "w.zarr", client, backend="cpu", batch_size=8,
                         sources=graph.vertex_ids[:8 * 12], on_progress=on_progress)
    assert report.batches_run == 12
    if whole:
        assert most[0] == 12 and seen[0] == 12, (most, seen)
        # finished batches stay until the job ends: Dask's Progress panel counts 12
        assert held[-1] == 12, held
    else:
        assert most[0] <= 2 and max(seen) <= 2, (most, seen)
    assert verify_store(tmp_path / "w.zarr", all_rows=True).ok


def test_a_failed_batch_stops_the_job(cpu_client, data_dir, tmp_path):
    """A batch that fails on its worker fails the job with its error; the batches not
    ended are cancelled."""
    import shutil

    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    out = tmp_path / "f.zarr"

    def break_the_store(report):
        shutil.rmtree(out / "distances")    # the workers cannot open the array

    with pytest.raises(StoreError, match="damaged: array 'distances' is missing"):
        run_job(graph, out, cpu_client, batch_size=32, sources=graph.vertex_ids[:32 * 12],
                on_start=break_the_store)
    deadline = time.monotonic() + 10
    while any(cpu_client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(cpu_client.processing().values())
    assert zarr.open_group(out, mode="r")["batch_done"][:].sum() == 0


def test_many_to_all_rows_are_the_requested_sources(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    sources = np.array([3353, 1, 17, 17, 2000])  # 1-based ids; a repeat is allowed
    group = mgapsp.apsp(graph, out=tmp_path / "m.zarr", client=cpu_client, sources=sources,
                        dtype="float64")
    ref = scipy_distances(graph, sources - 1)
    assert_distances_equal(group["distances"][:], ref)
    np.testing.assert_array_equal(group["source"][:], sources)


def test_many_to_many_targets(cpu_client, data_dir, tmp_path):
    graph = mgapsp.read_graph(data_dir / "Austin_net.tntp")
    rng = np.random.default_rng(11)
    sources = rng.choice(graph.vertex_ids, size=300, replace=False)
    targets = rng.choice(graph.vertex_ids, size=57, replace=False)
    out = tmp_path / "od.zarr"
    group = mgapsp.apsp(graph, out=out, client=cpu_client, sources=sources,
                        targets=targets, dtype="float64", batch_size=64)
    assert group["distances"].shape == (300, 57)
    ref = scipy_distances(graph, graph.index_of(sources))[:, graph.index_of(targets)]
    assert_distances_equal(group["distances"][:], ref)
    np.testing.assert_array_equal(group["target"][:], targets)
    np.testing.assert_array_equal(group["source"][:], sources)
    assert group["vertex"].shape == (graph.n,)
    assert verify_store(out, all_rows=True).ok
    with pytest.raises(ResumeMismatchError, match="targets"):
        mgapsp.apsp(graph, out=out, client=cpu_client, sources=sources,
                    targets=targets[:10], dtype="float64", batch_size=64, resume=True)
    # read by label: xarray's .sel, dask.array and mgapsp.open agree with SciPy
    xr = pytest.importorskip("xarray")
    import dask.array as dsa

    ds = xr.open_zarr(out, consolidated=False)
    assert ds["distances"].dims == ("source", "target")
    assert ds["target"].shape == (57,)
    rng = np.random.default_rng(3)
    for i, j in zip(rng.integers(0, 300, 20), rng.integers(0, 57, 20)):
        a, b = int(sources[i]), int(targets[j])
        want = ref[i, j]
        assert float(ds.distances.sel(source=a, target=b)) == pytest.approx(want)
        assert mgapsp.open(out).distance(a, b) == pytest.approx(want)
    blocks = dsa.from_zarr(str(out), component="distances")
    assert_distances_equal(blocks.compute(), ref)
    result = mgapsp.open(out)
    assert_distances_equal(result.distances(sources[::-1], targets[:5]), ref[::-1, :5])
    with pytest.raises(mgapsp.UnknownLabelError, match="not a target"):
        result.distance(int(sources[0]), -1)


def test_rerun_into_the_same_path_with_other_rows(cpu_client, data_dir, tmp_path):
    """Regression: workers cached a store's sources by its path and graph, so a second
    job into the same path (--overwrite) with other sources or targets wrote the first
    job's rows."""
    graph = reweighted(mgapsp.read_graph(data_dir / "rome99.gr"), seed=4)
    out = tmp_path / "same.zarr"
    rng = np.random.default_rng(5)
    for count, n_targets in [(40, None), (40, None), (25, 31), (40, None)]:
        sources = rng.choice(graph.vertex_ids, size=count, replace=False)
        targets = (None if n_targets is None
                   else rng.choice(graph.vertex_ids, size=n_targets, replace=False))
        group = mgapsp.apsp(graph, out=out, client=cpu_client, sources=sources,
                            targets=targets, dtype="float64", batch_size=8,
                            overwrite=True)
        ref = scipy_distances(graph, graph.index_of(sources))
        if targets is not None:
            ref = ref[:, graph.index_of(targets)]
        assert_distances_equal(group["distances"][:], ref)


def test_hybrid_backend_uses_each_workers_own_backend(cpu_client, data_dir, tmp_path):
    """backend="hybrid": workers without a GPU run the CPU backend's algorithm."""
    graph = reweighted(mgapsp.read_graph(data_dir / "rome99.gr"), seed=9)
    out = tmp_path / "h.zarr"
    report = run_job(graph, out, cpu_client, backend="hybrid", batch_size=64,
                     sources=graph.vertex_ids[:512], dtype="float64")
    job = Store.open(out).job
    assert job["backend"] == "hybrid" and job["cpu_algorithm"] == "johnson"
    assert report.per_backend == {"cpu": 512}  # this cluster has no GPU
    assert verify_store(out, all_rows=True).ok


@pytest.mark.slow
def test_job_after_a_failed_job_on_the_same_client(cpu_client, data_dir, tmp_path):
    """Regression: a failed job's erred task keys must not leak into the next job."""
    bad = mgapsp.read_graph(data_dir / "soc-sign-bitcoinalpha.csv")
    with pytest.raises(NegativeCycleError):
        mgapsp.apsp(bad, out=tmp_path / "bad.zarr", client=cpu_client)
    good = reweighted(mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp"), seed=1)
    group = mgapsp.apsp(good, out=tmp_path / "good.zarr", client=cpu_client,
                        dtype="float64")
    assert_distances_equal(group["distances"][:], scipy_distances(good))


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("n_sources", [62586, 1_000_000, 4097, 100])
def test_gpu_batches_divide_among_worker_threads(data_dir, workers, n_sources):
    """The planner's GPU batches come in a multiple of the computing slots (two per
    GPU worker) and the last is short by fewer rows than there are batches, so that
    the last wave keeps every slot busy; memory still caps them."""
    from mgapsp.plan import choose_batch_size

    # Gnutella31's vertex count, an edge: no job of it is small enough for one batch
    graph = Graph.from_edges([0], [1], [1.0], n=62586)
    size = choose_batch_size(graph, n_sources, backend="gpu", n_workers=workers,
                             bytes_per_row=4 * 62586, memory=140 * 2**30)
    batches = -(-n_sources // size)
    last = n_sources - (batches - 1) * size
    if n_sources >= 2 * workers * 64:
        assert batches % (2 * workers) == 0
        assert 0 <= size - last < batches
    assert 1 <= size <= 8192
    capped = choose_batch_size(graph, n_sources, backend="gpu", n_workers=workers,
                               bytes_per_row=4 * 62586, memory=4 * 62586 * 4 * 100)
    assert capped <= 100


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
@pytest.mark.parametrize("workers", [1, 4])
def test_a_small_job_is_one_batch(data_dir, backend, workers):
    """A job of milliseconds is one batch, however many workers could share it; one a
    little larger is cut for them."""
    from mgapsp.plan import SMALL_JOB, choose_batch_size, small_job

    graph = mgapsp.read_graph(data_dir / "karate.mtx")
    assert small_job(graph, graph.n)
    assert choose_batch_size(graph, graph.n, backend=backend, n_workers=workers,
                             bytes_per_row=4 * graph.n, memory=2**30) == graph.n
    big = Graph.from_edges([0], [1], [1.0], n=2048)
    rows = SMALL_JOB // (big.n + big.m) + 1         # one row over the limit
    assert not small_job(big, rows)
    assert choose_batch_size(big, rows, backend=backend, n_workers=workers,
                             bytes_per_row=4 * big.n, memory=2**30) < rows


@pytest.mark.parametrize("n", [62586, 1_000_000, 5000, 1000])
@pytest.mark.parametrize("batch", [1956, 978, 3912, 2048, 489, 1000, 1, 8192])
def test_column_chunk_leaves_little_of_a_blosc_block(n, batch):
    """A chunk is about ``mgapsp.store.chunk-elements`` values, its width within 7/8 of that and no
    more, chosen for the fewest values left after its whole Blosc blocks (the widest
    such); a graph narrower than that is one chunk wide."""
    from mgapsp import config
    from mgapsp.plan import BLOSC_BLOCK_ELEMENTS, column_chunk

    cc = column_chunk(n, batch)
    target = max(1024, config.get("store.chunk-elements") // batch)
    if target >= n:
        assert cc == n
        return
    assert target - target // 8 <= cc <= target
    left = [(w * batch % BLOSC_BLOCK_ELEMENTS, -w)
            for w in range(target - target // 8, target + 1)]
    assert (cc * batch % BLOSC_BLOCK_ELEMENTS, -cc) == min(left)
    if batch in (1956, 978, 3912):      # p2p-Gnutella31's batches: a few KB left
        assert cc * batch % BLOSC_BLOCK_ELEMENTS < 2048


def test_settings_come_from_dask_config_and_the_old_variables(monkeypatch):
    """Every knob resolves through dask.config under ``mgapsp``; the old ``MGAPSP_*``
    variables still work and win; a bad value is one MgapspError naming its source."""
    import dask

    from mgapsp import MgapspError, config

    monkeypatch.delenv("MGAPSP_GPU_COMPUTING", raising=False)
    assert config.get("gpu.computing-batches") == config.KNOBS["gpu.computing-batches"].default
    with dask.config.set({"mgapsp.gpu.computing-batches": 3}):
        assert config.get("gpu.computing-batches") == 3
        monkeypatch.setenv("MGAPSP_GPU_COMPUTING", "5")
        assert config.get("gpu.computing-batches") == 5
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("MGAPSP_GPU_COMPUTING", bad)
        with pytest.raises(MgapspError, match="MGAPSP_GPU_COMPUTING must be"):
            config.get("gpu.computing-batches")
    monkeypatch.delenv("MGAPSP_GPU_COMPUTING")
    with dask.config.set({"mgapsp.store.write-threads": "many"}):
        with pytest.raises(MgapspError, match="mgapsp.store.write-threads must be an integer"):
            config.get("store.write-threads")
    for off in ("0", "no", "false", "off"):
        monkeypatch.setenv("MGAPSP_GPU_COMPRESS", off)
        assert config.get("gpu.compress") is False
    monkeypatch.setenv("MGAPSP_GPU_COMPRESS", "1")
    assert config.get("gpu.compress") is True
    assert all(k.startswith("mgapsp.") for k in config.settings())


@pytest.mark.slow       # subprocesses
def test_settings_from_the_environment_through_dask(tmp_path):
    """``DASK_MGAPSP__SECTION__KEY`` sets a knob, as for any Dask setting."""
    import subprocess
    import sys

    code = "from mgapsp import config; print(config.get('store.store-threads'))"
    env = {**os.environ, "DASK_MGAPSP__STORE__STORE_THREADS": "7"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "7"


def test_gpu_busy_counts_overlapping_batches_once():
    """A GPU worker's busy fraction is the union of its batches' computing spans over
    the job's wall time: two batches computing at once count once."""
    from mgapsp.jobs.report import JobReport

    report = JobReport(plan=None, store=None, seconds=10.0)
    report.gpu_s.update({"a": 9.0, "b": 1.0})
    report.computing = {"a": [(100.0, 104.0), (101.0, 105.0), (107.0, 108.0)],
                        "cpu": [(100.0, 109.0)]}
    busy = report.gpu_busy()
    assert busy["a"] == pytest.approx(0.6)      # 100-105 and 107-108
    assert busy["b"] == pytest.approx(0.1)      # spans unknown: its kernels' time
    assert "cpu" not in busy                    # a CPU worker is no GPU


def test_gpu_busy_counts_the_chunks_encoding_beside_the_search():
    """A GPU worker is busy while it encodes a batch's chunks as well as while it
    searches (issue 50: every kernel of the worker); the encoding spans stay out of
    the computing spans, whose depth is the GPU's computing slots."""
    from mgapsp.jobs.report import JobReport

    report = JobReport(plan=None, store=None, seconds=10.0)
    stats = {"worker": "a", "rows": 4, "backend": "gpu", "compute_s": 1.0, "write_s": 1.0,
             "stored_bytes": 8, "gpu_s": 1.0, "computing": [100.0, 102.0],
             "stages": {"encode_s": 0.5, "wait_s": 0.25, "copy_out_s": 0.25},
             "encoding": [[102.0, 102.5], [104.0, 105.0]]}
    report.add_batch(stats)
    report.add_batch({**stats, "computing": [101.0, 103.0], "encoding": [[103.0, 103.5]]})
    assert report.computing == {"a": [(100.0, 102.0), (101.0, 103.0)]}
    assert report.gpu_busy()["a"] == pytest.approx(0.45)   # 100-103.5 and 104-105
    assert report.worker_stages["a"] == {"encode_s": 1.0, "wait_s": 0.5, "copy_out_s": 0.5}


def test_idle_ends_are_the_job_before_and_after_every_batch_computing():
    """What no worker spends computing at the job's two ends: from its start to the
    first batch's kernels, from the last batch's kernels to its end."""
    from mgapsp.jobs.report import JobReport

    report = JobReport(plan=None, store=None, seconds=10.0, started=100.0)
    assert report.idle_ends() is None           # no batch computed
    report.computing = {"a": [(101.5, 104.0), (103.0, 107.0)], "b": [(102.0, 108.5)]}
    assert report.idle_ends() == pytest.approx((1.5, 1.5))
    # a worker's clock behind the client's: clamped to the job
    report.computing = {"a": [(99.0, 111.0)]}
    assert report.idle_ends() == (0.0, 0.0)


def test_the_tail_splits_into_the_last_writes_and_the_record():
    """After the last kernels: until the last batch's rows were written, then Dask's
    notice and the store's record."""
    from mgapsp.jobs.report import JobReport

    report = JobReport(plan=None, store=None, seconds=10.0, started=100.0)
    report.computing = {"a": [(101.0, 107.0)], "b": [(102.0, 108.0)]}
    report.batches = [{"written": 107.5}, {"written": 109.25}]
    assert report.tail() == pytest.approx((1.25, 0.75))
    report.batches = [{"written": 111.0}]           # a worker's clock ahead: clamped
    assert report.tail() == pytest.approx((2.0, 0.0))
    report.batches = []
    assert report.tail() is None


def test_writes_take_every_thread_only_while_no_batch_computes():
    """A batch writes wide (every thread of the process's share) only while no batch
    of its process computes on the GPU or waits to; a failed batch leaves the count."""
    from mgapsp.jobs.tasks import _Computing

    computing = _Computing()
    assert computing.idle()
    with computing.batch():
        assert not computing.idle()
    with pytest.raises(RuntimeError), computing.batch():
        raise RuntimeError("a kernel failed")
    assert computing.idle()


def test_a_run_reports_its_idle_ends(cpu_client, data_dir, tmp_path):
    """A real job: every worker's computing spans are kept (CPU ones too, which are no
    GPU's busy share), and its two idle ends fall inside it."""
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    report = run_job(graph, tmp_path / "ends.zarr", cpu_client, batch_size=32,
                     sources=graph.vertex_ids[:256])
    assert set(report.computing) == set(report.per_worker)
    assert sum(map(len, report.computing.values())) == report.batches_run == 8
    assert report.gpu_busy() == {}
    first, last = report.idle_ends()
    assert 0 < first and 0 < last and first + last < report.seconds
    # the store's last record comes after every batch's kernels
    assert last >= report.seconds - report.marks["recorded"]
    writes, record = report.tail()
    assert writes >= 0 and record > 0 and writes + record == pytest.approx(last)
