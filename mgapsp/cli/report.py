"""What a job command says of its job, and ``info`` of a store's metrics: the summary
at a job's end, the fixed cost of ``-v`` (:class:`Clock`), the metrics in words."""

from __future__ import annotations

import os
import time

import click
import numpy as np

__all__ = ["Clock", "summary", "metrics_line"]


class Clock:
    """The seconds of a job command's steps outside its batches, for the fixed-cost
    line of ``-v``: what a user waits for beyond the job itself."""

    def __init__(self):
        self.parts: dict[str, float] = {}
        self.t = time.perf_counter()
        self.entered = time.time()

    def lap(self, name: str) -> float:
        """Seconds since the last lap (or :meth:`skip`), added to ``name``."""
        now = time.perf_counter()
        seconds, self.t = now - self.t, now
        self.parts[name] = self.parts.get(name, 0.0) + seconds
        return seconds

    def skip(self) -> None:
        """What came since the last lap is the job's, told by its report."""
        self.t = time.perf_counter()

    def summary(self, report) -> str:
        parts = {"start and imports": _process_age(self.entered), **self.parts}
        # the job's own steps before its batches, between the cluster and the batches
        where = list(parts).index("cluster start") + 1
        items = list(parts.items())
        items[where:where] = list(report.setup.items())
        shown = [f"{name} {s:.2f} s" for name, s in items if s is not None and s >= 0.005]
        total = sum(s for _, s in items if s is not None)
        return (f"  fixed cost {total:.2f} s beside the job's {report.seconds:.2f} s: "
                + ", ".join(shown))


def _process_age(at: float) -> float | None:
    """Seconds from this process's start to the wall-clock time ``at``; None where the
    system does not say (Linux's /proc does, to a clock tick)."""
    try:
        with open("/proc/self/stat") as fh:
            # the fields after the command's name (which may hold spaces): the start
            # is the 22nd field, in clock ticks since the boot
            started = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return uptime - started / os.sysconf("SC_CLK_TCK") - (time.time() - at)


def summary(out, report, n_workers: int, size: int) -> None:
    """What ``run`` (and ``repair``) says at a job's end: its rows and pace, each
    worker's time, what was resumed or repaired, and the store (``size`` bytes)."""
    p = report.plan
    click.echo(f"  done: {report.rows_run:,} rows in {report.seconds:.2f} s "
               f"({report.rows_per_second:,.0f} rows/s) on {n_workers} "
               f"worker{'s' if n_workers != 1 else ''}; "
               f"worker time: compute {report.compute_s:.2f} s, write {report.write_s:.2f} s")
    fw = report.floyd_warshall
    if fw:
        click.echo(f"  floyd-warshall: {fw['ranks']} slab(s) of rows, {fw['method']}, "
                   f"pivot rows exchanged through {fw['exchange']} "
                   f"({fw['exchanged_bytes'] / 2**20:,.0f} MiB), {fw['seconds']:.2f} s")
    busy = report.gpu_busy()
    for worker, count in sorted(report.per_worker.items()):
        write, stage = report.worker_write_s[worker], report.worker_stage_s[worker]
        parts = report.worker_stages.get(worker)
        inside = (f"; staging: encoding {parts['encode_s']:.2f} s, waiting for the "
                  f"writers {parts['wait_s']:.2f} s, copying out "
                  f"{parts['copy_out_s']:.2f} s" if parts else "")
        line = (f"    {worker}: {count} batches, writing {write:.2f} s (staging "
                f"{stage:.2f} s, files {write - stage:.2f} s{inside}), computing "
                f"{report.worker_compute_s[worker]:.2f} s")
        if report.worker_queued_s[worker] >= 0.005:
            line += f" (waiting for the GPU {report.worker_queued_s[worker]:.2f} s)"
        if worker in busy:
            line += (f", GPU busy {busy[worker]:.0%} of the wall time "
                     f"({report.gpu_s[worker]:.2f} s of kernels)")
        click.echo(line)
    if len(report.per_backend) > 1:
        click.echo("  rows by backend: " + ", ".join(
            f"{k} {v:,}" for k, v in sorted(report.per_backend.items())))
    store = report.store
    if report.resume_check == "quick" and report.resumed_batches:
        click.echo(f"  resumed: the {report.resumed_batches:,} batches stored before were "
                   f"checked quickly (files whole); `mgapsp repair {out}` checks every "
                   "chunk's checksum")
    if report.repaired_batches:
        from ..store import batch_ranges

        shown = ", ".join(batch_ranges(report.repaired_batches))
        click.echo(f"  repaired: batch(es) {shown} were damaged and are computed again")
    if not p.distances:
        click.echo(f"  store: {out} ({size / 2**20:.1f} MiB), metrics of {p.n_sources:,} "
                   f"sources: {', '.join(p.metrics)} (no distances)")
        return
    width = store.group["distances"].shape[1]
    first = report.first_row
    if first is None:       # stored by an earlier run: read back
        from ..reductions import row_reductions
        from ..store.rows import read

        red = row_reductions(read(store.group["distances"], [0]))
        first = {"reachable": int(red["reachable"][0]), "farthest": red["eccentricity"][0]}
    sid = store.labels("source")[0]
    click.echo(f"  store: {out} ({size / 2**20:.1f} MiB), distances {p.n_sources:,} x "
               f"{width:,} {p.dtype}"
               + (", predecessors" if p.predecessors else ""))
    click.echo(f"  first row (source {sid}): {first['reachable']:,} of {width:,} targets "
               "reachable" + (f", farthest at {first['farthest']:g}" if first["reachable"]
                              else ""))


