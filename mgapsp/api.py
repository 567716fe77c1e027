"""The Python API: :func:`apsp`, SciPy's ``shortest_path`` contract at cluster scale."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from . import hierarchy
from .backends import get_backend
from .devices import gpu_count
from .errors import InsufficientMemoryError, MgapspError, UnsupportedError, quote
from .graph import Graph
from .jobs.cluster import connect, one_process
from .jobs.driver import run_job
from .memory import available_memory
from .plan import plan_job, small_job
from .readers import as_graph
from .results import Result

__all__ = ["apsp", "resolve_backend"]


def resolve_backend(backend: str) -> str:
    """``auto`` is ``gpu`` when this process sees a CUDA device, else ``cpu``."""
    if backend == "auto":
        return "gpu" if gpu_count() > 0 else "cpu"
    return backend


def apsp(graph, *, out=None, algorithm: str = "auto", backend: str = "auto",
         dtype: str = "auto", sources=None, targets=None,
         batch_size: int | None = None,
         predecessors: bool = False, client=None, resume: bool = False,
         overwrite: bool = False, directed: bool | None = None,
         unweighted: bool = False, weight="weight", compression: str = "lz4",
         shards: bool = True):
    """All-pairs (or many-to-all) shortest-path distances.

    Parameters
    ----------
    graph : Graph, path, SciPy sparse matrix, ndarray, networkx graph or edge tuple
        See :func:`mgapsp.readers.as_graph`.  Paths are read with :func:`read_graph`.
    out : path, optional
        Zarr store to fill.  Given: the job runs on Dask (``client``, or an embedded
        cluster started for the call) and the store is returned as a :class:`~mgapsp.Result`.
        Omitted: the distances come back as a NumPy array, computed in this process
        (or, with ``client``, on its workers through a temporary store).
    algorithm : {"auto", "bellman-ford", "dijkstra", "johnson", "floyd-warshall", "phast"}
        ``phast``: a contraction hierarchy built once per graph (seconds for a road
        network of a few hundred thousand vertices, kept for the process's next
        calls), then one sweep per batch; for road-like graphs with non-negative
        weights (positive ones for predecessors).  ``auto`` picks it on the GPU once
        the graph's hierarchy is built (by an earlier phast call of this process, or a
        phast job whose store lay in the same folder).
    backend : {"auto", "gpu", "cpu"}
        ``auto`` uses the GPU when CUDA devices are visible.
    dtype : {"auto", "float32", "float64"}
        ``auto`` keeps every answer exact: float32 where the weights are integers and
        every path sum stays within 2**24, else float64.
    sources : label or 1-D sequence of labels, optional
        Rows to compute, as the vertices' labels in the input (``None``: every vertex).
        Integer labels may be given as integers, as text (``"7"``) or as integral
        floats (``2.0`` is 2); a fractional or non-finite float (``1.5``, NaN) is an
        unknown label, never rounded.  Booleans, nested (2-D) sequences, sets and
        other objects that are no label raise :class:`MgapspError`.
    targets : label or 1-D sequence of labels, optional
        Columns to keep (``None``: every vertex), read as ``sources``; many-to-many
        distances.
    batch_size : int, optional
        Sources per batch; chosen from the graph and the device memory when omitted.
    predecessors : bool
        Also return (or store) the predecessor of every target on a shortest path,
        ``-1`` where there is none.
    client : distributed.Client, optional
    resume, overwrite : bool
        What to do with an existing store at ``out``.
    weight : str or callable
        For a NetworkX graph: the edge attribute holding the weight (1 where missing)
        or ``weight(u, v, data)``, as in NetworkX (see :func:`mgapsp.as_graph`).
    compression : {"lz4", "zstd", "none"}
        Codec of a new store's distance (and predecessor) chunks: Blosc with
        bit-shuffle and lz4 (fast) or zstd (smaller), or none.
    shards : bool
        A new store keeps each batch's rows in one file, a Zarr shard of the batch's
        chunks (as cluster file systems want: few, large files); ``False`` writes a
        file per chunk.

    Returns
    -------
    Result (the store, read by label: :class:`mgapsp.Result`), or ndarray of shape
    (len(sources), len(targets)) (a pair with predecessors)

    Raises
    ------
    NegativeCycleError
        The graph has a negative cycle; nothing is written.
    UnknownLabelError
        A source or target that no vertex has (a fractional id among them).
    MgapspError
        Bad input, an impossible option, or a store that would be overwritten.
    """
    sources = _checked_labels(sources, "sources")
    targets = _checked_labels(targets, "targets")
    g = as_graph(graph, directed=directed, unweighted=unweighted, weight=weight)
    options = dict(algorithm=algorithm, dtype=dtype, sources=sources, targets=targets,
                   batch_size=batch_size, predecessors=predecessors)
    if out is None and client is None:
        return _in_process(g, backend=resolve_backend(backend), **options)
    if out is None:
        tmp = tempfile.mkdtemp(prefix="mgapsp-")
        try:
            path = os.path.join(tmp, "result.zarr")
            run_job(g, path, client, backend=backend, **options)
            stored = Result(path)
            dist = stored.distances()
            if predecessors:
                return dist, stored.group["predecessors"][:]
            return dist
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if client is not None:
        run_job(g, out, client, backend=backend, resume=resume, overwrite=overwrite,
                compression=compression, shards=shards, **options)
    else:
        backend = resolve_backend(backend)
        n_sources = g.n if sources is None else np.atleast_1d(np.asarray(sources)).size
        alone = one_process(backend, small=small_job(g, n_sources))
        with connect(backend=backend, processes=not alone) as own:
            run_job(g, out, own, backend=backend, resume=resume, overwrite=overwrite,
                    compression=compression, shards=shards, **options)
    return Result(out)


def _checked_labels(values, what: str):
    """``sources`` or ``targets`` as given, once their shape and kind are checked: one
    label, or a flat sequence of labels (integers, strings, floats, which the graph's
    lookup reads); whether each is a vertex is the graph's to say."""
    if values is None:
        return None
    if isinstance(values, (set, frozenset, dict)):
        raise MgapspError(f"{what} must be one label or a sequence of labels in order, "
                          f"got a {type(values).__name__}")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise MgapspError(f"{what} must be one label or a flat sequence of labels, got "
                          f"nested sequences of uneven lengths") from None
    if arr.ndim > 1:
        raise MgapspError(f"{what} must be one label or a flat (1-D) sequence of labels, "
                          f"got an array of shape {arr.shape}")
    if arr.dtype.kind == "b":
        raise MgapspError(f"{what} are booleans ({quote(arr.ravel()[0])}), not vertex "
                          f"labels; for a mask pass numpy.flatnonzero(mask)")
    if arr.dtype.kind == "c":
        raise MgapspError(f"{what} must be integers or strings, got dtype {arr.dtype}")
    items = (values if isinstance(values, (list, tuple)) else
             arr.ravel().tolist() if arr.dtype.kind == "O" else ())
    for v in items:                     # [1, True] would be [1, 1] as an array
        if isinstance(v, (bool, np.bool_)):
            raise MgapspError(f"{what} hold a boolean ({v}), not a vertex label")
        if v is None or isinstance(v, (list, tuple, dict, set, frozenset, complex,
                                       np.ndarray)):
            raise MgapspError(f"{what} hold {quote(v)}, which is no vertex label")
    return values


