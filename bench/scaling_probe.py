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
worker; then the medians per worker count and variant.  With ``--trace`` the workers
also time each batch's steps (``trace_batches``: its wait for a computing slot,
kernels, frames and the encoder in them, pinned buffer, storing queue, files, flag)
and record their garbage collections; the probe prints the slow frames of each job,
the steps' medians and one worker's batches in time order.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import deque
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
_CLIENT_SWITCH = sys.getswitchinterval()
_ON_EVENT = pipeline._Finished.__dict__["_on_event"]
_DROP_EVENT = classmethod(lambda cls, event: None)


def _plain_chunks(n: int, batch_size: int) -> int:
    return int(min(n, max(1024, CHUNK_ELEMENTS // batch_size)))


def _context_flags(flags: int) -> int:
    """Set the scheduling flags of this process's CUDA context; returns them as read
    back (0 auto, 1 spin, 2 yield, 4 blocking sync)."""
    import ctypes

    try:
        import cupy

        cuda = ctypes.CDLL("libcuda.so.1")
    except (ImportError, OSError):      # a dry run without a GPU
        return -1
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
      (``pipeline.IN_FLIGHT_PER_THREAD``);
    - ``noprofile``: the workers' statistical profiler stopped (it walks every busy
      thread's stack every 10 ms on the worker's event loop, holding the GIL);
    - ``switch-<us>``: the workers' switch interval in microseconds (else
      ``mgapsp.worker.SWITCH_INTERVAL_S``);
    - ``chunks-x<k>``: stored chunks of ``k`` times the values (fewer, larger files);
    - ``prio``: a batch's frames made on a stream of the highest priority, so that
      its kernels go before those of the batches computing;
    - ``blocks-<KB>``: Blosc blocks of that many KB in the frames made on the GPU
      (the encoder's default: 512 KB at level 5 for 4-byte values);
    - ``chunk-files``: a store of a file per chunk (``shards=False``; before session
      10) instead of a shard file per batch;
    - ``piece-<KB>``: a shard's frames written in pieces of at least that many KB
      (``writer.PIECE_BYTES``);
    - ``batched-<us>``: Dask's batched streams (client to scheduler, scheduler to
      workers and clients, workers to scheduler) send at most that many microseconds
      apart (``_batched_intervals``).
    - ``fetch``: the client fetches each batch's result instead of taking its
      worker's announcement (``pipeline._Finished``; before session 11 it gathered
      them in the background);
    - ``accept-<n>``: the GPU's LZ4 parse takes matches of ``n`` bytes or more
      (``blosc.ACCEPT_MATCH``);
    - ``lz4-streams``: the GPU's LZ4 parses each stream whole with one warp and a
      table of 4,096 positions (before session 13), not in segments;
    - ``client-switch-<us>``: the client's process (where a ``LocalCUDACluster``'s
      scheduler runs too) switches threads every that many microseconds during the job
      (else as it was);
    - ``stagger-<ms>``: a job's second computing slot on each GPU opens that many ms
      after its first batch started computing, so that the two slots' batches end out
      of step (``_EndSlots``);
    - ``tail-alone``: a batch computes beside another only while more batches wait in
      its worker's queue, so that a worker's last batch has its GPU to itself.

    Variants join with ``+`` (``whole-2+frames-128``)."""
    parts = name.split("+")
    pipeline._Shares = _ContiguousShares if "contiguous" in parts else _DEALT
    pipeline.column_chunk = _plain_chunks if "plain-chunks" in parts else _CHUNKS
    from mgapsp import plan

    scale = [int(p.split("-x")[1]) for p in parts if p.startswith("chunks-x")]
    plan.CHUNK_ELEMENTS = CHUNK_ELEMENTS * (scale[0] if scale else 1)
    inflight = [int(p.split("-")[1]) for p in parts if p.startswith("inflight-")]
    pipeline.IN_FLIGHT_PER_THREAD = inflight[0] if inflight else _IN_FLIGHT
    writer.update_attributes = _zarr_attributes if "zarr-record" in parts else _DIRECT
    pipeline._Finished._on_event = _DROP_EVENT if "fetch" in parts else _ON_EVENT
    client_switch = [int(p.split("-")[2]) * 1e-6 for p in parts
                     if p.startswith("client-switch-")]
    sys.setswitchinterval(client_switch[0] if client_switch else _CLIENT_SWITCH)
    if client is not None:
        client.direct_to_workers = True if "direct" in parts else None
        client.run(_worker_variant, parts)
        batched = [int(p.split("-")[1]) * 1e-6 for p in parts if p.startswith("batched-")]
        _batched_intervals(client, batched[0] if batched else None)


def _batched_intervals(client, seconds: float | None) -> None:
    """Every batched stream of the job's messages waits at most ``seconds`` between
    sends (``batched-<us>``), else Dask's own intervals: 10 ms from the client to the
    scheduler, 5 ms from the scheduler to each worker, 2 ms from the scheduler to a
    client and from a worker to the scheduler."""

    def on_scheduler(dask_scheduler=None, seconds=seconds):
        for bcomm in dask_scheduler.stream_comms.values():
            bcomm.interval = 0.005 if seconds is None else seconds
        for bcomm in dask_scheduler.client_comms.values():
            bcomm.interval = 0.002 if seconds is None else seconds

    def on_worker(dask_worker=None, seconds=seconds):
        dask_worker.batched_stream.interval = 0.002 if seconds is None else seconds

    client.scheduler_comm.interval = 0.010 if seconds is None else seconds
    client.run_on_scheduler(on_scheduler)
    client.run(on_worker)


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


class _EndSlots:
    """Computing slots for ``stagger-<ms>`` and ``tail-alone`` (see ``use_variant``)."""

    def __init__(self, k: int, stagger: float, tail_alone: bool, worker):
        import threading

        self.k, self.stagger, self.tail_alone, self.worker = k, stagger, tail_alone, worker
        self.cond = threading.Condition()
        self.computing = 0
        self.first: float | None = None

    def _limit(self) -> tuple[int, float | None]:
        """Batches allowed to compute now, and how long that holds at most."""
        if self.stagger and self.first is not None:
            left = self.first + self.stagger - time.perf_counter()
            if left > 0:
                return 1, left
        if self.tail_alone and self.worker is not None:
            state = self.worker.state
            if not state.ready and not state.constrained:
                return 1, 0.0005
        return self.k, None

    def __enter__(self):
        with self.cond:
            while True:
                limit, hold = self._limit()
                if self.computing < limit:
                    break
                self.cond.wait(hold)
            self.computing += 1
            if self.first is None:
                self.first = time.perf_counter()

    def __exit__(self, *exc):
        with self.cond:
            self.computing -= 1
            self.cond.notify_all()
        return False


def _worker_facts() -> dict:
    from mgapsp import writer as wr

    return {"cores": len(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(),
            "write_threads": wr.write_threads(), "store_threads": wr.store_threads(),
            "context_flags": _context_flags(0)}


def _worker_variant(parts: list[str], dask_worker=None) -> None:
    """On a worker: the knobs of the variant ``parts``, every other one at its default."""
    import sys
    import threading

    from mgapsp.worker import SWITCH_INTERVAL_S

    switch = [int(p.split("-")[1]) * 1e-6 for p in parts if p.startswith("switch-")]
    sys.setswitchinterval(switch[0] if switch else SWITCH_INTERVAL_S)
    for name in ("profile", "profile-cycle"):
        pc = dask_worker.periodic_callbacks.get(name) if dask_worker is not None else None
        if pc is not None:
            if "noprofile" in parts:
                pc.stop()
            elif not pc.is_running():
                pc.start()

    from mgapsp import pipeline as pl
    from mgapsp import writer as wr
    from mgapsp._kernels import staging

    defaults = getattr(pl, "_probe_defaults", None)
    if defaults is None:
        from mgapsp._kernels import blosc

        defaults = pl._probe_defaults = {"frames": staging.FRAME_GROUP_BYTES,
                                         "write_block": wr.write_block,
                                         "frame_groups": staging.frame_groups,
                                         "blocksize": blosc.blocksize}
    from mgapsp._kernels import blosc

    staging.FRAME_GROUP_BYTES = defaults["frames"]
    wr.PIECE_BYTES = defaults.setdefault("piece", wr.PIECE_BYTES)
    blosc.ACCEPT_MATCH = defaults.setdefault("accept", blosc.ACCEPT_MATCH)
    blosc.SEGMENT_BYTES = defaults.setdefault("segment", blosc.SEGMENT_BYTES)
    blosc.PRIME_STRIDE = defaults.setdefault("prime", blosc.PRIME_STRIDE)
    blosc.HASH_LOG = defaults.setdefault("hash_log", blosc.HASH_LOG)
    for part in parts:
        if part.startswith("accept-"):
            blosc.ACCEPT_MATCH = int(part.split("-")[1])
        elif part == "lz4-streams":
            blosc.SEGMENT_BYTES, blosc.PRIME_STRIDE, blosc.HASH_LOG = 2**30, 0, 12
    for part in parts:
        if part.startswith("piece-"):
            wr.PIECE_BYTES = int(part.split("-")[1]) * 1024
    wr.write_block = defaults["write_block"]
    staging.frame_groups = defaults["frame_groups"]
    blosc.blocksize = defaults["blocksize"]
    blosc.frame_layout.cache_clear()
    if "prio" in parts:
        staging.frame_groups = _priority_frames(defaults["frame_groups"])
    for part in parts:
        if part.startswith("blocks-"):
            kb = int(part.split("-")[1])
            base = defaults["blocksize"]
            blosc.blocksize = (lambda nbytes, typesize, clevel, _kb=kb, _base=base:
                               min(_kb * 1024, nbytes) if nbytes >= _kb * 1024
                               else _base(nbytes, typesize, clevel))
    slots = pl.gpu_computing()
    whole = None
    stagger = 0.0
    _context_flags(4 if "blocking" in parts else 0)
    store = [int(p.split("-")[1]) for p in parts if p.startswith("store-")]
    want = store[0] if store else wr.store_threads()
    pool = wr._POOLS.get("store")
    if pool is None or pool.threads != want:
        wr._POOLS["store"] = wr._Pool(want, "mgapsp-store")
    for part in parts:
        if part.startswith("frames-"):
            staging.FRAME_GROUP_BYTES = int(part.split("-")[1]) * 2**20
        elif part.startswith("slots-"):
            slots = int(part.split("-")[1])
        elif part.startswith("whole-"):
            whole = _WholeSlot(int(part.split("-")[1]))
        elif part.startswith("stagger-"):
            stagger = float(part.split("-")[1]) * 1e-3
    if whole is None:
        if stagger or "tail-alone" in parts:
            pl._SLOTS["gpu"] = _EndSlots(slots, stagger, "tail-alone" in parts, dask_worker)
        else:
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


def _trace_install() -> None:
    """On a worker: record when each batch's write starts and ends, when its frames
    reach the host, and every file the writer stores (``--trace``)."""
    import threading

    from mgapsp import pipeline as pl
    from mgapsp import writer as wr
    from mgapsp._kernels import staging

    if hasattr(pl, "_probe_trace"):
        return
    events = pl._probe_trace = []
    local = threading.local()
    write_block, frame_groups, write_file = wr.write_block, staging.frame_groups, wr._write_file

    def traced_write_block(arr, start, block):
        batch = start // arr.chunks[0]
        local.batch = batch
        t = time.time()
        try:
            return write_block(arr, start, block)
        finally:
            events.append(("write", batch, t, time.time(), threading.get_ident()))

    def traced_frame_groups(*args, **kwargs):
        batch = getattr(local, "batch", None)
        t = time.time()
        for item in frame_groups(*args, **kwargs):
            events.append(("frames", batch, t, time.time(), threading.get_ident()))
            yield item
            t = time.time()

    def traced_write_file(path, data):
        t = time.time()
        try:
            return write_file(path, data)
        finally:
            events.append(("file", str(path), t, time.time(), threading.get_ident()))

    from mgapsp._kernels import blosc

    encode_chunks, buffer = blosc.encode_chunks, staging._Stage.buffer

    def traced_encode_chunks(*args, **kwargs):
        t = time.time()
        try:
            return encode_chunks(*args, **kwargs)
        finally:
            events.append(("encode", getattr(local, "batch", None), t, time.time(),
                           threading.get_ident()))

    def traced_buffer(self, slot, nbytes):
        old = self.buffers[slot]
        t = time.time()
        try:
            return buffer(self, slot, nbytes)
        finally:
            grown = old is None or self.buffers[slot] is not old
            events.append(("pin-grow" if grown else "pin", getattr(local, "batch", None), t,
                           time.time(), threading.get_ident()))

    shard_write, shard_close = wr._ShardFile.write, wr._ShardFile.close

    def traced_shard_write(self, offset, data):
        # a piece of a shard counts as a file, and so does its index
        t = time.time()
        try:
            return shard_write(self, offset, data)
        finally:
            events.append(("file", self.key, t, time.time(), threading.get_ident()))

    def traced_shard_close(self):
        t = time.time()
        try:
            return shard_close(self)
        finally:
            events.append(("file", self.key, t, time.time(), threading.get_ident()))

    wr.write_block, staging.frame_groups, wr._write_file = (
        traced_write_block, traced_frame_groups, traced_write_file)
    wr._ShardFile.write, wr._ShardFile.close = traced_shard_write, traced_shard_close
    blosc.encode_chunks, staging._Stage.buffer = traced_encode_chunks, traced_buffer
    _trace_gc(events)


def _trace_gc(events: list) -> None:
    """Record this process's garbage collections of generation 2, or of 0.5 ms or more."""
    import gc
    import threading

    started = {}

    def on_gc(phase, info):
        me = threading.get_ident()
        if phase == "start":
            started[me] = time.time()
            return
        t = started.pop(me, None)
        if t is not None:
            now = time.time()
            if info["generation"] == 2 or now - t >= 5e-4:
                events.append(("gc", info["generation"], t, now, me))

    gc.callbacks.append(on_gc)


