"""The benchmarks' own tools: seeded generators whose files the readers take, and
Graph500's SSSP check, which must accept SciPy's rows and refuse wrong ones."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

import mgapsp

from bench import generators, sssp_check


@pytest.mark.parametrize("kind, options", [
    ("rmat", dict(scale=10, edge_factor=8)),
    ("grid", dict(side=30)),
    ("delaunay", dict(points=500)),
])
def test_generators_are_seeded_and_readable(tmp_path, kind, options):
    g = generators.make(kind, seed=3, **options)
    again = generators.make(kind, seed=3, **options)
    assert np.array_equal(g.tail, again.tail) and np.array_equal(g.weight, again.weight)
    assert not np.array_equal(generators.make(kind, seed=4, **options).weight[:50],
                              g.weight[:50])
    assert (g.weight >= 1).all() and (g.tail != g.head).all()
    path = generators.write_dimacs(g, tmp_path / f"{kind}.gr")
    read = mgapsp.read_graph(path)
    assert (read.n, read.m) == (g.n, g.m)
    np.testing.assert_array_equal(mgapsp.apsp(read, sources=[1, 5], backend="cpu"),
                                  dijkstra(g.csr(), indices=[0, 4]))
    if g.coords is not None:
        assert len(path.with_suffix(".co").read_text().splitlines()) == g.n + 1


def test_rmat_has_graph500s_skew():
    g = generators.rmat(14, 8, seed=1)
    degree = np.bincount(g.tail, minlength=g.n)
    assert g.m > 0.9 * 8 * 2**14              # few loops and repeats dropped
    assert degree.max() > 50 * degree.mean()  # hubs
    assert (degree == 0).sum() > 0.2 * g.n    # and many ids without an arc


def test_the_check_accepts_true_rows_and_refuses_wrong_ones():
    g = generators.grid(20, seed=2)
    csr = g.csr()
    rows = dijkstra(csr, indices=[0, 7, 55])
    assert sssp_check.check_rows(csr, [0, 7, 55], rows) == []
    too_long = rows[0].copy()
    too_long[100] += 1                        # an arc into it now shortens it
    assert "shortens" in sssp_check.check_row(csr, 0, too_long)
    too_short = rows[0].copy()
    far = int(np.argmax(np.where(np.isfinite(too_short), too_short, -1)))
    too_short[far] -= 1                       # no path is that short
    assert "no path" in sssp_check.check_row(csr, 0, too_short)
    lost = rows[0].copy()
    lost[100] = np.inf
    assert sssp_check.check_row(csr, 0, lost) is not None
    moved = rows[0].copy()
    moved[0] = 3
    assert "not 0" in sssp_check.check_row(csr, 0, moved)


def test_a_road_region_is_the_first_vertices_a_search_reaches(data_dir):
    """``bench.road_allpairs.region``: ``size`` vertices, one piece of the roads (a
    breadth-first search from any of them reaches every other), the arcs among them
    with their weights."""
    from scipy.sparse import csgraph

    from bench.road_allpairs import region
    from mgapsp import read_graph

    roads = read_graph(data_dir / "rome99.gr")
    part = region(roads, 1000, seed=2)
    assert part.n == 1000 and 0 < part.m < roads.m
    A = part.to_scipy()
    assert csgraph.connected_components(A + A.T, directed=False)[0] == 1
    assert set(np.unique(part.weights)) <= set(np.unique(roads.weights))
    assert np.array_equal(region(roads, 1000, seed=2).to_scipy().toarray(), A.toarray())
