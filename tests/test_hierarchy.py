"""Contraction hierarchies (mgapsp.hierarchy) and the CPU PHAST query, against SciPy."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import (assert_distances_equal, assert_predecessors, planar_graph,
                     scipy_distances)
from mgapsp import hierarchy
from mgapsp.backends import phast as phast_room
from mgapsp.errors import MgapspError, UnsupportedError
from mgapsp.graph import Graph
from mgapsp.readers import read_graph

ROADS = [("rome99.gr", None), ("Austin_net.tntp", 300), ("SiouxFalls_net.tntp", None),
         ("Anaheim_net.tntp", None), ("ChicagoSketch_net.tntp", 200)]


def spread(n, count):
    return np.unique(np.linspace(0, n - 1, min(n, count)).astype(np.int64))


def assert_is_chordal_completion(h: hierarchy.Hierarchy, graph: Graph) -> None:
    """Each rank's upward neighbours other than its parent are its parent's too (a
    perfect elimination order), the graph's edges are arcs, parent and depth agree."""
    n = h.n
    tail = np.repeat(np.arange(n), np.diff(h.up_ptr))
    assert (h.up_head > tail).all()
    keys = tail.astype(np.int64) * n + h.up_head
    assert (np.diff(keys) > 0).all(), "arcs not sorted and unique"
    has = np.diff(h.up_ptr) > 0
    assert (h.parent[has] == h.up_head[h.up_ptr[:-1][has]]).all()
    assert (h.parent[~has] == -1).all()
    other = h.up_head != h.parent[tail]
    need = h.parent[tail[other]].astype(np.int64) * n + h.up_head[other]
    assert np.isin(need, keys).all(), "an elimination left a non-clique"
    a, b = h.rank[graph.sources_of_edges], h.rank[graph.indices]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    loop = lo == hi
    assert np.isin(lo[~loop].astype(np.int64) * n + hi[~loop], keys).all()
    child = np.flatnonzero(h.parent >= 0)
    assert (h.depth[child] == h.depth[h.parent[child]] + 1).all()
    assert (h.depth[h.parent < 0] == 0).all()
    assert (np.sort(h.order[h.rank]) == np.arange(n)).all()


@pytest.mark.slow
@pytest.mark.parametrize("name,count", ROADS, ids=[r[0] for r in ROADS])
def test_road_networks_match_scipy(data_dir, name, count):
    graph = read_graph(data_dir / name)
    h = hierarchy.build(graph)
    assert_is_chordal_completion(h, graph)
    src = np.arange(graph.n) if count is None else spread(graph.n, count)
    assert_distances_equal(phast_room.sweep(h, src), scipy_distances(graph, src))


@pytest.mark.slow
def test_ny_road_network_sample(data_dir):
    graph = read_graph(data_dir / "NY.pace.gr.gz")
    h = hierarchy.build(graph)
    assert h.arcs < 8 * graph.m and h.height < 2000, hierarchy.describe(h)
    src = spread(graph.n, 12)
    got = phast_room.sweep(h, src)
    np.testing.assert_array_equal(got, scipy_distances(graph, src))   # integer weights


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("integer", [True, False], ids=["int", "float"])
def test_random_planar_graphs(seed, integer):
    """Delaunay road-likes: one-way streets, a weight per direction, zero weights,
    several components; integer weights must come out exactly."""
    rng = np.random.default_rng(seed)
    graph = planar_graph(rng, int(rng.integers(50, 1500)), integer=integer,
                         components=1 + seed % 3)
    h = hierarchy.build(graph)
    assert_is_chordal_completion(h, graph)
    src = spread(graph.n, 64)
    got = phast_room.sweep(h, src)
    ref = scipy_distances(graph, src)
    if integer:
        np.testing.assert_array_equal(got, ref)
    else:
        assert_distances_equal(got, ref)
    got32 = phast_room.sweep(h, src, dtype=np.float32)
    assert got32.dtype == np.float32
    assert_distances_equal(got32, ref, dtype="float32")


