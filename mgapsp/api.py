"""The Python API: :func:`apsp`, SciPy's ``shortest_path`` contract at cluster scale."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from . import hierarchy
from .algorithms import BUILT_IN, needs_hierarchy
from .backends import get_backend
from .gpu_count import gpu_count
from .errors import InsufficientMemoryError, MgapspError, UnsupportedError, quote
from .graph import Graph
from .progress import ProgressBar
from .memory import available_memory
from .plan import choose_dtype, plan_job, small_job
from .readers import as_graph, is_cupy

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
         unweighted: bool = False, weight="weight", source="source", target="target",
         compression: str = "auto", shards: bool = True, progress: bool = False,
         metrics=(), distances: bool = True, device: bool | None = None):
    """All-pairs (or many-to-all) shortest-path distances.

    Parameters
    ----------
    graph : Graph, path, SciPy sparse matrix, ndarray, list of lists, masked array,
            networkx graph, data frame or edge tuple
        See :func:`mgapsp.readers.as_graph` (paths: :func:`read_graph`); a data frame
        is an edge list, one row an edge (``source``, ``target``, ``weight``).
    out : path, optional
        Zarr store to fill, by a Dask job (on ``client`` or an embedded cluster),
        returned as a :class:`~mgapsp.Result`.  Omitted: a NumPy array, computed in
        this process (or, with ``client``, on its workers through a temporary store).
    algorithm : {"auto", <ALGORITHMS>}
        ``phast``: a contraction hierarchy built once per graph, then one sweep per
        batch (road networks; non-negative weights, positive ones for predecessors);
        ``auto`` picks it on the GPU once the graph's hierarchy is built.
    backend : {"auto", "gpu", "cpu"}
        ``auto`` uses the GPU when CUDA devices are visible.
    dtype : {"auto", "float32", "float64"}
        ``auto`` keeps every answer exact: float32 where the weights are integers and
        every path sum stays within 2**24, or where they are non-negative integers and
        each batch's largest distance is checked below 2**24 (a batch past it is
        computed again in float64, and the answer is then float64); else float64.
    sources : label or 1-D sequence of labels, optional
        Rows to compute, as the vertices' labels (``None``: every vertex).  One label
        (``sources=3``) gives one row, 1-D, as SciPy's ``indices=3``; ``[]`` gives
        shape ``(0, len(targets))``.  Integer labels may be given as text (``"7"``) or
        integral floats (``2.0``); a fractional float is an unknown label, never
        rounded.  A tuple is one label (a NetworkX graph's); pass several in a list.
        Booleans, sets and nested sequences raise :class:`MgapspError`.
    targets : label or 1-D sequence of labels, optional
        Columns to keep (``None``: every vertex), read as ``sources``: many-to-many.
    batch_size : int, optional
        Sources per batch; chosen from the graph and the device memory when omitted.
    predecessors : bool
        Also return (or store) the predecessor of every target on a shortest path,
        ``-1`` where none: positions as SciPy's (``as_graph(graph).labels[p]``).
    client : distributed.Client, optional
    resume, overwrite : bool
        Continue, or replace, a store at ``out``.
    weight : str or callable
        A NetworkX graph's weight attribute (1 where missing) or ``weight(u, v,
        data)``, as in NetworkX; a data frame's weight column (every edge weighs 1
        where the frame has no ``"weight"``; another name must exist).
    source, target : str
        For a data frame: the columns of the edges' ends (their labels), as in
        NetworkX's ``from_pandas_edgelist`` (cuGraph's ``destination`` is ``target``).
    compression : {"auto", "planes", "lz4", "zstd", "none"}
        A new store's chunks (``auto``: planes for GPU jobs, lz4 for CPU ones;
        :data:`mgapsp.store.COMPRESSIONS`).
    shards : bool
        A new store keeps each batch's rows in one file (a Zarr shard: few, large
        files, as cluster file systems want); ``False``: a file per chunk.
    progress : bool
        Show rows done, rows/s and time left on standard error (as ``mgapsp run``).
    metrics : sequence of str, optional
        With ``out``: also store per-source metrics of the rows (``closeness``,
        ``harmonic``, ``eccentricity``; :meth:`Result.metric`) and ``histogram``
        (:meth:`Result.distance_histogram`).  Without ``out``: see
        :func:`mgapsp.closeness_centrality` and its kin.
    distances : bool
        ``False`` (with ``out`` and ``metrics``): the metrics alone, not the rows.
    device : bool, optional
        ``True``: CuPy arrays, computed here on the GPU, never copied to the host
        (default: as the input, a CuPy array or cupyx sparse matrix gives them).

    Returns
    -------
    Result (the store, read by label: :class:`mgapsp.Result`), or ndarray (a CuPy one
    with ``device``) of shape (len(sources), len(targets)), or (len(targets),) for one
    source label (a pair with predecessors)

    Raises
    ------
    NegativeCycleError
        The graph has a negative cycle; nothing is written.
    UnknownLabelError
        A source or target that no vertex has (a fractional id among them).
    MgapspError
        Bad input, an impossible option, or a store that would be overwritten.

    Examples
    --------
    A dense matrix, read as SciPy reads one (0 off the diagonal: no edge); integer
    weights whose sums stay small come back exact in float32:

    >>> import mgapsp
    >>> mgapsp.apsp([[0, 1, 0], [0, 0, 2], [4, 0, 0]])
    array([[0., 1., 3.],
           [6., 0., 2.],
           [4., 5., 0.]], dtype=float32)

    Edges as ``(src, dst, weight)`` arrays of labels; one source label gives one row
    (with ``out``, see :func:`mgapsp.open`):

    >>> mgapsp.apsp(([10, 20, 30], [20, 30, 10], [1.0, 2.0, 4.0]), sources=20,
    ...             targets=[10, 30])
    array([6., 2.], dtype=float32)
    """
    on_device = _answer_on_device(graph, device, out, client, metrics, distances)
    g = as_graph(graph, directed=directed, unweighted=unweighted, weight=weight,
                 source=source, target=target)
    sources, one_row = _checked_labels(sources, "sources", g)
    targets, _ = _checked_labels(targets, "targets", g)
    options = dict(algorithm=algorithm, dtype=dtype, sources=sources, targets=targets,
                   batch_size=batch_size, predecessors=predecessors)
    if out is None:
        answer = (_on_device if on_device else _array)(g, client, backend, progress, options)
        return _rows(answer, one_row, predecessors)
    return _into_store(g, out, client, backend, ProgressBar(enabled=progress), options,
                       resume=resume, overwrite=overwrite, compression=compression,
                       shards=shards, metrics=metrics, distances=distances)


# the registry's algorithms, as they are when mgapsp is imported
apsp.__doc__ = apsp.__doc__.replace("<ALGORITHMS>", ", ".join(f'"{a}"' for a in BUILT_IN))


def _answer_on_device(graph, device, out, client, metrics, distances) -> bool:
    """Whether ``apsp``'s answer stays on the GPU (``device``; by default as the input),
    once the options that do not go together are refused."""
    on_device = is_cupy(graph) if device is None else bool(device)
    if on_device and (out is not None or client is not None):
        raise MgapspError("device=True gives CuPy arrays computed in this process: it "
                          "goes without out= and client=")
    if out is None and (metrics or not distances):
        raise MgapspError("metrics= are stored beside the rows: give out= (or call "
                          "mgapsp.closeness_centrality and its kin)")
    return on_device


def _array(g: Graph, client, backend: str, progress: bool, options: dict):
    """``apsp`` without a store: in this process, or on the client's workers through
    a temporary store."""
    empty = _empty_answer(g, options["sources"], options["targets"], options["dtype"],
                          options["predecessors"])
    if empty is not None:
        return empty
    bar = ProgressBar(enabled=progress)
    if client is None:
        answer = _in_process(g, backend=resolve_backend(backend), bar=bar, **options)
        bar.finish()
        return answer
    return _on_client(g, client, backend, bar, options)


def _watch(bar: ProgressBar) -> dict:
    """A job's callbacks that drive the progress line."""
    return dict(on_start=lambda report: bar.start(report.plan.n_sources),
                on_progress=lambda report, done, total: bar.update(done, report.rows_run))


