"""GPUBackend against SciPy's csgraph, on real and random graphs (CUDA device only).

Every algorithm of the backend (Bellman-Ford, Crauser's Dijkstra, Johnson, Floyd-
Warshall) goes through ``GPUBackend.distances``; tests/test_gpu_sssp.py checks the
kernels themselves under every option.

Every test here is marked ``gpu``; tests/conftest.py skips them where no CUDA device
is visible.  Outputs are poisoned (NaN distances, -2 predecessors) before the unpack
kernel runs, so an element it fails to write makes the comparison fail.
"""

from __future__ import annotations


import numpy as np
import pytest
from scipy.sparse import csgraph

from mgapsp.cuda import bellman_ford, frontier
from mgapsp.backends.base import BatchResult
from mgapsp.backends.gpu import GPUBackend, clear_device_cache
from mgapsp.errors import InsufficientMemoryError, NegativeCycleError, UnsupportedError
from mgapsp.graph import Graph

import helpers
from helpers import tricky_graph

pytestmark = pytest.mark.gpu

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
DTYPES = [F32, F64]
RTOL = {F32: 1e-5, F64: 1e-12}


# -- fixtures and helpers --------------------------------------------------------------
@pytest.fixture
def backend():
    clear_device_cache()
    yield GPUBackend()
    clear_device_cache()


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    monkeypatch.setattr(frontier, "_POISON_OUTPUTS", True)


def reference(graph: Graph, sources, method: str | None = None) -> np.ndarray:
    """SciPy's answer in float64.  ``method="BF"`` where the graph may have negative
    cycles: SciPy's Bellman-Ford, as ours, reports only those reachable from
    ``sources`` (Johnson reports any)."""
    if method is None:
        method = "J" if graph.has_negative_weights else "D"
    return csgraph.shortest_path(graph.to_scipy(), method=method, directed=True,
                                 indices=np.asarray(sources))


