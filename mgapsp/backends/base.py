"""The one question a backend answers.

Given the graph and a batch of sources, return the batch's distance block (and the
predecessor block when asked).  Backends know nothing of Dask or Zarr; the pipeline
calls them inside worker tasks, and :func:`mgapsp.apsp` calls them in-process.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import algorithms as registry
from ..cuda.floyd_warshall_rows import SLAB_ALIGN  # slabs start at multiples of the pivot blocks
from ..errors import Float32Inexact, UnsupportedError
from ..graph import Graph
from ..jit import compiled
from ..reductions import (HISTOGRAM_BINS, REDUCTIONS, histogram_counts, lone_reductions,
                          metric_values, ordered_harmonic, row_reductions)

__all__ = ["Backend", "BatchResult", "SLAB_ALIGN", "FLOAT32_EXACT", "largest_finite",
           "check_exact32"]

#: float32 holds every integer up to this exactly (its 24-bit significand)
FLOAT32_EXACT = 2**24


def largest_finite(block) -> float:
    """The largest finite value of a host block (0 where it has none), a few rows at a
    time so that no temporary is the block's size."""
    block = np.asarray(block)
    if block.size == 0:
        return 0.0
    rows = block.reshape(len(block), -1) if block.ndim > 1 else block.reshape(1, -1)
    step = max(1, (1 << 22) // max(rows.shape[1], 1))
    best = 0.0
    for lo in range(0, len(rows), step):
        part = rows[lo:lo + step]
        best = max(best, float(np.max(part, initial=0, where=np.isfinite(part))))
    return best


def check_exact32(largest: float, rows_done: int, batch: int | None = None) -> None:
    """Raise :class:`~mgapsp.errors.Float32Inexact` where a float32 batch's largest
    distance reached 2**24 (see :func:`mgapsp.plan.choose_dtype`)."""
    if largest >= FLOAT32_EXACT:
        raise Float32Inexact(largest, rows_done, batch)


@dataclass
class BatchResult:
    """The answer for one batch.

    ``distances`` has shape ``(len(sources), n)`` and the requested dtype, ``inf``
    where a target is unreachable; ``(len(sources), len(targets))`` where the backend
    computed only the targets asked for (``targets_only``).  ``predecessors`` (int32,
    ``-1`` = none) has shape ``(len(sources), n)`` when asked for, else None.
    ``stats`` carries counters for reports (for example ``rounds`` and
    ``relaxations``).
    """

    distances: np.ndarray
    predecessors: np.ndarray | None = None
    stats: dict | None = None
    targets_only: bool = False


class Backend(ABC):
    """Computes distance blocks for batches of sources on one device."""

    name: str = ""
    #: what the store's writer uses to cut a device block into chunks or compressed
    #: frames on its device (:mod:`mgapsp.cuda.staging`); None: blocks are NumPy
    staging = None

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithms this backend runs (:mod:`mgapsp.algorithms`)."""
        return registry.names(self.name)

    def select_columns(self, block, columns: np.ndarray):
        """``block[:, columns]``, on the block's own device."""
        return block[:, columns]

    def columns(self, result: BatchResult, targets: np.ndarray | None):
        """``result``'s distances at ``targets`` (every column when None)."""
        if targets is None or result.targets_only:
            return result.distances
        return self.select_columns(result.distances, targets)

    def prepare(self, algorithm: str, dtype: str, steps: int) -> None:
        """Called on every worker as a job starts, before its store is made: a backend
        may start loading what its batches will need (``steps``: the job's sources
        times the graph's vertices and edges).  Returns at once."""

    @abstractmethod
    def potentials(self, graph: Graph) -> np.ndarray:
        """Johnson potentials ``h`` (float64, length n) with ``w + h[u] - h[v] >= 0``.

        Computed by Bellman-Ford from a virtual source joined to every vertex with
        weight 0.  Raises :class:`mgapsp.NegativeCycleError` (cycle in input ids) when
        the graph has a negative cycle anywhere.
        """

    @abstractmethod
    def distances(
        self,
        graph: Graph,
        sources: np.ndarray,
        *,
        algorithm,
        dtype: np.dtype,
        predecessors: bool = False,
        potentials: np.ndarray | None = None,
        device: bool = False,
        targets: np.ndarray | None = None,
    ) -> BatchResult:
        """Distances from each of ``sources`` (internal indices) to every vertex.

        ``algorithm``: a name or a spec (:class:`mgapsp.algorithms.Algorithm`), whose
        room holds the code the backend runs.  ``potentials`` is given for
        ``johnson`` (computed once per job).  With
        ``device=True`` a backend may return its blocks as arrays of its own device
        (the pipeline's writer stages them); NumPy arrays are always accepted.
        ``targets`` (internal indices): the only columns the caller keeps; an
        algorithm that gains by it returns just those (``targets_only``), the others
        every column (:meth:`columns` keeps the caller's).
        """

    def fill_rows(self, graph: Graph, sources: np.ndarray, dist: np.ndarray,
                  pred: np.ndarray | None = None, *, batch_size: int, algorithm: str,
                  potentials: np.ndarray | None = None,
                  columns: np.ndarray | None = None,
                  on_rows: Callable[[int], None] | None = None,
                  checked32: bool = False) -> None:
        """Distances from ``sources`` into the host array ``dist`` (and predecessors
        into ``pred``, when given), ``batch_size`` sources at a time; the computation
        in ``dist``'s dtype.  ``columns``: the targets ``dist`` keeps (``pred`` keeps
        every vertex).  ``on_rows(k)``: the first ``k`` rows are done.  ``checked32``:
        raise :class:`~mgapsp.errors.Float32Inexact` at the first batch whose largest
        distance reaches 2**24 (:meth:`fill_rows_exact` computes on in float64)."""
        for lo in range(0, len(sources), batch_size):
            hi = min(lo + batch_size, len(sources))
            res = self.distances(graph, sources[lo:hi], algorithm=algorithm,
                                 dtype=dist.dtype, predecessors=pred is not None,
                                 potentials=potentials, targets=columns)
            block = self.columns(res, columns)
            if checked32:
                check_exact32(largest_finite(block), lo)
            dist[lo:hi] = block
            if pred is not None:
                pred[lo:hi] = res.predecessors
            if on_rows:
                on_rows(hi)

    def device_rows(self, graph: Graph, sources: np.ndarray, shape: tuple, dtype, *,
                    predecessors: bool, batch_size: int, algorithm,
                    potentials: np.ndarray | None = None,
                    columns: np.ndarray | None = None,
                    on_rows: Callable[[int], None] | None = None,
                    checked32: bool = False) -> tuple:
        """``(distances, predecessors or None)`` as arrays of this backend's device,
        where it has one besides the host (the GPU's: CuPy arrays)."""
        raise UnsupportedError(f"the {self.name} backend keeps no arrays on a device; "
                               "device=True needs the gpu backend")

    def largest_finite(self, block):
        """The largest finite value of a block this backend returned (0 where none
        is): what a float32 batch is checked by (:func:`check_exact32`)."""
        return largest_finite(block)

    def row_reductions(self, block) -> dict:
        """:func:`row_reductions` of a block this backend returned, as host arrays."""
        return row_reductions(block)

    def histogram_counts(self, block, self_pairs: int = 0) -> np.ndarray:
        """:func:`~mgapsp.reductions.histogram_counts` of a block this backend
        returned, as a host array."""
        return histogram_counts(block, self_pairs=self_pairs)

    def row_metrics(self, graph: Graph, sources: np.ndarray, *, batch_size: int,
                    algorithm: str, dtype: np.dtype, checked32: bool = False,
                    potentials: np.ndarray | None = None,
                    on_rows: Callable[[int], None] | None = None,
                    histogram: bool = False) -> dict:
        """:func:`row_reductions` of the distance rows from ``sources``, a batch at a
        time: no row is kept.  ``checked32`` (a float32 plan's): a batch whose largest
        distance reaches 2**24 is computed again in float64 (its sums are float64
        either way).  ``on_rows(k)``: the first ``k`` rows are done.  ``histogram``:
        also ``"histogram"``, the rows' :func:`~mgapsp.reductions.histogram_counts`
        (every vertex a target).

        A source without arcs reaches itself alone: its reductions are known without
        a search, and the batches hold only the others, so that none of a batch's
        lanes idles on such a row (half the vertices of an R-MAT graph)."""
        sources = np.asarray(sources, dtype=np.int64)
        out = lone_reductions(len(sources))
        if histogram:
            out["histogram"] = np.zeros(HISTOGRAM_BINS, dtype=np.uint64)
        searched = np.flatnonzero(np.diff(graph.indptr)[sources] > 0)
        lone = len(sources) - len(searched)
        for lo in range(0, len(searched), batch_size):
            rows = searched[lo:lo + batch_size]
            red = self._batch_reductions(graph, sources[rows], algorithm, dtype,
                                         checked32, potentials, histogram)
            for name in REDUCTIONS:
                out[name][rows] = red[name]
            if histogram:
                out["histogram"] += red["histogram"]
            if on_rows:
                on_rows(lone + lo + len(rows))
        return out

    def ordered_harmonic(self, graph: Graph, sources: np.ndarray, columns: np.ndarray, *,
                         batch_size: int, algorithm: str, dtype: np.dtype,
                         checked32: bool = False,
                         potentials: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``columns``, the sum of ``1 / d(s, column)`` over the
        ``sources`` that reach it at a non-zero distance, added source after source in
        the order given (NetworkX's harmonic centrality adds so); and whether any
        term was added.  Host arrays.  The rows are reduced where they are computed
        and none is kept."""
        sources = np.asarray(sources, dtype=np.int64)
        acc, touched, cols = self._harmonic_state(np.asarray(columns, dtype=np.int64))
        for lo in range(0, len(sources), batch_size):
            chunk = sources[lo:lo + batch_size]
            res = self.distances(graph, chunk, algorithm=algorithm, dtype=np.dtype(dtype),
                                 potentials=potentials, device=True)
            block = res.distances
            if checked32 and float(self.largest_finite(block)) >= FLOAT32_EXACT:
                block = self.distances(graph, chunk, algorithm=algorithm,
                                       dtype=np.dtype(np.float64), potentials=potentials,
                                       device=True).distances
            self._harmonic_add(block, cols, acc, touched)
            del res, block
        return self._harmonic_result(acc, touched)

    # where ordered_harmonic's sums live: host arrays here, a device's on a GPU backend
    def _harmonic_state(self, columns: np.ndarray):
        return np.zeros(len(columns)), np.zeros(len(columns), dtype=bool), columns

    def _harmonic_add(self, block, columns, acc, touched) -> None:
        ordered_harmonic(block, columns, acc, touched)

    def _harmonic_result(self, acc, touched) -> tuple[np.ndarray, np.ndarray]:
        return acc, touched

    def _batch_reductions(self, graph, sources, algorithm, dtype, checked32,
                          potentials, histogram=False) -> dict:
        res = self.distances(graph, sources, algorithm=algorithm, dtype=np.dtype(dtype),
                             potentials=potentials, device=True)
        red = self.row_reductions(res.distances)
        if checked32 and float(red["eccentricity"].max(initial=0)) >= FLOAT32_EXACT:
            return self._batch_reductions(graph, sources, algorithm, np.float64, False,
                                          potentials, histogram)
        if histogram:
            red["histogram"] = self.histogram_counts(res.distances, len(sources))
        return red

    def fill_rows_exact(self, graph: Graph, sources: np.ndarray, dist: np.ndarray,
                        pred: np.ndarray | None = None, **kw) -> np.ndarray:
        """:meth:`fill_rows` into a float32 ``dist`` checked batch by batch (a plan's
        ``checked32``); from a batch that fails the check on, the rows are computed in
        float64.  Returns ``dist``, or the float64 array that replaced it."""
        try:
            self.fill_rows(graph, sources, dist, pred, checked32=True, **kw)
            return dist
        except Float32Inexact as exc:
            lo = exc.rows_done
        wide = np.empty(dist.shape, dtype=np.float64)
        wide[:lo] = dist[:lo]
        del dist
        on_rows = kw.pop("on_rows", None)
        self.fill_rows(graph, sources[lo:], wide[lo:], None if pred is None else pred[lo:],
                       on_rows=on_rows and (lambda k: on_rows(lo + k)), **kw)
        return wide

    # -- betweenness ---------------------------------------------------------------------
    def dependency_bytes(self, graph: Graph) -> int:
        """Bytes Brandes' state of one source of a batch needs beside its row
        (:meth:`batch_dependencies`); none on the host, whose searches are per thread."""
        return 0

    def batch_dependencies(self, graph: Graph, block, sources: np.ndarray) -> np.ndarray:
        """Brandes' dependencies of ``sources`` summed per vertex (unscaled, host
        float64), ``block`` their rows of distances: here NetworkX's own searches on
        the calling thread (:mod:`mgapsp.cpu_sssp.brandes`), which need not the rows."""
        brandes = compiled("mgapsp.cpu_sssp.brandes")
        return brandes.betweenness_serial(graph.indptr, graph.indices, graph.weights,
                                          sources)

    @abstractmethod
    def memory_available(self) -> int:
        """Bytes this backend can use on its device right now."""

    @abstractmethod
    def memory_needed(self, graph: Graph, batch_size: int, *, algorithm: str,
                      dtype: np.dtype, predecessors: bool, fw_rows: int | None = None) -> int:
        """Bytes one batch of ``batch_size`` sources needs on the device.

        ``fw_rows``: Floyd-Warshall on a slab of that many rows (``mgapsp.jobs.floyd_warshall_slabs``)
        instead of the whole matrix."""
