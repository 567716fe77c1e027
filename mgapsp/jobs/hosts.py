"""What the embedded cluster of a job on this host will be, decided without Dask: one
worker inside this process, or worker processes (:func:`one_process`), on which
devices (:func:`parse_gpus`) and cores (:func:`cpu_threads`).  The command line
decides it before it reads the graph, so that worker processes start meanwhile, and
before Distributed is imported, so that refusing bad input never imports it."""

from __future__ import annotations

import os

from ..backends.cpu import multicore
from ..errors import MgapspError

__all__ = ["cpu_threads", "one_process", "parse_gpus"]


def parse_gpus(text: str) -> str:
    """Validate a "0,2"-style device list; returns it normalized."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items or not all(t.isdigit() for t in items) or len(set(items)) != len(items):
        raise MgapspError(f"--gpus takes distinct device numbers like 0,2; got {text!r}")
    return ",".join(items)


def one_process(backend: str, *, gpus: str | None = None, n_workers: int | None = None,
                cpu_workers: int = 0, small: bool = False) -> bool:
    """Whether the embedded cluster of a job is best this process alone: where one
    worker is all there is, a GPU worker on the one GPU this process sees, a CPU
    worker for a job of one small batch (``small``), or a CPU worker of a thread per
    core where the CPU kernels release the GIL.  Starting worker processes takes
    seconds (each imports Dask, Zarr, SciPy and CuPy again, and talks TLS to the
    scheduler); a job of a few seconds would spend most of its time on it."""
    if cpu_workers or (n_workers or 1) != 1:
        return False
    if backend == "gpu":
        from ..devices import gpu_count

        return gpu_count() == 1 and (gpus is None or parse_gpus(gpus) == "0")
    return small or multicore()


def cpu_threads() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
