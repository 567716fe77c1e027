"""What users of NetworkX, SciPy and xarray get: their labels, their conventions, exact
answers, and a store read by label (issue: correct for every user)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import mgapsp
from mgapsp import InsufficientMemoryError, MgapspError, UnknownLabelError
from mgapsp.jobs.driver import run_job
from mgapsp.store.verify import verify_store

from helpers import assert_distances_equal, scipy_distances


# -- NetworkX ---------------------------------------------------------------------------
def _nx_reference(G, weight="weight"):
    return nx.floyd_warshall_numpy(G, weight=weight)


@pytest.mark.parametrize("directed", [True, False])
def test_networkx_labels_and_weight_attribute(directed):
    """Rows and columns in G.nodes order, labels kept; ``weight=`` names the attribute
    (1 where an edge lacks it), as NetworkX does."""
    rng = np.random.default_rng(4)
    G = nx.gnp_random_graph(40, 0.1, seed=4, directed=directed)
    G = nx.relabel_nodes(G, {v: f"city-{v}" for v in G.nodes})
    for u, v in G.edges:
        if rng.random() < 0.9:
            G.edges[u, v]["length"] = float(rng.integers(1, 20))
    got = mgapsp.apsp(G, weight="length", backend="cpu")
    np.testing.assert_allclose(got, _nx_reference(G, "length"))
    assert mgapsp.as_graph(G).labels.tolist() == list(G.nodes)
    # the default attribute is "weight": absent here, so every edge weighs 1
    np.testing.assert_allclose(mgapsp.apsp(G, backend="cpu"), _nx_reference(G))


def test_networkx_weight_function_hides_edges_and_multigraphs_keep_the_lightest():
    G = nx.MultiDiGraph()
    G.add_edge("a", "b", cost=5, closed=False)
    G.add_edge("a", "b", cost=2, closed=False)
    G.add_edge("b", "c", cost=1, closed=True)
    G.add_edge("a", "c", cost=9, closed=False)

    def open_cost(u, v, keyed):
        # as NetworkX calls it on a multigraph: the dict of the parallel edges
        costs = [d["cost"] for d in keyed.values() if not d["closed"]]
        return min(costs) if costs else None

    got = mgapsp.apsp(G, weight=open_cost, backend="cpu")
    # b -> c is hidden; a -> b takes the lighter of its two edges
    assert got.tolist() == [[0, 2, 9], [np.inf, 0, np.inf], [np.inf, np.inf, 0]]
    want = dict(nx.all_pairs_dijkstra_path_length(G, weight=open_cost))
    assert got[0, 1] == want["a"]["b"] and "c" not in want["b"]
    # the attribute: the lightest of the parallel edges, 1 where missing
    assert mgapsp.apsp(G, weight="cost", backend="cpu")[0].tolist() == [0, 2, 3]


def test_networkx_integer_labels_make_no_extra_vertices():
    G = nx.DiGraph()
    G.add_nodes_from([10, 20, 1000])
    G.add_edge(10, 1000, weight=3)
    got = mgapsp.apsp(G, backend="cpu")
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, _nx_reference(G))
    assert mgapsp.as_graph(G).index_of([1000, 10]).tolist() == [2, 0]


def test_a_graph_without_edges_has_the_trivial_answer():
    G = nx.empty_graph(4)
    dist, pred = mgapsp.apsp(G, backend="cpu", predecessors=True)
    np.testing.assert_array_equal(dist, np.where(np.eye(4, dtype=bool), 0.0, np.inf))
    assert (pred == -1).all()


# -- SciPy's reading of matrices ----------------------------------------------------------
def test_dense_and_masked_matrices_are_read_as_scipy_reads_them():
    """0, inf and NaN off the diagonal of a dense matrix, and masked entries, are no
    edge (a SciPy-style adjacency matrix); a sparse matrix's explicit zeros and a
    masked array's unmasked zeros are edges."""
    rng = np.random.default_rng(8)
    a = np.where(rng.random((30, 30)) < 0.2, rng.integers(1, 9, (30, 30)), 0).astype(float)
    a[rng.random((30, 30)) < 0.05] = np.inf
    a[rng.random((30, 30)) < 0.05] = np.nan
    np.testing.assert_allclose(mgapsp.apsp(a, backend="cpu"), csgraph.shortest_path(a))
    masked = np.ma.masked_array(np.nan_to_num(a, nan=3.0, posinf=4.0),
                                mask=rng.random((30, 30)) < 0.3)
    # an unmasked 0 is a zero-weight edge, as SciPy's Dijkstra reads a masked array
    np.testing.assert_allclose(mgapsp.apsp(masked, backend="cpu"),
                               csgraph.dijkstra(masked))
    zero_edge = sp.csr_array(([0.0, 2.0], ([0, 1], [1, 2])), shape=(3, 3))
    assert mgapsp.apsp(zero_edge, backend="cpu")[0, 2] == 2.0


