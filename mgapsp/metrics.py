"""Network metrics without the n x n matrix: closeness, harmonic and betweenness
centrality, eccentricity, diameter and the average shortest path length, with
NetworkX's signatures and definitions.

Each source's row is reduced where it is computed (on the GPU, on its device: the sum
of its finite distances, how many there are, the sum of their reciprocals, the
largest) and only those numbers are kept, so memory follows the vertices, not their
square.  A NetworkX graph is read with its node labels, and the answers are
NetworkX's dicts keyed by them; any other input :func:`mgapsp.as_graph` takes is read
as there (directed unless it says otherwise) and keyed by its labels.  Sums are
float64, added in another order than NetworkX's: equal to its answers to about 1e-15
relative (exactly, for integer weights, where NetworkX's own sums are exact).

Directed graphs follow NetworkX: closeness and harmonic centrality count the
distances *into* a vertex (the rows of the reversed graph), eccentricity the
distances out of it.  Besides NetworkX's arguments each function takes ``backend``
and ``algorithm`` as :func:`mgapsp.apsp` does (``algorithm="phast"`` sweeps a road
network's hierarchy, built once per process).
"""

from __future__ import annotations

import sys

import numpy as np

from . import hierarchy
from .algorithms import needs_hierarchy
from .api import resolve_backend
from .backends import get_backend
from .reductions import HISTOGRAM_BINS, DistanceHistogram
from .reductions import distance_histogram as _histogram
from .reductions import betweenness_scale, lone_reductions, metric_values
from .errors import MgapspError, UnsupportedError
from .graph import Graph
from .plan import brandes_algorithm, plan_job
from .readers import as_graph
from .cpu_sssp import threads
from .jit import compiled

__all__ = ["closeness_centrality", "harmonic_centrality", "betweenness_centrality",
           "edge_betweenness_centrality", "betweenness_centrality_subset", "eccentricity",
           "diameter", "average_shortest_path_length", "distance_histogram",
           "row_metrics", "reversed_graph"]


def _is_networkx(G) -> bool:
    return type(G).__module__.startswith("networkx")


def _graph(G, weight) -> Graph:
    """``G`` as NetworkX's shortest path functions see it: ``weight`` an edge attribute
    (or function), None for hops."""
    if _is_networkx(G):
        return as_graph(G, weight=weight, unweighted=weight is None)
    return G if isinstance(G, Graph) else as_graph(G)


def _into(G, g: Graph) -> bool:
    """Whether a centrality of ``G`` sums distances *into* each vertex, as NetworkX's
    do on directed graphs: NetworkX says by ``G`` itself (an undirected graph weighed
    per direction of travel is read as directed, yet measured from each vertex)."""
    return G.is_directed() if _is_networkx(G) else g.directed


def _no_negative(G, g: Graph, name: str) -> None:
    """NetworkX's centralities search with Dijkstra, which has no answer for negative
    weights: refused."""
    if g.has_negative_weights:
        raise _error(G, f"{name}: negative edge weights; NetworkX's Dijkstra, whose "
                     "distances it sums, does not take them", "NetworkXError")


def _int_lengths(G, g: Graph, weight) -> bool:
    """Whether lengths are ints: NetworkX's sums keep their terms' type (hops, int
    weights); other inputs: integral weights."""
    if not _is_networkx(G):
        return g.integral_weights
    if weight is None:
        return True
    from .readers.in_memory import networkx_weight

    get = networkx_weight(G, weight)
    return all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
               for u, nbrs in G.adj.items() for v, d in nbrs.items()
               if (x := get(u, v, d)) is not None)


def reversed_graph(g: Graph) -> Graph:
    """The graph with every arc turned around (the rows of distances *into* each
    vertex)."""
    t = g.to_scipy().T.tocsr()
    t.sort_indices()
    return Graph(t.indptr, t.indices, t.data, directed=g.directed, weighted=g.weighted,
                 vertex_ids=g.labels, name=g.name + (" (reversed)" if g.directed else ""))


def _error(G, message: str, kind: str = "NetworkXError"):
    """NetworkX's exception for a NetworkX graph, else ours, with NetworkX's words."""
    if _is_networkx(G):
        # G is one of NetworkX's graphs, so NetworkX is loaded: no import of ours
        nx = sys.modules[type(G).__module__.partition(".")[0]]
        return getattr(nx, kind)(message)
    return MgapspError(message)


