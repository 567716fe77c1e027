"""Edge-list formats: SNAP, CSV, TSV, DIMACS 9 (``p sp``) and PACE (``p tw``)."""

from __future__ import annotations



from ..errors import EmptyGraphError, GraphFormatError, quote
from ..graph import MAX_VERTICES, Graph
from .lines import TextLines, first_field_line
from .text import ReadOptions, Records, header_int, joined_fields, records_to_graph


def read_snap(lines: TextLines, opts: ReadOptions) -> Graph:
    first = first_field_line(lines, 0, ("#", "%"))
    ncols = 2
    if first is not None:
        ncols = len(first[1].split())
        if ncols not in (2, 3):
            raise GraphFormatError(
                f"expected 2 fields (source target) or 3 (source target weight), got "
                f"{ncols} in {quote(first[1])}", opts.path, first[0] + 1)
    weight = 2 if ncols == 3 and not opts.unweighted else None
    rec = Records(ncols=ncols, src=0, dst=1, weight=weight,
                   names=("source", "target", "weight"))
    return records_to_graph(lines.records(0, ("#", "%")), rec, opts,
                            default_directed=True, base=0)


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _read_delimited(lines: TextLines, opts: ReadOptions, native: str) -> Graph:
    path = opts.path
    comments = ("#", "%")
    found = first_field_line(lines, 0, comments)
    if found is None:
        raise EmptyGraphError("no edges in the file", path)
    first, text = found
    delimiter = native if native in text else None  # else: whitespace separated
    fields = text.split(delimiter)
    header: list[str] | None = None
    start = first
    if not any(_is_number(f.strip()) for f in fields[:2]):
        header = [f.strip().strip('"').strip("'") for f in fields]
        start = first + 1
        if len(header) < 2:
            raise GraphFormatError(
                f"{quote(text)} is neither an edge nor a header naming the source and "
                "target columns", path, first + 1)
    record = found if header is None else first_field_line(lines, start, comments)
    width = len(header) if header is not None else len(fields)

    wc = opts.weight_column
    if isinstance(wc, str) and wc.strip().isdigit() and (header is None or wc not in header):
        try:
            wc = int(wc)
        except ValueError:              # more digits than int() reads
            raise GraphFormatError(f"weight_column {quote(wc)} is no column index",
                                   path) from None
    if wc is None:
        weight = 2 if width >= 3 else None
    elif isinstance(wc, bool) or not isinstance(wc, (int, str)):
        raise GraphFormatError(
            f"weight_column must be a column name or index, got {quote(wc)}", path)
    elif isinstance(wc, int):
        if wc < 0:
            raise GraphFormatError(f"weight_column {wc} is negative", path)
        if wc in (0, 1):
            raise GraphFormatError(
                f"weight_column {wc} is the {'source' if wc == 0 else 'target'} column",
                path)
        weight = wc
        if record is not None and not opts.unweighted:  # it must hold that column
            have = len(record[1].split(delimiter))
            if wc >= have:
                raise GraphFormatError(
                    f"weight_column {wc} is beyond the {have} fields of the first "
                    f"record {quote(record[1])}", path, record[0] + 1)
    else:
        if header is None:
            raise GraphFormatError(
                f"weight_column {quote(wc)} is a column name but the file has no header "
                "line; pass a 0-based index", path)
        lowered = [h.lower() for h in header]
        if wc in header:
            weight = header.index(wc)
        elif wc.lower() in lowered:
            weight = lowered.index(wc.lower())
        else:
            raise GraphFormatError(
                f"no column named {quote(wc)}; the header names {joined_fields(header)}",
                path, first + 1)
        if weight in (0, 1):
            raise GraphFormatError(
                f"weight_column {quote(wc)} is the {'source' if weight == 0 else 'target'} "
                "column", path, first + 1)
    if opts.unweighted:
        weight = None
    ncols = 2 if weight is None else weight + 1
    names = ["source", "target"] + [f"column{i}" for i in range(2, ncols)]
    if weight is not None:
        names[weight] = "weight"
    # a record may have the columns its header names (or its first record has), no more:
    # a weight column that nothing names would be dropped without a word
    width_from = (f"the header (line {first + 1}) names" if header is not None
                  else f"the first record (line {first + 1}) has")
    width = None if opts.unweighted else max(width, ncols)
    rec = Records(ncols=ncols, src=0, dst=1, weight=weight, names=tuple(names),
                   extra_ok=True, delimiter=delimiter, width=width, width_from=width_from)
    return records_to_graph(lines.records(start, comments), rec, opts,
                            default_directed=True, base=0)


def read_csv(lines: TextLines, opts: ReadOptions) -> Graph:
    return _read_delimited(lines, opts, ",")


def read_tsv(lines: TextLines, opts: ReadOptions) -> Graph:
    return _read_delimited(lines, opts, "\t")


def _p_line(lines: TextLines, path: str, kind: str, counts: str) -> tuple[int, int, int]:
    """Find ``p <kind> n m``; return n, m and the line number of the header."""
    usage = f"'p {kind} <vertices> <{counts}>'"
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s or s[0] == "c":
            continue
        fields = s.split()
        if fields[0] != "p":
            raise GraphFormatError(
                f"expected the {usage} header before any record, got {quote(s)}",
                path, i + 1)
        if len(fields) != 4 or fields[1] != kind:
            raise GraphFormatError(f"expected {usage}, got {quote(s)}", path, i + 1)
        n = header_int(fields[2], "vertex count", path, i + 1, limit=MAX_VERTICES)
        m = header_int(fields[3], f"{counts[:-1]} count", path, i + 1)
        return n, m, i + 1
    raise GraphFormatError(f"missing the {usage} header line", path)


def read_dimacs(lines: TextLines, opts: ReadOptions) -> Graph:
    n, m, hline = _p_line(lines, opts.path, "sp", "arcs")
    weight = None if opts.unweighted else 3
    rec = Records(ncols=4, src=1, dst=2, weight=weight, tag="a",
                   names=("a", "source", "target", "weight"))
    return records_to_graph(lines.records(hline, ("c",)), rec, opts,
                            default_directed=True, base=1,
                             n=n, n_line=hline, expected=m, what="arcs",
                             count_line=hline)


def read_pace(lines: TextLines, opts: ReadOptions) -> Graph:
    n, m, hline = _p_line(lines, opts.path, "tw", "edges")
    rec = Records(ncols=2, src=0, dst=1, weight=None, names=("source", "target"))
    return records_to_graph(lines.records(hline, ("c",)), rec, opts,
                            default_directed=False, base=1,
                             n=n, n_line=hline, expected=m, what="edges",
                             count_line=hline)
