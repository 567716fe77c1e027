"""NetworkX's shortest-path-length functions on mgapsp: same arguments, results,
types and errors as ``networkx.algorithms.shortest_paths``."""

from __future__ import annotations

import math
from collections.abc import Collection

import networkx as nx
import numpy as np
from scipy.sparse.csgraph import connected_components

from ..errors import NegativeCycleError
from .convert import (FallBack, backend_graph, for_hops, for_weight, induced,
                      matrix_weighted, with_super_source)
from .registry import dispatches, is_number
from .rows import all_rows, distance_rows, int_sum, reaches_negative_cycle, row_dict

__all__ = ["floyd_warshall_numpy", "single_source_dijkstra_path_length",
           "multi_source_dijkstra_path_length", "all_pairs_dijkstra_path_length",
           "all_pairs_bellman_ford_path_length", "average_shortest_path_length"]


def _cutoff_supported(args):
    c = args["cutoff"]
    return True if c is None or is_number(c) else f"cutoff={c!r} is not an int or float"


def _sources_supported(args):
    if not isinstance(args["sources"], Collection):
        # NetworkX walks sources twice (checks, then the search): an iterator's second
        # walk is empty
        return "sources is not a collection"
    return _cutoff_supported(args)


def _cutoff(cutoff):
    """``cutoff`` for NumPy's float64 comparison, which equals Python's for the exact
    distances mgapsp keeps (an int past 2**52 is beyond every such distance)."""
    if cutoff is None or isinstance(cutoff, float) or abs(cutoff) < 2**52:
        return cutoff
    return math.copysign(math.inf, cutoff)


def _dijkstra(G, weight):
    conv = for_weight(G, weight)
    if conv.negative:
        raise FallBack("negative weights: NetworkX's Dijkstra answers them its own way")
    return conv


@dispatches()
def floyd_warshall_numpy(G, nodelist=None, weight="weight"):
    nxg = backend_graph(G).graph
    if nodelist is not None:
        if not (len(nodelist) == len(nxg) == len(set(nodelist))):
            raise nx.NetworkXError(
                "nodelist must contain every node in G with no repeats."
                "If you wanted a subgraph of G use G.subgraph(nodelist)")
        if missing := set(nodelist) - set(nxg):
            raise nx.NetworkXError(f"Nodes {missing} in nodelist is not in G")
    conv = matrix_weighted(nxg, weight, list(nxg) if nodelist is None else list(nodelist))
    try:
        return all_rows(conv, floyd_warshall=True)
    except NegativeCycleError:
        raise FallBack("a negative cycle: NetworkX's Floyd-Warshall returns its own "
                       "numbers for it") from None


@dispatches(_sources_supported)
def multi_source_dijkstra_path_length(G, sources, cutoff=None, weight="weight"):
    if not sources:
        raise ValueError("sources must not be empty")
    nxg = backend_graph(G).graph
    for s in sources:
        if s not in nxg:
            raise nx.NodeNotFound(f"Node {s} not found in graph")
    conv = _dijkstra(G, weight)
    idx = list(dict.fromkeys(conv.index[s] for s in sources))
    if len(idx) == 1:
        (_, block), = distance_rows(conv, idx)
        return row_dict(conv, block[0], idx, cutoff=_cutoff(cutoff))
    # one more vertex joined to every source by weight 0: one row, not one per source
    sup = with_super_source(conv, idx)
    (_, block), = distance_rows(sup, [conv.n])
    return row_dict(conv, block[0][:conv.n], idx, cutoff=_cutoff(cutoff))


@dispatches(_cutoff_supported)
def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
    return multi_source_dijkstra_path_length(G, {source}, cutoff=cutoff, weight=weight)


@dispatches(_cutoff_supported)
def all_pairs_dijkstra_path_length(G, cutoff=None, weight="weight"):
    conv = _dijkstra(G, weight)           # here, so that a fall-back is decided now
    cutoff = _cutoff(cutoff)

    def pairs():
        for chunk, block in distance_rows(conv, np.arange(conv.n)):
            for s, row in zip(chunk.tolist(), block):
                yield conv.nodes[s], row_dict(conv, row, (s,), cutoff=cutoff)
    return pairs()


