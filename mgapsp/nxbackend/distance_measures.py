"""NetworkX's eccentricity, diameter and radius on mgapsp distances, computed in
batches of sources and reduced where they are computed (on the GPU, its device): a
largest distance is the same in any order, so no row comes to the host."""

from __future__ import annotations

import networkx as nx
import numpy as np

from .convert import FallBack, backend_graph, for_hops, for_weight
from .registry import dispatches
from .rows import search
from ..metrics import row_metrics

__all__ = ["eccentricity", "diameter", "radius"]


def _lengths(G, weight):
    """The graph NetworkX's ``shortest_path_length(G, weight=weight)`` searches."""
    if weight is None:
        return for_hops(G)
    conv = for_weight(G, weight)
    if conv.negative:
        raise FallBack("negative weights: NetworkX's Dijkstra answers them its own way")
    return conv


def _eccentricities(G, nodes, weight, message: str | None = None):
    """``{node: eccentricity}`` in the order of ``nodes``, raising NetworkX's error at
    the first node that does not reach every other (``message``: another wording)."""
    nxg = backend_graph(G).graph
    conv = _lengths(G, weight)
    if message is None:
        message = ("Found infinite path length because the digraph is not strongly "
                   "connected" if nxg.is_directed() else
                   "Found infinite path length because the graph is not connected")
    if not nodes:
        return {}
    # the algorithm NetworkX's sums come from (never Floyd-Warshall's, whose float
    # sums of subpaths round otherwise)
    backend, algorithm, _ = search(conv)
    red = row_metrics(conv.graph, np.array([conv.index[v] for v in nodes], dtype=np.int64),
                      backend=backend, algorithm=algorithm)
    if (red["reachable"] < conv.graph.n).any():
        raise nx.NetworkXError(message)
    # max() of NetworkX's dict keeps the first largest: the source's int 0 when every
    # distance is 0, else the largest (an int for int weights)
    return {v: (0 if top == 0 else int(top) if conv.integral else float(top))
            for v, top in zip(nodes, red["eccentricity"].tolist())}


def _no_sp(args):
    return True if args["sp"] is None else "sp= given (NetworkX reads it, no search)"


def _no_e(args):
    if args["e"] is not None:
        return "e= given (NetworkX reads it, no search)"
    if args["usebounds"] is True and args["weight"] is not None:
        # its bounds add and subtract float distances, and add 1 for radius
        return "usebounds=True with a weight (NetworkX's bounding search)"
    return True


@dispatches(_no_sp)
def eccentricity(G, v=None, sp=None, weight=None):
    nxg = backend_graph(G).graph
    e = _eccentricities(G, list(nxg.nbunch_iter(v)), weight)
    if v in nxg:
        return e[v]
    return e


def _extremes(G, usebounds, weight):
    nxg = backend_graph(G).graph
    if usebounds is True and not nxg.is_directed():
        # NetworkX's bounding search: the same extreme, its own error
        return _eccentricities(G, list(nxg), weight, "Cannot compute metric because "
                               "graph is not connected.")
    return _eccentricities(G, list(nxg), weight)


@dispatches(_no_e)
def diameter(G, e=None, usebounds=False, weight=None):
    return max(_extremes(G, usebounds, weight).values())


@dispatches(_no_e)
def radius(G, e=None, usebounds=False, weight=None):
    return min(_extremes(G, usebounds, weight).values())
