"""``python -m mgapsp.worker SCHEDULER [OPTIONS]``: the right Dask worker for this node.

Where CUDA devices are visible it runs ``dask cuda worker`` (one worker process per
GPU, each pinned to its device); elsewhere a plain ``dask worker``.  OPTIONS are those
of the chosen command (``--name``, ``--nthreads``, ``--memory-limit``, the TLS files
...).  Batch systems that launch workers as ``python -m MODULE`` (dask-jobqueue's
``worker_command``) use this module.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
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
