"""Distance rows for the backend's functions: :func:`mgapsp.apsp` over batches of
sources (never an n x n array unless the function returns one), with an algorithm
whose float64 sums are NetworkX's, and the rows as NetworkX's dicts."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from ..api import apsp, resolve_backend
from ..errors import NegativeCycleError
from ..graph import Graph
from .convert import Converted, induced

__all__ = ["ROW_BYTES", "search", "distance_rows", "all_rows", "row_dict", "int_sum",
           "reaches_negative_cycle"]

#: float64 distances held per batch: a large graph is computed in batches of sources,
#: never as one n x n array
ROW_BYTES = 2**27


def _choice(conv: Converted) -> tuple[str, str]:
    """(algorithm, dtype) giving NetworkX's numbers.  Exact integer sums: any (mgapsp's
    own choice).  Otherwise each distance must be NetworkX's left-to-right sum along
    the path, the least fixpoint of ``d[v] = min(d[u] + w)``, which every Dijkstra
    and Bellman-Ford reaches; Johnson (reweighted sums), Floyd-Warshall (sums of
    subpaths) and phast (shortcuts) round differently.  Float sums run on the CPU: the
    GPU's float64 kernels ended an ulp above NetworkX's on some rows (an H100,
    2026-11-26)."""
    if conv.exact:
        return "auto", "auto"
    if conv.negative:
        return "bellman-ford", "float64"
    return "dijkstra", "float64"


def search(conv: Converted) -> tuple[str, str, str]:
    """(backend, algorithm, dtype) whose rows are NetworkX's numbers (:func:`_choice`;
    float sums on the CPU)."""
    return (resolve_backend("auto") if conv.exact else "cpu", *_choice(conv))


def distance_rows(conv: Converted, sources, *, graph: Graph | None = None
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(batch of source indices, float64 rows)`` for ``sources`` in order, from
    ``graph`` (default ``conv.graph``, whose weights ``conv`` describes).  Raises
    :class:`mgapsp.NegativeCycleError` for a negative cycle anywhere in the graph."""
    graph = conv.graph if graph is None else graph
    sources = np.asarray(sources, dtype=np.int64)
    backend, algorithm, dtype = search(conv)
    batch = max(1, ROW_BYTES // (8 * graph.n))
    for start in range(0, len(sources), batch):
        chunk = sources[start:start + batch]
        block = apsp(graph, sources=chunk, algorithm=algorithm, dtype=dtype,
                     backend=backend)
        yield chunk, np.asarray(block, dtype=np.float64)


def all_rows(conv: Converted, *, floyd_warshall: bool = False) -> np.ndarray:
    """The whole (n, n) float64 matrix.  ``floyd_warshall``: the sums of NetworkX's
    ``floyd_warshall_numpy`` (pivots in node order), which only exact sums or the same
    Floyd-Warshall (SciPy's, on the CPU) reproduce."""
    if not floyd_warshall or conv.exact:
        return np.concatenate([b for _, b in distance_rows(conv, np.arange(conv.n))])
    d = apsp(conv.graph, algorithm="floyd-warshall", backend="cpu", dtype="float64")
    return np.ascontiguousarray(d, dtype=np.float64)


def row_dict(conv: Converted, row: np.ndarray, sources=(), *, cutoff=None,
             columns: np.ndarray | None = None) -> dict:
    """One row as NetworkX's ``{node: distance}``: reachable nodes only (within
    ``cutoff``), ``sources`` first at int 0, then the others by distance (NetworkX's
    Dijkstra order; ties in node order), ints for int weights and floats otherwise.
    ``columns``: the node index of each entry of ``row`` (a subgraph's)."""
    keep = np.isfinite(row)
    if cutoff is not None:
        keep &= row <= cutoff
    cols = np.flatnonzero(keep)
    cols = cols[np.argsort(row[cols], kind="stable")]
    values = row[cols]
    if columns is not None:
        cols = columns[cols]
    out = {conv.nodes[s]: 0 for s in sources}
    values = values.astype(np.int64).tolist() if conv.integral else values.tolist()
    nodes = conv.nodes
    for c, v in zip(cols.tolist(), values):
        node = nodes[c]
        if node not in out:
            out[node] = v
    return out


def int_sum(values: np.ndarray, bound: float) -> int:
    """The exact sum of integral distances (each at most ``bound`` in magnitude), as
    NetworkX's sum of Python ints."""
    ints = np.atleast_2d(values).astype(np.int64)
    if bound * ints.shape[1] < 2**62:       # row sums fit int64
        return sum(ints.sum(axis=1).tolist())
    return sum(sum(row) for row in ints.tolist())


def reaches_negative_cycle(graph: Graph) -> np.ndarray:
    """Mask of the vertices from which a negative cycle is reachable (NetworkX's
    Bellman-Ford raises for those sources only).  Each round finds one cycle in what
    is left (mgapsp raises for any) and drops every vertex that reaches it; what
    remains is closed under reachability and free of negative cycles."""
    n = graph.n
    bad = np.zeros(n, dtype=bool)
    # the edges' pattern (a weight of 0 is an edge too)
    pattern = sp.csr_array((np.ones(graph.m, dtype=np.int8), graph.indices, graph.indptr),
                           shape=(n, n))
    while not bad.all():
        keep = np.flatnonzero(~bad)
        try:
            apsp(induced(graph, ~bad), sources=[0])
            return bad
        except NegativeCycleError as err:
            reach = np.zeros(n, dtype=bool)
            reach[keep[np.asarray(err.cycle, dtype=np.int64)]] = True
            while True:             # grow backwards along edges: u reaches v
                grown = reach | (pattern @ reach.astype(np.int8) > 0)
                if (grown == reach).all():
                    break
                reach = grown
            bad |= reach
    return bad
