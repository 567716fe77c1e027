"""Numba's ``njit`` as the package's compiled kernels use it (importing this module
imports Numba)."""

from __future__ import annotations

import logging

import numba

__all__ = ["jit"]

log = logging.getLogger(__name__)


def jit(**options):
    """``numba.njit`` with its on-disk cache where one is writable: Numba refuses
    ``cache=True`` (RuntimeError) where neither the package's ``__pycache__`` nor its
    user cache folder can be written, and then the kernels compile in every process."""
    def wrap(fn):
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError as exc:
            log.info("Numba cannot cache %s (%s); it compiles in each process",
                     fn.__name__, exc)
            return numba.njit(**options)(fn)
    return wrap