_CLIENT_EVENTS: list = []


def _trace_take() -> list:
    from mgapsp import pipeline as pl

    events = list(pl._probe_trace)
    pl._probe_trace.clear()
    return events


_TRACE_PARTS = ("wait", "compute", "to_write", "frames", "encode", "pin", "queued", "files",
                "file",
                "after", "mark", "to_end", "task")


def trace_batches(events: dict, tasks: list, batches: list, t0: float) -> list[dict]:
    """Per batch of one job, from the workers' events (``_trace_take``) and the task
    stream: the seconds of each step (``_TRACE_PARTS``) and when it ran."""
    stats = {s["batch"]: s for s in batches}
    task_of = {int(t["key"].split("-")[2]): t for t in tasks}
    out = []
    for worker, evs in events.items():
        writes = {e[1]: e for e in evs if e[0] == "write"}
        frames = {}
        for e in evs:
            if e[0] == "frames":
                frames.setdefault(e[1], []).append(e)
        files, marks = {}, {}
        for kind, path, a, b, _ in evs:
            if kind != "file":
                continue
            parts = Path(path).parts
            if "c" not in parts:
                continue
            i = int(parts[parts.index("c") + 1])
            if "batch_done" in parts:
                marks[i] = (a, b)
            else:
                files.setdefault(i, []).append((a, b))
        for i, w in writes.items():
            t, s = task_of.get(i), stats.get(i)
            if t is None or s is None or i not in files:
                continue
            start, stop = t["start"] + t0, t["stop"] + t0
            c0, c1 = s["computing"]
            fr = frames.get(i, [])
            fr_end = max(e[3] for e in fr) if fr else w[2]
            fs = files[i]
            first, last = min(a for a, _ in fs), max(b for _, b in fs)
            mark = marks.get(i, (w[3], w[3]))
            enc = sum(e[3] - e[2] for e in evs if e[0] == "encode" and e[1] == i)
            pin = sum(e[3] - e[2] for e in evs if e[0].startswith("pin") and e[1] == i)
            grew = any(e[0] == "pin-grow" and e[1] == i for e in evs)
            out.append({
                "worker": worker, "batch": i, "thread": t["thread"], "grew": grew,
                "encode": enc, "pin": pin,
                "at": {"start": start - t0, "compute": c0 - t0, "computed": c1 - t0,
                       "frames": fr_end - t0, "files": last - t0, "stop": stop - t0},
                "wait": c0 - start, "compute": c1 - c0, "to_write": w[2] - c1,
                "frames": fr_end - w[2], "queued": first - fr_end, "files": last - first,
                "file": float(np.median([b - a for a, b in fs])),
                "after": w[3] - last, "mark": mark[1] - w[3], "to_end": stop - mark[1],
                "task": stop - start})
    return out


