"""The phast algorithm as users meet it: apsp() in-process and on a Dask cluster, the
CLI with its hierarchy kept beside the store, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

import mgapsp
from mgapsp import hierarchy
from mgapsp.plan import road_like
from mgapsp.backends import phast as phast_room
from mgapsp.backends import get_backend
from mgapsp.errors import UnsupportedError
from mgapsp.graph import Graph

from helpers import (assert_distances_equal, assert_predecessors, planar_graph, reweighted,
                     scipy_distances)
from test_cli import assert_one_line_error, mgapsp_cli


def test_apsp_in_process(data_dir):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    src = np.arange(0, graph.n, 37)
    got = mgapsp.apsp(graph, algorithm="phast", backend="cpu", sources=graph.labels[src],
                      batch_size=16)
    np.testing.assert_array_equal(got, scipy_distances(graph, src))   # integer weights


def test_origin_destination_in_process(data_dir):
    """sources and targets: the backend sweeps only what the targets need (RPHAST)
    and returns their columns, equal to SciPy's."""
    graph = mgapsp.read_graph(data_dir / "Austin_net.tntp")
    rng = np.random.default_rng(8)
    src, tgt = rng.choice(graph.n, 40, replace=False), rng.choice(graph.n, 25, replace=False)
    got = mgapsp.apsp(graph, algorithm="phast", backend="cpu", sources=graph.labels[src],
                      targets=graph.labels[tgt], batch_size=16)
    assert got.shape == (40, 25)
    assert_distances_equal(got, scipy_distances(graph, src)[:, tgt])
    res = get_backend("cpu").distances(graph, src, algorithm="phast", dtype=np.float64,
                                       targets=tgt)
    assert res.targets_only and res.distances.shape == (40, 25)
    other = get_backend("cpu").distances(graph, src, algorithm="dijkstra",
                                         dtype=np.float64, targets=tgt)
    # SciPy gives every column, the Numba kernels (once loaded) the targets' alone
    cols = other.distances if other.targets_only else other.distances[:, tgt]
    assert_distances_equal(cols, res.distances)


def test_predecessors_in_process(data_dir):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    src = np.arange(3, graph.n, 41)
    dist, pred = mgapsp.apsp(graph, algorithm="phast", backend="cpu", batch_size=16,
                             sources=graph.labels[src], predecessors=True)
    np.testing.assert_array_equal(dist, scipy_distances(graph, src))
    assert_predecessors(graph, src, dist, pred)


def test_predecessors_on_a_cluster_give_paths(cpu_client, tmp_path):
    """A phast job with predecessors: the store's rows close shortest paths, and
    ``path`` walks them from any vertex back to its source."""
    graph = planar_graph(np.random.default_rng(12), 500, integer=False, zero_fraction=0,
                         components=2)
    src = np.arange(0, graph.n, 9)
    res = mgapsp.apsp(graph, out=tmp_path / "p.zarr", client=cpu_client, algorithm="phast",
                      sources=src, predecessors=True, batch_size=16)
    assert res.info["algorithm"] == "phast" and res.info["complete"]
    dist = res.distances()
    assert_distances_equal(dist, scipy_distances(graph, src))
    assert_predecessors(graph, src, dist, res["predecessors"][:])
    for u, v in [(0, 498), (9, 3), (450, 450)]:
        hops = res.path(u, v)
        if hops is None:
            assert np.isinf(res.distance(u, v))
            continue
        assert hops[0] == u and hops[-1] == v
        idx = graph.index_of(hops)
        length = graph.edge_weights(idx[:-1], idx[1:]).sum()
        assert length == pytest.approx(res.distance(u, v), rel=1e-12)


