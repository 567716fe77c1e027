"""Contraction hierarchies for PHAST: built once per graph, swept by every batch.

A hierarchy is a vertex order (ranks) and the chordal completion of the graph's
undirected shape in that order: eliminating the vertices by increasing rank, each
one's higher-ranked neighbours become a clique.  Every arc of that chordal graph
carries two weights, one per direction, made *triangle-complete* by the customization
(for every lower vertex ``x`` adjacent to ``u`` and ``v``: ``W[u->v] <= W[u->x] +
W[x->v]``).  Then every shortest path has an equally short up-down path, and the
distances from ``s`` to all vertices are:

1. *up*: walk the elimination tree from ``s`` to its root (increasing rank) relaxing
   each visited vertex's upward arcs (all upward neighbours are on that walk);
2. *down*: visit every vertex by decreasing rank (level by level: a vertex's upward
   neighbours are its elimination-tree ancestors, so a level of equal depth is
   independent) and take ``d(v) = min(d(v), d(u) + W[u->v])`` over its upward arcs.

The down sweep is the same for every source, so a batch of sources sweeps together:
the batch is the contiguous dimension (PHAST, Delling et al. 2011).

The order is the minimum-degree order SuperLU computes for a symmetric factorization
of the graph's Laplacian (``permc_spec="MMD_AT_PLUS_A"``); the factor ``L``'s pattern
is the chordal completion itself.  Both come from compiled code, so a road network of
a few hundred thousand vertices is ordered, completed and customized in seconds.
On graphs without small separators (social networks, random graphs) the completion
fills in towards a dense matrix: PHAST is for road-like graphs.

Predecessors: every arc also keeps, for each direction, the vertex just before its
head on the graph path it stands for (a shortcut's path unpacked), recorded when the
customization sets its weight.  A sweep that remembers which arc last lowered each
distance then knows each vertex's predecessor on a shortest path.  With a zero-weight
edge, two vertices at the same distance could each name the other, so predecessors
need every edge weight positive.

Weights must be non-negative (a hierarchy of a graph with negative weights would need
its potentials first: use ``johnson``).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import config
from .errors import UnsupportedError
from .graph import Graph

__all__ = ["Hierarchy", "build", "cached", "check_predecessors", "distances",
           "for_graph", "gives_predecessors", "known", "load", "save"]

#: file format version of a saved hierarchy (2: the arcs' last vertices)
FORMAT = 2
#: elements (arcs x sources) one step of the CPU sweep works on at a time
_CPU_PIECE = 2**22
#: most arcs, per edge or vertex of the graph, of a hierarchy that ``auto`` uses (road
#: networks have one to three; a graph that fills in has tens)
AUTO_ARCS = 8
#: the shape ``auto`` takes for a road network worth building a hierarchy for: the
#: road networks measured have a mean (undirected) degree of 2.8-3.2, at most 10
#: neighbours, and a hop eccentricity of 0.85-1.3 times the square root of their
#: size; social graphs (Gnutella, co-authorships: eccentricity <= 0.26 sqrt(n),
#: hubs of 80-500) and Delaunay meshes (degree 6, whose hierarchies cost seconds and
#: sweep only 4x faster than Bellman-Ford) fail one of them
ROAD_MEAN_DEGREE = 3.5
ROAD_MAX_DEGREE = 16
ROAD_HOPS = 0.7
#: hierarchies this process keeps in memory (by graph fingerprint)
_KEEP = 2
_MEMO: "OrderedDict[str, Hierarchy]" = OrderedDict()
_MEMO_LOCK = threading.Lock()


@dataclass(eq=False)
class Hierarchy:
    """A customized contraction hierarchy, in rank space (rank 0 is eliminated first).

    Attributes
    ----------
    rank : int32 (n,)          rank of each vertex
    order : int32 (n,)         vertex of each rank
    up_ptr : int64 (n + 1,)    arcs of rank r: ``up_ptr[r] .. up_ptr[r + 1]``
    up_head : int32 (arcs,)    the higher rank of each arc, increasing within a row
    w_up : float64 (arcs,)     ``W[r -> head]`` (inf where no path of lower vertices)
    w_down : float64 (arcs,)   ``W[head -> r]``
    last_up : int32 (arcs,)    the vertex just before ``head`` on the path ``r -> head``
                               stands for (-1 where there is none)
    last_down : int32 (arcs,)  the vertex just before ``r`` on the path ``head -> r``
    parent : int32 (n,)        elimination-tree parent (the lowest upward neighbour), -1 at a root
    depth : int32 (n,)         distance from the root in the elimination tree
    fingerprint : str          of the graph it was built from
    """

    rank: np.ndarray
    order: np.ndarray
    up_ptr: np.ndarray
    up_head: np.ndarray
    w_up: np.ndarray
    w_down: np.ndarray
    last_up: np.ndarray
    last_down: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    fingerprint: str

    @property
    def n(self) -> int:
        return len(self.rank)

    @property
    def arcs(self) -> int:
        return len(self.up_head)

    @property
    def height(self) -> int:
        """Levels of the down sweep (the elimination tree's depth plus one)."""
        return int(self.depth.max(initial=-1)) + 1

    def levels(self, targets=None) -> tuple[np.ndarray, np.ndarray]:
        """Ranks grouped by depth, root level first: ``(level_ptr, level_ranks)``.

        With ``targets`` (vertex indices), only the ranks their distances depend on
        (RPHAST's restriction): every upward arc leads to an elimination-tree ancestor,
        so these are the targets' paths to their roots.
        """
        by_depth = np.argsort(self.depth, kind="stable").astype(np.int32)
        if targets is not None:
            by_depth = by_depth[self.above(targets)[by_depth]]
        counts = np.bincount(self.depth[by_depth], minlength=self.height)
        ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        return ptr, by_depth

    def above(self, targets) -> np.ndarray:
        """Mask over ranks: the ``targets``' ranks and their elimination-tree
        ancestors."""
        mark = np.zeros(self.n, dtype=bool)
        x = np.unique(self.rank[np.asarray(targets, dtype=np.int64)])
        while len(x):
            x = x[~mark[x]]
            mark[x] = True
            x = np.unique(self.parent[x])
            x = x[x >= 0]
        return mark

    def nbytes(self) -> int:
        return sum(getattr(self, k).nbytes for k in _FIELDS)


# -- build ---------------------------------------------------------------------------
def _check_weights(graph: Graph) -> None:
    if graph.has_negative_weights:
        raise UnsupportedError(
            f"phast needs non-negative weights, but graph {graph.name!r} has weight "
            f"{graph.min_weight:g}; use johnson or bellman-ford")


def _zero_weight_edges(graph: Graph) -> np.ndarray:
    """Mask of the edges of weight zero, self-loops aside (no path uses them)."""
    return (graph.weights == 0) & (graph.sources_of_edges != graph.indices)


def gives_predecessors(graph: Graph) -> bool:
    """Whether phast can give ``graph``'s predecessors (see :func:`check_predecessors`)."""
    return not graph.has_negative_weights and not _zero_weight_edges(graph).any()


def check_predecessors(graph: Graph) -> None:
    """Raise unless phast can give ``graph``'s predecessors: every edge weight
    (self-loops aside) positive."""
    _check_weights(graph)
    zero = _zero_weight_edges(graph)
    if zero.any():
        e = int(np.flatnonzero(zero)[0])
        u, v = graph.labels[graph.sources_of_edges[e]], graph.labels[graph.indices[e]]
        raise UnsupportedError(
            f"phast gives predecessors only where every edge weight is positive, but "
            f"graph {graph.name!r} has zero-weight edges ({int(zero.sum()):,}; the first "
            f"{u} -> {v}); use bellman-ford or dijkstra for predecessors")


def _order_and_completion(graph: Graph):
    """Ranks and the chordal completion (CSC of the strict lower factor, in rank space)."""
    n = graph.n
    src = graph.sources_of_edges
    dst = graph.indices.astype(np.int64)
    keep = src != dst
    A = sp.csr_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n))
    A = ((A + A.T) > 0).astype(np.float64)
    degree = np.asarray(A.sum(axis=1)).ravel()
    # a symmetric, strictly diagonally dominant matrix of the graph's shape: factorized
    # with diagonal pivots, its factor's pattern is the elimination of the graph
    M = (sp.diags(degree + 1.0) - A).tocsc()
    from scipy.sparse.linalg import splu

    lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options={"SymmetricMode": True})
    if not np.array_equal(lu.perm_r, lu.perm_c):
        raise RuntimeError("SuperLU left the diagonal: no symmetric elimination order")
    rank = lu.perm_c.astype(np.int32)
    L = sp.csc_matrix(lu.L)
    L.sort_indices()
    del lu
    return rank, L