def row_metrics(graph: Graph, sources=None, *, backend: str = "auto",
                algorithm: str = "auto", histogram: bool = False) -> dict:
    """For each of ``sources`` (labels; default every vertex) the reductions of its row
    of distances: ``reachable`` (finite entries, itself included), ``total`` (their
    sum), ``harmonic`` (the sum of the reciprocals of the positive ones) and
    ``eccentricity`` (the largest), as NumPy arrays in the order of ``sources``.  The
    rows are computed in batches and reduced where they are (on the GPU, its device);
    none is kept.  ``histogram``: also ``"histogram"``, the counts of
    :func:`~mgapsp.reductions.histogram_counts` over all the rows."""
    backend = resolve_backend(backend)
    impl = get_backend(backend)
    n_sources = graph.n if sources is None else len(sources)
    if graph.n == 0 or n_sources == 0 or graph.m == 0:   # each reaches itself only
        k = 0 if graph.n == 0 else n_sources
        out = lone_reductions(k)
        if histogram:
            out["histogram"] = np.zeros(HISTOGRAM_BINS, dtype=np.uint64)
        return out
    plan = _plan(graph, sources, backend, algorithm, impl)
    potentials = impl.potentials(graph) if graph.has_negative_weights else None
    return impl.row_metrics(graph, plan.sources, batch_size=plan.batch_size,
                            algorithm=plan.spec, dtype=np.dtype(plan.dtype),
                            checked32=plan.checked32, potentials=potentials,
                            histogram=histogram)


