"""Blocked Floyd-Warshall kernels (mgapsp/cuda/fw.py) against SciPy's csgraph.

Every test is marked ``gpu``; tests/conftest.py skips them where no CUDA device is
visible.  The kernels' scratch panels are poisoned before every pivot block
(``fw.POISON_SCRATCH``), and dense inputs are views into larger buffers whose margins
hold a poison value that must survive, so a panel entry read before it is written or a
write outside the matrix makes a test fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csgraph

from mgapsp import read_graph
from mgapsp.cuda import floyd_warshall as fw
from mgapsp.cuda.device import upload_graph
from mgapsp.errors import NegativeCycleError
from mgapsp.graph import Graph

pytestmark = pytest.mark.gpu

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
METHOD_DTYPE = {"fp32": np.float32, "fp64": np.float64, "int32-dpx": np.int32,
                "int16x2-dpx": np.int16}
INF = {"int32-dpx": fw.INF_I32, "int16x2-dpx": fw.INF_I16}
SIZES = [1, 5, 127, 300, 1000]        # none a multiple of the 128 / 256 tiles but 1


@pytest.fixture(autouse=True)
def poisoned_scratch(monkeypatch):
    monkeypatch.setattr(fw, "POISON_SCRATCH", True)


@pytest.fixture
def cp():
    import cupy

    return cupy


# -- graphs and references -------------------------------------------------------------------
def random_graph(seed: int, n: int, m: int, *, integer: bool, negative: bool,
                 wmax: int = 20, isolated: int = 2) -> Graph:
    """Random digraph with zero-weight edges, a zero-weight cycle, self-loops and
    isolated vertices; ``negative``: reweighted by potentials (w + p[u] - p[v]), which
    keeps every cycle's weight, so there is no negative cycle.

    Not ``integer``: quarters, so that every sum is exact in float32 too.  (With
    weights like uniform(0, 1) the reweighted zero-weight cycles sum to a few ulps
    either side of 0 once rounded; FW's predecessors, the classic sequential FW's as
    well, can then close a cycle: a limit of floating point, see bench/NOTES.md.)"""
    rng = np.random.default_rng(seed)
    live = max(n - isolated, 1)
    src = rng.integers(0, live, m)
    dst = rng.integers(0, live, m)
    w = (rng.integers(1, wmax + 1, m).astype(float) if integer
         else rng.integers(2, 4 * wmax + 1, m) / 4.0)
    w[rng.random(m) < 0.1] = 0.0
    cyc = rng.choice(live, size=min(6, live), replace=False)
    loops = rng.choice(live, size=min(3, live), replace=False)
    src = np.concatenate([src, cyc, loops])
    dst = np.concatenate([dst, np.roll(cyc, -1), loops])
    w = np.concatenate([w, np.zeros(len(cyc)), rng.integers(0, 4, len(loops)).astype(float)])
    if negative:
        p = rng.integers(0, wmax, n).astype(float)
        if not integer:
            p += rng.integers(0, 4, n) / 4.0
        w = w + p[src] - p[dst]
    return Graph.from_edges(src, dst, w, n=n, name=f"random-{seed}")


def reference(graph: Graph) -> np.ndarray:
    method = "J" if graph.has_negative_weights else "D"
    return csgraph.shortest_path(graph.to_scipy(), method=method, directed=True)


def edge_weights(graph: Graph, src, dst) -> np.ndarray:
    return graph.edge_weights(src, dst)


def dense_view(cp, graph: Graph, method: str, *, margin: int = 4):
    """The graph as the dense input of ``method``: a view into a larger buffer whose
    margin holds poison.  Returns (buffer, view, poison)."""
    n = graph.n
    dt = METHOD_DTYPE[method]
    poison = np.nan if method in ("fp32", "fp64") else -12345
    buf = cp.full((n + margin, n + 2 * margin), poison, dtype=dt)
    D = buf[margin // 2:margin // 2 + n, margin:margin + n]
    D[...] = INF.get(method, np.inf)
    src = cp.asarray(graph.sources_of_edges)
    dst = cp.asarray(graph.indices)
    w = graph.weights
    D[src, dst] = cp.asarray(np.rint(w) if dt in (np.int16, np.int32) else w).astype(dt)
    diag = cp.arange(n)
    D[diag, diag] = cp.minimum(D[diag, diag], 0)
    return buf, D, poison


def margin_intact(cp, buf, D, poison, margin: int = 4) -> bool:
    mask = cp.ones(buf.shape, dtype=bool)
    n = D.shape[0]
    mask[margin // 2:margin // 2 + n, margin:margin + n] = False
    rest = buf[mask]
    if isinstance(poison, float) and math.isnan(poison):
        return bool(cp.isnan(rest).all())
    return bool((rest == poison).all())


def as_distances(D: np.ndarray, method: str, negative: bool) -> np.ndarray:
    """The dense result as float64 with inf for "no path"."""
    out = D.astype(np.float64)
    if method in INF:
        inf = INF[method]
        out[D > inf // 2] = np.inf
    return out


def assert_distances(got: np.ndarray, ref: np.ndarray, *, rtol: float) -> None:
    assert got.shape == ref.shape
    assert not np.isnan(got).any(), "a NaN (poison) reached the result"
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref), err_msg="inf pattern")
    assert not (np.isinf(got) & (got < 0)).any()
    fin = np.isfinite(ref)
    scale = max(1.0, float(np.abs(ref[fin]).max(initial=0.0)))
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=rtol * scale)


def assert_predecessors(graph: Graph, dist: np.ndarray, pred: np.ndarray, *, rtol: float):
    """Every predecessor edge exists and is tight; walks from j lead back to i."""
    n = graph.n
    assert pred.dtype == np.int32 and pred.shape == (n, n)
    assert ((pred >= -1) & (pred < n)).all()
    reach = np.isfinite(dist)
    assert (pred[~reach] == -1).all(), "unreachable vertices have no predecessor"
    eye = np.eye(n, dtype=bool)
    assert (pred[eye] == -1).all(), "pred[i, i] must be -1 without negative self-loops"
    inner = reach & ~eye
    assert (pred[inner] >= 0).all(), "a reachable vertex lacks a predecessor"
    ii, jj = np.nonzero(inner)
    pp = pred[ii, jj].astype(np.int64)
    w = edge_weights(graph, pp, jj)
    assert not np.isnan(w).any(), "a predecessor edge does not exist"
    scale = max(1.0, float(np.abs(dist[reach]).max(initial=0.0)))
    np.testing.assert_allclose(dist[ii, pp] + w, dist[ii, jj], rtol=0, atol=4 * rtol * scale)
    # pointer doubling: every reachable j walks back to i
    Q = np.where(pred < 0, np.arange(n)[None, :], pred).astype(np.int64)
    for _ in range(max(1, math.ceil(math.log2(max(n, 2)))) + 1):
        Q = np.take_along_axis(Q, Q, axis=1)
    src = np.broadcast_to(np.arange(n)[:, None], (n, n))
    assert (Q[reach] == src[reach]).all(), "a predecessor walk misses its source"


RTOL = {"fp32": 1e-5, "fp64": 1e-12, "int32-dpx": 0.0, "int16x2-dpx": 0.0}


# -- the dense kernels, each method --------------------------------------------------------------
@pytest.mark.parametrize("negative", [False, True], ids=["nonneg", "negative"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("method", list(METHOD_DTYPE))
def test_dense_matches_scipy(cp, method, n, negative):
    integer = method in INF
    wmax = 4 if method == "int16x2-dpx" and negative else 20
    graph = random_graph(1000 * n + negative, n, 6 * n, integer=integer or n % 2 == 0,
                         negative=negative, wmax=wmax)
    if method == "int16x2-dpx" and negative:
        assert (n - 1) * np.abs(graph.weights).max() <= fw.INF_I16 // 2
    buf, D, poison = dense_view(cp, graph, method)
    stats = fw.floyd_warshall_dense(D, method=method)
    assert stats["method"] == method and stats["n"] == n and stats["updates"] == n**3
    assert margin_intact(cp, buf, D, poison), "a write landed outside the matrix"
    got = as_distances(cp.asnumpy(D), method, negative)
    assert_distances(got, reference(graph), rtol=RTOL[method])


@pytest.mark.parametrize("n", [5, 300, 1000])
@pytest.mark.parametrize("method", list(METHOD_DTYPE))
def test_dense_predecessors(cp, method, n):
    graph = random_graph(77 + n, n, 5 * n, integer=method in INF, negative=True, wmax=4)
    buf, D, poison = dense_view(cp, graph, method)
    P = cp.full((n, n + 1), -2, dtype=cp.int32)[:, :n]          # strided, poisoned
    P[...] = -1
    src = cp.asarray(graph.sources_of_edges)
    P[src, cp.asarray(graph.indices)] = src
    diag = cp.arange(n)
    P[diag, diag] = -1
    stats = fw.floyd_warshall_dense(D, method=method, P=P)
    assert stats["method"] == ("int32-dpx" if method == "int16x2-dpx" else method)
    assert margin_intact(cp, buf, D, poison)
    dist = as_distances(cp.asnumpy(D), method, True)
    ref = reference(graph)
    assert_distances(dist, ref, rtol=RTOL[method])
    assert_predecessors(graph, dist, cp.asnumpy(P), rtol=max(RTOL[method], 1e-12))


@pytest.mark.parametrize("method", ["fp32", "fp64", "int32-dpx"])
def test_predecessors_with_many_ties(cp, method):
    """Weights 0 and 1 only: shortest paths tie everywhere and zero-weight cycles
    abound.  Regression: the blocked products once chose among tied pivots
    independently per entry, so P mixed two shortest-path trees into a cycle; ties now
    go to the path with fewer edges, which keeps every row of P a tree."""
    n = 700
    rng = np.random.default_rng(9)
    src = rng.integers(0, n, 4 * n)
    dst = rng.integers(0, n, 4 * n)
    graph = Graph.from_edges(src, dst, rng.integers(0, 2, 4 * n).astype(float), n=n,
                             name="ties")
    buf, D, poison = dense_view(cp, graph, method)
    P = cp.full((n, n), -1, dtype=cp.int32)
    P[cp.asarray(graph.sources_of_edges), cp.asarray(graph.indices)] = \
        cp.asarray(graph.sources_of_edges)
    diag = cp.arange(n)
    P[diag, diag] = -1
    fw.floyd_warshall_dense(D, method=method, P=P)
    assert margin_intact(cp, buf, D, poison)
    dist = as_distances(cp.asnumpy(D), method, False)
    assert_distances(dist, reference(graph), rtol=0.0)
    assert_predecessors(graph, dist, cp.asnumpy(P), rtol=1e-12)


@pytest.mark.parametrize("method", ["fp32", "int32-dpx", "int16x2-dpx"])
def test_dense_contiguous_and_square_any_n(cp, method):
    """A plain contiguous matrix: whole tiles (16-byte loads), and odd n (int16: copied
    through an even-width buffer)."""
    for n in (256, 257, 510):
        graph = random_graph(n, n, 8 * n, integer=True, negative=False)
        _, view, _ = dense_view(cp, graph, method)
        D = cp.ascontiguousarray(view)
        fw.floyd_warshall_dense(D)                                  # method "auto" by dtype
        assert_distances(as_distances(cp.asnumpy(D), method, False), reference(graph),
                         rtol=RTOL[method])


def test_dense_bad_input(cp):
    with pytest.raises(ValueError, match="square"):
        fw.floyd_warshall_dense(cp.zeros((3, 4), dtype=cp.float32))
    with pytest.raises(ValueError, match="needs a int32 matrix. Got float32"):
        fw.floyd_warshall_dense(cp.zeros((3, 3), dtype=cp.float32), method="int32-dpx")
    with pytest.raises(ValueError, match="method must be"):
        fw.floyd_warshall_dense(cp.zeros((3, 3), dtype=cp.float32), method="fp16")
    with pytest.raises(ValueError, match="float32, float64, int32 or int16. Got uint8"):
        fw.floyd_warshall_dense(cp.zeros((3, 3), dtype=cp.uint8))
    with pytest.raises(ValueError, match="P must be an int32"):
        fw.floyd_warshall_dense(cp.zeros((3, 3), dtype=cp.float32),
                                P=cp.zeros((3, 3), dtype=cp.int64))


# -- the graph-level entry point ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("name", ["gr120.tsp", "ftv170.atsp", "brg180.tsp", "si175.tsp"])
def test_real_dense_graphs(data_dir, name, dtype):
    graph = read_graph(data_dir / name)
    dg = upload_graph(graph, dtype)
    dist, pred, stats = fw.floyd_warshall(dg)
    assert pred is None
    assert stats["method"] in ("int16x2-dpx", "int32-dpx")        # integer weights
    assert stats["method"] == fw.choose_fw_method(dtype, graph.weights, graph.n) \
        or len(stats["attempts"]) > 1
    got = dist.get()
    assert got.dtype == dtype
    assert_distances(got.astype(np.float64), reference(graph), rtol=0.0)


@pytest.mark.parametrize("predecessors", [False, True])
@pytest.mark.parametrize("integer", [False, True], ids=["float", "integer"])
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_graph_entry_point(dtype, integer, predecessors):
    n = 411
    graph = random_graph(5 + integer, n, 10 * n, integer=integer, negative=True, wmax=9)
    dist, pred, stats = fw.floyd_warshall(upload_graph(graph, dtype),
                                          predecessors=predecessors)
    method = stats["method"]
    if integer:
        assert method in ("int16x2-dpx", "int32-dpx")
        if predecessors:
            assert method == "int32-dpx"
    else:
        assert method == ("fp32" if dtype == F32 else "fp64")
    rtol = 1e-5 if dtype == F32 and not integer else 1e-12
    got = dist.get().astype(np.float64)
    assert dist.dtype == dtype and dist.flags.c_contiguous
    assert_distances(got, reference(graph), rtol=rtol)
    if predecessors:
        assert_predecessors(graph, got, pred.get(), rtol=rtol)
    else:
        assert pred is None


@pytest.mark.parametrize("integer", [False, True], ids=["float", "integer"])
def test_negative_cycle(integer):
    rng = np.random.default_rng(3)
    n = 300
    src = rng.integers(0, n, 4 * n)
    dst = rng.integers(0, n, 4 * n)
    w = rng.integers(1, 20, 4 * n).astype(float)
    if not integer:
        w += 0.25
    cyc = np.arange(200, 207)
    cw = np.ones(len(cyc))
    cw[-1] = -float(len(cyc))                      # total -1
    graph = Graph.from_edges(np.concatenate([src, cyc]), np.concatenate([dst, np.roll(cyc, -1)]),
                             np.concatenate([w, cw]), n=n, name="planted")
    expect = "int16x2-dpx" if integer else "fp32"
    assert fw.choose_fw_method(F32, graph.weights, n) in (expect, "int32-dpx")
    with pytest.raises(NegativeCycleError) as info:
        fw.floyd_warshall(upload_graph(graph, F32))
    cyc_idx = graph.index_of(info.value.cycle)
    assert graph.edge_weights(cyc_idx, np.roll(cyc_idx, -1)).sum() < 0


# -- int16's overflow fallback (choosing the method: tests/test_kernels_compile.py) ---


def test_int16_overflow_falls_back():
    """Non-negative weights below the speculation limit whose distances leave int16:
    auto tries int16x2, sees a distance near the sentinel and recomputes in int32."""
    n = 64
    path = np.arange(n)
    graph = Graph.from_edges(path[:-1], path[1:], np.full(n - 1, 1000.0), n=n, name="path")
    assert fw.choose_fw_method(F32, graph.weights, n) == "int16x2-dpx"   # speculative
    dist, _, stats = fw.floyd_warshall(upload_graph(graph, F32))
    assert stats["attempts"] == ["int16x2-dpx", "int32-dpx"]
    assert stats["method"] == "int32-dpx"
    got = dist.get().astype(np.float64)
    assert got[0, n - 1] == 1000.0 * (n - 1)                             # 63000 > int16
    assert_distances(got, reference(graph), rtol=0.0)


def test_int16_speculation_that_holds():
    n = 1000
    graph = random_graph(11, n, 20 * n, integer=True, negative=False, wmax=100)
    assert (n - 1) * 100 > fw.INF_I16            # no a-priori bound: speculative int16
    dist, _, stats = fw.floyd_warshall(upload_graph(graph, F32))
    assert stats["attempts"] == ["int16x2-dpx"]
    assert_distances(dist.get().astype(np.float64), reference(graph), rtol=0.0)


def test_negative_weights_never_speculate_int16():
    n = 500
    graph = random_graph(12, n, 10 * n, integer=True, negative=True, wmax=40)
    assert (n - 1) * np.abs(graph.weights).max() > fw.INF_I16 // 2
    dist, _, stats = fw.floyd_warshall(upload_graph(graph, F64))
    assert stats["attempts"] == ["int32-dpx"]
    assert_distances(dist.get(), reference(graph), rtol=0.0)
