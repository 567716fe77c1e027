"""Building a graph's hierarchy: an elimination order (SuperLU's minimum degree, or
METIS's nested dissection for grids and meshes), the chordal completion from the
factor in that order, the elimination tree, and the triangle customization of the
weights."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import config
from ..errors import MgapspError, UnsupportedError
from ..graph import Graph
from ..jit import compiled
from .model import Hierarchy, check_weights

__all__ = ["build", "arcs_limit", "concat_ranges"]

#: mean (undirected) degree from which ``phast.order = auto`` takes nested dissection:
#: grids (3.4-3.6) and Delaunay meshes (6) get fewer arcs and half the levels from it, road
#: networks (2.8-3.2) fewer arcs from minimum degree (bench/NOTES.md)
NESTED_DISSECTION_DEGREE = 3.3
ORDERS = ("auto", "minimum-degree", "nested-dissection")
#: bytes per arc the build still allocates once the factor is known: the arcs, their
#: keys, weights and last vertices, and the customization's temporaries (measured at
#: their peak: 102 on a 512 x 512 grid; the 4M-vertex highway grid's whole build
#: peaked at 112 per arc, factorization included)
BUILD_BYTES_PER_ARC = 104


def _order_and_completion(graph: Graph):
    """Ranks and the chordal completion (CSC of the strict lower factor, in rank space)."""
    n = graph.n
    src = graph.sources_of_edges
    dst = graph.indices.astype(np.int64)
    keep = src != dst
    A = sp.csr_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n))
    A = ((A + A.T) > 0).astype(np.float64).tocsr()
    degree = np.asarray(A.sum(axis=1)).ravel()
    # a symmetric, strictly diagonally dominant matrix of the graph's shape: factorized
    # with diagonal pivots, its factor's pattern is the elimination of the graph
    M = (sp.diags(degree + 1.0) - A).tocsc()
    from scipy.sparse.linalg import splu

    order = _nested_dissection(A, degree)
    if order is not None:       # the matrix in that order, factorized as it stands
        perm, iperm = order
        M = M[perm][:, perm].tocsc()
    lu = splu(M, permc_spec="MMD_AT_PLUS_A" if order is None else "NATURAL",
              diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    if not np.array_equal(lu.perm_r, lu.perm_c):
        raise RuntimeError("SuperLU left the diagonal: no symmetric elimination order")
    rank = lu.perm_c if order is None else lu.perm_c[iperm]
    L = sp.csc_matrix(lu.L)
    L.sort_indices()
    del lu
    return rank.astype(np.int32), L


def _nested_dissection(A: sp.csr_matrix, degree: np.ndarray):
    """METIS's nested-dissection order of the pattern ``A`` as ``(perm, iperm)`` (the
    vertex at each position, each vertex's position), or None where minimum degree
    is the order (``phast.order``)."""
    choice = config.get("phast.order")
    if choice not in ORDERS:
        raise MgapspError(f"phast.order must be one of {', '.join(ORDERS)}, got "
                          f"{choice!r}")
    if choice == "minimum-degree" or A.nnz == 0 or (
            choice == "auto" and degree.mean() < NESTED_DISSECTION_DEGREE):
        return None
    try:
        import pymetis
    except ImportError:
        if choice == "nested-dissection":
            raise MgapspError("phast.order nested-dissection needs pymetis "
                              "(pip install pymetis)") from None
        return None
    perm, iperm = pymetis.nested_dissection(pymetis.CSRAdjacency(A.indptr, A.indices))
    return np.asarray(perm, dtype=np.int64), np.asarray(iperm, dtype=np.int64)


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
    is one (the factor's pattern normally is), else the completed arcs (compiled
    code: on the 1000 x 1000 grid, 99,246 arcs were missing)."""
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
    # the factor's pattern lacks arcs (a large graph's, at times): complete it
    return compiled("mgapsp.hierarchy.completion").complete(up_ptr, up_head, n)


def _tree(up_ptr: np.ndarray, up_head: np.ndarray, n: int):
    """Elimination-tree parent, depth (root 0) and height (leaf 0) of every rank."""
    has = np.diff(up_ptr) > 0
    parent = np.full(n, -1, dtype=np.int32)
    parent[has] = up_head[up_ptr[:-1][has]]
    depth, height = compiled("mgapsp.hierarchy.completion").depth_and_height(parent)
    return parent, depth, height


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
    # the lower triangles, in compiled code (Numba, a dependency, imported here)
    compiled("mgapsp.hierarchy.customize").customize_levels(
        up_ptr, up_head, height, w_up, w_down, last_up, last_down)
    return w_up, w_down, last_up, last_down


def concat_ranges(k: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(k_i)`` for each ``k_i``."""
    total = int(k.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(k) - k, k)
    return np.arange(total, dtype=np.int64) - starts


def arcs_limit(graph: Graph) -> int:
    """Most arcs ``graph``'s hierarchy may have (``mgapsp.phast.fill-limit``)."""
    return config.get("phast.fill-limit") * (graph.m + graph.n)


def _check_memory(graph: Graph, arcs: int) -> None:
    """Refuse, before the customization allocates it, a build this process has no
    memory for (:data:`BUILD_BYTES_PER_ARC`)."""
    from ..memory import memory_limit

    need = arcs * BUILD_BYTES_PER_ARC
    room, who = memory_limit()
    if need > room:
        raise UnsupportedError(
            f"the contraction hierarchy of graph {graph.name!r} ({arcs:,} arcs) needs "
            f"about {need / 2**30:.1f} GiB more memory to build, but {who} "
            f"{room / 2**30:.1f} GiB; use bellman-ford, or build it on a larger host "
            "into the folder of mgapsp.phast.hierarchy-dir")


def build(graph: Graph) -> Hierarchy:
    """The customized hierarchy of ``graph`` (non-negative weights)."""
    check_weights(graph)
    n = graph.n
    rank, L = _order_and_completion(graph)
    if L.nnz - n > arcs_limit(graph):
        raise UnsupportedError(
            f"graph {graph.name!r} is not road-like: its contraction hierarchy would "
            f"have {L.nnz - n:,} arcs for {graph.m:,} edges; use bellman-ford or dijkstra")
    _check_memory(graph, L.nnz - n)
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


