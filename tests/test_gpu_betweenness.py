"""Betweenness on the GPU (issue 55): NetworkX's values on real and random graphs,
ties of integer and float weights, sampled sources; and the CPU's on graphs that
make the kernels take their other paths (hubs past a warp's arcs, many of them in one
round, deep DAGs, batches of several launches, sums past float32's integers)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import mgapsp
from mgapsp import UnsupportedError

from bench import generators
from tests.test_betweenness import _networkx, _random, _same

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["karate.mtx", "USAir97.mtx", "SiouxFalls_net.tntp",
                                  "netscience.mtx"])
def test_real_graphs_are_networkxs(data_dir, name):
    G = _networkx(mgapsp.read_graph(data_dir / name))
    for weight in ("w", None):
        _same(mgapsp.betweenness_centrality(G, weight=weight, backend="gpu"),
              nx.betweenness_centrality(G, weight=weight))
    _same(mgapsp.edge_betweenness_centrality(G, weight="w", normalized=False,
                                             backend="gpu"),
          nx.edge_betweenness_centrality(G, weight="w", normalized=False))


@pytest.mark.parametrize("trial", range(60))
def test_random_graphs_are_networkxs(trial):
    G, weight = _random(trial)
    k = max(1, len(G) // 3)
    for normalized, endpoints in ((True, False), (False, True)):
        _same(mgapsp.betweenness_centrality(G, normalized=normalized, weight=weight,
                                            endpoints=endpoints, backend="gpu"),
              nx.betweenness_centrality(G, normalized=normalized, weight=weight,
                                        endpoints=endpoints))
        _same(mgapsp.betweenness_centrality(G, k=k, normalized=normalized, weight=weight,
                                            endpoints=endpoints, seed=trial,
                                            backend="gpu"),
              nx.betweenness_centrality(G, k=k, normalized=normalized, weight=weight,
                                        endpoints=endpoints, seed=trial))
    _same(mgapsp.edge_betweenness_centrality(G, k=k, weight=weight, seed=trial,
                                             backend="gpu"),
          nx.edge_betweenness_centrality(G, k=k, weight=weight, seed=trial))


def test_float_ties_are_networkxs_sums():
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, 0.1), (1, 2, 0.2), (0, 2, 0.3)], weight="w")
    assert mgapsp.betweenness_centrality(G, weight="w", normalized=False,
                                         backend="gpu")[1] == 0.0
    G[0][2]["w"] = 0.30000000000000004      # the sum itself: a tie
    assert mgapsp.betweenness_centrality(G, weight="w", normalized=False,
                                         backend="gpu")[1] == 0.5


def _both(g: mgapsp.Graph, **kw):
    gpu = mgapsp.betweenness_centrality(g, backend="gpu", **kw)
    cpu = mgapsp.betweenness_centrality(g, backend="cpu", **kw)
    return np.array(list(gpu.values())), np.array(list(cpu.values()))


def _graph(gen, directed: bool) -> mgapsp.Graph:
    csr = gen.csr()
    return mgapsp.Graph(csr.indptr, csr.indices, csr.data, directed=directed)


@pytest.mark.parametrize("case", ["rmat", "grid", "dense"])
def test_kernel_paths_are_the_cpus(case):
    """R-MAT's hubs (warps over their arcs), a grid's hundreds of rounds, and a dense
    graph whose first round lists more heavy vertices than shared memory holds."""
    if case == "rmat":
        g, kw = _graph(generators.rmat(11, 8, seed=3), True), {}
    elif case == "grid":
        g, kw = _graph(generators.grid(40, drop=0.1, seed=3), False), {"endpoints": True}
    else:
        G = nx.gnp_random_graph(700, 0.5, seed=3, directed=True)
        g, kw = mgapsp.as_graph(G), {}
    gpu, cpu = _both(g, **kw)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-12, atol=1e-12)
    assert gpu.max() > 0


def test_several_batches_and_wide_sums_are_the_cpus():
    """A batch narrower than the sources (several launches, their sums added), and
    integer sums past 2**24 (the float32 plan checked, that batch redone in float64)."""
    from mgapsp.backends import get_backend
    from mgapsp.metrics import _dependencies

    gen = generators.rmat(9, 8, seed=5, weights=(1, 2**22))
    g = _graph(gen, True)
    sources = np.arange(g.n, dtype=np.int64)
    want, want_e = _dependencies(g, sources, endpoints=True, backend="cpu", edges=True)
    got, got_e = get_backend("gpu").dependencies(
        g, sources, algorithm="dijkstra", dtype=np.float32, checked32=True,
        batch_size=96, endpoints=True, edges=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_e, want_e, rtol=1e-12, atol=1e-12)


def test_zero_weights_are_the_cpus_or_refused():
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, 0.0), (1, 2, 1.0), (0, 2, 1.0)])
    with pytest.raises(UnsupportedError, match="zero-weight edges runs on the cpu"):
        mgapsp.betweenness_centrality(G, weight="weight", backend="gpu")
    assert (mgapsp.betweenness_centrality(G, weight="weight")
            == nx.betweenness_centrality(G, weight="weight"))
