"""NetworkX's closeness and harmonic centrality on mgapsp distances, each sum added
in NetworkX's order so that the floats are NetworkX's to the last bit; its
betweenness on mgapsp's Brandes (:func:`mgapsp.metrics.betweenness_centrality`)."""

from __future__ import annotations

import networkx as nx
import numpy as np

from .convert import FallBack, backend_graph, for_hops, for_weight
from .registry import dispatches
from ..api import resolve_backend
from .. import metrics
from ..metrics import ordered_harmonic, row_metrics
from ..reductions import metric_values
from ..reductions import ordered_harmonic as add_harmonic
from .rows import distance_rows, int_sum

__all__ = ["closeness_centrality", "harmonic_centrality", "betweenness_centrality",
           "edge_betweenness_centrality", "betweenness_centrality_subset"]


def _lengths(G, distance, *, reverse: bool):
    """The graph NetworkX's ``shortest_path_length(G, weight=distance)`` searches:
    hops (breadth-first) without ``distance``, else Dijkstra's weights."""
    if distance is None:
        return for_hops(G, reverse=reverse)
    conv = for_weight(G, distance, reverse=reverse)
    if conv.negative:
        raise FallBack("negative distances: NetworkX's Dijkstra answers them its own way")
    return conv


def _ordered_sum(values: np.ndarray):
    """``sum(values)`` as Python adds NetworkX's dict of distances: by distance (the
    order its breadth-first search and Dijkstra find them), left to right."""
    return float(np.cumsum(np.sort(values))[-1]) if len(values) else 0


@dispatches()
def closeness_centrality(G, u=None, distance=None, wf_improved=True):
    nxg = backend_graph(G).graph
    # NetworkX reverses a directed graph: closeness counts the distances into a node
    conv = _lengths(G, distance, reverse=nxg.is_directed())
    if u is None:
        nodes = list(nxg)
    elif u not in nxg:
        message = (f"Source {u} is not in G" if distance is None
                   else f"Node {u} not found in graph")
        raise nx.NodeNotFound(message)
    else:
        nodes = [u]
    len_G = len(nxg)
    index = [conv.index[v] for v in nodes]
    if conv.exact and conv.graph.path_sum_bound * max(len_G, 1) < 2**53:
        # every row's sum exact in float64 in any order: the rows are reduced where
        # they are computed (on the GPU, its device), none comes to the host
        red = row_metrics(conv.graph, np.asarray(index, dtype=np.int64),
                          backend=resolve_backend("auto"))
        c = metric_values(red, len_G)["closeness"]
        if not wf_improved and len_G > 1:
            r = red["reachable"].astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                c = np.where(red["total"] > 0, (r - 1.0) / red["total"], 0.0)
        closeness = dict(zip(nodes, c.tolist()))
        return closeness[u] if u is not None else closeness
    closeness = {}
    for chunk, block in distance_rows(conv, index):
        for s, row in zip(chunk.tolist(), block):
            reached = row[np.isfinite(row)]
            if conv.integral:
                totsp = int_sum(reached, conv.graph.path_sum_bound)
            else:
                totsp = _ordered_sum(reached)
            c = 0.0
            if totsp > 0.0 and len_G > 1:
                c = (len(reached) - 1.0) / totsp
                if wf_improved:
                    c *= (len(reached) - 1.0) / (len_G - 1)
            closeness[conv.nodes[s]] = c
    return closeness[u] if u is not None else closeness


@dispatches()
def harmonic_centrality(G, nbunch=None, distance=None, sources=None):
    nxg = backend_graph(G).graph
    # the very sets NetworkX builds: their iteration order is the order of its sums
    nbunch = set(nxg.nbunch_iter(nbunch) if nbunch is not None else nxg.nodes)
    sources = set(nxg.nbunch_iter(sources) if sources is not None else nxg.nodes)
    centrality = {u: 0 for u in nbunch}
    transposed = len(nbunch) < len(sources)
    if transposed:
        nbunch, sources = sources, nbunch
    conv = _lengths(G, distance, reverse=transposed and nxg.is_directed())
    targets = np.array([conv.index[u] for u in nbunch], dtype=np.int64)
    order = [conv.index[v] for v in sources]
    if not transposed:
        # centrality[u] += 1/d(v, u) for v in `sources` order: each u's terms added in
        # that order; exact distances are reduced where they are computed (on the
        # GPU, its device), the others come from NetworkX's own sums on the host
        if conv.exact:
            acc, touched = ordered_harmonic(conv.graph, order, targets,
                                            backend=resolve_backend("auto"))
        else:
            acc = np.zeros(len(targets))
            touched = np.zeros(len(targets), dtype=bool)
            for _, block in distance_rows(conv, order):
                add_harmonic(block, targets, acc, touched)
        for u, x, t in zip(nbunch, acc.tolist(), touched.tolist()):
            if t:
                centrality[u] = x
        return centrality
    # transposed: centrality[v] adds 1/d over v's dict of distances, nearest first
    for chunk, block in distance_rows(conv, order):
        for s, row in zip(chunk.tolist(), block):
            d = row[targets]
            d = d[np.isfinite(d) & (d != 0)]
            if len(d):
                centrality[conv.nodes[s]] = float(np.cumsum(1.0 / np.sort(d))[-1])
    return centrality


@dispatches()
def betweenness_centrality(G, k=None, normalized=True, weight=None, endpoints=False,
                           seed=None):
    nxg = backend_graph(G).graph
    _lengths(G, weight, reverse=False)      # negative weights: NetworkX's own answer
    # seed comes as NetworkX's decorator made it (a random.Random): the same draw
    return metrics.betweenness_centrality(nxg, k=k, normalized=normalized, weight=weight,
                                          endpoints=endpoints, seed=seed)


@dispatches()
def edge_betweenness_centrality(G, k=None, normalized=True, weight=None, seed=None):
    nxg = backend_graph(G).graph
    if nxg.is_multigraph():
        raise FallBack("a multigraph's edges are keyed: NetworkX's own answer")
    _lengths(G, weight, reverse=False)
    return metrics.edge_betweenness_centrality(nxg, k=k, normalized=normalized,
                                               weight=weight, seed=seed)


def _sources_in_graph(args) -> bool | str:
    G = args["G"]
    if not all(s in G for s in args["sources"]):
        return "a source not in G: NetworkX's own error"
    return True


@dispatches(_sources_in_graph)
def betweenness_centrality_subset(G, sources, targets, normalized=False, weight=None):
    nxg = backend_graph(G).graph
    _lengths(G, weight, reverse=False)
    return metrics.betweenness_centrality_subset(nxg, sources, targets,
                                                 normalized=normalized, weight=weight)
