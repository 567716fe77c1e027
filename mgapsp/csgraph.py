"""Drop-in replacements for the shortest-path functions of :mod:`scipy.sparse.csgraph`.

Same arguments and defaults, inputs read as SciPy reads them, SciPy's results (float64
distances, int32 predecessors with -9999 for none, one row for a scalar index) and
errors (:class:`mgapsp.NegativeCycleError` is a SciPy ``NegativeCycleError``).  Where a
CUDA device is visible the distances come from mgapsp's GPU kernels in float64; what
they cannot answer exactly as SciPy would (``limit``, ``min_only``, Dijkstra on negative
weights, predecessors, which the GPU gives in float32 only, no edge or a non-finite
weight, a device too small) SciPy answers, as it answers everything without a GPU.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph as _scipy_csgraph

from .algorithms import BELLMAN_FORD, DIJKSTRA, FLOYD_WARSHALL, JOHNSON, Algorithm
from .backends import Backend, get_backend
from .backends.potentials import find_negative_cycle
from .gpu_count import gpu_count
from .errors import (GraphFormatError, InsufficientMemoryError, MgapspError,
                     NegativeCycleError, UnsupportedError, quote)
from .graph import Graph
from .plan import choose_dtype

__all__ = ["shortest_path", "dijkstra", "bellman_ford", "johnson", "floyd_warshall"]

NULL_IDX = -9999                       # SciPy's "no predecessor"
#: SciPy's method -> (mgapsp's algorithm, SciPy's function)
_METHODS = {"FW": (FLOYD_WARSHALL, "floyd_warshall"), "D": (DIJKSTRA, "dijkstra"),
            "BF": (BELLMAN_FORD, "bellman_ford"), "J": (JOHNSON, "johnson")}
Answer = np.ndarray | tuple            # distances, or (distances, predecessors[, sources])


def shortest_path(csgraph: Any, method: str = "auto", directed: bool = True,
                  return_predecessors: bool = False, unweighted: bool = False,
                  overwrite: bool = False, indices: Any = None) -> Answer:
    """Shortest-path distances, as :func:`scipy.sparse.csgraph.shortest_path`.

    Parameters
    ----------
    csgraph : array_like, masked array or sparse matrix/array, shape (N, N)
        Dense: 0, ``inf`` and NaN are no edge; masked: masked entries are no edge;
        sparse: every stored entry, explicit zeros included, is an edge.
    method : {'auto', 'FW', 'D', 'BF', 'J'}
        'auto' chooses as SciPy does: FW for at least N**2/4 edges and no ``indices``,
        else J for negative weights, else D.
    directed : bool
        False: every edge runs both ways (the lighter one where both are given).
    return_predecessors, unweighted, overwrite : bool
        Also return predecessors; every edge weighs 1; FW may overwrite a dense input.
    indices : int or array_like of int, optional
        Rows to compute (negative ones count from the end); all when None.

    Returns
    -------
    dist_matrix : ndarray of float64, shape ``indices.shape + (N,)``
    predecessors : ndarray of int32, same shape, -9999 for none (``return_predecessors``)

    Examples
    --------
    >>> from mgapsp import shortest_path
    >>> shortest_path([[0, 1, 0], [0, 0, 2], [4, 0, 0]], indices=[0, 2])
    array([[0., 1., 3.],
           [4., 5., 0.]])
    >>> dist, pred = shortest_path([[0, 1, 0], [0, 0, 2], [4, 0, 0]], indices=0,
    ...                            return_predecessors=True)
    >>> pred
    array([-9999,     0,     1], dtype=int32)
    """
    csgraph = _checked(csgraph)
    if method == "auto":
        method = _auto_method(csgraph, indices)
    if method not in ("FW", "D", "BF", "J"):
        raise MgapspError(f"unrecognized method {method!r}; choose 'auto', 'FW', 'D', 'BF' or 'J'")
    if method == "FW":
        if indices is not None:
            raise UnsupportedError("Cannot specify indices with method == 'FW'.")
        return floyd_warshall(csgraph, directed, return_predecessors, unweighted, overwrite)
    run = {"D": dijkstra, "BF": bellman_ford, "J": johnson}[method]
    return run(csgraph, directed, indices, return_predecessors, unweighted)


def dijkstra(csgraph: Any, directed: bool = True, indices: Any = None,
             return_predecessors: bool = False, unweighted: bool = False,
             limit: float = np.inf, min_only: bool = False) -> Answer:
    """Dijkstra's algorithm, as :func:`scipy.sparse.csgraph.dijkstra`.

    Parameters as in :func:`shortest_path`, and ``limit`` (distances above it are
    ``inf``) and ``min_only`` (one row: the distance from the nearest of ``indices``;
    with ``return_predecessors`` also that source per vertex).  Negative weights: SciPy
    warns and answers (inaccurately); a negative cycle reachable from ``indices``, where
    SciPy's Dijkstra never returns, raises :class:`mgapsp.NegativeCycleError`.

    >>> from mgapsp import dijkstra
    >>> dijkstra([[0, 1, 0], [0, 0, 2], [4, 0, 0]], indices=0, limit=2)
    array([ 0.,  1., inf])
    """
    if isinstance(limit, (str, bytes)):          # as SciPy: no text for a number
        raise TypeError(f"must be real number, not {type(limit).__name__}")
    if float(limit) < 0:
        raise MgapspError(f"limit must be >= 0, got {limit}")
    return _solve("D", locals(), kernels=float(limit) == np.inf and not min_only)


def bellman_ford(csgraph: Any, directed: bool = True, indices: Any = None,
                 return_predecessors: bool = False, unweighted: bool = False) -> Answer:
    """Bellman-Ford, as :func:`scipy.sparse.csgraph.bellman_ford`.

    Parameters and returns as in :func:`shortest_path`; a negative cycle reachable from
    ``indices`` raises :class:`mgapsp.NegativeCycleError`.

    >>> from mgapsp import bellman_ford
    >>> bellman_ford([[0, 3, 0], [0, 0, -2], [4, 0, 0]], indices=0)
    array([0., 3., 1.])
    """
    return _solve("BF", locals())


def johnson(csgraph: Any, directed: bool = True, indices: Any = None,
            return_predecessors: bool = False, unweighted: bool = False) -> Answer:
    """Johnson's algorithm, as :func:`scipy.sparse.csgraph.johnson`.

    Parameters and returns as in :func:`shortest_path`; any negative cycle raises
    :class:`mgapsp.NegativeCycleError`.  ``unweighted``: Dijkstra, as in SciPy.

    >>> from mgapsp import johnson
    >>> johnson([[0, 3, 0], [0, 0, -2], [4, 0, 0]])
    array([[ 0.,  3.,  1.],
           [ 2.,  0., -2.],
           [ 4.,  7.,  0.]])
    """
    if unweighted:
        return dijkstra(csgraph, directed, indices, return_predecessors, unweighted)
    return _solve("J", locals())


def floyd_warshall(csgraph: Any, directed: bool = True, return_predecessors: bool = False,
                   unweighted: bool = False, overwrite: bool = False) -> Answer:
    """Floyd-Warshall, as :func:`scipy.sparse.csgraph.floyd_warshall`.

    Parameters and returns as in :func:`shortest_path`.  As in SciPy, the diagonal is
    ignored and a masked input's zeros are no edge either.  Sparse formats but CSR, CSC
    and LIL, which SciPy refuses, are read through ``tocsr()``.

    >>> from mgapsp import floyd_warshall
    >>> floyd_warshall([[0, 1, 0], [0, 0, 2], [4, 0, 0]], directed=False)
    array([[0., 1., 3.],
           [1., 0., 2.],
           [3., 2., 0.]])
    """
    csgraph = _checked(csgraph)
    if sp.issparse(csgraph) and csgraph.format not in ("csr", "csc", "lil"):
        csgraph = csgraph.tocsr()
    return _solve("FW", locals())


def _checked(csgraph: Any) -> Any:
    """The input as SciPy accepts it (sparse, masked or an ndarray), 2-D and square."""
    if not (sp.issparse(csgraph) or np.ma.isMaskedArray(csgraph)):
        try:
            csgraph = np.asarray(csgraph)
        except ValueError:             # nested sequences of uneven lengths
            raise GraphFormatError("graph should be a square array, got nested sequences "
                                   "of uneven lengths") from None
    if csgraph.ndim != 2:
        raise GraphFormatError(f"graph should have two dimensions, got shape {csgraph.shape}")
    if csgraph.shape[0] != csgraph.shape[1]:
        raise GraphFormatError(f"graph should be a square array, got shape {csgraph.shape}")
    if csgraph.dtype.kind in "SUV":    # SciPy's comparisons refuse text: a TypeError
        raise TypeError(f"graph entries must be numbers, got dtype {csgraph.dtype}")
    return csgraph


def _sources(indices: Any, n: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """The source rows (int64) and the answer's shape, from ``indices`` as SciPy reads it."""
    if indices is None:
        return np.arange(n, dtype=np.int64), (n, n)
    try:
        idx = np.array(indices, order="C", dtype=np.int32)
    except ValueError as exc:          # NaN, text, uneven nesting: SciPy's ValueError
        raise MgapspError(f"indices must be integers: {quote(str(exc), 100)[1:-1]}") from None
    shape = idx.shape + (n,)
    idx = np.atleast_1d(idx).reshape(-1).astype(np.int64)
    idx[idx < 0] += n
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        raise MgapspError(f"indices out of range 0...N: N={n}, got {int(idx[bad][0])}")
    return idx, shape


