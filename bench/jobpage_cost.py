"""What the job page (``/mgapsp``, issue 38) costs a job: the same job run with the
page's plugin and callbacks and without them, in turn, on an embedded cluster.

    python -m bench.jobpage_cost GRAPH [--sources N] [--algorithm A] [--backend B]
                                 [--pairs K] [--out DIR]

Each pair runs ``mgapsp.apsp(graph, out=..., overwrite=True, ...)`` once with the page
and once without (``mgapsp.jobs.driver.reporting`` replaced by one that registers
nothing and passes the callbacks through), the order alternating, after one warm-up
job.  Prints and writes ``jobpage-<date>.md`` and ``.json``: start-to-end seconds of
each job, the medians, and the median of the pairs' ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import mgapsp
from mgapsp.jobs import driver

ROOT = Path(__file__).resolve().parents[1]

WITH_PAGE = driver.reporting


def without_page(client, run, n, on_start, on_progress):
    return on_start, on_progress


def one_job(g, out: Path, args, labels, page: bool) -> float:
    driver.reporting = WITH_PAGE if page else without_page
    t = time.perf_counter()
    mgapsp.apsp(g, out=str(out), overwrite=True, backend=args.backend,
                algorithm=args.algorithm, sources=labels)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--sources", type=int, default=None)
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    g = mgapsp.read_graph(args.graph)
    labels = None
    if args.sources:
        pick = np.random.default_rng(0).choice(g.n, min(args.sources, g.n), replace=False)
        labels = g.labels[np.sort(pick)]
    with tempfile.TemporaryDirectory(prefix="jobpage-") as tmp:
        out = Path(tmp) / "job.zarr"
        one_job(g, out, args, labels, page=True)            # warm-up
        on, off = [], []
        for i in range(args.pairs):
            for page in ((True, False) if i % 2 == 0 else (False, True)):
                (on if page else off).append(one_job(g, out, args, labels, page))
                print(f"pair {i + 1}: {'with' if page else 'without'} the page "
                      f"{(on if page else off)[-1]:.2f} s", flush=True)
    ratio = statistics.median(a / b for a, b in zip(on, off))
    meta = {"date": dt.date.today().isoformat(), "graph": Path(args.graph).name,
            "n": g.n, "m": g.m, "sources": args.sources or g.n,
            "algorithm": args.algorithm, "backend": args.backend, "with_page_s": on,
            "without_page_s": off, "median_with_s": statistics.median(on),
            "median_without_s": statistics.median(off), "ratio": ratio}
    text = (f"# The job page's cost ({meta['date']})\n\n"
            f"{meta['graph']} (n={g.n:,}), {meta['sources']:,} sources, "
            f"algorithm {args.algorithm}, backend {args.backend}, {args.pairs} pairs in "
            f"turn after a warm-up job.\n\n"
            f"| | median (s) | runs (s) |\n|---|---|---|\n"
            f"| with the page | {meta['median_with_s']:.2f} | "
            f"{', '.join(f'{x:.2f}' for x in on)} |\n"
            f"| without | {meta['median_without_s']:.2f} | "
            f"{', '.join(f'{x:.2f}' for x in off)} |\n\n"
            f"With / without, median of the pairs: {ratio:.4f} "
            f"({(ratio - 1) * 100:+.2f}%).\n")
    dest = Path(args.out)
    dest.mkdir(parents=True, exist_ok=True)
    stem = dest / f"jobpage-{meta['date']}"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
