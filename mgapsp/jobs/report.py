"""What a job did: :class:`JobReport`, for summaries, progress records and tests."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..plan import JobPlan
from ..store import Store

__all__ = ["JobReport"]


@dataclass
class JobReport:
    """What a run did: for summaries, progress attributes and tests."""

    plan: JobPlan
    store: Store | None
    seconds: float = 0.0
    batches_run: int = 0
    rows_run: int = 0
    resumed_batches: int = 0
    #: flagged batches a resumed run found damaged and computed again
    repaired_batches: list = field(default_factory=list)
    #: how a resumed run checked the batches stored before it: "deep" (every chunk's
    #: checksum) or "quick" (each file whole); None for a new store
    resume_check: str | None = None
    per_worker: Counter = field(default_factory=Counter)
    per_backend: Counter = field(default_factory=Counter)
    compute_s: float = 0.0
    #: device seconds (CUDA events) of each GPU worker's batches
    gpu_s: Counter = field(default_factory=Counter)
    #: each worker's spans of wall-clock time (its own clock) during which a batch of
    #: it computed: ``[(start, end), ...]``; batches computing at once overlap
    computing: dict = field(default_factory=dict)
    #: each worker's spans (its own clock) during which its GPU encoded a batch's
    #: chunks (:func:`mgapsp.cuda.staging.frame_groups`)
    encoding: dict = field(default_factory=dict)
    #: seconds each worker spent writing its blocks
    worker_write_s: Counter = field(default_factory=Counter)
    #: of those, seconds cutting (compressing, on a GPU) and copying blocks to the host
    worker_stage_s: Counter = field(default_factory=Counter)
    #: of those, where a GPU made the frames: {worker: Counter(encode_s=..., wait_s=...,
    #: copy_out_s=...)}, encoding on the device, waiting for the file writers to free
    #: a buffer, copying the frames out (:func:`mgapsp.cuda.staging.frame_groups`)
    worker_stages: dict = field(default_factory=dict)
    #: seconds each worker's batches spent computing (loading the job's inputs and
    #: waiting for the GPU included), and of those waiting for the GPU
    worker_compute_s: Counter = field(default_factory=Counter)
    worker_queued_s: Counter = field(default_factory=Counter)
    stored_bytes: int = 0
    #: what each batch's task returned (rows, seconds computing, loading the run's
    #: inputs, writing, marking, the worker...), in the order they finished
    batches: list = field(default_factory=list)
    #: a distributed Floyd-Warshall (mgapsp.jobs.floyd_warshall_slabs): ranks, exchange, method,
    #: seconds (its wall time), exchanged_bytes; empty otherwise
    floyd_warshall: dict = field(default_factory=dict)
    #: seconds before the batches: the workers probed, the job planned, the store
    #: created (the graph written into it) or opened; not in ``seconds``
    setup_s: float = 0.0
    #: of those, each step's: probe, store opened, plan, kernels, resume check,
    #: negative-cycle check, hierarchy, store (creation)
    setup: dict = field(default_factory=dict)
    #: seconds from the batches' start (``seconds`` counts from there to the store's
    #: last record) to: the last batch finished ("last_result"), the store's last
    #: record written ("recorded")
    marks: dict = field(default_factory=dict)
    #: the client's wall clock (``time.time()``) when the batches started
    started: float = 0.0
    #: the store's first row as this run computed it: ``{"reachable": count of finite
    #: distances, "farthest": the largest}``; None where an earlier run stored it
    first_row: dict | None = None

    def add_batch(self, stats: dict) -> None:
        """Count a finished batch (what :func:`mgapsp.jobs.tasks.run_batch` returned)."""
        worker = stats["worker"]
        self.batches_run += 1
        self.batches.append(stats)
        self.rows_run += stats["rows"]
        self.per_worker[worker] += 1
        self.per_backend[stats["backend"]] += stats["rows"]
        self.compute_s += stats["compute_s"]
        self.worker_write_s[worker] += stats["write_s"]
        self.worker_stage_s[worker] += stats.get("stage_s", 0.0)
        if stats.get("stages"):
            self.worker_stages.setdefault(worker, Counter()).update(stats["stages"])
        self.worker_compute_s[worker] += stats["compute_s"]
        self.worker_queued_s[worker] += stats.get("queued_s", 0.0)
        self.stored_bytes += stats["stored_bytes"]
        if "gpu_s" in stats:
            self.gpu_s[worker] += stats["gpu_s"]
        if stats["computing"]:
            self.computing.setdefault(worker, []).append(tuple(stats["computing"]))
        if stats.get("encoding"):
            self.encoding.setdefault(worker, []).extend(map(tuple, stats["encoding"]))
        if "first_row" in stats:
            self.first_row = stats["first_row"]

    @property
    def rows_per_second(self) -> float:
        return self.rows_run / self.seconds if self.seconds > 0 else 0.0

    @property
    def write_s(self) -> float:
        """Seconds all workers together spent writing blocks."""
        return sum(self.worker_write_s.values())

    def gpu_busy(self) -> dict[str, float]:
        """Fraction of the job's wall time during which each GPU worker had a batch
        computing or its chunks encoding (at once count once); from the kernels'
        device time where the spans are not known (Floyd-Warshall slabs)."""
        if self.seconds <= 0:
            return {}
        busy = {w: min(1.0, s / self.seconds) for w, s in self.gpu_s.items()}
        for w, spans in self.computing.items():
            if w in busy:
                spans = spans + self.encoding.get(w, [])
                busy[w] = min(1.0, _covered(spans) / self.seconds)
        return busy

    def idle_ends(self) -> tuple[float, float] | None:
        """Seconds at the job's two ends during which no batch computed anywhere: from
        the batches' start to the first batch computing (Dask's hops to the workers),
        and from the last batch's kernels to the job's end (the last batches' writes,
        the notice of their end, the store's last record).  For a short job these are
        what it pays whatever its workers; None where no batch computed.  The spans are
        the workers' clocks: exact on one host, as good as the hosts' agreement across
        several."""
        spans = [s for w in self.computing.values() for s in w]
        if not spans or self.seconds <= 0:
            return None
        end = self.started + self.seconds
        first = min(a for a, _ in spans) - self.started
        last = end - max(b for _, b in spans)
        return (min(max(first, 0.0), self.seconds), min(max(last, 0.0), self.seconds))


    def tail(self) -> tuple[float, float] | None:
        """The job's end after its last kernels (:meth:`idle_ends`' second term) in two:
        seconds until the last batch's rows were written (its compression and writes,
        on the worker's clock), and from there to the job's end (Dask's notice to the
        client, the store's last record).  None where no batch computed."""
        ends = self.idle_ends()
        written = [b["written"] for b in self.batches if "written" in b]
        if ends is None or not written:
            return None
        end = self.started + self.seconds
        writes = min(max(max(written) - (end - ends[1]), 0.0), ends[1])
        return (writes, ends[1] - writes)


def _covered(spans) -> float:
    """Seconds covered by the union of ``(start, end)`` spans."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total

