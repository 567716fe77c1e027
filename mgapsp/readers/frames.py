"""Graphs from data frames: a pandas DataFrame, a pyarrow Table, or any frame that
speaks Arrow's PyCapsule stream or the dataframe interchange protocol (polars, ...),
read as an edge list, one row an edge, with the column names of NetworkX's and
cuGraph's ``from_pandas_edgelist``."""

from __future__ import annotations

import numpy as np

from ..errors import GraphFormatError, quote
from ..graph import Graph

__all__ = ["is_frame", "from_frame"]

#: the column names when none are given (NetworkX's ``from_pandas_edgelist``)
SOURCE, TARGET, WEIGHT = "source", "target", "weight"


def is_frame(obj) -> bool:
    """Whether ``obj`` is a data frame: it exports an Arrow stream of columns or the
    dataframe interchange protocol (pandas, pyarrow, polars and others do)."""
    return hasattr(type(obj), "__arrow_c_stream__") or hasattr(type(obj), "__dataframe__")


def from_frame(frame, *, directed: bool | None = None, unweighted: bool = False,
               weight="weight", source=SOURCE, target=TARGET) -> Graph:
    """The graph of a frame's rows: ``source`` and ``target`` name the columns of
    the edges' ends (their labels: integers or text), ``weight`` the column of their
    weights.  Without a ``weight`` column every edge weighs 1 when the name is the
    default (or None), as in NetworkX; a column named by the caller must exist.
    ``directed`` defaults to True, as for edge arrays."""
    if callable(weight):
        raise GraphFormatError("weight= names a column of a data frame; a function "
                               "applies to NetworkX graphs only")
    columns = _Columns(frame)
    src = columns.get(source, "source")
    dst = columns.get(target, "target")
    weights = None
    if not unweighted and weight is not None:
        if weight in columns or weight != WEIGHT:
            weights = columns.get(weight, "weight")
    return Graph.from_edges(src, dst, weights, renumber=True,
                            directed=True if directed is None else directed)


class _Columns:
    """The named columns of a frame as NumPy arrays; a missing column or a null
    value is refused with the column's name."""

    def __init__(self, frame):
        self.kind = type(frame).__name__
        module = type(frame).__module__.split(".")[0]     # pandas 3 says "pandas"
        if module not in ("pandas", "pyarrow"):
            # any other frame becomes a pyarrow Table: by Arrow's stream where it has
            # one (pandas deprecates the interchange protocol), else by interchange
            try:
                import pyarrow
                import pyarrow.interchange
            except ImportError:
                raise GraphFormatError(f"reading a {self.kind} needs pyarrow: pip "
                                       "install pyarrow") from None
            frame = (pyarrow.table(frame) if hasattr(type(frame), "__arrow_c_stream__")
                     else pyarrow.interchange.from_dataframe(frame))
            module = "pyarrow"
        self.frame = frame
        self.arrow = module == "pyarrow"
        self.names = list(frame.column_names if self.arrow else frame.columns)

    def __contains__(self, name) -> bool:
        return name in self.names

    def get(self, name, role: str) -> np.ndarray:
        if self.names.count(name) != 1:
            shown = ", ".join(quote(c) for c in self.names[:20])
            have = "has no" if name not in self.names else "has more than one"
            raise GraphFormatError(
                f"the {self.kind} {have} column {quote(name)} for the edges' {role} "
                f"(its columns: {shown}); name it with {role}=")
        column = self.frame.column(name) if self.arrow else self.frame[name]
        null = (np.asarray(column.is_null()) if self.arrow
                else np.asarray(column.isna()))
        if null.any():
            k = int(np.flatnonzero(null)[0])
            raise GraphFormatError(f"row {k} of the {self.kind} has no {role} (a null "
                                   f"in column {quote(name)})")
        return np.asarray(column.to_numpy())
