"""The batched single-source kernels against SciPy (CUDA device only).

Bellman-Ford under every combination of its optimisation switches (BFOptions),
Crauser's parallel Dijkstra (both variants) and Johnson (reweighting and its undoing
on the device), on real graphs from tests/data and on random graphs with zero-weight
edges and cycles, self-loops, isolated vertices, negative weights (by potentials) and
planted negative cycles.  Outputs are poisoned (NaN distances, -2 predecessors)
before every unpack, so an element the kernels fail to write fails the comparison.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csgraph

import helpers
from helpers import reweighted, tricky_graph
from mgapsp.cuda import bellman_ford, device, frontier, loader, sssp
from mgapsp.cuda.frontier import BFOptions
from mgapsp.errors import NegativeCycleError, UnsupportedError
from mgapsp.graph import Graph
from mgapsp.readers import read_graph

pytestmark = pytest.mark.gpu

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
DTYPES = [F32, F64]
RTOL = {F32: 1e-5, F64: 1e-12}
FLAGS = [f.name for f in dataclasses.fields(BFOptions)]
#: all on, each switch off alone, all off
OPTION_SETS = ([BFOptions()] + [BFOptions(**{f: False}) for f in FLAGS]
               + [BFOptions(**{f: False for f in FLAGS})])
OPTION_IDS = ["all-on"] + [f"no-{f}" for f in FLAGS] + ["all-off"]
ALL_COMBINATIONS = [BFOptions(*bits)
                    for bits in itertools.product([True, False], repeat=len(FLAGS))]


@pytest.fixture(autouse=True)
def poisoned_outputs(monkeypatch):
    monkeypatch.setattr(frontier, "_POISON_OUTPUTS", True)


# -- graphs (and helpers.tricky_graph) ---------------------------------------------------
def planted_cycle_graph(seed: int, n: int, cycle_len: int):
    """Part [0, h) clean, part [h, n) with a cycle of weight -1 reached from h."""
    rng = np.random.default_rng(seed)
    h = n // 2
    m = 4 * n
    src = np.concatenate([rng.integers(0, h, m // 2), rng.integers(h, n, m // 2)])
    dst = np.concatenate([rng.integers(0, h, m // 2), rng.integers(h, n, m // 2)])
    w = rng.integers(1, 20, len(src)).astype(float)
    cyc = np.arange(n - cycle_len, n)
    c_w = np.ones(cycle_len)
    c_w[-1] = -float(cycle_len)
    path = np.arange(h, n - cycle_len + 1)
    src = np.concatenate([src, cyc, path[:-1]])
    dst = np.concatenate([dst, np.roll(cyc, -1), path[1:]])
    w = np.concatenate([w, c_w, np.ones(len(path) - 1)])
    return Graph.from_edges(src, dst, w, n=n, name=f"planted-{seed}"), h


def real_graph(data_dir, name: str) -> Graph:
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{name} is not in {data_dir}")
    return read_graph(path)


def spread(n: int, count: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, count)).astype(np.int64))


# -- checks ------------------------------------------------------------------------------
def reference(graph: Graph, sources) -> np.ndarray:
    method = "J" if graph.has_negative_weights else "D"
    return csgraph.shortest_path(graph.to_scipy(), method=method, directed=True,
                                 indices=np.asarray(sources))


def host(a) -> np.ndarray:
    return device.to_host(a)


def assert_matches(got: np.ndarray, ref: np.ndarray, dtype: np.dtype) -> None:
    assert got.dtype == dtype and got.shape == ref.shape
    assert not np.isnan(got).any(), "an output element was never written (NaN poison)"
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref), err_msg="inf pattern")
    fin = np.isfinite(ref)
    scale = max(1.0, float(np.abs(ref[fin]).max(initial=0.0)))
    np.testing.assert_allclose(got[fin].astype(np.float64), ref[fin], rtol=RTOL[dtype],
                               atol=RTOL[dtype] * scale)


def assert_predecessors(graph: Graph, sources, dist: np.ndarray, pred: np.ndarray) -> None:
    """Each predecessor edge exists and is tight (to float32's rounding); following
    them leads to the source."""
    helpers.assert_predecessors(graph, sources, dist, pred, rtol=4 * RTOL[F32])


def assert_negative_cycle(graph: Graph, err: NegativeCycleError) -> None:
    idx = graph.index_of(err.cycle)
    assert len(set(idx.tolist())) == len(idx), "the cycle repeats a vertex"
    w = graph.edge_weights(idx, np.roll(idx, -1))
    assert not np.isnan(w).any(), f"the reported cycle {err.cycle} uses a missing edge"
    assert math.fsum(w) < 0, "the reported cycle is not negative"
    assert err.weight == pytest.approx(math.fsum(w), rel=1e-12, abs=1e-12)


def run_bf(graph, sources, dtype, options, predecessors=None):
    preds = dtype == F32 if predecessors is None else predecessors
    dg = device.upload_graph(graph, dtype)
    dist, pred, stats = bellman_ford.bellman_ford_batch(dg, sources, dtype, preds, options=options)
    assert stats["rounds"] >= 1 and stats["relaxations"] >= 0
    return host(dist), host(pred), stats


def check_bf(graph, sources, dtype, options):
    dist, pred, stats = run_bf(graph, sources, dtype, options)
    if options.frontier and not options.early_stop:
        # the full sweep after the frontier ran empty found nothing to improve
        assert stats["confirmations"] == 1, stats
    assert_matches(dist, reference(graph, sources), dtype)
    if pred is not None:
        assert_predecessors(graph, sources, dist, pred)


# -- Bellman-Ford: every switch ------------------------------------------------------------
@pytest.mark.parametrize("options", ALL_COMBINATIONS, ids=str)
def test_bf_every_option_combination(options):
    """70 sources: two full chunks of 32 and a partial one; 401 vertices."""
    graph = tricky_graph(1, 401, 2000)
    sources = np.arange(5, 401, 5)[:70]
    for dtype in DTYPES:
        check_bf(graph, sources, dtype, options)


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
@pytest.mark.parametrize("batch", [1, 5, 31, 33])
@pytest.mark.parametrize("negative", [False, True], ids=["nonneg", "negative"])
def test_bf_options_random(options, batch, negative):
    """Small batches (virtual warps of several lanes per source), negative weights."""
    graph = tricky_graph(10 + batch + 100 * negative, 503, 2500, negative=negative,
                         exact=not negative)
    rng = np.random.default_rng(batch)
    sources = rng.choice(graph.n, batch, replace=False)
    sources[-1] = graph.n - 1                      # an isolated vertex as a source
    for dtype in DTYPES:
        check_bf(graph, sources, dtype, options)


REAL = [
    # file, sources, negative (reweighted by random potentials)
    ("p2p-Gnutella08.txt", 100, False),
    ("rome99.gr", 64, False),
    ("SiouxFalls_net.tntp", None, False),
    ("Austin_net.tntp", 40, False),
    ("USAir97.mtx", 50, True),
    ("cugraph_toy_graph.csv", None, False),
    ("br17.atsp", None, True),
]


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
@pytest.mark.parametrize("name,count,negative", REAL, ids=[r[0] for r in REAL])
def test_bf_options_real_graphs(data_dir, name, count, negative, options):
    graph = real_graph(data_dir, name)
    dtype = F32
    if negative:
        graph = reweighted(graph, seed=3, spread=20.0)
        # float64: rounded to float32, random real potentials can turn br17's
        # zero-weight cycles slightly negative (a documented float32 limitation)
        dtype = F64
    sources = np.arange(graph.n) if count is None else spread(graph.n, count)
    check_bf(graph, sources, dtype, options)


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bf_negative_cycle(options, dtype):
    graph, h = planted_cycle_graph(7, 300, 5)
    clean = np.arange(0, h, 17)
    dist, _, _ = run_bf(graph, clean, dtype, options, predecessors=False)
    ref = csgraph.shortest_path(graph.to_scipy(), method="BF", indices=clean)
    assert_matches(dist, ref, dtype)
    with pytest.raises(NegativeCycleError) as info:
        run_bf(graph, np.concatenate([clean[:3], [h]]), dtype, options, predecessors=False)
    assert_negative_cycle(graph, info.value)
    assert min(graph.index_of(info.value.cycle)) >= h


def test_bf_negative_self_loop():
    src = np.array([0, 1, 1, 2])
    dst = np.array([1, 1, 2, 0])
    w = np.array([1.0, -0.5, 2.0, 1.0])
    graph = Graph.from_edges(src, dst, w, n=4)
    for options in OPTION_SETS:
        with pytest.raises(NegativeCycleError) as info:
            run_bf(graph, [0], F64, options, predecessors=False)
        assert info.value.cycle == [1]


def test_potentials_match_virtual_source():
    graph = tricky_graph(21, 1500, 7000, negative=True, exact=False)
    h = bellman_ford.bellman_ford_potentials(device.upload_graph(graph, F64))
    reduced = graph.weights + h[graph.sources_of_edges] - h[graph.indices]
    assert reduced.min() >= -1e-9
    assert h.max() <= 0.0


# -- Crauser's Dijkstra ---------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["general", "economic"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", [1, 7, 32, 70])
def test_dijkstra_random(variant, dtype, batch):
    graph = tricky_graph(30 + batch, 997, 5000, zero_fraction=0.2)
    sources = np.concatenate([np.arange(0, graph.n, max(1, graph.n // batch))[:batch - 1],
                              [graph.n - 1]])
    dg = device.upload_graph(graph, dtype)
    preds = dtype == F32
    dist, pred, stats = sssp.dijkstra_batch(dg, sources, dtype, preds, variant=variant)
    dist, pred = host(dist), host(pred)
    assert_matches(dist, reference(graph, sources), dtype)
    if preds:
        assert_predecessors(graph, sources, dist, pred)
    assert stats["rounds"] >= 1


@pytest.mark.parametrize("variant", ["general", "economic"])
@pytest.mark.parametrize("name,count", [("p2p-Gnutella08.txt", 100), ("rome99.gr", 64),
                                        ("Austin_net.tntp", 48), ("ChicagoSketch_net.tntp", 40),
                                        ("netscience.mtx", 33), ("bays29.tsp", None)])
def test_dijkstra_real_graphs(data_dir, name, count, variant):
    graph = real_graph(data_dir, name)
    sources = np.arange(graph.n) if count is None else spread(graph.n, count)
    dg = device.upload_graph(graph, F32)
    dist, pred, _ = sssp.dijkstra_batch(dg, sources, F32, True, variant=variant)
    dist, pred = host(dist), host(pred)
    assert_matches(dist, reference(graph, sources), F32)
    assert_predecessors(graph, sources, dist, pred)


@pytest.mark.parametrize("variant", ["general", "economic"])
def test_dijkstra_zero_weights(variant):
    """Every weight 0: the threshold is the minimum distance itself; still progress."""
    graph = tricky_graph(40, 300, 1200, zero_fraction=1.0)
    graph = Graph(graph.indptr, graph.indices, np.zeros(graph.m), name="zeros")
    sources = np.arange(0, 300, 7)
    dist, _, stats = sssp.dijkstra_batch(device.upload_graph(graph, F64), sources,
                                             variant=variant)
    assert_matches(host(dist), reference(graph, sources), F64)


def test_dijkstra_rejects_negative_weights():
    graph = tricky_graph(41, 50, 200, negative=True)
    with pytest.raises(UnsupportedError, match="non-negative"):
        sssp.dijkstra_batch(device.upload_graph(graph, F32), [0])


def test_unsorted_and_duplicate_sources():
    """Sources are reordered internally (by vertex id) and put back in place."""
    graph = tricky_graph(42, 400, 2000)
    sources = np.array([399, 5, 5, 0, 250, 0, 17] * 6)
    ref = reference(graph, sources)
    dg = device.upload_graph(graph, F32)
    for dist, pred, _ in (bellman_ford.bellman_ford_batch(dg, sources, predecessors=True),
                          sssp.dijkstra_batch(dg, sources, predecessors=True)):
        dist, pred = host(dist), host(pred)
        assert_matches(dist, ref, F32)
        assert_predecessors(graph, sources, dist, pred)


def test_empty_batches():
    graph = tricky_graph(43, 50, 200)
    dg = device.upload_graph(graph, F32)
    for fn in (bellman_ford.bellman_ford_batch, sssp.dijkstra_batch):
        dist, pred, stats = fn(dg, np.array([], dtype=np.int64), predecessors=True)
        assert dist.shape == (0, 50) and pred.shape == (0, 50)


# -- Johnson ------------------------------------------------------------------------------------
def test_reweight_on_device():
    graph = tricky_graph(50, 600, 3000, negative=True, exact=False)
    g64 = device.upload_graph(graph, F64)
    h = bellman_ford.bellman_ford_potentials(g64)
    rw = sssp.reweight(g64, h)
    w = host(rw.weights)
    expected = np.maximum(graph.weights + h[graph.sources_of_edges] - h[graph.indices], 0)
    np.testing.assert_allclose(w, expected, rtol=0, atol=1e-9)
    assert w.min() >= 0 and not rw.has_negative_weights
    assert rw.indptr is g64.indptr and rw.indices is g64.indices
    rw32 = sssp.reweight(device.upload_graph(graph, F32), device.to_device(h))
    assert rw32.dtype == F32 and host(rw32.weights).min() >= 0


@pytest.mark.parametrize("inner", ["dijkstra", "bellman-ford", "auto"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", [1, 9, 70])
def test_johnson_random(inner, dtype, batch):
    graph = tricky_graph(60 + batch, 811, 4000, negative=True, exact=False)
    sources = np.concatenate([spread(graph.n - 3, batch - 1), [graph.n - 1]])
    h = bellman_ford.bellman_ford_potentials(device.upload_graph(graph, F64))
    rw = sssp.reweight(device.upload_graph(graph, dtype), h)
    preds = dtype == F32
    dist, pred, stats = sssp.johnson_batch(rw, sources, h, dtype, preds, inner=inner)
    dist, pred = host(dist), host(pred)
    assert_matches(dist, reference(graph, sources), dtype)
    if preds:
        assert_predecessors(graph, sources, dist, pred)
    assert stats["inner"] in ("dijkstra", "bellman-ford")


@pytest.mark.parametrize("name", ["p2p-Gnutella08.txt", "Anaheim_net.tntp", "karate.mtx"])
def test_johnson_real_graphs(data_dir, name):
    graph = real_graph(data_dir, name)
    # potentials spread over twice the largest weight: some edges turn negative
    graph = reweighted(graph, seed=5, spread=2.0 * float(graph.weights.max()))
    sources = spread(graph.n, 80)
    h = bellman_ford.bellman_ford_potentials(device.upload_graph(graph, F64))
    for dtype in DTYPES:
        rw = sssp.reweight(device.upload_graph(graph, dtype), h)
        dist, _, _ = sssp.johnson_batch(rw, sources, h, dtype)
        assert_matches(host(dist), reference(graph, sources), dtype)


def test_potentials_find_negative_cycle():
    graph, _h = planted_cycle_graph(8, 400, 4)
    with pytest.raises(NegativeCycleError) as info:
        bellman_ford.bellman_ford_potentials(device.upload_graph(graph, F64))
    assert_negative_cycle(graph, info.value)


# -- the two kernel files share their state helpers ---------------------------------------
def test_shared_helpers_come_from_one_header():
    root = Path(__file__).resolve().parents[1] / "kernels"
    header = (root / "sssp_state.cuh").read_text()
    for name in ("bellman_ford.cu", "dijkstra.cu"):
        assert '#include "sssp_state.cuh"' in (root / name).read_text()
        assert header in loader.kernel_source(name)