@dispatches()
def all_pairs_bellman_ford_path_length(G, weight="weight"):
    conv = for_weight(G, weight)
    if conv.hidden:
        raise FallBack("a weight function hides edges (NetworkX's Bellman-Ford adds "
                       "None and raises TypeError)")

    def pairs():
        done = 0
        try:
            for chunk, block in distance_rows(conv, np.arange(conv.n)):
                for s, row in zip(chunk.tolist(), block):
                    yield conv.nodes[s], row_dict(conv, row, (s,))
                    done += 1
            return
        except NegativeCycleError:
            pass
        # NetworkX raises at the first source that reaches a negative cycle, after
        # yielding the sources before it: their rows come from the part of the graph
        # that reaches none (it holds every path from them)
        bad = reaches_negative_cycle(conv.graph)
        first_bad = int(np.argmax(bad[done:])) + done
        if first_bad > done:
            keep = np.flatnonzero(~bad)
            new = np.cumsum(~bad) - 1
            sub = induced(conv.graph, ~bad)
            for chunk, block in distance_rows(conv, new[done:first_bad], graph=sub):
                for s, row in zip(keep[chunk].tolist(), block):
                    yield conv.nodes[s], row_dict(conv, row, (s,), columns=keep)
        raise nx.NetworkXUnbounded("Negative cycle detected.")
    return pairs()


@dispatches()
def average_shortest_path_length(G, weight=None, method=None):
    single_source_methods = ["unweighted", "dijkstra", "bellman-ford"]
    all_pairs_methods = ["floyd-warshall", "floyd-warshall-numpy"]
    if method is None:
        method = "unweighted" if weight is None else "dijkstra"
    if method not in single_source_methods + all_pairs_methods:
        raise ValueError(f"method not supported: {method}")
    nxg = backend_graph(G).graph
    n = len(nxg)
    if n == 1:
        return 0
    if method in all_pairs_methods:
        # nx.floyd_warshall reads weights as floyd_warshall_numpy does (attribute,
        # default 1.0, least over parallel edges; a function is no attribute)
        conv = matrix_weighted(nxg, weight, list(nxg))
    elif method == "unweighted":
        conv = for_hops(G)
    else:
        conv = for_weight(G, weight)
        if conv.hidden:
            raise FallBack("a weight function hides edges, which still connect the graph "
                           "for NetworkX's connectivity test")
    # NetworkX tests the connection on every edge before any distance
    connected = for_hops(G).graph
    count, _ = connected_components(connected.to_scipy(), directed=True, connection="strong")
    if count != 1:
        raise nx.NetworkXError("Graph is not strongly connected." if nxg.is_directed()
                               else "Graph is not connected.")
    if method == "floyd-warshall-numpy":
        # NetworkX sums floyd_warshall_numpy's matrix with ndarray.sum: the same
        # matrix, the same sum
        return float(floyd_warshall_numpy(G, weight=weight).sum()) / (n * (n - 1))
    if method == "dijkstra" and conv.negative:
        raise FallBack("negative weights: NetworkX's Dijkstra answers them its own way")
    if method == "floyd-warshall" and conv.negative:
        raise FallBack("negative weights with method='floyd-warshall' (NetworkX keeps "
                       "a negative self-loop on its diagonal)")
    if not conv.integral and method != "dijkstra":
        raise FallBack(f"float weights with method={method!r}: NetworkX adds them in its "
                       "Bellman-Ford's (or its dicts') order")
    if conv.integral:
        s = 0
        try:
            for _, block in distance_rows(conv, np.arange(n)):
                s += int_sum(block, conv.graph.path_sum_bound)
        except NegativeCycleError:       # connected: every source reaches the cycle
            raise nx.NetworkXUnbounded("Negative cycle detected.") from None
        return s / (n * (n - 1))
    # NetworkX's Dijkstra lists each row by distance and sums row after row, left to
    # right: sorted rows added in sequence (cumsum, not NumPy's pairwise sum) are
    # that very sum
    total = np.zeros(1)
    for _, block in distance_rows(conv, np.arange(n)):
        total = np.cumsum(np.concatenate([total, np.sort(block, axis=1).ravel()]))[-1:]
    return float(total[0]) / (n * (n - 1))

