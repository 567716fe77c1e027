"""CPU backend: the multi-core kernels of :mod:`mgapsp.cpu_sssp`, SciPy's ``csgraph``.

Dijkstra for non-negative weights, Johnson (Dijkstra on the graph reweighted with
potentials computed once per job) for negative ones, Bellman-Ford, and Floyd-Warshall
for small dense graphs.  Dijkstra, Johnson and Bellman-Ford run on the Numba kernels,
which release the interpreter lock: :meth:`CPUBackend.fill_rows` (an answer computed in
this process) spreads the sources over every core, and :meth:`CPUBackend.distances` (a
pipeline's batch) runs on its caller's thread, so that a worker of one thread per core
computes a batch per thread.  SciPy (one core, the lock held) answers where the kernels
would cost more than the work (:func:`kernels_pay`), and where Numba is missing.
"""

from __future__ import annotations

import importlib.util

import numpy as np
from scipy.sparse import csgraph

from .. import cpu_sssp, hierarchy
from . import cpu_sweep
from ..errors import InsufficientMemoryError, NegativeCycleError, UnsupportedError
from ..graph import Graph
from ..memory import available_memory
from .. import algorithms as registry
from ..reductions import histogram_counts, row_reductions
from .base import (FLOAT32_EXACT, SLAB_ALIGN, Backend, BatchResult, check_exact32,
                   largest_finite)

__all__ = ["CPUBackend", "bellman_ford_potentials", "find_negative_cycle", "kernels_pay",
           "multicore", "on_kernels"]

