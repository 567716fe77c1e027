"""Graphs from in-memory objects: SciPy sparse matrices, dense arrays, NetworkX graphs,
edge arrays, data frames (:mod:`.frames`) and paths (through
:func:`mgapsp.readers.read_graph`)."""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from ..errors import GraphFormatError, quote
from ..graph import Graph, check_graph_fits
from .frames import SOURCE, TARGET, from_frame, is_frame

__all__ = ["as_graph", "is_cupy"]


def as_graph(obj, *, directed: bool | None = None, unweighted: bool = False,
             weight="weight", source=SOURCE, target=TARGET) -> Graph:
    """Turn any supported input into a :class:`Graph`.

    Accepts a :class:`Graph`, a path (read with :func:`mgapsp.read_graph`), a SciPy
    sparse matrix or array (explicit zeros are zero-weight edges and a COO's duplicate
    entries are summed, as in ``scipy.sparse.csgraph``), a dense NumPy array or a list
    of lists (0, ``inf`` and NaN off the diagonal are no edge, as in
    ``scipy.sparse.csgraph``), a masked array (masked entries are no edge, an unmasked
    0 is a zero-weight edge, as SciPy's Dijkstra, Johnson and Bellman-Ford read one), a
    NetworkX graph, a data frame (pandas, pyarrow, anything with ``__dataframe__``;
    one row an edge, from column ``source`` to column ``target`` weighing column
    ``weight``, 1 where the frame has no column ``"weight"``) or a tuple ``(src, dst[,
    weight])`` of labels.  ``directed`` defaults to True except for NetworkX graphs,
    which say themselves.  A matrix or a NetworkX graph may have no vertices (the
    answer is empty, as SciPy's); edge arrays and frames without edges, as files
    without, are refused.

    NetworkX graphs keep their node labels, whatever their kind (tuples too), in the
    order of ``G.nodes`` (the rows and columns of a result, as in NetworkX's
    ``floyd_warshall_numpy``).  ``weight`` is the edge attribute holding the weight (1
    where an edge lacks it; a multigraph's parallel edges keep the lightest), or a
    function ``weight(u, v, data)`` returning an edge's weight, or None to hide the
    edge, called as NetworkX's shortest path functions call it: once per direction of
    travel (on an undirected graph for ``u -> v`` and for ``v -> u``), with the edge's
    attributes, or on a multigraph the dict of its parallel edges (``{key: attrs}``).
    An undirected graph whose function weighs the two directions differently is read
    as the directed graph it describes (unless ``directed=False``, which keeps the
    lighter direction).

    Bad input raises one :class:`~mgapsp.errors.GraphFormatError` (an
    :class:`~mgapsp.errors.MgapspError`): a shape that is not square, entries or
    weights that are no real numbers (text, objects, complex), labels that are None or
    sequences, edge arrays of different lengths, or a size (a sparse matrix's shape,
    say) whose graph would not fit in the memory this process can still allocate,
    checked before anything of that size is allocated.

    Examples
    --------
    >>> import mgapsp, networkx as nx
    >>> g = mgapsp.as_graph(nx.grid_2d_graph(2, 2))
    >>> g
    <Graph '': n=4, m=8, undirected, weighted>
    >>> g.labels
    array([(0, 0), (0, 1), (1, 0), (1, 1)], dtype=object)
    >>> mgapsp.apsp(g, sources=(0, 0))
    array([0., 1., 1., 2.], dtype=float32)
    """
    if (source, target) != (SOURCE, TARGET) and not is_frame(obj):
        raise GraphFormatError(f"source= and target= name the columns of a data frame, "
                               f"not of a {type(obj).__name__}")
    if isinstance(obj, Graph):
        if unweighted and obj.weighted:
            return Graph(obj.indptr, obj.indices, np.ones(obj.m), directed=obj.directed,
                         weighted=False, vertex_ids=obj.vertex_ids, name=obj.name)
        return obj
    if is_cupy(obj):            # a CuPy array or cupyx sparse matrix: its host copy
        obj = obj.get()
    if isinstance(obj, (str, os.PathLike)):
        from . import read_graph

        return read_graph(obj, directed=directed, unweighted=unweighted)
    if sp.issparse(obj):
        return _from_scipy(obj, directed, unweighted)
    if isinstance(obj, tuple):
        if len(obj) not in (2, 3):
            raise GraphFormatError(
                f"edge tuple must be (src, dst) or (src, dst, weight), got {len(obj)} items"
            )
        weights = None if (len(obj) == 2 or unweighted) else obj[2]
        return Graph.from_edges(obj[0], obj[1], weights, renumber=True,
                                directed=True if directed is None else directed)
    if _is_networkx(obj):
        return _from_networkx(obj, directed, unweighted, weight)
    if is_frame(obj):           # before __array__: a DataFrame is rows of edges
        return from_frame(obj, directed=directed, unweighted=unweighted, weight=weight,
                          source=source, target=target)
    # a list of lists is a dense matrix, as SciPy reads one (a tuple is edge arrays)
    if isinstance(obj, (np.ndarray, list)) or hasattr(obj, "__array__"):
        return _from_dense(obj, directed, unweighted)
    raise GraphFormatError(f"cannot make a graph from an object of type {type(obj).__name__}")