def _in_process(graph: Graph, *, backend, algorithm, dtype, sources, targets, batch_size,
                predecessors):
    impl = get_backend(backend)
    ready = algorithm == "auto" and backend == "gpu" and hierarchy.known(graph)

    def make_plan(may_build: bool):
        return plan_job(graph, algorithm=algorithm, backend=backend, dtype=dtype,
                        sources=sources, batch_size=batch_size, predecessors=predecessors,
                        n_workers=1, memory=impl.memory_available(), targets=targets,
                        hierarchy_ready=ready, may_build=may_build)

    plan = make_plan(may_build=True)
    if plan.algorithm == "phast" and algorithm == "auto" and not ready:
        try:                    # built here, before the result is allocated
            hierarchy.for_graph(graph)
        except UnsupportedError:
            # auto took the graph for a road network, but its hierarchy fills in
            plan = make_plan(may_build=False)
    shape = (plan.n_sources, plan.n_targets(graph.n))
    needed = shape[0] * shape[1] * (np.dtype(plan.dtype).itemsize + (4 if predecessors
                                                                      else 0))
    free = host_memory_available()
    if needed > free:
        raise InsufficientMemoryError(
            f"a result of {shape[0]:,} x {shape[1]:,} {plan.dtype} in this process",
            needed, free, "pass out= to stream the rows into a Zarr store instead")
    dist = np.empty(shape, dtype=plan.dtype)
    pred = np.empty((plan.n_sources, graph.n), dtype=np.int32) if predecessors else None
    if graph.m == 0:            # no edges: each vertex reaches itself only
        dist.fill(np.inf)
        cols = np.arange(graph.n) if plan.targets is None else plan.targets
        dist[plan.sources[:, None] == cols[None, :]] = 0
        if predecessors:
            pred.fill(-1)
        return (dist, pred) if predecessors else dist
    potentials = impl.potentials(graph) if graph.has_negative_weights else None
    impl.fill_rows(graph, plan.sources, dist, pred, batch_size=plan.batch_size,
                   algorithm=plan.algorithm, potentials=potentials, columns=plan.targets)
    return (dist, pred) if predecessors else dist


def host_memory_available() -> int:
    """Bytes of host memory this process can still allocate now."""
    return available_memory()