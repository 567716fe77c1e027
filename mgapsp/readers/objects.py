"""Graphs from in-memory objects: SciPy sparse matrices, dense arrays, NetworkX graphs,
edge arrays (and paths, through :func:`mgapsp.readers.read_graph`)."""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from ..errors import GraphFormatError
from ..graph import Graph

__all__ = ["as_graph"]


def as_graph(obj, *, directed: bool | None = None, unweighted: bool = False) -> Graph:
    """Turn any supported input into a :class:`Graph`.

    Accepts a :class:`Graph`, a path (read with :func:`mgapsp.read_graph`), a SciPy
    sparse matrix or array (explicit zeros are zero-weight edges, as in
    ``scipy.sparse.csgraph``), a dense NumPy array (``inf`` = no edge), a NetworkX
    graph (edge attribute ``weight``, default 1), or a tuple ``(src, dst[, weight])``.
    ``directed`` defaults to True except for NetworkX graphs, which say themselves.
    """
    if isinstance(obj, Graph):
        if unweighted and obj.weighted:
            return Graph(obj.indptr, obj.indices, np.ones(obj.m), directed=obj.directed,
                         weighted=False, vertex_ids=obj.vertex_ids, name=obj.name)
        return obj
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
        weight = None if (len(obj) == 2 or unweighted) else obj[2]
        return Graph.from_edges(obj[0], obj[1], weight,
                                directed=True if directed is None else directed)
    if _is_networkx(obj):
        return _from_networkx(obj, directed, unweighted)
    if isinstance(obj, np.ndarray) or hasattr(obj, "__array__"):
        return _from_dense(np.asarray(obj), directed, unweighted)
    raise GraphFormatError(f"cannot make a graph from an object of type {type(obj).__name__}")


def _from_scipy(mat, directed, unweighted) -> Graph:
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise GraphFormatError(f"adjacency matrix must be square, got shape {mat.shape}")
    coo = sp.coo_array(mat)
    weight = None if unweighted else coo.data
    return Graph.from_edges(coo.row, coo.col, weight, n=mat.shape[0],
                            directed=True if directed is None else directed)


def _from_dense(arr, directed, unweighted) -> Graph:
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise GraphFormatError(f"adjacency matrix must be square, got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    nan = np.isnan(arr) | (arr == -np.inf)
    if nan.any():
        i, j = (int(x[0]) for x in np.nonzero(nan))
        raise GraphFormatError(f"adjacency matrix entry [{i}, {j}] is {arr[i, j]!r}; "
                               "use inf for 'no edge'")
    row, col = np.nonzero(np.isfinite(arr))
    weight = None if unweighted else arr[row, col]
    return Graph.from_edges(row, col, weight, n=arr.shape[0],
                            directed=True if directed is None else directed)


def _is_networkx(obj) -> bool:
    return type(obj).__module__.startswith("networkx.")


def _from_networkx(g, directed, unweighted) -> Graph:
    nodes = list(g.nodes)
    if all(isinstance(v, (int, np.integer)) and v >= 0 for v in nodes):
        index = {v: int(v) for v in nodes}
        n = max(index.values(), default=-1) + 1
        vertex_ids = np.arange(n, dtype=np.int64)
    else:
        index = {v: i for i, v in enumerate(nodes)}
        n = len(nodes)
        vertex_ids = np.arange(n, dtype=np.int64)
    src, dst, w = [], [], []
    for u, v, data in g.edges(data=True):
        src.append(index[u])
        dst.append(index[v])
        w.append(data.get("weight", 1.0))
    if directed is None:
        directed = g.is_directed()
    return Graph.from_edges(src, dst, None if unweighted else w, n=n,
                            directed=directed, vertex_ids=vertex_ids)
