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

from .errors import (
    EmptyGraphError,
    GraphFormatError,
    UnknownLabelError,
    _fmt_bytes,
    quote,
)
from .memory import memory_limit

__all__ = ["Graph", "MAX_VERTICES", "graph_bytes", "check_memory",
           "check_graph_fits"]

MAX_VERTICES = 2**31 - 1

#: Bytes per vertex of a graph being built: its indptr and labels (int64 each) and
#: the degree count (int64) its CSR is summed from.
BYTES_PER_VERTEX = 24
#: Bytes per edge the CSR keeps: the target (int32) and the weight (float64).
BYTES_PER_EDGE = 12
#: Bytes per edge record while it is converted: source, target (int64) and weight.
BYTES_PER_RECORD = 24
#: Below this estimate nothing is checked (no need to ask the system).
_CHECK_ABOVE = 2**28


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
    vertex_ids : ndarray, shape (n,)
        The label of each vertex in the input: int64 (any 64-bit integers; ``index +
        1`` for formats that declare ``n``) or strings; also :attr:`labels`.  Memory
        follows the vertices that exist, never the largest label.
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
        self.vertex_ids = _label_array(self.vertex_ids)
        if len(self.vertex_ids) != self.n:
            raise ValueError(f"{len(self.vertex_ids)} labels for {self.n} vertices")

    @property
    def labels(self) -> np.ndarray:
        """The label of each vertex (int64 or str), indexed by internal index."""
        return self.vertex_ids

    @property
    def text_labels(self) -> bool:
        """True where the labels are strings rather than integers."""
        return self.vertex_ids.dtype.kind != "i"
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

    @cached_property
    def integral_weights(self) -> bool:
        """Whether every weight is an integer."""
        return bool(np.all(self.weights == np.round(self.weights)))

    @cached_property
    def path_sum_bound(self) -> float:
        """An upper bound of ``|w|`` summed along any simple path: the smaller of
        (n - 1) times the largest ``|w|`` and the sum of every ``|w|``."""
        if not self.m:
            return 0.0
        w = np.abs(self.weights)
        return float(min(max(self.n - 1, 0) * w.max(), w.sum()))

    @property
    def has_negative_weights(self) -> bool:
        return self.min_weight < 0

    @property
    def density(self) -> float:
        """Edges over the n*n possible (self-loops included)."""
        return self.m / float(self.n) ** 2

    @cached_property
    def id_base(self) -> int | None:
        """0 or 1 when the labels are ``index + 0`` or ``index + 1``, else None."""
        ids = self.vertex_ids
        if ids.dtype.kind != "i":
            return None
        for base in (0, 1):
            if self.n == 0 or (ids[0] == base and ids[-1] == self.n - 1 + base
                               and np.array_equal(ids, np.arange(base, self.n + base))):
                return base
        return None

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

    def index_of(self, labels, *, what: str = "vertex") -> np.ndarray:
        """Internal indices of vertex ``labels`` (one label or a sequence of them);
        an unknown label raises :class:`~mgapsp.errors.UnknownLabelError` naming it."""
        wanted = _lookup_array(labels, self.vertex_ids.dtype, what)
        base = self.id_base
        if base is not None:
            idx = wanted - base
            bad = (idx < 0) | (idx >= self.n)
        else:
            order = self._label_order
            pos = np.searchsorted(self.vertex_ids, wanted, sorter=order)
            idx = order[np.clip(pos, 0, max(self.n - 1, 0))] if self.n else pos
            bad = (self.vertex_ids[idx] != wanted) if self.n else np.ones(len(wanted), bool)
        if bad.any():
            raise UnknownLabelError(f"unknown {what} {_shown(wanted[bad][0])}: no vertex "
                                    f"of the graph has that label")
        return np.asarray(idx, dtype=np.int64)

    @cached_property
    def _label_order(self) -> np.ndarray:
        return np.argsort(self.vertex_ids, kind="stable")

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
        renumber: bool = False,
    ) -> "Graph":
        """Build the canonical CSR from edge arrays.

        ``src`` and ``dst`` hold ids (``id_base`` is subtracted to get indices); ``n``
        defaults to the largest index + 1.  With ``renumber`` they hold labels of any
        kind (integers of 64 bits, negative ones too, or strings): the vertices are the
        distinct labels, numbered in sorted order (so dense 0-based ids keep their
        numbers), as many as there are, whatever the labels' size.  Duplicate edges keep
        the minimum weight; undirected graphs get both directions.  ``source`` names
        the input in errors.  A graph that would not fit in the memory this process can
        still allocate (:func:`check_graph_fits`) is refused before its per-vertex
        arrays exist.
        """
        where = source
        if renumber:
            ends = [_label_input(src, "source", where), _label_input(dst, "target", where)]
            if len(ends[0]) != len(ends[1]):
                raise GraphFormatError(
                    f"edge arrays differ in length: {len(ends[0])} sources, "
                    f"{len(ends[1])} targets", where)
            if ends[0].dtype.kind != ends[1].dtype.kind:    # integers and text: as objects
                ends = [e.astype(object) for e in ends]
            labels = _label_array(np.concatenate(ends))
            vertex_ids, inverse = np.unique(labels, return_inverse=True)
            if len(vertex_ids) > MAX_VERTICES:
                raise GraphFormatError(f"{len(vertex_ids)} vertices exceed the limit of "
                                       f"{MAX_VERTICES}", where)
            m = len(labels) // 2
            src, dst = inverse[:m].astype(np.int64), inverse[m:].astype(np.int64)
            n, id_base = len(vertex_ids), 0
        src = _as_index_array(src, "source", where)
        dst = _as_index_array(dst, "target", where)
        if src.shape != dst.shape:
            raise GraphFormatError(
                f"edge arrays differ in length: {len(src)} sources, {len(dst)} targets",
                where,
            )
        weighted = weight is not None
        if weighted:
            w = _weight_array(weight, where)
            if w.shape != src.shape:
                raise GraphFormatError(
                    f"edge arrays differ in length: {len(src)} edges, {len(w)} weights",
                    where,
                )
            bad = ~np.isfinite(w)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise GraphFormatError(
                    f"edge {k} ({int(src[k])} -> {int(dst[k])}) has weight {quote(w[k])}; "
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
        if n == 0:
            raise EmptyGraphError("the graph has no vertices", where)
        check_graph_fits(f"a graph of {n:,} vertices and {len(src):,} "
                         f"edge{'' if len(src) == 1 else 's'}", n,
                         len(src) * (1 if directed else 2), where=where)
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


def graph_bytes(n: int, edges: int = 0, *, records: int = 0, dense: int = 0) -> int:
    """A lower bound of the bytes that building a graph takes: ``n`` vertices,
    ``edges`` edges kept in the CSR (both directions of an undirected edge count),
    ``records`` edge records converted on the way, and a dense matrix of ``dense``
    float64 values read first (``n * n`` for a full matrix)."""
    return (BYTES_PER_VERTEX * (int(n) + 1) + BYTES_PER_EDGE * int(edges)
            + BYTES_PER_RECORD * int(records) + 8 * int(dense))


def check_memory(what: str, needed: int, *, where: str | None = None,
                 line: int | None = None, subject: str = "the graph") -> None:
    """Raise :class:`GraphFormatError` ``"<what>: <subject> would need X, this machine
    has Y available"`` (``where:line:`` first) when ``needed`` bytes exceed
    :func:`mgapsp.memory.available_memory`.  Small amounts pass without asking the system."""
    if needed <= _CHECK_ABOVE:
        return
    free, who = memory_limit()
    if needed > free:
        raise GraphFormatError(f"{what}: {subject} would need {_fmt_bytes(needed)}, "
                               f"{who} {_fmt_bytes(free)} available", where, line)


def check_graph_fits(what: str, n: int, edges: int = 0, *, records: int = 0,
                     dense: int = 0, where: str | None = None,
                     line: int | None = None) -> None:
    """:func:`check_memory` of :func:`graph_bytes`: call it before any array sized by
    the declared counts exists."""
    check_memory(what, graph_bytes(n, edges, records=records, dense=dense), where=where,
                 line=line)


def _label_input(values, what: str, where: str | None) -> np.ndarray:
    """The labels at one end of the edges as a flat array; None, nested sequences and
    complex numbers are no labels."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):     # ragged nesting
        raise GraphFormatError(f"the edge {what}s must be a flat sequence of labels",
                               where) from None
    if arr.dtype.kind == "c":
        raise GraphFormatError(f"{what} labels must be integers or strings, got dtype "
                               f"{arr.dtype}", where)
    arr = arr.ravel()
    if arr.dtype.kind == "O":
        for k, v in enumerate(arr.tolist()):
            if v is None or isinstance(v, (list, tuple, dict, set, complex)):
                raise GraphFormatError(f"edge {k} has {what} {quote(v)}; labels must be "
                                       "integers or strings", where)
    return arr


def _weight_array(weight, where: str | None) -> np.ndarray:
    """Edge weights as float64; text, objects and complex numbers are refused."""
    arr = np.asarray(weight)
    if arr.dtype.kind == "c":
        raise GraphFormatError(f"weights must be real numbers, got dtype {arr.dtype}", where)
    try:
        return np.asarray(arr, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        flat = arr.ravel()
        for k, v in enumerate(flat.tolist()):
            try:
                float(v)
            except (TypeError, ValueError):
                raise GraphFormatError(f"edge {k} has weight {quote(v)}; weights must be "
                                       "numbers", where) from None
        raise GraphFormatError(f"weights must be numbers, got dtype {arr.dtype}",
                               where) from None


def _as_index_array(values, what: str, where: str | None) -> np.ndarray:
    arr = np.asarray(values).ravel()
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise GraphFormatError(f"edge {k} has {what} id {quote(arr[k])}; ids must "
                                   "be integers", where)
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


def _label_array(labels) -> np.ndarray:
    """Labels as int64 where they are all integers within 64 bits, else as strings."""
    arr = np.asarray(labels)
    if arr.dtype.kind in "iub":
        return np.ascontiguousarray(arr, dtype=np.int64).ravel()
    if arr.dtype.kind == "U":
        return np.ascontiguousarray(arr).ravel()
    arr = arr.ravel()
    if arr.dtype.kind == "O" and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                     and -2**63 <= int(v) < 2**63 for v in arr):
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
        return arr.astype(np.int64)
    return np.array([str(v) for v in arr], dtype=str)


def _lookup_array(labels, dtype: np.dtype, what: str) -> np.ndarray:
    """``labels`` (a label or a sequence) as an array comparable with labels of
    ``dtype``; a label of the wrong kind raises UnknownLabelError."""
    arr = np.asarray(labels)
    arr = arr.ravel() if arr.ndim else arr.reshape(1)
    if dtype.kind == "i":
        if arr.dtype.kind in "iub":
            return arr.astype(np.int64)
        if arr.dtype.kind == "f":
            ok = np.isfinite(arr) & (arr == np.round(arr))
            if ok.all():
                return arr.astype(np.int64)
            raise UnknownLabelError(f"unknown {what} {_shown(arr[~ok][0])}: the graph's "
                                    "labels are integers")
        out = np.empty(len(arr), dtype=np.int64)
        for k, v in enumerate(arr.tolist()):
            try:
                out[k] = int(str(v).strip()) if not isinstance(v, int) else v
            except (ValueError, OverflowError):
                raise UnknownLabelError(f"unknown {what} {_shown(v)}: the graph's labels "
                                        "are integers") from None
        return out
    return np.array([str(v) for v in arr.tolist()], dtype=str) if len(arr) else arr.astype(str)


def _shown(label) -> str:
    return quote(label)
