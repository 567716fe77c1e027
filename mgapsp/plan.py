"""Planning a job: which algorithm, how large a batch, how the store is chunked.

A plan is pure data, made on the client before anything is computed or written, so
that the choices can be checked against a store being resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import math

import numpy as np
import scipy.sparse as sp

from . import algorithms as registry
from .algorithms import BELLMAN_FORD, DIJKSTRA, FLOYD_WARSHALL, JOHNSON, PHAST
from .backends import FLOAT32_EXACT, SLAB_ALIGN, get_backend
from .errors import InsufficientMemoryError, MgapspError, UnsupportedError, quote
from . import config
from .graph import Graph
from . import hierarchy

__all__ = ["JobPlan", "plan_job", "choose_algorithm", "road_like", "choose_batch_size", "column_chunk",
           "fw_by_slabs", "slab_bounds", "owner_of_rows", "small_job", "DTYPES"]

DTYPES = ("auto", "float32", "float64")
#: float32's largest finite value
FLOAT32_MAX = float(np.finfo(np.float32).max)

#: Floyd-Warshall beats n single-source runs when at least this fraction of the n*n
#: possible edges exists (and every row is wanted).
DENSE_FRACTION = 0.1
#: Largest graph for which auto picks Floyd-Warshall: the n*n matrix stays small.
DENSE_MAX_VERTICES = {"cpu": 4096, "gpu": 16384}
#: Sources from which ``auto`` builds a road network's contraction hierarchy to run
#: phast on GPUs.  The build pays off past build / (Bellman-Ford - PHAST per source),
#: measured on an H200 and its 16 cores (bench/results/road-scale-*.md): NY 2.5 s / (139 - 5.5
#: us) = 18,600 sources; the 1000 x 1000 grid 31 s / (13.0 - 0.05 ms) = 2,400; the 4M
#: highway grid 174 s / (17.4 - 0.36 ms) = 10,200; Austin 0.065 s / (7.6 - 0.45 us) =
#: 9,100.  Neither the size nor the hop diameter orders those crossovers (the
#: highways make Bellman-Ford converge in fewer rounds), so one count that is past all
#: but NY's: there a job of 16,384 rows costs 13% more than Bellman-Ford, and the
#: hierarchy is kept for the next job.
AUTO_BUILD_SOURCES = 16384
#: The same on the CPU, whose Dijkstra costs far more per source than PHAST's sweep:
#: NY, 4,096 sources on 2 cores, Dijkstra 68.9 s against a 2.3 s build and a 11.5 s
#: sweep (crossover near 170 sources; near 1,300 on 16 cores, each source 8x cheaper)
AUTO_BUILD_SOURCES_CPU = 4096
#: Elements of one Blosc block of the store's codec (LZ4 at its default level cuts a
#: chunk into blocks of 2**17 elements, for 4- and 8-byte values alike; other levels
#: into smaller powers of two).  What is left of a chunk after its whole blocks is one
#: block of its own, compressed as a single stream (its whole blocks are cut into one
#: stream per byte plane), left unshuffled where its values are not a multiple of 8.
#: A short leftover compresses best, on the GPU and the host (bench/NOTES.md).
BLOSC_BLOCK_ELEMENTS = 2**17


@dataclass(frozen=True)
class JobPlan:
    """Everything that decides what a job computes and how it is laid out."""

    algorithm: str
    backend: str
    dtype: str
    batch_size: int
    sources: np.ndarray  # internal indices, one per output row
    predecessors: bool
    col_chunk: int
    targets: np.ndarray | None = None  # internal indices of the columns; None = all
    #: backend "hybrid": the algorithm of the CPU workers (``algorithm`` is the GPUs')
    cpu_algorithm: str | None = None
    #: why ``dtype`` (chosen for exact answers, or asked for)
    dtype_reason: str = ""
    #: float32 proven per batch: each batch's largest distance is checked below
    #: FLOAT32_EXACT (see :func:`choose_dtype`), else the rows are computed in float64
    checked32: bool = False
    #: per-source metrics the job stores beside the rows (:data:`METRICS`)
    metrics: tuple = ()
    #: whether the rows themselves are stored (without: the metrics alone)
    distances: bool = True
    #: ``algorithm`` resolved (and ``cpu_algorithm``'s): what the backends run, looked
    #: up once, when the plan is made
    spec: registry.Algorithm = field(init=False, repr=False, compare=False)
    cpu_spec: registry.Algorithm | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "spec", registry.get(self.algorithm))
        object.__setattr__(self, "cpu_spec", None if self.cpu_algorithm is None
                           else registry.get(self.cpu_algorithm))

    def n_targets(self, n: int) -> int:
        return n if self.targets is None else len(self.targets)

    @property
    def n_sources(self) -> int:
        return len(self.sources)

    @property
    def n_batches(self) -> int:
        return -(-self.n_sources // self.batch_size)

    def rows(self, batch: int) -> tuple[int, int]:
        start = batch * self.batch_size
        return start, min(start + self.batch_size, self.n_sources)


def choose_algorithm(graph: Graph, algorithm: str, backend: str, n_sources: int,
                     hierarchy_ready: bool = False, may_build: bool = False) -> str:
    """Resolve ``auto`` by weight sign, density and the graph's contraction hierarchy:
    built already (``hierarchy_ready``), or worth building for ``n_sources`` rows of a
    road network (``may_build``); check the choice is runnable (:mod:`mgapsp.algorithms`)."""
    if algorithm != "auto":
        registry.get(algorithm)                 # an unknown name: one line
    else:
        algorithm = _auto(graph, backend, n_sources, hierarchy_ready, may_build)
    registry.get(algorithm).check(graph, backend)
    return algorithm


def _auto(graph: Graph, backend: str, n_sources: int, hierarchy_ready: bool,
          may_build: bool) -> str:
    """What ``auto`` runs: the measured choices among the built-in algorithms."""
    dense = (graph.density >= DENSE_FRACTION and graph.n <= DENSE_MAX_VERTICES[backend]
             and n_sources * 2 >= graph.n)
    if dense and FLOYD_WARSHALL.runs_on(backend):
        return FLOYD_WARSHALL.name
    build_from = AUTO_BUILD_SOURCES if backend == "gpu" else AUTO_BUILD_SOURCES_CPU
    if backend in ("gpu", "cpu") and not graph.has_negative_weights and (
            hierarchy_ready or (may_build and n_sources >= build_from
                                and road_like(graph))):
        # with its hierarchy built, a PHAST sweep beat Bellman-Ford on every road
        # network measured on the GPU (NY 25x, Austin 17x, a Delaunay mesh 4x per
        # batch), and Dijkstra on the CPU (NY 6.0x, Austin 7.2x on 2 cores); a new one
        # only for road networks (seconds to build; on graphs that fill in,
        # unbounded) and enough rows to pay for it
        return PHAST.name
    if graph.has_negative_weights:
        # Johnson, whose potentials the job computes anyway to find negative cycles up
        # front, beat Bellman-Ford with predecessor tracking and its cycle checks
        # (bench/NOTES.md)
        return JOHNSON.name
    # on the GPU, Bellman-Ford beat Crauser's Dijkstra on every graph measured, unit or
    # weighted, so there is no crossover to choose by
    return BELLMAN_FORD.name if backend == "gpu" else DIJKSTRA.name


#: the shape ``auto`` takes for a road network worth building a hierarchy for: the
#: road networks measured have a mean (undirected) degree of 2.8-3.2, at most 10
#: neighbours, and a hop eccentricity of 0.85-1.3 times the square root of their
#: size; street grids (degree up to 4) sweep 15x (256 x 256) to 245x (1000 x 1000)
#: faster than Bellman-Ford once built; social graphs (Gnutella, co-authorships:
#: eccentricity <= 0.26 sqrt(n), hubs of 80-500) fail them, and so do Delaunay meshes
#: (degree 6, eccentricity 0.43 sqrt(n)), which are not road networks though their
#: hierarchies sweep fast at a million vertices (``phast`` asked for by name)
ROAD_MEAN_DEGREE = 4.0
ROAD_MAX_DEGREE = 16
ROAD_HOPS = 0.7


def road_like(graph: Graph) -> bool:
    """Whether ``graph`` has the shape of a road network (:data:`ROAD_MEAN_DEGREE`,
    :data:`ROAD_MAX_DEGREE`, :data:`ROAD_HOPS`): sparse, no hubs, long in hops.  Its
    hierarchy then stays small.  Linear time: two breadth-first sweeps of the largest
    component, the second from the first's farthest vertex."""
    n = graph.n
    if n == 0 or graph.has_negative_weights:
        return False
    src = graph.sources_of_edges
    keep = src != graph.indices
    A = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8),
                       (src[keep], graph.indices[keep])), shape=(n, n))
    A = (A + A.T).tocsr()
    degree = np.diff(A.indptr)
    if degree.mean() > ROAD_MEAN_DEGREE or degree.max(initial=0) > ROAD_MAX_DEGREE:
        return False
    from scipy.sparse import csgraph

    _, label = csgraph.connected_components(A, directed=False)
    sizes = np.bincount(label)
    big = int(sizes.argmax())
    far = int(np.flatnonzero(label == big)[0])
    hops = 0.0
    for _ in range(2):
        d = csgraph.shortest_path(A, directed=False, unweighted=True, indices=far)
        d[np.isinf(d)] = -1
        far, hops = int(d.argmax()), float(d.max())
    return bool(hops >= ROAD_HOPS * np.sqrt(sizes[big]))


