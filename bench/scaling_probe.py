"""Where a multi-GPU job's wall time goes: Dask's task stream around each job (a probe).

    python3 bench/scaling_probe.py tests/data/p2p-Gnutella31.txt --workers 1,4 --threads 2

For each worker count: a ``LocalCUDACluster`` as ``mgapsp.cluster.connect`` makes it,
but with ``--threads`` threads per GPU worker; a warm-up job, then ``--repeats`` timed
jobs inside ``get_task_stream``.  Per job it prints the wall time, the head (the
client's start to the first batch's start), the tail (the last batch's end to the
job's return, the final store record included and also shown), the mean batch, the mean gap between
a thread's batches, and the batches per worker; then the medians per worker count.
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp import pipeline
from mgapsp.pipeline import run_job
from mgapsp.store import Store

_RECORDS: list[float] = []
_mark_done = Store.mark_done


def _timed_mark_done(self, *args, **kwargs):
    t = time.perf_counter()
    try:
        return _mark_done(self, *args, **kwargs)
    finally:
        _RECORDS.append(time.perf_counter() - t)


Store.mark_done = _timed_mark_done     # the probe times the store records


def timeline(ts_data, t0: float, t_end: float) -> dict:
    tasks = [t for t in ts_data if str(t["key"]).startswith("apsp-batch")]
    spans = []
    for t in tasks:
        comp = [s for s in t["startstops"] if s["action"] == "compute"]
        spans.append((t["worker"], t.get("thread"), min(s["start"] for s in comp),
                      max(s["stop"] for s in comp), str(t["key"])))
    threads: dict = {}
    for w, th, a, b, _ in spans:
        threads.setdefault((w, th), []).append((a, b))
    gaps = [v[i + 1][0] - v[i][1] for v in map(sorted, threads.values())
            for i in range(len(v) - 1)]
    per_worker: dict = {}
    for w, *_ in spans:
        per_worker[w] = per_worker.get(w, 0) + 1
    return {"head_s": min(s[2] for s in spans) - t0, "tail_s": t_end - max(s[3] for s in spans),
            "batch_s": float(np.mean([s[3] - s[2] for s in spans])),
            "gap_s": float(np.mean(gaps)) if gaps else 0.0,
            "per_worker": sorted(per_worker.values()),
            "tasks": [{"worker": w, "thread": th, "start": a - t0, "stop": b - t0, "key": k}
                      for w, th, a, b, k in spans]}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--threads", type=int, default=2, help="threads per GPU worker")
    p.add_argument("--batch-size", type=int, default=0,
                   help="0: at most 2048 rows, a whole number of batches per thread "
                        "at the largest worker count (as the scaling report)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--in-flight", type=int, default=0,
                   help="batches in flight per worker thread (0: the pipeline's)")
    p.add_argument("--out", default=None, help="write every job's timeline here (JSON)")
    args = p.parse_args(argv)
    from dask_cuda import LocalCUDACluster
    from distributed import Client, get_task_stream

    if args.in_flight:
        pipeline.IN_FLIGHT_PER_THREAD = args.in_flight
    g = mgapsp.read_graph(args.graph)
    counts = [int(x) for x in args.workers.split(",")]
    batch = args.batch_size
    if not batch:
        threads = args.threads * max(counts)
        batches = -(-(-(-g.n // 2048)) // threads) * threads
        batch = -(-g.n // batches)
    scratch = Path(tempfile.mkdtemp())
    summary = {}
    for k in counts:
        with LocalCUDACluster(n_workers=k, threads_per_worker=args.threads,
                              resources={"GPU": 1}, host="127.0.0.1",
                              dashboard_address=None, silence_logs=50) as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(k, timeout=120)
            run_job(g, scratch / "w.zarr", client, backend="gpu", overwrite=True,
                    sources=g.vertex_ids[:batch * k * args.threads], batch_size=batch)
            runs = []
            for r in range(args.repeats):
                with get_task_stream(client) as ts:
                    rep = run_job(g, scratch / "j.zarr", client, backend="gpu",
                                  overwrite=True, batch_size=batch)
                    t_end = time.time()
                t0 = t_end - rep.seconds
                line = timeline(ts.data, t0, t_end)
                line.update(record_s=_RECORDS[-1], seconds=rep.seconds,
                            rows_per_s=rep.rows_per_second,
                            gpu_busy=float(np.mean(list(rep.gpu_busy().values()))))
                runs.append(line)
                print(f"{k} GPUs x {args.threads} threads, run {r}: {rep.seconds * 1e3:.1f} ms "
                      f"({rep.rows_per_second:,.0f} rows/s), head {line['head_s'] * 1e3:.1f}, "
                      f"tail {line['tail_s'] * 1e3:.1f} (record {line['record_s'] * 1e3:.1f}), "
                      f"batch {line['batch_s'] * 1e3:.1f}, "
                      f"gap {line['gap_s'] * 1e3:.1f} ms, GPU busy {line['gpu_busy']:.0%}, "
                      f"per worker {line['per_worker']}", flush=True)
            med = {key: float(np.median([x[key] for x in runs]))
                   for key in ("seconds", "head_s", "tail_s", "record_s", "batch_s", "gap_s",
                               "gpu_busy")}
            summary[k] = med
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                (Path(args.out) / f"probe-{k}x{args.threads}-b{batch}.json").write_text(
                    json.dumps({"batch_size": batch, "threads": args.threads, "runs": runs}))
    base = summary[counts[0]]["seconds"]      # speed-ups against the first point
    for k, m in summary.items():
        print(f"median {k} GPUs x {args.threads} threads, batch {batch}: "
              f"{m['seconds'] * 1e3:.1f} ms (x{base / m['seconds']:.2f} of {counts[0]}), "
              f"head {m['head_s'] * 1e3:.1f}, tail {m['tail_s'] * 1e3:.1f} "
              f"(record {m['record_s'] * 1e3:.1f}), "
              f"batch {m['batch_s'] * 1e3:.1f}, gap {m['gap_s'] * 1e3:.1f} ms, "
              f"GPU busy {m['gpu_busy']:.0%}", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
