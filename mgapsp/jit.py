"""Numba's ``njit`` as the package's compiled kernels use it, and the one way the
package imports the modules that hold them (:func:`compiled`)."""

from __future__ import annotations

import importlib
import logging
import threading

__all__ = ["jit", "compiled"]

log = logging.getLogger(__name__)

# Two threads importing Numba at once (a job's warm-up thread and a hierarchy build)
# can each meet the other's half-made modules: "cannot import name ... from
# partially initialized module numba.core...".  Every first import goes through it.
_IMPORTING = threading.RLock()


def compiled(module: str):
    """The package module ``module`` (one that imports Numba: its kernels), imported
    while no other thread of this process imports one."""
    with _IMPORTING:
        return importlib.import_module(module)


def jit(**options):
    """``numba.njit`` with its on-disk cache where one is writable: Numba refuses
    ``cache=True`` (RuntimeError) where neither the package's ``__pycache__`` nor its
    user cache folder can be written, and then the kernels compile in every process."""
    import numba

    def wrap(fn):
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError as exc:
            log.info("Numba cannot cache %s (%s); it compiles in each process",
                     fn.__name__, exc)
            return numba.njit(**options)(fn)
    return wrap
