"""The Python API against SciPy: random graphs (Hypothesis) and every input type."""

from __future__ import annotations

import os

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

import mgapsp
from mgapsp import Graph, MgapspError, NegativeCycleError, UnsupportedError, algorithms

from helpers import assert_distances_equal, cycle_weight, scipy_distances

#: every algorithm the CPU backend runs (the registry's), and auto
ALGORITHMS = ("auto",) + algorithms.names("cpu")
#: those that take negative weights
ANY_SIGN = ("auto",) + tuple(a for a in algorithms.names("cpu")
                             if not algorithms.get(a).non_negative)


@st.composite
def graphs(draw, negative=False, max_n=24):
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(1, 4 * n))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    w = draw(st.lists(st.integers(0, 9), min_size=m, max_size=m))
    w = np.array(w, dtype=float)
    if negative:
        # Potentials keep every cycle's weight, so no negative cycle appears.
        p = np.array(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n)), float)
        w = w + p[src] - p[dst]
    return Graph.from_edges(src, dst, w, n=n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), algorithm=st.sampled_from(ALGORITHMS),
       batch=st.sampled_from([None, 1, 3, 7]))
def test_random_nonnegative(graph, algorithm, batch):
    got = mgapsp.apsp(graph, backend="cpu", algorithm=algorithm, dtype="float64",
                      batch_size=batch)
    assert_distances_equal(got, scipy_distances(graph))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(negative=True),
       algorithm=st.sampled_from(ANY_SIGN))
def test_random_negative_weights(graph, algorithm):
    got, pred = mgapsp.apsp(graph, backend="cpu", algorithm=algorithm, dtype="float64",
                            predecessors=True)
    ref = scipy_distances(graph)
    assert_distances_equal(got, ref)
    rows, cols = np.nonzero(pred >= 0)
    w = graph.edge_weights(pred[rows, cols], cols)
    assert not np.isnan(w).any()
    np.testing.assert_allclose(ref[rows, pred[rows, cols]] + w, ref[rows, cols],
                               atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 12), data=st.data())
def test_random_negative_cycles_agree_with_scipy(n, data):
    m = data.draw(st.integers(1, 3 * n))
    src = data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    w = data.draw(st.lists(st.integers(-4, 6), min_size=m, max_size=m))
    graph = Graph.from_edges(src, dst, w, n=n)
    try:
        ref = csgraph.shortest_path(graph.to_scipy(), method="BF")
    except csgraph.NegativeCycleError:
        ref = None
    if ref is None:
        with pytest.raises(NegativeCycleError) as info:
            mgapsp.apsp(graph, backend="cpu")
        assert cycle_weight(graph, info.value.cycle) < 0
    else:
        assert_distances_equal(mgapsp.apsp(graph, backend="cpu", dtype="float64"), ref)


def test_negative_self_loop_is_a_cycle():
    graph = Graph.from_edges([0, 1, 2], [1, 2, 2], [1.0, 1.0, -0.5])
    with pytest.raises(NegativeCycleError) as info:
        mgapsp.apsp(graph, backend="cpu")
    assert info.value.cycle == [2] and info.value.weight == -0.5
    assert isinstance(info.value, csgraph.NegativeCycleError)  # SciPy code catches it


def _reference_matrix():
    dense = np.full((5, 5), np.inf)
    for u, v, w in [(0, 1, 2.0), (1, 2, 0.0), (2, 0, 1.5), (0, 3, 7.0), (3, 4, 1.0),
                    (1, 3, 3.0)]:
        dense[u, v] = w
    return dense


def _expected(directed=True):
    # Built by hand, not from the dense matrix: SciPy reads a dense 0 as "no edge".
    mat = sp.csr_array((np.array([2.0, 0.0, 1.5, 7.0, 1.0, 3.0]),
                        (np.array([0, 1, 2, 0, 3, 1]), np.array([1, 2, 0, 3, 4, 3]))),
                       shape=(5, 5))
    return csgraph.shortest_path(mat, directed=directed)


