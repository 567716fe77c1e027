"""Bellman-Ford from a virtual source on the CPU: Johnson potentials, or the negative
cycle that forbids them.  Every backend refuses a negative cycle with the cycle this
finds, in the graph's own vertex ids."""

from __future__ import annotations

import numpy as np

from ..errors import NegativeCycleError
from ..graph import Graph

__all__ = ["bellman_ford_potentials", "find_negative_cycle"]


def bellman_ford_potentials(graph: Graph, max_rounds: int | None = None) -> np.ndarray:
    """Johnson potentials by frontier Bellman-Ford from a virtual source.

    The virtual source reaches every vertex with weight 0, so every distance starts at
    0 and only decreases.  Rounds relax the out-edges of the vertices that changed in
    the previous round, vectorized with NumPy.  A vertex still changing after n rounds
    lies downstream of a negative cycle, which is then extracted from the predecessor
    graph and raised as :class:`NegativeCycleError`.
    """
    n = graph.n
    d = np.zeros(n)
    pred = np.full(n, -1, dtype=np.int64)
    if not graph.has_negative_weights:
        return d
    src_all = graph.sources_of_edges.astype(np.int64)
    dst_all = graph.indices.astype(np.int64)
    w_all = graph.weights
    # Only negative edges can lower a zero start, so the first frontier is their tails.
    active = np.zeros(n, dtype=bool)
    active[src_all[w_all < 0]] = True
    rounds = n + 1 if max_rounds is None else max_rounds
    for _ in range(rounds):
        emask = active[src_all]
        es, ed, ew = src_all[emask], dst_all[emask], w_all[emask]
        cand = d[es] + ew
        better = cand < d[ed]
        if not better.any():
            return d
        es, ed, cand = es[better], ed[better], cand[better]
        newd = d.copy()
        np.minimum.at(newd, ed, cand)
        win = cand == newd[ed]
        pred[ed[win]] = es[win]
        active = newd < d
        d = newd
    cycle = _cycle_from_predecessors(graph, pred, np.flatnonzero(active))
    if cycle is None:  # pragma: no cover - the lemma says there is one
        raise NegativeCycleError([], float("-inf"), "negative cycle (could not extract it)")
    raise NegativeCycleError(graph.vertex_ids[cycle], _cycle_weight(graph, cycle))


def find_negative_cycle(graph: Graph) -> None:
    """Raise :class:`NegativeCycleError` for a negative cycle of ``graph``, if any."""
    bellman_ford_potentials(graph)


def _cycle_from_predecessors(graph, pred, starts):
    """Walk predecessors n steps from each start; return a negative cycle found."""
    n = graph.n
    for v in starts[:64]:
        v = int(v)
        for _ in range(n):
            if pred[v] < 0:
                break
            v = int(pred[v])
        else:
            cycle = [v]
            u = int(pred[v])
            while u != v:
                cycle.append(u)
                u = int(pred[u])
            cycle.reverse()  # pred walks backwards; report in edge direction
            if _cycle_weight(graph, cycle) < 0:
                return np.array(cycle, dtype=np.int64)
    return None


def _cycle_weight(graph, cycle) -> float:
    cycle = np.asarray(cycle, dtype=np.int64)
    return float(graph.edge_weights(cycle, np.roll(cycle, -1)).sum())
