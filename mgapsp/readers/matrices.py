"""Matrix formats: MatrixMarket coordinate files and TSPLIB explicit weight matrices."""

from __future__ import annotations

import re

import numpy as np

from ..errors import EmptyGraphError, GraphFormatError, quote
from ..graph import MAX_VERTICES, Graph, check_graph_fits
from .lines import TextLines, first_field_line
from .text import (ReadOptions, Records, file_extension, first_record, header_int, parse_float,
                   records_to_graph)


_MTX_FIELDS = ("real", "integer", "pattern")
_MTX_SYMMETRIES = ("general", "symmetric")


def read_mtx(lines: TextLines, opts: ReadOptions) -> Graph:
    path = opts.path
    banner = next(iter(lines), "").strip()
    usage = "'%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>'"
    if not banner.lower().startswith("%%matrixmarket"):
        raise GraphFormatError(
            f"missing the {usage} banner; got {quote(banner)}", path, 1)
    parts = banner.split()
    if len(parts) != 5:
        raise GraphFormatError(f"expected the banner {usage}, got {quote(banner)}",
                               path, 1)
    obj, layout, field, symmetry = (p.lower() for p in parts[1:])
    if obj != "matrix":
        raise GraphFormatError(
            f"MatrixMarket object {quote(parts[1])} is not supported; expected 'matrix'",
            path, 1)
    if layout != "coordinate":
        raise GraphFormatError(
            f"MatrixMarket format {quote(parts[2])} is not supported; only sparse "
            "'coordinate' files hold graphs", path, 1)
    if field not in _MTX_FIELDS:
        raise GraphFormatError(
            f"MatrixMarket field {quote(parts[3])} is not supported; expected one of "
            f"{', '.join(_MTX_FIELDS)}", path, 1)
    if symmetry not in _MTX_SYMMETRIES:
        raise GraphFormatError(
            f"MatrixMarket symmetry {quote(parts[4])} is not supported; expected one of "
            f"{', '.join(_MTX_SYMMETRIES)}", path, 1)
    found = first_field_line(lines, 1, ("%",))
    if found is None:
        raise GraphFormatError("missing the size line 'rows columns entries'", path)
    size_line, size_text = found[0] + 1, found[1]
    fields = size_text.split()
    if len(fields) != 3:
        raise GraphFormatError(
            f"expected the size line 'rows columns entries', got "
            f"{quote(size_text)}", path, size_line)
    nrows, ncols, nnz = (header_int(f, what, path, size_line, limit)
                         for f, what, limit in zip(fields, ("row count", "column count",
                                                            "entry count"),
                                                   (MAX_VERTICES, MAX_VERTICES, None)))
    if nrows != ncols:
        raise GraphFormatError(
            f"the matrix is {nrows} x {ncols}; an adjacency matrix must be square",
            path, size_line)
    if field == "pattern":
        rec = Records(ncols=2, src=0, dst=1, weight=None, names=("row", "column"))
    else:
        rec = Records(ncols=3, src=0, dst=1, weight=None if opts.unweighted else 2,
                       names=("row", "column", "value"))
    return records_to_graph(lines.records(size_line, ("%",)), rec, opts,
                             default_directed=symmetry == "general", base=1,
                             n=nrows, n_line=size_line, expected=nnz, what="entries",
                             count_line=size_line)




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


def _tsp_header(lines: list[str], path) -> tuple[dict[str, tuple[str, int]], int]:
    """The ``KEY: value`` lines before the first section, with their line numbers, and
    the index of the first section's line."""
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
                    f"expected a 'KEY: value' line or a section name, got {quote(s)}",
                    path, i + 1)
            spec[key.strip().upper()] = (value.strip(), i + 1)
        i += 1
    return spec, i


