"""Betweenness of vertices and edges (issue 55, the CPU's part) against NetworkX: real
graphs, 60 random ones (directed and not, ties of integer weights, float weights,
hops, disconnected), sampled sources with a seed, endpoints, both scalings."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import mgapsp

REL = 1e-12         # the sums of several sources are added in another order


def _same(got, want):
    assert list(got) == list(want) or set(got) == set(want)
    assert got == pytest.approx(want, rel=REL, abs=REL, nan_ok=True)


def _networkx(graph: mgapsp.Graph):
    G = nx.DiGraph() if graph.directed else nx.Graph()
    G.add_nodes_from(graph.labels.tolist())
    src = graph.labels[graph.sources_of_edges].tolist()
    dst = graph.labels[graph.indices].tolist()
    G.add_weighted_edges_from(zip(src, dst, graph.weights.tolist()), weight="w")
    return G


@pytest.mark.parametrize("name", ["karate.mtx", "USAir97.mtx", "SiouxFalls_net.tntp",
                                  pytest.param("netscience.mtx", marks=pytest.mark.slow)])
def test_real_graphs_are_networkxs(data_dir, name):
    G = _networkx(mgapsp.read_graph(data_dir / name))
    for weight in ("w", None) if len(G) < 1000 else ("w",):
        _same(mgapsp.betweenness_centrality(G, weight=weight),
              nx.betweenness_centrality(G, weight=weight))
    _same(mgapsp.edge_betweenness_centrality(G, weight="w", normalized=False),
          nx.edge_betweenness_centrality(G, weight="w", normalized=False))


def _random(trial: int):
    rng = np.random.default_rng(trial)
    n = int(rng.integers(2, 45))
    G = nx.gnm_random_graph(n, int(rng.integers(0, 3 * n)), seed=trial,
                            directed=bool(trial % 2))
    kind = trial % 3
    for u, v in G.edges:            # few distinct weights: many tied paths
        G[u][v]["w"] = (int(rng.integers(1, 4)) if kind == 0
                        else float(rng.choice([0.1, 0.2, 0.3, 0.7])))
    return G, None if kind == 2 else "w"


# a few in the fast tier, the rest with the slow one (NetworkX's own sums take the time)
@pytest.mark.parametrize("trial", [t if t < 6 else pytest.param(t, marks=pytest.mark.slow)
                                   for t in range(60)])
def test_random_graphs_are_networkxs(trial):
    G, weight = _random(trial)
    k = max(1, len(G) // 3)
    for normalized in (True, False):
        for endpoints in (False, True):
            _same(mgapsp.betweenness_centrality(G, normalized=normalized, weight=weight,
                                                endpoints=endpoints),
                  nx.betweenness_centrality(G, normalized=normalized, weight=weight,
                                            endpoints=endpoints))
            _same(mgapsp.betweenness_centrality(G, k=k, normalized=normalized,
                                                weight=weight, endpoints=endpoints,
                                                seed=trial),
                  nx.betweenness_centrality(G, k=k, normalized=normalized, weight=weight,
                                            endpoints=endpoints, seed=trial))
        _same(mgapsp.edge_betweenness_centrality(G, k=k, normalized=normalized,
                                                 weight=weight, seed=trial),
              nx.edge_betweenness_centrality(G, k=k, normalized=normalized, weight=weight,
                                             seed=trial))


def test_float_ties_are_networkxs_sums():
    """0.1 + 0.2 is not 0.3 in float64: NetworkX does not tie those two paths, and
    neither does mgapsp (the tolerance of a tie is none: ``==`` on sums made in the
    same order)."""
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, 0.1), (1, 2, 0.2), (0, 2, 0.3)], weight="w")
    got = mgapsp.betweenness_centrality(G, weight="w", normalized=False)
    assert got == nx.betweenness_centrality(G, weight="w", normalized=False)
    assert got[1] == 0.0            # 0.1 + 0.2 > 0.3: the direct edge alone
    G[0][2]["w"] = 0.30000000000000004      # now equal to the sum: a tie
    assert mgapsp.betweenness_centrality(G, weight="w", normalized=False)[1] == 0.5


def test_any_input_and_refusals():
    g = mgapsp.as_graph(([10, 20], [20, 30], [1.0, 1.0]))
    assert mgapsp.betweenness_centrality(g) == {10: 0.0, 20: 0.5, 30: 0.0}
    assert mgapsp.edge_betweenness_centrality(g, normalized=False) == {
        (10, 20): 2.0, (20, 30): 2.0}
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, -1.0)])
    with pytest.raises(nx.NetworkXError, match="negative edge weights"):
        mgapsp.betweenness_centrality(G, weight="weight")
    with pytest.raises(mgapsp.MgapspError, match="multigraph"):
        mgapsp.edge_betweenness_centrality(nx.MultiGraph([(0, 1), (0, 1)]))


@pytest.mark.parametrize("trial", range(8))
def test_subsets_are_networkxs(trial):
    """betweenness_centrality_subset: some sources (one twice) and some targets, ties
    of integer weights, float weights, hops, zero weights (a source reached again)."""
    G, weight = _random(trial)
    rng = np.random.default_rng(trial)
    nodes = list(G)
    sources = list(rng.choice(nodes, size=max(1, len(nodes) // 2)))
    sources.append(sources[0])
    targets = set(rng.choice(nodes, size=max(1, len(nodes) // 3))) | {"absent"}
    if trial == 7:
        for u, v in list(G.edges)[::3]:
            G[u][v]["w"] = 0.0
        weight = "w"
    for normalized in (False, True):
        _same(mgapsp.betweenness_centrality_subset(G, sources, targets,
                                                   normalized=normalized, weight=weight),
              nx.betweenness_centrality_subset(G, sources, targets, normalized=normalized,
                                               weight=weight))
    with pytest.raises(nx.NodeNotFound):
        mgapsp.betweenness_centrality_subset(G, ["absent"], targets)
