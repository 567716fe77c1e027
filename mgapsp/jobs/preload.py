"""What each worker process of the embedded cluster loads as it starts (Dask's
``preload``): the batch task's modules and, on a GPU worker, the GPU backend with
CuPy, asked for its memory as a job's probe asks.  A job's first call to its workers
did that otherwise (1.1-1.9 s on a GPU host), after the cluster had started; as the
cluster starts while the command reads the graph (:mod:`mgapsp.cli`), it happens
meanwhile."""

from __future__ import annotations

from . import tasks  # noqa: F401  (the batch task, the backends, the store)
from ..backends import get_backend
from ..devices import gpu_count


def dask_setup(worker) -> None:
    if gpu_count():
        get_backend("gpu").memory_available()