def _auto_method(csgraph: Any, indices: Any) -> str:
    """SciPy's choice for ``method='auto'``."""
    if sp.issparse(csgraph):
        count = csgraph.nnz
        edges = csgraph.data if csgraph.format in ("csr", "csc", "coo") else csgraph.tocoo().data
    elif np.ma.isMaskedArray(csgraph):
        count, edges = csgraph.count(), csgraph.compressed()
    else:
        edges = csgraph[np.isfinite(csgraph) & (csgraph != 0)]
        count = edges.size
    if indices is not None or count < csgraph.shape[0] ** 2 / 4:
        return "J" if np.any(edges < 0) else "D"
    return "FW"


def _edges(csgraph: Any, floyd: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, weight)`` of every edge SciPy reads in ``csgraph``; ``floyd``:
    Floyd-Warshall's reading, where a masked array's zeros are no edge either."""
    if sp.issparse(csgraph):
        csr = csgraph.tocsr()          # sums a COO's duplicates, as SciPy's tocsr() does
        src = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        return src, csr.indices, np.asarray(csr.data, dtype=np.float64)
    if np.ma.isMaskedArray(csgraph):
        data = np.asarray(np.ma.getdata(csgraph), dtype=np.float64)
        keep = ~np.ma.getmaskarray(csgraph) & ((data != 0) if floyd else True)
    else:
        data = np.asarray(csgraph, dtype=np.float64)
        keep = np.isfinite(data) & (data != 0)
    src, dst = np.nonzero(keep)
    return src, dst, data[src, dst]


def _graph(csgraph: Any, method: str, directed: bool, unweighted: bool) -> Graph | None:
    """The canonical graph of what SciPy's ``method`` reads in ``csgraph``, or None where
    the kernels cannot answer as SciPy does: no edge, a non-finite weight, or Dijkstra
    on negative weights (SciPy warns and goes on)."""
    src, dst, w = _edges(csgraph, floyd=method == "FW")
    if method == "FW":                 # Floyd-Warshall ignores the diagonal
        off = src != dst
        src, dst, w = src[off], dst[off], w[off]
    if not len(w) or not np.isfinite(w).all() or (method == "D" and (w < 0).any()):
        return None
    return Graph.from_edges(src, dst, None if unweighted else w, n=csgraph.shape[0],
                            directed=directed)


@functools.cache
def _gpu_visible() -> bool:
    return gpu_count() > 0 and importlib.util.find_spec("cupy") is not None


def _kernel_backend() -> Backend | None:
    """The backend whose kernels answer here: the GPU's, or None (SciPy answers)."""
    return get_backend("gpu") if _gpu_visible() else None


