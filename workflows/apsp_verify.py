"""APSP of a graph file into a Zarr store, then a check of sampled rows against SciPy.

    python workflows/apsp_verify.py tests/data/p2p-Gnutella09.txt g09.zarr [--backend gpu]

Runs on the embedded cluster (every visible GPU, else every core) or on a running one
(--scheduler-file).  Prints the job's throughput and the verification result; exits
non-zero when a row differs.
"""

from __future__ import annotations

import argparse
import sys
import time

import mgapsp
from mgapsp.api import resolve_backend
from mgapsp.jobs.cluster import connect
from mgapsp.jobs.driver import run_job
from mgapsp.store.verify import verify_store


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("out")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    parser.add_argument("--scheduler-file")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)

    graph = mgapsp.read_graph(args.graph)
    backend = args.backend if args.scheduler_file else resolve_backend(args.backend)
    with connect(scheduler_file=args.scheduler_file, backend=backend) as client:
        print(f"{graph!r} on {len(client.scheduler_info()['workers'])} workers; "
              f"dashboard {client.dashboard_link}")
        report = run_job(graph, args.out, client, backend=backend, resume=args.resume,
                         overwrite=not args.resume)
    plan = report.plan
    print(f"{plan.algorithm} on {plan.backend}: {report.rows_run:,} rows in "
          f"{report.seconds:.2f} s ({report.rows_per_second:,.0f} rows/s), batches per "
          f"worker {dict(report.per_worker)}")
    t0 = time.perf_counter()
    check = verify_store(args.out, samples=args.samples)
    print(f"verified {check.rows_checked} sampled rows against SciPy in "
          f"{time.perf_counter() - t0:.1f} s: {'ok' if check.ok else 'MISMATCH'}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