@pytest.mark.parametrize("kind", ["dense", "scipy", "tuple", "networkx", "graph"])
def test_input_types(kind):
    dense = _reference_matrix()
    rows, cols = np.nonzero(np.isfinite(dense))
    if kind == "dense":
        # as in SciPy a dense 0 is no edge: the zero-weight edge 1 -> 2 needs a sparse
        # input, so the dense matrix is compared with SciPy on the same matrix
        assert_distances_equal(mgapsp.apsp(dense, backend="cpu", dtype="float64"),
                               csgraph.shortest_path(dense))
        assert not np.array_equal(csgraph.shortest_path(dense), _expected())
        return
    elif kind == "scipy":
        graph = sp.coo_array((dense[rows, cols], (rows, cols)), shape=(5, 5))
    elif kind == "tuple":
        graph = (rows, cols, dense[rows, cols])
    elif kind == "networkx":
        nx = pytest.importorskip("networkx")
        graph = nx.DiGraph()
        graph.add_nodes_from(range(5))
        graph.add_weighted_edges_from(zip(rows.tolist(), cols.tolist(),
                                          dense[rows, cols].tolist()))
    else:
        graph = Graph.from_edges(rows, cols, dense[rows, cols], n=5)
    got = mgapsp.apsp(graph, backend="cpu", dtype="float64")
    assert_distances_equal(got, _expected())


def test_undirected_and_unweighted_options():
    dense = _reference_matrix()
    rows, cols = np.nonzero(np.isfinite(dense))
    edges = (rows, cols, dense[rows, cols])         # the zero-weight edge kept
    got = mgapsp.apsp(edges, backend="cpu", dtype="float64", directed=False)
    assert_distances_equal(got, _expected(directed=False))
    hops = mgapsp.apsp(edges, backend="cpu", dtype="float64", unweighted=True)
    assert hops[0, 4] == 2.0 and hops[0, 2] == 2.0


def test_duplicate_edges_keep_the_minimum():
    got = mgapsp.apsp((np.array([0, 0, 0]), np.array([1, 1, 1]), np.array([5.0, 2.0, 9.0])),
                      backend="cpu", dtype="float64")
    assert got[0, 1] == 2.0


def test_sources_and_predecessors_like_scipy(data_dir):
    graph = mgapsp.read_graph(data_dir / "SiouxFalls_net.tntp")
    dist, pred = mgapsp.apsp(graph, backend="cpu", sources=[1, 24], dtype="float64",
                             predecessors=True)
    ref, ref_pred = csgraph.dijkstra(graph.to_scipy(), indices=[0, 23],
                                     return_predecessors=True)
    assert_distances_equal(dist, ref)
    np.testing.assert_array_equal(pred, np.where(ref_pred < 0, -1, ref_pred))
    assert dist.dtype == np.float64 and pred.dtype == np.int32


def test_api_without_out_on_a_client(cpu_client, data_dir):
    graph = mgapsp.read_graph(data_dir / "ftv33.atsp")
    got = mgapsp.apsp(graph, client=cpu_client, dtype="float64", batch_size=8)
    assert_distances_equal(got, scipy_distances(graph))


