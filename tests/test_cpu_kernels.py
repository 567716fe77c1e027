"""The CPU backend's multi-core kernels (mgapsp.cpu_sssp) against SciPy's csgraph.

Dijkstra must give SciPy's distances bit for bit (the same left-to-right sums), on
integer and fractional weights, zero-weight edges, self-loops, unreachable vertices,
source subsets and target columns, in float64 and float32; Johnson the backend's
SciPy path bit for bit (the same potentials); Bellman-Ford SciPy's; PHAST the NumPy
sweep's (the same sums over the same hierarchy), and so SciPy's on integer weights.  ``kernels``
forces the kernels on graphs small enough for a fast test (below the job size where
the backend would keep SciPy), in both forms: ``parallel`` (an answer in this process)
and ``serial`` (a pipeline batch on its worker thread).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csgraph

import mgapsp
from mgapsp import cpu_sssp, hierarchy
from mgapsp.backends import cpu
from mgapsp.backends import phast as phast_room
from mgapsp.backends.cpu import CPUBackend, kernels_pay
from mgapsp.errors import NegativeCycleError, UnsupportedError
from mgapsp.graph import Graph

from helpers import assert_predecessors, planar_graph, random_graph, reweighted

DATA = Path(__file__).parent / "data"


@pytest.fixture
def kernels(monkeypatch):
    """Every job goes to the kernels, however small (Numba, a dependency, installed)."""
    pytest.importorskip("numba")
    monkeypatch.setattr(cpu, "COLD_STEPS", 0)
    monkeypatch.setattr(cpu, "WARM_STEPS", 0)


def rows(graph: Graph, sources, *, algorithm="dijkstra", dtype=np.float64, form="parallel",
         predecessors=False, targets=None, potentials=None):
    """The backend's rows: ``fill_rows`` (parallel) or a ``distances`` batch (serial)."""
    b = CPUBackend()
    sources = np.asarray(sources, dtype=np.int64)
    if potentials is None and graph.has_negative_weights and algorithm == "johnson":
        potentials = b.potentials(graph)
    if form == "serial":
        res = b.distances(graph, sources, algorithm=algorithm, dtype=np.dtype(dtype),
                          predecessors=predecessors, potentials=potentials,
                          targets=targets)
        assert res.stats.get("kernel") == "numba"
        return res.distances, res.predecessors
    cols = graph.n if targets is None else len(targets)
    dist = np.full((len(sources), cols), np.nan, dtype=dtype)
    pred = np.full((len(sources), graph.n), -2, dtype=np.int32) if predecessors else None
    b.fill_rows(graph, sources, dist, pred, batch_size=7, algorithm=algorithm,
                potentials=potentials, columns=targets)
    return dist, pred


def integer_negative(seed: int, n: int, m: int) -> Graph:
    """Negative integer weights, no negative cycle (integer potentials, exact sums;
    float potentials can leave a cycle of weight -1e-15, which Bellman-Ford rightly
    reports)."""
    rng = np.random.default_rng(seed)
    g = random_graph(rng, n, m, zero_fraction=0.2)
    p = rng.integers(0, 30, n).astype(float)
    return Graph(g.indptr, g.indices, g.weights + p[g.sources_of_edges] - p[g.indices])


def scipy_rows(graph, sources, method="D"):
    return csgraph.shortest_path(graph.to_scipy(), method=method, directed=True,
                                 indices=np.asarray(sources))


FORMS = ["parallel", "serial"]
DTYPES = [np.float64, np.float32]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weights", ["integer", "fractional"])
def test_dijkstra_is_scipy_bit_for_bit(kernels, form, dtype, weights):
    rng = np.random.default_rng(7)
    g = random_graph(rng, 300, 1500, zero_fraction=0.15)   # self-loops and zeros
    if weights == "fractional":
        g = Graph(g.indptr, g.indices, g.weights * rng.uniform(0.1, 3.3, g.m) / 7)
    assert (g.sources_of_edges == g.indices).any() and (g.weights == 0).any()
    src = rng.choice(g.n, 60, replace=False)
    got, _ = rows(g, src, dtype=dtype, form=form)
    want = scipy_rows(g, src).astype(dtype)
    assert got.dtype == dtype
    assert np.isinf(want).any()                  # unreachable vertices too
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["rome99.gr", "p2p-Gnutella09.txt", "karate.mtx",
                                  "br17.atsp", "SiouxFalls_net.tntp"])