def _on_device(g: Graph, client, backend: str, progress: bool, options: dict):
    """``apsp(device=True)``: the rows as CuPy arrays of this process's GPU (never on
    ``client``'s workers: refused before)."""
    backend = resolve_backend(backend)
    if backend != "gpu":
        raise UnsupportedError(f"device=True needs the gpu backend, not {backend} (no "
                               "CUDA device visible, or backend='cpu')")
    impl = get_backend(backend)
    empty = _empty_answer(g, options["sources"], options["targets"], options["dtype"],
                          options["predecessors"])
    if empty is not None:
        return (tuple(impl.to_device(a) for a in empty) if options["predecessors"]
                else impl.to_device(empty))
    bar = ProgressBar(enabled=progress)
    answer = _in_process(g, backend=backend, bar=bar, device=True, **options)
    bar.finish()
    return answer


def _on_client(g: Graph, client, backend: str, bar: ProgressBar, options: dict):
    """``apsp`` with a client and no store: a job into a temporary store, read back."""
    # the job, store and cluster layers (Distributed, Zarr) come with the calls that
    # use them: an in-process call pays for SciPy's imports alone
    from .jobs.driver import run_job
    from .results import Result

    tmp = tempfile.mkdtemp(prefix="mgapsp-")
    try:
        path = os.path.join(tmp, "result.zarr")
        run_job(g, path, client, backend=backend, **_watch(bar), **options)
        bar.finish()
        stored = Result(path)
        dist = stored.distances()
        if options["predecessors"]:
            return dist, stored.group["predecessors"][:]
        return dist
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _into_store(g: Graph, out, client, backend: str, bar: ProgressBar, options: dict,
                **store_options):
    """``apsp`` with ``out``: a job on ``client``, or on an embedded cluster."""
    if g.n == 0:
        raise MgapspError("the graph has no vertices: there is nothing to store")
    from .jobs.cluster import connect, one_process
    from .jobs.driver import run_job
    from .results import Result

    if client is not None:
        run_job(g, out, client, backend=backend, **store_options, **_watch(bar), **options)
    else:
        backend = resolve_backend(backend)
        n_sources = g.n if options["sources"] is None else len(options["sources"])
        alone = one_process(backend, small=small_job(g, n_sources))
        with connect(backend=backend, processes=not alone) as own:
            run_job(g, out, own, backend=backend, **store_options, **_watch(bar),
                    **options)
    bar.finish()
    return Result(out)


