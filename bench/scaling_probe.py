"""Where a multi-GPU job's wall time goes: Dask's task stream around each job (a probe).

    python3 bench/scaling_probe.py tests/data/p2p-Gnutella31.txt --workers 1,4 \
        --variants slots-2,whole-2

For each worker count: a ``LocalCUDACluster`` as ``mgapsp.cluster.connect`` makes it,
but with ``--threads`` threads per GPU worker; a warm-up job, then ``--repeats`` timed
jobs per variant (``--variants``, see ``use_variant``; the jobs take them in turn)
inside ``get_task_stream``.  Per job it prints the wall time, the head (the
client's start to the first batch's start), the tail (the last batch's end to the
job's return, the final store record included and also shown), the mean batch, the
mean gap between a thread's batches, how the workers end (``ends``) and the batches per
worker; then the medians per worker count and variant.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp import pipeline, writer
from mgapsp.cluster import GPU_WORKER_THREADS
from mgapsp.pipeline import run_job
from mgapsp.plan import CHUNK_ELEMENTS


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
_CHUNKS = pipeline.column_chunk
_IN_FLIGHT = pipeline.IN_FLIGHT_PER_THREAD


def _plain_chunks(n: int, batch_size: int) -> int:
    return int(min(n, max(1024, CHUNK_ELEMENTS // batch_size)))


def _context_flags(flags: int) -> int:
    """Set the scheduling flags of this process's CUDA context; returns them as read
    back (0 auto, 1 spin, 2 yield, 4 blocking sync)."""
    import ctypes

    import cupy

    cuda = ctypes.CDLL("libcuda.so.1")
    dev = cupy.cuda.runtime.getDevice()
    err = cuda.cuDevicePrimaryCtxSetFlags_v2(ctypes.c_int(dev), ctypes.c_uint(flags))
    got, active = ctypes.c_uint(), ctypes.c_int()
    cuda.cuDevicePrimaryCtxGetState(ctypes.c_int(dev), ctypes.byref(got), ctypes.byref(active))
    if err:
        raise RuntimeError(f"cuDevicePrimaryCtxSetFlags_v2: error {err}")
    return got.value


def use_variant(name: str, client=None) -> None:
    """Set up the next job as variant ``name`` (the client's side here, the workers'
    through ``client.run``):

    - ``pipeline``: the code as it is;
    - ``contiguous``: contiguous shares (before session 6);
    - ``zarr-record``: the store's records written through Zarr (before session 7);
    - ``direct``: the client gathers results from the workers, not through the
      scheduler (``Client.direct_to_workers``);
    - ``frames-<MB>``: the GPU compresses a batch's chunks in groups of that many raw
      MB (``staging.FRAME_GROUP_BYTES``), so the next group compresses while the
      host writes one;
    - ``slots-<k>``: ``k`` batches compute at once on a GPU (``pipeline._gpu_slots``);
    - ``whole-<k>``: ``k`` batches in progress at once, each holding its slot through
      its write too (as ``k`` threads did before session 8);
    - ``plain-chunks``: chunks of CHUNK_ELEMENTS // batch columns (before session 8),
      whatever they leave of a Blosc block;
    - ``blocking``: the workers' CUDA contexts block their threads while they wait for
      the GPU instead of spinning (``CU_CTX_SCHED_BLOCKING_SYNC``);
    - ``store-<k>``: ``k`` threads store the frames made on each GPU;
    - ``inflight-<k>``: ``k`` batches in flight per worker thread
      (``pipeline.IN_FLIGHT_PER_THREAD``).

    Variants join with ``+`` (``whole-2+frames-128``)."""
    parts = name.split("+")
    pipeline._Shares = _ContiguousShares if "contiguous" in parts else _DEALT
    pipeline.column_chunk = _plain_chunks if "plain-chunks" in parts else _CHUNKS
    inflight = [int(p.split("-")[1]) for p in parts if p.startswith("inflight-")]
    pipeline.IN_FLIGHT_PER_THREAD = inflight[0] if inflight else _IN_FLIGHT
    writer.update_attributes = _zarr_attributes if "zarr-record" in parts else _DIRECT
    if client is not None:
        client.direct_to_workers = True if "direct" in parts else None
        client.run(_worker_variant, parts)


class _WholeSlot:
    """A compute slot kept until the batch's block is written (``whole-<k>``)."""

    def __init__(self, k: int):
        import threading

        self.sem = threading.BoundedSemaphore(k)
        self.held = threading.local()

    def __enter__(self):
        self.sem.acquire()
        self.held.slot = True

    def __exit__(self, *exc):
        return False

    def release(self) -> None:
        if getattr(self.held, "slot", False):
            self.held.slot = False
            self.sem.release()