# -- no silent precision loss -------------------------------------------------------------
def test_dtype_auto_keeps_every_distance_exact(cpu_client, tmp_path):
    """Integer weights whose sums pass 2**24 run in float64 (16,777,217 stays exact);
    small ones in float32; float32 asked for is kept and said to round."""
    big = mgapsp.Graph.from_edges([0, 1, 2], [1, 2, 3], [2**23, 2**23, 1], renumber=True)
    got = mgapsp.apsp(big, backend="cpu")
    assert got.dtype == np.float64 and got[0, 3] == 2**24 + 1
    result = mgapsp.apsp(big, out=tmp_path / "big.zarr", client=cpu_client)
    assert result.distance(0, 3) == 2**24 + 1
    job = result.attrs["job"]
    assert job["dtype"] == "float64" and "2**24" in job["dtype_reason"]
    small = mgapsp.Graph.from_edges([0, 1], [1, 2], [3, 4], renumber=True)
    assert mgapsp.apsp(small, backend="cpu").dtype == np.float32
    floats = mgapsp.Graph.from_edges([0, 1], [1, 2], [0.5, 0.25], renumber=True)
    assert mgapsp.apsp(floats, backend="cpu").dtype == np.float64
    report = run_job(big, tmp_path / "f32.zarr", cpu_client, dtype="float32")
    assert "may be rounded" in report.plan.dtype_reason


# -- clear failures -------------------------------------------------------------------------
def test_an_in_process_result_too_large_is_refused_before_allocating(monkeypatch):
    from mgapsp import api

    monkeypatch.setattr(api, "host_memory_available", lambda: 10)
    g = mgapsp.Graph.from_edges([0, 1], [1, 2], renumber=True)
    with pytest.raises(InsufficientMemoryError, match="out="):
        mgapsp.apsp(g, backend="cpu")


# -- labels through a job and its store ----------------------------------------------------
def test_a_store_of_text_labels_read_by_label(cpu_client, tmp_path):
    """A graph named by text: the store's coordinates are the labels, xarray's .sel
    and mgapsp.open read distances and paths by them, and agree with SciPy."""
    rng = np.random.default_rng(12)
    n = 60
    names = np.array([f"host-{k:03d}" for k in rng.permutation(n)])
    src, dst = rng.integers(0, n, 240), rng.integers(0, n, 240)
    w = rng.integers(1, 10, 240).astype(float)
    graph = mgapsp.Graph.from_edges(names[src], names[dst], w, renumber=True)
    sources = ["host-007", "host-042", "host-001"]
    out = tmp_path / "hosts.zarr"
    result = mgapsp.apsp(graph, out=out, client=cpu_client, sources=sources,
                         predecessors=True, dtype="float64")
    ref = scipy_distances(graph, graph.index_of(sources))
    assert verify_store(out, all_rows=True).ok
    assert_distances_equal(result.distances(sources), ref)
    ds = result.to_xarray()
    assert ds.source.values.tolist() == sources
    for i, u in enumerate(sources):
        for v in ("host-000", "host-059", "host-030"):
            want = ref[i, graph.index_of(v)[0]]
            assert float(ds.distances.sel(source=u, target=v)) == want
            assert result.distance(u, v) == want
            hops = result.path(u, v)
            if np.isfinite(want):
                assert hops[0] == u and hops[-1] == v
                assert sum(float(graph.edge_weights(graph.index_of([a]), graph.index_of([b]))[0])
                           for a, b in zip(hops, hops[1:])) == want
            else:
                assert hops is None
    with pytest.raises(UnknownLabelError, match="'host-999'"):
        result.distance("host-001", "host-999")


def test_a_store_of_an_older_format_is_read_but_not_continued(cpu_client, tmp_path):
    graph = mgapsp.Graph.from_edges([0, 1], [1, 2], [1, 1], renumber=True)
    out = tmp_path / "old.zarr"
    mgapsp.apsp(graph, out=out, client=cpu_client)
    import zarr

    zarr.open_group(out, mode="r+").attrs["format_version"] = 1
    assert mgapsp.open(out).distance(0, 2) == 2
    with pytest.raises(MgapspError, match="older mgapsp"):
        mgapsp.apsp(graph, out=out, client=cpu_client, resume=True)