def edge_weights(graph: Graph, src, dst) -> np.ndarray:
    """Weight of each edge src[i] -> dst[i]; NaN where there is no such edge."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keys = graph.sources_of_edges.astype(np.int64) * graph.n + graph.indices
    q = src * graph.n + dst
    pos = np.clip(np.searchsorted(keys, q), 0, max(graph.m - 1, 0))
    return np.where(keys[pos] == q, graph.weights[pos], np.nan)


def scale_of(ref: np.ndarray) -> float:
    fin = np.isfinite(ref)
    return max(1.0, float(np.abs(ref[fin]).max(initial=0.0)))


def assert_matches(got: np.ndarray, ref: np.ndarray, dtype: np.dtype) -> None:
    assert got.dtype == dtype
    assert got.shape == ref.shape
    assert not np.isnan(got).any(), "an output element was never written (NaN poison)"
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref), err_msg="inf pattern")
    assert not (np.isinf(got) & (got < 0)).any()
    fin = np.isfinite(ref)
    tol = RTOL[dtype]
    np.testing.assert_allclose(got[fin].astype(np.float64), ref[fin], rtol=tol,
                               atol=tol * scale_of(ref))


def assert_predecessors(graph: Graph, sources, dist: np.ndarray, pred: np.ndarray,
                        dtype: np.dtype) -> None:
    """Every predecessor edge exists and is tight; walks lead back to the source."""
    helpers.assert_predecessors(graph, sources, dist, pred, rtol=4 * RTOL[dtype])


def run_batches(backend, graph, sources, batch, dtype, predecessors=False, algorithm="bellman-ford"):
    dists, preds = [], []
    for start in range(0, len(sources), batch):
        chunk = np.asarray(sources[start:start + batch], dtype=np.int64)
        res = backend.distances(graph, chunk, algorithm=algorithm, dtype=dtype,
                                predecessors=predecessors)
        assert isinstance(res, BatchResult)
        assert res.distances.shape == (len(chunk), graph.n)
        assert isinstance(res.stats, dict)
        if predecessors:
            assert res.predecessors is not None
            preds.append(res.predecessors)
        else:
            assert res.predecessors is None
        dists.append(res.distances)
    return np.concatenate(dists), (np.concatenate(preds) if predecessors else None)


def planted_cycle_graph(seed: int, n: int, cycle_len: int, *, id_base: int = 1):
    """Two parts: [0, h) clean, [h, n) with a negative cycle reached from vertex h.
    Returns the graph, h and the planted cycle (internal indices)."""
    rng = np.random.default_rng(seed)
    h = n // 2
    m = 4 * n
    a_src = rng.integers(0, h, m // 2)
    a_dst = rng.integers(0, h, m // 2)
    b_src = rng.integers(h, n, m // 2)
    b_dst = rng.integers(h, n, m // 2)
    src = np.concatenate([a_src, b_src])
    dst = np.concatenate([a_dst, b_dst])
    w = rng.integers(1, 20, len(src)).astype(float)
    cyc = np.arange(n - cycle_len, n)          # inside [h, n)
    c_dst = np.roll(cyc, -1)
    c_w = np.ones(cycle_len)
    c_w[-1] = -float(cycle_len)                 # total weight -1
    # a path h -> h+1 -> ... -> cycle start, so sources in [h, n) can reach it
    path = np.arange(h, n - cycle_len + 1)
    src = np.concatenate([src, cyc, path[:-1]])
    dst = np.concatenate([dst, c_dst, path[1:]])
    w = np.concatenate([w, c_w, np.full(len(path) - 1, 1.0)])
    # random edges in [h, n) may close further negative cycles through the planted
    # -cycle_len edge: any of them is a right answer, all lie in [h, n)
    g = Graph.from_edges(src + id_base, dst + id_base, w, n=n, id_base=id_base,
                         name=f"planted-{seed}")
    return g, h, cyc


def assert_negative_cycle(graph: Graph, err: NegativeCycleError) -> None:
    assert len(err.cycle) >= 1
    idx = graph.index_of(err.cycle)
    w = edge_weights(graph, idx, np.roll(idx, -1))
    assert not np.isnan(w).any(), f"the reported cycle {err.cycle} uses a missing edge"
    assert w.sum() < 0
    assert err.weight == pytest.approx(w.sum(), rel=1e-12, abs=1e-12)
    assert len(set(err.cycle)) == len(err.cycle), "the cycle repeats a vertex"


# -- random graphs -----------------------------------------------------------------------
@pytest.mark.parametrize("negative", [False, True], ids=["nonneg", "negative"])
@pytest.mark.parametrize("batch", [1, 7, 64, 300])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_graph_matches_scipy(backend, dtype, batch, negative):
    n = 997                      # not a multiple of any batch size
    graph = tricky_graph(batch * 10 + negative, n, 5 * n, negative=negative)
    sources = np.arange(n) if batch > 1 else np.arange(0, n, 37)
    sources = np.concatenate([sources, [n - 1, n - 2]])   # isolated vertices as sources
    preds = dtype == F32
    dist, pred = run_batches(backend, graph, sources, batch, dtype, predecessors=preds)
    ref = reference(graph, sources)
    assert_matches(dist, ref, dtype)
    if preds:
        assert_predecessors(graph, sources, dist, pred, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_float_weights(backend, dtype):
    graph = tricky_graph(5, 1500, 9000, negative=True, exact=False, isolated=10)
    sources = np.arange(0, graph.n, 3)
    dist, pred = run_batches(backend, graph, sources, 128, dtype, predecessors=dtype == F32)
    assert_matches(dist, reference(graph, sources), dtype)
    if dtype == F32:
        assert_predecessors(graph, sources, dist, pred, dtype)


def test_duplicate_and_unordered_sources(backend):
    graph = tricky_graph(11, 300, 1500)
    sources = np.array([5, 299, 5, 0, 150, 0])
    res = backend.distances(graph, sources, algorithm="bellman-ford", dtype=F32,
                            predecessors=True)
    assert_matches(res.distances, reference(graph, sources), F32)
    np.testing.assert_array_equal(res.distances[0], res.distances[2])
    assert_predecessors(graph, sources, res.distances, res.predecessors, F32)


def test_empty_batch(backend):
    graph = tricky_graph(1, 50, 200)
    res = backend.distances(graph, np.array([], dtype=np.int64), algorithm="bellman-ford",
                            dtype=F32, predecessors=True)
    assert res.distances.shape == (0, 50) and res.distances.dtype == F32
    assert res.predecessors.shape == (0, 50)


def test_stats_and_resident_graph(backend):
    from mgapsp.backends import gpu

    graph = tricky_graph(2, 400, 2000)
    r1 = backend.distances(graph, np.arange(10), algorithm="bellman-ford", dtype=F32)
    r2 = backend.distances(graph, np.arange(10, 20), algorithm="bellman-ford", dtype=F32)
    for r in (r1, r2):
        assert r.stats["rounds"] >= 1 and r.stats["relaxations"] >= 1
        assert r.stats["backend"] == "gpu"
    assert len(gpu._GRAPHS) == 1, "the graph is uploaded once and stays resident"


# -- real graphs ---------------------------------------------------------------------------
REAL = [
    # file, number of sources (None = all), batch size
    ("p2p-Gnutella08.txt", 300, 64),
    ("rome99.gr", 200, 64),
    ("SiouxFalls_net.tntp", None, 7),
    ("br17.atsp", None, 7),
    ("test_FW_1000.mtx", 150, 64),
    ("cugraph_toy_graph.csv", None, 4),
]


def _read(data_dir, name):
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{name} is not in {data_dir}")
    from mgapsp.readers import read_graph

    return read_graph(path)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name,count,batch", REAL, ids=[r[0] for r in REAL])
def test_real_graph_matches_scipy(backend, data_dir, name, count, batch, dtype):
    graph = _read(data_dir, name)
    if count is None or count >= graph.n:
        sources = np.arange(graph.n)
    else:
        sources = np.linspace(0, graph.n - 1, count).astype(np.int64)
    preds = dtype == F32
    dist, pred = run_batches(backend, graph, sources, batch, dtype, predecessors=preds)
    ref = reference(graph, sources)
    assert_matches(dist, ref, dtype)
    if preds:
        assert_predecessors(graph, sources, dist, pred, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_real_graph_negative_weights(backend, data_dir, dtype):
    """Signed trust ratings: negative cycles reachable from some sources."""
    graph = _read(data_dir, "soc-sign-bitcoinalpha.csv")
    assert graph.has_negative_weights
    with_edges = np.flatnonzero(np.diff(graph.indptr))
    batches = [with_edges[:16], with_edges[-16:]]
    raised = 0
    for sources in batches:
        try:
            ref = reference(graph, sources, method="BF")
        except csgraph.NegativeCycleError:
            ref = None
        if ref is None:
            with pytest.raises(NegativeCycleError) as info:
                backend.distances(graph, sources, algorithm="bellman-ford", dtype=dtype)
            assert_negative_cycle(graph, info.value)
            raised += 1
        else:
            res = backend.distances(graph, sources, algorithm="bellman-ford", dtype=dtype)
            assert_matches(res.distances, ref, dtype)
    assert raised >= 1
    # sources without out-edges reach nothing (SciPy's Bellman-Ford is slow to say so)
    sinks = np.flatnonzero(np.diff(graph.indptr) == 0)[:16]
    res = backend.distances(graph, sinks, algorithm="bellman-ford", dtype=dtype)
    expected = np.full((len(sinks), graph.n), np.inf)
    expected[np.arange(len(sinks)), sinks] = 0.0
    assert_matches(res.distances, expected, dtype)
    # the potentials see every cycle of the graph
    try:
        csgraph.johnson(graph.to_scipy(), indices=[0])
        has_cycle = False
    except csgraph.NegativeCycleError:
        has_cycle = True
    if has_cycle:
        with pytest.raises(NegativeCycleError) as info:
            backend.potentials(graph)
        assert_negative_cycle(graph, info.value)


# -- negative cycles ------------------------------------------------------------------------
@pytest.mark.parametrize("early", [True, False], ids=["early-check", "round-n"])
@pytest.mark.parametrize("n,cycle_len", [(20, 3), (21, 1), (3000, 7), (3000, 1)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_planted_negative_cycle(backend, monkeypatch, dtype, n, cycle_len, early):
    if not early:
        monkeypatch.setattr(bellman_ford, "FIRST_CYCLE_CHECK", 10**12)
    graph, h, cyc = planted_cycle_graph(n + cycle_len, n, cycle_len)
    # sources in the clean part: no error, same as SciPy
    clean = np.arange(0, h, max(1, h // 9))
    res = backend.distances(graph, clean, algorithm="bellman-ford", dtype=dtype)
    assert_matches(res.distances, reference(graph, clean, method="BF"), dtype)
    # a batch with one source that reaches the cycle
    mixed = np.concatenate([clean[:3], [h]])
    with pytest.raises(NegativeCycleError) as info:
        backend.distances(graph, mixed, algorithm="bellman-ford", dtype=dtype)
    assert_negative_cycle(graph, info.value)
    assert set(info.value.cycle) <= set(graph.vertex_ids[h:].tolist())
    # the potentials see it too, wherever it is
    with pytest.raises(NegativeCycleError) as info:
        backend.potentials(graph)
    assert_negative_cycle(graph, info.value)


def test_negative_cycle_error_pickles(backend):
    import pickle

    graph, h, _ = planted_cycle_graph(3, 40, 4)
    with pytest.raises(NegativeCycleError) as info:
        backend.distances(graph, [h], algorithm="bellman-ford", dtype=F64)
    again = pickle.loads(pickle.dumps(info.value))
    assert again.cycle == info.value.cycle and again.weight == info.value.weight


# -- potentials ----------------------------------------------------------------------------
def _virtual_source_reference(graph: Graph) -> np.ndarray:
    n = graph.n
    src = np.concatenate([graph.sources_of_edges, np.full(n, n)])
    dst = np.concatenate([graph.indices, np.arange(n)])
    w = np.concatenate([graph.weights, np.zeros(n)])
    aug = Graph.from_edges(src, dst, w, n=n + 1)
    return csgraph.shortest_path(aug.to_scipy(), method="BF", indices=[n])[0, :n]


@pytest.mark.parametrize("exact", [True, False])
def test_potentials(backend, exact):
    graph = tricky_graph(21, 2000, 10000, negative=True, exact=exact)
    h = backend.potentials(graph)
    assert h.dtype == np.float64 and h.shape == (graph.n,)
    ref = _virtual_source_reference(graph)
    scale = scale_of(ref)
    np.testing.assert_allclose(h, ref, rtol=1e-12, atol=1e-12 * scale)
    reduced = graph.weights + h[graph.sources_of_edges] - h[graph.indices]
    assert reduced.min() >= -1e-12 * scale


def test_potentials_nonnegative_graph(backend):
    graph = tricky_graph(22, 100, 400)
    np.testing.assert_array_equal(backend.potentials(graph), np.zeros(100))


# -- Floyd-Warshall ------------------------------------------------------------------------
@pytest.mark.parametrize("negative", [False, True], ids=["nonneg", "negative"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_floyd_warshall(backend, dtype, negative):
    graph = tricky_graph(31 + negative, 203, 4000, negative=negative)
    sources = np.arange(graph.n)
    preds = dtype == F32
    dist, pred = run_batches(backend, graph, sources, 64, dtype, predecessors=preds,
                             algorithm="floyd-warshall")
    assert_matches(dist, reference(graph, sources), dtype)
    if preds:
        assert_predecessors(graph, sources, dist, pred, dtype)
    again = backend.distances(graph, [3, 1], algorithm="floyd-warshall", dtype=dtype)
    assert again.stats["cached"] is True
    np.testing.assert_array_equal(again.distances, dist[[3, 1]])


def test_floyd_warshall_negative_cycle(backend):
    graph, h, _ = planted_cycle_graph(4, 60, 5)
    with pytest.raises(NegativeCycleError) as info:
        backend.distances(graph, [0], algorithm="floyd-warshall", dtype=F32)
    assert_negative_cycle(graph, info.value)


# -- Dijkstra and Johnson through the backend ------------------------------------------------
@pytest.mark.parametrize("algorithm", ["dijkstra", "johnson", "bellman-ford"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_algorithms_nonnegative(backend, dtype, algorithm):
    graph = tricky_graph(51, 700, 3500)
    sources = np.arange(0, graph.n, 3)
    preds = dtype == F32
    dist, pred = run_batches(backend, graph, sources, 100, dtype, predecessors=preds,
                             algorithm=algorithm)
    assert_matches(dist, reference(graph, sources), dtype)
    if preds:
        assert_predecessors(graph, sources, dist, pred, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_johnson_negative_weights(backend, dtype):
    from mgapsp.backends import gpu

    graph = tricky_graph(52, 900, 4500, negative=True, exact=False)
    h = backend.potentials(graph)
    sources = np.arange(0, graph.n, 4)
    dists, preds = [], []
    for start in range(0, len(sources), 64):
        chunk = sources[start:start + 64]
        res = backend.distances(graph, chunk, algorithm="johnson", dtype=dtype,
                                predecessors=dtype == F32, potentials=h)
        assert res.stats["algorithm"] == "johnson"
        dists.append(res.distances)
        preds.append(res.predecessors)
    dist = np.concatenate(dists)
    assert_matches(dist, reference(graph, sources), dtype)
    if dtype == F32:
        assert_predecessors(graph, sources, dist, np.concatenate(preds), dtype)
    assert len(gpu.GPUBackend.cache("reweighted")) == 1, \
        "the reweighted graph is made once per potentials"
    # without potentials the backend computes them itself
    res = backend.distances(graph, sources[:5], algorithm="johnson", dtype=dtype)
    assert_matches(res.distances, reference(graph, sources[:5]), dtype)


def test_dijkstra_negative_weights_unsupported(backend):
    graph = tricky_graph(53, 30, 100, negative=True)
    with pytest.raises(UnsupportedError, match="non-negative"):
        backend.distances(graph, [0], algorithm="dijkstra", dtype=F32)


def test_johnson_negative_cycle(backend):
    graph, h, _ = planted_cycle_graph(9, 200, 3)
    with pytest.raises(NegativeCycleError) as info:
        backend.distances(graph, [0], algorithm="johnson", dtype=F64)
    assert_negative_cycle(graph, info.value)


# -- options and memory ----------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["bogus", "all-pairs"])
def test_unsupported_algorithms(backend, algorithm):
    graph = tricky_graph(41, 30, 100)
    with pytest.raises(UnsupportedError, match="bellman-ford"):
        backend.distances(graph, [0], algorithm=algorithm, dtype=F32)


def test_float64_predecessors_unsupported(backend):
    graph = tricky_graph(42, 30, 100)
    with pytest.raises(UnsupportedError, match="float32"):
        backend.distances(graph, [0], algorithm="bellman-ford", dtype=F64, predecessors=True)


@pytest.mark.parametrize("bad", [-1, 30])
def test_sources_out_of_range(backend, bad):
    graph = tricky_graph(43, 30, 100)
    with pytest.raises(ValueError, match=f"N=30, source={bad}"):
        backend.distances(graph, [0, bad], algorithm="bellman-ford", dtype=F32)


def test_insufficient_memory(backend, monkeypatch):
    graph = tricky_graph(44, 500, 2000)
    monkeypatch.setattr(GPUBackend, "memory_available", lambda self: 1000)
    with pytest.raises(InsufficientMemoryError, match="a batch of 64 sources on 500 vertices") as info:
        backend.distances(graph, np.arange(64), algorithm="bellman-ford", dtype=F32)
    assert "batch-size" in str(info.value)
    assert info.value.available == 1000
    assert info.value.needed == backend.memory_needed(
        graph, 64, algorithm="bellman-ford", dtype=F32, predecessors=False)


def test_memory_needed_and_available(backend):
    graph = tricky_graph(45, 1000, 4000)
    avail = backend.memory_available()
    assert avail > 0
    for algorithm in ("bellman-ford", "dijkstra", "johnson"):
        need = [backend.memory_needed(graph, b, algorithm=algorithm, dtype=F32,
                                      predecessors=False) for b in (1, 64, 300)]
        assert need[0] < need[1] < need[2]
        # at least the float32 state words and the output block
        assert need[2] >= 300 * 1000 * (4 + 4)
        with_pred = backend.memory_needed(graph, 300, algorithm=algorithm, dtype=F32,
                                          predecessors=True)
        # 64-bit keys instead of 32-bit state words (batch padded to 320), int32 output
        # and the writer's scratch for it (a shuffled copy, LZ4 output, frames)
        assert with_pred - need[2] == 320 * 1000 * 4 + 300 * 1000 * 4 * (1 + 3)
    fw = backend.memory_needed(graph, 1, algorithm="floyd-warshall", dtype=F64,
                               predecessors=False)
    assert fw >= 1000 * 1000 * 8 * 2