def assert_closed_upward(h: hierarchy.Hierarchy, mark: np.ndarray) -> None:
    """Every upward arc of a marked rank leads to a marked rank (what its distance is
    made of in the sweep), and the parent of a marked rank is marked."""
    tail = np.repeat(np.arange(h.n), np.diff(h.up_ptr))
    assert mark[h.up_head[mark[tail]]].all()
    p = h.parent[mark]
    assert mark[p[p >= 0]].all()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rome99.gr", "Austin_net.tntp", "NY.pace.gr.gz"])
def test_restricted_sweep_matches_the_full_one(data_dir, name):
    """RPHAST: with targets, the sweep covers their paths to the root alone and gives
    their columns of the full sweep, in the targets' order (repeats allowed)."""
    graph = read_graph(data_dir / name)
    h = hierarchy.build(graph)
    rng = np.random.default_rng(5)
    src = rng.choice(graph.n, 16, replace=False)
    full = phast_room.sweep(h, src)
    for k in (1, 10, graph.n // 20):
        tgt = rng.choice(graph.n, k, replace=False)
        tgt = np.concatenate([tgt, tgt[:2]])                # repeats, any order
        mark = h.above(tgt)
        assert_closed_upward(h, mark)
        assert mark[h.rank[tgt]].all() and mark.sum() < graph.n
        ptr, ranks = h.levels(tgt)
        assert np.array_equal(np.sort(ranks), np.flatnonzero(mark))
        assert (np.diff(h.depth[ranks]) >= 0).all()         # root level first
        np.testing.assert_array_equal(phast_room.sweep(h, src, targets=tgt),
                                      full[:, tgt])
    every = phast_room.sweep(h, src[:3], targets=np.arange(graph.n))
    np.testing.assert_array_equal(every, full[:3])
    assert phast_room.sweep(h, src, targets=[]).shape == (16, 0)
    assert phast_room.sweep(h, [], targets=[0, 1]).shape == (0, 2)


@pytest.mark.slow
@pytest.mark.parametrize("name,count", ROADS, ids=[r[0] for r in ROADS])
def test_predecessors_on_road_networks(data_dir, name, count):
    graph = read_graph(data_dir / name)
    h = hierarchy.build(graph)
    src = np.arange(graph.n) if count is None else spread(graph.n, count)
    dist, pred = phast_room.sweep(h, src, predecessors=True)
    assert_distances_equal(dist, scipy_distances(graph, src))
    assert_predecessors(graph, src, dist, pred)


@pytest.mark.parametrize("seed", range(4))
def test_predecessors_on_random_planar_graphs(seed):
    """Shortcuts over shortcuts unpack to the graph's own edges, in every direction
    (one-way streets, a weight per direction, several components, float weights)."""
    rng = np.random.default_rng(300 + seed)
    graph = planar_graph(rng, int(rng.integers(200, 1500)), zero_fraction=0,
                         integer=seed % 2 == 0, components=1 + seed % 3)
    h = hierarchy.build(graph)
    src = np.concatenate([rng.choice(graph.n, 40, replace=False), [0, 0]])
    dist, pred = phast_room.sweep(h, src, predecessors=True)
    np.testing.assert_array_equal(dist, phast_room.sweep(h, src))
    assert_distances_equal(dist, scipy_distances(graph, src))
    assert_predecessors(graph, src, dist, pred)


def test_predecessors_need_positive_weights():
    zero = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 2], [1.0, 0.0, 2.0, 0.0], n=3)
    with pytest.raises(UnsupportedError, match="zero-weight edges .*1 -> 2"):
        hierarchy.check_predecessors(zero)
    loop = Graph.from_edges([0, 1, 1], [1, 2, 1], [1.0, 3.0, 0.0], n=3)
    hierarchy.check_predecessors(loop)        # a zero-weight self-loop is no path
    with pytest.raises(ValueError, match="every target"):
        phast_room.sweep(hierarchy.build(loop), [0], targets=[2], predecessors=True)


def test_small_and_degenerate_graphs():
    one = Graph.from_edges([0], [0], [2.0], n=1)
    assert phast_room.sweep(hierarchy.build(one), [0]).tolist() == [[0.0]]
    empty = Graph.from_edges([], [], [], n=5)
    d = phast_room.sweep(hierarchy.build(empty), [0, 3])
    assert d[0, 0] == 0 and d[1, 3] == 0 and np.isinf(d).sum() == 8
    # parallel edges keep their minimum, self-loops are ignored, zero weights count
    g = Graph.from_edges([0, 0, 1, 1, 2, 2], [1, 1, 1, 2, 0, 3], [5.0, 2.0, 1.0, 0.0, 4.0, 3.0], n=4)
    assert_distances_equal(phast_room.sweep(hierarchy.build(g), np.arange(4)),
                           scipy_distances(g, np.arange(4)))
    assert phast_room.sweep(hierarchy.build(g), []).shape == (0, 4)


