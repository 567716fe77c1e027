"""CPU backend: the multi-core kernels of :mod:`mgapsp.cpu_sssp`, SciPy's ``csgraph``.

What every algorithm on the CPU shares: the graph as SciPy's CSR, the per-process
caches, the host's memory, and the choice between an algorithm's Numba kernels and its
plain code.  Each algorithm's own code is in its room (:mod:`.frontier_sssp`,
:mod:`.johnson`, :mod:`.floyd_warshall`, :mod:`.phast`).

The Numba kernels release the interpreter lock: :meth:`CPUBackend.fill_rows` (an answer
computed in this process) spreads the sources over every core, and
:meth:`CPUBackend.distances` (a pipeline's batch) runs on its caller's thread, so that
a worker of one thread per core computes a batch per thread.  SciPy (one core, the lock
held) answers where the kernels would cost more than the work (:func:`kernels_pay`),
and where Numba is missing.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from .. import algorithms as registry
from .. import cpu_sssp
from ..errors import UnsupportedError
from ..graph import Graph
from ..memory import available_memory
from ..reductions import histogram_counts, row_reductions
from .base import FLOAT32_EXACT, Backend, BatchResult, check_exact32, largest_finite
from .potentials import bellman_ford_potentials

__all__ = ["CPUBackend", "csr_bytes", "kernels_pay", "multicore", "on_kernels",
           "scipy_batch", "scipy_rows"]

_SCIPY_NO_PRED = -9999
#: (source, vertex or edge) steps below which SciPy answers while the kernels are not
#: loaded in this process yet.  Importing Numba and loading its cached kernels took
#: 0.36 s (idle) to 0.62 s (busy) on a 2-core host, as long as SciPy's Dijkstra takes
#: for 12-17 million steps there (rome99's all pairs, 41 million steps, in 1.2-2.0 s);
#: the kernels on 2 cores halve the rest at best, so they pay from about twice that.
#: Hosts of more cores cross over sooner.
COLD_STEPS = 2**25
#: the same once the kernels are loaded: a parallel launch costs milliseconds
WARM_STEPS = 2**18


class CPUBackend(Backend):
    name = "cpu"

    def __init__(self):
        # per-process caches, one entry of each kind (keyed by the graph's
        # fingerprint): SciPy's CSR, Johnson's reweighted graph, a Floyd-Warshall matrix
        self._caches: dict[str, dict] = {}

    def cached(self, kind: str, key, make):
        """The ``kind`` of thing this process keeps for ``key``, made by ``make()``
        where it keeps none or another key's (one of each kind: a job's batches share
        it, the next job's graph replaces it)."""
        cache = self._caches.get(kind)
        if cache is None or key not in cache:
            cache = self._caches[kind] = {key: make()}
        return cache[key]

    def scipy_csr(self, graph: Graph):
        """``graph`` as SciPy's CSR, kept for the job's next batches."""
        return self.cached("csr", graph.fingerprint, graph.to_scipy)

    def potentials(self, graph: Graph) -> np.ndarray:
        return bellman_ford_potentials(graph)

    def distances(self, graph, sources, *, algorithm, dtype, predecessors=False,
                  potentials=None, device=False, targets=None) -> BatchResult:
        # ``device`` changes nothing: the host is this backend's device
        sources = np.asarray(sources, dtype=np.int64)
        dtype = np.dtype(dtype)
        spec = registry.resolve(algorithm)
        spec.check(graph, self.name)
        code = spec.implementation()
        if on_kernels(graph, spec, len(sources), predecessors):
            # a batch of a job: this thread's core (the worker's other threads run
            # other batches)
            dist = np.empty((len(sources), graph.n if targets is None else len(targets)),
                            dtype=dtype)
            pred = (np.empty((len(sources), graph.n), dtype=np.int32) if predecessors
                    else None)
            code.rows[self.name](self, graph, sources, dist, pred, potentials=potentials,
                                 columns=targets, parallel=False)
            return BatchResult(dist, pred, {"sources": len(sources), "kernel": "numba"},
                               targets_only=targets is not None)
        run = code.run.get(self.name)
        if run is None:         # registered without code for this backend
            raise UnsupportedError(f"{spec.name} brings no code for the cpu backend")
        return run(self, graph, sources, dtype=dtype, predecessors=predecessors,
                   potentials=potentials, targets=targets)

    def prepare(self, algorithm: str, dtype: str, steps: int) -> None:
        # the batches' kernel loads on a thread of its own while the job makes its
        # store, so that its batches (each too small to pay for loading it) find it
        name = registry.resolve(algorithm).name
        if name in cpu_sssp.KERNEL_OF and multicore() and steps >= COLD_STEPS:
            cpu_sssp.load_async(name, dtype)

    def fill_rows(self, graph, sources, dist, pred=None, *, batch_size, algorithm,
                  potentials=None, columns=None, on_rows=None, checked32=False) -> None:
        """As :meth:`Backend.fill_rows`; an algorithm with kernels on every core
        (:attr:`~mgapsp.algorithms.Code.rows`) writes straight into ``dist`` and
        ``pred``, in pieces of at least a few sources per core, so that progress is
        told as rows finish."""
        spec = registry.resolve(algorithm)
        if not (on_kernels(graph, spec, len(sources), pred is not None)
                and dist.flags.c_contiguous):
            super().fill_rows(graph, sources, dist, pred, batch_size=batch_size,
                              algorithm=spec, potentials=potentials,
                              columns=columns, on_rows=on_rows, checked32=checked32)
            return
        spec.check(graph, self.name)
        rows = spec.implementation().rows[self.name]
        step = max(batch_size, 4 * cpu_sssp.threads())
        for lo in range(0, len(sources), step):
            hi = min(lo + step, len(sources))
            rows(self, graph, sources[lo:hi], dist[lo:hi],
                 None if pred is None else pred[lo:hi], potentials=potentials,
                 columns=columns, parallel=True)
            if checked32:
                check_exact32(largest_finite(dist[lo:hi]), lo)
            if on_rows:
                on_rows(hi)

    def _batch_reductions(self, graph, sources, algorithm, dtype, checked32,
                          potentials, histogram=False) -> dict:
        # through fill_rows, whose kernels run a batch on every core
        block = np.empty((len(sources), graph.n), dtype=dtype)
        self.fill_rows(graph, sources, block, batch_size=len(sources), algorithm=algorithm,
                       potentials=potentials)
        red = row_reductions(block)
        if checked32 and red["eccentricity"].max(initial=0) >= FLOAT32_EXACT:
            return self._batch_reductions(graph, sources, algorithm, np.float64, False,
                                          potentials, histogram)
        if histogram:
            red["histogram"] = histogram_counts(block, self_pairs=len(sources))
        return red

    def memory_available(self) -> int:
        # what this process may still allocate: a cgroup's or an rlimit's bound too,
        # as the readers and the planner count it
        return available_memory()

    def memory_needed(self, graph, batch_size, *, algorithm, dtype, predecessors,
                      fw_rows=None) -> int:
        memory = registry.resolve(algorithm).implementation().memory.get(self.name)
        if memory is None:      # the block, and a copy of it on its way out
            return (csr_bytes(graph) + batch_size * graph.n
                    * (2 * np.dtype(dtype).itemsize + (8 if predecessors else 0)))
        return csr_bytes(graph) + memory(graph, batch_size, dtype=np.dtype(dtype),
                                         predecessors=predecessors, fw_rows=fw_rows)


