"""The canonical in-memory graph: a CSR over vertices ``0 .. n-1``.

Every input (a file, a SciPy matrix, a dense array, a NetworkX graph, edge arrays)
becomes a :class:`Graph`.  Its CSR is canonical: rows sorted by target, one edge per
(source, target) pair holding the minimum weight of any duplicates, undirected inputs
stored with both directions.  The fingerprint is a hash of that CSR, so two inputs
that describe the same weighted digraph share it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .errors import EmptyGraphError, GraphFormatError

__all__ = ["Graph", "MAX_VERTICES"]

MAX_VERTICES = 2**31 - 1


@dataclass(eq=False)
class Graph:
    """A weighted directed graph in canonical CSR form.

    Attributes
    ----------
    indptr : ndarray of int64, shape (n + 1,)
    indices : ndarray of int32, shape (m,)
        Targets of the edges, sorted within each row.
    weights : ndarray of float64, shape (m,)
    directed : bool
        False when the input was undirected (the CSR then holds both directions).
    weighted : bool
        False when every weight is the implicit 1 of an unweighted input.
    vertex_ids : ndarray of int64, shape (n,)
        The id of each vertex in the input (``index`` or ``index + 1``).
    name : str
        A label for messages and the store (usually the file name).
    """

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    directed: bool = True
    weighted: bool = True
    vertex_ids: np.ndarray | None = None
    name: str = ""
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(self.indices, dtype=np.int32)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float64)
        if self.vertex_ids is None:
            self.vertex_ids = np.arange(self.n, dtype=np.int64)
        self.vertex_ids = np.ascontiguousarray(self.vertex_ids, dtype=np.int64)

    # -- sizes and properties -------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def m(self) -> int:
        return len(self.indices)

    @cached_property
    def min_weight(self) -> float:
        return float(self.weights.min()) if self.m else 0.0

    @property
    def has_negative_weights(self) -> bool:
        return self.min_weight < 0

    @property
    def density(self) -> float:
        """Edges over the n*n possible (self-loops included)."""
        return self.m / float(self.n) ** 2

    @cached_property
    def id_base(self) -> int:
        """1 when ``vertex_ids == index + 1`` (1-based formats), else 0."""
        ids = self.vertex_ids
        if self.n and ids[0] == 1 and np.array_equal(ids, np.arange(1, self.n + 1)):
            return 1
        return 0

    @cached_property
    def sources_of_edges(self) -> np.ndarray:
        """Source vertex of every edge (the CSR row expanded), int32."""
        return np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.indptr))

    @cached_property
    def fingerprint(self) -> str:
        """Hex digest of the canonical CSR (n, indptr, indices, weights)."""
        h = hashlib.blake2b(digest_size=16)
        h.update(b"mgapsp-csr-v1")
        h.update(np.int64(self.n).tobytes())
        h.update(self.indptr.astype("<i8").tobytes())
        h.update(self.indices.astype("<i4").tobytes())
        h.update(self.weights.astype("<f8").tobytes())
        return h.hexdigest()

    def to_scipy(self) -> sp.csr_array:
        """The graph as a SciPy CSR array; explicit zeros are zero-weight edges."""
        return sp.csr_array(
            (self.weights, self.indices, self.indptr), shape=(self.n, self.n), copy=False
        )

    @cached_property
    def _edge_keys(self) -> np.ndarray:
        # The canonical CSR is sorted by (source, target), so these keys are sorted.
        return self.sources_of_edges.astype(np.int64) * self.n + self.indices

    def edge_weights(self, src, dst) -> np.ndarray:
        """Weight of each edge ``src[k] -> dst[k]`` (internal indices); NaN where absent."""
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        keys = src * self.n + dst
        pos = np.searchsorted(self._edge_keys, keys)
        pos = np.minimum(pos, max(self.m - 1, 0))
        found = self._edge_keys[pos] == keys if self.m else np.zeros(len(keys), bool)
        return np.where(found, self.weights[pos] if self.m else np.nan, np.nan)

    def index_of(self, ids, *, what: str = "vertex") -> np.ndarray:
        """Map input vertex ids to internal indices; raise on unknown ids."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        if self.id_base == 0 and np.array_equal(self.vertex_ids, np.arange(self.n)):
            idx = ids
        elif self.id_base == 1:
            idx = ids - 1
        else:
            order = np.argsort(self.vertex_ids, kind="stable")
            pos = np.searchsorted(self.vertex_ids, ids, sorter=order)
            pos = np.clip(pos, 0, self.n - 1)
            idx = order[pos]
            bad = self.vertex_ids[idx] != ids
            if bad.any():
                raise GraphFormatError(f"unknown {what} id {int(ids[bad][0])}")
            return idx
        bad = (idx < 0) | (idx >= self.n)
        if bad.any():
            raise GraphFormatError(
                f"unknown {what} id {int(ids[bad][0])}: the graph's ids run from "
                f"{int(self.vertex_ids[0])} to {int(self.vertex_ids[-1])}"
            )
        return idx

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        w = "weighted" if self.weighted else "unweighted"
        return f"<Graph {self.name!r}: n={self.n}, m={self.m}, {kind}, {w}>"

    # -- construction ---------------------------------------------------------
    @classmethod
    def from_edges(
        cls,
        src,
        dst,
        weight=None,
        *,
        n: int | None = None,
        directed: bool = True,
        id_base: int = 0,
        vertex_ids=None,
        name: str = "",
        source: str | None = None,
    ) -> "Graph":
        """Build the canonical CSR from edge arrays.

        ``src`` and ``dst`` hold ids (``id_base`` is subtracted to get indices); ``n``
        defaults to the largest index + 1.  Duplicate edges keep the minimum weight;
        undirected graphs get both directions.  ``source`` names the input in errors.
        """
        where = source
        src = _as_index_array(src, "source", where)
        dst = _as_index_array(dst, "target", where)
        if src.shape != dst.shape:
            raise GraphFormatError(
                f"edge arrays differ in length: {len(src)} sources, {len(dst)} targets",
                where,
            )
        weighted = weight is not None
        if weighted:
            w = np.asarray(weight, dtype=np.float64).ravel()
            if w.shape != src.shape:
                raise GraphFormatError(
                    f"edge arrays differ in length: {len(src)} edges, {len(w)} weights",
                    where,
                )
            bad = ~np.isfinite(w)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise GraphFormatError(
                    f"edge {k} ({int(src[k])} -> {int(dst[k])}) has weight {w[k]!r}; "
                    "weights must be finite numbers",
                    where,
                )
        else:
            w = np.ones(len(src), dtype=np.float64)
        if id_base:
            src = src - id_base
            dst = dst - id_base
        for arr, what in ((src, "source"), (dst, "target")):
            if len(arr) and arr.min() < 0:
                k = int(np.argmin(arr))
                raise GraphFormatError(
                    f"edge {k} has {what} id {int(arr[k]) + id_base}; ids must be >= {id_base}",
                    where,
                )
        top = int(max(src.max(initial=-1), dst.max(initial=-1)))
        if n is None:
            n = top + 1
        elif top >= n:
            arr = src if src.max(initial=-1) == top else dst
            k = int(np.argmax(arr))
            raise GraphFormatError(
                f"edge {k} has vertex id {top + id_base}, beyond the declared "
                f"{n} vertices",
                where,
            )
        if n > MAX_VERTICES:
            raise GraphFormatError(f"{n} vertices exceed the limit of {MAX_VERTICES}", where)
        if len(src) == 0 or n == 0:
            raise EmptyGraphError("the graph has no edges", where)
        if not directed:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
            w = np.concatenate([w, w])
        indptr, indices, weights = _canonical_csr(src, dst, w, n)
        if vertex_ids is None:
            vertex_ids = np.arange(n, dtype=np.int64) + id_base
        if name == "" and source:
            name = os.path.basename(str(source))
        return cls(indptr, indices, weights, directed=directed, weighted=weighted,
                   vertex_ids=vertex_ids, name=name)


def _as_index_array(values, what: str, where: str | None) -> np.ndarray:
    arr = np.asarray(values).ravel()
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise GraphFormatError(f"edge {k} has {what} id {arr[k]!r}; ids must be integers", where)
    elif arr.dtype.kind not in "iub" and arr.size:
        raise GraphFormatError(f"{what} ids must be integers, got dtype {arr.dtype}", where)
    return arr.astype(np.int64)


def _canonical_csr(src, dst, w, n):
    """Sort by (src, dst, weight), keep the first (lightest) edge of each pair."""
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    keep = np.ones(len(src), dtype=bool)
    keep[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    src, dst, w = src[keep], dst[keep], w[keep]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst.astype(np.int32), w
