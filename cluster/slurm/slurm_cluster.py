"""Run an mgapsp job on a SLURM cluster with dask-jobqueue.

Each SLURM job is one node: ``python -m mgapsp.jobs.worker`` starts one Dask worker per
GPU (``dask cuda worker``), each limited to the node's memory divided by its GPUs; on
CPU nodes (``--gpus-per-node 0``) one Dask worker with a thread per core, whose
batches run on the CPU backend.  The scheduler runs here, in the driver (run this on a
login node or in a small job).

    python cluster/slurm/slurm_cluster.py --print-job-script --gpus-per-node 4
    python cluster/slurm/slurm_cluster.py --nodes 4 --gpus-per-node 4 \\
        --memory-per-gpu 120GB --cores-per-gpu 8 --queue gpu --walltime 02:00:00 \\
        run graph.gr -o /shared/apsp.zarr [--resume]
    python cluster/slurm/slurm_cluster.py --nodes 8 --gpus-per-node 0 \\
        --cores-per-node 32 --memory-per-node 64GB --queue cpu \\
        run graph.gr -o /shared/apsp.zarr [--resume]

The store must be on a file system every node mounts.  With ``--tls DIR`` every
connection is encrypted with DIR/ca.pem, cert.pem and key.pem (see
``cluster/make-tls.sh``); without it, anyone who reaches the scheduler's port can
send it work.  Needs ``pip install dask-jobqueue``.

The dashboards listen on loopback only (the scheduler's on 127.0.0.1:8787 of the
host running this script, or a free port if taken; the workers' on 127.0.0.1 of
their nodes), since they have no login.  To see the scheduler's from your machine:

    ssh -L 8787:127.0.0.1:8787 LOGIN_NODE      # then open http://localhost:8787

``--dashboard-address HOST:PORT`` serves it elsewhere (``:8787``: every interface).
"""

from __future__ import annotations

import argparse
import sys

# Dashboards have no login: loopback unless asked otherwise (Dask's ":8787" is every
# interface of the host).
DASHBOARD_ADDRESS = "127.0.0.1:8787"
WORKER_DASHBOARD_ADDRESS = "127.0.0.1:0"


def parse_memory(text: str) -> int:
    from dask.utils import parse_bytes

    return parse_bytes(text)


def make_cluster(*, gpus_per_node: int, memory_per_gpu: str = "", cores_per_gpu: int = 0,
                 cores_per_node: int = 0, memory_per_node: str = "",
                 queue: str | None = None, account: str | None = None,
                 walltime: str = "01:00:00", interface: str | None = None,
                 tls_dir: str | None = None, python: str | None = None,
                 log_directory: str | None = None,
                 dashboard_address: str = DASHBOARD_ADDRESS):
    """A ``SLURMCluster`` whose jobs are whole nodes running ``mgapsp.jobs.worker``: GPU
    nodes (``memory_per_gpu`` and ``cores_per_gpu`` for each of ``gpus_per_node``) or,
    with ``gpus_per_node=0``, CPU nodes of ``cores_per_node`` and ``memory_per_node``.

    ``dashboard_address``: the scheduler's dashboard, loopback by default (reach it
    through an SSH tunnel); the workers' dashboards listen on their nodes' loopback.
    """
    from dask.utils import format_bytes
    from dask_jobqueue import SLURMCluster

    kwargs = {}
    if tls_dir:
        from distributed import Security

        kwargs["security"] = Security(
            tls_ca_file=f"{tls_dir}/ca.pem", tls_worker_cert=f"{tls_dir}/cert.pem",
            tls_worker_key=f"{tls_dir}/key.pem", tls_client_cert=f"{tls_dir}/cert.pem",
            tls_client_key=f"{tls_dir}/key.pem", tls_scheduler_cert=f"{tls_dir}/cert.pem",
            tls_scheduler_key=f"{tls_dir}/key.pem", require_encryption=True)
        kwargs["protocol"] = "tls"
    if gpus_per_node:
        per_gpu = parse_memory(memory_per_gpu)
        # Dask's view of one job: `memory` becomes each worker's --memory-limit, so
        # it is the share of one GPU; SLURM is asked for the whole node's share.
        node = dict(cores=cores_per_gpu, memory=format_bytes(per_gpu),
                    job_cpu=cores_per_gpu * gpus_per_node,
                    job_mem=f"{per_gpu * gpus_per_node // 2**20}M",
                    job_extra_directives=[f"--gres=gpu:{gpus_per_node}"])
    else:
        node = dict(cores=cores_per_node, memory=memory_per_node, job_cpu=cores_per_node,
                    job_mem=f"{parse_memory(memory_per_node) // 2**20}M")
    return SLURMCluster(
        processes=1, **node,
        worker_command="mgapsp.jobs.worker",
        worker_extra_args=["--dashboard-address", WORKER_DASHBOARD_ADDRESS],
        queue=queue, account=account,
        walltime=walltime, interface=interface, python=python,
        log_directory=log_directory,
        scheduler_options={"dashboard_address": dashboard_address}, **kwargs)