def test_negative_weights_are_refused():
    g = Graph.from_edges([0, 1], [1, 2], [1.0, -1.0], n=3)
    with pytest.raises(UnsupportedError, match="phast needs non-negative weights.*johnson"):
        hierarchy.build(g)


def test_graphs_that_fill_in_are_refused():
    import dask.config

    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000),
                         rng.integers(1, 9, 3000).astype(float), n=300, name="random")
    hierarchy.build(g)                      # 300 vertices cannot fill in much
    with dask.config.set({"mgapsp.phast.fill-limit": 1}):
        with pytest.raises(UnsupportedError, match="'random' is not road-like"):
            hierarchy.build(g)


def test_a_build_without_the_memory_for_it_is_refused_before_it_starts(monkeypatch, data_dir):
    """The customization's memory is known once the factor is: a host without it gets
    one line naming what the build needs and what there is, not an out-of-memory
    kill midway (and ``auto`` runs without the hierarchy, as for one that fills in)."""
    from mgapsp import memory

    graph = read_graph(data_dir / "rome99.gr")
    monkeypatch.setattr(memory, "memory_limit", lambda: (2**20, "this machine has"))
    with pytest.raises(UnsupportedError, match=r"'rome99.*' \(1\d,\d{3} arcs\) needs about "
                       r"0\.0 GiB more memory to build, but this machine has 0\.0 GiB"):
        hierarchy.build(graph)


def test_closing_an_open_elimination():
    """A 4-cycle eliminated in order 0..3 needs the fill arc 1-3; _close adds it."""
    up_ptr = np.array([0, 2, 3, 4, 4])
    up_head = np.array([1, 3, 2, 3], dtype=np.int32)
    ptr, head = hierarchy.construct._close(up_ptr, up_head, 4)
    assert ptr.tolist() == [0, 2, 4, 5, 5] and head.tolist() == [1, 3, 2, 3, 3]
    same_ptr, same_head = hierarchy.construct._close(ptr, head, 4)
    assert same_ptr is ptr and same_head is head