#: a job of at most this many (source, vertex or edge) steps is one batch: it takes
#: SciPy milliseconds, less than handing a second batch to a worker costs
SMALL_JOB = 2**22


def small_job(graph: Graph, n_sources: int) -> bool:
    """Whether ``n_sources`` rows of ``graph`` are one batch (:data:`SMALL_JOB`)."""
    return n_sources * (graph.n + graph.m) <= SMALL_JOB


def choose_batch_size(graph: Graph, n_sources: int, *, backend: str, n_workers: int,
                      bytes_per_row: int, memory: int) -> int:
    """A batch size: large enough to keep a device busy, small enough to fit.

    GPU batches use at most a quarter of the device memory (two compute at once; the
    others a worker runs meanwhile hold only their blocks and the writer's scratch,
    a part of a batch's size without its kernels' state) and up to 8192 sources: a
    whole batch in flight is what fills the chip, and each GPU worker gets two, one
    for each batch that computes at once (``mgapsp.gpu.computing-batches``); its
    other threads write batches meanwhile.  The number of GPU batches is a multiple
    of those computing slots, the batches as equal as can be, so that no thread is
    left with a last batch while the others wait.  CPU batches hold at most 64 MiB of
    distances, two or more per worker thread (fewer, larger batches cost the worker
    less between them: 0.3 s against 0.5 s for p2p-Gnutella09's all pairs on 16
    threads).  A small job (:func:`small_job`) is one batch.
    """
    if small_job(graph, n_sources):
        return max(1, n_sources)
    if backend == "gpu":
        cap = max(1, (memory // 4) // max(bytes_per_row, 1))
        threads = max(2 * n_workers, 1)
        size = int(max(1, min(8192, cap, -(-n_sources // threads), n_sources)))
        # a whole number of batches per worker thread, all of one size, so that no
        # thread is left with a last batch while the others wait
        batches = -(-n_sources // size)
        batches = -(-batches // threads) * threads
        return int(max(1, -(-n_sources // batches)))
    size = min(512, max(1, (64 * 2**20) // max(graph.n * 8, 1)))
    per_worker = -(-n_sources // max(2 * n_workers, 1))
    size = max(1, min(size, per_worker, n_sources))
    # Powers of two keep chunk boundaries tidy.
    return 1 << (size.bit_length() - 1)


def column_chunk(n: int, batch_size: int) -> int:
    """Columns per stored chunk: about ``mgapsp.store.chunk-elements`` values, and among the widths from
    7/8 of that to it, the one whose chunk leaves the fewest values after its whole
    Blosc blocks (:data:`BLOSC_BLOCK_ELEMENTS`), the widest of those."""
    target = max(1024, config.get("store.chunk-elements") // max(batch_size, 1))
    if target >= n:
        return int(n)
    widths = np.arange(target - target // 8, target + 1, dtype=np.int64)
    left = widths * batch_size % BLOSC_BLOCK_ELEMENTS
    return int(widths[np.lexsort((-widths, left))[0]])


def slab_bounds(n: int, n_ranks: int, batch_size: int) -> list[tuple[int, int]]:
    """Contiguous row ranges, one per rank (fewer when ``n`` is small), as equal as the
    alignment allows: cuts at multiples of lcm(``batch_size``, :data:`SLAB_ALIGN`), so a
    batch never straddles two slabs and a pivot block never leaves its owner."""
    if n_ranks < 1 or batch_size < 1:
        raise ValueError(f"need n_ranks >= 1 and batch_size >= 1, got {n_ranks}, {batch_size}")
    align = math.lcm(int(batch_size), SLAB_ALIGN)
    cuts = [0] + [min(n, round(w * n / n_ranks / align) * align) for w in range(1, n_ranks)]
    cuts.append(n)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def owner_of_rows(bounds, start: int) -> int:
    """The rank whose slab holds row ``start``."""
    for rank, (lo, hi) in enumerate(bounds):
        if lo <= start < hi:
            return rank
    raise ValueError(f"row {start} is in no slab of {bounds}")


#: the metrics a job can store, one value per source, from its row: the vertices it
#: reaches (itself included), the sum of their distances, NetworkX's closeness with
#: Wasserman and Faust's scaling, the sum of the reciprocals of the positive
#: distances (harmonic), the largest distance (eccentricity among those reached);
#: and per job, summed over its batches: the distribution of the distances
#: (``histogram``, :func:`mgapsp.reductions.distance_histogram`) and each vertex's
#: betweenness (``betweenness``, Brandes' dependencies of the batch's sources)
METRICS = ("reachable", "distance_sum", "closeness", "harmonic", "eccentricity",
           "histogram", "betweenness")
#: the metrics kept per batch, summed when read, rather than per source
PER_BATCH = ("histogram", "betweenness")
#: the algorithms whose sums run left to right along a path, as NetworkX's Dijkstra
#: adds them (a hierarchy's shortcuts and Floyd-Warshall add sub-paths)
SUMS_ALONG_PATHS = (DIJKSTRA.name, BELLMAN_FORD.name)


def brandes_algorithm(graph: Graph, algorithm: str, asked: str) -> str:
    """The algorithm whose distances betweenness reads its ties from: ``algorithm``
    (what ``asked`` resolved to) where the weights' sums are exact integers, or where
    it sums along paths; else ``dijkstra`` for ``auto``, and one line for another."""
    if graph.exact_float64_sums or algorithm in SUMS_ALONG_PATHS:
        return algorithm
    if asked == "auto":
        return DIJKSTRA.name
    raise MgapspError(f"betweenness with weights that are not integers needs "
                      f"{' or '.join(SUMS_ALONG_PATHS)}, whose sums follow the paths as "
                      f"NetworkX's do; {algorithm} adds sub-paths, so its ties differ")


def check_metrics(metrics) -> tuple:
    """``metrics`` (names, or one comma-separated string) in :data:`METRICS`' order,
    with ``reachable`` and ``distance_sum``, which the others and ``mgapsp info``
    read, where any is asked for."""
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    metrics = set(metrics or ())
    unknown = sorted(metrics - set(METRICS))
    if unknown:
        raise MgapspError(f"unknown metric {unknown[0]!r}; choose among "
                          f"{', '.join(METRICS)}")
    if metrics:
        metrics |= {"reachable", "distance_sum"}
    return tuple(m for m in METRICS if m in metrics)


def plan_job(graph: Graph, *, algorithm: str, backend: str, dtype: str, sources,
             batch_size: int | None, predecessors: bool, n_workers: int,
             memory: int, targets=None, hierarchy_ready: bool = False,
             may_build: bool = False, threads: int | None = None,
             metrics=(), distances: bool = True, stored: bool = True) -> JobPlan:
    """Resolve every choice of a job; raises before anything is written.
    ``hierarchy_ready``: the graph's contraction hierarchy is built; ``may_build``:
    the caller can build one (``auto`` may then pick phast).  ``threads``: the
    workers' threads together (CPU batches are cut for them: a worker may run one
    batch per thread); default ``n_workers``.  ``stored=False``: an answer in memory,
    whose rows are one chunk each (no store's chunk size is read from the
    configuration, which imports Dask)."""
    metrics = check_metrics(metrics)
    if not distances and not metrics:
        raise MgapspError("without the distances a job stores only its metrics: give "
                          "--metrics too")
    if not distances and predecessors:
        raise MgapspError("predecessors go with the distances; drop --no-distances or "
                          "--predecessors")
    dtype, dtype_reason, checked32 = choose_dtype(graph, dtype, predecessors=predecessors,
                                                  gpu=backend in ("gpu", "hybrid"))
    sources = (np.arange(graph.n, dtype=np.int64) if sources is None
               else graph.index_of(sources, what="source"))
    if len(sources) == 0:
        raise MgapspError("no sources given")
    if targets is not None:
        targets = graph.index_of(targets, what="target")
        if len(targets) == 0:
            raise MgapspError("no targets given")
        if predecessors:
            raise MgapspError("predecessors need every target (a path runs through other "
                              "vertices); drop --targets or --predecessors")
    if "betweenness" in metrics:
        if targets is not None:
            raise MgapspError("betweenness sums the paths to every vertex; drop --targets")
        if graph.has_negative_weights:
            raise MgapspError("betweenness needs non-negative weights, as NetworkX's does")
    cpu_algorithm = None
    if backend == "hybrid":
        cpu_algorithm = choose_algorithm(graph, algorithm, "cpu", len(sources))
        backend_for_plan = "gpu"
    else:
        backend_for_plan = backend
    # auto's phast, with predecessors only where it can give them
    phast_fits = backend in ("gpu", "cpu") and (not predecessors
                                                or hierarchy.gives_predecessors(graph))
    asked = algorithm
    algorithm = choose_algorithm(graph, algorithm, backend_for_plan, len(sources),
                                 hierarchy_ready=hierarchy_ready and phast_fits,
                                 may_build=may_build and phast_fits)
    if "betweenness" in metrics:
        algorithm = brandes_algorithm(graph, algorithm, asked)
    if predecessors and any(registry.get(a).positive_for_predecessors
                            for a in (algorithm, cpu_algorithm) if a):
        hierarchy.check_predecessors(graph)
    # the GPU backend's sizing is plain arithmetic: constructing it touches no device
    impl = get_backend("cpu" if backend == "cpu" else "gpu")
    slabs = fw_by_slabs(algorithm, backend, predecessors, sources, graph.n)
    # Brandes' state of a source beside its row, where the job counts betweenness
    brandes = impl.dependency_bytes(graph) if "betweenness" in metrics else 0
    per_row = max(1, impl.memory_needed(graph, 1, algorithm=algorithm, dtype=dtype,
                                        predecessors=predecessors)
                  - impl.memory_needed(graph, 0, algorithm=algorithm, dtype=dtype,
                                       predecessors=predecessors)) + brandes
    if batch_size is None:
        batch_size = choose_batch_size(graph, len(sources), backend=backend_for_plan,
                                       n_workers=(max(n_workers, threads or 0)
                                                  if backend == "cpu" else n_workers),
                                       bytes_per_row=per_row,
                                       memory=memory)
        if slabs and batch_size >= SLAB_ALIGN:
            # slabs are cut at multiples of lcm(batch, SLAB_ALIGN): keep it small
            batch_size -= batch_size % SLAB_ALIGN
    elif (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
          or batch_size < 1):
        raise MgapspError(f"batch size must be an integer >= 1, got {quote(batch_size)}")
    batch_size = int(min(batch_size, len(sources)))
    fw_rows = None
    if slabs:
        fw_rows = max(hi - lo for lo, hi in slab_bounds(graph.n, n_workers,
                                                                 batch_size))
    needed = batch_size * brandes + impl.memory_needed(
        graph, batch_size, algorithm=algorithm, dtype=dtype, predecessors=predecessors,
        fw_rows=fw_rows)
    if needed > memory:
        if fw_rows is not None:
            what = (f"floyd-warshall on {graph.n} vertices, {fw_rows} rows of the matrix "
                    f"per worker on the {backend} backend")
            hint = "use more workers, or dijkstra / johnson for a sparse graph"
        else:
            what = (f"{algorithm} on {graph.n} vertices and {graph.m} edges with batches "
                    f"of {batch_size} sources on the {backend} backend")
            hint = "use a smaller --batch-size" if batch_size > 1 else ""
        raise InsufficientMemoryError(what, needed, memory, hint)
    n_targets = graph.n if targets is None else len(targets)
    return JobPlan(algorithm=algorithm, backend=backend, dtype=dtype,
                   batch_size=batch_size, sources=sources, predecessors=predecessors,
                   col_chunk=(column_chunk(n_targets, batch_size) if stored
                              else max(1, n_targets)),
                   targets=targets, cpu_algorithm=cpu_algorithm, dtype_reason=dtype_reason,
                   checked32=checked32, metrics=metrics, distances=bool(distances))


def choose_dtype(graph: Graph, dtype: str, *, predecessors: bool = False,
                 gpu: bool = False) -> tuple[str, str, bool]:
    """The distances' dtype, why, and whether float32 is checked per batch.

    ``auto`` picks float32 where every answer is exact in it, else float64; a dtype
    asked for is kept, and said to round where it may.

    float32 holds every integer below 2**24 (:data:`FLOAT32_EXACT`) exactly.  With
    integer weights whose every path sum stays below it, every distance is exact.
    With non-negative integer weights whose path sums may pass it, a distance below
    2**24 is still computed exactly: every prefix of a shortest path is itself a
    shortest distance, so each sum along it is an integer below 2**24, exact; and a
    sum that rounds is at least 2**24 before rounding, so (rounding being monotone
    and 2**24 a float32) at least 2**24 after, and never wins a minimum against a
    distance below it.  The same holds for every value that Bellman-Ford, Dijkstra,
    Floyd-Warshall or a hierarchy's sweep keeps: each is the exact length of a path
    or at least 2**24.  So float32 is chosen, *checked*: each batch's largest finite
    distance is compared with 2**24, and a batch that reaches it is computed again
    in float64 (``checked32``; a job then runs in float64, a call from that batch
    on).  The check needs path sums within float32's range (else a sum would read as
    ``inf``, "unreachable").
    """
    dtype = str(np.dtype(dtype)) if dtype not in DTYPES and _is_dtype(dtype) else str(dtype)
    if dtype not in DTYPES:
        raise MgapspError(f"unknown dtype {dtype!r}; choose auto, float32 or float64")
    # cached on the graph, so that repeated calls on one graph do not pass over every
    # weight again
    integral, bound = graph.integral_weights, graph.path_sum_bound
    if not math.isfinite(bound):
        # a path's sum could pass float64's largest value and be stored as inf, which
        # reads as "unreachable"
        what = f"graph {graph.name!r}" if graph.name else "the graph"
        raise MgapspError(
            f"the weights of {what} (up to {float(np.abs(graph.weights).max()):.3g}) could "
            "add up past float64's largest value along a path, which would read as "
            "unreachable; scale them down")
    exact32 = integral and bound <= FLOAT32_EXACT
    if dtype == "float64":
        return dtype, "asked for", False
    if dtype == "float32":
        return dtype, ("asked for; exact: integer weights, every path sum within 2**24"
                       if exact32 else "asked for; distances may be rounded to float32"), False
    if exact32:
        return ("float32", "integer weights, every path sum within 2**24: exact in "
                "float32", False)
    if integral and not graph.has_negative_weights and bound < FLOAT32_MAX:
        return ("float32", f"integer weights whose path sums may reach {bound:.3g}: "
                "float32, exact where each batch's largest distance is below 2**24 "
                "(checked; float64 where it is not)", True)
    why = ("weights that are not integers" if not integral else
           "negative integer weights" if graph.has_negative_weights else
           f"path sums that may reach {bound:.3g}, beyond float32's range")
    if predecessors and gpu:
        raise UnsupportedError(
            f"predecessors on the GPU need float32, which would round this graph's "
            f"distances ({why}); pass dtype float32 to accept rounding, or use the cpu "
            "backend")
    return "float64", f"{why}: float64 keeps every distance exact", False


def float64_after(plan: JobPlan, exc) -> JobPlan:
    """``plan`` in float64, after a batch checked in float32 failed (``exc``: the
    :class:`~mgapsp.errors.Float32Inexact` it raised)."""
    from dataclasses import replace

    return replace(plan, dtype="float64", checked32=False,
                   dtype_reason=f"integer weights; float32 was checked per batch, and "
                                f"{exc}: float64 keeps every distance exact")


def _is_dtype(value) -> bool:
    try:
        np.dtype(value)
    except TypeError:
        return False
    return True


def fw_by_slabs(algorithm: str, backend: str, predecessors: bool, sources: np.ndarray,
                n: int) -> bool:
    """Whether a job runs Floyd-Warshall as slabs across its workers (mgapsp.jobs.floyd_warshall_slabs):
    every row in order, no predecessors, one kind of worker."""
    return (algorithm == FLOYD_WARSHALL.name and not predecessors and backend in ("cpu", "gpu")
            and len(sources) == n and bool((sources == np.arange(n)).all()))
