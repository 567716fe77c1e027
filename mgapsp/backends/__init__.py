"""Backends: given the graph and a batch of sources, return the batch's distance block.

:mod:`.cpu` runs SciPy's csgraph; :mod:`.gpu` the CUDA kernels of :mod:`mgapsp.cuda`.
Each process keeps one instance of each (they own device-resident caches).
"""

from __future__ import annotations

from .. import algorithms as registry
from ..errors import MgapspError
from .base import FLOAT32_EXACT, SLAB_ALIGN, Backend, BatchResult

__all__ = ["SLAB_ALIGN", "FLOAT32_EXACT", "Backend", "BatchResult", "get_backend",
           "backend_algorithms"]

_BACKENDS: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The per-process backend singleton (it owns the device-resident caches)."""
    if name not in _BACKENDS:
        if name == "cpu":
            from .cpu import CPUBackend

            _BACKENDS[name] = CPUBackend()
        elif name == "gpu":
            from .gpu import GPUBackend

            _BACKENDS[name] = GPUBackend()
        else:
            raise MgapspError(f"unknown backend {name!r}; choose auto, gpu or cpu")
    return _BACKENDS[name]


def backend_algorithms(name: str) -> tuple[str, ...]:
    """The algorithms the backend ``name`` runs (:mod:`mgapsp.algorithms`)."""
    if name not in ("cpu", "gpu"):
        raise MgapspError(f"unknown backend {name!r}; choose auto, gpu, cpu or hybrid")
    return registry.names(name)

