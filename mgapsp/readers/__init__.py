"""Graphs from files and in-memory objects: :func:`read_graph` and :func:`as_graph`.

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
"""

from __future__ import annotations

import os

from ..errors import GraphFormatError, UnsupportedError, quote
from ..graph import Graph
from .edgelists import read_csv, read_dimacs, read_pace, read_snap, read_tsv
from .matrices import read_mtx, read_tsplib
from .in_memory import as_graph, is_cupy
from .lines import TextLines
from .text import FORMATS, ReadOptions, detect_format, resolve_format
from .tntp import read_tntp

__all__ = ["FORMATS", "as_graph", "detect_format", "is_cupy", "read_graph"]


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
        Duplicate edges keep their minimum weight and self-loops are kept.  Edge
        lists without a header (snap, csv, tsv) have the labels that occur in them as
        their vertices, in ascending order (ids that no edge names are no vertices: a
        SNAP file of ids 13..26196 may have 5,242 vertices); formats that declare
        their size (dimacs, pace, mtx, tntp, tsplib) have the vertices ``1..n`` of
        their header, edges or none.  ``name`` is the file's base name.

    Raises
    ------
    GraphFormatError
        The file is missing or malformed, or what it declares (vertex and edge counts,
        a matrix's size) or its text would not fit in the memory this process can
        still allocate (checked before anything of that size is allocated); the
        message names the file, the line and the offending value, quoted up to 80
        characters.
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

    Examples
    --------
    >>> import mgapsp, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "triangle.csv")
    >>> rows = ["src,dst,km", "0,1,2.5", "1,2,1.0", "2,0,4.0"]
    >>> with open(path, "w") as f:
    ...     _ = f.write(os.linesep.join(rows))
    >>> g = mgapsp.read_graph(path, weight_column="km")
    >>> g
    <Graph 'triangle.csv': n=3, m=3, directed, weighted>
    >>> mgapsp.apsp(g, sources=0)
    array([0. , 2.5, 3.5])
    """
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise GraphFormatError(f"the graph file must be a path (str or os.PathLike), got "
                               f"{type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):       # bytes paths: as the file system spells them
        path = os.fsdecode(path)
    lines = TextLines(path)
    fmt = resolve_format(format, path, lines)
    if weight_column is not None and fmt not in ("csv", "tsv", "tntp"):
        raise UnsupportedError(
            f"weight_column={quote(weight_column)} applies to csv, tsv and tntp files only, "
            f"not to {fmt} ({os.path.basename(path)})"
        )
    opts = ReadOptions(path=path, directed=directed, unweighted=bool(unweighted),
                    weight_column=weight_column)
    return _READERS[fmt](lines, opts)


_READERS = {
    "snap": read_snap,
    "csv": read_csv,
    "tsv": read_tsv,
    "dimacs": read_dimacs,
    "pace": read_pace,
    "mtx": read_mtx,
    "tntp": read_tntp,
    "tsplib": read_tsplib,
}