def stories(client, t0: float, keys: list[str]) -> dict:
    """Where Dask's time went for ``keys`` (``--story``): each transition of each key on
    the scheduler and on the worker that ran it, as ``"where:start>finish@ms"`` from
    the job's start."""

    def on_scheduler(keys=keys, dask_scheduler=None):
        out = {}
        for k in keys:
            evs = dask_scheduler.story(k)
            out[k] = [(e[1], e[2], e[-1]) for e in evs]
            # the graph's arrival: update_graph's start, in its stimulus id
            stim = str(evs[0][4]) if evs else ""
            if stim.startswith("update-graph-"):
                out[k].append(("graph", "in", float(stim.rsplit("-", 1)[1])))
        return out

    def on_worker(keys=keys, dask_worker=None):
        return {k: [(e[1], e[2], e[-1]) for e in dask_worker.state.story(k)
                    if len(e) >= 6 and isinstance(e[-1], float)] for k in keys}

    out = {k: [] for k in keys}
    for k, evs in client.run_on_scheduler(on_scheduler).items():
        out[k] += [(t, f"s:{a}>{b}") for a, b, t in evs]
    for w, per in client.run(on_worker).items():
        for k, evs in per.items():
            out[k] += [(t, f"w{w[-5:]}:{a}>{b}") for a, b, t in evs]
    return {k: [f"{name}@{(t - t0) * 1e3:.1f}" for t, name in sorted(v)]
            for k, v in out.items()}