def _lower_arcs(L: sp.csc_matrix, n: int):
    """Strictly-below-diagonal pattern of ``L`` as (up_ptr, up_head)."""
    rows = L.indices.astype(np.int64)
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(L.indptr))
    below = rows > cols
    counts = np.bincount(cols[below], minlength=n)
    up_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=up_ptr[1:])
    return up_ptr, rows[below].astype(np.int32)


def _close(up_ptr: np.ndarray, up_head: np.ndarray, n: int):
    """The arcs made a perfect elimination: each rank's upward neighbours other than
    its parent are upward neighbours of its parent.  Returns the input when it already
    is one (the factor's pattern normally is), else the completed arcs."""
    first = up_ptr[:-1]
    has = np.diff(up_ptr) > 0
    parent = np.full(n, -1, dtype=np.int64)
    parent[has] = up_head[first[has]]
    tail = np.repeat(np.arange(n, dtype=np.int64), np.diff(up_ptr))
    keys = tail * n + up_head
    other = up_head.astype(np.int64) != parent[tail]
    need = parent[tail[other]] * n + up_head[other]
    pos = np.searchsorted(keys, need)
    pos[pos >= len(keys)] = 0
    if len(need) == 0 or bool((keys[pos] == need).all()):
        return up_ptr, up_head
    # rare: complete it the slow way (merge each rank's row into its parent's)
    rows = [set(up_head[up_ptr[r]:up_ptr[r + 1]].tolist()) for r in range(n)]
    for r in range(n):
        if rows[r]:
            p = min(rows[r])
            rows[p] |= rows[r]
            rows[p].discard(p)
    counts = np.fromiter((len(s) for s in rows), dtype=np.int64, count=n)
    up_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=up_ptr[1:])
    up_head = np.fromiter((v for s in rows for v in sorted(s)), dtype=np.int32,
                          count=int(up_ptr[-1]))
    return up_ptr, up_head


