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
The package: :mod:`.model` (the :class:`Hierarchy` and phast's rules), :mod:`.construct`
(the build), :mod:`.chains` (the top levels as chains, for the GPU sweep),
:mod:`.storage` (files and this process's memory).  The sweeps are
PHAST's room (:mod:`mgapsp.backends.phast`); whether a graph looks like a road
network is the planner's (:func:`mgapsp.plan.road_like`).
"""

from .construct import arcs_limit, build
from .model import (FORMAT, Hierarchy, check_predecessors, check_weights, describe,
                    gives_predecessors)
from .storage import cached, for_graph, known, load, save

__all__ = ["FORMAT", "Hierarchy", "arcs_limit", "build", "cached", "check_predecessors",
           "check_weights", "describe", "for_graph", "gives_predecessors", "known", "load",
           "save"]