def _rows(answer, one_row: bool, predecessors: bool):
    """The answer for one source label as SciPy gives it for a scalar ``indices``: its
    row, 1-D (both arrays' with predecessors)."""
    if not one_row:
        return answer
    return (answer[0][0], answer[1][0]) if predecessors else answer[0]


def _empty_answer(graph: Graph, sources, targets, dtype: str, predecessors: bool):
    """SciPy's empty answer where there is no row or no column to compute (no source
    asked for, or a graph without vertices), once every label given is found; else
    None."""
    rows = graph.n if sources is None else len(sources)
    cols = graph.n if targets is None else len(targets)
    if rows and cols:
        return None
    for labels, what in ((sources, "source"), (targets, "target")):
        if labels is not None and len(labels):
            graph.index_of(labels, what=what)
    dist = np.empty((rows, cols), dtype=choose_dtype(graph, dtype)[0])
    if predecessors:
        return dist, np.empty((rows, graph.n), dtype=np.int32)
    return dist


def _checked_labels(values, what: str, graph: Graph):
    """``sources`` or ``targets`` once their shape and kind are checked, and whether
    they are one label (which gives 1-D rows, as SciPy's scalar ``indices``): one
    label, or a flat sequence of labels (integers, strings, floats, which the graph's
    lookup reads); whether each is a vertex is the graph's to say.  Where the graph's
    labels are objects, a tuple is one label and a list holds labels."""
    if values is None:
        return None, False
    if isinstance(values, (set, frozenset, dict)):
        raise MgapspError(f"{what} must be one label or a sequence of labels in order, "
                          f"got a {type(values).__name__}")
    if graph.object_labels:
        if isinstance(values, np.ndarray) and values.ndim > 1:   # tuples made columns
            raise MgapspError(f"{what} must be one label or a list of labels, got an "
                              f"array of shape {values.shape}; pass tuples in a list")
        if isinstance(values, (list, np.ndarray)):
            items = (list(np.asarray(values, dtype=object).ravel())
                     if isinstance(values, np.ndarray) else values)
            return np.fromiter(items, dtype=object, count=len(items)), False
        return np.fromiter([values], dtype=object, count=1), True
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
    if arr.ndim == 0:
        return [values], True
    return values, False


