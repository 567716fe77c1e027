"""``python -m mgapsp.jobs.worker SCHEDULER [OPTIONS]``: the right Dask worker for this node.

Where CUDA devices are visible it runs ``dask cuda worker`` (one worker process per
GPU, each pinned to its device); elsewhere a plain ``dask worker``.  OPTIONS are those
of the chosen command (``--name``, ``--nthreads``, ``--memory-limit``, the TLS files
...).  Batch systems that launch workers as ``python -m MODULE`` (dask-jobqueue's
``worker_command``) use this module.
"""

from __future__ import annotations

import sys

from .. import config
from ..gpu_count import gpu_count



def worker_args(args: list[str], gpus: int) -> tuple[str, list[str]]:
    """The Dask worker command for a node with ``gpus`` visible GPUs and its arguments:
    ``dask cuda worker`` with ``mgapsp.cluster.gpu-worker-threads`` threads (unless
    ``--nthreads`` is given) where there are GPUs, else ``dask worker``."""
    args = list(args)
    if gpus == 0:
        return "dask worker", args
    # dask cuda worker has no --nworkers/--nanny: it starts one process per GPU.
    args = _drop_flags(args, {"--nanny", "--no-nanny"}, with_value={"--nworkers"})
    if not any(a == "--nthreads" or a.startswith("--nthreads=") for a in args):
        args += ["--nthreads", str(config.get("cluster.gpu-worker-threads"))]
    return "dask cuda worker", args


def main(argv: list[str] | None = None) -> None:
    command, args = worker_args(sys.argv[1:] if argv is None else argv, gpu_count())
    if command == "dask cuda worker":
        from dask_cuda.cli import worker

        worker.main(args=args, prog_name=command)
    else:
        from distributed.cli.dask_worker import main as dask_worker

        dask_worker.main(args=args, prog_name=command)


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
