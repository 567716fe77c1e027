"""TNTP transportation networks (``*_net.tntp``): a metadata block, then links."""

from __future__ import annotations



from ..errors import GraphFormatError, quote
from ..graph import MAX_VERTICES, Graph
from .lines import TextLines
from .text import ReadOptions, Records, header_int, joined_fields, records_to_graph


_TNTP_COLUMNS = ("init_node", "term_node", "capacity", "length", "free_flow_time", "b",
                 "power", "speed", "toll", "link_type")


def read_tntp(lines: TextLines, opts: ReadOptions) -> Graph:
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
                f"{quote(s)}", path, i + 1)
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
        sizes.append((header_int(tok, f"<{key}>", path, lineno, limit), lineno))
    (n, n_line), (m, m_line) = sizes

    # Columns: named by the '~ init_node term_node ...' comment before the first row,
    # else the standard ones.
    names, header_line = list(_TNTP_COLUMNS), None
    for i, raw in enumerate(lines):
        if i < end:
            continue
        s = raw.strip()
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
            f"weight_column must be a column name or index, got {quote(wc)}", path)
    if isinstance(wc, str) and wc.strip().isdigit():
        try:
            wc = int(wc)
        except ValueError:              # more digits than int() reads
            raise GraphFormatError(f"weight_column {quote(wc)} is no column index",
                                   path) from None
    if isinstance(wc, int):
        if not 0 <= wc < max(len(names), 1) or wc in (src, dst):
            raise GraphFormatError(
                f"weight_column {wc} is not a weight column; the columns are "
                f"{joined_fields(f'{i}={c}' for i, c in enumerate(names))}", path, header_line)
        weight = wc
    elif wc.lower() in names and names.index(wc.lower()) not in (src, dst):
        weight = names.index(wc.lower())
    else:
        raise GraphFormatError(
            f"no weight column named {quote(wc)}; the columns are {joined_fields(names)}",
            path, header_line)
    if opts.unweighted:
        weight = None
    width = max(src, dst, -1 if weight is None else weight) + 1
    rec = Records(ncols=width, src=src, dst=dst, weight=weight, names=tuple(names),
                   extra_ok=True)
    return records_to_graph(lines.records(end, ("~",), cut=";"), rec, opts,
                            default_directed=True, base=1,
                             n=n, n_line=n_line, expected=m, what="links",
                             count_line=m_line)


# --- TSPLIB ----------------------------------------------------------------
