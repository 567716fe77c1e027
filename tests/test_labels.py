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


# == inputs that once gave another answer than SciPy's or NetworkX's, with no error
# (issue 41): masked arrays, COO duplicates, 64-bit unsigned labels, data frames,
# NetworkX tuple nodes, one source label, empty answers, lists of lists, progress

def _rome_arcs(data_dir):
    """The arcs of rome99.gr as 0-based (tail, head, weight) arrays, duplicates kept."""
    rows = [line.split()[1:] for line in open(data_dir / "rome99.gr") if line.startswith("a ")]
    arcs = np.array(rows, dtype=np.int64)
    return arcs[:, 0] - 1, arcs[:, 1] - 1, arcs[:, 2].astype(np.float64)


# -- 1. masked arrays: an unmasked 0 is an edge ---------------------------------------------
def test_masked_array_unmasked_zero_is_a_zero_weight_edge():
    data = [[0, 0, 9], [9, 0, 5], [9, 9, 0]]
    keep = np.zeros((3, 3), dtype=bool)
    keep[0, 1] = keep[1, 2] = True
    m = np.ma.masked_array(data, mask=~keep)
    np.testing.assert_array_equal(mgapsp.apsp(m, backend="cpu"), csgraph.dijkstra(m))
    rng = np.random.default_rng(41)
    a = rng.integers(0, 4, (25, 25)).astype(float)      # many unmasked zeros
    m = np.ma.masked_array(a, mask=rng.random((25, 25)) < 0.8)
    for method in (csgraph.dijkstra, csgraph.johnson, csgraph.bellman_ford):
        np.testing.assert_array_equal(mgapsp.apsp(m, backend="cpu"), method(m))


# -- 2. a SciPy COO matrix's duplicate entries are summed, as SciPy reads them --------------
def test_coo_duplicates_are_summed_as_scipy_reads_them(data_dir):
    tail, head, w = _rome_arcs(data_dir)
    n = int(max(tail.max(), head.max())) + 1
    keys = tail * n + head
    assert len(np.unique(keys)) < len(keys), "rome99 has duplicate arcs"
    coo = sp.coo_array((w, (tail, head)), shape=(n, n))
    rows = np.arange(0, n, 97)
    got = mgapsp.apsp(coo, backend="cpu", sources=rows, dtype="float64")
    assert_distances_equal(got, csgraph.dijkstra(coo, indices=rows))
    assert coo.nnz == len(w)            # the caller's matrix is left as it was


# -- 3. integer labels of 2**63 and more: uint64, never wrapped -----------------------------
@pytest.mark.parametrize("make", [
    lambda: (np.array([10**19, 1, 2**64 - 1], dtype=np.uint64), np.array([1, 2, 10**19],
                                                                         dtype=np.uint64)),
    lambda: ([10**19, 1, 2**64 - 1], [1, 2, 10**19]),
])
def test_labels_beyond_int64_are_uint64(make):
    src, dst = make()
    G = nx.DiGraph()
    G.add_edges_from(zip([int(x) for x in src], [int(x) for x in dst]))
    g = mgapsp.as_graph((src, dst))
    assert g.labels.dtype == np.uint64
    assert [int(x) for x in g.labels] == sorted(G.nodes)
    ref = nx.floyd_warshall_numpy(G, nodelist=sorted(G.nodes))
    np.testing.assert_array_equal(mgapsp.apsp((src, dst), backend="cpu"), ref)
    row = sorted(G.nodes).index(2**64 - 1)
    np.testing.assert_array_equal(
        mgapsp.apsp((src, dst), backend="cpu", sources=[2**64 - 1], targets=[10**19, 2]),
        ref[[row]][:, [sorted(G.nodes).index(10**19), sorted(G.nodes).index(2)]])
    with pytest.raises(UnknownLabelError, match="unknown source -1"):
        mgapsp.apsp((src, dst), backend="cpu", sources=[-1])


