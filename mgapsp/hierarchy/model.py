"""A contraction hierarchy as data (:class:`Hierarchy`) and what phast asks of a graph:
non-negative weights, and positive ones for predecessors."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import UnsupportedError
from ..graph import Graph

__all__ = ["FORMAT", "FIELDS", "Hierarchy", "check_weights", "check_predecessors",
           "gives_predecessors", "describe"]

#: file format version of a saved hierarchy (2: the arcs' last vertices)
FORMAT = 2
#: the arrays a hierarchy is made of (and a saved one holds)
FIELDS = ("rank", "order", "up_ptr", "up_head", "w_up", "w_down", "last_up", "last_down",
          "parent", "depth")


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
        if targets is None:
            return self._all_levels
        return self._grouped(self.above(targets))

    @cached_property
    def _all_levels(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`levels` of every rank, once: an upload asks for them four times."""
        return self._grouped(None)

    def _grouped(self, keep) -> tuple[np.ndarray, np.ndarray]:
        by_depth = np.argsort(self.depth, kind="stable").astype(np.int32)
        if keep is not None:
            by_depth = by_depth[keep[by_depth]]
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

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """``(pre, span)``, int32 over ranks: each rank's preorder number in the
        elimination forest and the size of its subtree, so that rank ``r`` is ``x`` or
        one of its ancestors exactly when ``pre[r] <= pre[x] < pre[r] + span[r]``."""
        ptr, by_depth = self.levels()
        size = np.ones(self.n, dtype=np.int64)
        for d in range(len(ptr) - 2, 0, -1):            # children before parents
            nodes = by_depth[ptr[d]:ptr[d + 1]]
            np.add.at(size, self.parent[nodes], size[nodes])
        pre = np.empty(self.n, dtype=np.int64)
        roots = by_depth[ptr[0]:ptr[1]] if len(ptr) > 1 else by_depth[:0]
        pre[roots] = np.cumsum(size[roots]) - size[roots]
        for d in range(1, len(ptr) - 1):                # parents before children
            nodes = by_depth[ptr[d]:ptr[d + 1]]
            nodes = nodes[np.argsort(self.parent[nodes], kind="stable")]
            par, sz = self.parent[nodes], size[nodes]
            before = np.cumsum(sz) - sz                 # sizes of the siblings before
            first = np.r_[True, par[1:] != par[:-1]]
            start = np.maximum.accumulate(np.where(first, np.arange(len(nodes)), 0))
            pre[nodes] = pre[par] + 1 + before - before[start]
        return pre.astype(np.int32), size.astype(np.int32)

    def top(self, most_ranks: int, most_entries: int) -> int:
        """How many levels, from the root level down, hold at most ``most_ranks``
        ranks each while their ranks times their count stays within
        ``most_entries`` (the size of their :meth:`chains`)."""
        ptr, _ = self.levels()
        sizes = np.diff(ptr)
        levels = 0
        while (levels < len(sizes) and sizes[levels] <= most_ranks
               and ptr[levels + 1] * (levels + 1) <= most_entries):
            levels += 1
        return levels

    def chains(self, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ranks, chain_rank, chain_dist)`` of the top ``levels`` levels (their
        ranks, root level first; see :mod:`mgapsp.hierarchy.chains`)."""
        from ..jit import compiled

        ptr, by_depth = self.levels()
        ranks = by_depth[:ptr[levels]]
        if not levels:
            return ranks, np.empty((0, 0), dtype=np.int32), np.empty((0, 0))
        chain_rank, chain_dist = compiled("mgapsp.hierarchy.chains").down_chains(
            self.up_ptr, self.up_head, self.w_down, self.parent, self.depth, ranks, levels)
        return ranks, chain_rank, chain_dist

    def nbytes(self) -> int:
        return sum(getattr(self, k).nbytes for k in FIELDS)


def check_weights(graph: Graph) -> None:
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
    check_weights(graph)
    zero = _zero_weight_edges(graph)
    if zero.any():
        e = int(np.flatnonzero(zero)[0])
        u, v = graph.labels[graph.sources_of_edges[e]], graph.labels[graph.indices[e]]
        raise UnsupportedError(
            f"phast gives predecessors only where every edge weight is positive, but "
            f"graph {graph.name!r} has zero-weight edges ({int(zero.sum()):,}; the first "
            f"{u} -> {v}); use bellman-ford or dijkstra for predecessors")



def describe(h: Hierarchy) -> dict:
    """Its size, for job records and benchmarks."""
    return {"arcs": h.arcs, "levels": h.height, "bytes": h.nbytes(),
            "max_up_degree": int(np.diff(h.up_ptr).max(initial=0))}
