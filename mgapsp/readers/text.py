"""Format names, and edge records turned into a Graph.

Edge records are parsed twice over only when something is wrong: a fast pass with
:func:`numpy.loadtxt` converts a block of records, and when it refuses them a plain
Python pass (the reference) walks the same records again to find and name the bad
line.  The fast and reference passes and the value checks must agree line for line,
and are kept side by side for that; the lines themselves come from :mod:`.lines`.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import EmptyGraphError, GraphFormatError, quote
from ..graph import (BYTES_PER_EDGE, BYTES_PER_RECORD, BYTES_PER_VERTEX, MAX_VERTICES, Graph,
                     check_graph_fits, check_memory, rank_labels)
from .lines import BLOCK_PEAK, RECORD_PEAK_BYTES, iter_lines


#: The format names :func:`read_graph` accepts (besides ``"auto"``).
FORMATS = ("snap", "csv", "tsv", "dimacs", "pace", "mtx", "tntp", "tsplib")

_EXTENSIONS = {
    ".txt": "snap",
    ".edges": "snap",
    ".el": "snap",
    ".csv": "csv",
    ".tsv": "tsv",
    ".mtx": "mtx",
    ".tntp": "tntp",
    ".tsp": "tsplib",
    ".atsp": "tsplib",
}

# Ids beyond this cannot index a Graph anyway; bounding them keeps int64 safe.
_ID_LIMIT = 2**62




def detect_format(path: str | os.PathLike) -> str:
    """Name the format of a graph file from its extension.

    The extension is taken after stripping ``.gz``.  A ``.gr`` file is DIMACS 9
    (``p sp`` header) or PACE (``p tw`` header): the file is opened to read its
    ``p`` line.

    Parameters
    ----------
    path : str or os.PathLike
        The graph file.

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    GraphFormatError
        The extension is unknown, or a ``.gr`` file has no ``p sp``/``p tw`` line
        (or cannot be read).
    """
    path = os.fspath(path)
    ext = file_extension(path)
    if ext == ".gr":
        return _sniff_gr(iter_lines(path), path)
    try:
        return _EXTENSIONS[ext]
    except KeyError:
        shown = quote(ext) if ext else "(none)"
        raise GraphFormatError(
            f"cannot tell the format from the extension {shown}; pass format= one of "
            f"{', '.join(FORMATS)} (known extensions: "
            f"{', '.join(sorted(set(_EXTENSIONS) | {'.gr'}))}, each optionally + .gz)",
            path,
        ) from None


# =============================================================================
# files and format names
# =============================================================================
@dataclass(frozen=True)
class ReadOptions:
    path: str
    directed: bool | None
    unweighted: bool
    weight_column: str | int | None

    def directed_or(self, default: bool) -> bool:
        return default if self.directed is None else bool(self.directed)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def file_extension(path: str) -> str:
    name = os.path.basename(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def _sniff_gr(lines, path: str) -> str:
    """'dimacs' or 'pace', from the ``p`` line of a ``.gr`` file."""
    for lineno, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s or s[0] == "c":
            continue
        fields = s.split()
        if fields[0] == "p" and len(fields) >= 2:
            kind = fields[1].lower()
            if kind == "sp":
                return "dimacs"
            if kind == "tw":
                return "pace"
            raise GraphFormatError(
                f"cannot tell DIMACS from PACE: the 'p' line says {quote(fields[1])}, "
                "expected 'sp' (DIMACS) or 'tw' (PACE); pass format=",
                path, lineno,
            )
        raise GraphFormatError(
            f"cannot tell DIMACS from PACE: no 'p sp' or 'p tw' line before the first "
            f"record {quote(s)}; pass format='dimacs' or format='pace'",
            path, lineno,
        )
    raise GraphFormatError(
        "cannot tell DIMACS from PACE: the file has no 'p sp' or 'p tw' line; pass "
        "format='dimacs' or format='pace'",
        path,
    )


def resolve_format(format: str, path: str, lines: list[str]) -> str:
    if not isinstance(format, str):
        raise GraphFormatError(
            f"format must be a string, got {type(format).__name__}", path)
    fmt = format.lower()
    if fmt == "auto":
        if file_extension(path) == ".gr":
            return _sniff_gr(lines, path)
        return detect_format(path)
    if fmt not in FORMATS:
        raise GraphFormatError(
            f"unknown format {quote(format)}; valid formats: auto, {', '.join(FORMATS)}", path)
    return fmt


# =============================================================================
# edge records: a fast pass, a reference pass, and the value checks
# =============================================================================
@dataclass(frozen=True)
class Records:
    """How the edge records of a file are laid out.

    Columns count fields from 0 and include ``tag`` when there is one.
    """

    ncols: int                    # fields a record has (at least, with extra_ok)
    src: int
    dst: int
    weight: int | None            # None: not read (unweighted)
    names: tuple[str, ...]        # field names, for messages
    extra_ok: bool = False        # further fields allowed and ignored
    delimiter: str | None = None  # None: runs of whitespace
    tag: str | None = None        # required first field (DIMACS "a")
    #: with ``extra_ok``, the most fields a record may have (the columns its header
    #: names, or its first record's), and what says so; None: any number
    width: int | None = None
    width_from: str = ""

    def fields(self, row: str) -> list[str]:
        if self.delimiter is None:
            return row.split()
        return [f.strip() for f in row.split(self.delimiter)]

    def expected(self) -> str:
        names = joined_fields(self.names[: self.ncols]).replace(", ", " ")
        at_least = "at least " if self.extra_ok else ""
        return f"{at_least}{self.ncols} fields ({names})"


def _convert_fast(rows: list[str], rec: Records, labels: bool = False,
                  text: bool = False):
    """Convert records with :func:`numpy.loadtxt`; None when it refuses them.

    Accepts a subset of what :func:`_convert_slow` accepts, and gives the same
    arrays where both accept.  With ``labels`` the ids may be any text (see
    :func:`_labels`; ``text``: kept as text, integers too).
    """
    if not rows:
        return None
    shift = 0
    if rec.tag is not None:
        lead = rec.tag + " "
        if not all(r.startswith(lead) for r in rows):
            return None
        rows = [r[len(lead):] for r in rows]
        shift = 1
    wanted = [rec.src, rec.dst] + ([rec.weight] if rec.weight is not None else [])
    if rec.extra_ok and rec.width is None:
        cols = wanted
        usecols = tuple(c - shift for c in cols)
    else:
        # every column, so that a record with more than its header names is refused
        # (by the reference pass, which names its line); columns not read are any text
        cols = list(range(shift, rec.width if rec.extra_ok else rec.ncols))
        usecols = None
    table = None
    for ids in ("O",) if text else ("i8", "O") if labels else ("i8",):
        dtype = np.dtype([(f"f{c}", ids if c in (rec.src, rec.dst)
                           else "f8" if c == rec.weight else "O") for c in cols])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = np.loadtxt(io.StringIO("\n".join(rows)), dtype=dtype,
                                   delimiter=rec.delimiter, comments=None,
                                   usecols=usecols, ndmin=1, encoding=None)
            break
        except (ValueError, TypeError, IndexError):
            continue
    if table is None or len(table) != len(rows):
        return None
    src = np.ascontiguousarray(table[f"f{rec.src}"])
    dst = np.ascontiguousarray(table[f"f{rec.dst}"])
    if src.dtype.kind == "O":
        if any(not str(t).strip() for t in np.r_[src, dst]):
            return None     # an empty id: the reference pass names its line
        src, dst = _labels(src, text), _labels(dst, text)
        if src.dtype != dst.dtype:      # integers on one side only: text on both
            src, dst = src.astype(str), dst.astype(str)
    w = None if rec.weight is None else np.ascontiguousarray(table[f"f{rec.weight}"])
    return src, dst, w


def _parse_id(tok: str) -> int:
    if "_" in tok:
        raise ValueError(tok)
    value = int(tok)
    if not -_ID_LIMIT < value < _ID_LIMIT:
        raise ValueError(tok)
    return value


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _labels(tokens, as_text: bool = False) -> np.ndarray:
    """Vertex labels from their tokens: int64 where every token is an integer within 64
    bits (``007`` is 7) and not ``as_text``, else the tokens' text."""
    text = [str(t).strip() for t in tokens]
    if not as_text and all(_INTEGER.fullmatch(t) for t in text):
        try:
            return np.array([int(t) for t in text], dtype=np.int64)
        except OverflowError:
            pass
    return np.array(text, dtype=str)