def test_a_label_beyond_int64_never_wraps_onto_another():
    """2**64 - 1 is no -1: on a graph with a vertex -1 it is an unknown label."""
    edges = (np.array([-1, 0]), np.array([0, 5]))
    G = nx.DiGraph(list(zip(*edges)))
    ref = nx.floyd_warshall_numpy(G, nodelist=sorted(G.nodes))[[0]]     # -1's row
    np.testing.assert_array_equal(mgapsp.apsp(edges, backend="cpu", sources=[-1]), ref)
    for label in (2**64 - 1, np.uint64(2**64 - 1), [2**64 - 1], [2**63]):
        with pytest.raises(UnknownLabelError, match="no vertex"):
            mgapsp.apsp(edges, backend="cpu", sources=label)
        with pytest.raises(UnknownLabelError, match="no vertex"):
            mgapsp.apsp(edges, backend="cpu", targets=label)


@pytest.mark.parametrize("edges", [
    ([10**30, 1], [1, 2]),
    ([-1, 2**64 - 1], [1, 2]),
])
def test_python_integer_labels_beyond_64_bits_are_one_error(edges):
    with pytest.raises(MgapspError, match="beyond 64-bit integers") as info:
        mgapsp.apsp(edges, backend="cpu")
    assert "\n" not in str(info.value)
    # NetworkX keeps such nodes as they are: the answer is NetworkX's
    G = nx.DiGraph(list(zip(*edges)))
    np.testing.assert_array_equal(mgapsp.apsp(G, backend="cpu"), nx.floyd_warshall_numpy(G))


@pytest.mark.slow
def test_a_store_of_uint64_labels_is_read_by_label(cpu_client, tmp_path):
    src, dst = [10**19, 1, 2**64 - 1], [1, 2, 10**19]
    G = nx.DiGraph(list(zip(src, dst)))
    r = mgapsp.apsp((src, dst), out=tmp_path / "u.zarr", client=cpu_client, backend="cpu")
    assert r.distance(2**64 - 1, 2) == nx.shortest_path_length(G, 2**64 - 1, 2)
    assert r.distances([10**19], [2]).tolist() == [[2.0]]
    with pytest.raises(UnknownLabelError):
        r.distance(-1, 2)


# -- 4. data frames are edge lists ----------------------------------------------------------
def _frame_reference(df, source="source", target="target", weight="weight", nodes=None):
    G = nx.from_pandas_edgelist(df, source, target, edge_attr=weight,
                                create_using=nx.DiGraph)
    return nx.floyd_warshall_numpy(G, nodelist=list(nodes), weight=weight or "weight")


def test_a_pandas_frame_is_an_edge_list():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"source": rng.integers(0, 30, 90), "target": rng.integers(0, 30, 90),
                       "weight": rng.integers(1, 9, 90).astype(float)})
    df = df[df.source != df.target].drop_duplicates(["source", "target"])
    labels = mgapsp.as_graph(df).labels
    np.testing.assert_array_equal(mgapsp.apsp(df, backend="cpu"),
                                  _frame_reference(df, nodes=labels))
    # other column names, text labels, cuGraph's "destination"
    named = df.rename(columns={"source": "from", "target": "destination", "weight": "km"})
    named["from"] = "v" + named["from"].astype(str)
    named["destination"] = "v" + named["destination"].astype(str)
    labels = mgapsp.as_graph(named, source="from", target="destination", weight="km").labels
    assert labels.dtype.kind == "U"
    np.testing.assert_array_equal(
        mgapsp.apsp(named, source="from", target="destination", weight="km", backend="cpu"),
        _frame_reference(named, "from", "destination", "km", nodes=labels))
    # no "weight" column: every edge weighs 1, as NetworkX's default
    plain = df[["source", "target"]]
    labels = mgapsp.as_graph(plain).labels
    np.testing.assert_array_equal(mgapsp.apsp(plain, backend="cpu"),
                                  _frame_reference(plain, weight=None, nodes=labels))


def test_bad_frames_are_one_error():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"source": [1, 2], "target": [2, 3], "weight": [1.0, 2.0]})
    for kwargs, match in [({"weight": "km"}, "no column 'km'"),
                          ({"source": "from"}, "no column 'from'"),
                          ({"weight": lambda u, v, d: 1}, "names a column")]:
        with pytest.raises(MgapspError, match=match):
            mgapsp.apsp(df, backend="cpu", **kwargs)
    with pytest.raises(MgapspError, match="row 1 .* no target"):
        mgapsp.apsp(df.assign(target=[2, None]), backend="cpu")
    with pytest.raises(MgapspError, match="columns of a data frame"):
        mgapsp.apsp(np.ones((2, 2)), backend="cpu", source="from")


