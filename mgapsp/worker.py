"""``python -m mgapsp.worker SCHEDULER [OPTIONS]``: the right Dask worker for this node.

Where CUDA devices are visible it runs ``dask cuda worker`` (one worker process per
GPU, each pinned to its device); elsewhere a plain ``dask worker``.  OPTIONS are those
of the chosen command (``--name``, ``--nthreads``, ``--memory-limit``, the TLS files
...).  Batch systems that launch workers as ``python -m MODULE`` (dask-jobqueue's
``worker_command``) use this module.

Each worker it starts preloads this module, whose ``dask_setup`` shortens the
interpreter's thread switch interval (:data:`SWITCH_INTERVAL_S`); the embedded
clusters of :func:`mgapsp.cluster.connect` get the same through :class:`SwitchInterval`.
"""

from __future__ import annotations

import sys

from distributed.diagnostics.plugin import WorkerPlugin

#: the thread switch interval of mgapsp's workers (Python's default is 5 ms).  A batch
#: thread that waits on its GPU gives up the interpreter lock and, to launch the next
#: kernel, waits for it behind the worker's other threads (Dask's, the other batch
#: thread, those storing chunks).  On nvidia-h200-x4 (all rows of p2p-Gnutella31, two
#: calls of alternating settings) 0.5 ms took four GPUs 108.1 and 122.7 ms against
#: 114.0 and 129.5 ms with 5 ms, one GPU 348.3 and 374.2 against 358.4 and 377.1 ms.
SWITCH_INTERVAL_S = 0.0005


class SwitchInterval(WorkerPlugin):
    """A worker plugin (``client.register_plugin``) that sets the switch interval of
    every worker of the cluster, those that join later included."""

    name = "mgapsp-switch-interval"

    def __init__(self, seconds: float = SWITCH_INTERVAL_S):
        self.seconds = seconds

    def setup(self, worker=None):
        sys.setswitchinterval(self.seconds)


def dask_setup(worker) -> None:
    """Preload hook of the workers this module starts."""
    SwitchInterval().setup(worker)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv) + ["--preload", "mgapsp.worker"]
    from .cluster import gpu_count

    if gpu_count() > 0:
        from dask_cuda.cli import worker

        # dask cuda worker has no --nworkers/--nanny: it starts one process per GPU.
        args = _drop_flags(args, {"--nanny", "--no-nanny"}, with_value={"--nworkers"})
        worker.main(args=args, prog_name="dask cuda worker")
    else:
        from distributed.cli.dask_worker import main as dask_worker

        dask_worker.main(args=args, prog_name="dask worker")


def _drop_flags(args, flags, with_value):
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in flags:
            continue
        if a in with_value:
            skip = True
            continue
        out.append(a)
    return out


if __name__ == "__main__":
    main()