def _call_scipy(name: str, csgraph: Any, **kwargs: Any) -> Answer:
    """SciPy's own answer (``scipy.sparse.csgraph.<name>``)."""
    return getattr(_scipy_csgraph, name)(csgraph, **kwargs)


def _solve(method: str, args: dict, kernels: bool = True) -> Answer:
    """The kernels' answer in SciPy's shapes where they can give SciPy's, else SciPy's.
    ``args``: the SciPy function's arguments (``locals()`` of ours)."""
    kwargs = dict(args)
    csgraph = _checked(kwargs.pop("csgraph"))
    sources, shape = _sources(kwargs.get("indices"), csgraph.shape[0])
    directed, predecessors = kwargs["directed"], kwargs["return_predecessors"]
    if method == "D" and not kwargs["unweighted"]:
        _reachable_negative_cycle(csgraph, directed, sources)
    backend = _kernel_backend() if kernels and len(sources) else None
    graph = None if backend is None else _graph(csgraph, method, directed, kwargs["unweighted"])
    if graph is not None:
        try:
            dist, pred = _run(backend, graph, _METHODS[method][0], sources, predecessors)
            if kwargs.get("overwrite") and type(csgraph) is np.ndarray and \
                    csgraph.dtype == np.float64 and csgraph.flags.c_contiguous:
                csgraph[...] = dist    # SciPy's overwrite: the result goes into the input
                dist = csgraph
            return _scipy_shapes(dist, pred, shape)
        except (UnsupportedError, InsufficientMemoryError):
            pass                       # e.g. predecessors in float64: SciPy answers
    try:
        return _call_scipy(_METHODS[method][1], csgraph, **kwargs)
    except _scipy_csgraph.NegativeCycleError as err:
        if isinstance(err, NegativeCycleError):
            raise
        raise _negative_cycle(csgraph, method, directed, err) from err


