"""Closeness, harmonic centrality, eccentricity, diameter and the average shortest path
length without the n x n matrix, against NetworkX's own functions: real graphs of
tests/data and random ones, directed and undirected, weighted and not, connected or
not.  Equal to 1e-9 relative (the sums run in another order than NetworkX's)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mgapsp
from mgapsp.backends import get_backend
from mgapsp.reductions import row_reductions

REL = 1e-9


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in b:
        assert math.isclose(a[k], b[k], rel_tol=REL, abs_tol=1e-12), (k, a[k], b[k])


def _nx(path, data_dir) -> nx.Graph:
    g = mgapsp.read_graph(data_dir / path)
    G = nx.DiGraph() if g.directed else nx.Graph()
    G.add_nodes_from(g.labels.tolist())
    src = g.labels[g.sources_of_edges].tolist()
    dst = g.labels[g.indices].tolist()
    G.add_weighted_edges_from(zip(src, dst, g.weights.tolist()))
    return G


@pytest.mark.slow
@pytest.mark.parametrize("path", ["karate.mtx", "USAir97.mtx", "netscience.mtx",
                                  "SiouxFalls_net.tntp", "gr17.tsp"])
def test_real_graphs(path, data_dir):
    G = _nx(path, data_dir)
    for distance in (None, "weight"):
        _close(mgapsp.closeness_centrality(G, distance=distance),
               nx.closeness_centrality(G, distance=distance))
        _close(mgapsp.closeness_centrality(G, distance=distance, wf_improved=False),
               nx.closeness_centrality(G, distance=distance, wf_improved=False))
        _close(mgapsp.harmonic_centrality(G, distance=distance),
               nx.harmonic_centrality(G, distance=distance))
    connected = (nx.is_strongly_connected(G) if G.is_directed() else nx.is_connected(G))
    if connected:
        _close(mgapsp.eccentricity(G, weight="weight"), nx.eccentricity(G, weight="weight"))
        assert mgapsp.diameter(G) == nx.diameter(G)
        assert math.isclose(mgapsp.average_shortest_path_length(G, weight="weight"),
                            nx.average_shortest_path_length(G, weight="weight"),
                            rel_tol=REL)
    else:
        with pytest.raises(nx.NetworkXError, match="infinite path length"):
            mgapsp.eccentricity(G)
        with pytest.raises(nx.NetworkXError, match="not .*connected"):
            mgapsp.average_shortest_path_length(G)


def test_a_large_directed_road_network_by_sampled_vertices(data_dir):
    """rome99 (3,353 vertices): NetworkX's closeness of a few vertices, one search
    each, against mgapsp's of every vertex."""
    G = _nx("rome99.gr", data_dir)
    ours = mgapsp.closeness_centrality(G, distance="weight")
    for u in list(G)[::400]:
        assert math.isclose(ours[u], nx.closeness_centrality(G, u=u, distance="weight"),
                            rel_tol=REL)
        assert mgapsp.closeness_centrality(G, u=u, distance="weight") == pytest.approx(
            ours[u], rel=REL)


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 25))
    directed = draw(st.booleans())
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(range(n))
    integral = draw(st.booleans())
    weight = st.integers(0, 50) if integral else st.floats(0.1, 10, allow_nan=False)
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), weight),
                          max_size=3 * n))
    G.add_weighted_edges_from(edges)
    return G