def check_od_job(client, tmp_path, graph, *, batch_size):
    """An origin-destination job with phast on ``client``: its store equals SciPy,
    its hierarchy lies beside the store."""
    src, tgt = np.arange(0, graph.n, 7), np.arange(1, graph.n, 3)
    res = mgapsp.apsp(graph, out=tmp_path / "od.zarr", client=client, algorithm="phast",
                      sources=src, targets=tgt, batch_size=batch_size)
    assert res.info["algorithm"] == "phast" and res.info["complete"]
    assert_distances_equal(res.distances(), scipy_distances(graph, src)[:, tgt])
    saved = list((tmp_path / "mgapsp-hierarchies").glob("*.npz"))
    assert [p.stem for p in saved] == [graph.fingerprint]


def test_apsp_on_a_cluster_with_targets(cpu_client, tmp_path):
    graph = planar_graph(np.random.default_rng(4), 700, integer=False)
    check_od_job(cpu_client, tmp_path, graph, batch_size=20)


@pytest.mark.slow
def test_cli_keeps_the_hierarchy_beside_the_store(data_dir, tmp_path):
    out = tmp_path / "austin.zarr"
    args = ("-v", "run", data_dir / "Austin_net.tntp", "-o", out, "--backend", "cpu",
            "--algorithm", "phast", "--no-dashboard")
    first = mgapsp_cli(*args)
    assert "phast on cpu" in first.stdout and "contraction hierarchy of" in first.stderr
    graph = mgapsp.read_graph(data_dir / "Austin_net.tntp")
    saved = tmp_path / "mgapsp-hierarchies" / f"{graph.fingerprint}.npz"
    built = saved.stat().st_mtime_ns
    assert_distances_equal(zarr.open_group(out)["distances"][::53],
                           scipy_distances(graph, np.arange(0, graph.n, 53)))
    mgapsp_cli(*args, "--overwrite")
    assert saved.stat().st_mtime_ns == built          # the next job read it
    verify = mgapsp_cli("verify", out)
    assert "ok" in verify.stdout


@pytest.mark.slow       # mgapsp in subprocesses
def test_cli_refusals(data_dir, tmp_path):
    zero = tmp_path / "zero.csv"
    zero.write_text("0,1,0\n1,2,3\n2,0,4\n")
    pred = mgapsp_cli("run", zero, "-o", tmp_path / "p.zarr", "--backend", "cpu",
                      "--algorithm", "phast", "--predecessors", check=False)
    assert_one_line_error(pred, "phast gives predecessors only where every edge weight is "
                          "positive", "0 -> 1", "bellman-ford")
    assert not (tmp_path / "p.zarr").exists()
    neg = tmp_path / "neg.csv"
    neg.write_text("0,1,2\n1,2,-1\n2,0,4\n")
    proc = mgapsp_cli("run", neg, "-o", tmp_path / "n.zarr", "--backend", "cpu",
                      "--algorithm", "phast", check=False)
    assert_one_line_error(proc, "phast needs non-negative weights", "johnson")


@pytest.mark.slow       # mgapsp in subprocesses
def test_a_graph_that_fills_in_is_refused_before_the_store(tmp_path):
    """A random graph has no small separators: its hierarchy would have a hundred arcs
    per edge, past the limit; the job says so in one line and leaves no store."""
    rng = np.random.default_rng(8)
    edges = tmp_path / "random.csv"
    src, dst = rng.integers(0, 6000, 15000), rng.integers(0, 6000, 15000)
    edges.write_text("".join(f"{a},{b},{w}\n" for a, b, w in
                             zip(src, dst, rng.integers(1, 9, 15000))))
    out = tmp_path / "r.zarr"
    proc = mgapsp_cli("run", edges, "-o", out, "--backend", "cpu", "--algorithm", "phast",
                      "--no-dashboard", check=False)
    assert_one_line_error(proc, "is not road-like", "use bellman-ford or dijkstra")
    assert not out.exists()


