"""Exceptions raised by mgapsp.

Every error caused by the user's input derives from :class:`MgapspError`, which is
itself a :class:`ValueError`, so callers can catch one class.  Messages name the file,
the line and the offending value where there is one, in the ``path:line: message``
form that compilers use.

Instances must survive pickling, because Dask carries them from workers back to the
client: each class keeps its constructor arguments in ``args``-compatible form.
"""

from __future__ import annotations

from scipy.sparse.csgraph import NegativeCycleError as _ScipyNegativeCycleError

__all__ = [
    "MgapspError",
    "GraphFormatError",
    "EmptyGraphError",
    "NegativeCycleError",
    "InsufficientMemoryError",
    "StoreError",
    "ResumeMismatchError",
    "UnknownLabelError",
    "UnsupportedError",
    "Float32Inexact",
    "quote",
]


class MgapspError(ValueError):
    """Base class of every error mgapsp raises for bad input or bad state."""


class GraphFormatError(MgapspError):
    """A graph file (or in-memory graph) is malformed.

    Parameters
    ----------
    message : str
        What is wrong, including the offending value.
    path : str, optional
        The file being read.
    line : int, optional
        1-based line number of the offending line.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + message)

    def __reduce__(self):
        return (type(self), (self.message, self.path, self.line))


class EmptyGraphError(GraphFormatError):
    """The graph has no edges (or no vertices)."""


class NegativeCycleError(MgapspError, _ScipyNegativeCycleError):
    """The graph has a cycle of negative total weight.

    Also a :class:`scipy.sparse.csgraph.NegativeCycleError`, so code written for
    SciPy catches it unchanged.

    Attributes
    ----------
    cycle : list of int
        Vertex ids (as in the input) of one negative cycle, in order; the edge from
        the last back to the first closes it.
    weight : float
        The total weight of that cycle (< 0).
    """

    def __init__(self, cycle, weight: float, message: str | None = None):
        self.cycle = [int(v) for v in cycle]
        self.weight = float(weight)
        if message is None:
            shown = self.cycle if len(self.cycle) <= 20 else self.cycle[:20] + ["..."]
            text = " -> ".join(str(v) for v in shown + [self.cycle[0]])
            message = f"negative cycle of weight {self.weight:g}: {text}"
        self.message = message
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.cycle, self.weight, self.message))


class InsufficientMemoryError(MgapspError):
    """The job does not fit the memory of the chosen device."""

    def __init__(self, what: str, needed: int, available: int, hint: str = ""):
        self.what = what
        self.needed = int(needed)
        self.available = int(available)
        self.hint = hint
        msg = (
            f"{what} needs {format_bytes(needed)} but only {format_bytes(available)} "
            f"is available"
        )
        if hint:
            msg += f"; {hint}"
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self.what, self.needed, self.available, self.hint))


class StoreError(MgapspError):
    """The output store is missing, unreadable, or would be overwritten."""


class ResumeMismatchError(StoreError):
    """``resume`` was asked for a store made from another graph or other options."""


class UnknownLabelError(MgapspError, KeyError):
    """A vertex label that no vertex of the graph has (a source, a target, a path's
    end).  Also a KeyError, as for a missing key of a mapping."""

    def __str__(self) -> str:       # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnsupportedError(MgapspError):
    """A combination of options that this backend or algorithm does not provide."""


class Float32Inexact(MgapspError):
    """Distances computed in float32 reached float32's exact integers' end (2**24):
    they may be rounded, so the rows from ``rows_done`` on are computed again in
    float64 (see :func:`mgapsp.plan.choose_dtype`).  Raised by a batch, caught by the
    job or the call that ran it; a user sees it only where float64 cannot be used."""

    def __init__(self, value: float, rows_done: int = 0, batch: int | None = None):
        self.value, self.rows_done, self.batch = float(value), int(rows_done), batch
        where = f"batch {batch}'s" if batch is not None else "a batch's"
        super().__init__(f"{where} distances reached {self.value:.9g} in float32, past "
                         "its exact integers (2**24)")

    def __reduce__(self):
        return (type(self), (self.value, self.rows_done, self.batch))


def quote(value, limit: int = 80) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters: a longer one is cut
    and ends in ``...``.  NumPy scalars are shown as the Python values they hold, and a
    long string is cut before it is quoted, so quoting a field of megabytes costs no
    more than quoting a short one."""
    limit = max(int(limit), 8)
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, (str, bytes)) and len(value) > limit:
        value = value[:limit]
        text = repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    raise AssertionError("unreachable")
