"""Shared test helpers: the SciPy oracle and graph generators."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from mgapsp.graph import Graph


def scipy_distances(graph: Graph, sources=None) -> np.ndarray:
    """The oracle: SciPy's shortest_path on the canonical CSR (float64)."""
    method = "J" if graph.has_negative_weights else "D"
    return csgraph.shortest_path(graph.to_scipy(), method=method, directed=True,
                                 indices=sources)


def assert_distances_equal(got, ref, dtype="float64"):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape
    assert not np.isnan(got).any(), "unwritten (NaN) entries"
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-10
    scale = max(1.0, float(np.abs(ref[fin]).max(initial=0.0)))
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=rtol * scale)


def assert_predecessors(graph: Graph, sources, dist, pred, *, rtol: float = 1e-12) -> None:
    """``pred`` (int32, -1 = none) closes shortest paths of ``dist`` from ``sources``:
    none exactly at each source and where unreachable, every other one an edge of the
    graph that is tight (``dist[p] + w(p, v) == dist[v]``), and every walk back along
    them reaches its source."""
    sources = np.asarray(sources, dtype=np.int64)
    dist = np.asarray(dist, dtype=np.float64)
    B, n = dist.shape
    assert pred.dtype == np.int32 and pred.shape == dist.shape
    assert not (pred == -2).any(), "a predecessor element was never written (poison)"
    assert ((pred >= -1) & (pred < n)).all()
    rows = np.arange(B)
    assert (pred[rows, sources] == -1).all(), "a source has a predecessor"
    reach = np.isfinite(dist)
    assert (pred[~reach] == -1).all(), "an unreachable vertex has a predecessor"
    inner = reach.copy()
    inner[rows, sources] = False
    assert (pred[inner] >= 0).all(), "a reachable vertex lacks a predecessor"
    bb, vv = np.nonzero(inner)
    pp = pred[bb, vv].astype(np.int64)
    w = graph.edge_weights(pp, vv)
    assert not np.isnan(w).any(), "a predecessor edge does not exist"
    scale = max(1.0, float(np.abs(dist[reach]).max(initial=0.0)))
    np.testing.assert_allclose(dist[bb, pp] + w, dist[bb, vv], rtol=0, atol=rtol * scale)
    walk = np.where(pred < 0, np.arange(n)[None, :], pred).astype(np.int64)
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):     # pointer doubling
        walk = np.take_along_axis(walk, walk, axis=1)
    home = np.broadcast_to(sources[:, None], (B, n))
    assert (walk[reach] == home[reach]).all(), "a predecessor walk misses its source"


def reweighted(graph: Graph, seed=0, spread=50.0) -> Graph:
    """Negative weights without negative cycles: w'(u,v) = w + p(u) - p(v)."""
    p = np.random.default_rng(seed).uniform(0, spread, graph.n)
    w = graph.weights + p[graph.sources_of_edges] - p[graph.indices]
    g = Graph(graph.indptr, graph.indices, w, directed=True, vertex_ids=graph.vertex_ids,
              name=graph.name + "+potentials")
    assert g.has_negative_weights
    return g


def random_graph(rng, n, m, *, low=0, high=10, zero_fraction=0.1, negative=False) -> Graph:
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    w = rng.integers(low, high + 1, m).astype(float)
    w[rng.random(m) < zero_fraction] = 0.0
    if negative:
        p = rng.uniform(0, 20, n)
        w = w + p[src] - p[dst]
    return Graph.from_edges(src, dst, w, n=n)


def cycle_weight(graph: Graph, cycle_ids) -> float:
    idx = graph.index_of(cycle_ids)
    w = graph.edge_weights(idx, np.roll(idx, -1))
    assert not np.isnan(w).any(), "the reported cycle uses an edge that does not exist"
    return float(w.sum())


def tricky_graph(seed: int, n: int, m: int, *, negative: bool = False, isolated: int = 3,
                 exact: bool = True, zero_fraction: float = 0.1, id_base: int = 0) -> Graph:
    """Random digraph with zero-weight edges, a zero-weight cycle, self-loops, sinks and
    ``isolated`` isolated vertices.  ``exact``: weights in quarters, whose sums are exact
    in float32 too.  ``negative``: reweighted by integer potentials (w + p[u] - p[v]),
    which keeps every cycle's weight, so no negative cycle (and the zero-weight cycle
    stays exactly 0 in float32)."""
    rng = np.random.default_rng(seed)
    live = n - isolated
    src = rng.integers(0, live, m)
    dst = rng.integers(0, live, m)
    w = rng.integers(1, 40, m) / 4.0 if exact else rng.uniform(0.5, 10.0, m)
    w[rng.random(m) < zero_fraction] = 0.0
    cyc = rng.choice(live, size=min(6, live), replace=False)
    loops = rng.choice(live, size=min(4, live), replace=False)
    src = np.concatenate([src, cyc, loops])
    dst = np.concatenate([dst, np.roll(cyc, -1), loops])
    w = np.concatenate([w, np.zeros(len(cyc)), rng.integers(0, 5, len(loops)).astype(float)])
    if negative:
        p = rng.integers(0, 40, n).astype(float)
        w = w + p[src] - p[dst]
    return Graph.from_edges(src + id_base, dst + id_base, w, n=n, id_base=id_base,
                            name=f"random-{seed}")


def planar_graph(rng, n, *, one_way=0.2, integer=True, zero_fraction=0.05,
                 components=1) -> Graph:
    """A road-like graph: the Delaunay triangulation of random points, edge lengths
    as weights (integers, or floats), each street two-way with a weight per direction
    except ``one_way`` of them; ``components`` separate triangulations."""
    from scipy.spatial import Delaunay

    src, dst, w = [], [], []
    base = 0
    for part in np.array_split(np.arange(n), components):
        pts = rng.random((len(part), 2))
        tri = Delaunay(pts).simplices
        e = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
        e = np.unique(np.sort(e, axis=1), axis=0)
        length = np.linalg.norm(pts[e[:, 0]] - pts[e[:, 1]], axis=1) * 1000
        back = length * rng.uniform(1.0, 1.5, len(e))
        if integer:
            length, back = np.ceil(length), np.ceil(back)
        length[rng.random(len(e)) < zero_fraction] = 0
        two_way = rng.random(len(e)) >= one_way
        src += [e[:, 0] + base, e[two_way, 1] + base]
        dst += [e[:, 1] + base, e[two_way, 0] + base]
        w += [length, back[two_way]]
        base += len(part)
    return Graph.from_edges(np.concatenate(src), np.concatenate(dst), np.concatenate(w),
                            n=n, directed=True, name=f"delaunay-{n}")