def test_arrow_tables_and_other_frames_are_edge_lists():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    df = pd.DataFrame({"source": ["a", "b", "c", "a"], "target": ["b", "c", "d", "d"],
                       "weight": [1.0, 2.0, 3.0, 9.0]})
    ref = _frame_reference(df, nodes=["a", "b", "c", "d"])
    np.testing.assert_array_equal(mgapsp.apsp(pa.Table.from_pandas(df), backend="cpu"), ref)

    class Stream:           # a frame known only by Arrow's PyCapsule stream (polars...)
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.Table.from_pandas(df).__arrow_c_stream__(requested_schema)

    class Interchange:      # a frame known only by the dataframe interchange protocol
        def __dataframe__(self, nan_as_null=False, allow_copy=True):
            return pa.Table.from_pandas(df).__dataframe__(nan_as_null, allow_copy)

    for frame in (Stream(), Interchange()):
        np.testing.assert_array_equal(mgapsp.apsp(frame, backend="cpu"), ref)


# -- 5. NetworkX nodes of any hashable kind -------------------------------------------------
def test_networkx_tuple_nodes_are_labels():
    G = nx.grid_2d_graph(4, 5)
    for u, v in G.edges:
        G.edges[u, v]["weight"] = (u[0] + v[1]) % 5 + 1
    nodes = list(G.nodes)
    ref = nx.floyd_warshall_numpy(G)
    np.testing.assert_array_equal(mgapsp.apsp(G, backend="cpu", sources=[(0, 0)]),
                                  ref[[0]])
    np.testing.assert_array_equal(mgapsp.apsp(G, backend="cpu", sources=(0, 0)), ref[0])
    cols = [(3, 4), (0, 1)]
    np.testing.assert_array_equal(
        mgapsp.apsp(G, backend="cpu", sources=[(2, 2), (0, 0)], targets=cols),
        ref[np.ix_([nodes.index((2, 2)), 0], [nodes.index(c) for c in cols])])
    assert mgapsp.as_graph(G).labels.tolist() == nodes
    with pytest.raises(UnknownLabelError, match=r"'\(0, 0\)'"):     # text is no tuple
        mgapsp.apsp(G, backend="cpu", sources="(0, 0)")
    with pytest.raises(MgapspError, match="pass tuples in a list"):
        mgapsp.apsp(G, backend="cpu", sources=np.array([(0, 0), (1, 1)]))


def test_networkx_nodes_of_mixed_kinds_stay_apart():
    """1 and "1" were one text label and refused; they are two nodes."""
    G = nx.Graph([(1, "1"), ("1", (2, "x")), ((2, "x"), 2.5)])
    ref = nx.floyd_warshall_numpy(G)
    np.testing.assert_array_equal(mgapsp.apsp(G, backend="cpu"), ref)
    np.testing.assert_array_equal(mgapsp.apsp(G, backend="cpu", sources=["1", 2.5]),
                                  ref[[1, 3]])


@pytest.mark.slow
def test_a_store_of_tuple_nodes_is_read_by_label(cpu_client, tmp_path):
    G = nx.grid_2d_graph(3, 3)
    r = mgapsp.apsp(G, out=tmp_path / "grid.zarr", client=cpu_client, backend="cpu",
                    predecessors=True)
    assert r.distance((0, 0), (2, 1)) == nx.shortest_path_length(G, (0, 0), (2, 1))
    ref = nx.floyd_warshall_numpy(G)
    np.testing.assert_array_equal(r.distances((0, 0)), ref[[0]])
    assert len(r.path((0, 0), (2, 2))) == 5


