"""Dense Floyd-Warshall across GPUs, end to end: 1 GPU against 2 (and more).

    python -m bench.fw_multi_gpu --n 32768 --gpus 1,2 --out bench/results/fw-multi

For each kind of weights (integer 1..100: int16x2 DPX; real-valued: fp32) it builds
one random digraph of ``n`` vertices (``--density`` of the n^2 pairs), then for each
GPU count starts a LocalCUDACluster on that many GPUs, runs a warm-up job on a graph
of the same kind with ``--warm-n`` vertices (kernels compiled, NCCL connected; at
``--warm-n`` equal to ``--n`` also the staging buffers and host memory grown to the
job's size), and times ``--repeats`` whole
jobs of every row into a fresh Zarr store (``JobReport.seconds``: slabs, exchanges,
staging, compression and writes).  Each job's rows are checked against SciPy's
Dijkstra on a few sources.  Each job starts with the page cache written back
(``os.sync``), as in ``workflows/scaling_report.py``.  The peer: SciPy's
floyd_warshall on ``--scipy-n`` vertices of the same kind, in the same run (updates
per second).

Writes ``fw-multi.md``, ``fw-multi.json`` and ``fw-multi.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr
from scipy.sparse import csgraph

from mgapsp.jobs.cluster import connect
from mgapsp.graph import Graph
from mgapsp.jobs.driver import run_job


def make_graph(kind: str, n: int, density: float, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    m = int(density * n * n)
    src = rng.integers(0, n, m, dtype=np.int64)
    dst = rng.integers(0, n, m, dtype=np.int64)
    w = (rng.integers(1, 101, m).astype(np.float64) if kind == "integer"
         else rng.uniform(1.0, 100.0, m))
    return Graph.from_edges(src, dst, w, n=n, name=f"random-{kind}-{n}")


def check_rows(graph: Graph, path: Path, rng, count: int = 3) -> float:
    """Largest relative error of ``count`` random stored rows against SciPy."""
    rows = np.sort(rng.choice(graph.n, count, replace=False))
    ref = csgraph.dijkstra(graph.to_scipy(), directed=True, indices=rows)
    got = zarr.open_group(str(path), mode="r")["distances"].get_orthogonal_selection(
        (rows, slice(None))).astype(np.float64)
    if not np.array_equal(np.isinf(got), np.isinf(ref)):
        raise AssertionError(f"{path}: rows {rows} differ in reachability from SciPy")
    fin = np.isfinite(ref)
    return float(np.max(np.abs(got[fin] - ref[fin]) / np.maximum(np.abs(ref[fin]), 1.0)))


def scipy_peer(kind: str, n: int, density: float) -> dict:
    g = make_graph(kind, n, density, seed=11)
    t = time.perf_counter()
    csgraph.floyd_warshall(g.to_scipy(), directed=True)
    s = time.perf_counter() - t
    return {"n": n, "seconds": s, "updates_per_s": n**3 / s}


def measure(kind, graph, warm, gpus, repeats, scratch, rng):
    runs = []
    with connect(backend="gpu", gpus=",".join(map(str, range(gpus))), dashboard=False) as client:
        client.wait_for_workers(gpus, timeout=120)
        run_job(warm, scratch / "warm.zarr", client, backend="gpu",
                algorithm="floyd-warshall", overwrite=True)
        for r in range(repeats):
            path = scratch / f"job{r}.zarr"
            # each job starts with no earlier job's rows waiting to be written back
            # (several GiB of them otherwise throttle the next job's writes to the
            # disk's speed)
            os.sync()
            rep = run_job(graph, path, client, backend="gpu", algorithm="floyd-warshall",
                          overwrite=True)
            err = check_rows(graph, path, rng)
            fwr = rep.floyd_warshall
            runs.append({"seconds": rep.seconds, "fw_seconds": fwr["seconds"],
                         "fw_info_s": fwr["info_s"],
                         "rows_per_s": rep.rows_per_second, "method": fwr["method"],
                         "attempts": fwr["attempts"], "exchange": fwr["exchange"],
                         "ranks": fwr["ranks"], "exchanged_bytes": fwr["exchanged_bytes"],
                         "gpu_busy": rep.gpu_busy(), "write_s": dict(rep.worker_write_s),
                         "per_worker": dict(rep.per_worker), "stored_bytes": rep.stored_bytes,
                         "batch_size": rep.plan.batch_size, "max_rel_err": err,
                         "marks": dict(rep.marks),
                         # each batch: on the client's clock from the batches' start
                         "batch_times": [
                             {"worker": b["worker"], "rows": b["rows"],
                              "compute_s": b["compute_s"], "stage_s": b["stage_s"],
                              "write_s": b["write_s"],
                              "written": b["written"] - rep.started}
                             for b in rep.batches],
                         "ranks_detail": [{k: v for k, v in x.items() if k.endswith("_s")
                                           or k in ("rank", "rows", "seconds",
                                                    "reused_communicator")}
                                          for x in fwr["per_rank"]]})
            print(f"  {kind} {gpus} GPU(s) run {r}: {rep.seconds:.3f} s end to end "
                  f"(FW {fwr['seconds']:.3f} s, {fwr['method']}, {fwr['exchange']}), "
                  f"max rel err {err:.1e}, client info {fwr['info_s']:.3f} s", flush=True)
            for b in runs[-1]["batch_times"]:
                print(f"    batch on {b['worker'][-5:]}: rows {b['rows']}, stage "
                      f"{b['stage_s']:.3f}, write {b['write_s']:.3f}, written at "
                      f"{b['written']:.3f} s", flush=True)
            for x in runs[-1]["ranks_detail"]:
                print("    rank", ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else
                                           f"{k} {v}" for k, v in x.items()), flush=True)
            shutil.rmtree(path, ignore_errors=True)
    med = float(np.median([x["seconds"] for x in runs]))
    return {"gpus": gpus, "median_s": med,
            "median_fw_s": float(np.median([x["fw_seconds"] for x in runs])),
            "rows_per_s": graph.n / med, "runs": runs}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    for kind, res in results.items():
        g = [p["gpus"] for p in res["points"]]
        r = [p["rows_per_s"] for p in res["points"]]
        line, = ax.plot(g, r, "o-", label=f"{kind} ({res['points'][0]['runs'][0]['method']})")
        ax.plot(g, [r[0] * k / g[0] for k in g], "--", color=line.get_color(), alpha=0.4)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("rows / s (end to end)")
    ax.set_xticks(sorted({p["gpus"] for res in results.values() for p in res["points"]}))
    ax.set_title("Floyd-Warshall, n = %d; dashed: linear" % res["n"], fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(results: dict, n: int, repeats: int, scipy_n: int, warm_n: int,
                 out: Path) -> None:
    """``fw-multi.md`` and ``fw-multi.png`` from the measured ``results``."""
    lines = [f"# Floyd-Warshall across GPUs, n = {n}, end to end", "",
             "Whole jobs (`run_job`, every row into a fresh Zarr store in the default codec): slabs, "
             "pivot-row exchanges, staging, compression and writes; median of "
             f"{repeats} after a warm-up job on {warm_n:,} vertices, each job with the "
             "page cache written back before it.  FW phase: from the slabs' start to "
             "the last rank's end (loading, pivot rounds, exchanges); the rest of a "
             "job writes the rows.  Peer: SciPy `floyd_warshall` on "
             f"{scipy_n} vertices, same run.", "",
             "| weights | method | GPUs | exchange | median s | speed-up | FW phase s | "
             "FW phase speed-up | writing after it s | rows/s | "
             "T updates/s (end to end) | vs SciPy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for kind, res in results.items():
        base = res["points"][0]
        for p in res["points"]:
            r0 = p["runs"][0]
            ups = res["n"] ** 3 / p["median_s"]
            after = float(np.median([r["seconds"] - r["fw_seconds"] for r in p["runs"]]))
            lines.append(f"| {kind} | {r0['method']} | {p['gpus']} | {r0['exchange']} | "
                         f"{p['median_s']:.3f} | {base['median_s'] / p['median_s']:.2f}x | "
                         f"{p['median_fw_s']:.3f} | "
                         f"{base['median_fw_s'] / p['median_fw_s']:.2f}x | {after:.3f} | "
                         f"{p['rows_per_s']:,.0f} | {ups / 1e12:.2f} | "
                         f"{ups / res['scipy']['updates_per_s']:,.0f}x |")
    (out / "fw-multi.md").write_text("\n".join(lines) + "\n")
    plot(results, out / "fw-multi.png")
    print("\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32768)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--gpus", default="1,2")
    ap.add_argument("--kinds", default="integer,real")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warm-n", type=int, default=2048,
                    help="vertices of the warm-up job's graph (default 2048)")
    ap.add_argument("--scipy-n", type=int, default=2048)
    ap.add_argument("--out", default="bench/results/fw-multi")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="mgapsp-fw-multi-"))
    rng = np.random.default_rng(0)
    results = {}
    try:
        for kind in args.kinds.split(","):
            t = time.perf_counter()
            graph = make_graph(kind, args.n, args.density, seed=1)
            warm = make_graph(kind, args.warm_n, args.density, seed=2)
            print(f"{kind}: {graph.n:,} vertices, {graph.m:,} edges "
                  f"(built in {time.perf_counter() - t:.1f} s)", flush=True)
            peer = scipy_peer(kind, args.scipy_n, args.density)
            print(f"  SciPy floyd_warshall n={args.scipy_n}: {peer['seconds']:.2f} s, "
                  f"{peer['updates_per_s'] / 1e9:.2f} G updates/s", flush=True)
            points = [measure(kind, graph, warm, int(g), args.repeats, scratch, rng)
                      for g in args.gpus.split(",")]
            results[kind] = {"n": graph.n, "m": graph.m, "points": points, "scipy": peer}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "fw-multi.json").write_text(json.dumps(results, indent=1))
    write_report(results, args.n, args.repeats, args.scipy_n, args.warm_n, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
