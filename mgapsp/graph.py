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
    quote,
)
from .memory import check_memory

__all__ = ["Graph", "MAX_VERTICES", "graph_bytes", "check_memory", "rank_labels",
           "check_graph_fits", "lookup_array"]

MAX_VERTICES = 2**31 - 1

#: Bytes per vertex of a graph being built: its indptr and labels (int64 each) and
#: the degree count (int64) its CSR is summed from.
BYTES_PER_VERTEX = 24
#: Bytes per edge the CSR keeps: the target (int32) and the weight (float64).
BYTES_PER_EDGE = 12
#: Bytes per edge record while it is converted: source, target (int64) and weight.
BYTES_PER_RECORD = 24


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
        1`` for formats that declare ``n``), uint64 (integers from 2**63 to 2**64 - 1,
        none negative), strings, or Python objects (a NetworkX graph's hashable nodes,
        such as tuples); also :attr:`labels`.  Memory follows the vertices that exist,
        never the largest label.
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
        self.vertex_ids = _label_array(self.vertex_ids, objects=True)
        if len(self.vertex_ids) != self.n:
            raise ValueError(f"{len(self.vertex_ids)} labels for {self.n} vertices")

    @property
    def labels(self) -> np.ndarray:
        """The label of each vertex (int64, uint64, str or object), indexed by
        internal index."""
        return self.vertex_ids

    @property
    def object_labels(self) -> bool:
        """True where the labels are Python objects (tuples, mixed kinds): then a
        tuple given as a source or target is one label, never a sequence of them."""
        return self.vertex_ids.dtype == object

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
        with np.errstate(over="ignore"):        # inf: past float64 (see plan.choose_dtype)
            return float(min(max(self.n - 1, 0) * w.max(), w.sum()))

    @property
    def exact_float64_sums(self) -> bool:
        """Whether every path's sum is exact in float64, whichever way it is added or
        rounded: integer weights whose sums stay below 2**53."""
        return self.integral_weights and self.path_sum_bound < 2.0**53

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
        if self.object_labels:
            return self._object_index_of(labels, what)
        wanted = lookup_array(labels, self.vertex_ids.dtype, what)
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

    def _object_index_of(self, labels, what: str) -> np.ndarray:
        # objects of mixed kinds have no order to search: a dict, by equality and hash
        # as NetworkX finds its nodes; a tuple or a string is one label here
        if isinstance(labels, (list, np.ndarray)):
            wanted = list(np.asarray(labels, dtype=object).ravel()) if \
                isinstance(labels, np.ndarray) else labels
        else:
            wanted = [labels]
        out = np.empty(len(wanted), dtype=np.int64)
        for k, label in enumerate(wanted):
            label = label.item() if isinstance(label, np.generic) else label
            try:
                out[k] = self._object_index[label]
            except (KeyError, TypeError):       # TypeError: unhashable, so no node
                raise UnknownLabelError(f"unknown {what} {_shown(label)}: no vertex of "
                                        "the graph has that label") from None
        return out

    @cached_property
    def _object_index(self) -> dict:
        return {label: k for k, label in enumerate(self.vertex_ids.tolist())}

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
        empty_ok: bool = False,
    ) -> "Graph":
        """Build the canonical CSR from edge arrays.

        ``src`` and ``dst`` hold ids (``id_base`` is subtracted to get indices); ``n``
        defaults to the largest index + 1.  With ``renumber`` they hold labels of any
        kind (integers of 64 bits, negative ones too, or strings): the vertices are the
        distinct labels, numbered in sorted order (so dense 0-based ids keep their
        numbers), as many as there are, whatever the labels' size.  Duplicate edges keep
        the minimum weight; undirected graphs get both directions.  ``source`` names
        the input in errors; ``empty_ok`` lets an in-memory input have no vertices
        (its answer is empty, as SciPy's), where a file without any is an error.  A
        graph that would not fit in the memory this process can
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
            kinds = {ends[0].dtype.kind, ends[1].dtype.kind}
            if len(kinds) > 1:  # int64 and uint64 ends stay integers; with text, text
                ends = [e.astype(object) if kinds <= set("iuO") else
                        np.array([str(v) for v in e.tolist()], dtype=str) for e in ends]
            labels = _label_array(np.concatenate(ends))
            m = len(labels) // 2
            if labels.dtype == np.int64:    # a fresh array: ranked in place
                vertex_ids = rank_labels(labels)
                src, dst = labels[:m], labels[m:]
            else:
                vertex_ids, inverse = np.unique(labels, return_inverse=True)
                src, dst = inverse[:m].astype(np.int64), inverse[m:].astype(np.int64)
            if len(vertex_ids) > MAX_VERTICES:
                raise GraphFormatError(f"{len(vertex_ids)} vertices exceed the limit of "
                                       f"{MAX_VERTICES}", where)
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
            w = None            # every weight 1, made once the edges are merged
        for arr, what in ((src, "source"), (dst, "target")):
            if len(arr) and arr.min() < id_base:
                k = int(np.argmin(arr))
                raise GraphFormatError(
                    f"edge {k} has {what} id {int(arr[k])}; ids must be >= {id_base}",
                    where,
                )
        top = int(max(src.max(initial=id_base - 1), dst.max(initial=id_base - 1))) - id_base
        if n is None:
            n = top + 1
        elif top >= n:
            arr = src if src.max(initial=id_base - 1) == top + id_base else dst
            k = int(np.argmax(arr))
            raise GraphFormatError(
                f"edge {k} has vertex id {top + id_base}, beyond the declared "
                f"{n} vertices",
                where,
            )
        if n > MAX_VERTICES:
            raise GraphFormatError(f"{n} vertices exceed the limit of {MAX_VERTICES}", where)
        if n == 0 and not empty_ok:
            raise EmptyGraphError("the graph has no vertices", where)
        check_graph_fits(f"a graph of {n:,} vertices and {len(src):,} "
                         f"edge{'' if len(src) == 1 else 's'}", n,
                         len(src) * (1 if directed else 2), where=where)
        indptr, indices, weights = _canonical_csr(src, dst, w, n, id_base, both=not directed)
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
        arr = _label_vector(values)
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
    # int32 ids are kept (a reader's, within MAX_VERTICES): the CSR's keys widen them
    return arr if arr.dtype in (np.int32, np.int64) else arr.astype(np.int64)


def rank_labels(*arrays: np.ndarray) -> np.ndarray:
    """Integer labels (int64 arrays, changed in place) replaced by their rank among the
    distinct labels of all of them; returns those labels, sorted.  Labels within a span
    of a few times their count are ranked through a table of the span (no sort, no
    copy of the arrays), others by sorting."""
    size = sum(len(a) for a in arrays)
    if not size:
        return np.empty(0, dtype=np.int64)
    lo = min(int(a.min()) for a in arrays if len(a))
    span = max(int(a.max()) for a in arrays if len(a)) - lo + 1
    if span > 2 * size + (1 << 16):
        ids, inverse = np.unique(np.concatenate(arrays), return_inverse=True)
        at = 0
        for a in arrays:
            a[:] = inverse[at:at + len(a)]
            at += len(a)
        return ids
    present = np.zeros(span, dtype=bool)
    for a in arrays:
        a -= lo
        present[a] = True
    rank = np.cumsum(present, dtype=np.int64)
    rank -= 1
    for a in arrays:            # in slices: a take into its own index array copies
        for i in range(0, len(a), 1 << 20):
            part = a[i:i + (1 << 20)]
            part[:] = rank[part]
    ids = np.flatnonzero(present)
    ids += lo
    return ids


def _canonical_csr(src, dst, w, n, base=0, both=False):
    """The CSR of the edges ``src -> dst`` (ids from ``base``; with ``both`` each edge
    both ways): each row's targets ascending, the lightest of parallel edges kept;
    ``w`` None: every weight 1.

    Each edge is one int64 key, ``source * n + target``, sorted (in place when there are
    no weights to carry), so that a graph of m edges is built in about 8 m bytes beyond
    its input and its CSR."""
    m = len(src)
    key = np.empty(m * (2 if both else 1), dtype=np.int64)
    for k, (a, b) in enumerate([(src, dst), (dst, src)] if both else [(src, dst)]):
        part = key[k * m:(k + 1) * m]
        np.multiply(a, n, out=part, dtype=np.int64)     # int32 ids: widened first
        part += b
    if base:
        key -= base * (n + 1)
    if w is not None:
        if both:                # the second half of the keys: the same edges reversed
            w = np.concatenate([w, w])
        # by key, then weight: the first of each key's run is its lightest edge
        order = np.lexsort((w, key))
        w = w[order]
        del order
    key.sort()
    first = np.empty(len(key), dtype=bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    if w is not None:
        w = w[first]
    key = key[first]
    del first
    # each row's start: where its first key would be (the keys are sorted)
    indptr = np.searchsorted(key, np.arange(n + 1, dtype=np.int64) * n)
    np.remainder(key, max(n, 1), out=key)
    indices = key.astype(np.int32)
    del key
    return indptr, indices, np.ones(len(indices)) if w is None else w


def _label_vector(values) -> np.ndarray:
    """``values`` as an array, where a Python sequence holding an integer beyond int64
    stays objects: NumPy would read ``[10**19, 1]`` as float64 (rounded) and
    ``[-1, 2**64 - 1]`` as float64 too."""
    if isinstance(values, (list, tuple)) and any(
            isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63
            for v in values):
        return np.fromiter(values, dtype=object, count=len(values))
    return np.asarray(values)


def _integer_labels(arr: np.ndarray) -> np.ndarray:
    """Integer labels as int64, or as uint64 where one is 2**63 or more and none is
    negative; Python integers that neither holds are refused, never cast."""
    values = arr.tolist()
    if all(-2**63 <= int(v) < 2**63 for v in values):
        return np.array(values, dtype=np.int64)
    if all(0 <= int(v) < 2**64 for v in values):
        return np.array(values, dtype=np.uint64)
    bad = next(v for v in values if not (-2**63 <= int(v) < 2**63))
    raise GraphFormatError(f"label {quote(int(bad))} is beyond 64-bit integers (labels "
                           "must fit int64, or uint64 where none is negative); give "
                           "such labels as text")


def _label_array(labels, *, objects: bool = False) -> np.ndarray:
    """Labels as int64 where they are all integers within int64, as uint64 where they
    are integers up to 2**64 - 1 and none negative, else as strings; with ``objects``
    labels of other kinds (tuples, mixed ints and text) stay Python objects."""
    arr = labels if isinstance(labels, np.ndarray) else _label_vector(labels)
    if arr.dtype.kind in "ib" or (arr.dtype.kind == "u" and arr.dtype.itemsize < 8):
        return np.ascontiguousarray(arr, dtype=np.int64).ravel()
    if arr.dtype.kind == "u":           # uint64: int64 where every value fits it
        arr = arr.ravel()
        fits = not len(arr) or int(arr.max()) < 2**63
        return np.ascontiguousarray(arr, dtype=np.int64 if fits else np.uint64)
    if arr.dtype.kind == "U":
        return np.ascontiguousarray(arr).ravel()
    if arr.dtype.kind == "O" and arr.ndim == 1 and objects and len(arr) and not all(
            isinstance(v, str) for v in arr.tolist()) and not all(
            _is_int(v) for v in arr.tolist()):
        return arr
    arr = arr.ravel()
    if arr.dtype.kind == "O" and len(arr) and all(_is_int(v) for v in arr.tolist()):
        try:
            return _integer_labels(arr)
        except GraphFormatError:
            if objects:         # NetworkX nodes beyond 64 bits: kept as they are
                return arr
            raise
    if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
        return arr.astype(np.int64)
    return np.array([str(v) for v in arr], dtype=str)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def lookup_array(labels, dtype: np.dtype, what: str) -> np.ndarray:
    """``labels`` (a label or a sequence) as an array comparable with labels of
    ``dtype``; a label of the wrong kind, or an integer outside ``dtype``'s range (never
    wrapped into it), raises UnknownLabelError."""
    if dtype.kind == "U" and isinstance(labels, list):
        # each item one label, a tuple's text too (a store of NetworkX tuple nodes)
        return np.array([str(v) for v in labels], dtype=str) if labels else \
            np.array([], dtype=str)
    arr = _label_vector(labels)
    if arr.ndim > 1:        # [(0, 0)] must not become the labels 0 and 0
        raise UnknownLabelError(f"unknown {what} {_shown(arr.tolist()[0])}: labels are "
                                "one label or a flat sequence of them")
    arr = arr.ravel() if arr.ndim else arr.reshape(1)
    if dtype.kind in "iu":
        kind = "integers"
        if arr.dtype.kind in "iub":     # the common case, whole arrays at once
            info = np.iinfo(dtype)
            if arr.dtype.kind == "b" or not len(arr) or (
                    int(arr.min()) >= info.min and int(arr.max()) <= info.max):
                return arr.astype(dtype)
        if arr.dtype.kind == "f":
            ok = np.isfinite(arr) & (arr == np.round(arr))
            if not ok.all():
                raise UnknownLabelError(f"unknown {what} {_shown(arr[~ok][0])}: the "
                                        f"graph's labels are {kind}")
        lo, hi = (-2**63, 2**63) if dtype.kind == "i" else (0, 2**64)
        out = np.empty(len(arr), dtype=dtype)
        for k, v in enumerate(arr.tolist()):
            try:
                value = int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
                    else int(str(v).strip())
            except (ValueError, OverflowError):
                raise UnknownLabelError(f"unknown {what} {_shown(v)}: the graph's labels "
                                        f"are {kind}") from None
            if not lo <= value < hi:    # no vertex has it: never wrapped into range
                raise UnknownLabelError(f"unknown {what} {_shown(v)}: no vertex of the "
                                        "graph has that label")
            out[k] = value
        return out
    return np.array([str(v) for v in arr.tolist()], dtype=str) if len(arr) else arr.astype(str)


def _shown(label) -> str:
    return quote(label)