def _priority_frames(frame_groups):
    """``frame_groups`` run on this thread's stream of the highest priority (``prio``)."""
    import threading

    local = threading.local()

    def run(block, *args, **kwargs):
        import cupy

        hi = getattr(local, "stream", None)
        if hi is None:
            # CUDA clamps a priority to the device's range: this is its greatest
            hi = local.stream = cupy.cuda.Stream(non_blocking=True, priority=-1000)
        prev = cupy.cuda.get_current_stream()
        made = cupy.cuda.Event()
        made.record(prev)
        hi.wait_event(made)
        gen = frame_groups(block, *args, **kwargs)
        while True:
            hi.use()
            try:
                item = next(gen)
            except StopIteration:
                return
            finally:
                prev.use()
            yield item

    return run


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


def print_trace(k: int, variant: str, runs: list) -> None:
    """Medians of each step of a batch (``trace_batches``), the threads' first batches
    apart, and the first job's batches of its first worker in time order."""
    first, later = [], []
    for x in runs:
        seen = set()
        for b in sorted(x["trace"], key=lambda b: b["at"]["start"]):
            key = (b["worker"], b["thread"])
            (later if key in seen else first).append(b)
            seen.add(key)
    for name, sel in (("first", first), ("later", later)):
        if sel:
            print(f"trace {k} GPUs, {variant}, {name} batches ({len(sel)}), median ms: "
                  + ", ".join(f"{p} {np.median([b[p] for b in sel]) * 1e3:.1f}"
                              for p in _TRACE_PARTS), flush=True)
    if first:
        x = runs[len(runs) // 2]
        w = sorted({b["worker"] for b in x["trace"]})[0]
        print(f"trace {k} GPUs, {variant}, a job's batches on one worker (ms from the job's "
              "start: start, compute, computed, frames, files, stop):", flush=True)
        for b in sorted((b for b in x["trace"] if b["worker"] == w),
                        key=lambda b: b["at"]["start"]):
            a = b["at"]
            print(f"  batch {b['batch']:3d} thread {str(b['thread'])[-5:]}: " + " ".join(
                f"{a[p] * 1e3:6.1f}" for p in ("start", "compute", "computed", "frames",
                                               "files", "stop")), flush=True)


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
    p.add_argument("--backend", default="gpu", help="gpu; cpu for a dry run of the probe")
    p.add_argument("--trace", action="store_true",
                   help="time each batch's steps on the workers (its write, frames, files)")
    p.add_argument("--story", action="store_true",
                   help="print Dask's transitions of each job's first and last batch")
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
                global _CLIENT_SWITCH
                _CLIENT_SWITCH = args.switch_interval
                sys.setswitchinterval(args.switch_interval)
                client.run(sys.setswitchinterval, args.switch_interval)
            else:       # as mgapsp.cluster.connect
                from mgapsp.worker import SwitchInterval

                client.register_plugin(SwitchInterval())
            print("workers:", client.run(_worker_facts), flush=True)
            if args.trace:
                client.run(_trace_install)
                if not _CLIENT_EVENTS and not getattr(main, "gc_traced", False):
                    _trace_gc(_CLIENT_EVENTS)
                    main.gc_traced = True
            run_job(g, scratch / "w.zarr", client, backend=args.backend, overwrite=True,
                    sources=g.vertex_ids[:batch * k * args.threads], batch_size=batch)
            if args.trace:
                client.run(_trace_take)
            runs = []
            variants = args.variants.split(",")
            for r in range(args.repeats * len(variants)):
                variant = variants[r % len(variants)]
                use_variant(variant, client)
                os.sync()       # as the scaling report: no earlier job's writeback
                with get_task_stream(client) as ts:
                    rep = run_job(g, scratch / "j.zarr", client, backend=args.backend,
                                  overwrite=True, batch_size=batch,
                                  shards="chunk-files" not in variant.split("+"))
                    t_end = time.time()
                t0 = t_end - rep.seconds
                line = timeline(ts.data, t0, t_end)
                line["parts"] = parts_by_position(line["tasks"], rep.batches)
                line["batches"] = rep.batches
                line.update(ends(line["tasks"], rep.batches))
                if args.trace:
                    events = client.run(_trace_take)
                    line["trace"] = trace_batches(events, line["tasks"], rep.batches, t0)
                    events["client"] = [e for e in _CLIENT_EVENTS if e[3] >= t0]
                    _CLIENT_EVENTS.clear()
                    line["gc"] = {w: [(e[1], e[2] - t0, e[3] - e[2]) for e in evs
                                      if e[0] == "gc" and e[3] >= t0 and e[2] <= t_end]
                                  for w, evs in events.items()}
                    print("  gc (generation, at ms, ms): " + "; ".join(
                        f"{w[-5:]}: " + ", ".join(f"{g}@{a * 1e3:.0f}:{d * 1e3:.1f}"
                                                  for g, a, d in v)
                        for w, v in line["gc"].items() if v), flush=True)
                    print("  slow frames: " + ", ".join(
                        f"b{b['batch']} {b['frames'] * 1e3:.1f} (encode {b['encode'] * 1e3:.1f}, "
                        f"pin {b['pin'] * 1e3:.1f}{' grew' if b['grew'] else ''})"
                        for b in line["trace"] if b["frames"] > 0.012), flush=True)
                if args.story:
                    first = min(line["tasks"], key=lambda t: t["start"])["key"]
                    last = max(line["tasks"], key=lambda t: t["stop"])["key"]
                    line["story"] = stories(client, t0, [first, last])
                    for what, key in (("first", first), ("last", last)):
                        print(f"  story of the {what} batch: "
                              + " ".join(line["story"][key]), flush=True)
                last_stop = rep.seconds - line["tail_s"]
                line.update(first_sent_s=rep.marks["first_sent"],
                            window_sent_s=rep.marks["window_sent"],
                            result_s=rep.marks["last_result"] - last_stop,
                            setup_s=rep.setup_s)
                line.update(t0=t0, t_end=t_end)
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
        if args.trace:
            print_trace(k, variant, runs_of[(k, variant)])
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