def is_cupy(obj) -> bool:
    """Whether ``obj`` is a CuPy array or a cupyx sparse matrix (told by its type's
    module: reading one imports no CuPy here)."""
    return type(obj).__module__.split(".")[0] in ("cupy", "cupyx") and hasattr(obj, "get")


def _from_scipy(mat, directed, unweighted) -> Graph:
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise GraphFormatError(f"adjacency matrix must be square, got shape {mat.shape}")
    if mat.dtype.kind not in "biuf":
        raise GraphFormatError(f"adjacency matrix entries must be real numbers, got dtype "
                               f"{mat.dtype}")
    n, entries = int(mat.shape[0]), int(mat.nnz)
    check_graph_fits(f"the {type(mat).__name__} of shape {n:,} x {n:,} declares {n:,} "
                     f"vertices", n, entries if directed in (None, True) else 2 * entries,
                     records=entries)
    # tocsr() sums a COO's duplicate entries, as the matrix means and SciPy's csgraph
    # reads them (a new array: the caller's is left as it was); a CSR keeps its own
    csr = mat.tocsr()
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr.indptr))
    weight = None if unweighted else csr.data
    return Graph.from_edges(row, csr.indices, weight, n=n, empty_ok=True,
                            directed=True if directed is None else directed)


def _from_dense(obj, directed, unweighted) -> Graph:
    """A dense adjacency matrix read as ``scipy.sparse.csgraph``'s Dijkstra, Johnson
    and Bellman-Ford read one: 0, inf and NaN off the diagonal are no edge; in a masked
    array the masked entries (and inf, NaN) are no edge and an unmasked 0 is a
    zero-weight edge; a finite entry on the diagonal is a self-loop."""
    masked = np.ma.getmaskarray(obj) if np.ma.isMaskedArray(obj) else None
    try:
        arr = np.asarray(np.ma.getdata(obj) if masked is not None else obj)
    except (TypeError, ValueError) as exc:      # ragged nesting, a failing __array__
        raise GraphFormatError(f"cannot read {type(obj).__name__} as an adjacency "
                               f"matrix: {str(exc)[:120]}") from None
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise GraphFormatError(f"adjacency matrix must be square, got shape {arr.shape}")
    if arr.dtype.kind == "c":
        raise GraphFormatError(f"adjacency matrix entries must be real numbers, got dtype "
                               f"{arr.dtype}")
    try:
        arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        bad = next((v for v in arr.ravel().tolist() if not _is_real(v)), None)
        shown = "" if bad is None else f"entry {quote(bad)} is not a number; "
        raise GraphFormatError(f"adjacency matrix {shown}entries must be real numbers "
                               f"(dtype {arr.dtype})") from None
    # SciPy reads a masked array's unmasked entries as its edges, zeros included (its
    # Floyd-Warshall alone drops them); an inf or NaN edge never shortens a path
    edge = np.isfinite(arr) & (~masked if masked is not None else arr != 0)
    row, col = np.nonzero(edge)
    weight = None if unweighted else arr[row, col]
    return Graph.from_edges(row, col, weight, n=arr.shape[0], empty_ok=True,
                            directed=True if directed is None else directed)


def networkx_weight(g, weight):
    """NetworkX's weight function for ``weight``: the function itself, else the
    attribute (1 where missing), the least over a multigraph's parallel edges."""
    if callable(weight):
        return weight
    if g.is_multigraph():
        return lambda u, v, keyed: min(attrs.get(weight, 1) for attrs in keyed.values())
    return lambda u, v, data: data.get(weight, 1)


def _symmetric(src: list, dst: list, w: list) -> bool:
    """Whether every arc ``u -> v`` has its reverse of the same weight (an undirected
    NetworkX graph whose weight function does not care about the direction)."""
    arcs = dict(zip(zip(src, dst), w))
    return all(arcs.get((v, u), None) == x for (u, v), x in arcs.items())


def _is_real(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, complex)


def _is_networkx(obj) -> bool:
    return type(obj).__module__.startswith("networkx.")


def _from_networkx(g, directed, unweighted, weight) -> Graph:
    nodes = list(g.nodes)
    # NetworkX nodes are any hashable: integers and text keep their arrays, other
    # kinds (tuples of grid_2d_graph, OSMnx keys, mixed kinds) stay the objects they
    # are, so that sources=[(0, 0)] finds its node and labels give the nodes back
    labels = [v.item() if isinstance(v, np.generic) else v for v in nodes]
    vertex_ids = np.fromiter(labels, dtype=object, count=len(labels))
    index = {v: i for i, v in enumerate(nodes)}
    get = networkx_weight(g, weight)
    src, dst, w = [], [], []
    # NetworkX walks G._adj: every edge from each of its ends on an undirected graph,
    # a multigraph's parallel edges as one dict of them
    for u, nbrs in g.adj.items():
        iu = index[u]
        for v, data in nbrs.items():
            x = 1 if unweighted else get(u, v, data)
            if x is None:       # NetworkX's way to hide an edge
                continue
            src.append(iu)
            dst.append(index[v])
            w.append(x)
    if directed is None:
        directed = g.is_directed() or not _symmetric(src, dst, w)
    # rows and columns in the order of G.nodes, as NetworkX's own matrices
    return Graph.from_edges(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                            None if unweighted else w, n=len(nodes), directed=directed,
                            vertex_ids=vertex_ids, empty_ok=True)
