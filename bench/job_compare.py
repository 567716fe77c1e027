"""The same end-to-end job with two versions of mgapsp, alternating (before/after a change).

    python -m bench.job_compare tests/data/NY.pace.gr.gz --tree OLD --tree . \
        --sources 32768 --repeats 3 --rounds 2 --out results.json

``--tile K`` computes every source's row K times (a job of seconds on a small graph).

Each ``--tree`` is a source tree of mgapsp (its ``mgapsp/`` and ``kernels/``).  Every
round starts one process per tree, in turn (every other round in reverse order): it
starts that version's embedded cluster as its CLI would (one GPU worker, inside that
process where the version can; or one CPU worker per core),
runs a warm-up job, then ``--repeats`` timed jobs into a fresh store each (the page
cache written back before each).  A job's time is its ``JobReport.seconds``: from its
first batch sent to the store's last record, the Zarr writes included.  Prints and
writes the median per tree and the ratio to the first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def child(args) -> None:
    import mgapsp       # the tree's: first on this process's path (see main)

    try:
        from mgapsp.jobs.cluster import connect
        from mgapsp.jobs.driver import run_job
    except ImportError:         # the layout before the redesign
        from mgapsp.cluster import connect
        from mgapsp.pipeline import run_job

    graph = mgapsp.read_graph(args.graph)
    sources = graph.vertex_ids[:args.sources] if args.sources else None
    if args.tile > 1:       # a longer job on a small graph: every row several times
        import numpy as np

        sources = np.tile(graph.vertex_ids if sources is None else sources, args.tile)
    options = dict(dtype=args.dtype, predecessors=args.predecessors, overwrite=True,
                   sources=sources, batch_size=args.batch_size)
    backend = "gpu" if _gpus() else "cpu"
    cluster = dict(backend=backend, n_workers=args.workers, dashboard=False)
    try:        # the embedded cluster the CLI starts: in this process where it can
        from mgapsp.jobs.cluster import one_process

        cluster["processes"] = not one_process(backend, n_workers=args.workers)
    except ImportError:         # versions before one_process always spawned workers
        pass
    seconds, setup = [], []
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp, \
            connect(**cluster) as client:
        warm = dict(options, sources=graph.vertex_ids[:min(graph.n, 4096)])
        run_job(graph, Path(tmp) / "warm.zarr", client, backend=backend, **warm)
        for i in range(args.repeats):
            os.sync()
            report = run_job(graph, Path(tmp) / "job.zarr", client, backend=backend,
                             **options)
            seconds.append(report.seconds)
            setup.append(report.setup_s)
            rows = report.rows_run
    print(json.dumps({"tree": args.child, "seconds": seconds, "setup_s": setup,
                      "rows": rows, "mgapsp": mgapsp.__file__}))


def _gpus() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sources", type=int, default=None)
    parser.add_argument("--tile", type=int, default=1,
                        help="compute each source's row this many times (a longer job)")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--predecessors", action="store_true")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if len(args.tree) < 1:
        parser.error("give at least one --tree")
    runs: dict[str, list] = {t: [] for t in args.tree}
    passed = [a for a in sys.argv[1:]]
    for r in range(args.rounds):
        order = args.tree if r % 2 == 0 else args.tree[::-1]
        for tree in order:
            # the script itself, not -m: its folder, not the current one, is first on
            # the child's path, and the tree comes next
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [os.path.abspath(tree), os.environ.get("PYTHONPATH", "")]))
            out = subprocess.run([sys.executable, __file__, *passed, "--child", tree],
                                 check=True, capture_output=True, text=True, env=env).stdout
            result = json.loads(out.strip().splitlines()[-1])
            runs[tree].append(result)
            print(f"round {r} {tree}: {['%.3f' % s for s in result['seconds']]}",
                  flush=True)
    first = statistics.median(s for x in runs[args.tree[0]] for s in x["seconds"])
    summary = []
    for tree in args.tree:
        secs = [s for x in runs[tree] for s in x["seconds"]]
        med = statistics.median(secs)
        rows = runs[tree][0]["rows"]
        summary.append({"tree": tree, "median_s": med, "rows_per_s": rows / med,
                        "ratio_to_first": med / first, "seconds": secs,
                        "setup_s": statistics.median(s for x in runs[tree]
                                                     for s in x["setup_s"])})
        print(f"{tree}: median {med:.3f} s over {len(secs)} jobs, {rows / med:,.0f} rows/s, "
              f"{med / first:.3f}x the first tree's time")
    if args.out:
        Path(args.out).write_text(json.dumps({"graph": args.graph, "args": vars(args),
                                              "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
