"""Where a multi-GPU job's wall time goes: Dask's task stream around one job (a probe).

    python3 bench/scaling_probe.py tests/data/p2p-Gnutella31.txt --workers 1,2,4

For each worker count: a warm-up job, then the timed job inside ``get_task_stream``;
prints the job's wall time, when the first batch started and the last ended (from the
client's t0), and per worker the batches, the seconds its threads ran tasks, and the
busy fraction of its two threads.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp.cluster import connect
from mgapsp.pipeline import run_job


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--batch-size", type=int, default=2048, help="0: the planner's choice")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=None, help="write each run's task stream here (JSON)")
    args = p.parse_args(argv)
    from distributed import get_task_stream

    g = mgapsp.read_graph(args.graph)
    scratch = Path(tempfile.mkdtemp())
    for k in map(int, args.workers.split(",")):
        with connect(backend="gpu", n_workers=k, dashboard=False) as client:
            client.wait_for_workers(k, timeout=120)
            batch = args.batch_size or None
            run_job(g, scratch / "w.zarr", client, backend="gpu", overwrite=True,
                    sources=g.vertex_ids[:(batch or 2048) * k * 2], batch_size=batch)
            for r in range(args.repeats):
                with get_task_stream(client) as ts:
                    t0 = time.time()
                    rep = run_job(g, scratch / "j.zarr", client, backend="gpu", overwrite=True,
                                  batch_size=batch)
                    t1 = time.time()
                tasks = [t for t in ts.data if str(t["key"]).startswith("apsp-batch")]
                starts = [min(s["start"] for s in t["startstops"] if s["action"] == "compute")
                          for t in tasks]
                ends = [max(s["stop"] for s in t["startstops"] if s["action"] == "compute")
                        for t in tasks]
                per = {}
                for t, a, b in zip(tasks, starts, ends):
                    w = per.setdefault(t["worker"], [0, 0.0])
                    w[0] += 1
                    w[1] += b - a
                if args.out:
                    import json

                    Path(args.out).mkdir(parents=True, exist_ok=True)
                    (Path(args.out) / f"ts-{k}-{args.batch_size}-{r}.json").write_text(json.dumps(
                        {"t_end": t1, "seconds": rep.seconds, "tasks": [
                            {"key": str(t["key"]), "worker": t["worker"],
                             "thread": t.get("thread"), "start": a, "stop": b}
                            for t, a, b in zip(tasks, starts, ends)]}))
                print(f"{k} GPUs run {r}: batch {rep.plan.batch_size}, job {rep.seconds:.3f} s "
                      f"({rep.rows_per_second:,.0f} rows/s), "
                      f"create+plan {t1 - t0 - rep.seconds:.3f} s, first batch at "
                      f"{min(starts) - (t1 - rep.seconds):+.3f}, last end {max(ends) - t1:+.3f} s "
                      f"from the end; write_s "
                      f"{ {w[-5:]: round(v, 3) for w, v in rep.worker_write_s.items()} }, gpu busy "
                      f"{ {w[-5:]: round(v, 2) for w, v in rep.gpu_busy().items()} }", flush=True)
                for w, (n, busy) in sorted(per.items()):
                    print(f"    {w[-5:]}: {n} batches, task seconds {busy:.3f}, "
                          f"threads busy {busy / 2 / rep.seconds:.0%}", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