def _in_process(graph: Graph, *, backend, algorithm, dtype, sources, targets, batch_size,
                predecessors, bar: ProgressBar, device: bool = False):
    impl = get_backend(backend)
    ready = algorithm == "auto" and hierarchy.known(graph)
    # an answer kept on the device takes its batches' room, in the dtype planned (a
    # checked float32 answer that must widen says so then, if float64 does not fit)
    rows = graph.n if sources is None else len(sources)
    cols = graph.n if targets is None else len(targets)
    kept = 0
    if device:
        planned = choose_dtype(graph, dtype, predecessors=predecessors,
                               gpu=backend == "gpu")[0]
        kept = rows * cols * np.dtype(planned).itemsize + (
            rows * graph.n * 4 if predecessors else 0)
    if device and kept > impl.memory_available():
        raise InsufficientMemoryError(
            f"a result of {rows:,} x {cols:,} on the GPU", kept, impl.memory_available(),
            "drop device=True for a NumPy result, or pass out= to stream it into a store")

    def make_plan(may_build: bool):
        return plan_job(graph, algorithm=algorithm, backend=backend, dtype=dtype,
                        sources=sources, batch_size=batch_size, predecessors=predecessors,
                        n_workers=1, memory=impl.memory_available() - kept,
                        targets=targets, hierarchy_ready=ready, may_build=may_build,
                        stored=False)

    plan = make_plan(may_build=True)
    if needs_hierarchy(plan.algorithm) and algorithm == "auto" and not ready:
        try:                    # built here, before the result is allocated
            hierarchy.for_graph(graph)
        except UnsupportedError:
            # auto took the graph for a road network, but its hierarchy fills in (or
            # would not fit in memory)
            plan = make_plan(may_build=False)
    shape = (plan.n_sources, plan.n_targets(graph.n))
    potentials = impl.potentials(graph) if graph.has_negative_weights else None
    if device and graph.m:
        return _device_rows(impl, graph, plan, shape, potentials, bar)
    needed = shape[0] * shape[1] * (np.dtype(plan.dtype).itemsize + (4 if predecessors
                                                                      else 0))
    free = host_memory_available()
    if needed > free:
        raise InsufficientMemoryError(
            f"a result of {shape[0]:,} x {shape[1]:,} {plan.dtype} in this process",
            needed, free, "pass out= to stream the rows into a Zarr store instead")
    dist = np.empty(shape, dtype=plan.dtype)
    pred = np.empty((plan.n_sources, graph.n), dtype=np.int32) if predecessors else None
    bar.start(plan.n_sources)
    if graph.m == 0:            # no edges: each vertex reaches itself only
        dist.fill(np.inf)
        cols = np.arange(graph.n) if plan.targets is None else plan.targets
        dist[plan.sources[:, None] == cols[None, :]] = 0
        if predecessors:
            pred.fill(-1)
        bar.update(plan.n_sources, plan.n_sources)
        if device:
            dist, pred = impl.to_device(dist), pred if pred is None else impl.to_device(pred)
        return (dist, pred) if predecessors else dist
    fill = impl.fill_rows_exact if plan.checked32 else impl.fill_rows
    wide = fill(graph, plan.sources, dist, pred, batch_size=plan.batch_size,
                algorithm=plan.spec, potentials=potentials, columns=plan.targets,
                on_rows=lambda done: bar.update(done, done))
    dist = dist if wide is None else wide     # float64 where a batch failed its check
    return (dist, pred) if predecessors else dist


def _device_rows(impl, graph: Graph, plan, shape: tuple, potentials, bar: ProgressBar):
    dist, pred = impl.device_rows(graph, plan.sources, shape, plan.dtype,
                                  predecessors=plan.predecessors, batch_size=plan.batch_size,
                                  algorithm=plan.spec, potentials=potentials,
                                  columns=plan.targets, checked32=plan.checked32,
                                  on_rows=lambda done: bar.update(done, done))
    return (dist, pred) if plan.predecessors else dist


def host_memory_available() -> int:
    """Bytes of host memory this process can still allocate now."""
    return available_memory()