"""Scaling report: the same APSP job on 1, 2, ... N workers; rows/s and a PNG plot.

    python workflows/scaling_report.py tests/data/p2p-Gnutella31.txt --out bench/results/scaling

Uses one worker per GPU where GPUs are visible (``LocalCUDACluster`` on the first k
GPUs), else k single-threaded CPU workers.  Each point is a whole job, Zarr writes
included, into a fresh store; rows/s counts the job's rows over the median wall time
of its batches (``JobReport.seconds``: from the first batch sent to the store's last
record and the last task's end; the job's setup before them is reported beside it)
over ``--repeats`` jobs
after a warm-up job, the cluster up, each started with the page cache written back
(``os.sync``).  With ``--rounds`` the points are measured that
many times, each round on new clusters and every other one in reverse order (a
cluster's speed varies by some 5% from one start to the next on the device machines,
and the machine drifts over a run).  Beside each point's speed-up it gives the ceiling
that the first point's idle ends leave it (``ceilings``).  Writes ``scaling.md``,
``scaling.json`` and ``scaling.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp import config
from mgapsp.api import resolve_backend
from mgapsp.algorithms import names as algorithm_names
from mgapsp.gpu_count import gpu_count
from mgapsp.jobs.cluster import connect
from mgapsp.jobs.driver import run_job
from mgapsp.store.writer import store_threads, write_threads


def _flush_page_cache() -> None:
    """Write back the page cache's dirty pages (outside the timed job)."""
    if hasattr(os, "sync"):
        os.sync()


def measure(graph, backend, workers, sources, batch_size, scratch, compression="lz4",
            repeats=3, **options):
    """``repeats`` timed jobs on a new cluster of ``workers`` workers, after a warm-up
    job: ``(their JobReports, each worker's write threads)``.  ``options`` go to every
    job (algorithm, dtype, predecessors)."""
    with connect(backend=backend, n_workers=workers, dashboard=False) as client:
        client.wait_for_workers(workers, timeout=120)
        # Warm-up: compile kernels, load the graph and grow the buffers of every
        # worker thread (a batch each).
        per_worker = config.get("cluster.gpu-worker-threads") if backend == "gpu" else 1
        run_job(graph, scratch / "warm.zarr", client, backend=backend, overwrite=True,
                sources=sources[:batch_size * workers * per_worker], batch_size=batch_size,
                **options)
        reports = []
        for _ in range(repeats):
            # each job starts with no earlier job's data waiting to be written back: a
            # later point would otherwise pay for the writeback of the points before
            _flush_page_cache()
            reports.append(run_job(graph, scratch / "job.zarr", client, backend=backend,
                                   overwrite=True, sources=sources, batch_size=batch_size,
                                   compression=compression, **options))
        storing = client.run(store_threads)
        threads = {w: (storing[w], n) for w, n in client.run(write_threads).items()}
    return reports, threads