@settings(max_examples=60, deadline=None)
@given(graphs(), st.booleans())
def test_random_graphs(G, weighted):
    distance = "weight" if weighted else None
    _close(mgapsp.closeness_centrality(G, distance=distance, backend="cpu"),
           nx.closeness_centrality(G, distance=distance))
    _close(mgapsp.harmonic_centrality(G, distance=distance, backend="cpu"),
           nx.harmonic_centrality(G, distance=distance))
    nodes = list(G)[: max(1, len(G) // 2)]
    sources = list(G)[len(G) // 3:]
    _close(mgapsp.harmonic_centrality(G, nbunch=nodes, sources=sources, distance=distance,
                                      backend="cpu"),
           nx.harmonic_centrality(G, nbunch=nodes, sources=sources, distance=distance))
    connected = (nx.is_strongly_connected(G) if G.is_directed() else nx.is_connected(G))
    if connected:
        _close(mgapsp.eccentricity(G, weight=distance, backend="cpu"),
               nx.eccentricity(G, weight=distance))
        assert math.isclose(
            mgapsp.average_shortest_path_length(G, weight=distance, backend="cpu"),
            nx.average_shortest_path_length(G, weight=distance), rel_tol=REL)
    else:
        with pytest.raises(nx.NetworkXError):
            mgapsp.eccentricity(G, backend="cpu")
        with pytest.raises(nx.NetworkXError):
            mgapsp.average_shortest_path_length(G, weight=distance, backend="cpu")


def test_networkx_edge_cases():
    with pytest.raises(nx.NetworkXPointlessConcept):
        mgapsp.average_shortest_path_length(nx.Graph())
    assert mgapsp.average_shortest_path_length(nx.empty_graph(1)) == 0
    with pytest.raises(ValueError, match="method not supported"):
        mgapsp.average_shortest_path_length(nx.path_graph(3), method="astar")
    with pytest.raises(nx.NodeNotFound):
        mgapsp.closeness_centrality(nx.path_graph(3), u=9)
    assert mgapsp.eccentricity(nx.path_graph(4), v=0) == nx.eccentricity(nx.path_graph(4), v=0)
    G = nx.path_graph(4)
    assert mgapsp.diameter(G, e={0: 7, 1: 2}) == 7
    # no edges: every vertex reaches itself only
    assert mgapsp.closeness_centrality(nx.empty_graph(3)) == {0: 0.0, 1: 0.0, 2: 0.0}


def test_other_inputs_are_keyed_by_their_labels():
    import scipy.sparse as sp

    m = sp.csr_matrix(np.array([[0, 2, 0], [0, 0, 3], [1, 0, 0]], dtype=float))
    G = nx.from_scipy_sparse_array(m, create_using=nx.DiGraph)
    _close(mgapsp.closeness_centrality(m, distance="weight"),
           nx.closeness_centrality(G, distance="weight"))
    with pytest.raises(mgapsp.MgapspError, match="not strongly connected"):
        mgapsp.eccentricity(sp.csr_matrix(np.array([[0, 1.0], [0, 0]])))


def test_row_reductions_on_host():
    block = np.array([[0, 2, np.inf, 4], [np.inf, 0, np.inf, np.inf]], dtype=np.float32)
    red = row_reductions(block)
    assert red["reachable"].tolist() == [3, 1]
    assert red["total"].tolist() == [6, 0]
    assert red["harmonic"].tolist() == [0.75, 0]
    assert red["eccentricity"].tolist() == [4, 0]


def test_row_metrics_keep_no_row_and_check_float32():
    """Distances past 2**24 in float32: the batch is reduced again from float64."""
    import scipy.sparse as sp

    big = float(2**23 + 1)
    m = sp.csr_matrix((np.array([big, big, 2.0**25]), ([0, 1, 3], [1, 2, 4])),
                      shape=(5, 5))
    g = mgapsp.as_graph(m)
    cpu = get_backend("cpu")
    red = cpu.row_metrics(g, np.arange(5), batch_size=2, algorithm="dijkstra",
                          dtype=np.dtype(np.float32), checked32=True)
    want = row_reductions(mgapsp.apsp(g, dtype="float64", backend="cpu"))
    for k in want:
        np.testing.assert_array_equal(red[k], want[k])


@pytest.mark.gpu
def test_a_gpu_job_stores_the_same_metrics(gpu_client, data_dir, tmp_path):
    """Metrics reduced on the device in a job's batches, with and without the rows,
    equal the CPU's reductions of SciPy's rows."""
    from mgapsp.jobs.driver import run_job
    from mgapsp.reductions import metric_values

    g = mgapsp.read_graph(data_dir / "rome99.gr")
    want = metric_values(row_reductions(mgapsp.apsp(g, backend="cpu", dtype="float64")),
                         g.n)
    for distances in (True, False):
        out = tmp_path / f"gpu-{distances}.zarr"
        run_job(g, out, gpu_client, backend="gpu", batch_size=512, distances=distances,
                metrics=("closeness", "harmonic", "eccentricity"))
        res = mgapsp.open(out)
        for name, values in want.items():
            np.testing.assert_allclose(res.metric(name), values, rtol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["USAir97.mtx", "rome99.gr"])
def test_on_the_gpu(path, data_dir):
    """The device's reductions against the host's on the same rows, and NetworkX."""
    import cupy

    from mgapsp.cuda.reduce import row_reductions as device_reductions

    block = np.array([[0, 2, np.inf, 4], [np.inf, 0, np.inf, 7]], dtype=np.float32)
    got = {k: cupy.asnumpy(v) for k, v in device_reductions(cupy.asarray(block)).items()}
    for k, v in row_reductions(block).items():
        np.testing.assert_array_equal(got[k], v)
    G = _nx(path, data_dir)
    on_gpu = mgapsp.closeness_centrality(G, distance="weight", backend="gpu")
    on_cpu = mgapsp.closeness_centrality(G, distance="weight", backend="cpu")
    _close(on_gpu, on_cpu)
    _close(mgapsp.harmonic_centrality(G, backend="gpu"), mgapsp.harmonic_centrality(G))
    sample = list(G)[::300]
    for u in sample:
        assert math.isclose(on_gpu[u], nx.closeness_centrality(G, u=u, distance="weight"),
                            rel_tol=REL)


def test_phast_sweeps_give_the_same_metrics(data_dir):
    """A road network's hierarchy swept (the reversed graph's for a directed one)."""
    G = _nx("Anaheim_net.tntp", data_dir)
    want = nx.closeness_centrality(G, distance="weight")
    _close(mgapsp.closeness_centrality(G, distance="weight", backend="cpu",
                                       algorithm="phast"), want)
    _close(mgapsp.harmonic_centrality(G, distance="weight", backend="cpu",
                                      algorithm="phast"),
           nx.harmonic_centrality(G, distance="weight"))


# -- metrics stored by a job ------------------------------------------------------------

def test_a_job_stores_each_sources_metrics(cpu_client, data_dir, tmp_path):
    """Per-source metrics of the job's rows (out of each source): NetworkX's on the
    reversed graph for closeness and harmonic centrality, the rows' own largest
    distance; by label, in xarray, resumable, refused if asked otherwise on resume."""
    from mgapsp.errors import ResumeMismatchError
    from mgapsp.jobs.driver import run_job
    from mgapsp.store import Store, damaged_batches

    g = mgapsp.read_graph(data_dir / "Anaheim_net.tntp")
    out = tmp_path / "m.zarr"
    run_job(g, out, cpu_client, batch_size=128,
            metrics=("closeness", "harmonic", "eccentricity"))
    G = _nx("Anaheim_net.tntp", data_dir).reverse()     # rows out of a source: inward
    res = mgapsp.open(out)
    labels = res.store.labels("source").tolist()
    _close(dict(zip(labels, res.metric("closeness").tolist())),
           nx.closeness_centrality(G, distance="weight"))
    _close(dict(zip(labels, res.metric("harmonic").tolist())),
           nx.harmonic_centrality(G, distance="weight"))
    rows = res.distances()
    np.testing.assert_array_equal(res.metric("eccentricity"),
                                  np.max(rows, axis=1, where=np.isfinite(rows), initial=0))
    assert res.metric("reachable", [1, 2]).tolist() == np.isfinite(rows[:2]).sum(1).tolist()
    assert float(res.to_xarray().closeness.sel(source=7)) == res.metric("closeness", [7])[0]
    # a batch's metric chunk gone: damage, computed again by --resume
    (out / "harmonic" / "c" / "2").unlink()
    assert list(damaged_batches(Store.open(out))) == [2]
    report = run_job(g, out, cpu_client, batch_size=128, resume=True,
                     metrics=("closeness", "harmonic", "eccentricity"))
    assert report.repaired_batches == [2]
    _close(dict(zip(labels, res.metric("harmonic").tolist())),
           nx.harmonic_centrality(G, distance="weight"))
    with pytest.raises(ResumeMismatchError, match="metrics"):
        run_job(g, out, cpu_client, batch_size=128, resume=True, metrics=("closeness",))


def test_info_gives_diameter_radius_and_average_length(cpu_client, data_dir, tmp_path):
    from click.testing import CliRunner

    from mgapsp.cli import main

    out = tmp_path / "k.zarr"
    args = ["run", str(data_dir / "karate.mtx"), "-o", str(out), "--scheduler",
            cpu_client.scheduler.address, "--metrics", "eccentricity", "--no-dashboard",
            "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    G = _nx("karate.mtx", data_dir)
    info = CliRunner().invoke(main, ["info", str(out)]).output
    assert f"diameter {nx.diameter(G, weight='weight'):g}" in info
    assert f"radius {nx.radius(G, weight='weight'):g}" in info
    assert (f"average shortest path length "
            f"{nx.average_shortest_path_length(G, weight='weight'):.6g}") in info
    # --reverse: a directed graph's rows into each source, NetworkX's closeness
    rev = tmp_path / "rev.zarr"
    args = ["run", str(data_dir / "Anaheim_net.tntp"), "-o", str(rev), "--scheduler",
            cpu_client.scheduler.address, "--reverse", "--metrics", "closeness",
            "--no-dashboard", "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    res = mgapsp.open(rev)
    _close(dict(zip(res.store.labels("source").tolist(), res.metric("closeness").tolist())),
           nx.closeness_centrality(_nx("Anaheim_net.tntp", data_dir), distance="weight"))
    bad = CliRunner().invoke(main, ["run", str(data_dir / "karate.mtx"), "-o",
                                    str(tmp_path / "x.zarr"), "--metrics", "closness"])
    assert bad.exit_code == 1 and "unknown metric 'closness'" in bad.output
    assert not (tmp_path / "x.zarr").exists()
    with pytest.raises(mgapsp.MgapspError, match="give out="):
        mgapsp.apsp(G, metrics=("closeness",))


@pytest.mark.slow
def test_metrics_without_the_distances(cpu_client, data_dir, tmp_path):
    """--no-distances: the metrics alone, a store of kilobytes for rome99; verify
    recomputes rows and compares the metrics, and finds a wrong one."""
    from mgapsp.jobs.driver import run_job
    from mgapsp.store import Store, store_size
    from mgapsp.store.verify import verify_store

    g = mgapsp.read_graph(data_dir / "rome99.gr")
    out = tmp_path / "nd.zarr"
    run_job(g, out, cpu_client, batch_size=512, metrics=("closeness",), distances=False)
    assert store_size(out) < 1.2 * 2**20             # the graph itself is most of it
    assert not (out / "distances" / "c").exists()
    res = mgapsp.open(out)
    with pytest.raises(mgapsp.StoreError, match="no distances"):
        res.distances([1])
    assert verify_store(out, all_rows=True).ok
    s = Store.open(out, mode="r+")
    wrong = {name: s.metric(name)[:512].copy() for name in s.job["metrics"]}
    wrong["closeness"][5] *= 1.001
    s.write_metrics(0, wrong)
    assert verify_store(out, all_rows=True).mismatched_rows == [5]
    with pytest.raises(mgapsp.MgapspError, match="give --metrics"):
        run_job(g, tmp_path / "x.zarr", cpu_client, distances=False)


def _lonely_graph(n=700, lone=300, seed=5) -> mgapsp.Graph:
    """A random directed graph whose first ``lone`` vertices have no arcs out."""
    rng = np.random.default_rng(seed)
    src = rng.integers(lone, n, 4 * n)
    dst = rng.integers(0, n, 4 * n)
    w = rng.integers(1, 20, 4 * n).astype(np.float64)
    return mgapsp.Graph.from_edges(src, dst, w, n=n, directed=True)


def test_sources_without_arcs_are_not_searched(monkeypatch):
    """A source with no arcs out reaches itself alone: its reductions (and nothing of
    the histogram) without a search, in batches that hold only the others; the same as
    the reductions of every row."""
    from mgapsp.reductions import histogram_counts

    g = _lonely_graph()
    cpu = get_backend("cpu")
    searched = []
    search = cpu.distances

    def spy(graph, sources, **kw):
        searched.extend(np.asarray(sources).tolist())
        return search(graph, sources, **kw)

    monkeypatch.setattr(cpu, "distances", spy)
    order = np.random.default_rng(1).permutation(g.n)
    red = cpu.row_metrics(g, order, batch_size=64, algorithm="dijkstra",
                          dtype=np.dtype(np.float64), histogram=True)
    has_arcs = np.flatnonzero(np.diff(g.indptr) > 0)
    assert has_arcs.min() == 300 and len(has_arcs) > 390
    assert sorted(searched) == has_arcs.tolist()
    rows = mgapsp.apsp(g, sources=order, dtype="float64", backend="cpu")
    want = row_reductions(rows)
    for k in want:
        np.testing.assert_array_equal(red[k], want[k])
    np.testing.assert_array_equal(red["histogram"], histogram_counts(rows, self_pairs=g.n))


def test_a_metrics_job_skips_sources_without_arcs(cpu_client, tmp_path):
    """--no-distances: batches made only of sources without arcs, and batches mixing
    them with others, store what every row's reductions give; so does the histogram."""
    from mgapsp.jobs.driver import run_job
    from mgapsp.reductions import histogram_counts, metric_values

    g = _lonely_graph()
    out = tmp_path / "lone.zarr"
    run_job(g, out, cpu_client, batch_size=128, distances=False,
            metrics=("closeness", "harmonic", "eccentricity", "histogram"))
    res = mgapsp.open(out)
    rows = mgapsp.apsp(g, dtype="float64", backend="cpu")
    for name, values in metric_values(row_reductions(rows), g.n).items():
        np.testing.assert_array_equal(res.metric(name), values)
    want = mgapsp.distance_histogram(g, backend="cpu")
    np.testing.assert_array_equal(res.distance_histogram().counts, want.counts)
    assert res.distance_histogram().unreachable == want.unreachable
    assert int(histogram_counts(rows, self_pairs=g.n).sum()) == int(want.counts.sum())


# -- the distribution of distances ----------------------------------------------------

def _scipy_histogram(g, edges, sources=None):
    """NumPy's histogram of SciPy's distances between distinct vertices, on ``edges``,
    and the number of unreachable pairs."""
    from scipy.sparse import csgraph

    src = np.arange(g.n) if sources is None else np.asarray(sources)
    d = csgraph.shortest_path(g.to_scipy(), method="J" if g.has_negative_weights else "D",
                              indices=src)
    d[np.arange(len(src)), src] = np.nan     # a vertex and itself: no pair
    finite = d[np.isfinite(d)]
    return np.histogram(finite, bins=edges)[0], int(np.isinf(d).sum()), finite


@pytest.mark.slow
@pytest.mark.parametrize("path", ["karate.mtx", "USAir97.mtx", "rome99.gr",
                                  "p2p-Gnutella08.txt"])
def test_distance_histogram_of_real_graphs(path, data_dir):
    """Every distance between distinct vertices counted once, in the bin NumPy puts it
    in; unreachable pairs counted apart; integer distances on integer edges."""
    g = mgapsp.read_graph(data_dir / path)
    h = mgapsp.distance_histogram(g, backend="cpu")
    want, unreachable, finite = _scipy_histogram(g, h.edges)
    np.testing.assert_array_equal(h.counts, want)
    assert h.unreachable == unreachable
    assert h.pairs == g.n * (g.n - 1)
    assert h.edges[0] <= finite.min() and finite.max() < h.edges[-1]
    if g.integral_weights:
        np.testing.assert_array_equal(h.edges, np.round(h.edges))
        small = h.edges[h.edges <= 32]
        np.testing.assert_array_equal(np.diff(small), 1.0)    # a bin per integer


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 30), p=st.floats(0.05, 0.5), seed=st.integers(0, 10**6),
       kind=st.sampled_from(["unit", "int", "float", "negative"]))
def test_distance_histogram_of_random_graphs(n, p, seed, kind):
    """Random directed graphs, disconnected ones, fractional and negative weights
    (Johnson) included: the same counts as NumPy's on SciPy's distances (by
    magnitude for negative ones: the bins are half-open toward zero)."""
    from mgapsp.reductions import histogram_bin_of

    rng = np.random.default_rng(seed)
    a = (rng.random((n, n)) < p) & ~np.eye(n, dtype=bool)
    rows, cols = np.nonzero(a)
    w = {"unit": np.ones(len(rows)), "int": rng.integers(1, 100, len(rows)) * 1.0,
         "float": rng.random(len(rows)) * 10 + 0.01,
         "negative": rng.integers(1, 20, len(rows)) * 1.0}[kind]
    if kind == "negative":      # potentials make some weights negative, no cycle
        pot = rng.integers(0, 15, n)
        w = w + pot[rows] - pot[cols]
    import scipy.sparse as sp

    g = mgapsp.as_graph(sp.csr_matrix((w, (rows, cols)), shape=(n, n)))
    h = mgapsp.distance_histogram(g, backend="cpu")
    _, unreachable, finite = _scipy_histogram(g, np.array([0.0, 1.0]))
    assert h.unreachable == unreachable and h.pairs == n * (n - 1)
    # each distance's bin, found by its value among the edges
    bins = np.bincount(histogram_bin_of(finite), minlength=8192)
    assert h.counts.sum() == len(finite) == bins.sum()
    pos = finite[finite >= 0]
    if len(pos) and kind != "negative":
        np.testing.assert_array_equal(h.counts, np.histogram(pos, bins=h.edges)[0])


def test_histogram_bins_of_float64_never_cross_an_edge():
    """float64 distances just under an edge (2, 33, 1e6 rounded to float32) stay under
    it: rounded toward zero, not to nearest; huge ones in the last finite bin."""
    from mgapsp.reductions import distance_histogram, histogram_counts

    under = np.nextafter(np.array([2.0, 34.0, 2.0**20]), 0)
    block = np.concatenate([under, [2.0, 34.0, 2.0**20, 1e300]])[None]
    h = distance_histogram(histogram_counts(block), 0)
    want = np.histogram(np.minimum(block[0], 3.4e38), bins=h.edges)[0]
    np.testing.assert_array_equal(h.counts, want)
    assert np.isinf(h.edges[-1])


@pytest.mark.slow
def test_a_job_stores_the_distance_histogram(cpu_client, data_dir, tmp_path):
    """--metrics histogram: a batch's counts each, summed when read; the same as the
    in-process answer; resumed batches add to the same bins; info gives the median's
    bin; verify recomputes a batch's and finds a wrong count."""
    from mgapsp.jobs.driver import run_job
    from mgapsp.store import Store
    from mgapsp.store.verify import verify_store

    g = mgapsp.read_graph(data_dir / "rome99.gr")
    out = tmp_path / "h.zarr"
    run_job(g, out, cpu_client, batch_size=512, metrics=("histogram",), distances=False)
    res = mgapsp.open(out)
    h = res.distance_histogram()
    want = mgapsp.distance_histogram(g, backend="cpu")
    np.testing.assert_array_equal(h.counts, want.counts)
    np.testing.assert_array_equal(h.edges, want.edges)
    assert h.unreachable == want.unreachable
    with pytest.raises(mgapsp.MgapspError, match="distance_histogram"):
        res.metric("histogram")
    assert verify_store(out, all_rows=True).ok
    # three batches cleared and computed again by --resume: the same histogram
    s = Store.open(out, mode="r+")
    s.unmark_batches([0, 3, 6])
    run_job(g, out, cpu_client, batch_size=512, metrics=("histogram",), distances=False,
            resume=True)
    np.testing.assert_array_equal(mgapsp.open(out).distance_histogram().counts,
                                  want.counts)
    # a wrong count (its checksum made anew): verify recomputes the batch
    s = Store.open(out, mode="r+")
    values = {name: s.metric(name)[:512] for name in s.job["metrics"]}
    values["histogram"] = s.metric("histogram")[2].copy()
    values["histogram"][np.flatnonzero(values["histogram"])[0]] += 1
    s.write_metrics(2, values)
    rep = verify_store(out, all_rows=True)
    assert rep.histogram_batches == [2] and not rep.ok


@pytest.mark.gpu
def test_the_device_histogram_is_the_hosts(data_dir):
    """The device's counts equal the host's on float32 and float64 blocks (values just
    under edges, huge, negative, unreachable), and on a graph's rows on the GPU."""
    import cupy

    from mgapsp.cuda.reduce import histogram_counts as on_device
    from mgapsp.reductions import histogram_counts

    rng = np.random.default_rng(3)
    block = np.concatenate([rng.random(5000) * 1e4, rng.integers(0, 40, 5000),
                            np.nextafter(np.array([2.0, 34.0, 2.0**20]), 0),
                            [np.inf, -np.inf, 1e300, -7.5, 0.0]])
    for dtype in (np.float32, np.float64):
        b = block.astype(dtype).reshape(1, -1)
        np.testing.assert_array_equal(cupy.asnumpy(on_device(cupy.asarray(b), self_pairs=1)),
                                      histogram_counts(b, self_pairs=1))
    g = mgapsp.read_graph(data_dir / "rome99.gr")
    gpu = mgapsp.distance_histogram(g, backend="gpu")
    cpu = mgapsp.distance_histogram(g, backend="cpu")
    np.testing.assert_array_equal(gpu.counts, cpu.counts)
    assert gpu.unreachable == cpu.unreachable


def _ordered_harmonic_case(data_dir, path, backend):
    """(the backend's ordered sums, the host loop's over SciPy's rows) for a random
    order of sources and random columns of a real graph."""
    from mgapsp.metrics import ordered_harmonic
    from mgapsp.reductions import ordered_harmonic as add

    g = mgapsp.read_graph(data_dir / path)
    rng = np.random.default_rng(3)
    sources = rng.permutation(g.n)[:1500]
    columns = rng.permutation(g.n)[:700]
    got = ordered_harmonic(g, sources, columns, backend=backend)
    rows = mgapsp.apsp(g, sources=g.labels[sources], backend="cpu", dtype="float64")
    acc, touched = np.zeros(len(columns)), np.zeros(len(columns), dtype=bool)
    add(rows, columns, acc, touched)
    return got, (acc, touched)


@pytest.mark.parametrize("path", ["rome99.gr", "p2p-Gnutella08.txt"])
def test_harmonic_sums_in_the_sources_order(path, data_dir):
    """The CPU backend's batches add each column's terms in the sources' order: the
    same floats as one loop over all the rows."""
    (acc, touched), (want, want_touched) = _ordered_harmonic_case(data_dir, path, "cpu")
    np.testing.assert_array_equal(acc, want)
    np.testing.assert_array_equal(touched, want_touched)
    assert touched.any() and (path == "rome99.gr" or not touched.all())


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["rome99.gr", "p2p-Gnutella08.txt"])
def test_the_device_adds_harmonic_terms_in_the_hosts_order(path, data_dir):
    """On the GPU, one thread per column down the rows: the host's floats to the bit."""
    (acc, touched), (want, want_touched) = _ordered_harmonic_case(data_dir, path, "gpu")
    np.testing.assert_array_equal(acc, want)
    np.testing.assert_array_equal(touched, want_touched)