def dashboard_link(cluster, dashboard_address: str = DASHBOARD_ADDRESS) -> str:
    """The scheduler dashboard's link.  Dask's ``dashboard_link`` names the scheduler's
    network address, where a loopback dashboard does not listen."""
    port = cluster.scheduler_info.get("services", {}).get("dashboard")
    host = dashboard_address.rpartition(":")[0] if ":" in dashboard_address else ""
    if port is None or host in ("", "0.0.0.0", "[::]"):
        return cluster.dashboard_link
    return f"http://{host}:{port}/status"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--gpus-per-node", type=int, default=4,
                        help="0: CPU nodes (--cores-per-node, --memory-per-node)")
    parser.add_argument("--memory-per-gpu", default="100GB")
    parser.add_argument("--cores-per-gpu", type=int, default=8)
    parser.add_argument("--cores-per-node", type=int, default=8)
    parser.add_argument("--memory-per-node", default="16GB")
    parser.add_argument("--queue")
    parser.add_argument("--account")
    parser.add_argument("--walltime", default="01:00:00")
    parser.add_argument("--interface", help="network interface of the nodes, e.g. ib0")
    parser.add_argument("--tls", help="directory with ca.pem, cert.pem, key.pem")
    parser.add_argument("--dashboard-address", default=DASHBOARD_ADDRESS,
                        help="where the scheduler's dashboard listens (default: "
                             "%(default)s, this host only; from your machine: ssh -L "
                             "8787:127.0.0.1:8787 THIS_HOST, then http://localhost:8787)")
    parser.add_argument("--print-job-script", action="store_true")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a job on the SLURM cluster")
    run.add_argument("graph")
    run.add_argument("-o", "--out", required=True)
    run.add_argument("--resume", action="store_true")
    run.add_argument("--algorithm", default="auto")
    run.add_argument("--batch-size", type=int, default=None)
    run.add_argument("--sources", help="file of source vertex ids (default: every vertex)")
    args = parser.parse_args(argv)

    cluster = make_cluster(gpus_per_node=args.gpus_per_node,
                           memory_per_gpu=args.memory_per_gpu,
                           cores_per_gpu=args.cores_per_gpu,
                           cores_per_node=args.cores_per_node,
                           memory_per_node=args.memory_per_node, queue=args.queue,
                           account=args.account, walltime=args.walltime,
                           interface=args.interface, tls_dir=args.tls,
                           dashboard_address=args.dashboard_address)
    if args.print_job_script or args.command != "run":
        print(cluster.job_script())
        cluster.close()
        return 0

    import mgapsp
    from distributed import Client

    from mgapsp.jobs.driver import run_job

    from mgapsp.cli import read_ids

    graph = mgapsp.read_graph(args.graph)
    sources = read_ids(args.sources, graph) if args.sources else None
    with cluster, Client(cluster) as client:
        cluster.scale(jobs=args.nodes)
        client.wait_for_workers(args.nodes * max(args.gpus_per_node, 1), timeout=3600)
        link = dashboard_link(cluster, args.dashboard_address)
        print(f"dashboard: {link}"
              + (" (this host only: ssh -L PORT:127.0.0.1:PORT to it)"
                 if "127.0.0.1" in link else ""), flush=True)
        try:
            report = run_job(graph, args.out, client, algorithm=args.algorithm,
                             backend="gpu" if args.gpus_per_node else "cpu",
                             resume=args.resume, overwrite=not args.resume,
                             batch_size=args.batch_size, sources=sources)
        except mgapsp.MgapspError as exc:     # the workers' jobs ended, a bad store...
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print(f"{report.rows_run:,} rows in {report.seconds:.1f} s "
          f"({report.rows_per_second:,.0f} rows/s) on {len(report.per_worker)} "
          f"{'GPU' if args.gpus_per_node else 'CPU node'}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