def _tsp_spec(spec: dict, path, first_section: int | None) -> tuple[int, str, bool]:
    """DIMENSION, EDGE_WEIGHT_FORMAT and whether the matrix is asymmetric, checked
    (the memory the DIMENSION declares too, before anything of that size exists)."""

    def need(key: str) -> tuple[str, int]:
        if key not in spec:
            raise GraphFormatError(f"the header lacks {key}", path, first_section)
        return spec[key]

    value, dim_line = need("DIMENSION")
    n = header_int(value, "DIMENSION", path, dim_line, limit=2**16)
    if n < 1:
        raise GraphFormatError(f"DIMENSION {n} must be at least 1", path, dim_line)
    if "TYPE" in spec and spec["TYPE"][0].split():
        type_, type_line = spec["TYPE"]
        kind = type_.split()[0].upper()
        if kind not in ("TSP", "ATSP"):
            raise GraphFormatError(
                f"TYPE {quote(type_)} is not supported; expected TSP or ATSP", path, type_line)
        asymmetric = kind == "ATSP"
    else:
        asymmetric = file_extension(path) == ".atsp"
    value, lineno = need("EDGE_WEIGHT_TYPE")
    if value.upper() != "EXPLICIT":
        raise GraphFormatError(
            f"EDGE_WEIGHT_TYPE {quote(value)} is not supported; only EXPLICIT weights are "
            "read", path, lineno)
    value, lineno = need("EDGE_WEIGHT_FORMAT")
    fmt = value.upper()
    if fmt not in _TSP_FORMATS:
        raise GraphFormatError(
            f"EDGE_WEIGHT_FORMAT {quote(value)} is not supported; expected one of "
            f"{', '.join(_TSP_FORMATS)}", path, lineno)
    # The numbers, their (row, column) and the edges off the diagonal: n*n-sized
    # arrays, so the declared DIMENSION is checked against memory first.
    needed = _tsp_numbers_needed(n, fmt)
    check_graph_fits(f"DIMENSION {n:,} declares {needed:,} weights ({fmt})", n,
                     n * (n - 1), records=n * (n - 1), dense=needed, where=path,
                     line=dim_line)
    return n, fmt, asymmetric


def _tsp_weights(lines: list[str], start: int, n: int, fmt: str, path) -> np.ndarray:
    """The numbers of EDGE_WEIGHT_SECTION, as many as ``fmt`` needs, each finite."""
    needed = _tsp_numbers_needed(n, fmt)
    # Walk the sections; keep the numbers of EDGE_WEIGHT_SECTION with their lines.
    tokens: list[str] = []
    token_lines: list[int] = []
    section_line = end_line = None
    current = None
    for j in range(start, len(lines)):
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
    if len(tokens) < needed:
        raise GraphFormatError(
            f"EDGE_WEIGHT_SECTION (line {section_line}) ends after {len(tokens)} "
            f"numbers, but {fmt} with DIMENSION {n} needs {needed}", path, end_line)
    if len(tokens) > needed:
        raise GraphFormatError(
            f"extra value {quote(tokens[needed])} in EDGE_WEIGHT_SECTION: {fmt} with "
            f"DIMENSION {n} needs {needed} numbers", path, token_lines[needed])
    try:
        values = np.array(tokens, dtype=np.float64) if tokens else np.empty(0)
        if any("_" in t for t in tokens):
            raise ValueError("underscore")
    except ValueError:
        for tok, lineno in zip(tokens, token_lines):
            try:
                parse_float(tok)
            except ValueError:
                raise GraphFormatError(
                    f"weight {quote(tok)} is not a number", path, lineno) from None
        raise  # pragma: no cover - numpy and float() disagree
    k = first_record(~np.isfinite(values))
    if k is not None:
        raise GraphFormatError(f"weight {quote(tokens[k])} is not a finite number", path,
                               token_lines[k])
    return values


def read_tsplib(text: TextLines, opts: ReadOptions) -> Graph:
    """A TSPLIB file of EXPLICIT weights: its header, then its matrix's numbers as
    edges (a triangle's both ways; the diagonal is no edge)."""
    path = opts.path
    lines = text.all()      # a matrix's numbers run across lines
    spec, start = _tsp_header(lines, path)
    n, fmt, asymmetric = _tsp_spec(spec, path, start + 1 if start < len(lines) else None)
    values = _tsp_weights(lines, start, n, fmt, path)
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