@pytest.mark.parametrize("kwargs,match", [
    ({"algorithm": "fastest"}, "unknown algorithm"),
    ({"dtype": "int8"}, "unknown dtype"),
    ({"batch_size": 0}, "batch size"),
    ({"sources": [99]}, "unknown source 99"),
    ({"backend": "tpu"}, "unknown backend"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(MgapspError, match=match):
        mgapsp.apsp(_reference_matrix(), **{"backend": "cpu", **kwargs})


def test_dijkstra_refuses_negative_weights():
    with pytest.raises(UnsupportedError, match="non-negative"):
        mgapsp.apsp((np.array([0]), np.array([1]), np.array([-1.0])), backend="cpu",
                    algorithm="dijkstra")


@pytest.mark.parametrize("bad,match", [
    (np.zeros((2, 3)), "square"),
    ((np.array([0, 1]), np.array([1, 0]), np.array([1.0, np.inf])), "finite"),
])
def test_bad_in_memory_graphs(bad, match):
    with pytest.raises(MgapspError, match=match):
        mgapsp.apsp(bad, backend="cpu")


def test_targets_in_process(data_dir):
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    got = mgapsp.apsp(graph, backend="cpu", sources=[5, 1, 9], targets=[3353, 2, 2],
                      dtype="float64")
    ref = scipy_distances(graph, [4, 0, 8])[:, [3352, 1, 1]]
    assert_distances_equal(got, ref)
    with pytest.raises(MgapspError, match="predecessors need every target"):
        mgapsp.apsp(graph, backend="cpu", targets=[1], predecessors=True)
    with pytest.raises(MgapspError, match="unknown target 0"):
        mgapsp.apsp(graph, backend="cpu", targets=[0])


@pytest.mark.slow
def test_a_script_without_the_main_guard_is_told_what_to_add(tmp_path, data_dir):
    """Worker processes of the embedded cluster import the user's script again;
    without the guard the script fails with one error saying what to add, not a page
    of tracebacks from every worker.  With the CPU kernels (Numba) the embedded CPU
    cluster is this process's threads, and a job of one small batch spawns no process
    either: such scripts run as they are."""
    def script(graph, out):
        return (f"g = mgapsp.read_graph({str(data_dir / graph)!r})\n"
                f"r = mgapsp.apsp(g, out={str(tmp_path / out)!r}, overwrite=True, "
                "backend='cpu')\nprint('distance', r.distance(1, 34))\n")

    def run(path, env=None):
        return subprocess.run([sys.executable, str(path)], capture_output=True,
                              text=True, timeout=300, env=env)
    small = tmp_path / "small.py"
    small.write_text("import mgapsp\n" + script("karate.mtx", "k.zarr"))
    proc = run(small)
    assert proc.returncode == 0 and "distance 2" in proc.stdout, proc.stderr
    bare = tmp_path / "bare.py"                 # a job of many batches
    bare.write_text("import mgapsp\n" + script("p2p-Gnutella08.txt", "g.zarr"))
    proc = run(bare)
    assert proc.returncode == 0 and "distance" in proc.stdout, proc.stderr
    # without Numba: a worker process per core, which import the script again
    hide = tmp_path / "no_numba"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['numba'] = None\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(hide), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = run(bare, env)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("mgapsp.errors.MgapspError: ") and "__main__" in last, last
    assert len(proc.stderr.splitlines()) < 40, proc.stderr
    guarded = tmp_path / "guarded.py"
    guarded.write_text("import mgapsp\nif __name__ == '__main__':\n" + "".join(
        f"    {line}\n" for line in script("p2p-Gnutella08.txt", "g.zarr").splitlines()))
    proc = run(guarded, env)
    assert proc.returncode == 0 and "distance" in proc.stdout, proc.stderr


@pytest.mark.slow
def test_import_and_in_process_calls_leave_the_job_layers_out():
    """``import mgapsp`` imports neither NetworkX nor Dask, Distributed or Zarr, and an
    in-process ``apsp`` needs no cluster or store code: a SciPy user pays about what
    ``import scipy.sparse.csgraph`` costs."""
    code = ("import sys, mgapsp; heavy = ('networkx', 'dask', 'distributed', 'zarr'); "
            "print(*[m for m in heavy if m in sys.modules]); "
            "mgapsp.apsp([[0, 1], [1, 0]]); mgapsp.shortest_path([[0, 1], [1, 0]]); "
            "print(*[m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["", ""], out     # an answer in memory reads no store's knobs


def test_sums_past_float64_are_refused_not_read_as_unreachable(tmp_path):
    """Weights whose path sums overflow float64: SciPy answers inf ("unreachable") for
    a vertex that is reachable; mgapsp refuses in one line, before any store exists.
    Sums that stay finite are answered as SciPy answers them."""
    g = mgapsp.as_graph(([0, 1], [1, 2], [1e308, 1e308]))
    assert np.isinf(csgraph.dijkstra(g.to_scipy(), indices=0)[2])
    with pytest.raises(MgapspError, match="past float64's largest value"):
        mgapsp.apsp(g)
    with pytest.raises(MgapspError, match="past float64's largest value"):
        mgapsp.apsp(g, out=tmp_path / "s.zarr")
    assert not (tmp_path / "s.zarr").exists()
    big = mgapsp.as_graph(([0, 1], [1, 2], [1e307, 1e307]))
    np.testing.assert_array_equal(mgapsp.apsp(big), csgraph.dijkstra(big.to_scipy()))


def test_the_devices_are_counted_once_per_visible_set(monkeypatch):
    """``backend="auto"`` asks for the device count at every call (every NetworkX call
    dispatched here): NVML is asked once per value of CUDA_VISIBLE_DEVICES."""
    from mgapsp import gpu_count as counting

    monkeypatch.setattr(counting, "_counts", {})
    asked = []
    monkeypatch.setattr(counting, "_count", lambda visible: asked.append(visible) or 3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert [counting.gpu_count() for _ in range(3)] == [3, 3, 3]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    counting.gpu_count()
    assert asked == ["0,1,2", ""]
    monkeypatch.undo()
    monkeypatch.setattr(counting, "_counts", {})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert counting.gpu_count() == 0 and mgapsp.api.resolve_backend("auto") == "cpu"
