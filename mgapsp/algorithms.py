"""Every algorithm mgapsp runs, in one place: its name, the backends that run it, what
it needs of the graph and what it gives.

The command line's choices, the API's and the planner's checks, and the backends' lists
of what they run are read from here (:func:`names`, :func:`get`, :meth:`Algorithm.check`),
so that a rule such as "non-negative weights" is written once, beside the algorithm it
belongs to.  :func:`register` adds an algorithm with its :class:`Code`: the functions
each backend calls for it.  A built-in algorithm names its code by a dotted path to its
room in :mod:`mgapsp.backends` (loaded on first use); an extension passes its own.

This module imports nothing of mgapsp's but its errors: every layer may read it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .errors import MgapspError, UnsupportedError

__all__ = ["Algorithm", "Code", "register", "unregister", "get", "resolve", "names",
           "needs_hierarchy", "BUILT_IN", "BELLMAN_FORD", "DIJKSTRA", "JOHNSON",
           "FLOYD_WARSHALL", "PHAST"]


@dataclass(frozen=True)
class Code:
    """What the backends call for one algorithm, each mapping keyed by backend name
    (``"cpu"``, ``"gpu"``).

    ``run(backend, graph, sources, *, dtype, predecessors, potentials, targets)``
    returns the batch's :class:`~mgapsp.backends.BatchResult`; the backend has checked
    the algorithm against the graph, and (on the GPU) the sources and the dtype, first.
    """

    run: Mapping[str, Callable] = field(default_factory=dict)
    #: ``rows(backend, graph, sources, dist, pred, *, potentials, columns, parallel)``:
    #: rows straight into host arrays on every core (the CPU's Numba kernels), where
    #: they pay (:func:`mgapsp.backends.cpu.kernels_pay`)
    rows: Mapping[str, Callable] = field(default_factory=dict)
    #: whether ``rows`` gives predecessors too (else ``run`` answers for them)
    rows_predecessors: bool = True
    #: ``memory(graph, batch_size, *, dtype, predecessors, fw_rows) -> int``: the bytes
    #: a batch needs on the backend's device beyond the graph's own arrays (where
    #: missing, the backend's estimate for an output block)
    memory: Mapping[str, Callable] = field(default_factory=dict)


@dataclass(frozen=True)
class Algorithm:
    """What an algorithm is to the rest of mgapsp."""

    #: as users spell it (``--algorithm``, ``algorithm=``)
    name: str
    #: one line for the command line's help and the docs
    summary: str
    #: the backends that run it
    backends: tuple[str, ...]
    #: refuses graphs with a negative weight (with this advice)
    non_negative: str = ""
    #: gives predecessors only where every weight is positive (zero-weight edges could
    #: tie two vertices into naming each other)
    positive_for_predecessors: bool = False
    #: may compute only the targets' columns (its batches then say so)
    targets_only: bool = False
    #: reweights the graph with potentials that a job computes once
    potentials: bool = False
    #: runs on the graph's contraction hierarchy, which a job builds (or finds) once
    hierarchy: bool = False
    #: its :class:`Code`, or ``"module:NAME"``, the room that holds it (imported the
    #: first time a backend runs the algorithm, so that this registry imports nothing)
    code: Code | str = field(default_factory=Code)

    def runs_on(self, backend: str) -> bool:
        return backend in self.backends

    def implementation(self) -> Code:
        """The algorithm's :class:`Code` (its room loaded on first use)."""
        if isinstance(self.code, Code):
            return self.code
        if self.code not in _ROOMS:
            module, _, name = self.code.partition(":")
            _ROOMS[self.code] = getattr(importlib.import_module(module), name)
        return _ROOMS[self.code]

    def check(self, graph, backend: str | None = None) -> None:
        """Refuse, in one line, a graph (or a backend) this algorithm cannot answer."""
        if backend is not None and not self.runs_on(backend):
            raise UnsupportedError(
                f"the {backend} backend does not run {self.name}; it runs "
                f"{', '.join(names(backend))}")
        if self.non_negative and graph.has_negative_weights:
            raise UnsupportedError(
                f"{self.name} needs non-negative weights, but the graph has weight "
                f"{graph.min_weight:g}; {self.non_negative}")


_REGISTRY: dict[str, Algorithm] = {}
_ROOMS: dict[str, Code] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm`` (a name taken already is refused: unregister it first)."""
    if algorithm.name in _REGISTRY or algorithm.name == "auto":
        raise MgapspError(f"an algorithm named {algorithm.name!r} exists already")
    _REGISTRY[algorithm.name] = algorithm
    return algorithm


def unregister(name: str) -> None:
    """Remove a registered algorithm (the built-in ones stay)."""
    if name in BUILT_IN:
        raise MgapspError(f"{name} is built in")
    _REGISTRY.pop(name, None)


def get(name: str) -> Algorithm:
    """The algorithm ``name``; an unknown name is one line listing the known ones."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnsupportedError(f"unknown algorithm {name!r}; choose one of auto, "
                               f"{', '.join(names())}") from None


def resolve(algorithm: str | Algorithm) -> Algorithm:
    """``algorithm`` as an :class:`Algorithm` (a name is looked up, as :func:`get`)."""
    return algorithm if isinstance(algorithm, Algorithm) else get(algorithm)


def needs_hierarchy(*algorithms: str | Algorithm | None) -> bool:
    """Whether any of ``algorithms`` (names or specs; None for none) runs on a
    hierarchy."""
    return any(a is not None and resolve(a).hierarchy for a in algorithms)


def names(backend: str | None = None) -> tuple[str, ...]:
    """The registered algorithms' names (those ``backend`` runs), in registration
    order."""
    return tuple(a.name for a in _REGISTRY.values()
                 if backend is None or a.runs_on(backend))


_NOT_NEGATIVE = "use johnson or bellman-ford"
_ROOM = "mgapsp.backends."

BELLMAN_FORD = register(Algorithm(
    "bellman-ford", "frontier Bellman-Ford over a batch of sources; any weights",
    backends=("cpu", "gpu"), code=_ROOM + "frontier_sssp:BELLMAN_FORD"))
DIJKSTRA = register(Algorithm(
    "dijkstra", "Dijkstra (Crauser's parallel rounds on the GPU); non-negative weights",
    backends=("cpu", "gpu"), non_negative=_NOT_NEGATIVE,
    code=_ROOM + "frontier_sssp:DIJKSTRA"))
JOHNSON = register(Algorithm(
    "johnson", "Dijkstra on the graph reweighted by potentials; negative weights",
    backends=("cpu", "gpu"), potentials=True, code=_ROOM + "johnson:JOHNSON"))
FLOYD_WARSHALL = register(Algorithm(
    "floyd-warshall", "blocked Floyd-Warshall on the whole matrix; dense graphs",
    backends=("cpu", "gpu"), code=_ROOM + "floyd_warshall:FLOYD_WARSHALL"))
PHAST = register(Algorithm(
    "phast", "sweeps of a contraction hierarchy built once per graph; road networks",
    backends=("cpu", "gpu"), non_negative=_NOT_NEGATIVE, positive_for_predecessors=True,
    targets_only=True, hierarchy=True, code=_ROOM + "phast:PHAST"))

BUILT_IN = names()
