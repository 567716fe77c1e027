"""NetworkX graphs as mgapsp graphs over node indices, each edge weighed as NetworkX
weighs it.

Nodes become the indices ``0..n-1`` in ``G.nodes`` order (any hashable node works:
mgapsp never sees the labels).  A call whose weights mgapsp cannot answer exactly as
NetworkX would raises :class:`FallBack`, and NetworkX runs instead.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from ..graph import Graph

__all__ = ["FallBack", "Converted", "NxGraph", "weighted", "hops", "matrix_weighted",
           "backend_graph", "for_weight", "for_hops",
           "with_super_source", "induced"]

#: Integer path sums stay exact in float64 below this, with room for Johnson's
#: reweighting (each reweighted weight adds two potentials to a weight).
EXACT_INT_SUM = 2.0**50


class FallBack(NotImplementedError):
    """mgapsp cannot give NetworkX's exact answer for this call: NetworkX's dispatcher
    catches NotImplementedError and runs NetworkX's own code."""


@dataclass(eq=False)
class Converted:
    """A NetworkX graph as an mgapsp :class:`Graph` over node indices."""

    graph: Graph
    nodes: list
    index: dict
    #: every weight a Python int: NetworkX's distances are ints (else floats)
    integral: bool
    #: some edge hidden by a weight function that returned None
    hidden: bool = False

    @property
    def n(self) -> int:
        return len(self.nodes)

    @property
    def negative(self) -> bool:
        return self.graph.has_negative_weights

    @property
    def exact(self) -> bool:
        """Whether every path sum is exact in float64 whatever the order of additions
        (integral weights, small sums): then any algorithm gives NetworkX's numbers."""
        return self.integral and self.graph.path_sum_bound < EXACT_INT_SUM


@dataclass(eq=False)
class NxGraph:
    """The backend's graph type: the NetworkX graph it was made from (read anew for
    each weight, since a weight may be a function of the edge's data) and the graphs
    converted from it for attribute weights, kept for the next call."""

    __networkx_backend__ = "mgapsp"
    graph: object
    _converted: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.graph)

    def __contains__(self, node) -> bool:
        return node in self.graph

    def __iter__(self):
        return iter(self.graph)

    def cached(self, key, make):
        """``make()``, kept under ``key`` (None: a weight function, never kept: it may
        depend on anything)."""
        if key is None:
            return make()
        if key not in self._converted:
            self._converted[key] = make()
        return self._converted[key]


def _adjacency(G, reverse: bool):
    # NetworkX's algorithms walk G._adj (and G.reverse() walks G._pred), handing the
    # raw data dicts (keydicts on multigraphs) to weight functions: so do we
    return G._pred if reverse and G.is_directed() else G._adj


def _weight_function(G, weight):
    """NetworkX's ``_weight_function``: an attribute with default 1 (the least over
    parallel edges), or the function itself."""
    if callable(weight):
        return weight
    if G.is_multigraph():
        return lambda u, v, d: min(attr.get(weight, 1) for attr in d.values())
    return lambda u, v, data: data.get(weight, 1)


def _nodes(G) -> tuple[list, dict]:
    nodes = list(G)
    return nodes, {v: i for i, v in enumerate(nodes)}


def weighted(G, weight, *, reverse: bool = False) -> Converted:
    """``G`` (reversed: ``G.reverse()``) weighed as NetworkX's Dijkstra and
    Bellman-Ford weigh it; an edge whose weight function returns None is hidden."""
    nodes, index = _nodes(G)
    get = _weight_function(G, weight)
    src, dst, w = [], [], []
    hidden = False
    for u, nbrs in _adjacency(G, reverse).items():
        iu = index[u]
        for v, data in nbrs.items():
            x = get(u, v, data)
            if x is None:
                hidden = True
                continue
            src.append(iu)
            dst.append(index[v])
            w.append(x)
    kinds = set(map(type, w))
    if kinds <= {int}:
        integral = True
        if w and max(map(abs, w)) >= EXACT_INT_SUM:
            raise FallBack("integer weights too large for exact sums in float64")
    elif kinds == {float}:
        integral = False
        if not all(map(math.isfinite, w)):
            raise FallBack("a weight is not finite")
    else:
        # NetworkX's sums keep the type of their terms (an int path gives an int, a
        # float on it a float): mixed or other types would need NetworkX's own paths
        raise FallBack(f"edge weights of types {sorted(k.__name__ for k in kinds)}; "
                       "mgapsp answers for int weights or for float weights")
    conv = Converted(_graph(src, dst, w, len(nodes)), nodes, index, integral, hidden)
    if integral and not conv.exact:
        raise FallBack("integer path sums too large for exact sums in float64")
    return conv