@pytest.mark.parametrize("seed", range(20))
def test_closing_random_open_eliminations(seed):
    """Random upward arcs: the closed arcs hold every arc given, each rank's sorted,
    and are closed (closing them again changes nothing)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    rows = [np.sort(rng.choice(np.arange(r + 1, n), size=min(int(rng.integers(0, 5)),
                                                             n - r - 1), replace=False))
            for r in range(n)]
    up_ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    up_head = np.concatenate(rows).astype(np.int32)
    ptr, head = hierarchy.construct._close(up_ptr, up_head, n)
    for r in range(n):
        mine = head[ptr[r]:ptr[r + 1]]
        assert (np.diff(mine) > 0).all()
        assert set(rows[r].tolist()) <= set(mine.tolist())
    again_ptr, again_head = hierarchy.construct._close(ptr, head, n)
    assert again_ptr is ptr and again_head is head


def test_saved_hierarchies(tmp_path):
    rng = np.random.default_rng(9)
    graph = planar_graph(rng, 400)
    built = hierarchy.cached(graph, tmp_path)
    path = tmp_path / f"{graph.fingerprint}.npz"
    assert path.is_file() and not list(tmp_path.glob(".hierarchy-*"))
    again = hierarchy.load(path, graph)
    for f in hierarchy.model.FIELDS:
        np.testing.assert_array_equal(getattr(again, f), getattr(built, f))
    other = planar_graph(np.random.default_rng(10), 400)
    assert hierarchy.load(path, other) is None          # another graph's file
    with open(path, "wb") as f:     # a file of the format before predecessors
        np.savez(f, format=np.int64(1), fingerprint=np.str_(graph.fingerprint),
                 **{k: getattr(built, k) for k in hierarchy.model.FIELDS if "last" not in k})
    assert hierarchy.load(path, graph) is None
    path.write_bytes(b"not a hierarchy")
    assert hierarchy.load(path, graph) is None
    rebuilt = hierarchy.cached(graph, tmp_path)          # a bad file is rebuilt
    np.testing.assert_array_equal(rebuilt.w_up, built.w_up)
    assert hierarchy.load(path, graph) is not None


def test_customization_does_not_depend_on_which_levels_run_in_parallel(monkeypatch,
                                                                         data_dir):
    """Every level shared out among the cores, or every level on one: the same weights
    and paths to the bit (each arc is written by one thread, after the arcs it reads)."""
    from mgapsp.hierarchy import construct, customize

    graph = read_graph(data_dir / "rome99.gr")
    built = {}
    for name, work in (("parallel", 0), ("serial", 1 << 62)):
        monkeypatch.setattr(customize, "PARALLEL_WORK", work)
        built[name] = construct.build(graph)
    a, b = built["parallel"], built["serial"]
    for field in ("w_up", "w_down", "last_up", "last_down"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def _grid(side: int, seed: int = 3) -> Graph:
    """A square grid with a tenth of its streets closed, weights 10..999."""
    v = np.arange(side * side).reshape(side, side)
    src = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    rng = np.random.default_rng(seed)
    keep = rng.random(len(src)) > 0.1
    w = rng.integers(10, 1000, int(keep.sum())).astype(float)
    return Graph.from_edges(src[keep], dst[keep], w, n=side * side, directed=False)


@pytest.mark.parametrize("order", ["minimum-degree", "nested-dissection"])
@pytest.mark.parametrize("kind", ["grid", "mesh", "rome99"])
def test_either_order_gives_scipys_distances(order, kind, data_dir):
    """METIS's nested dissection and SuperLU's minimum degree each give a perfect
    elimination and SciPy's distances, on a grid, a mesh and a road network."""
    import dask

    pytest.importorskip("pymetis")
    graph = {"grid": lambda: _grid(50),
             "mesh": lambda: planar_graph(np.random.default_rng(4), 2500, integer=True),
             "rome99": lambda: read_graph(data_dir / "rome99.gr")}[kind]()
    with dask.config.set({"mgapsp.phast.order": order}):
        h = hierarchy.build(graph)
    assert_is_chordal_completion(h, graph)
    src = spread(graph.n, 48)
    np.testing.assert_array_equal(phast_room.sweep(h, src), scipy_distances(graph, src))


def test_auto_orders_grids_by_nested_dissection_and_roads_by_minimum_degree(data_dir):
    """``phast.order = auto``: nested dissection from a mean degree of 3.3 (grids,
    meshes), minimum degree below it (road networks); a bad value is one line."""
    import dask

    from mgapsp.hierarchy import construct

    pytest.importorskip("pymetis")

    def order_of(graph):
        ranks = []
        for order in ("auto", "minimum-degree", "nested-dissection"):
            with dask.config.set({"mgapsp.phast.order": order}):
                ranks.append(construct._order_and_completion(graph)[0])
        auto, md, nd = ranks
        assert not np.array_equal(md, nd)
        return "nested-dissection" if np.array_equal(auto, nd) else (
            "minimum-degree" if np.array_equal(auto, md) else "neither")

    assert order_of(_grid(40)) == "nested-dissection"
    assert order_of(planar_graph(np.random.default_rng(5), 1500)) == "nested-dissection"
    assert order_of(read_graph(data_dir / "rome99.gr")) == "minimum-degree"
    with dask.config.set({"mgapsp.phast.order": "metis"}), \
            pytest.raises(MgapspError, match="phast.order must be one of"):
        hierarchy.build(_grid(10))


def _down_closure(h, ranks):
    """Dense down distances among ``ranks`` (root level first): column ``i`` is the
    least sum of downward arcs from each of them to ``ranks[i]``."""
    row = {int(r): i for i, r in enumerate(ranks)}
    M = np.full((len(ranks), len(ranks)), np.inf)
    for i, r in enumerate(ranks):
        M[i, i] = 0.0
        for a in range(h.up_ptr[r], h.up_ptr[r + 1]):
            M[:, i] = np.minimum(M[:, i], M[:, row[int(h.up_head[a])]] + h.w_down[a])
    return M, row