def test_api_refusals():
    g = Graph.from_edges([0, 1], [1, 2], [1.0, -1.0], n=3)
    with pytest.raises(UnsupportedError, match="phast needs non-negative weights"):
        mgapsp.apsp(g, algorithm="phast", backend="cpu")
    zero = Graph.from_edges([0, 1], [1, 2], [1.0, 0.0], n=3)
    with pytest.raises(UnsupportedError, match="every edge weight is positive"):
        mgapsp.apsp(zero, algorithm="phast", backend="cpu", predecessors=True)
    with pytest.raises(UnsupportedError, match="every edge weight is positive"):
        get_backend("cpu").distances(zero, [0], algorithm="phast", dtype=np.float64,
                                     predecessors=True)
    ok = Graph.from_edges([0, 1], [1, 2], [1.0, 2.0], n=3)
    dist, pred = mgapsp.apsp(ok, algorithm="phast", backend="cpu", predecessors=True)
    np.testing.assert_array_equal(pred, [[-1, 0, 1], [-1, -1, 1], [-1, -1, -1]])
    assert hierarchy.for_graph(ok) is hierarchy.for_graph(ok)     # built once


def test_auto_picks_phast_once_the_hierarchy_is_built(tmp_path, monkeypatch):
    from mgapsp.plan import choose_algorithm, plan_job

    monkeypatch.setattr(hierarchy.storage, "_MEMO", type(hierarchy.storage._MEMO)())
    graph = planar_graph(np.random.default_rng(21), 300)
    assert choose_algorithm(graph, "auto", "gpu", 50) == "bellman-ford"
    assert choose_algorithm(graph, "auto", "gpu", 50, hierarchy_ready=True) == "phast"
    negative = reweighted(graph)
    assert choose_algorithm(negative, "auto", "gpu", 50, hierarchy_ready=True) == "johnson"
    kw = dict(algorithm="auto", backend="gpu", dtype="auto", sources=None, batch_size=None,
              n_workers=1, memory=2**34, hierarchy_ready=True)
    assert plan_job(graph, predecessors=False, **kw).algorithm == "phast"
    # predecessors: phast where every weight is positive, else Bellman-Ford
    assert (graph.weights == 0).any()
    assert plan_job(graph, predecessors=True, **kw).algorithm == "bellman-ford"
    positive = planar_graph(np.random.default_rng(21), 300, zero_fraction=0)
    assert plan_job(positive, predecessors=True, **kw).algorithm == "phast"
    # on the CPU too: its sweep beats Dijkstra per source
    assert plan_job(graph, predecessors=False, **{**kw, "backend": "cpu"}).algorithm == "phast"
    # built: in this process, or saved in a folder that a later process reads
    assert not hierarchy.known(graph) and not hierarchy.known(graph, tmp_path)
    hierarchy.cached(graph, tmp_path)
    assert not hierarchy.known(graph)                       # not in memory yet
    assert hierarchy.known(graph, tmp_path) and hierarchy.known(graph)
    monkeypatch.setattr(hierarchy.storage, "AUTO_ARCS", 0)          # one that fills in: not used
    assert not hierarchy.known(graph)