def hops(G, *, reverse: bool = False) -> Converted:
    """``G`` with every edge of length 1, as NetworkX's breadth-first searches."""
    nodes, index = _nodes(G)
    src, dst = [], []
    for u, nbrs in _adjacency(G, reverse).items():
        iu = index[u]
        for v in nbrs:
            src.append(iu)
            dst.append(index[v])
    return Converted(_graph(src, dst, None, len(nodes)), nodes, index, True)


def matrix_weighted(G, weight, nodelist) -> Converted:
    """``G`` as ``nx.to_numpy_array(G, nodelist, weight=weight, multigraph_weight=min,
    nonedge=inf)`` reads it (``edge[weight]``, 1.0 where missing, the least over
    parallel edges, every value a float64) with self-loops dropped, as
    ``floyd_warshall_numpy`` zeroes the diagonal; ``integral`` says whether every
    value is an integer (and the sums exact)."""
    index = {v: i for i, v in enumerate(nodelist)}
    src, dst, w = [], [], []
    multi = G.is_multigraph()
    for u, nbrs in G._adj.items():
        iu = index[u]
        for v, data in nbrs.items():
            iv = index[v]
            if iu == iv:
                continue
            if multi:
                x = min(attr.get(weight, 1.0) for attr in data.values())
            else:
                x = data.get(weight, 1.0)
            if not isinstance(x, numbers.Real):
                raise FallBack(f"a weight of type {type(x).__name__}")
            x = float(x)
            if x == math.inf:        # inf is NetworkX's "no edge" in this matrix
                continue
            if not math.isfinite(x):
                raise FallBack("a weight is NaN or -inf")
            src.append(iu)
            dst.append(iv)
            w.append(x)
    integral = all(x.is_integer() for x in w) and (not w or max(map(abs, w)) < EXACT_INT_SUM)
    conv = Converted(_graph(src, dst, w, len(nodelist)), list(nodelist), index, integral)
    conv.integral = conv.exact      # a float matrix: only exactness matters
    return conv


def with_super_source(conv: Converted, sources) -> Converted:
    """``conv`` and one more vertex (index n) with an edge of weight 0 to each of
    ``sources``: its row is the multi-source distance, summed as NetworkX sums it
    (0 + the path's weights, in order)."""
    g = conv.graph
    k = len(sources)
    src = np.concatenate([g.sources_of_edges.astype(np.int64), np.full(k, conv.n)])
    dst = np.concatenate([g.indices.astype(np.int64), np.asarray(sources, np.int64)])
    w = np.concatenate([g.weights, np.zeros(k)])
    graph = Graph.from_edges(src, dst, w, n=conv.n + 1, directed=True)
    return Converted(graph, conv.nodes, conv.index, conv.integral, conv.hidden)


def induced(graph: Graph, keep: np.ndarray) -> Graph:
    """The subgraph of ``graph`` on the vertices where ``keep`` is True, renumbered in
    order."""
    new = np.cumsum(keep) - 1
    src, dst = graph.sources_of_edges, graph.indices
    inside = keep[src] & keep[dst]
    return Graph.from_edges(new[src[inside]], new[dst[inside]], graph.weights[inside],
                            n=int(keep.sum()), directed=True)


def _graph(src, dst, w, n: int) -> Graph:
    # directed always: an undirected NetworkX graph lists each edge both ways in _adj
    return Graph.from_edges(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                            None if w is None else np.asarray(w, dtype=np.float64),
                            n=n, directed=True)


def backend_graph(G) -> NxGraph:
    """``G`` as the backend's graph (a NetworkX graph passed directly is wrapped)."""
    return G if isinstance(G, NxGraph) else NxGraph(G)


def for_weight(G, weight, *, reverse: bool = False) -> Converted:
    """:func:`weighted`, kept on the backend graph for attribute weights."""
    g = backend_graph(G)
    key = None if callable(weight) else ("weighted", weight, reverse)
    return g.cached(key, lambda: weighted(g.graph, weight, reverse=reverse))


def for_hops(G, *, reverse: bool = False) -> Converted:
    """:func:`hops`, kept on the backend graph."""
    g = backend_graph(G)
    return g.cached(("hops", reverse), lambda: hops(g.graph, reverse=reverse))