def _run(backend: Backend, graph: Graph, algorithm: Algorithm, sources: np.ndarray,
         predecessors: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows ``sources`` from ``backend`` in float64, in batches that fit its memory;
    predecessors (-1 for none) when asked."""
    # on the GPU, float32 where it is exact (or checked batch by batch, see
    # plan.choose_dtype) computes and copies half the bytes; the answer is float64.
    # Predecessors stay as they were: float64, which on the GPU means SciPy's answer
    try:
        dtype, _, checked = choose_dtype(graph, "auto")
    except MgapspError:         # sums past float64's range: SciPy's inf, as SciPy
        dtype, checked = "float64", False
    compute = np.dtype(dtype if backend.name == "gpu" and not predecessors else np.float64)
    step, free = len(sources), backend.memory_available()
    while step > 1 and backend.memory_needed(graph, step, algorithm=algorithm,
                                             dtype=compute,
                                             predecessors=predecessors) > free:
        step = (step + 1) // 2
    potentials = backend.potentials(graph) if algorithm.potentials else None
    dist = np.empty((len(sources), graph.n), dtype=compute)
    pred = np.empty((len(sources), graph.n), dtype=np.int32) if predecessors else None
    fill = backend.fill_rows_exact if checked and compute == np.float32 else backend.fill_rows
    wide = fill(graph, sources, dist, pred, batch_size=step, algorithm=algorithm,
                potentials=potentials)
    return (dist if wide is None else wide), pred


def _scipy_shapes(dist: np.ndarray, pred: np.ndarray | None, shape: tuple) -> Answer:
    """A backend's rows as SciPy returns them: ``shape``, float64, -9999 for no predecessor."""
    dist = np.ascontiguousarray(dist, dtype=np.float64).reshape(shape)
    if pred is None:
        return dist
    return dist, np.where(pred < 0, NULL_IDX, pred).astype(np.int32).reshape(shape)


def _reachable_negative_cycle(csgraph: Any, directed: bool, sources: np.ndarray) -> None:
    """Raise :class:`NegativeCycleError` for a negative cycle reachable from ``sources``."""
    src, dst, w = _edges(csgraph, floyd=False)
    if not (w < 0).any():
        return
    if not directed:
        src, dst, w = np.r_[src, dst], np.r_[dst, src], np.r_[w, w]
    n, k = csgraph.shape[0], len(sources)      # vertex n: a virtual source to all sources
    hops = sp.csr_array((np.ones(len(src) + k), (np.r_[src, np.full(k, n)], np.r_[dst, sources])),
                        shape=(n + 1, n + 1))
    seen = np.zeros(n + 1, dtype=bool)
    seen[_scipy_csgraph.breadth_first_order(hops, n, return_predecessors=False)] = True
    keep = seen[src] & np.isfinite(w)
    if (w[keep] < 0).any():
        find_negative_cycle(Graph.from_edges(src[keep], dst[keep], w[keep], n=n))


def _negative_cycle(csgraph: Any, method: str, directed: bool,
                    err: Exception) -> NegativeCycleError:
    """Ours for SciPy's ``err``, with one negative cycle of the graph where one is found."""
    graph = _graph(csgraph, method, directed, unweighted=False)
    try:
        if graph is not None:
            find_negative_cycle(graph)
    except NegativeCycleError as ours:
        return ours
    return NegativeCycleError([], float("nan"), str(err))