def metrics_line(store, complete: bool) -> str:
    """What ``info`` says of a store's metrics: once every row is in and reaches every
    target, the mean distance and the extreme eccentricities (over the whole matrix:
    the average shortest path length, the diameter and the radius)."""
    j = store.job
    names = ", ".join(m for m in j["metrics"]
                      if m not in ("reachable", "distance_sum", "histogram", "betweenness"))
    line = f"metrics: {names or 'reachable, distance_sum'} per source"
    if "histogram" in j["metrics"]:
        line += ", the distance histogram"
    if "betweenness" in j["metrics"]:
        line += ", each vertex's betweenness"
    if not complete:
        return line + " (the job is incomplete)"
    reach = store.metric("reachable")
    n = j["n_targets"]
    if "histogram" in j["metrics"]:
        line += "; " + _histogram_words(store.distance_histogram())
    if "betweenness" in j["metrics"]:
        sums = store.dependencies()
        top = int(np.argmax(sums))
        line += (f"; most between: vertex {store.labels('vertex')[top].item()!r} "
                 f"({sums[top]:.6g} paths' shares, unscaled)")
    if (reach < n).any():
        return (line + f"; {int((reach < n).sum()):,} source(s) do not reach every "
                "target: no diameter")
    whole = j.get("all_targets") and len(reach) == n and (
        store.source_index() == np.arange(n)).all()
    # the pairs of a source and a target other than itself (each reaches every target)
    own = np.isin(store.source_index(), store.target_index()) if not j.get(
        "all_targets", True) else np.ones(len(reach), dtype=bool)
    mean = store.metric("distance_sum").sum() / max(int((reach - own).sum()), 1)
    line += (f"; average shortest path length {mean:.6g}" if whole
             else f"; mean distance {mean:.6g}")
    if "eccentricity" in j["metrics"]:
        ecc = store.metric("eccentricity")
        line += (f", diameter {ecc.max():g}, radius {ecc.min():g}" if whole else
                 f", largest eccentricity {ecc.max():g}, smallest {ecc.min():g}")
    return line


def _histogram_words(h) -> str:
    """The median of a distance histogram, as the bin that holds it."""
    if not len(h.counts):
        return f"no pair connected ({h.unreachable:,} pairs)"
    k = int(np.searchsorted(np.cumsum(h.counts), (h.pairs - h.unreachable + 1) // 2))
    return (f"median distance in [{h.edges[k]:g}, {h.edges[k + 1]:g}), "
            f"{h.unreachable:,} of {h.pairs:,} pairs unreachable")