def test_real_graphs(kernels, name):
    g = mgapsp.read_graph(DATA / name)
    src = np.arange(0, g.n, max(1, g.n // 150))
    got, _ = rows(g, src)
    np.testing.assert_array_equal(got, scipy_rows(g, src))


@pytest.mark.parametrize("form", FORMS)
def test_searches_that_outgrow_the_heap(kernels, form):
    """Every earlier vertex improves every later one (about n^2 / 2 heap entries, far
    beyond the room a search starts with); the path 0, 1, 2, ... wins in the end."""
    n, K = 120, 1000.0
    i, j = np.triu_indices(n, 2)
    g = Graph.from_edges(np.r_[i, np.arange(n - 1)], np.r_[j, np.arange(1, n)],
                         np.r_[K - 2 * i, np.ones(n - 1)], n=n)
    got, _ = rows(g, [0, 1, 5], form=form)
    np.testing.assert_array_equal(got[0], np.arange(n))
    np.testing.assert_array_equal(got, scipy_rows(g, [0, 1, 5]))


@pytest.mark.parametrize("form", FORMS)
def test_targets_are_columns(kernels, form):
    rng = np.random.default_rng(3)
    g = random_graph(rng, 200, 900)
    src, tgt = np.arange(0, 200, 3), np.array([5, 0, 199, 5, 17])
    got, _ = rows(g, src, dtype=np.float32, form=form, targets=tgt)
    np.testing.assert_array_equal(got, scipy_rows(g, src)[:, tgt].astype(np.float32))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("algorithm", ["dijkstra", "johnson", "bellman-ford"])
def test_predecessors_are_shortest_path_trees(kernels, form, algorithm):
    g = (integer_negative(11, 250, 1000) if algorithm != "dijkstra" else
         random_graph(np.random.default_rng(11), 250, 1000, zero_fraction=0.2))
    src = np.arange(0, g.n, 4)
    dist, pred = rows(g, src, algorithm=algorithm, form=form, predecessors=True)
    assert_predecessors(g, src, dist, pred, rtol=1e-9)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_johnson_is_the_scipy_path(kernels, monkeypatch, form, dtype):
    """The same potentials, reweighting and correction as the SciPy path: the same bits."""
    g = reweighted(mgapsp.read_graph(DATA / "SiouxFalls_net.tntp"))
    rng = np.random.default_rng(5)
    h = random_graph(rng, 300, 1400, negative=True)
    for graph in (g, h):
        src = np.arange(graph.n)
        got, _ = rows(graph, src, algorithm="johnson", dtype=dtype, form=form)
        with monkeypatch.context() as m:
            m.setattr(cpu, "multicore", lambda: False)
            want, _ = rows(graph, src, algorithm="johnson", dtype=dtype)
        np.testing.assert_array_equal(got, want)
        ref = scipy_rows(graph, src, "J")     # SciPy's own potentials: other roundings
        tol = (1e-6 if dtype == np.float32 else 1e-12) * np.abs(ref[np.isfinite(ref)]).max()
        np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


@pytest.mark.parametrize("form", FORMS)
def test_bellman_ford_is_scipy_bit_for_bit(kernels, form):
    g = integer_negative(9, 120, 500)
    g = Graph(g.indptr, g.indices, g.weights * 0.37)         # fractional sums
    assert g.has_negative_weights
    src = np.arange(0, g.n, 2)
    got, _ = rows(g, src, algorithm="bellman-ford", form=form)
    np.testing.assert_array_equal(got, scipy_rows(g, src, "BF"))


@pytest.mark.parametrize("form", FORMS)
def test_negative_cycle_raises_with_the_cycle(kernels, form):
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 0, 3], [1.0, -3.0, 1.0, 2.0], n=5)
    with pytest.raises(NegativeCycleError) as info:
        rows(g, [0, 4], algorithm="bellman-ford", form=form)
    assert sorted(info.value.cycle) == [0, 1, 2] and info.value.weight == -1.0


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weights", ["integer", "fractional"])
def test_phast_is_the_numpy_sweep_bit_for_bit(kernels, form, dtype, weights):
    """More sources than one core's group (cpu_sssp.PHAST_WIDTH) and a last group cut
    short; two components (unreachable vertices); targets as columns."""
    rng = np.random.default_rng(21)
    g = planar_graph(rng, 700, integer=weights == "integer", components=2)
    h = hierarchy.for_graph(g)
    src = rng.choice(g.n, 2 * cpu_sssp.PHAST_WIDTH + 5, replace=False)
    got, _ = rows(g, src, algorithm="phast", dtype=dtype, form=form)
    want = phast_room.sweep(h, src, dtype=dtype)
    assert got.dtype == dtype and np.isinf(want).any()
    np.testing.assert_array_equal(got, want)
    if weights == "integer":
        np.testing.assert_array_equal(got, scipy_rows(g, src).astype(dtype))
    tgt = np.array([3, 0, g.n - 1, 3])
    cols, _ = rows(g, src, algorithm="phast", dtype=dtype, form=form, targets=tgt)
    np.testing.assert_array_equal(cols, want[:, tgt])


