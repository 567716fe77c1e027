"""How many CUDA devices this process sees, without creating a CUDA context."""

from __future__ import annotations

import os

__all__ = ["gpu_count"]

#: the count by the value of ``CUDA_VISIBLE_DEVICES``: NVML's start and stop take about
#: 12 ms, which every call of ``backend="auto"`` (each NetworkX call dispatched to
#: mgapsp) would pay again, and a process's devices do not come and go
_counts: dict = {}


def gpu_count() -> int:
    """CUDA devices visible to this process, without creating a CUDA context.

    Uses NVML (as dask-cuda does) and honours ``CUDA_VISIBLE_DEVICES``; falls back to
    the CUDA runtime's count through CuPy.  Asked once per value of
    ``CUDA_VISIBLE_DEVICES``.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible not in _counts:
        _counts[visible] = _count(visible)
    return _counts[visible]


def _count(visible: str | None) -> int:
    if visible is not None:
        visible = visible.strip()
        if visible in ("", "-1"):
            return 0
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
        if visible is not None:
            return min(count, len([v for v in visible.split(",") if v.strip()]))
        return count
    except Exception:
        pass
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0
