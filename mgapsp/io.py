"""Read graph files into a :class:`~mgapsp.graph.Graph`.

One entry point, :func:`read_graph`, reads the edge lists and matrices that shortest
path benchmarks are published in:

========  =====================  =======  ===========  ========  ===================
format    extension              ids      direction    weights   header
========  =====================  =======  ===========  ========  ===================
snap      .txt .edges .el        0-based  directed     optional  ``#``/``%`` comments
csv       .csv                   0-based  directed     optional  optional name row
tsv       .tsv                   0-based  directed     optional  optional name row
dimacs    .gr (``p sp``)         1-based  directed     yes       ``p sp n m``
pace      .gr (``p tw``)         1-based  undirected   no        ``p tw n m``
mtx       .mtx                   1-based  by symmetry  optional  banner + size line
tntp      .tntp (``*_net``)      1-based  directed     yes       metadata block
tsplib    .tsp .atsp             1-based  by TYPE      yes       ``KEY: value`` lines
========  =====================  =======  ===========  ========  ===================

Any of them may be gzip-compressed (a ``.gz`` suffix, or gzip magic bytes).

Every problem in a file raises :class:`~mgapsp.errors.GraphFormatError` (or its
subclass :class:`~mgapsp.errors.EmptyGraphError`) as ``path:line: message``, the
message quoting the offending value.

Edge records are parsed twice over only when something is wrong: a fast pass with
:func:`numpy.loadtxt` converts the records, and when it refuses them a plain Python
pass (the reference) walks the same records again to find and name the bad line.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

from .errors import EmptyGraphError, GraphFormatError, UnsupportedError
from .graph import MAX_VERTICES, Graph

__all__ = ["FORMATS", "detect_format", "read_graph"]

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


# =============================================================================
# public API
# =============================================================================
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
    ext = _extension(path)
    if ext == ".gr":
        return _sniff_gr(_iter_lines(path), path)
    try:
        return _EXTENSIONS[ext]
    except KeyError:
        shown = repr(ext) if ext else "(none)"
        raise GraphFormatError(
            f"cannot tell the format from the extension {shown}; pass format= one of "
            f"{', '.join(FORMATS)} (known extensions: "
            f"{', '.join(sorted(set(_EXTENSIONS) | {'.gr'}))}, each optionally + .gz)",
            path,
        ) from None


def read_graph(
    path: str | os.PathLike,
    *,
    format: str = "auto",
    directed: bool | None = None,
    unweighted: bool = False,
    weight_column: str | int | None = None,
) -> Graph:
    """Read a graph file into a canonical :class:`~mgapsp.graph.Graph`.

    Parameters
    ----------
    path : str or os.PathLike
        The file; gzip-compressed files are read transparently.
    format : str, default "auto"
        One of :data:`FORMATS`, or ``"auto"`` to pick it with :func:`detect_format`.
    directed : bool, optional
        None keeps the format's own convention (see the module docstring); True reads
        every record as one arc; False adds both directions of every record.
    unweighted : bool, default False
        Give every edge weight 1 (weight fields are then not read at all).
    weight_column : str or int, optional
        For ``csv``/``tsv``: the 0-based column, or its header name, holding the
        weight (default: column 2 when there are three or more columns).  For
        ``tntp``: the column name (as in the ``~`` header row, such as
        ``"free_flow_time"``) or 0-based index (default ``"length"``).

    Returns
    -------
    Graph
        Duplicate edges keep their minimum weight and self-loops are kept.  For
        0-based formats ``n`` is the largest id + 1 and ``vertex_ids`` are
        ``0..n-1``; 1-based formats take ``n`` from their header and have
        ``vertex_ids`` ``1..n``.  ``name`` is the file's base name.

    Raises
    ------
    GraphFormatError
        The file is missing or malformed; the message names the file, the line and
        the offending value.
    EmptyGraphError
        The file holds no edges.
    UnsupportedError
        ``weight_column`` was given for a format that has no named columns.

    Notes
    -----
    - snap: lines starting with ``#`` or ``%`` are comments; records are
      whitespace-separated ``source target`` or ``source target weight``, the same
      count on every line.
    - csv/tsv: ``#``/``%`` comments; the first other line is a header when neither
      of its first two fields is a number (nowhere else); the delimiter is ``,``
      (``\t`` for tsv) unless that line has none, then whitespace; fields after
      the ones needed are ignored.
    - dimacs: ``c`` comments, ``p sp n m``, then ``a u v w``; pace: ``c``
      comments, ``p tw n m``, then ``u v``.  The record count must equal ``m``.
    - mtx: ``coordinate`` matrices with field ``real``, ``integer`` or ``pattern``
      and symmetry ``general`` (directed) or ``symmetric`` (undirected); the entry
      count must equal the size line's.
    - tntp: ``<KEY> value`` metadata up to ``<END OF METADATA>``, ``~`` comments
      (the first names the columns), rows cut at ``;``.  The link count must equal
      ``<NUMBER OF LINKS>``.  Zones are ordinary vertices (``<FIRST THRU NODE>``
      is not applied).
    - tsplib: ``TYPE`` TSP (undirected) or ATSP (directed), ``EDGE_WEIGHT_TYPE:
      EXPLICIT`` with any ``EDGE_WEIGHT_FORMAT`` (full matrix or one of the eight
      triangles, which stand for a symmetric matrix).  Every off-diagonal entry is
      an edge; the diagonal is ignored.
    """
    path = os.fspath(path)
    lines = _read_lines(path)
    fmt = _resolve_format(format, path, lines)
    if weight_column is not None and fmt not in ("csv", "tsv", "tntp"):
        raise UnsupportedError(
            f"weight_column={weight_column!r} applies to csv, tsv and tntp files only, "
            f"not to {fmt} ({os.path.basename(path)})"
        )
    opts = _Options(path=path, directed=directed, unweighted=bool(unweighted),
                    weight_column=weight_column)
    return _READERS[fmt](lines, opts)


# =============================================================================
# files and format names
# =============================================================================
@dataclass(frozen=True)
class _Options:
    path: str
    directed: bool | None
    unweighted: bool
    weight_column: str | int | None

    def directed_or(self, default: bool) -> bool:
        return default if self.directed is None else bool(self.directed)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def _extension(path: str) -> str:
    name = os.path.basename(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def _is_gzip(path: str, head: bytes) -> bool:
    return path.lower().endswith(".gz") or head[:2] == b"\x1f\x8b"


def _open_error(path: str, exc: OSError) -> GraphFormatError:
    if isinstance(exc, FileNotFoundError):
        return GraphFormatError("no such file", path)
    if isinstance(exc, IsADirectoryError):
        return GraphFormatError("is a directory, not a graph file", path)
    return GraphFormatError(f"cannot read the file: {exc.strerror or exc}", path)


def _decode(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _read_lines(path: str) -> list[str]:
    """The whole file (gunzipped when needed) as a list of lines without newlines."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise _open_error(path, exc) from None
    if _is_gzip(path, data):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise GraphFormatError(f"not readable as gzip: {exc}", path) from None
    lines = _decode(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _iter_lines(path: str):
    """Lines of the file, read lazily (for sniffing a header)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            raw = gzip.GzipFile(fileobj=fh) if _is_gzip(path, head) else fh
            try:
                for line in raw:
                    yield _decode(line).rstrip("\n")
            except (OSError, EOFError, zlib.error) as exc:
                raise GraphFormatError(f"not readable as gzip: {exc}", path) from None
    except OSError as exc:
        raise _open_error(path, exc) from None


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
                f"cannot tell DIMACS from PACE: the 'p' line says {fields[1]!r}, "
                "expected 'sp' (DIMACS) or 'tw' (PACE); pass format=",
                path, lineno,
            )
        raise GraphFormatError(
            f"cannot tell DIMACS from PACE: no 'p sp' or 'p tw' line before the first "
            f"record {_clip(s)!r}; pass format='dimacs' or format='pace'",
            path, lineno,
        )
    raise GraphFormatError(
        "cannot tell DIMACS from PACE: the file has no 'p sp' or 'p tw' line; pass "
        "format='dimacs' or format='pace'",
        path,
    )


def _resolve_format(format: str, path: str, lines: list[str]) -> str:
    if not isinstance(format, str):
        raise GraphFormatError(
            f"format must be a string, got {type(format).__name__}", path)
    fmt = format.lower()
    if fmt == "auto":
        if _extension(path) == ".gr":
            return _sniff_gr(lines, path)
        return detect_format(path)
    if fmt not in FORMATS:
        raise GraphFormatError(
            f"unknown format {format!r}; valid formats: auto, {', '.join(FORMATS)}", path)
    return fmt


# =============================================================================
# edge records: a fast pass, a reference pass, and the value checks
# =============================================================================
@dataclass(frozen=True)
class _Records:
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

    def fields(self, row: str) -> list[str]:
        if self.delimiter is None:
            return row.split()
        return [f.strip() for f in row.split(self.delimiter)]

    def expected(self) -> str:
        names = " ".join(self.names[: self.ncols])
        at_least = "at least " if self.extra_ok else ""
        return f"{at_least}{self.ncols} fields ({names})"


def _select(lines: list[str], start: int, stop: int, comments: tuple[str, ...],
            cut: str | None = None) -> tuple[list[str], list[int]]:
    """Non-blank, non-comment lines (stripped; cut at ``cut``) and their numbers."""
    rows: list[str] = []
    linenos: list[int] = []
    for i in range(start, stop):
        s = lines[i]
        if cut is not None:
            s = s.partition(cut)[0]
        s = s.strip()
        if s and not s.startswith(comments):
            rows.append(s)
            linenos.append(i + 1)
    return rows, linenos


def _convert_fast(rows: list[str], rec: _Records):
    """Convert records with :func:`numpy.loadtxt`; None when it refuses them.

    Accepts a subset of what :func:`_convert_slow` accepts, and gives the same
    arrays where both accept.
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
    if rec.extra_ok:
        cols = wanted
        usecols = tuple(c - shift for c in cols)
    else:
        cols = list(range(shift, rec.ncols))
        usecols = None
    dtype = np.dtype([(f"f{c}", "i8" if c in (rec.src, rec.dst) else "f8") for c in cols])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = np.loadtxt(io.StringIO("\n".join(rows)), dtype=dtype,
                               delimiter=rec.delimiter, comments=None,
                               usecols=usecols, ndmin=1, encoding=None)
    except (ValueError, TypeError, IndexError):
        return None
    if len(table) != len(rows):
        return None
    src = np.ascontiguousarray(table[f"f{rec.src}"])
    dst = np.ascontiguousarray(table[f"f{rec.dst}"])
    w = None if rec.weight is None else np.ascontiguousarray(table[f"f{rec.weight}"])
    return src, dst, w


def _parse_id(tok: str) -> int:
    if "_" in tok:
        raise ValueError(tok)
    value = int(tok)
    if not -_ID_LIMIT < value < _ID_LIMIT:
        raise ValueError(tok)
    return value


def _parse_float(tok: str) -> float:
    if "_" in tok:
        raise ValueError(tok)
    return float(tok)


def _convert_slow(rows: list[str], linenos: list[int], rec: _Records, path: str):
    """Convert records one line at a time; the reference for :func:`_convert_fast`.

    Raises GraphFormatError at the first line with the wrong fields or with text
    where a number belongs.
    """
    n = len(rows)
    src = np.empty(n, dtype=np.int64)
    dst = np.empty(n, dtype=np.int64)
    w = None if rec.weight is None else np.empty(n, dtype=np.float64)
    for k, (row, lineno) in enumerate(zip(rows, linenos)):
        fields = rec.fields(row)
        if rec.tag is not None and fields[0] != rec.tag:
            raise GraphFormatError(
                f"expected a record starting with {rec.tag!r}, got {_clip(row)!r}",
                path, lineno)
        if len(fields) < rec.ncols or (len(fields) > rec.ncols and not rec.extra_ok):
            raise GraphFormatError(
                f"expected {rec.expected()}, got {len(fields)} in {_clip(row)!r}",
                path, lineno)
        for col, out, what in ((rec.src, src, "source"), (rec.dst, dst, "target")):
            try:
                out[k] = _parse_id(fields[col])
            except ValueError:
                raise GraphFormatError(
                    f"{what} id {fields[col]!r} is not an integer", path, lineno) from None
        if w is not None:
            try:
                w[k] = _parse_float(fields[rec.weight])
            except ValueError:
                raise GraphFormatError(
                    f"weight {fields[rec.weight]!r} is not a number", path, lineno) from None
    return src, dst, w


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


def _check_values(src, dst, w, rows, linenos, rec: _Records, path: str, *,
                  base: int, n: int | None, n_line: int | None) -> None:
    """Raise on the first record with a bad id or a weight that is not finite."""
    for_col = []
    for arr, what in ((src, "source"), (dst, "target")):
        bad = arr < base
        if n is not None:
            bad |= arr > n - 1 + base
        else:
            bad |= arr >= MAX_VERTICES + base
        k = _first(bad)
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
        k = _first(~np.isfinite(w))
        if k is not None:
            tok = rec.fields(rows[k])[rec.weight]
            raise GraphFormatError(f"weight {tok!r} is not a finite number", path,
                                   linenos[k])


def _records_to_graph(rows: list[str], linenos: list[int], rec: _Records,
                      opts: _Options, *, default_directed: bool, base: int,
                      n: int | None = None, n_line: int | None = None,
                      expected: int | None = None, what: str = "edges",
                      count_line: int | None = None) -> Graph:
    """Convert and check records, compare their count with the header, build."""
    path = opts.path
    converted = _convert_fast(rows, rec)
    if converted is None:
        converted = _convert_slow(rows, linenos, rec, path)
    src, dst, w = converted
    _check_values(src, dst, w, rows, linenos, rec, path, base=base, n=n, n_line=n_line)
    if expected is not None and len(src) != expected:
        raise GraphFormatError(
            f"the header declares {expected} {what} but the file holds {len(src)}",
            path, count_line)
    if len(src) == 0:
        raise EmptyGraphError(f"no {what} in the file", path)
    return Graph.from_edges(src, dst, w, n=n, directed=opts.directed_or(default_directed),
                            id_base=base, name=opts.name, source=path)


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _header_int(tok: str, what: str, path: str, lineno: int | None,
                limit: int | None = None) -> int:
    """A count from a header: a non-negative integer, at most ``limit``."""
    try:
        value = _parse_id(tok)
    except ValueError:
        raise GraphFormatError(f"{what} {tok!r} is not an integer", path, lineno) from None
    if value < 0:
        raise GraphFormatError(f"{what} {value} is negative", path, lineno)
    if limit is not None and value > limit:
        raise GraphFormatError(f"{what} {value} exceeds the limit of {limit}", path,
                               lineno)
    return value


# =============================================================================
# the formats
# =============================================================================
def _read_snap(lines: list[str], opts: _Options) -> Graph:
    rows, linenos = _select(lines, 0, len(lines), ("#", "%"))
    ncols = 2
    if rows:
        ncols = len(rows[0].split())
        if ncols not in (2, 3):
            raise GraphFormatError(
                f"expected 2 fields (source target) or 3 (source target weight), got "
                f"{ncols} in {_clip(rows[0])!r}", opts.path, linenos[0])
    weight = 2 if ncols == 3 and not opts.unweighted else None
    rec = _Records(ncols=ncols, src=0, dst=1, weight=weight,
                   names=("source", "target", "weight"))
    return _records_to_graph(rows, linenos, rec, opts, default_directed=True, base=0)


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _read_delimited(lines: list[str], opts: _Options, native: str) -> Graph:
    path = opts.path
    comments = ("#", "%")
    first = next((i for i, line in enumerate(lines)
                  if line.strip() and not line.strip().startswith(comments)), None)
    if first is None:
        raise EmptyGraphError("no edges in the file", path)
    text = lines[first].strip()
    delimiter = native if native in text else None  # else: whitespace separated
    fields = text.split(delimiter)
    header: list[str] | None = None
    start = first
    if not any(_is_number(f.strip()) for f in fields[:2]):
        header = [f.strip().strip('"').strip("'") for f in fields]
        start = first + 1
    rows, linenos = _select(lines, start, len(lines), comments)
    width = len(header) if header is not None else len(fields)

    wc = opts.weight_column
    if isinstance(wc, str) and wc.strip().isdigit() and (header is None or wc not in header):
        wc = int(wc)
    if wc is None:
        weight = 2 if width >= 3 else None
    elif isinstance(wc, bool) or not isinstance(wc, (int, str)):
        raise GraphFormatError(
            f"weight_column must be a column name or index, got {wc!r}", path)
    elif isinstance(wc, int):
        if wc < 0:
            raise GraphFormatError(f"weight_column {wc} is negative", path)
        if wc in (0, 1):
            raise GraphFormatError(
                f"weight_column {wc} is the {'source' if wc == 0 else 'target'} column",
                path)
        weight = wc
    else:
        if header is None:
            raise GraphFormatError(
                f"weight_column {wc!r} is a column name but the file has no header "
                "line; pass a 0-based index", path)
        lowered = [h.lower() for h in header]
        if wc in header:
            weight = header.index(wc)
        elif wc.lower() in lowered:
            weight = lowered.index(wc.lower())
        else:
            raise GraphFormatError(
                f"no column named {wc!r}; the header names {', '.join(header)}",
                path, first + 1)
        if weight in (0, 1):
            raise GraphFormatError(
                f"weight_column {wc!r} is the {'source' if weight == 0 else 'target'} "
                "column", path, first + 1)
    if opts.unweighted:
        weight = None
    ncols = 2 if weight is None else weight + 1
    names = ["source", "target"] + [f"column{i}" for i in range(2, ncols)]
    if weight is not None:
        names[weight] = "weight"
    rec = _Records(ncols=ncols, src=0, dst=1, weight=weight, names=tuple(names),
                   extra_ok=True, delimiter=delimiter)
    return _records_to_graph(rows, linenos, rec, opts, default_directed=True, base=0)


def _read_csv(lines: list[str], opts: _Options) -> Graph:
    return _read_delimited(lines, opts, ",")


def _read_tsv(lines: list[str], opts: _Options) -> Graph:
    return _read_delimited(lines, opts, "\t")


def _p_line(lines: list[str], path: str, kind: str, counts: str) -> tuple[int, int, int]:
    """Find ``p <kind> n m``; return n, m and the line number of the header."""
    usage = f"'p {kind} <vertices> <{counts}>'"
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s or s[0] == "c":
            continue
        fields = s.split()
        if fields[0] != "p":
            raise GraphFormatError(
                f"expected the {usage} header before any record, got {_clip(s)!r}",
                path, i + 1)
        if len(fields) != 4 or fields[1] != kind:
            raise GraphFormatError(f"expected {usage}, got {_clip(s)!r}", path, i + 1)
        n = _header_int(fields[2], "vertex count", path, i + 1, limit=MAX_VERTICES)
        m = _header_int(fields[3], f"{counts[:-1]} count", path, i + 1)
        return n, m, i + 1
    raise GraphFormatError(f"missing the {usage} header line", path)


def _read_dimacs(lines: list[str], opts: _Options) -> Graph:
    n, m, hline = _p_line(lines, opts.path, "sp", "arcs")
    rows, linenos = _select(lines, hline, len(lines), ("c",))
    weight = None if opts.unweighted else 3
    rec = _Records(ncols=4, src=1, dst=2, weight=weight, tag="a",
                   names=("a", "source", "target", "weight"))
    return _records_to_graph(rows, linenos, rec, opts, default_directed=True, base=1,
                             n=n, n_line=hline, expected=m, what="arcs",
                             count_line=hline)


def _read_pace(lines: list[str], opts: _Options) -> Graph:
    n, m, hline = _p_line(lines, opts.path, "tw", "edges")
    rows, linenos = _select(lines, hline, len(lines), ("c",))
    rec = _Records(ncols=2, src=0, dst=1, weight=None, names=("source", "target"))
    return _records_to_graph(rows, linenos, rec, opts, default_directed=False, base=1,
                             n=n, n_line=hline, expected=m, what="edges",
                             count_line=hline)


_MTX_FIELDS = ("real", "integer", "pattern")
_MTX_SYMMETRIES = ("general", "symmetric")


def _read_mtx(lines: list[str], opts: _Options) -> Graph:
    path = opts.path
    banner = lines[0].strip() if lines else ""
    usage = "'%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>'"
    if not banner.lower().startswith("%%matrixmarket"):
        raise GraphFormatError(
            f"missing the {usage} banner; got {_clip(banner)!r}", path, 1)
    parts = banner.split()
    if len(parts) != 5:
        raise GraphFormatError(f"expected the banner {usage}, got {_clip(banner)!r}",
                               path, 1)
    obj, layout, field, symmetry = (p.lower() for p in parts[1:])
    if obj != "matrix":
        raise GraphFormatError(
            f"MatrixMarket object {parts[1]!r} is not supported; expected 'matrix'",
            path, 1)
    if layout != "coordinate":
        raise GraphFormatError(
            f"MatrixMarket format {parts[2]!r} is not supported; only sparse "
            "'coordinate' files hold graphs", path, 1)
    if field not in _MTX_FIELDS:
        raise GraphFormatError(
            f"MatrixMarket field {parts[3]!r} is not supported; expected one of "
            f"{', '.join(_MTX_FIELDS)}", path, 1)
    if symmetry not in _MTX_SYMMETRIES:
        raise GraphFormatError(
            f"MatrixMarket symmetry {parts[4]!r} is not supported; expected one of "
            f"{', '.join(_MTX_SYMMETRIES)}", path, 1)
    size_line = None
    for i in range(1, len(lines)):
        s = lines[i].strip()
        if s and not s.startswith("%"):
            size_line = i + 1
            break
    if size_line is None:
        raise GraphFormatError("missing the size line 'rows columns entries'", path)
    fields = lines[size_line - 1].split()
    if len(fields) != 3:
        raise GraphFormatError(
            f"expected the size line 'rows columns entries', got "
            f"{_clip(lines[size_line - 1].strip())!r}", path, size_line)
    nrows, ncols, nnz = (_header_int(f, what, path, size_line, limit)
                         for f, what, limit in zip(fields, ("row count", "column count",
                                                            "entry count"),
                                                   (MAX_VERTICES, MAX_VERTICES, None)))
    if nrows != ncols:
        raise GraphFormatError(
            f"the matrix is {nrows} x {ncols}; an adjacency matrix must be square",
            path, size_line)
    rows, linenos = _select(lines, size_line, len(lines), ("%",))
    if field == "pattern":
        rec = _Records(ncols=2, src=0, dst=1, weight=None, names=("row", "column"))
    else:
        rec = _Records(ncols=3, src=0, dst=1, weight=None if opts.unweighted else 2,
                       names=("row", "column", "value"))
    return _records_to_graph(rows, linenos, rec, opts,
                             default_directed=symmetry == "general", base=1,
                             n=nrows, n_line=size_line, expected=nnz, what="entries",
                             count_line=size_line)


_TNTP_COLUMNS = ("init_node", "term_node", "capacity", "length", "free_flow_time", "b",
                 "power", "speed", "toll", "link_type")


def _read_tntp(lines: list[str], opts: _Options) -> Graph:
    path = opts.path
    meta: dict[str, tuple[str, int]] = {}
    end = None
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s or s.startswith("~"):
            continue
        if s.upper().startswith("<END OF METADATA>"):
            end = i + 1
            break
        if not s.startswith("<") or ">" not in s:
            raise GraphFormatError(
                f"expected a '<KEY> value' metadata line or '<END OF METADATA>', got "
                f"{_clip(s)!r}", path, i + 1)
        key, _, value = s[1:].partition(">")
        meta[key.strip().upper()] = (value.strip(), i + 1)
    if end is None:
        raise GraphFormatError("missing the '<END OF METADATA>' line", path)
    sizes = []
    for key in ("NUMBER OF NODES", "NUMBER OF LINKS"):
        if key not in meta:
            raise GraphFormatError(f"the metadata lacks <{key}>", path, end)
        value, lineno = meta[key]
        tok = value.split()[0] if value.split() else value
        limit = MAX_VERTICES if key == "NUMBER OF NODES" else None
        sizes.append((_header_int(tok, f"<{key}>", path, lineno, limit), lineno))
    (n, n_line), (m, m_line) = sizes

    # Columns: named by the '~ init_node term_node ...' comment before the first row,
    # else the standard ones.
    names, header_line = list(_TNTP_COLUMNS), None
    for i in range(end, len(lines)):
        s = lines[i].strip()
        if not s:
            continue
        if not s.startswith("~"):
            break
        found = [f.lower() for f in s[1:].partition(";")[0].split()]
        if "init_node" in found and "term_node" in found:  # the column header
            names, header_line = found, i + 1
            break
    src = names.index("init_node") if "init_node" in names else 0
    dst = names.index("term_node") if "term_node" in names else 1
    wc = "length" if opts.weight_column is None else opts.weight_column
    if isinstance(wc, bool) or not isinstance(wc, (int, str)):
        raise GraphFormatError(
            f"weight_column must be a column name or index, got {wc!r}", path)
    if isinstance(wc, str) and wc.strip().isdigit():
        wc = int(wc)
    if isinstance(wc, int):
        if not 0 <= wc < max(len(names), 1) or wc in (src, dst):
            raise GraphFormatError(
                f"weight_column {wc} is not a weight column; the columns are "
                f"{', '.join(f'{i}={c}' for i, c in enumerate(names))}", path, header_line)
        weight = wc
    elif wc.lower() in names and names.index(wc.lower()) not in (src, dst):
        weight = names.index(wc.lower())
    else:
        raise GraphFormatError(
            f"no weight column named {wc!r}; the columns are {', '.join(names)}",
            path, header_line)
    if opts.unweighted:
        weight = None
    width = max(src, dst, -1 if weight is None else weight) + 1
    rec = _Records(ncols=width, src=src, dst=dst, weight=weight, names=tuple(names),
                   extra_ok=True)
    rows, linenos = _select(lines, end, len(lines), ("~",), cut=";")
    return _records_to_graph(rows, linenos, rec, opts, default_directed=True, base=1,
                             n=n, n_line=n_line, expected=m, what="links",
                             count_line=m_line)


# --- TSPLIB ----------------------------------------------------------------
def _triangle(n: int, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of each number of a triangular EDGE_WEIGHT_FORMAT, in order."""
    row_major = {
        "UPPER_ROW": (np.triu_indices, 1), "LOWER_ROW": (np.tril_indices, -1),
        "UPPER_DIAG_ROW": (np.triu_indices, 0), "LOWER_DIAG_ROW": (np.tril_indices, 0),
    }
    if fmt in row_major:
        fn, k = row_major[fmt]
        return fn(n, k)
    # Column-wise layouts list the upper (lower) triangle column by column, which is
    # the lower (upper) triangle row by row with the roles of row and column swapped.
    col_major = {
        "UPPER_COL": (np.tril_indices, -1), "LOWER_COL": (np.triu_indices, 1),
        "UPPER_DIAG_COL": (np.tril_indices, 0), "LOWER_DIAG_COL": (np.triu_indices, 0),
    }
    fn, k = col_major[fmt]
    a, b = fn(n, k)
    return b, a


_TSP_FORMATS = ("FULL_MATRIX", "UPPER_ROW", "LOWER_ROW", "UPPER_DIAG_ROW",
                "LOWER_DIAG_ROW", "UPPER_COL", "LOWER_COL", "UPPER_DIAG_COL",
                "LOWER_DIAG_COL")
_TSP_KEYWORD = re.compile(r"^(EOF|[A-Z_]+_SECTION)(?=\s|:|$)\s*:?\s*", re.IGNORECASE)


def _tsp_numbers_needed(n: int, fmt: str) -> int:
    if fmt == "FULL_MATRIX":
        return n * n
    if "DIAG" in fmt:
        return n * (n + 1) // 2
    return n * (n - 1) // 2


def _read_tsplib(lines: list[str], opts: _Options) -> Graph:
    path = opts.path
    spec: dict[str, tuple[str, int]] = {}
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if s and _TSP_KEYWORD.match(s):
            break
        if s:
            key, colon, value = s.partition(":")
            if not colon:
                raise GraphFormatError(
                    f"expected a 'KEY: value' line or a section name, got {_clip(s)!r}",
                    path, i + 1)
            spec[key.strip().upper()] = (value.strip(), i + 1)
        i += 1
    first_section = i + 1 if i < len(lines) else None

    def need(key: str) -> tuple[str, int]:
        if key not in spec:
            raise GraphFormatError(f"the header lacks {key}", path, first_section)
        return spec[key]

    value, lineno = need("DIMENSION")
    n = _header_int(value, "DIMENSION", path, lineno, limit=2**16)
    if n < 1:
        raise GraphFormatError(f"DIMENSION {n} must be at least 1", path, lineno)
    if "TYPE" in spec and spec["TYPE"][0].split():
        type_, type_line = spec["TYPE"]
        kind = type_.split()[0].upper()
        if kind not in ("TSP", "ATSP"):
            raise GraphFormatError(
                f"TYPE {type_!r} is not supported; expected TSP or ATSP", path, type_line)
        asymmetric = kind == "ATSP"
    else:
        asymmetric = _extension(path) == ".atsp"
    value, lineno = need("EDGE_WEIGHT_TYPE")
    if value.upper() != "EXPLICIT":
        raise GraphFormatError(
            f"EDGE_WEIGHT_TYPE {value!r} is not supported; only EXPLICIT weights are "
            "read", path, lineno)
    value, lineno = need("EDGE_WEIGHT_FORMAT")
    fmt = value.upper()
    if fmt not in _TSP_FORMATS:
        raise GraphFormatError(
            f"EDGE_WEIGHT_FORMAT {value!r} is not supported; expected one of "
            f"{', '.join(_TSP_FORMATS)}", path, lineno)

    # Walk the sections; keep the numbers of EDGE_WEIGHT_SECTION with their lines.
    tokens: list[str] = []
    token_lines: list[int] = []
    section_line = end_line = None
    current = None
    for j in range(i, len(lines)):
        s = lines[j].strip()
        match = _TSP_KEYWORD.match(s)
        if match:
            if current == "EDGE_WEIGHT_SECTION":
                end_line = j + 1
            current = match.group(1).upper()
            if current == "EOF":
                break
            if current == "EDGE_WEIGHT_SECTION":
                if section_line is not None:
                    raise GraphFormatError(
                        f"a second EDGE_WEIGHT_SECTION (the first is on line "
                        f"{section_line})", path, j + 1)
                section_line = j + 1
            s = s[match.end():]
        if current == "EDGE_WEIGHT_SECTION" and s:
            found = s.split()
            tokens.extend(found)
            token_lines.extend([j + 1] * len(found))
    if section_line is None:
        raise GraphFormatError("no EDGE_WEIGHT_SECTION in the file", path)
    if end_line is None:
        end_line = len(lines)
    needed = _tsp_numbers_needed(n, fmt)
    if len(tokens) < needed:
        raise GraphFormatError(
            f"EDGE_WEIGHT_SECTION (line {section_line}) ends after {len(tokens)} "
            f"numbers, but {fmt} with DIMENSION {n} needs {needed}", path, end_line)
    if len(tokens) > needed:
        raise GraphFormatError(
            f"extra value {tokens[needed]!r} in EDGE_WEIGHT_SECTION: {fmt} with "
            f"DIMENSION {n} needs {needed} numbers", path, token_lines[needed])
    try:
        values = np.array(tokens, dtype=np.float64) if tokens else np.empty(0)
        if any("_" in t for t in tokens):
            raise ValueError("underscore")
    except ValueError:
        for tok, lineno in zip(tokens, token_lines):
            try:
                _parse_float(tok)
            except ValueError:
                raise GraphFormatError(
                    f"weight {tok!r} is not a number", path, lineno) from None
        raise  # pragma: no cover - numpy and float() disagree
    k = _first(~np.isfinite(values))
    if k is not None:
        raise GraphFormatError(f"weight {tokens[k]!r} is not a finite number", path,
                               token_lines[k])

    if fmt == "FULL_MATRIX":
        rows, cols = np.divmod(np.arange(n * n, dtype=np.int64), n)
    else:
        rows, cols = (a.astype(np.int64) for a in _triangle(n, fmt))
    off = rows != cols  # the diagonal holds a placeholder, not an edge
    rows, cols, values = rows[off], cols[off], values[off]
    if fmt != "FULL_MATRIX":  # a triangle stands for a symmetric matrix
        rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
        values = np.concatenate([values, values])
    if len(rows) == 0:
        raise EmptyGraphError(f"DIMENSION {n} leaves no edges off the diagonal", path)
    return Graph.from_edges(rows, cols, None if opts.unweighted else values, n=n,
                            directed=opts.directed_or(asymmetric), id_base=0,
                            vertex_ids=np.arange(1, n + 1, dtype=np.int64),
                            name=opts.name, source=path)


_READERS = {
    "snap": _read_snap,
    "csv": _read_csv,
    "tsv": _read_tsv,
    "dimacs": _read_dimacs,
    "pace": _read_pace,
    "mtx": _read_mtx,
    "tntp": _read_tntp,
    "tsplib": _read_tsplib,
}