# -- 6. one source label: 1-D rows, as SciPy's scalar indices ------------------------------
def test_one_source_label_gives_one_dimensional_rows():
    rng = np.random.default_rng(6)
    a = np.where(rng.random((20, 20)) < 0.2, rng.integers(1, 9, (20, 20)), 0).astype(float)
    ref, ref_pred = csgraph.dijkstra(a, indices=3, return_predecessors=True)
    got = mgapsp.apsp(a, backend="cpu", sources=3)
    assert got.shape == ref.shape == (20,)
    np.testing.assert_array_equal(got, ref)
    dist, pred = mgapsp.apsp(a, backend="cpu", sources=3, predecessors=True, dtype="float64")
    assert pred.shape == ref_pred.shape
    np.testing.assert_array_equal(dist, ref)
    np.testing.assert_array_equal(pred, np.where(ref_pred < 0, -1, ref_pred))
    cols = [5, 0, 7]
    got = mgapsp.apsp(a, backend="cpu", sources=np.int64(3), targets=cols)
    np.testing.assert_array_equal(got, ref[cols])
    assert mgapsp.apsp(a, backend="cpu", sources=[3]).shape == (1, 20)


@pytest.mark.slow
def test_one_source_label_on_a_client(cpu_client):
    a = np.where(np.eye(12, k=1) > 0, 2.0, 0.0)
    got = mgapsp.apsp(a, backend="cpu", sources=4, client=cpu_client)
    np.testing.assert_array_equal(got, csgraph.dijkstra(a, indices=4))


# -- 7. empty answers and lists of lists ----------------------------------------------------
def test_no_source_and_no_vertex_give_scipy_empty_answers():
    a = np.ones((5, 5))
    ref = csgraph.dijkstra(a, indices=[])
    got = mgapsp.apsp(a, backend="cpu", sources=[])
    assert got.shape == ref.shape == (0, 5)
    dist, pred = mgapsp.apsp(a, backend="cpu", sources=[], predecessors=True)
    assert dist.shape == pred.shape == (0, 5)
    assert mgapsp.apsp(a, backend="cpu", sources=[], targets=[1, 2]).shape == (0, 2)
    with pytest.raises(UnknownLabelError):          # the labels given are still checked
        mgapsp.apsp(a, backend="cpu", sources=[], targets=[9])
    for empty in (np.zeros((0, 0)), sp.csr_array((0, 0)), nx.empty_graph(0)):
        ref = (nx.floyd_warshall_numpy(empty) if isinstance(empty, nx.Graph)
               else csgraph.shortest_path(empty))
        got = mgapsp.apsp(empty, backend="cpu")
        assert got.shape == ref.shape == (0, 0)
    with pytest.raises(MgapspError, match="no vertices"):
        mgapsp.apsp(np.zeros((0, 0)), backend="cpu", out="never.zarr")


def test_a_list_of_lists_is_a_dense_matrix():
    rows = [[0, 3, 0, 0], [0, 0, 1, np.inf], [2, 0, 0, 7], [0, 0, 0, 0]]
    # (SciPy 1.17's shortest_path refuses a list; its dijkstra reads it)
    np.testing.assert_array_equal(mgapsp.apsp(rows, backend="cpu"), csgraph.dijkstra(rows))
    np.testing.assert_array_equal(mgapsp.apsp(rows, backend="cpu"),
                                  mgapsp.apsp(np.array(rows), backend="cpu"))


# -- 8. progress= ---------------------------------------------------------------------------
def test_progress_in_process(data_dir, capfd):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    rows = np.arange(1, 300)
    got = mgapsp.apsp(graph, backend="cpu", sources=rows, batch_size=64, progress=True)
    err = capfd.readouterr().err
    assert "299/299 rows (100%)" in err and "rows/s" in err, err
    assert_distances_equal(got, csgraph.dijkstra(graph.to_scipy(), indices=rows - 1),
                           dtype=got.dtype)
    mgapsp.apsp(graph, backend="cpu", sources=rows)
    assert capfd.readouterr().err == ""             # off by default


@pytest.mark.slow
def test_progress_on_a_client(data_dir, cpu_client, capfd):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    rows = np.arange(1, 400)
    got = mgapsp.apsp(graph, backend="cpu", sources=rows, batch_size=100,
                      client=cpu_client, progress=True)
    err = capfd.readouterr().err
    assert "399/399 rows (100%)" in err and "rows/s" in err, err
    assert_distances_equal(got, csgraph.dijkstra(graph.to_scipy(), indices=rows - 1),
                           dtype=got.dtype)
