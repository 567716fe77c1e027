"""One GPU worker's batches without Dask: where a batch's time goes (a probe).

    python3 bench/worker_probe.py tests/data/p2p-Gnutella31.txt --batch-size 2048

Plans the job as ``run_job`` does, creates its store, and runs every batch through
``pipeline.run_batch`` (the worker task itself) on a pool of ``--threads`` threads, as
a GPU worker does (``mgapsp.cluster.GPU_WORKER_THREADS``).  Prints the wall time, rows/s and, summed over
batches, the compute and write seconds.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp import pipeline
from mgapsp.cluster import GPU_WORKER_THREADS
from mgapsp.store import Store


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--threads", type=int, default=GPU_WORKER_THREADS)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    import cupy

    g = mgapsp.read_graph(args.graph)
    mem = cupy.cuda.Device().mem_info[1]
    plan = pipeline.plan_job(g, algorithm="auto", backend="gpu", dtype="float32", sources=None,
                             batch_size=args.batch_size, predecessors=False, n_workers=1,
                             memory=mem)
    scratch = Path(tempfile.mkdtemp())
    def task(b):
        start, stop = plan.rows(b)
        return pipeline.run_batch(str(path), g.fingerprint, path.name, b, start, stop,
                                  (start, stop), "gpu",
                                  plan.algorithm, plan.dtype, False)

    for r in range(args.repeats + 1):
        path = scratch / f"r{r}.zarr"
        Store.create(path, g, plan, overwrite=True)
        todo = range(plan.n_batches) if r else range(2 * args.threads)
        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(args.threads) as pool:
            stats = list(pool.map(task, todo))
        wall = time.perf_counter() - t0
        rows = sum(s["rows"] for s in stats)
        print(f"{'warm-up' if not r else 'run ' + str(r)}: {plan.algorithm}, {len(stats)} batches "
              f"of {plan.batch_size}, {wall:.3f} s = {rows / wall:,.0f} rows/s; compute "
              f"{sum(s['compute_s'] for s in stats):.3f} s, "
              f"write {sum(s['write_s'] for s in stats):.3f} s "
              f"(staging {sum(s['stage_s'] for s in stats):.3f}), "
              f"gpu {sum(s.get('gpu_s', 0) for s in stats):.3f} s", flush=True)
        shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