_SCIPY_NO_PRED = -9999
#: the algorithms the Numba kernels run
KERNEL_ALGORITHMS = tuple(cpu_sssp.KERNEL_OF)
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
        # Per-process caches, keyed by graph fingerprint: the scipy CSR, the
        # reweighted CSR for Johnson, and the full Floyd-Warshall matrices.
        self._csr: dict[str, object] = {}
        self._reweighted: dict[tuple, object] = {}
        self._fw: dict[tuple, tuple] = {}

    def potentials(self, graph: Graph) -> np.ndarray:
        return bellman_ford_potentials(graph)

    def distances(self, graph, sources, *, algorithm, dtype, predecessors=False,
                  potentials=None, device=False, targets=None) -> BatchResult:
        # ``device`` changes nothing: the host is this backend's device
        sources = np.asarray(sources, dtype=np.int64)
        dtype = np.dtype(dtype)
        registry.get(algorithm).check(graph, self.name)
        entry = self.registered_entry(algorithm)
        if entry is not None:
            return entry(self, graph, sources, dtype=dtype, predecessors=predecessors,
                         potentials=potentials, targets=targets)
        if on_kernels(graph, algorithm, len(sources), predecessors):
            # a batch of a job: this thread's core (the worker's other threads run
            # other batches)
            dist = np.empty((len(sources), graph.n if targets is None else len(targets)),
                            dtype=dtype)
            pred = (np.empty((len(sources), graph.n), dtype=np.int32) if predecessors
                    else None)
            self._kernel_rows(graph, sources, dist, pred, algorithm=algorithm,
                              potentials=potentials, columns=targets, parallel=False)
            return BatchResult(dist, pred, {"sources": len(sources), "kernel": "numba"},
                               targets_only=targets is not None)
        if algorithm == registry.DIJKSTRA.name:
            dist, pred = _scipy_call(csgraph.dijkstra, self._scipy(graph), sources,
                                     predecessors)
        elif algorithm == registry.BELLMAN_FORD.name:
            try:
                dist, pred = _scipy_call(csgraph.bellman_ford, self._scipy(graph), sources,
                                         predecessors)
            except csgraph.NegativeCycleError:
                find_negative_cycle(graph)  # raises ours, with the cycle
                raise
        elif algorithm == registry.JOHNSON.name:
            if potentials is None:
                potentials = self.potentials(graph)
            dist, pred = _scipy_call(csgraph.dijkstra,
                                     self._johnson(graph, potentials).to_scipy(),
                                     sources, predecessors)
            dist -= potentials[sources][:, None]
            dist += potentials[None, :]
        elif algorithm == registry.FLOYD_WARSHALL.name:
            full, full_pred = self._floyd_warshall(graph, predecessors)
            dist = full[sources]
            pred = None if full_pred is None else full_pred[sources]
        elif algorithm == registry.PHAST.name:
            if predecessors:
                hierarchy.check_predecessors(graph)
                dist, pred = cpu_sweep.distances(hierarchy.for_graph(graph), sources,
                                                 dtype=dtype, predecessors=True)
                return BatchResult(dist, pred, {"sources": len(sources)})
            dist = cpu_sweep.distances(hierarchy.for_graph(graph), sources, dtype=dtype,
                                       targets=targets)
            return BatchResult(dist, None, {"sources": len(sources)},
                               targets_only=targets is not None)
        else:       # registered without code for this backend
            raise UnsupportedError(f"{algorithm} brings no code for the cpu backend")
        if pred is not None:
            pred = pred.astype(np.int32, copy=False)
            pred[pred == _SCIPY_NO_PRED] = -1
        return BatchResult(dist.astype(dtype, copy=False), pred, {"sources": len(sources)})

    def prepare(self, algorithm: str, dtype: str, steps: int) -> None:
        # the batches' kernel loads on a thread of its own while the job makes its
        # store, so that its batches (each too small to pay for loading it) find it
        if algorithm in KERNEL_ALGORITHMS and multicore() and steps >= COLD_STEPS:
            cpu_sssp.load_async(algorithm, dtype)

    def fill_rows(self, graph, sources, dist, pred=None, *, batch_size, algorithm,
                  potentials=None, columns=None, on_rows=None, checked32=False) -> None:
        """As :meth:`Backend.fill_rows`; Dijkstra, Johnson and Bellman-Ford on every
        core (the kernels write straight into ``dist`` and ``pred``), in pieces of at
        least a few sources per core, so that progress is told as rows finish."""
        if not (on_kernels(graph, algorithm, len(sources), pred is not None)
                and dist.flags.c_contiguous):
            super().fill_rows(graph, sources, dist, pred, batch_size=batch_size,
                              algorithm=algorithm, potentials=potentials,
                              columns=columns, on_rows=on_rows, checked32=checked32)
            return
        step = max(batch_size, 4 * cpu_sssp.threads())
        for lo in range(0, len(sources), step):
            hi = min(lo + step, len(sources))
            self._kernel_rows(graph, sources[lo:hi], dist[lo:hi],
                              None if pred is None else pred[lo:hi], algorithm=algorithm,
                              potentials=potentials, columns=columns, parallel=True)
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

    def _kernel_rows(self, graph, sources, dist, pred, *, algorithm, potentials, columns,
                     parallel: bool) -> None:
        """Rows of ``sources`` into ``dist`` (and ``pred``) by the Numba kernels."""
        if algorithm == registry.DIJKSTRA.name:
            registry.DIJKSTRA.check(graph)      # its rule, written beside it
            cpu_sssp.dijkstra_rows(graph.indptr, graph.indices, graph.weights, sources,
                                   dist, pred, targets=columns, parallel=parallel)
        elif algorithm == registry.JOHNSON.name:
            if potentials is None:
                potentials = self.potentials(graph)
            g = self._johnson(graph, potentials)
            cpu_sssp.dijkstra_rows(g.indptr, g.indices, g.weights, sources, dist, pred,
                                   targets=columns, shift=potentials, parallel=parallel)
        elif algorithm == registry.PHAST.name:
            cpu_sssp.phast_rows(hierarchy.for_graph(graph), sources, dist,
                                targets=columns, parallel=parallel)
        elif cpu_sssp.bellman_ford_rows(graph.indptr, graph.indices, graph.weights,
                                        sources, dist, pred, targets=columns,
                                        parallel=parallel):
            find_negative_cycle(graph)     # raises ours, with the cycle
            raise NegativeCycleError([], float("-inf"),
                                     "negative cycle (could not extract it)")

    def floyd_warshall_slab(self, n, r0, r1, edges, dtype, exchange, bounds, info):
        return floyd_warshall_rows_cpu(n, r0, r1, *edges, exchange, bounds, info["name"])

    def memory_available(self) -> int:
        # what this process may still allocate: a cgroup's or an rlimit's bound too,
        # as the readers and the planner count it
        return available_memory()

    def memory_needed(self, graph, batch_size, *, algorithm, dtype, predecessors,
                      fw_rows=None) -> int:
        csr = graph.m * 12 + graph.n * 8
        if algorithm == registry.FLOYD_WARSHALL.name:
            if fw_rows is not None:   # the float64 slab and a panel, the batch's copy
                return csr + (fw_rows + 256) * graph.n * 8 + batch_size * graph.n * 8
            return csr + graph.n * graph.n * (8 + (4 if predecessors else 0)) * 2
        per_row = graph.n * (8 + np.dtype(dtype).itemsize + (8 if predecessors else 0))
        if algorithm == registry.PHAST.name:     # the hierarchy (arcs guessed), the sweep's state
            return (csr + (graph.m + graph.n) * 8 * 28
                    + batch_size * graph.n * (16 + (8 if predecessors else 0)))
        return csr * 2 + batch_size * per_row

    # -- caches ---------------------------------------------------------------
    def _scipy(self, graph):
        key = graph.fingerprint
        if key not in self._csr:
            self._csr = {key: graph.to_scipy()}
        return self._csr[key]

    def _johnson(self, graph, h):
        key = (graph.fingerprint, h.tobytes().__hash__())
        if key not in self._reweighted:
            w = graph.weights + h[graph.sources_of_edges] - h[graph.indices]
            # Rounding can leave tiny negatives on tight edges.
            np.maximum(w, 0.0, out=w)
            self._reweighted = {key: Graph(graph.indptr, graph.indices, w,
                                           vertex_ids=graph.vertex_ids)}
        return self._reweighted[key]

    def _floyd_warshall(self, graph, predecessors):
        key = (graph.fingerprint, predecessors)
        if key not in self._fw:
            need = self.memory_needed(graph, graph.n, algorithm=registry.FLOYD_WARSHALL.name,
                                      dtype=np.float64, predecessors=predecessors)
            have = self.memory_available()
            if need > have:
                raise InsufficientMemoryError(
                    f"floyd-warshall on {graph.n} vertices", need, have,
                    "use dijkstra or johnson for large sparse graphs")
            try:
                res = csgraph.floyd_warshall(self._scipy(graph),
                                             return_predecessors=predecessors)
            except csgraph.NegativeCycleError:
                find_negative_cycle(graph)
                raise
            self._fw = {key: res if predecessors else (res, None)}
        return self._fw[key]