def csr_bytes(graph: Graph) -> int:
    """The host bytes of ``graph``'s CSR."""
    return graph.m * 12 + graph.n * 8


def multicore() -> bool:
    """Whether this process's CPU backend computes on every core (Numba installed):
    then one worker process with a thread per core does a job's batches best."""
    return importlib.util.find_spec("numba") is not None


def on_kernels(graph: Graph, algorithm, rows: int, predecessors: bool) -> bool:
    """Whether ``algorithm``'s (a name or a spec) Numba kernels answer these rows: it
    has them (:attr:`~mgapsp.algorithms.Code.rows`), they give the predecessors asked
    for, and they pay."""
    code = registry.resolve(algorithm).implementation()
    return ("cpu" in code.rows and (code.rows_predecessors or not predecessors)
            and kernels_pay(graph, rows))


def kernels_pay(graph: Graph, rows: int) -> bool:
    """Whether ``rows`` sources of ``graph`` go to the Numba kernels rather than SciPy:
    they are installed, and the work pays for loading them (:data:`COLD_STEPS`, or
    :data:`WARM_STEPS` where this process has them loaded or loading)."""
    steps = rows * (graph.n + graph.m)
    if steps < WARM_STEPS or not multicore():
        return False
    return steps >= COLD_STEPS or cpu_sssp.loading()


def scipy_rows(fn, csr, sources, *, dtype, predecessors: bool) -> BatchResult:
    """The rows SciPy's ``csgraph`` function ``fn`` gives for ``sources`` of ``csr``,
    as a batch (:func:`scipy_batch`)."""
    res = fn(csr, directed=True, indices=sources, return_predecessors=predecessors)
    return scipy_batch(*(res if predecessors else (res, None)), dtype=dtype)


def scipy_batch(dist: np.ndarray, pred: np.ndarray | None, *, dtype) -> BatchResult:
    """Rows of SciPy's as a batch: distances in ``dtype``, predecessors int32 with
    SciPy's "none" as -1."""
    if pred is not None:
        pred = pred.astype(np.int32, copy=False)
        pred[pred == _SCIPY_NO_PRED] = -1
    return BatchResult(dist.astype(dtype, copy=False), pred, {"sources": len(dist)})
