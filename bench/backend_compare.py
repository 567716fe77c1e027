"""Each algorithm's batches through two versions of mgapsp's backend, alternating in one
run: did a change to the backends' code (not the kernels) move their time?

    python -m bench.backend_compare --tree OLD --tree . --out bench/results

Each ``--tree`` is a source tree of mgapsp (its ``mgapsp/`` and ``kernels/``).  Every
round starts one process per tree, in turn (every other round in reverse order); it
computes a warm-up batch, then ``--repeats`` batches of each case through
``get_backend(...).distances(..., device=True)`` and keeps the batch's device time
(its ``gpu_s``, CUDA events) and its wall time (until the device is idle).  The cases:
Dijkstra and Bellman-Ford on p2p-Gnutella31, Johnson on rome99 with negative weights
(reweighted by seeded random potentials: no negative cycle), PHAST on NY (its
hierarchy built first, not timed) and
Floyd-Warshall on test_FW_1000 and on a seeded dense graph of 8,192 vertices (the
matrix made again for each batch: on 1,000 vertices the host's launches bound it).  Every
result's checksum must agree between the trees.  Writes
``backend-compare-<date>-<label>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
#: (case, algorithm, graph file, sources per batch)
CASES = [("dijkstra", "dijkstra", "p2p-Gnutella31.txt", 4096),
         ("bellman-ford", "bellman-ford", "p2p-Gnutella31.txt", 4096),
         ("johnson", "johnson", "rome99.gr", 2048),
         ("phast", "phast", "NY.pace.gr.gz", 4096),
         ("floyd-warshall", "floyd-warshall", "test_FW_1000.mtx", 1000),
         ("floyd-warshall-8192", "floyd-warshall", "random:8192", 1024)]


def child(tree: str, repeats: int, cases: list[str]) -> dict:
    """Time every case with the mgapsp of ``tree`` (first on this process's path)."""
    import numpy as np

    import mgapsp

    if not Path(mgapsp.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"{mgapsp.__file__} is not the mgapsp of {tree}")
    from mgapsp import hierarchy
    from mgapsp.backends import get_backend

    cupy = __import__("cupy")
    backend = get_backend("gpu")
    out = {"mgapsp": mgapsp.__file__, "cases": {}}
    for case, algorithm, name, batch in CASES:
        if case not in cases:
            continue
        if name.startswith("random:"):      # dense: a quarter of the pairs, weights 1..99
            n = int(name.split(":")[1])
            rng = np.random.default_rng(3)
            src, dst = rng.integers(0, n, (2, n * n // 4))
            graph = mgapsp.Graph.from_edges(src, dst, rng.integers(1, 100, len(src)), n=n)
        else:
            graph = mgapsp.read_graph(DATA / name)
        if algorithm == "johnson":      # negative weights, every cycle's sum kept
            h = np.random.default_rng(7).integers(0, 2000, graph.n).astype(np.float64)
            w = graph.weights + h[graph.sources_of_edges] - h[graph.indices]
            graph = mgapsp.Graph(graph.indptr, graph.indices, w)
        sources = np.arange(min(batch, graph.n), dtype=np.int64)
        potentials = backend.potentials(graph) if graph.has_negative_weights else None
        if algorithm == "phast":
            hierarchy.for_graph(graph)
        dtype = np.float64 if potentials is not None else np.float32

        def run():
            if algorithm == "floyd-warshall":
                from mgapsp.backends.gpu import clear_device_cache
                clear_device_cache()
            t = time.perf_counter()
            res = backend.distances(graph, sources, algorithm=algorithm, dtype=dtype,
                                    potentials=potentials, device=True)
            cupy.cuda.Device().synchronize()
            return time.perf_counter() - t, res

        run()                                   # warm-up: kernels, resident graph
        walls, gpus = [], []
        for _ in range(repeats):
            wall, res = run()
            walls.append(wall)
            gpus.append(res.stats["gpu_s"])
            d = res.distances
            checksum = float(cupy.where(cupy.isfinite(d), d, 0).sum(dtype=cupy.float64))
            del res, d
        out["cases"][case] = {"wall_s": statistics.median(walls),
                              "gpu_s": statistics.median(gpus), "checksum": checksum,
                              "rows": len(sources), "n": graph.n}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--label", default="gpu")
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.repeats, args.cases.split(","))))
        return
    if len(args.tree) != 2:
        parser.error("give two --tree: before, then after")
    runs: dict[str, list] = {t: [] for t in args.tree}
    for r in range(args.rounds):
        for tree in (args.tree if r % 2 == 0 else args.tree[::-1]):
            # the script itself, not -m: its folder, not the current one, is first on
            # the child's path, and the tree comes next
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(Path(tree).resolve()), os.environ.get("PYTHONPATH", "")]))
            done = subprocess.run([sys.executable, __file__, "--child", tree,
                                   "--repeats", str(args.repeats), "--cases", args.cases],
                                  env=env, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{tree}: {done.stderr}")
            runs[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {r} {tree}: done", flush=True)
    before, after = args.tree
    rows = []
    for case in args.cases.split(","):
        med = {t: {k: statistics.median(x["cases"][case][k] for x in runs[t])
                   for k in ("wall_s", "gpu_s")} for t in args.tree}
        sums = {x["cases"][case]["checksum"] for t in args.tree for x in runs[t]}
        rows.append({"case": case, "before": med[before], "after": med[after],
                     "gpu_ratio": med[after]["gpu_s"] / med[before]["gpu_s"],
                     "wall_ratio": med[after]["wall_s"] / med[before]["wall_s"],
                     "same_answer": len(sums) == 1,
                     "rows": runs[before][0]["cases"][case]["rows"]})
    stamp = datetime.date.today().isoformat()
    base = Path(args.out) / f"backend-compare-{stamp}-{args.label}"
    base.with_suffix(".json").write_text(json.dumps(
        {"trees": args.tree, "repeats": args.repeats, "rounds": args.rounds,
         "rows": rows}, indent=1))
    lines = [f"# Backends before and after, {stamp}, {args.label}", "",
             f"Trees: before `{before}`, after `{after}`; medians of {args.repeats} "
             f"batches x {args.rounds} rounds each, alternating.", "",
             "| case | rows | device s before | after | ratio | wall s before | after "
             "| ratio | same answer |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['rows']} | {r['before']['gpu_s']:.4f} | "
                     f"{r['after']['gpu_s']:.4f} | {r['gpu_ratio']:.3f} | "
                     f"{r['before']['wall_s']:.4f} | {r['after']['wall_s']:.4f} | "
                     f"{r['wall_ratio']:.3f} | {r['same_answer']} |")
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