def test_phast_predecessors_come_from_the_numpy_sweep(kernels):
    g = mgapsp.read_graph(DATA / "rome99.gr")
    src = np.arange(0, g.n, 97)
    assert not cpu.on_kernels(g, "phast", len(src), predecessors=True)
    dist, pred = rows(g, src, algorithm="phast", predecessors=True)
    np.testing.assert_array_equal(dist, scipy_rows(g, src))
    assert_predecessors(g, src, dist, pred)


def test_dijkstra_refuses_negative_weights(kernels):
    g = Graph.from_edges([0], [1], [-1.0], n=2)
    with pytest.raises(UnsupportedError, match="non-negative"):
        rows(g, [0])


def test_apsp_in_process_uses_the_kernels(kernels):
    g = mgapsp.read_graph(DATA / "rome99.gr")
    src = g.vertex_ids[:64]
    d, p = mgapsp.apsp(g, backend="cpu", sources=src, predecessors=True)
    np.testing.assert_array_equal(d, scipy_rows(g, np.arange(64)).astype(d.dtype))
    assert_predecessors(g, np.arange(64), d, p)
    assert cpu_sssp.loading()


def test_small_jobs_keep_scipy():
    """Loading the kernels costs more than a small job (COLD_STEPS, measured)."""
    g = mgapsp.read_graph(DATA / "karate.mtx")
    assert not kernels_pay(g, g.n)
    rome = mgapsp.read_graph(DATA / "rome99.gr")
    assert kernels_pay(rome, rome.n) == cpu.multicore()


def test_scipy_where_numba_is_missing(monkeypatch):
    """Without Numba the backend keeps SciPy, and its answers."""
    monkeypatch.setattr(cpu, "multicore", lambda: False)
    g = mgapsp.read_graph(DATA / "rome99.gr")
    assert not kernels_pay(g, g.n)
    src = np.arange(0, g.n, 50)
    res = CPUBackend().distances(g, src, algorithm="dijkstra", dtype=np.float64)
    assert "kernel" not in res.stats
    np.testing.assert_array_equal(res.distances, scipy_rows(g, src))


def test_warm_up_loads_what_it_is_asked_for():
    pytest.importorskip("numba")
    from mgapsp.cpu_sssp.kernels import ENTRY_POINTS

    def dtypes(name):       # of the output: the one 2-D float argument
        return {str(t.dtype) for sig in ENTRY_POINTS[name].signatures for t in sig
                if getattr(t, "ndim", 0) == 2 and str(t.dtype).startswith("float")}

    cpu_sssp.warm_up([("spfa", np.float32, False)])
    assert "float32" in dtypes("spfa_ser")
    assert cpu_sssp.warm_up([("spfa", np.float32, False)]) < 0.05    # ready: nothing to do
    cpu_sssp.warm_up()
    for name in ENTRY_POINTS:
        assert dtypes(name) >= {"float32", "float64"}, name
    assert cpu_sssp.loading() and cpu_sssp.compile_seconds() is not None
    assert cpu_sssp.threads() >= 1


def test_a_job_loads_only_its_kernel(monkeypatch):
    """A CPU job starts loading the kernel its batches run, and none other (another
    one compiling meanwhile would hold the interpreter lock the job needs)."""
    asked = []
    monkeypatch.setattr(cpu_sssp, "load_async", lambda *a, **k: asked.append((a, k)))
    CPUBackend().prepare("johnson", "float32", steps=2**40)
    CPUBackend().prepare("floyd-warshall", "float64", steps=2**40)
    CPUBackend().prepare("dijkstra", "float64", steps=10)         # SciPy's job
    assert asked == [(("johnson", "float32"), {})] or not cpu.multicore()