def summarize(workers, reports, threads, batch_size) -> dict:
    """A point of the report: the median job of all its rounds."""
    # the median job (the first after a warm-up writes into fresh host memory: slower
    # by up to a half on the device machines)
    runs = [r.seconds for r in reports]
    report = sorted(reports, key=lambda r: r.seconds)[(len(reports) - 1) // 2]
    gpu = report.gpu_busy()
    ends = report.idle_ends()
    tail = report.tail()
    return {"workers": workers, "rows": report.rows_run, "seconds": report.seconds,
            "rows_per_s": report.rows_per_second, "batches": report.batches_run,
            "batch_size": batch_size, "per_worker": dict(report.per_worker),
            "gpu_busy": gpu,
            "gpu_busy_mean": float(np.mean(list(gpu.values()))) if gpu else None,
            "write_s_per_worker": dict(report.worker_write_s),
            "write_threads": {w: t[1] for w, t in threads.items()},
            "store_threads": {w: t[0] for w, t in threads.items()},
            "stored_bytes": report.stored_bytes, "seconds_all": runs,
            "idle_ends_s": list(ends) if ends else None,
            "tail_s": list(tail) if tail else None,
            "setup_s": float(np.median([r.setup_s for r in reports]))}


def ceilings(points) -> list[float | None]:
    """The speed-up each point could reach over the first if every batch's time split
    evenly over its workers and only the idle ends stayed as the first point's.

    A job pays its idle ends (Dask's hops before the first kernels; the last batch's
    writes, Dask's notice and the store's last record after the last kernels) whatever
    its workers, so with ``T`` the first point's seconds, ``E`` its two ends together
    and ``w`` its workers, ``k`` workers take about ``E + (T - E) * w / k`` at best (a
    model: a point whose own ends come out shorter than the first's can pass it).  None
    where the first point has no idle ends (no batch computed)."""
    first = points[0]
    if not first["idle_ends_s"]:
        return [None] * len(points)
    t, e = first["seconds"], sum(first["idle_ends_s"])
    return [t / (e + (t - e) * first["workers"] / p["workers"]) for p in points]


def plot(points, title, path, ceiling=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = [p["workers"] for p in points]
    r = [p["rows_per_s"] for p in points]
    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    ax.plot(w, r, "o-", label="measured")
    ax.plot(w, [r[0] * k / w[0] for k in w], "--", color="grey", label="linear")
    if ceiling and all(c is not None for c in ceiling):
        ax.plot(w, [r[0] * c for c in ceiling], ":", color="tab:red",
                label="ceiling: the first point's idle ends")
    ax.set_xlabel("workers")
    ax.set_ylabel("rows / s (end to end)")
    ax.set_xticks(w)
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--out", default="bench/results/scaling")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    parser.add_argument("--workers", default=None,
                        help="comma-separated worker counts (default 1, 2, 4, ... all)")
    parser.add_argument("--sources", type=int, default=None,
                        help="rows per job (default: every vertex)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="rows per batch at every point (default, GPU: at most 2048, "
                             "the same number of batches for each computing slot of the "
                             "largest point; CPU: 64)")
    parser.add_argument("--tile", type=int, default=1,
                        help="compute every source's row this many times: a job of "
                             "seconds on a small graph (default 1)")
    parser.add_argument("--algorithm", default="auto", choices=("auto",) + algorithm_names())
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--predecessors", action="store_true")
    parser.add_argument("--compression", default="lz4", choices=["lz4", "zstd", "none"])
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed jobs per point and round; the median counts (default 3)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds over the points, each on new clusters, every other "
                             "one in reverse order; a point's median is over all its "
                             "rounds' jobs (default 1)")
    args = parser.parse_args(argv)

    backend = resolve_backend(args.backend)
    most = gpu_count() if backend == "gpu" else (os.cpu_count() or 1)
    counts = ([int(x) for x in args.workers.split(",")] if args.workers
              else sorted({min(2 ** i, most) for i in range(most.bit_length() + 1)}))
    graph = mgapsp.read_graph(args.graph)
    sources = graph.vertex_ids if args.sources is None else graph.vertex_ids[:args.sources]
    sources = np.tile(np.asarray(sources), args.tile)
    options = dict(algorithm=args.algorithm, dtype=args.dtype,
                   predecessors=args.predecessors)
    if args.batch_size:
        batch = args.batch_size
    elif backend == "gpu":
        # one batch size for every point: at most 2048 rows, in a whole number of
        # batches per computing slot (mgapsp.gpu.computing-batches per GPU) at the largest point
        threads = config.get("gpu.computing-batches") * max(counts)
        batches = -(-len(sources) // 2048)               # of at most 2048 rows
        batches = -(-batches // threads) * threads      # a multiple of the slots
        batch = -(-len(sources) // batches)
    else:
        batch = 64
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="mgapsp-scaling-"))
    jobs = {k: [] for k in counts}
    threads = {}
    try:
        for r in range(args.rounds):
            # every other round backwards, so that a drift of the machine over the run
            # weighs on every point alike
            for k in (counts if r % 2 == 0 else counts[::-1]):
                reports, threads[k] = measure(graph, backend, k, np.asarray(sources), batch,
                                              scratch, args.compression, args.repeats,
                                              **options)
                jobs[k] += reports
                print(f"round {r + 1}, {k} {backend} workers: " + ", ".join(
                    f"{rep.seconds:.3f}" for rep in reports) + " s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    points = [summarize(k, jobs[k], threads[k], batch) for k in counts]
    for p, c in zip(points, ceilings(points)):
        p["ceiling"] = c
    for p in points:
        print(f"{p['workers']:3d} {backend} workers: {p['rows']:,} rows in "
              f"{p['seconds']:.2f} s = {p['rows_per_s']:,.0f} rows/s "
              f"(x{p['rows_per_s'] / points[0]['rows_per_s']:.2f})"
              + (f", GPU busy {p['gpu_busy_mean']:.0%} (mean of workers)"
                 if p["gpu_busy_mean"] is not None else "")
              + (", idle ends {:.1f} and {:.1f} ms".format(*(1e3 * v for v in p["idle_ends_s"]))
                 if p["idle_ends_s"] else "")
              + (" (writes {:.1f}, notice and record {:.1f})".format(
                  *(1e3 * v for v in p["tail_s"])) if p["tail_s"] else "")
              + (f", ceiling x{p['ceiling']:.2f}" if p["ceiling"] is not None else ""),
              flush=True)
    what = [args.algorithm, args.dtype] + (["predecessors"] if args.predecessors else [])
    tiled = (f" ({len(sources) // args.tile:,} sources x {args.tile})" if args.tile > 1
             else "")
    title = (f"{graph.name}: {len(sources):,} rows{tiled}, {backend}, "
             f"{', '.join(what)}, {args.compression}")
    (out / "scaling.json").write_text(json.dumps({"graph": graph.name, "backend": backend,
                                                  "rounds": args.rounds, "tile": args.tile,
                                                  **options,
                                                  "repeats": args.repeats,
                                                  "points": points}, indent=1))
    rounds = (f"{args.rounds} rounds of {args.repeats} jobs per point, each round on new "
              "clusters and every other one in reverse order" if args.rounds > 1
              else f"{args.repeats} jobs per point")
    lines = [f"# Scaling: {title}", "",
             "The batches end to end: kernels, staging to the host, compression, Zarr "
             "writes of every row and the store's records, from the first batch sent to "
             "the store's last record and the last task's end; the median wall time of "
             f"{rounds}, each job after a warm-up job on the same cluster and with the "
             "page cache written back.  Setup, before the batches and not in the rows/s "
             "(workers probed, the previous job's store removed, the new one created "
             "with the graph): median shown.  GPU busy: the share of the wall time during "
             "which each worker had a batch computing (batches computing at once count "
             "once).  Idle ends: from the job's start to the first batch computing on "
             "any worker, and from the last batch's kernels to the job's end (its "
             "writes, Dask's notice, the store's last record); a job pays them whatever "
             "its workers, so they bound the speed-up of short jobs.  Ceiling: the speed-up "
             "a point would reach if the first point's batch time split evenly over k "
             "times its workers and the first point's idle ends stayed (with T the first "
             "point's seconds and E its two ends: E + (T - E) / k seconds); a point whose "
             "own ends came out shorter can pass it.", "",
             "| workers | rows/s | speed-up | ceiling | seconds | idle ends ms | setup s | "
             "batches of | GPU busy (per worker) | threads storing, compressing per worker "
             "| stored |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        busy = ", ".join(f"{v:.0%}" for v in p["gpu_busy"].values()) or "-"
        ends = (", ".join(f"{1e3 * v:.1f}" for v in p["idle_ends_s"])
                if p["idle_ends_s"] else "-")
        threads = sorted({(p["store_threads"][w], n) for w, n in p["write_threads"].items()})
        ceiling = f"{p['ceiling']:.2f}x" if p["ceiling"] is not None else "-"
        lines.append(f"| {p['workers']} | {p['rows_per_s']:,.0f} | "
                     f"{p['rows_per_s'] / points[0]['rows_per_s']:.2f}x | {ceiling} | "
                     f"{p['seconds']:.3f} | "
                     f"{ends} | {p['setup_s']:.3f} | {p['batch_size']} | {busy} | "
                     f"{'; '.join(f'{a}, {b}' for a, b in threads)} | "
                     f"{p['stored_bytes'] / 2**20:,.0f} MiB |")
    (out / "scaling.md").write_text("\n".join(lines) + "\n")
    plot(points, title, out / "scaling.png", [p["ceiling"] for p in points])
    print(f"wrote {out / 'scaling.md'} and {out / 'scaling.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
