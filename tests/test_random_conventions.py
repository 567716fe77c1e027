"""Seeded randomized comparisons (issue 51): against NetworkX for weight functions
(attributes and functions; directed, undirected and multigraphs; direction-dependent
and hiding), for metrics over targets and for integral float weights; against SciPy's
csgraph for every kind of input ``as_graph`` takes.  The slow tier runs them."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import mgapsp

pytestmark = pytest.mark.slow
SEEDS = range(40)


def _random_nx(rng: random.Random, kind: str):
    n = rng.randint(1, 14)
    g = {"graph": nx.Graph, "digraph": nx.DiGraph, "multigraph": nx.MultiGraph,
         "multidigraph": nx.MultiDiGraph}[kind]()
    g.add_nodes_from(range(n))
    for _ in range(rng.randint(0, 3 * n)):
        u, v = rng.randrange(n), rng.randrange(n)
        g.add_edge(u, v, w=rng.randint(1, 9), open=rng.random() > 0.15)
    return g


def _functions(multi: bool):
    """Weight functions as NetworkX calls them: per direction of travel, with the
    edge's attributes (a multigraph: the dict of its parallel edges)."""
    if multi:
        def one(u, v, keyed):
            costs = [d["w"] for d in keyed.values() if d["open"]]
            return min(costs) if costs else None

        def uphill(u, v, keyed):
            return min(d["w"] for d in keyed.values()) * (1 if u <= v else 3)
    else:
        def one(u, v, d):
            return d["w"] if d["open"] else None

        def uphill(u, v, d):
            return d["w"] * (1 if u <= v else 3)
    return {"attribute": "w", "hiding": one, "direction-dependent": uphill}


def _nx_rows(g, weight) -> np.ndarray:
    nodes = list(g)
    out = np.full((len(nodes), len(nodes)), np.inf)
    for i, (_, lengths) in enumerate(nx.all_pairs_dijkstra_path_length(g, weight=weight)):
        for v, d in lengths.items():
            out[i, nodes.index(v)] = d
    return out


@pytest.mark.parametrize("kind", ["graph", "digraph", "multigraph", "multidigraph"])
def test_weight_functions_against_networkx(kind):
    for seed in SEEDS:
        rng = random.Random(seed)
        g = _random_nx(rng, kind)
        for name, weight in _functions(g.is_multigraph()).items():
            want = _nx_rows(g, weight)
            got = np.asarray(mgapsp.apsp(g, weight=weight, backend="cpu"), dtype=float)
            assert got.shape == want.shape and np.array_equal(got, want), (seed, name)
            if g.number_of_nodes() and name != "hiding":
                c = mgapsp.closeness_centrality(g, distance=weight, backend="cpu")
                assert c == pytest.approx(nx.closeness_centrality(g, distance=weight),
                                          rel=1e-12), (seed, name)
                h = mgapsp.harmonic_centrality(g, distance=weight, backend="cpu")
                assert h == pytest.approx(nx.harmonic_centrality(g, distance=weight),
                                          rel=1e-12), (seed, name)


def test_integral_float_weights_keep_networkx_s_types():
    for seed in SEEDS:
        rng = random.Random(seed)
        g = nx.connected_watts_strogatz_graph(rng.randint(3, 20), 2, 0.3, seed=seed)
        as_float = rng.random() < 0.5
        for u, v in g.edges:
            g[u][v]["weight"] = float(rng.randint(1, 9)) if as_float else rng.randint(1, 9)
        want = nx.eccentricity(g, weight="weight")
        got = mgapsp.eccentricity(g, weight="weight", backend="cpu")
        assert got == want and [type(x) for x in got.values()] == [
            type(x) for x in want.values()], seed
        d = mgapsp.diameter(g, weight="weight", backend="cpu")
        assert d == nx.diameter(g, weight="weight") and type(d) is type(
            nx.diameter(g, weight="weight")), seed