def multicore() -> bool:
    """Whether this process's CPU backend computes on every core (Numba installed):
    then one worker process with a thread per core does a job's batches best."""
    return importlib.util.find_spec("numba") is not None


def on_kernels(graph: Graph, algorithm: str, rows: int, predecessors: bool) -> bool:
    """Whether the Numba kernels answer these rows (PHAST's predecessors come from the
    NumPy sweep)."""
    return (algorithm in KERNEL_ALGORITHMS
            and not (predecessors and algorithm == registry.PHAST.name)
            and kernels_pay(graph, rows))


def kernels_pay(graph: Graph, rows: int) -> bool:
    """Whether ``rows`` sources of ``graph`` go to the Numba kernels rather than SciPy:
    they are installed, and the work pays for loading them (:data:`COLD_STEPS`, or
    :data:`WARM_STEPS` where this process has them loaded or loading)."""
    steps = rows * (graph.n + graph.m)
    if steps < WARM_STEPS or not multicore():
        return False
    return steps >= COLD_STEPS or cpu_sssp.loading()


def _scipy_call(fn, csr, sources, predecessors):
    res = fn(csr, directed=True, indices=sources, return_predecessors=predecessors)
    return res if predecessors else (res, None)


def bellman_ford_potentials(graph: Graph, max_rounds: int | None = None) -> np.ndarray:
    """Johnson potentials by frontier Bellman-Ford from a virtual source.

    The virtual source reaches every vertex with weight 0, so every distance starts at
    0 and only decreases.  Rounds relax the out-edges of the vertices that changed in
    the previous round, vectorized with NumPy.  A vertex still changing after n rounds
    lies downstream of a negative cycle, which is then extracted from the predecessor
    graph and raised as :class:`NegativeCycleError`.
    """
    n = graph.n
    d = np.zeros(n)
    pred = np.full(n, -1, dtype=np.int64)
    if not graph.has_negative_weights:
        return d
    src_all = graph.sources_of_edges.astype(np.int64)
    dst_all = graph.indices.astype(np.int64)
    w_all = graph.weights
    # Only negative edges can lower a zero start, so the first frontier is their tails.
    active = np.zeros(n, dtype=bool)
    active[src_all[w_all < 0]] = True
    rounds = n + 1 if max_rounds is None else max_rounds
    for _ in range(rounds):
        emask = active[src_all]
        es, ed, ew = src_all[emask], dst_all[emask], w_all[emask]
        cand = d[es] + ew
        better = cand < d[ed]
        if not better.any():
            return d
        es, ed, cand = es[better], ed[better], cand[better]
        newd = d.copy()
        np.minimum.at(newd, ed, cand)
        win = cand == newd[ed]
        pred[ed[win]] = es[win]
        active = newd < d
        d = newd
    cycle = _cycle_from_predecessors(graph, pred, np.flatnonzero(active))
    if cycle is None:  # pragma: no cover - the lemma says there is one
        raise NegativeCycleError([], float("-inf"), "negative cycle (could not extract it)")
    raise NegativeCycleError(graph.vertex_ids[cycle], _cycle_weight(graph, cycle))


