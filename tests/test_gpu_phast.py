"""Batched PHAST on the GPU (mgapsp.cuda.phast) against SciPy and the CPU sweep."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import (assert_distances_equal, assert_predecessors, planar_graph,
                     scipy_distances)
from mgapsp import hierarchy
from mgapsp.backends import phast as phast_room
from mgapsp.cuda import phast
from mgapsp.readers import read_graph

pytestmark = pytest.mark.gpu

DTYPES = [np.float32, np.float64]


def run(h, sources, dtype):
    dist, pred, stats = phast.phast_batch(phast.upload(h, dtype), sources)
    assert pred is None and dist.dtype == np.dtype(dtype)
    assert stats["rounds"] == max(0, h.height - 1)
    return phast.cupy_module().asnumpy(dist)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("batch", [1, 5, 32, 33, 70])
@pytest.mark.parametrize("seed", range(3))
def test_random_planar_graphs(seed, batch, dtype):
    rng = np.random.default_rng(100 + seed)
    graph = planar_graph(rng, int(rng.integers(60, 2000)), components=1 + seed)
    h = hierarchy.build(graph)
    src = rng.choice(graph.n, min(batch, graph.n), replace=False)
    got = run(h, src, dtype)
    ref = scipy_distances(graph, src)
    if dtype == np.float64:
        np.testing.assert_array_equal(got, ref)       # integer weights: exact
    else:
        assert_distances_equal(got, ref, dtype="float32")
    np.testing.assert_array_equal(got, phast_room.sweep(h, src, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("k", [2, 8, 32])
def test_levels_split_over_lanes_give_the_same_bits(data_dir, monkeypatch, k, dtype):
    """Every level's arcs split over ``k`` lanes (rather than as the GPU's size
    decides) give the one-lane sweep's distances and predecessors to the bit: float
    sums alike, ties to the lowest arc.  NY's ties are many (integer weights)."""
    graph = read_graph(data_dir / "NY.pace.gr.gz")
    h = hierarchy.build(graph)
    dh = phast.upload(h, dtype)
    src = np.random.default_rng(3).choice(graph.n, 40, replace=False)
    xp = phast.cupy_module()
    monkeypatch.setattr(phast, "lanes", lambda *a: 1)
    want, want_pred, _ = phast.phast_batch(dh, src, predecessors=True)
    tgt = np.random.default_rng(4).choice(graph.n, 500, replace=False)
    want_r, _, _ = phast.phast_batch(dh, src, phast.sweep(h, tgt))
    monkeypatch.setattr(phast, "lanes", lambda *a: k)
    got, got_pred, _ = phast.phast_batch(dh, src, predecessors=True)
    got_r, _, _ = phast.phast_batch(dh, src, phast.sweep(h, tgt))
    np.testing.assert_array_equal(xp.asnumpy(got), xp.asnumpy(want))
    np.testing.assert_array_equal(xp.asnumpy(got_pred), xp.asnumpy(want_pred))
    np.testing.assert_array_equal(xp.asnumpy(got_r), xp.asnumpy(want_r))
    assert_distances_equal(xp.asnumpy(got)[:8], scipy_distances(graph, src[:8]),
                           dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_wide_batches_give_the_narrow_ones_bits(data_dir, dtype):
    """From 512 sources each lane of the down sweep takes a vector of columns
    (float4, double2), padded to 768 / 704 columns: the distances and predecessors
    are those of the same sources a hundred at a time (a column a lane), to the bit,
    in full and restricted sweeps.  Nothing fills the state: whatever an earlier
    allocation left there (NaN here) never reaches a distance."""
    graph = read_graph(data_dir / "NY.pace.gr.gz")
    h = hierarchy.build(graph)
    dh = phast.upload(h, dtype)
    xp = phast.cupy_module()
    rng = np.random.default_rng(11)
    src = rng.choice(graph.n, 700, replace=False)
    assert phast.columns_per_lane(dtype, 700) > 1
    assert phast.columns_per_lane(dtype, 100) == 1
    junk = xp.full(graph.n * 768 * 3, np.nan, dtype=dtype)
    del junk                                      # its memory back in CuPy's pool
    got, got_pred, _ = phast.phast_batch(dh, src, predecessors=True)
    parts = [phast.phast_batch(dh, src[i:i + 100], predecessors=True)
             for i in range(0, 700, 100)]
    np.testing.assert_array_equal(xp.asnumpy(got), np.concatenate(
        [xp.asnumpy(d) for d, _, _ in parts]))
    np.testing.assert_array_equal(xp.asnumpy(got_pred), np.concatenate(
        [xp.asnumpy(p) for _, p, _ in parts]))
    tgt = rng.choice(graph.n, 900, replace=False)
    got_r, _, _ = phast.phast_batch(dh, src, phast.sweep(h, tgt))
    np.testing.assert_array_equal(xp.asnumpy(got_r), xp.asnumpy(got)[:, tgt])
    assert_distances_equal(xp.asnumpy(got)[::100], scipy_distances(graph, src[::100]),
                           dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_walks_too_deep_for_shared_memory_give_the_same_bits(data_dir, monkeypatch, dtype):
    """Each up walk works in a buffer by depth: in shared memory, or in global scratch
    where the tree is too deep for it (forced here); distances and predecessors alike."""
    graph = read_graph(data_dir / "NY.pace.gr.gz")
    h = hierarchy.build(graph)
    dh = phast.upload(h, dtype)
    xp = phast.cupy_module()
    src = np.random.default_rng(8).choice(graph.n, 90, replace=False)
    want = phast.phast_batch(dh, src, predecessors=True)
    want_top = phast.phast_batch(dh, src)[0]
    monkeypatch.setattr(phast, "_WALK_SHARED", 64)
    assert phast.walk_bytes(h.height, dtype, False) > 64
    got = phast.phast_batch(dh, src, predecessors=True)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_array_equal(xp.asnumpy(g), xp.asnumpy(w))
    np.testing.assert_array_equal(xp.asnumpy(phast.phast_batch(dh, src)[0]),
                                  xp.asnumpy(want_top))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["NY", "grid", "components"])
def test_the_top_product_gives_the_level_sweeps_bits(data_dir, kind, dtype):
    """With integer weights the sweep's top levels are one product over the walks'
    top entries and each rank's chain: the distances of the sweep that runs every
    level, to the bit, in full and restricted sweeps, for narrow and wide batches
    (a column a lane, a vector a lane), sources in the top levels included."""
    import dataclasses

    from test_hierarchy import _grid

    rng = np.random.default_rng(12)
    graph = {"NY": lambda: read_graph(data_dir / "NY.pace.gr.gz"),
             "grid": lambda: _grid(120),
             "components": lambda: planar_graph(rng, 3000, components=3)}[kind]()
    h = hierarchy.build(graph)
    dh = phast.upload(h, dtype)
    levels = dataclasses.replace(dh, top=0)
    assert 0 < dh.top == h.top(phast.TOP_LEVEL_RANKS, phast.TOP_ENTRIES)
    xp = phast.cupy_module()
    high = h.order[xp.asnumpy(dh.top_ranks)[:50]]          # vertices in the top levels
    tgt = rng.choice(graph.n, 300, replace=False)
    for count in (37, 600):
        src = np.concatenate([rng.choice(graph.n, count - 10, replace=False), high[:10]])
        got = xp.asnumpy(phast.phast_batch(dh, src)[0])
        np.testing.assert_array_equal(got, xp.asnumpy(phast.phast_batch(levels, src)[0]))
        got_r = xp.asnumpy(phast.phast_batch(dh, src, phast.sweep(h, tgt))[0])
        np.testing.assert_array_equal(got_r, got[:, tgt])
        assert_distances_equal(got[-12:], scipy_distances(graph, src[-12:]), dtype=dtype)


def test_float_weights_sweep_every_level():
    """Non-integer weights keep the level sweep's sums: no top product."""
    h = hierarchy.build(planar_graph(np.random.default_rng(7), 900, integer=False))
    assert not phast.exact_sums(h) and phast.upload(h, np.float64).top == 0


@pytest.mark.parametrize("name,count", [("rome99.gr", 200), ("Austin_net.tntp", 100),
                                        ("NY.pace.gr.gz", 64), ("ChicagoSketch_net.tntp", 90)])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_road_networks(data_dir, name, count, dtype):
    graph = read_graph(data_dir / name)
    h = hierarchy.build(graph)
    src = np.random.default_rng(1).choice(graph.n, count, replace=False)
    assert_distances_equal(run(h, src, dtype), scipy_distances(graph, src), dtype=dtype)


def test_float_weights_and_duplicate_sources():
    rng = np.random.default_rng(7)
    graph = planar_graph(rng, 900, integer=False)
    h = hierarchy.build(graph)
    src = np.array([5, 5, 0, 899, 5])
    got = run(h, src, np.float64)
    assert_distances_equal(got, scipy_distances(graph, src))
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("name", ["Austin_net.tntp", "NY.pace.gr.gz"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_restricted_sweep(data_dir, name, dtype):
    """RPHAST on the device: the targets' columns of the full sweep, in their order,
    with fewer arcs swept; the CPU's restricted sweep agrees."""
    graph = read_graph(data_dir / name)
    h = hierarchy.build(graph)
    dh = phast.upload(h, dtype)
    rng = np.random.default_rng(9)
    src = rng.choice(graph.n, 70, replace=False)
    full = run(h, src, dtype)
    for k in (1, 33, graph.n // 10):
        tgt = rng.choice(graph.n, k, replace=False)[::-1]
        sweep = phast.sweep(h, tgt)
        dist, _, stats = phast.phast_batch(dh, src, sweep)
        got = phast.cupy_module().asnumpy(dist)
        assert got.shape == (70, k) and dist.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, full[:, tgt])
        assert stats["relaxations"] == sweep.arcs * 70 < h.arcs * 70
        np.testing.assert_array_equal(got, phast_room.sweep(h, src, dtype=dtype,
                                                               targets=tgt))
    empty, _, _ = phast.phast_batch(dh, src, phast.sweep(h, []))
    assert empty.shape == (70, 0)


def test_backend_returns_the_targets_alone(data_dir):
    import mgapsp
    from mgapsp.backends import get_backend

    graph = read_graph(data_dir / "NY.pace.gr.gz")
    rng = np.random.default_rng(4)
    src, tgt = rng.choice(graph.n, 200, replace=False), rng.choice(graph.n, 150, replace=False)
    res = get_backend("gpu").distances(graph, src, algorithm="phast", dtype=np.float32,
                                       targets=tgt)
    assert res.targets_only and res.distances.shape == (200, 150)
    ref = scipy_distances(graph, src)[:, tgt]
    np.testing.assert_array_equal(res.distances, ref)
    got = mgapsp.apsp(graph, algorithm="phast", backend="gpu", sources=graph.labels[src],
                      targets=graph.labels[tgt], batch_size=64)
    np.testing.assert_array_equal(got, ref)


def run_with_predecessors(h, sources, dtype):
    dist, pred, _ = phast.phast_batch(phast.upload(h, dtype), sources, predecessors=True)
    cupy = phast.cupy_module()
    return cupy.asnumpy(dist), cupy.asnumpy(pred)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,count", [("rome99.gr", 150), ("Austin_net.tntp", 70),
                                        ("NY.pace.gr.gz", 40)])
def test_predecessors_on_road_networks(data_dir, name, count, dtype):
    """The GPU's predecessors close shortest paths, and are the CPU sweep's: both
    keep the first arc that gives a rank its final distance."""
    graph = read_graph(data_dir / name)
    h = hierarchy.for_graph(graph)
    src = np.random.default_rng(5).choice(graph.n, count, replace=False)
    dist, pred = run_with_predecessors(h, src, dtype)
    np.testing.assert_array_equal(dist, run(h, src, dtype))
    assert_distances_equal(dist, scipy_distances(graph, src), dtype=dtype)
    assert_predecessors(graph, src, dist, pred,
                        rtol=1e-12 if dtype == np.float64 else 1e-5)
    cpu_dist, cpu_pred = phast_room.sweep(h, src, dtype=dtype, predecessors=True)
    np.testing.assert_array_equal(dist, cpu_dist)
    np.testing.assert_array_equal(pred, cpu_pred)


@pytest.mark.parametrize("batch", [1, 33, 70])
@pytest.mark.parametrize("seed", range(3))
def test_predecessors_on_random_planar_graphs(seed, batch):
    rng = np.random.default_rng(400 + seed)
    graph = planar_graph(rng, int(rng.integers(100, 2500)), zero_fraction=0,
                         integer=seed != 1, components=1 + seed)
    h = hierarchy.build(graph)
    src = np.concatenate([rng.choice(graph.n, min(batch, graph.n), replace=False), [0]])
    dist, pred = run_with_predecessors(h, src, np.float64)
    assert_distances_equal(dist, scipy_distances(graph, src))
    assert_predecessors(graph, src, dist, pred)


def test_empty_and_bad_batches():
    graph = planar_graph(np.random.default_rng(2), 100)
    dh = phast.upload(hierarchy.build(graph), np.float32)
    dist, _, stats = phast.phast_batch(dh, [])
    assert dist.shape == (0, 100) and stats["relaxations"] == 0
    dist, pred, _ = phast.phast_batch(dh, [], predecessors=True)
    assert dist.shape == pred.shape == (0, 100)
    with pytest.raises(ValueError, match="predecessors need the full sweep"):
        phast.phast_batch(dh, [1], phast.sweep(hierarchy.build(graph), [2]),
                          predecessors=True)
    with pytest.raises(ValueError, match="0 <= source < N. Got N=100, source=100"):
        phast.phast_batch(dh, [3, 100])


# -- as users meet it -------------------------------------------------------------------
def test_apsp_in_process(data_dir):
    import mgapsp

    graph = read_graph(data_dir / "NY.pace.gr.gz")
    src = np.random.default_rng(3).choice(graph.n, 300, replace=False)
    got = mgapsp.apsp(graph, algorithm="phast", backend="gpu", sources=graph.labels[src],
                      batch_size=128)
    assert got.dtype == np.float32                   # exact: integer sums below 2**24
    np.testing.assert_array_equal(got, scipy_distances(graph, src))
    dist, pred = mgapsp.apsp(graph, algorithm="phast", backend="gpu", predecessors=True,
                             sources=graph.labels[src[:50]], batch_size=32)
    np.testing.assert_array_equal(dist, got[:50])
    assert_predecessors(graph, src[:50], dist, pred)


def test_job_on_a_gpu_cluster(gpu_client, tmp_path):
    from test_phast_jobs import check_od_job

    graph = planar_graph(np.random.default_rng(12), 5000, integer=False)
    check_od_job(gpu_client, tmp_path, graph, batch_size=100)


def test_predecessor_job_on_a_gpu_cluster(gpu_client, tmp_path):
    import mgapsp

    graph = planar_graph(np.random.default_rng(13), 3000, zero_fraction=0)
    src = np.arange(0, graph.n, 11)
    res = mgapsp.apsp(graph, out=tmp_path / "p.zarr", client=gpu_client, algorithm="phast",
                      sources=src, predecessors=True, batch_size=64)
    assert res.info["algorithm"] == "phast" and res.info["complete"]
    dist = res.distances()
    np.testing.assert_array_equal(dist, scipy_distances(graph, src))   # integer weights
    assert_predecessors(graph, src, dist, res["predecessors"][:])


def test_auto_picks_phast_after_a_phast_job(gpu_client, tmp_path, monkeypatch):
    """A job beside an earlier phast job's store finds its hierarchy: auto runs phast
    (a fresh process would read it from mgapsp-hierarchies/ the same way)."""
    import mgapsp

    monkeypatch.setattr(hierarchy.storage, "_MEMO", type(hierarchy.storage._MEMO)())
    graph = planar_graph(np.random.default_rng(31), 3000)
    src = np.arange(0, 3000, 11)
    first = mgapsp.apsp(graph, out=tmp_path / "a.zarr", client=gpu_client, sources=src)
    assert first.info["algorithm"] == "bellman-ford"
    mgapsp.apsp(graph, out=tmp_path / "b.zarr", client=gpu_client, sources=src,
                algorithm="phast")
    hierarchy.storage._MEMO.clear()                     # as in a new process: only the file
    auto = mgapsp.apsp(graph, out=tmp_path / "c.zarr", client=gpu_client, sources=src)
    assert auto.info["algorithm"] == "phast"
    np.testing.assert_array_equal(auto.distances(), first.distances())
    in_process = mgapsp.apsp(graph, backend="gpu", sources=src)   # memo from the job
    np.testing.assert_array_equal(in_process, first.distances())


def test_auto_builds_the_hierarchy_of_a_long_road_job(gpu_client, data_dir, tmp_path,
                                                    monkeypatch):
    """Enough rows of a road network: auto builds its hierarchy (kept beside the
    store) and runs phast; where the build is refused (a graph that fills in; here a
    limit of one arc per edge and vertex, which Austin's 1.6 pass), auto runs
    Bellman-Ford instead, on a cluster and in-process."""
    import dask.config

    import mgapsp
    from mgapsp import plan

    monkeypatch.setattr(plan, "AUTO_BUILD_SOURCES", 1000)
    monkeypatch.setattr(hierarchy.storage, "_MEMO", type(hierarchy.storage._MEMO)())
    graph = read_graph(data_dir / "rome99.gr")
    ref = scipy_distances(graph, np.arange(graph.n))
    res = mgapsp.apsp(graph, out=tmp_path / "a.zarr", client=gpu_client)
    assert res.info["algorithm"] == "phast"
    np.testing.assert_array_equal(res.distances(), ref)
    assert (tmp_path / "mgapsp-hierarchies" / f"{graph.fingerprint}.npz").exists()
    austin = read_graph(data_dir / "Austin_net.tntp")
    src = np.arange(0, austin.n, 7)
    with dask.config.set({"mgapsp.phast.fill-limit": 1}):
        res = mgapsp.apsp(austin, out=tmp_path / "b.zarr", client=gpu_client,
                          sources=austin.labels[src])
        assert res.info["algorithm"] == "bellman-ford"
        assert_distances_equal(res.distances(), scipy_distances(austin, src), dtype="float32")
        got = mgapsp.apsp(austin, backend="gpu", sources=austin.labels[src])
        assert_distances_equal(got, scipy_distances(austin, src), dtype="float32")
        assert not hierarchy.known(austin)


def test_backend_refuses_zero_weight_predecessors_and_negative_weights():
    from mgapsp.backends import get_backend
    from mgapsp.errors import UnsupportedError
    from mgapsp.graph import Graph

    gpu = get_backend("gpu")
    zero = Graph.from_edges([0, 1], [1, 2], [0.0, 2.0], n=3)
    with pytest.raises(UnsupportedError, match="every edge weight is positive"):
        gpu.distances(zero, [0], algorithm="phast", dtype=np.float32, predecessors=True)
    ok = Graph.from_edges([0, 1], [1, 2], [1.0, 2.0], n=3)
    res = gpu.distances(ok, [0, 2], algorithm="phast", dtype=np.float32, predecessors=True)
    np.testing.assert_array_equal(res.predecessors, [[-1, 0, 1], [-1, -1, -1]])
    neg = Graph.from_edges([0, 1], [1, 2], [1.0, -2.0], n=3)
    with pytest.raises(UnsupportedError, match="phast needs non-negative weights"):
        gpu.distances(neg, [0], algorithm="phast", dtype=np.float32)
