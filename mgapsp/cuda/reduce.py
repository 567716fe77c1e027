"""Per-row reductions of a distance block on its device: what closeness, harmonic
centrality and eccentricity need of each row, without the row leaving the device.

Each reduction is one pass of a CuPy reduction kernel along the rows (no temporary of
the block's size); sums accumulate in float64 whatever the block's dtype.
"""

from __future__ import annotations

from .loader import cupy_module

__all__ = ["row_reductions"]

_KERNELS: dict = {}


def _kernels() -> dict:
    if not _KERNELS:
        cupy = cupy_module()
        _KERNELS.update(
            reachable=cupy.ReductionKernel(
                "T x", "int64 y", "isfinite(x) ? 1 : 0", "a + b", "y = a", "0",
                "mgapsp_row_reachable"),
            total=cupy.ReductionKernel(
                "T x", "float64 y", "isfinite(x) ? (double)x : 0.0", "a + b", "y = a",
                "0", "mgapsp_row_total"),
            harmonic=cupy.ReductionKernel(
                "T x", "float64 y", "(isfinite(x) && x > 0) ? 1.0 / (double)x : 0.0",
                "a + b", "y = a", "0", "mgapsp_row_harmonic"),
            # a row's own source is at 0: the largest finite distance is at least 0
            eccentricity=cupy.ReductionKernel(
                "T x", "float64 y", "isfinite(x) ? (double)x : 0.0", "max(a, b)",
                "y = a", "0", "mgapsp_row_eccentricity"),
        )
    return _KERNELS


def row_reductions(block) -> dict:
    """``{"reachable", "total", "harmonic", "eccentricity"}`` of each row of the device
    ``block`` (``inf`` unreachable): finite entries, their sum, the sum of the
    reciprocals of the positive ones, the largest; device arrays."""
    return {name: k(block, axis=1) for name, k in _kernels().items()}
