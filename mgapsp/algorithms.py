"""Every algorithm mgapsp runs, in one place: its name, the backends that run it, what
it needs of the graph and what it gives.

The command line's choices, the API's and the planner's checks, and the backends' lists
of what they run are read from here (:func:`names`, :func:`get`, :meth:`Algorithm.check`),
so that a rule such as "non-negative weights" is written once, beside the algorithm it
belongs to.  :func:`register` adds an algorithm; an algorithm that brings its own entry
point for a backend (:attr:`Algorithm.entry`) runs there through
:meth:`mgapsp.backends.Backend.distances` like the built-in ones.

This module imports nothing of mgapsp's but its errors: every layer may read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .errors import MgapspError, UnsupportedError

__all__ = ["Algorithm", "register", "unregister", "get", "names", "needs_hierarchy", "BUILT_IN", "BELLMAN_FORD", "DIJKSTRA",
           "JOHNSON", "FLOYD_WARSHALL", "PHAST"]


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
    #: backend -> ``run(backend, graph, sources, *, dtype, predecessors, potentials,
    #: targets) -> BatchResult`` for an algorithm that brings its own code; the
    #: built-in ones are their backends' own (empty here)
    entry: Mapping[str, Callable] = field(default_factory=dict)

    def runs_on(self, backend: str) -> bool:
        return backend in self.backends

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


def needs_hierarchy(*algorithms: str | None) -> bool:
    """Whether any of ``algorithms`` (names; None for none) runs on a hierarchy."""
    return any(a is not None and get(a).hierarchy for a in algorithms)


def names(backend: str | None = None) -> tuple[str, ...]:
    """The registered algorithms' names (those ``backend`` runs), in registration
    order."""
    return tuple(a.name for a in _REGISTRY.values()
                 if backend is None or a.runs_on(backend))


_NOT_NEGATIVE = "use johnson or bellman-ford"

BELLMAN_FORD = register(Algorithm(
    "bellman-ford", "frontier Bellman-Ford over a batch of sources; any weights",
    backends=("cpu", "gpu")))
DIJKSTRA = register(Algorithm(
    "dijkstra", "Dijkstra (Crauser's parallel rounds on the GPU); non-negative weights",
    backends=("cpu", "gpu"), non_negative=_NOT_NEGATIVE))
JOHNSON = register(Algorithm(
    "johnson", "Dijkstra on the graph reweighted by potentials; negative weights",
    backends=("cpu", "gpu"), potentials=True))
FLOYD_WARSHALL = register(Algorithm(
    "floyd-warshall", "blocked Floyd-Warshall on the whole matrix; dense graphs",
    backends=("cpu", "gpu")))
PHAST = register(Algorithm(
    "phast", "sweeps of a contraction hierarchy built once per graph; road networks",
    backends=("cpu", "gpu"), non_negative=_NOT_NEGATIVE, positive_for_predecessors=True,
    targets_only=True, hierarchy=True))

BUILT_IN = names()