def _by_hand(dist: np.ndarray, sources, targets) -> dict:
    """The stored metrics' definitions over a set of targets, computed here without
    mgapsp: the targets other than the source, the source counted once."""
    out = {k: [] for k in ("closeness", "harmonic", "eccentricity", "reachable")}
    for s in sources:
        others = [t for t in targets if t != s]
        d = dist[s, others]
        reached = d[np.isfinite(d)]
        total = reached.sum()
        r = len(reached)
        c = (r / total) * (r / len(others)) if total > 0 and others else 0.0
        out["closeness"].append(c)
        out["harmonic"].append(float(np.sum(1.0 / reached[reached > 0])))
        row = dist[s, targets]
        out["eccentricity"].append(float(row[np.isfinite(row)].max(initial=0.0)))
        out["reachable"].append(int(np.isfinite(row).sum()))
    return out


def test_metrics_over_targets_against_their_definitions(tmp_path, cpu_client):
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 40))
        m = sp.random(n, n, density=0.15, random_state=seed, format="csr")
        m.data = rng.integers(1, 9, m.nnz).astype(float)
        g = mgapsp.as_graph(m, directed=bool(seed % 2))
        dist = csgraph.shortest_path(g.to_scipy(), directed=g.directed)
        sources = np.sort(rng.choice(n, int(rng.integers(1, n)), replace=False))
        targets = np.sort(rng.choice(n, int(rng.integers(1, n)), replace=False))
        out = tmp_path / f"t{seed}.zarr"
        mgapsp.apsp(g, out=out, sources=sources, targets=targets, client=cpu_client,
                    metrics=["closeness", "harmonic", "eccentricity"], backend="cpu")
        store = mgapsp.open(out).store
        want = _by_hand(dist, sources, targets)
        for name, values in want.items():
            assert store.metric(name).tolist() == pytest.approx(values, rel=1e-12), (
                seed, name)


def _inputs(m: sp.csr_matrix):
    """The same weighted digraph as each kind of input ``as_graph`` reads, and the
    options that make it the same graph."""
    coo = m.tocoo()
    dense = m.toarray()
    dense[dense == 0] = np.inf                      # no edge; zero weights are none here
    masked = np.ma.masked_invalid(dense)
    g = nx.DiGraph()
    g.add_nodes_from(range(m.shape[0]))
    g.add_weighted_edges_from(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()))
    import pandas as pd

    frame = pd.DataFrame({"source": coo.row, "target": coo.col, "weight": coo.data})
    yield "csr", m, {}
    yield "coo", coo, {}
    yield "csr_array", sp.csr_array(m), {}
    yield "dense", dense, {}
    yield "masked", masked, {}
    yield "list", dense.tolist(), {}
    yield "networkx", g, {}
    if m.nnz:
        yield "frame", frame, {}
        yield "tuple", (coo.row, coo.col, coo.data), {}


def test_every_input_kind_against_scipy():
    for seed in range(25):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(2, 30))
        m = sp.random(n, n, density=0.2, random_state=seed, format="csr")
        # negative weights on a DAG's arcs (no negative cycle) in a third of the cases
        neg = seed % 3 == 0
        m.data = rng.integers(1, 20, m.nnz).astype(float)
        if neg:
            m = sp.triu(m, k=1, format="csr")
            m.data = m.data - 8
            m.data[m.data == 0] = 1
        m.eliminate_zeros()
        want = csgraph.shortest_path(m, method="J" if neg else "D", directed=True)
        for name, obj, kw in _inputs(m):
            g = mgapsp.as_graph(obj, directed=True, **kw)
            if name in ("frame", "tuple"):      # labels: only the vertices with edges
                order = np.asarray(g.labels, dtype=np.int64)
                ref = want[np.ix_(order, order)]
            else:
                ref = want
            got = np.asarray(mgapsp.apsp(g, backend="cpu", dtype="float64"))
            assert np.allclose(got, ref, rtol=0, atol=1e-9, equal_nan=False), (seed, name)
            assert np.array_equal(np.isinf(got), np.isinf(ref)), (seed, name)