def ordered_harmonic(graph: Graph, sources, columns, *, backend: str = "auto",
                     algorithm: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """For each of ``columns`` (internal indices) the sum of ``1 / d(s, column)`` over
    ``sources`` (internal indices) in their order, each term added in turn as a loop
    over them would, and whether any was: harmonic centrality to NetworkX's bit where
    the distances are exact.  Reduced where the rows are computed, none kept."""
    impl = get_backend(resolve_backend(backend))
    sources = np.asarray(sources, dtype=np.int64)
    if graph.n == 0 or len(sources) == 0 or len(columns) == 0:
        return np.zeros(len(columns)), np.zeros(len(columns), dtype=bool)
    plan = _plan(graph, graph.labels[sources], impl.name, algorithm, impl)
    potentials = impl.potentials(graph) if graph.has_negative_weights else None
    return impl.ordered_harmonic(graph, plan.sources, columns, batch_size=plan.batch_size,
                                 algorithm=plan.spec, dtype=np.dtype(plan.dtype),
                                 checked32=plan.checked32, potentials=potentials)


def _plan(graph: Graph, sources, backend: str, algorithm: str, impl):
    """The batches' plan, as :func:`mgapsp.apsp` makes it: ``auto`` may pick phast for a
    road network with enough rows (its hierarchy built here, once per process), and
    falls back where the hierarchy fills in."""
    ready = algorithm == "auto" and hierarchy.known(graph)

    def make(may_build: bool):
        return plan_job(graph, algorithm=algorithm, backend=backend, dtype="auto",
                        sources=sources, batch_size=None, predecessors=False,
                        n_workers=1, memory=impl.memory_available(),
                        hierarchy_ready=ready, may_build=may_build, stored=False)

    plan = make(may_build=True)
    if needs_hierarchy(plan.algorithm) and algorithm == "auto" and not ready:
        try:
            hierarchy.for_graph(graph)
        except UnsupportedError:
            plan = make(may_build=False)
    return plan


def _nodes(G, g: Graph, which) -> list:
    """The labels of ``which`` (one label, an iterable of them, or None: all) that are
    vertices of ``g``, in ``G``'s order where ``G`` is a NetworkX graph."""
    if which is None:
        return g.labels.tolist()
    if _is_networkx(G):
        return list(G.nbunch_iter(which))
    return list(g.labels[g.index_of(which if np.ndim(which) else [which])].tolist())


def closeness_centrality(G, u=None, distance=None, wf_improved=True, *,
                         backend: str = "auto", algorithm: str = "auto"):
    """NetworkX's ``closeness_centrality``: for each vertex ``(r - 1) / s``, where ``r``
    vertices (itself included) reach it at distances summing to ``s``; with
    ``wf_improved``, times ``(r - 1) / (n - 1)`` (Wasserman and Faust's scaling for
    graphs that are not connected).  ``distance``: the edge attribute (None: hops).
    Returns a dict, or one vertex's value where ``u`` is given.

    >>> import networkx as nx, mgapsp
    >>> round(mgapsp.closeness_centrality(nx.path_graph(3))[1], 3)
    1.0
    """
    g = _graph(G, distance)
    if u is not None and _is_networkx(G) and u not in G:
        raise _error(G, f"Node {u} not found in graph" if distance is not None
                     else f"Source {u} is not in G", "NodeNotFound")
    _no_negative(G, g, "closeness_centrality")
    nodes = [u] if u is not None else g.labels.tolist()
    if _is_networkx(G) and G.is_directed():
        # NetworkX searches G.reverse(), calling a weight function on its arcs
        rows = _graph(G.reverse(copy=False), distance)
    else:
        rows = reversed_graph(g) if _into(G, g) else g
    red = row_metrics(rows, None if u is None else [u], backend=backend,
                      algorithm=algorithm)
    c = metric_values(red, g.n)["closeness"]
    if not wf_improved and g.n > 1:      # without the scaling
        r = red["reachable"].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where((red["total"] > 0), (r - 1.0) / red["total"], 0.0)
    out = dict(zip(nodes, c.tolist()))
    return out[u] if u is not None else out


def harmonic_centrality(G, nbunch=None, distance=None, sources=None, *,
                        backend: str = "auto", algorithm: str = "auto") -> dict:
    """NetworkX's ``harmonic_centrality``: for each vertex of ``nbunch`` (default all)
    the sum of ``1 / d(v, u)`` over the vertices ``v`` of ``sources`` (default all)
    that reach it at a positive distance ``d``.  ``distance``: the edge attribute
    (None: hops).

    >>> import networkx as nx, mgapsp
    >>> mgapsp.harmonic_centrality(nx.path_graph(3))[0]
    1.5
    """
    g = _graph(G, distance)
    _no_negative(G, g, "harmonic_centrality")
    targets = _nodes(G, g, nbunch)
    # NetworkX sums the distances from each source into each vertex, on any graph
    rows = reversed_graph(g) if g.directed else g
    if sources is None:
        red = row_metrics(rows, targets, backend=backend, algorithm=algorithm)
        return dict(zip(targets, _terms(red["harmonic"])))
    # only the distances from ``sources``: the columns of the reversed rows
    from .api import apsp

    froms = _nodes(G, g, sources)
    out = dict.fromkeys(targets, 0)
    if not froms or not targets:
        return out
    block = np.asarray(apsp(rows, sources=targets, targets=froms, backend=backend,
                            algorithm=algorithm), dtype=np.float64)
    with np.errstate(divide="ignore"):
        h = np.sum(1.0 / block, axis=1, where=np.isfinite(block) & (block > 0))
    return dict(zip(targets, _terms(h)))


def _terms(h: np.ndarray) -> list:
    """Harmonic sums as NetworkX gives them: the int 0 where no term was added (a sum
    of positive reciprocals is 0 only then)."""
    return [0 if x == 0 else x for x in h.tolist()]


def eccentricity(G, v=None, sp=None, weight=None, *, backend: str = "auto",
                 algorithm: str = "auto"):
    """NetworkX's ``eccentricity``: each vertex's largest distance to another.  Raises
    NetworkX's error where a vertex does not reach every other.  ``sp`` (NetworkX's
    precomputed lengths) is refused: there is nothing to compute.

    >>> import networkx as nx, mgapsp
    >>> mgapsp.eccentricity(nx.path_graph(4))
    {0: 3, 1: 2, 2: 2, 3: 3}
    """
    if sp is not None:
        raise MgapspError("sp= gives the lengths already; use NetworkX's eccentricity")
    g = _graph(G, weight)
    nodes = _nodes(G, g, v)
    e = _eccentricities(G, g, nodes, backend, algorithm, _int_lengths(G, g, weight))
    if v is not None and (not _is_networkx(G) or v in G):
        return e[v]
    return e


def _eccentricities(G, g: Graph, nodes: list, backend: str, algorithm: str,
                    ints: bool) -> dict:
    """``{node: eccentricity}``: ints where ``ints`` (NetworkX's type for them); a
    vertex alone, 0 (NetworkX's max keeps the source's own int 0)."""
    red = row_metrics(g, nodes, backend=backend, algorithm=algorithm)
    if (red["reachable"] < g.n).any():
        raise _error(G, "Found infinite path length because the digraph is not strongly "
                     "connected" if _into(G, g) else "Found infinite path length because "
                     "the graph is not connected")
    return {v: 0 if top == 0 else int(top) if ints else float(top)
            for v, top in zip(nodes, red["eccentricity"].tolist())}


def diameter(G, e=None, usebounds=False, weight=None, *, backend: str = "auto",
             algorithm: str = "auto"):
    """NetworkX's ``diameter``: the largest eccentricity (``e``: eccentricities
    already known).  ``usebounds`` changes nothing here: every row is reduced.

    >>> import networkx as nx, mgapsp
    >>> mgapsp.diameter(nx.cycle_graph(6))
    3
    """
    if e is None:
        g = _graph(G, weight)
        e = _eccentricities(G, g, g.labels.tolist(), backend, algorithm,
                            _int_lengths(G, g, weight))
    return max(e.values())


def average_shortest_path_length(G, weight=None, method=None, *, backend: str = "auto"):
    """NetworkX's ``average_shortest_path_length``: the mean distance over the
    ``n (n - 1)`` ordered pairs of distinct vertices, which must all be connected
    (strongly, for a directed graph).  ``method`` as NetworkX's names it: its search
    (``"unweighted"``, ``"dijkstra"``, ``"bellman-ford"``, ``"floyd-warshall"``,
    ``"floyd-warshall-numpy"``) runs as mgapsp's algorithm of that name.

    >>> import networkx as nx, mgapsp
    >>> mgapsp.average_shortest_path_length(nx.path_graph(5))
    2.0
    """
    algorithms = {"unweighted": "auto", "dijkstra": "dijkstra",
                  "bellman-ford": "bellman-ford", "floyd-warshall": "floyd-warshall",
                  "floyd-warshall-numpy": "floyd-warshall"}
    if method is None:
        method = "unweighted" if weight is None else "dijkstra"
    if method not in algorithms:
        raise ValueError(f"method not supported: {method}")
    g = _graph(G, None if method == "unweighted" else weight)
    n = g.n
    if n == 0:
        raise _error(G, "the null graph has no paths, thus there is no average shortest "
                     "path length", "NetworkXPointlessConcept")
    if n == 1:
        return 0
    red = row_metrics(g, None, backend=backend, algorithm=algorithms[method])
    if (red["reachable"] < n).any():
        raise _error(G, "Graph is not strongly connected." if g.directed
                     else "Graph is not connected.")
    return float(red["total"].sum()) / (n * (n - 1))


def distance_histogram(G, sources=None, weight=None, *, backend: str = "auto",
                       algorithm: str = "auto") -> DistanceHistogram:
    """The distribution of the distances from ``sources`` (labels; default every
    vertex) to every other vertex, without the matrix: ``counts, edges = h`` as
    :func:`numpy.histogram` gives them, plus ``h.unreachable`` (pairs with no path)
    and ``h.pairs``.  The bins are fixed (16 to an octave, each 1/16 of it wide; every
    integer below 32 has its own, so hop counts are exact), the same for every graph
    (:mod:`mgapsp.reductions`); ``weight``: the edge attribute of a NetworkX graph
    (None: hops).

    >>> import networkx as nx, mgapsp
    >>> counts, edges = mgapsp.distance_histogram(nx.path_graph(4))
    >>> counts.tolist(), edges.tolist()
    ([6, 4, 2], [1.0, 2.0, 3.0, 4.0])
    """
    g = _graph(G, weight)
    froms = None if sources is None else _nodes(G, g, sources)
    red = row_metrics(g, froms, backend=backend, algorithm=algorithm, histogram=True)
    unreachable = int(len(red["reachable"]) * g.n - red["reachable"].sum())
    return _histogram(red["histogram"], unreachable, integral=g.integral_weights)


# -- betweenness: Brandes' dependencies, each source's search and ties as NetworkX's ----
# On the CPU each source's search and its dependencies are NetworkX's
# (mgapsp.cpu_sssp.brandes): Dijkstra's ties decided by == on float64 distances summed
# in NetworkX's order, hops without a weight.  On a GPU a batch's distances come from
# the batched searches, and a tie is == on them (mgapsp.cuda.brandes): with positive
# weights every search's distance is the least fixed point of d(v) = min d(u) + w
# rounded, NetworkX's own, as long as the sums are made left to right along a path
# (Bellman-Ford and Dijkstra in float64; a hierarchy's shortcuts and Floyd-Warshall add
# sub-paths, so they serve integer weights only, whose sums are exact).  Zero weights
# make the DAG's order a matter of the search's own order: the CPU answers them.  Only
# the sums are kept, added in another order than NetworkX's (its values to about
# 1e-15 relative).  The scaling is NetworkX 3.6's.

def betweenness_centrality(G, k=None, normalized=True, weight=None, endpoints=False,
                           seed=None, *, backend: str = "auto"):
    """NetworkX's ``betweenness_centrality``: for each vertex the sum over pairs
    ``(s, t)`` of the fraction of shortest ``s``-``t`` paths through it; ``k``: from
    ``k`` sources drawn by ``seed`` (a ``random.Random``, an int, or None) as NetworkX
    draws them.  Returns a dict keyed by vertex.

    >>> import networkx as nx, mgapsp
    >>> mgapsp.betweenness_centrality(nx.path_graph(3))
    {0: 0.0, 1: 1.0, 2: 0.0}
    """
    g, labels = _read_for_paths(G, weight, "betweenness_centrality")
    if k == g.n:
        k = None
    sources, sampled = _drawn_sources(G, labels, k, seed)
    bc, _ = _dependencies(g, sources, endpoints=endpoints, backend=backend)
    directed = G.is_directed() if _is_networkx(G) else g.directed
    scale = betweenness_scale(g.n, sampled, normalized=normalized, directed=directed,
                    endpoints=endpoints)
    return dict(zip(labels, (bc * scale).tolist()))


def edge_betweenness_centrality(G, k=None, normalized=True, weight=None, seed=None, *,
                                backend: str = "auto"):
    """NetworkX's ``edge_betweenness_centrality``: for each edge the sum over pairs of
    the fraction of shortest paths along it.  Returns a dict keyed by edge, as
    ``G.edges()`` orients them (other inputs: each arc, or each undirected edge once
    from its lower vertex)."""
    if _is_networkx(G) and G.is_multigraph():
        raise MgapspError("edge_betweenness_centrality of a multigraph keys its edges; "
                          "use NetworkX for it")
    g, labels = _read_for_paths(G, weight, "edge_betweenness_centrality")
    sources, sampled = _drawn_sources(G, labels, k, seed)
    _, ebc = _dependencies(g, sources, endpoints=False, backend=backend, edges=True)
    directed = G.is_directed() if _is_networkx(G) else g.directed
    scale = betweenness_scale(g.n, sampled, normalized=normalized, directed=directed,
                    endpoints=True)
    edges = _edges(G, g, labels, directed)
    # an arc a weight function hid (None) is on no path: 0, as NetworkX leaves it
    return {key: float(((ebc[a] if a >= 0 else 0.0)
                        + (ebc[b] if b >= 0 and b != a else 0.0)) * scale)
            for key, a, b in edges}


def betweenness_centrality_subset(G, sources, targets, normalized=False, weight=None):
    """NetworkX's ``betweenness_centrality_subset``: for each vertex the sum over
    ``s`` in ``sources`` (in turn, as given) and ``t`` in ``targets`` of the fraction
    of shortest ``s``-``t`` paths through it, scaled as NetworkX scales it.  A dict
    keyed by vertex.  NetworkX's own Brandes on every CPU core
    (:mod:`mgapsp.cpu_sssp.brandes`), its sums added in another order.

    >>> import networkx as nx, mgapsp
    >>> mgapsp.betweenness_centrality_subset(nx.path_graph(4), [0], [3])
    {0: 0.0, 1: 0.5, 2: 0.5, 3: 0.0}
    """
    g, labels = _read_for_paths(G, weight, "betweenness_centrality_subset")
    index = {v: i for i, v in enumerate(labels)}
    missing = [s for s in sources if s not in index]
    if missing:
        raise _error(G, f"Source {missing[0]!r} is not in G", "NodeNotFound")
    src = np.array([index[s] for s in sources], dtype=np.int64)
    mask = np.zeros(g.n, dtype=bool)
    mask[[index[t] for t in set(targets) if t in index]] = True
    bc, _ = _cpu_dependencies(g, src, targets=mask)
    directed = G.is_directed() if _is_networkx(G) else g.directed
    scale = betweenness_scale(g.n, None, normalized=normalized, directed=directed,
                              endpoints=False)
    return dict(zip(labels, (bc * scale).tolist()))


def _read_for_paths(G, weight, name: str) -> tuple[Graph, list]:
    g = _graph(G, weight)
    _no_negative(G, g, name)
    return g, g.labels.tolist()


def _drawn_sources(G, labels: list, k, seed) -> tuple[np.ndarray, np.ndarray | None]:
    """The sources as indices, in NetworkX's order, and which vertices were drawn
    (None: every one)."""
    n = len(labels)
    if k is None:
        return np.arange(n, dtype=np.int64), None
    if seed is None or isinstance(seed, int):
        import random

        seed = random.Random(seed)
    drawn = seed.sample(list(G.nodes()) if _is_networkx(G) else labels, k)
    index = {v: i for i, v in enumerate(labels)}
    sources = np.array([index[v] for v in drawn], dtype=np.int64)
    sampled = np.zeros(n, dtype=bool)
    sampled[sources] = True
    return sources, sampled


def _dependencies(g: Graph, sources: np.ndarray, *, endpoints: bool, backend: str,
                  edges: bool = False):
    """Brandes' dependencies of ``sources`` summed, per vertex and per arc (None
    unless ``edges``), on the GPU where it gives NetworkX's ties, else the CPU."""
    chosen = resolve_backend(backend)
    if chosen == "gpu" and g.m and len(sources):
        if g.min_weight > 0:
            impl = get_backend("gpu")
            plan = _plan(g, g.labels[sources], "gpu", "auto", impl)
            algorithm = brandes_algorithm(g, plan.algorithm, "auto")
            return impl.dependencies(g, sources, algorithm=algorithm, dtype=plan.dtype,
                                     batch_size=plan.batch_size,
                                     checked32=plan.checked32, endpoints=endpoints,
                                     edges=edges)
        if backend == "gpu":
            raise UnsupportedError("betweenness with zero-weight edges runs on the cpu "
                                   "backend: their ties follow the search's order")
    bc, ebc = _cpu_dependencies(g, sources, endpoints=endpoints)
    return bc, (ebc if edges else None)


def _cpu_dependencies(g: Graph, sources: np.ndarray, *, endpoints: bool = False,
                      targets=None):
    """NetworkX's own Brandes from ``sources`` on every core: the sums per vertex and
    per arc (:func:`mgapsp.cpu_sssp.brandes.betweenness_rows`)."""
    brandes = compiled("mgapsp.cpu_sssp.brandes")
    return brandes.betweenness_rows(g.indptr, g.indices, g.weights, sources,
                                    endpoints=endpoints, targets=targets,
                                    parts=4 * threads())


def _edges(G, g: Graph, labels: list, directed: bool) -> list:
    """``(key, arc, reverse arc or -1)`` for each edge: arcs as positions in ``g``'s
    CSR (an undirected edge is both of its arcs)."""
    index = {v: i for i, v in enumerate(labels)}

    def arc(u: int, v: int) -> int:
        lo, hi = g.indptr[u], g.indptr[u + 1]
        at = lo + int(np.searchsorted(g.indices[lo:hi], v))
        return at if at < hi and g.indices[at] == v else -1

    if _is_networkx(G):
        pairs = [(u, v) for u, v in G.edges()]
    else:
        src = g.sources_of_edges
        pairs = [(labels[a], labels[b]) for a, b in zip(src.tolist(), g.indices.tolist())
                 if directed or a <= b]
    out = []
    for u, v in pairs:
        a, b = index[u], index[v]
        out.append(((u, v), arc(a, b), -1 if directed else arc(b, a)))
    return out