def _worker_facts() -> dict:
    from mgapsp import writer as wr

    return {"cores": len(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(),
            "write_threads": wr.write_threads(), "store_threads": wr.store_threads(),
            "context_flags": _context_flags(0)}


def _worker_variant(parts: list[str]) -> None:
    """On a worker: the knobs of the variant ``parts``, every other one at its default."""
    import threading

    from mgapsp import pipeline as pl
    from mgapsp import writer as wr
    from mgapsp._kernels import staging

    defaults = getattr(pl, "_probe_defaults", None)
    if defaults is None:
        defaults = pl._probe_defaults = {"frames": staging.FRAME_GROUP_BYTES,
                                         "write_block": wr.write_block}
    staging.FRAME_GROUP_BYTES = defaults["frames"]
    wr.write_block = defaults["write_block"]
    slots = pl.gpu_computing()
    whole = None
    _context_flags(4 if "blocking" in parts else 0)
    store = [int(p.split("-")[1]) for p in parts if p.startswith("store-")]
    want = store[0] if store else wr.store_threads()
    pool = wr._POOLS.get("store")
    if pool is None or pool._max_workers != want:
        wr._POOLS["store"] = ThreadPoolExecutor(want, thread_name_prefix="mgapsp-store")
    for part in parts:
        if part.startswith("frames-"):
            staging.FRAME_GROUP_BYTES = int(part.split("-")[1]) * 2**20
        elif part.startswith("slots-"):
            slots = int(part.split("-")[1])
        elif part.startswith("whole-"):
            whole = _WholeSlot(int(part.split("-")[1]))
    if whole is None:
        pl._SLOTS["gpu"] = threading.BoundedSemaphore(slots)
        return
    pl._SLOTS["gpu"] = whole
    original = defaults["write_block"]

    def write_block(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            whole.release()

    wr.write_block = write_block


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


_PARTS = ("load_s", "queued_s", "compute_s", "gpu_s", "write_s", "stage_s", "mark_s")


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


def ends(tasks, batches) -> dict:
    """How the workers end: ``spread_s`` between the first and the last worker's last
    batch, ``drain_s`` from the last worker's last kernels to its last batch's end."""
    stats = {s["batch"]: s for s in batches}
    by_worker: dict = {}
    for t in tasks:
        s = stats[int(t["key"].split("-")[2])]
        by_worker.setdefault(t["worker"], []).append((t["start"] + s["compute_s"], t["stop"]))
    last = {w: max(stop for _, stop in v) for w, v in by_worker.items()}
    slowest = max(last, key=last.get)
    return {"spread_s": max(last.values()) - min(last.values()),
            "drain_s": last[slowest] - max(end for end, _ in by_worker[slowest])}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--threads", type=int, default=GPU_WORKER_THREADS,
                   help="threads per GPU worker (default: mgapsp.cluster's)")
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
    p.add_argument("--variants", default="pipeline",
                   help="comma-separated variants (see use_variant) that the jobs take in "
                        "turn, --repeats jobs each; medians of each")
    args = p.parse_args(argv)
    from dask_cuda import LocalCUDACluster
    from distributed import Client, get_task_stream

    if args.in_flight:
        global _IN_FLIGHT
        pipeline.IN_FLIGHT_PER_THREAD = _IN_FLIGHT = args.in_flight
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
            else:       # as mgapsp.cluster.connect
                from mgapsp.worker import SwitchInterval

                client.register_plugin(SwitchInterval())
            print("workers:", client.run(_worker_facts), flush=True)
            run_job(g, scratch / "w.zarr", client, backend="gpu", overwrite=True,
                    sources=g.vertex_ids[:batch * k * args.threads], batch_size=batch)
            runs = []
            variants = args.variants.split(",")
            for r in range(args.repeats * len(variants)):
                variant = variants[r % len(variants)]
                use_variant(variant, client)
                os.sync()       # as the scaling report: no earlier job's writeback
                with get_task_stream(client) as ts:
                    rep = run_job(g, scratch / "j.zarr", client, backend="gpu",
                                  overwrite=True, batch_size=batch)
                    t_end = time.time()
                t0 = t_end - rep.seconds
                line = timeline(ts.data, t0, t_end)
                line["parts"] = parts_by_position(line["tasks"], rep.batches)
                line["batches"] = rep.batches
                line.update(ends(line["tasks"], rep.batches))
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
                      f"ends {line['spread_s'] * 1e3:.1f} "
                      f"apart, drain {line['drain_s'] * 1e3:.1f} ms, "
                      f"per worker {line['per_worker']}", flush=True)
            for variant in sorted({x["variant"] for x in runs}):
                mine = [x for x in runs if x["variant"] == variant]
                runs_of[(k, variant)] = mine
                summary[(k, variant)] = {
                    key: float(np.median([x[key] for x in mine]))
                    for key in ("seconds", "head_s", "tail_s", "record_s", "batch_s",
                                "gap_s", "gpu_busy", "result_s", "first_sent_s",
                                "window_sent_s", "setup_s", "spread_s", "drain_s")}
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                (Path(args.out) / f"probe-{k}x{args.threads}-b{batch}.json").write_text(
                    json.dumps({"batch_size": batch, "threads": args.threads, "runs": runs},
                               default=float))
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
              f"GPU busy {m['gpu_busy']:.0%}, ends "
              f"{m['spread_s'] * 1e3:.1f} apart, drain {m['drain_s'] * 1e3:.1f} ms",
              flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