def parse_float(tok: str) -> float:
    if "_" in tok:
        raise ValueError(tok)
    return float(tok)


def _convert_slow(rows: list[str], linenos: list[int], rec: Records, path: str,
                  labels: bool = False, text: bool = False):
    """Convert records one line at a time; the reference for :func:`_convert_fast`.

    Raises GraphFormatError at the first line with the wrong fields or with text
    where a number belongs (a weight; an id, unless ``labels``).
    """
    n = len(rows)
    src = np.empty(n, dtype=object if labels else np.int64)
    dst = np.empty(n, dtype=object if labels else np.int64)
    w = None if rec.weight is None else np.empty(n, dtype=np.float64)
    for k, (row, lineno) in enumerate(zip(rows, linenos)):
        fields = rec.fields(row)
        if rec.tag is not None and fields[0] != rec.tag:
            raise GraphFormatError(
                f"expected a record starting with {quote(rec.tag)}, got {quote(row)}",
                path, lineno)
        if len(fields) < rec.ncols or (len(fields) > rec.ncols and not rec.extra_ok):
            raise GraphFormatError(
                f"expected {rec.expected()}, got {len(fields)} in {quote(row)}",
                path, lineno)
        for col, out, what in ((rec.src, src, "source"), (rec.dst, dst, "target")):
            if labels:
                if not fields[col].strip():
                    raise GraphFormatError(f"{what} id '' is empty", path, lineno)
                out[k] = fields[col]
                continue
            try:
                out[k] = _parse_id(fields[col])
            except ValueError:
                raise GraphFormatError(
                    f"{what} id {quote(fields[col])} is not an integer", path, lineno) from None
        if w is not None:
            try:
                w[k] = parse_float(fields[rec.weight])
            except ValueError:
                raise GraphFormatError(
                    f"weight {quote(fields[rec.weight])} is not a number", path, lineno) from None
        if rec.extra_ok and rec.width is not None and len(fields) > rec.width:
            raise GraphFormatError(
                f"{len(fields)} fields in {quote(row)}, but {rec.width_from} "
                f"{rec.width}: a column nothing names is not dropped silently (name it "
                "in a header, or read it unweighted: --unweighted, unweighted=True)",
                path, lineno)
    if labels:
        src, dst = _labels(src, text), _labels(dst, text)
        if src.dtype != dst.dtype:
            src, dst = src.astype(str), dst.astype(str)
    return src, dst, w


