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
import os
import shutil
import tempfile
import time
from collections import deque
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp import pipeline, writer
from mgapsp.pipeline import run_job


class _ContiguousShares(pipeline._Shares):
    """The shares before session 6: contiguous runs in proportion to threads."""

    def __init__(self, batches, threads):
        total = sum(threads.values())
        self.shares = {}
        start = seen = 0
        for w, t in sorted(threads.items()):
            seen += t
            stop = len(batches) * seen // total
            self.shares[w] = deque(batches[start:stop])
            start = stop


_DEALT = pipeline._Shares


def _zarr_attributes(group, updates):
    """The store's records through Zarr's own attribute update (before session 7)."""
    group.attrs.update(updates)


_DIRECT = writer.update_attributes


def use_variant(name: str) -> None:
    """``pipeline``: the code as it is; ``contiguous``: contiguous shares; ``zarr-record``:
    the store's records written through Zarr."""
    pipeline._Shares = _ContiguousShares if name == "contiguous" else _DEALT
    writer.update_attributes = _zarr_attributes if name == "zarr-record" else _DIRECT


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


_PARTS = ("load_s", "compute_s", "gpu_s", "write_s", "stage_s", "mark_s")


def parts_by_position(tasks, batches) -> list[dict]:
    """Each batch's own timings (``JobReport.batches``) by its place in its thread's
    sequence: ``[{part: [seconds of each thread's first batch]}, {... second}, ...]``."""
    stats = {s["batch"]: s for s in batches}
    threads: dict = {}
    for t in tasks:
        threads.setdefault((t["worker"], t["thread"]), []).append(t)
    out: list[dict] = []
    for seq in threads.values():
        for pos, t in enumerate(sorted(seq, key=lambda t: t["start"])):
            while len(out) <= pos:
                out.append({k: [] for k in _PARTS})
            s = stats[int(t["key"].split("-")[2])]
            for k in _PARTS:
                out[pos][k].append(float(s.get(k, 0.0)))
    return out


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
    p.add_argument("--log-level", type=int, default=50,
                   help="the workers' log level (mgapsp.cluster.connect: 30)")
    p.add_argument("--no-dashboard", action="store_true",
                   help="no dashboard at all, as mgapsp.cluster.connect(dashboard=False)")
    p.add_argument("--switch-interval", type=float, default=None,
                   help="sys.setswitchinterval in the client and every worker (seconds)")
    p.add_argument("--compare", choices=["contiguous", "zarr-record"], default=None,
                   help="alternate the jobs between the pipeline as it is and a variant: "
                        "contiguous shares, or the store's records through Zarr; medians "
                        "of each")
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
    runs_of = {}
    for k in counts:
        with LocalCUDACluster(n_workers=k, threads_per_worker=args.threads,
                              resources={"GPU": 1}, host="127.0.0.1",
                              dashboard_address=None, silence_logs=args.log_level,
                              scheduler_kwargs=({"dashboard": False}
                                                if args.no_dashboard else None)
                              ) as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(k, timeout=120)
            if args.switch_interval:
                import sys

                sys.setswitchinterval(args.switch_interval)
                client.run(sys.setswitchinterval, args.switch_interval)
            run_job(g, scratch / "w.zarr", client, backend="gpu", overwrite=True,
                    sources=g.vertex_ids[:batch * k * args.threads], batch_size=batch)
            runs = []
            for r in range(args.repeats * (2 if args.compare else 1)):
                variant = args.compare if args.compare and r % 2 else "pipeline"
                use_variant(variant)
                os.sync()       # as the scaling report: no earlier job's writeback
                with get_task_stream(client) as ts:
                    rep = run_job(g, scratch / "j.zarr", client, backend="gpu",
                                  overwrite=True, batch_size=batch)
                    t_end = time.time()
                t0 = t_end - rep.seconds
                line = timeline(ts.data, t0, t_end)
                line["parts"] = parts_by_position(line["tasks"], rep.batches)
                last_stop = rep.seconds - line["tail_s"]
                line.update(first_sent_s=rep.marks["first_sent"],
                            window_sent_s=rep.marks["window_sent"],
                            result_s=rep.marks["last_result"] - last_stop,
                            setup_s=rep.setup_s)
                line.update(record_s=rep.marks["recorded"] - rep.marks["last_result"],
                            seconds=rep.seconds, variant=variant,
                            rows_per_s=rep.rows_per_second,
                            gpu_busy=float(np.mean(list(rep.gpu_busy().values()))))
                runs.append(line)
                print(f"{k} GPUs x {args.threads} threads, {variant}, run {r}: "
                      f"{rep.seconds * 1e3:.1f} ms "
                      f"({rep.rows_per_second:,.0f} rows/s), head {line['head_s'] * 1e3:.1f}, "
                      f"tail {line['tail_s'] * 1e3:.1f} (result "
                      f"{line['result_s'] * 1e3:.1f}, record {line['record_s'] * 1e3:.1f}), "
                      f"sent {line['first_sent_s'] * 1e3:.1f}/{line['window_sent_s'] * 1e3:.1f}, "
                      f"setup {line['setup_s'] * 1e3:.1f}, "
                      f"batch {line['batch_s'] * 1e3:.1f}, "
                      f"gap {line['gap_s'] * 1e3:.1f} ms, GPU busy {line['gpu_busy']:.0%}, "
                      f"per worker {line['per_worker']}", flush=True)
            for variant in sorted({x["variant"] for x in runs}):
                mine = [x for x in runs if x["variant"] == variant]
                runs_of[(k, variant)] = mine
                summary[(k, variant)] = {
                    key: float(np.median([x[key] for x in mine]))
                    for key in ("seconds", "head_s", "tail_s", "record_s", "batch_s",
                                "gap_s", "gpu_busy", "result_s", "first_sent_s",
                                "window_sent_s", "setup_s")}
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                (Path(args.out) / f"probe-{k}x{args.threads}-b{batch}.json").write_text(
                    json.dumps({"batch_size": batch, "threads": args.threads, "runs": runs}))
    for (k, variant), m in summary.items():
        # where a thread's first batch of a job goes, against its later ones
        mine = [x["parts"] for x in runs_of[(k, variant)]]
        first = {p: np.median([v for x in mine for v in x[0][p]]) for p in _PARTS}
        later = {p: np.median([v for x in mine for pos in x[1:] for v in pos[p]] or [0])
                 for p in _PARTS}
        print(f"parts {k} GPUs, {variant}: first batch / later (ms): " + ", ".join(
            f"{p[:-2]} {first[p] * 1e3:.1f}/{later[p] * 1e3:.1f}" for p in _PARTS),
            flush=True)
        # speed-ups against the first point with the same variant
        base = summary[(counts[0], variant)]["seconds"]
        print(f"median {k} GPUs x {args.threads} threads, {variant}, batch {batch}: "
              f"{m['seconds'] * 1e3:.1f} ms (x{base / m['seconds']:.2f} of {counts[0]}), "
              f"head {m['head_s'] * 1e3:.1f} (sent {m['first_sent_s'] * 1e3:.1f}/"
              f"{m['window_sent_s'] * 1e3:.1f}), tail {m['tail_s'] * 1e3:.1f} "
              f"(result {m['result_s'] * 1e3:.1f}, record {m['record_s'] * 1e3:.1f}), "
              f"setup {m['setup_s'] * 1e3:.1f}, "
              f"batch {m['batch_s'] * 1e3:.1f}, gap {m['gap_s'] * 1e3:.1f} ms, "
              f"GPU busy {m['gpu_busy']:.0%}", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
