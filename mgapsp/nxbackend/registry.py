"""The table of NetworkX functions the backend implements, and what each supports.

Each implementation registers itself with :func:`dispatches`, giving a check of its
arguments: :meth:`~mgapsp.nxbackend.interface.BackendInterface.can_run` answers from
it, so NetworkX runs its own code for anything the check refuses.
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable

__all__ = ["Implementation", "IMPLEMENTATIONS", "CALLS", "dispatches", "is_number"]


@dataclass(frozen=True)
class Implementation:
    func: Callable
    #: (bound arguments) -> True, or the reason mgapsp cannot run them
    check: Callable | None = None

    def can_run(self, args, kwargs):
        try:
            bound = inspect.signature(self.func).bind(*args, **kwargs)
        except TypeError as exc:        # NetworkX raises its own message for it
            return f"arguments do not match: {exc}"
        bound.apply_defaults()
        G = bound.arguments["G"]
        if not hasattr(G, "is_directed") and not hasattr(G, "graph"):
            return "not a NetworkX graph"
        if len(G) == 0:
            return "the null graph (NetworkX's own errors and answers)"
        return True if self.check is None else self.check(bound.arguments)


#: dispatched function name -> implementation
IMPLEMENTATIONS: dict[str, Implementation] = {}

#: calls that mgapsp answered (not fallen back), by function name: what tests check
CALLS: Counter = Counter()


def dispatches(check: Callable | None = None):
    """Register the decorated function under its (NetworkX) name."""
    def register(func):
        IMPLEMENTATIONS[func.__name__] = Implementation(func, check)
        return func
    return register


def is_number(x) -> bool:
    """An int or float (not bool, not NaN): a cutoff mgapsp compares as NetworkX."""
    return type(x) in (int, float) and not (isinstance(x, float) and math.isnan(x))