def first_record(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


def _check_values(src, dst, w, rows, linenos, rec: Records, path: str, *,
                  base: int, n: int | None, n_line: int | None) -> None:
    """Raise on the first record with a bad id or a weight that is not finite (ids are
    checked where the header declares ``n``; labels of edge lists are free)."""
    for_col = []
    for arr, what in ((src, "source"), (dst, "target")) if n is not None else ():
        bad = arr < base
        if n is not None:
            bad |= arr > n - 1 + base
        else:
            bad |= arr >= MAX_VERTICES + base
        k = first_record(bad)
        if k is not None:
            for_col.append((k, what, int(arr[k])))
    if for_col:
        k, what, value = min(for_col)
        if n is not None:
            msg = (f"{what} id {value} is out of range {base}..{n - 1 + base} "
                   f"({n} vertices declared on line {n_line})")
            if base == 1 and value == 0:
                msg = f"{what} id 0 is out of range: ids in this format start at 1"
        elif value < 0:
            msg = f"{what} id {value} is negative"
        elif value >= MAX_VERTICES + base:
            msg = (f"{what} id {value} is too large: a graph holds at most "
                   f"{MAX_VERTICES} vertices")
        else:
            msg = f"{what} id {value} is out of range: ids start at {base}"
        raise GraphFormatError(msg, path, linenos[k])
    if w is not None:
        k = first_record(~np.isfinite(w))
        if k is not None:
            tok = rec.fields(rows[k])[rec.weight]
            raise GraphFormatError(f"weight {quote(tok)} is not a finite number", path,
                                   linenos[k])


class _TextLabels(Exception):
    """A block of labels that are not all integers after blocks that were."""


def _convert_blocks(blocks, rec: Records, path: str, *, labels: bool, text: bool,
                    base: int, n: int | None, n_line: int | None,
                    expected: int | None, counted: bool):
    """Every block's records converted and checked, then joined: ``(src, dst, weights,
    records)``; records beyond ``expected`` are checked and counted, not kept."""
    parts: tuple[list, list, list] = ([], [], [])
    count = kept = 0
    for rows, linenos in blocks:
        if not rows:
            continue
        got = _convert_fast(rows, rec, labels, text)
        if got is None:
            got = _convert_slow(rows, linenos, rec, path, labels, text)
        src, dst, w = got
        _check_values(src, dst, w, rows, linenos, rec, path, base=base, n=n, n_line=n_line)
        if labels and not text and src.dtype.kind != "i":
            if kept:
                raise _TextLabels
            text = True     # the first records are text: every label is
        count += len(src)
        if expected is not None and count > expected:
            continue
        kept += len(src)
        for part, arr in zip(parts, (src, dst, w)):
            part.append(arr)
        if not counted:     # a stream: what building the graph will add must fit
            check_memory(f"the file holds more than {count:,} records",
                         (RECORD_PEAK_BYTES - BYTES_PER_RECORD) * count + BLOCK_PEAK,
                         where=path, subject="reading it")
    joined = []
    for part in parts:      # one array at a time, its blocks let go as it is made
        joined.append(None if not part or part[0] is None else
                      part[0] if len(part) == 1 else np.concatenate(part))
        part.clear()
    return (*joined, count)


def records_to_graph(blocks, rec: Records, opts: ReadOptions, *, default_directed: bool,
                     base: int, n: int | None = None, n_line: int | None = None,
                     expected: int | None = None, what: str = "edges",
                     count_line: int | None = None) -> Graph:
    """Convert and check the records of ``blocks`` (a file's
    :class:`~mgapsp.readers.lines.RecordBlocks`), compare their count with the header,
    build."""
    path = opts.path
    labels = n is None          # no declared count: ids are labels, renumbered
    directed = opts.directed_or(default_directed)
    if n is not None:
        _check_declared(path, n, n_line, expected, count_line, what, directed)
    args = dict(labels=labels, base=base, n=n, n_line=n_line, expected=expected,
                counted=blocks.lines.counted)
    try:
        src, dst, w, count = _convert_blocks(blocks, rec, path, text=False, **args)
    except _TextLabels:         # text after integers: every label read again as text
        src, dst, w, count = _convert_blocks(blocks, rec, path, text=True, **args)
    if expected is not None and count != expected:
        raise GraphFormatError(
            f"the header declares {expected} {what} but the file holds {count}",
            path, count_line)
    if count == 0:
        raise EmptyGraphError(f"no {what} in the file", path)
    if labels and src.dtype.kind == "i":
        ids = rank_labels(src, dst)
        # ranks fit int32 (at most MAX_VERTICES): half the bytes while the CSR is made
        src, dst = src.astype(np.int32), dst.astype(np.int32)
        return Graph.from_edges(src, dst, w, n=len(ids), vertex_ids=ids, directed=directed,
                                name=opts.name, source=path)
    if not labels:              # ids checked within 1..n
        src, dst = src.astype(np.int32), dst.astype(np.int32)
    return Graph.from_edges(src, dst, w, n=n, directed=directed, id_base=base,
                            name=opts.name, source=path, renumber=labels)


def _check_declared(path: str, n: int, n_line: int | None, m: int | None,
                    m_line: int | None, what: str, directed: bool) -> None:
    """Refuse a header's vertex and record counts (``n`` on ``n_line``, ``m`` on
    ``m_line``) whose graph would not fit in memory, before anything sized by them
    exists; the message names the line of the count that weighs most."""
    m = m or 0
    edges = m if directed else 2 * m
    vertex_part = BYTES_PER_VERTEX * n
    edge_part = BYTES_PER_EDGE * edges + BYTES_PER_RECORD * m
    singular = {"arcs": "arc", "edges": "edge", "entries": "entry", "links": "link"}
    records = f"{m:,} {what if m != 1 else singular.get(what, what)}"
    if m_line is None or m_line == n_line:
        text, line = f"declares {n:,} vertices and {records}", n_line
    elif vertex_part >= edge_part:
        text, line = f"declares {n:,} vertices (and {records} on line {m_line})", n_line
    else:
        text, line = f"declares {records} (and {n:,} vertices on line {n_line})", m_line
    check_graph_fits(text, n, edges, records=m, where=path, line=line)


def joined_fields(names, limit: int = 200) -> str:
    """Names for a message, joined by commas, at most about ``limit`` characters."""
    names = [str(x) for x in itertools.islice(names, 51)]
    text = ", ".join(x if len(x) <= 40 else x[:37] + "..." for x in names[:50])
    if len(names) > 50:
        text += ", ..."
    return text if len(text) <= limit else text[: limit - 3] + "..."


def header_int(tok: str, what: str, path: str, lineno: int | None,
                limit: int | None = None) -> int:
    """A count from a header: a non-negative integer, at most ``limit``."""
    try:
        value = _parse_id(tok)
    except ValueError:
        raise GraphFormatError(f"{what} {quote(tok)} is not an integer", path, lineno) from None
    if value < 0:
        raise GraphFormatError(f"{what} {value} is negative", path, lineno)
    if limit is not None and value > limit:
        raise GraphFormatError(f"{what} {value} exceeds the limit of {limit}", path,
                               lineno)
    return value


# =============================================================================
# the formats
# =============================================================================