@pytest.mark.parametrize("kind", ["grid", "planar", "components"])
def test_top_chains_hold_each_ranks_ancestors_and_down_distances(kind):
    """The chains of the sweep's top levels: each rank's ancestor at every depth up
    to its own, and the down distance from it, as a dense closure over the top ranks
    gives them; only ancestors reach a rank going down."""
    rng = np.random.default_rng(21)
    graph = {"grid": lambda: _grid(30),
             "planar": lambda: planar_graph(rng, 1500),
             "components": lambda: planar_graph(rng, 1200, components=3)}[kind]()
    h = hierarchy.build(graph)
    levels = h.top(64, 2**22)
    ptr, _ = h.levels()
    assert 0 < levels <= h.height and (np.diff(ptr)[:levels] <= 64).all()
    if levels < h.height:                              # the next level would break one
        assert np.diff(ptr)[levels] > 64 or ptr[levels + 1] * (levels + 1) > 2**22
    assert h.top(64, ptr[3] * 3) == 3                  # the entries bound the levels
    ranks, chain_rank, chain_dist = h.chains(levels)
    assert chain_rank.shape == chain_dist.shape == (ptr[levels], levels)
    M, row = _down_closure(h, ranks)
    for i, r in enumerate(ranks):
        d = h.depth[r]
        assert chain_rank[i, d] == r and (chain_rank[i, d + 1:] == -1).all()
        x = r
        for up in range(d, -1, -1):                    # the ancestors, by depth
            assert chain_rank[i, up] == x
            x = h.parent[x]
        np.testing.assert_array_equal(chain_dist[i, :d + 1],
                                      M[[row[int(a)] for a in chain_rank[i, :d + 1]], i])
        others = np.setdiff1d(np.arange(len(ranks)), [row[int(a)] for a in chain_rank[i, :d + 1]])
        assert np.isinf(M[others, i]).all()


def test_the_gpu_sweep_splits_only_levels_too_small_for_the_gpu(data_dir):
    """A level of few ranks (the top separators) gets more lanes per column while
    the GPU would be short of warps and each lane keeps four arcs of its widest rank;
    a level as wide as the GPU, or of narrow ranks, keeps one."""
    from mgapsp.cuda import phast

    busy = 132 * phast.BUSY_WARPS_PER_SM
    assert phast.lanes(1, 1000, 4096, busy) == phast.MAX_LANES
    assert phast.lanes(1, 16, 4096, busy) == 4          # 4 arcs a lane, no fewer
    assert phast.lanes(1, 15, 4096, busy) == 2
    assert phast.lanes(1, 7, 4096, busy) == 1
    assert phast.lanes(4, 1000, 4096, busy) == 16       # 4 x 128 x 8 warps: still short
    assert phast.lanes(8, 1000, 4096, busy) == 8
    assert phast.lanes(33, 1000, 4096, busy) == 1
    assert phast.lanes(10_000, 1000, 64, busy) == 1
    graph = read_graph(data_dir / "rome99.gr")
    h = hierarchy.build(graph)
    ptr, ranks = h.levels()
    width = phast._widths(h, ptr, ranks)
    deg = np.diff(h.up_ptr)
    for lv in range(len(ptr) - 1):
        assert width[lv] == deg[ranks[ptr[lv]:ptr[lv + 1]]].max(initial=0)


def test_a_build_and_the_kernels_warm_up_import_numba_together():
    """A job's warm-up thread loads the CPU kernels while a hierarchy build loads its
    own compiled code: two threads importing Numba at once used to meet each other's
    half-made modules (ImportError ... partially initialized module).  A fresh
    process each, the two started together."""
    import subprocess
    import sys

    code = """
import threading
import numpy as np
bar, errors = threading.Barrier(2), []
def kernels():
    from mgapsp.cpu_sssp import _kernels
    _kernels()
def build():
    from mgapsp.hierarchy.construct import _tree
    _tree(np.array([0, 1, 1]), np.array([1], dtype=np.int32), 2)
def run(fn):
    bar.wait()
    try:
        fn()
    except Exception as exc:
        errors.append(repr(exc))
ts = [threading.Thread(target=run, args=(f,)) for f in (kernels, build)]
[t.start() for t in ts]
[t.join() for t in ts]
print(errors)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