def _tree(up_ptr: np.ndarray, up_head: np.ndarray, n: int):
    """Elimination-tree parent, depth (root 0) and height (leaf 0) of every rank."""
    has = np.diff(up_ptr) > 0
    parent = np.full(n, -1, dtype=np.int32)
    parent[has] = up_head[up_ptr[:-1][has]]
    par = parent.tolist()
    depth = [0] * n
    for r in range(n - 1, -1, -1):          # a parent's rank is higher: done first
        p = par[r]
        if p >= 0:
            depth[r] = depth[p] + 1
    height = [0] * n
    for r in range(n):                      # children first
        p = par[r]
        if p >= 0 and height[r] + 1 > height[p]:
            height[p] = height[r] + 1
    return parent, np.asarray(depth, dtype=np.int32), np.asarray(height, dtype=np.int32)


def _arc_index(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    want = lo.astype(np.int64) * n + hi
    pos = np.searchsorted(keys, want)
    if len(want) and (pos.max() >= len(keys) or not bool((keys[pos] == want).all())):
        raise RuntimeError("hierarchy arcs are not a chordal completion")
    return pos


def _customize(graph: Graph, rank, up_ptr, up_head, height, n):
    """Arc weights: the graph's edges, then every lower triangle, bottom-up; and each
    direction's last vertex (in rank space) before its head."""
    tail = np.repeat(np.arange(n, dtype=np.int64), np.diff(up_ptr))
    keys = tail * n + up_head
    w_up = np.full(len(up_head), np.inf)
    w_down = np.full(len(up_head), np.inf)
    last_up = np.full(len(up_head), -1, dtype=np.int32)
    last_down = np.full(len(up_head), -1, dtype=np.int32)
    src = rank[graph.sources_of_edges].astype(np.int64)
    dst = rank[graph.indices].astype(np.int64)
    w = graph.weights
    keep = src != dst                       # self-loops (non-negative) never help
    src, dst, w = src[keep], dst[keep], w[keep]
    upward = src < dst
    at = _arc_index(keys, src[upward], dst[upward], n)
    np.minimum.at(w_up, at, w[upward])
    last_up[at] = src[upward]               # an edge's own tail
    at = _arc_index(keys, dst[~upward], src[~upward], n)
    np.minimum.at(w_down, at, w[~upward])
    last_down[at] = src[~upward]
    # triangles (x, u, v) with x lowest: W[u->v] <= W[u->x] + W[x->v].  An arc's
    # lower triangles have their x below it in the elimination tree, so taking the
    # x by height (leaves first) finishes every arc before it is used.
    counts = np.diff(up_ptr)
    by_height = np.argsort(height, kind="stable")
    bounds = np.searchsorted(height[by_height], np.arange(int(height.max(initial=0)) + 2))
    for h in range(len(bounds) - 1):
        xs = by_height[bounds[h]:bounds[h + 1]]
        k = counts[xs]
        xs, k = xs[k > 1], k[k > 1]
        if len(xs) == 0:
            continue
        # every ordered pair (i, j) of arcs of the same x
        starts = up_ptr[xs]
        arc_i = np.repeat(np.repeat(starts, k) + _ranges(k), np.repeat(k, k))
        first_j = np.repeat(starts, k * k)
        arc_j = first_j + _ranges(np.repeat(k, k))
        pair = arc_i != arc_j
        arc_i, arc_j = arc_i[pair], arc_j[pair]
        u, v = up_head[arc_i], up_head[arc_j]
        cand = w_down[arc_i] + w_up[arc_j]   # W[u->x] + W[x->v]
        fin = np.isfinite(cand)
        u, v, cand, via = u[fin], v[fin], cand[fin], last_up[arc_j[fin]]
        # the path u -> x -> v ends as x -> v does
        up = u < v
        _lower(w_up, last_up, _arc_index(keys, u[up], v[up], n), cand[up], via[up])
        _lower(w_down, last_down, _arc_index(keys, v[~up], u[~up], n), cand[~up],
               via[~up])
    return w_up, w_down, last_up, last_down


def _lower(weight, last, at, cand, via) -> None:
    """``weight[at] = min(weight[at], cand)``; where a candidate lowers it, ``last``
    takes that candidate's ``via`` (any one of equal candidates)."""
    before = weight[at]
    np.minimum.at(weight, at, cand)
    won = (cand < before) & (cand == weight[at])
    last[at[won]] = via[won]


def _ranges(k: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(k_i)`` for each ``k_i``."""
    total = int(k.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(k) - k, k)
    return np.arange(total, dtype=np.int64) - starts


def arcs_limit(graph: Graph) -> int:
    """Most arcs ``graph``'s hierarchy may have (``mgapsp.phast.fill-limit``)."""
    return config.get("phast.fill-limit") * (graph.m + graph.n)


def build(graph: Graph) -> Hierarchy:
    """The customized hierarchy of ``graph`` (non-negative weights)."""
    _check_weights(graph)
    n = graph.n
    rank, L = _order_and_completion(graph)
    if L.nnz - n > arcs_limit(graph):
        raise UnsupportedError(
            f"graph {graph.name!r} is not road-like: its contraction hierarchy would "
            f"have {L.nnz - n:,} arcs for {graph.m:,} edges; use bellman-ford or dijkstra")
    up_ptr, up_head = _lower_arcs(L, n)
    del L
    up_ptr, up_head = _close(up_ptr, up_head, n)
    parent, depth, height = _tree(up_ptr, up_head, n)
    w_up, w_down, last_up, last_down = _customize(graph, rank, up_ptr, up_head, height, n)
    order = np.empty(n, dtype=np.int32)
    order[rank] = np.arange(n, dtype=np.int32)
    # last vertices as the graph's vertex indices, as predecessors are given
    last_up = np.where(last_up >= 0, order[np.maximum(last_up, 0)], -1).astype(np.int32)
    last_down = np.where(last_down >= 0, order[np.maximum(last_down, 0)],
                         -1).astype(np.int32)
    return Hierarchy(rank=rank, order=order, up_ptr=up_ptr, up_head=up_head, w_up=w_up,
                     w_down=w_down, last_up=last_up, last_down=last_down, parent=parent,
                     depth=depth, fingerprint=graph.fingerprint)


# -- cache on disk ---------------------------------------------------------------------
_FIELDS = ("rank", "order", "up_ptr", "up_head", "w_up", "w_down", "last_up", "last_down",
           "parent", "depth")


def save(h: Hierarchy, path) -> Path:
    """Write ``h`` to ``path`` (an ``.npz``), atomically (a temporary file renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hierarchy-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, format=np.int64(FORMAT), fingerprint=np.str_(h.fingerprint),
                     **{k: getattr(h, k) for k in _FIELDS})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(path, graph: Graph) -> Hierarchy | None:
    """The hierarchy saved at ``path`` for ``graph``, or None when there is none, it is
    of another graph or another format, or it cannot be read (it is then rebuilt)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if int(z["format"]) != FORMAT or str(z["fingerprint"]) != graph.fingerprint:
                return None
            h = Hierarchy(fingerprint=graph.fingerprint, **{k: z[k] for k in _FIELDS})
    except (OSError, ValueError, KeyError, EOFError):
        return None
    if h.n != graph.n or len(h.up_ptr) != graph.n + 1 or int(h.up_ptr[-1]) != h.arcs:
        return None
    return h


def cached(graph: Graph, directory=None) -> Hierarchy:
    """``graph``'s hierarchy: read from ``directory`` (keyed by the fingerprint) when
    it is there, else built (and saved there when a directory is given)."""
    if directory is None:
        return build(graph)
    path = Path(directory) / f"{graph.fingerprint}.npz"
    h = load(path, graph) if path.exists() else None
    if h is None:
        h = build(graph)
        save(h, path)
    return h


def _remember(key: str, h: Hierarchy) -> None:
    """Keep ``h`` as the newest of this process's hierarchies (``_MEMO_LOCK`` held)."""
    _MEMO[key] = h
    _MEMO.move_to_end(key)
    while len(_MEMO) > _KEEP:
        _MEMO.popitem(last=False)


def for_graph(graph: Graph, directory=None) -> Hierarchy:
    """This process's hierarchy of ``graph``: kept in memory after first use; read
    from ``directory`` when it is there, else built (and saved there).  Threads
    asking for the same graph at once build it once."""
    key = graph.fingerprint
    with _MEMO_LOCK:
        h = _MEMO.get(key)
        if h is None:
            _check_weights(graph)
            h = cached(graph, directory)
        _remember(key, h)
        return h


def known(graph: Graph, directory=None) -> bool:
    """Whether ``graph`` has a hierarchy already (in this process, or saved in
    ``directory``) that is worth sweeping: ``auto`` then picks phast, paying no build."""
    if graph.has_negative_weights:
        return False
    key = graph.fingerprint
    with _MEMO_LOCK:
        h = _MEMO.get(key)
    if h is None and directory is not None:
        path = Path(directory) / f"{key}.npz"
        h = load(path, graph) if path.exists() else None
        if h is not None:
            with _MEMO_LOCK:
                _remember(key, h)
    return h is not None and h.arcs <= AUTO_ARCS * (graph.m + graph.n)


def road_like(graph: Graph) -> bool:
    """Whether ``graph`` has the shape of a road network (:data:`ROAD_MEAN_DEGREE`,
    :data:`ROAD_MAX_DEGREE`, :data:`ROAD_HOPS`): sparse, no hubs, long in hops.  Its
    hierarchy then stays small.  Linear time: two breadth-first sweeps of the largest
    component, the second from the first's farthest vertex."""
    n = graph.n
    if n == 0 or graph.has_negative_weights:
        return False
    src = graph.sources_of_edges
    keep = src != graph.indices
    A = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8),
                       (src[keep], graph.indices[keep])), shape=(n, n))
    A = (A + A.T).tocsr()
    degree = np.diff(A.indptr)
    if degree.mean() > ROAD_MEAN_DEGREE or degree.max(initial=0) > ROAD_MAX_DEGREE:
        return False
    from scipy.sparse import csgraph

    _, label = csgraph.connected_components(A, directed=False)
    sizes = np.bincount(label)
    big = int(sizes.argmax())
    far = int(np.flatnonzero(label == big)[0])
    hops = 0.0
    for _ in range(2):
        d = csgraph.shortest_path(A, directed=False, unweighted=True, indices=far)
        d[np.isinf(d)] = -1
        far, hops = int(d.argmax()), float(d.max())
    return bool(hops >= ROAD_HOPS * np.sqrt(sizes[big]))