def find_negative_cycle(graph: Graph) -> None:
    """Raise :class:`NegativeCycleError` for a negative cycle of ``graph``, if any."""
    bellman_ford_potentials(graph)


def _cycle_from_predecessors(graph, pred, starts):
    """Walk predecessors n steps from each start; return a negative cycle found."""
    n = graph.n
    for v in starts[:64]:
        v = int(v)
        for _ in range(n):
            if pred[v] < 0:
                break
            v = int(pred[v])
        else:
            cycle = [v]
            u = int(pred[v])
            while u != v:
                cycle.append(u)
                u = int(pred[u])
            cycle.reverse()  # pred walks backwards; report in edge direction
            if _cycle_weight(graph, cycle) < 0:
                return np.array(cycle, dtype=np.int64)
    return None


def _cycle_weight(graph, cycle) -> float:
    cycle = np.asarray(cycle, dtype=np.int64)
    return float(graph.edge_weights(cycle, np.roll(cycle, -1)).sum())


def floyd_warshall_rows_cpu(n: int, r0: int, r1: int, indptr, indices, weights, exchange,
                            bounds, name: str = "graph"):
    """Rows ``r0:r1`` of the distance matrix in float64, NumPy on this worker's slab
    (``indptr`` from 0, ``indices``, ``weights``: the rows' out-edges), pivot blocks of
    :data:`mgapsp.plan.SLAB_ALIGN` rows exchanged through ``exchange``."""
    rows = r1 - r0
    S = np.full((rows, n), np.inf)
    S[np.repeat(np.arange(rows), np.diff(indptr)), indices] = weights
    local = np.arange(rows)
    S[local, local + r0] = np.minimum(S[local, local + r0], 0.0)
    B = SLAB_ALIGN
    panel_buf = np.empty((B, n))
    starts = np.array([lo for lo, _ in bounds])
    step = max(1, 2**16 // max(n, 1))          # rows per pass: a block stays in cache
    tmp = np.empty((step, n))
    exchanged = 0
    for k0 in range(0, n, B):
        kc = min(B, n - k0)
        root = int(np.searchsorted(starts, k0, side="right") - 1)
        if root == exchange.rank:
            # the pivot rows, closed over their own pivots (classic FW on kc rows)
            panel = S[k0 - r0:k0 - r0 + kc]
            for k in range(kc):
                np.minimum(panel, panel[:, k0 + k, None] + panel[k], out=panel)
        else:
            panel = panel_buf[:kc]
        exchange.bcast(panel, root)
        exchanged += panel.nbytes
        # every row against the closed pivot rows, pivot by pivot (on the owner's own
        # pivot rows this changes nothing: they are closed)
        for a in range(0, rows, step):
            blk = S[a:a + step]
            t = tmp[:len(blk)]
            for k in range(kc):
                np.add(blk[:, k0 + k, None], panel[k], out=t)
                np.minimum(blk, t, out=blk)
    negative = int(bool((S[local, local + r0] < 0).any())) if rows else 0
    if exchange.allreduce_sum(np.array([negative]))[0]:
        raise UnsupportedError(f"graph {name!r} has a negative cycle")
    return S, {"method": "numpy-fp64", "rounds": -(-n // B), "updates": rows * n * n,
               "exchanged_bytes": exchanged}