def test_gpu_batches_are_sized_for_the_sweep_state_and_the_block():
    """The planner's per-source cost is a difference of two batch estimates: each
    source adds two words per vertex (its state column and its output row) and its
    walk's top entries (a rank and a value a level, at most one a vertex), and an
    estimate covers the state padded to a multiple of 32 * 4 sources."""
    from mgapsp.backends import get_backend
    from mgapsp.cuda import phast

    n = 2000
    for w in (4, 8):
        dt = np.float32 if w == 4 else np.float64
        assert (phast.batch_bytes(n, 2, dt) - phast.batch_bytes(n, 1, dt)
                == 2 * n * w + n * (4 + w))
        for b in (1, 31, 33, 100, 600, 700):
            q = 32 * phast.columns_per_lane(dt, b)
            padded = -(-b // q) * q
            assert phast.batch_bytes(n, b, dt) >= n * (padded + b) * w
    graph = planar_graph(np.random.default_rng(5), n)
    gpu = get_backend("gpu")
    need = [gpu.memory_needed(graph, b, algorithm="phast", dtype=np.float32,
                              predecessors=False) for b in (0, 1)]
    assert need[1] - need[0] >= 2 * n * 4


@pytest.mark.parametrize("name,road", [
    ("NY.pace.gr.gz", True), ("rome99.gr", True), ("Austin_net.tntp", True),
    ("ChicagoSketch_net.tntp", True), ("p2p-Gnutella09.txt", False),
    ("CA-GrQc.txt", False), ("netscience.mtx", False), ("USAir97.mtx", False)])
def test_road_like(data_dir, name, road):
    assert road_like(mgapsp.read_graph(data_dir / name)) is road


def test_street_grids_are_road_like():
    """A square grid with a tenth of its streets closed: degree below 4, long in hops."""
    side = 60
    v = np.arange(side * side).reshape(side, side)
    src = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    keep = np.random.default_rng(3).random(len(src)) > 0.1
    w = np.random.default_rng(4).integers(10, 1000, int(keep.sum())).astype(float)
    grid = Graph.from_edges(src[keep], dst[keep], w, n=side * side, directed=False)
    assert road_like(grid)


def test_meshes_and_negative_weights_are_not_road_like():
    mesh = planar_graph(np.random.default_rng(2), 4000)     # Delaunay: degree 6
    assert not road_like(mesh)
    assert not road_like(reweighted(mesh))
    assert not road_like(Graph.from_edges([], [], [], n=5))     # no edges


def test_auto_builds_a_hierarchy_for_many_rows_of_a_road_network(data_dir):
    """auto builds a road network's hierarchy from AUTO_BUILD_SOURCES rows on (GPUs)
    or AUTO_BUILD_SOURCES_CPU (the CPU), where the caller can build one (with
    predecessors, where every weight is positive); never for other graphs."""
    from mgapsp.plan import (AUTO_BUILD_SOURCES, AUTO_BUILD_SOURCES_CPU, choose_algorithm,
                             plan_job)

    rome = mgapsp.read_graph(data_dir / "rome99.gr")
    k = AUTO_BUILD_SOURCES
    assert choose_algorithm(rome, "auto", "gpu", k, may_build=True) == "phast"
    assert choose_algorithm(rome, "auto", "gpu", k - 1, may_build=True) == "bellman-ford"
    assert choose_algorithm(rome, "auto", "gpu", k) == "bellman-ford"
    c = AUTO_BUILD_SOURCES_CPU
    assert choose_algorithm(rome, "auto", "cpu", c, may_build=True) == "phast"
    assert choose_algorithm(rome, "auto", "cpu", c - 1, may_build=True) == "dijkstra"
    assert choose_algorithm(rome, "auto", "cpu", c) == "dijkstra"
    social = mgapsp.read_graph(data_dir / "p2p-Gnutella09.txt")
    assert choose_algorithm(social, "auto", "gpu", k, may_build=True) == "bellman-ford"
    rows = np.tile(rome.labels, -(-k // rome.n))
    kw = dict(algorithm="auto", backend="gpu", dtype="auto", sources=rows, batch_size=None,
              n_workers=1, memory=2**34, may_build=True)
    assert plan_job(rome, predecessors=False, **kw).algorithm == "phast"
    assert plan_job(rome, predecessors=True, **kw).algorithm == "phast"    # weights > 0


def test_auto_sweeps_a_road_networks_hierarchy_on_the_cpu(data_dir):
    """In process on the CPU, AUTO_BUILD_SOURCES_CPU rows of a road network: auto
    builds the hierarchy and sweeps it, and the rows are SciPy's."""
    from scipy.sparse.csgraph import dijkstra

    from mgapsp import hierarchy
    from mgapsp.plan import AUTO_BUILD_SOURCES_CPU

    rome = mgapsp.read_graph(data_dir / "rome99.gr")
    rows = np.tile(rome.labels, -(-AUTO_BUILD_SOURCES_CPU // rome.n))[:AUTO_BUILD_SOURCES_CPU]
    got = mgapsp.apsp(rome, sources=rows, backend="cpu")
    assert hierarchy.known(rome)
    want = dijkstra(rome.to_scipy(), indices=rome.index_of(rows[:rome.n]))
    np.testing.assert_array_equal(got[:rome.n], want)