# -- CPU query -------------------------------------------------------------------------
def distances(h: Hierarchy, sources, dtype=np.float64, targets=None,
              predecessors: bool = False):
    """Distances ``(len(sources), n)`` from ``sources`` (vertex indices), by the up
    walks and the down sweep on the CPU; ``inf`` where unreachable.  With ``targets``
    (vertex indices): ``(len(sources), len(targets))``, the sweep restricted to what
    they need (RPHAST).  With ``predecessors`` (every target; see
    :func:`check_predecessors`): ``(distances, predecessors)``, the latter int32 with
    -1 at each source and where unreachable."""
    dtype = np.dtype(dtype)
    src = np.asarray(sources, dtype=np.int64).ravel()
    n, B = h.n, len(src)
    if predecessors and targets is not None:
        raise ValueError("predecessors need every target")
    out_rank = h.rank if targets is None else h.rank[np.asarray(targets, dtype=np.int64)]
    D = np.full((n, B), np.inf, dtype=dtype)        # rank-major: a row per rank
    P = np.full((n, B), -1, dtype=np.int32) if predecessors else None
    if B == 0:
        empty = np.empty((0, len(out_rank)), dtype=dtype)
        return (empty, np.empty((0, n), dtype=np.int32)) if predecessors else empty
    cols = np.arange(B)
    cur = h.rank[src].astype(np.int64)
    D[cur, cols] = 0
    w_up = h.w_up.astype(dtype)
    w_down = h.w_down.astype(dtype)
    counts = np.diff(h.up_ptr)
    # up: every source walks its elimination-tree path, all sources in step (a step's
    # (rank, column) pairs are distinct: one rank per column, its arcs' heads distinct)
    alive = np.ones(B, dtype=bool)
    while alive.any():
        x, b = cur[alive], cols[alive]
        k = counts[x]
        arcs = np.repeat(h.up_ptr[x], k) + _ranges(k)
        head, bb = h.up_head[arcs], np.repeat(b, k)
        cand = np.repeat(D[x, b], k) + w_up[arcs]
        won = cand < D[head, bb]
        D[head[won], bb[won]] = cand[won]
        if predecessors:
            P[head[won], bb[won]] = h.last_up[arcs[won]]
        cur[alive] = h.parent[x]
        alive &= cur >= 0
    # down: levels from the roots; each level's arcs in pieces of bounded size
    ptr, ranks = h.levels(targets)
    for lv in range(1, len(ptr) - 1):
        xs = ranks[ptr[lv]:ptr[lv + 1]]
        xs = xs[counts[xs] > 0]
        if not len(xs):
            continue
        step = max(1, _CPU_PIECE // max(1, B * int(counts[xs].max(initial=1))))
        for i in range(0, len(xs), step):
            part = xs[i:i + step]
            k = counts[part]
            arcs = np.repeat(h.up_ptr[part], k) + _ranges(k)
            first = np.cumsum(k) - k
            cand = D[h.up_head[arcs]] + w_down[arcs][:, None]
            best = np.minimum.reduceat(cand, first, axis=0)
            won = best < D[part]
            D[part] = np.where(won, best, D[part])
            if predecessors:
                # the first arc of each rank's segment that gives its best
                row = np.where(cand == np.repeat(best, k, axis=0),
                               np.arange(len(arcs))[:, None], len(arcs))
                pick = np.minimum.reduceat(row, first, axis=0)
                via = h.last_down[arcs[np.minimum(pick, len(arcs) - 1)]]
                P[part] = np.where(won, via, P[part])
    dist = np.ascontiguousarray(D[out_rank].T)
    return (dist, np.ascontiguousarray(P[out_rank].T)) if predecessors else dist


def describe(h: Hierarchy) -> dict:
    """Its size, for job records and benchmarks."""
    return {"arcs": h.arcs, "levels": h.height, "bytes": h.nbytes(),
            "max_up_degree": int(np.diff(h.up_ptr).max(initial=0))}
