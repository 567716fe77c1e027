"""The write path against the kernels, and jobs on 1 and 2 (or more) GPUs of one host.

    python -m bench.write_path codec [--out DIR]
    python -m bench.write_path jobs --gpus 0 0,1 [--ny-sources K] [--rmat-sources K]
                                    [--tag NAME] [--env MGAPSP_STORE_THREADS=8]
    python -m bench.write_path report --parts DIR

``codec``: device blocks of real rows (NY unweighted by PHAST, NY with weights 1..97
by Bellman-Ford, R-MAT 2^20 by Bellman-Ford), each cut into the chunks a job stores
and encoded on the GPU by both codecs a GPU job can write, ``mgapsp.planes`` and Blosc
LZ4 bit-shuffle, in the groups the writer uses: device time (CUDA events, median of 5
after a warm-up), GB/s of raw rows and the compression ratio; a sample of each
codec's frames decoded on the CPU and compared.

``jobs``: ``mgapsp run`` as a user runs it (a process each, wall clock), into a local
store, on each set of ``--gpus``: NY by PHAST with 32,768 random sources, planes and
lz4 (the same sources); NY every source; R-MAT 2^20 with ``--rmat-sources`` random
sources.  Each job's summary (rows/s, per worker staging, files, computing, GPU busy),
its store's bytes, ``verify --samples 8``, and the disk's own rate for the largest
store's bytes (written and synced).

Each part writes ``write-path-<part>[-<tag>].json`` into ``--parts``; ``report`` merges
them (the jobs of every part) into ``write-path-<date>-<gpu>.md`` and ``.json`` in
``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench import generators
from bench.million_bench import _sources, disk_write_rate, workers
import mgapsp

ROOT = Path(__file__).resolve().parents[1]

NY = ROOT / "tests" / "data" / "NY.pace.gr.gz"


# -- codec ----------------------------------------------------------------------------
def _blocks():
    """(name, device block) of real rows, one at a time."""
    import cupy
    import scipy.sparse as sp

    from mgapsp import hierarchy
    from mgapsp.cuda import bellman_ford, device, phast

    g = mgapsp.read_graph(NY)
    src = _sources(g.n, 4096)
    dh = phast.upload(hierarchy.for_graph(g), np.float32)
    yield "NY unweighted, 4,096 random sources (phast)", phast.phast_batch(dh, src)[0]
    del dh
    csr = g.to_scipy().tocoo()
    w = np.random.default_rng(5).integers(1, 98, csr.nnz).astype(np.float64)
    sym = sp.csr_matrix((w, (csr.row, csr.col)), shape=csr.shape)
    sym = sym.maximum(sym.T)
    gw = mgapsp.as_graph(sym, directed=False)
    yield ("NY weights 1..97, 4,096 random sources (bellman-ford)",
           bellman_ford.bellman_ford_batch(device.upload_graph(gw, np.float32), src)[0])
    yield ("NY unweighted, 4,096 consecutive sources (phast)",
           phast.phast_batch(phast.upload(hierarchy.for_graph(g), np.float32),
                             np.arange(4096))[0])
    gen = generators.rmat(20, 8, seed=1)
    gr = mgapsp.as_graph(gen.csr())
    has = np.flatnonzero(np.diff(gr.indptr) > 0)
    src = np.sort(np.random.default_rng(7).choice(has, 2048, replace=False))
    yield ("R-MAT 2^20, 2,048 random sources (bellman-ford)",
           bellman_ford.bellman_ford_batch(device.upload_graph(gr, np.float32), src)[0])
    cupy.get_default_memory_pool().free_all_blocks()


def _encode_all(encoder, block, cr, cc, param, group_bytes):
    """Every chunk of ``block`` encoded in the writer's groups: (frames bytes, the last
    group's frames and starts)."""
    n = block.shape[1]
    n_chunks = -(-n // cc)
    g_max = max(1, group_bytes // (cr * cc * block.dtype.itemsize))
    total, last = 0, None
    for first in range(0, n_chunks, g_max):
        frames, starts = encoder(block, cr, cc, first, min(g_max, n_chunks - first),
                                 np.nan, param)
        total += int(starts[-1])
        last = (first, frames, starts)
    return total, last


def codec_part(repeats: int = 5) -> dict:
    import cupy

    from mgapsp.cuda import blosc, planes as gpu_planes
    from mgapsp.cuda.staging import FRAME_GROUP_BYTES, GPUTimer
    from mgapsp.plan import column_chunk
    from mgapsp.store import planes
    from numcodecs import Blosc

    rows = []
    for name, block in _blocks():
        block = cupy.ascontiguousarray(block)
        cr, n = block.shape
        cc = column_chunk(n, cr)
        raw = cr * (-(-n // cc) * cc) * 4
        row = {"rows": name, "shape": [cr, n], "chunk": [cr, cc], "raw_gb": raw / 1e9}
        for codec, encoder, param in (
                ("planes", gpu_planes.encode_chunks, planes.special_word(np.float32)),
                ("blosc-lz4", blosc.encode_chunks, 5)):
            _encode_all(encoder, block, cr, cc, param, FRAME_GROUP_BYTES)   # warm-up
            times = []
            for _ in range(repeats):
                timer = GPUTimer().start()
                size, (first, frames, starts) = _encode_all(encoder, block, cr, cc, param,
                                                            FRAME_GROUP_BYTES)
                times.append(timer.stop())
            t = statistics.median(times)
            # the last group's first chunk decodes on the CPU to its rows
            frame = frames[int(starts[0]):int(starts[1])].get()
            got = (planes.decode(frame) if codec == "planes"
                   else np.frombuffer(Blosc().decode(frame.tobytes()), dtype=np.uint8))
            got = got.view(np.float32).reshape(cr, cc)
            part = block[:, first * cc:(first + 1) * cc].get()
            exact = bool(np.array_equal(got[:, :part.shape[1]].view(np.uint32),
                                        part.view(np.uint32)))
            row[codec] = {"seconds": t, "gb_per_s": raw / t / 1e9, "ratio": raw / size,
                          "exact": exact}
            print(f"{name}: {codec} {raw / t / 1e9:.1f} GB/s, {raw / size:.2f}x, "
                  f"exact {exact}", flush=True)
            del frames
        rows.append(row)
        del block
    return {"codec": rows}


# -- jobs -----------------------------------------------------------------------------
_DONE = re.compile(r"done: ([\d,]+) rows in ([\d.]+) s \(([\d,]+) rows/s\)")


def run_job(graph: Path, out: Path, gpus: str, extra: list[str],
            env: dict | None = None) -> dict:
    cmd = [sys.executable, "-m", "mgapsp", "run", str(graph), "-o", str(out), "--gpus", gpus,
           "--overwrite", "--no-dashboard", "-q", *extra]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t
    done = _DONE.search(p.stdout)
    job = {"gpus": gpus, "args": extra, "rc": p.returncode, "wall_s": wall,
           "job_s": float(done.group(2)) if done else None,
           "rows_per_s": float(done.group(3).replace(",", "")) if done else None,
           "workers": workers(p.stdout),
           "summary": [line for line in p.stdout.splitlines() if line.startswith("  ")][:12],
           "store_bytes": sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
           if out.exists() else 0}
    if p.returncode == 0:
        v = subprocess.run([sys.executable, "-m", "mgapsp", "verify", str(out), "--samples",
                            "8"], capture_output=True, text=True, cwd=ROOT)
        job["verify"] = (v.stdout.strip().splitlines() or [""])[-1]
        job["verify_rc"] = v.returncode
    else:
        job["error"] = (p.stderr.strip().splitlines() or [""])[-1]
    print(f"{gpus} {' '.join(extra)}: rc {p.returncode}, job {job['job_s']} s, "
          f"{job['rows_per_s']} rows/s, wall {wall:.1f} s, store "
          f"{job['store_bytes'] / 2**30:.2f} GiB, verify {job.get('verify')}", flush=True)
    for w in job["workers"]:
        print("   ", w, flush=True)
    return job


def jobs_part(workdir: Path, gpu_sets: list[str], ny_sources: int, rmat_sources: int,
              ny_all: bool, compressions: list[str], save, env: dict) -> dict:
    """The jobs, each result passed to ``save`` as it comes (a job may outlast the
    device's command limit); ``env``: settings of every job (named in its label)."""
    note = "".join(f", {k}={v}" for k, v in env.items())
    workdir.mkdir(parents=True, exist_ok=True)
    n = mgapsp.read_graph(NY).n
    ny_src = workdir / "ny-sources.txt"
    ny_src.write_text("\n".join(str(s + 1) for s in _sources(n, ny_sources)))
    warm = workdir / "ny-warm.txt"
    warm.write_text("\n".join(str(s + 1) for s in _sources(n, 1024)))
    out = workdir / "job.zarr"
    jobs: list[dict] = []

    def add(job):
        job["job"] += note
        jobs.append(job)
        save({"jobs": jobs})

    # the first job compiles the kernels and builds the hierarchy beside the store
    run_job(NY, out, gpu_sets[0], ["--sources", str(warm), "--algorithm", "phast"])
    for gpus in gpu_sets:
        for comp in compressions:
            if ny_sources:
                add({"job": f"NY, {ny_sources:,} sources, phast, {comp}",
                     **run_job(NY, out, gpus, ["--sources", str(ny_src), "--algorithm",
                                               "phast", "--compression", comp], env)})
            if ny_all:
                add({"job": f"NY, every source, phast, {comp}",
                     **run_job(NY, out, gpus, ["--algorithm", "phast", "--compression",
                                               comp], env)})
    if rmat_sources:
        gen = generators.rmat(20, 8, seed=1)
        graph = workdir / "rmat20.gr"
        if not graph.exists():      # the same seed's file, from an earlier part
            generators.write_dimacs(gen, graph)
        src = workdir / "rmat-sources.txt"
        src.write_text("\n".join(str(s + 1) for s in _sources(gen.n, rmat_sources)))
        warm = workdir / "rmat-warm.txt"
        warm.write_text("\n".join(str(s + 1) for s in _sources(gen.n, 1024)))
        # Bellman-Ford's kernels compile in a job of their own, not in the first timed one
        run_job(graph, out, gpu_sets[0], ["--sources", str(warm), "--compression",
                                          compressions[0]])
        for gpus in gpu_sets:
            add({"job": f"R-MAT 2^20, {rmat_sources:,} sources, {compressions[0]}",
                 **run_job(graph, out, gpus, ["--sources", str(src), "--compression",
                                              compressions[0]], env)})
    shutil.rmtree(out, ignore_errors=True)
    # the disk's rate, on at most 16 GB of the same size of writes
    rate = disk_write_rate(workdir, min(max(j["store_bytes"] for j in jobs), 16e9))
    for j in jobs:
        j["disk_s"] = j["store_bytes"] / rate
    return {"jobs": jobs, "disk_gb_per_s": rate / 1e9}


# -- report ---------------------------------------------------------------------------
def scaling(jobs: list[dict]) -> list[str]:
    """Each job that ran on one GPU against itself on more: speed-up, and each worker's
    GPU busy, staging and computing seconds (the stage that bounds it)."""
    base = {j["job"]: j for j in jobs if "," not in j["gpus"] and j.get("job_s")}
    rows = []
    for j in sorted(jobs, key=lambda j: (j["job"], j["gpus"].count(","))):
        one = base.get(j["job"])
        if one is None or not j.get("job_s"):
            continue
        w = j["workers"]
        span = (lambda key: f"{min(x[key] for x in w):.2f}-{max(x[key] for x in w):.2f}")
        rows.append(f"| {j['job']} | {len(j['gpus'].split(','))} | {j['job_s']} | "
                    f"{one['job_s'] / j['job_s']:.2f}x | "
                    f"{min(x['busy'] for x in w)}-{max(x['busy'] for x in w)}% | "
                    f"{span('stage_s')} | {span('compute_s')} |")
    if not rows:
        return []
    return ["", "### Scaling: each job against itself on one GPU", "",
            "Per worker: GPU busy (every kernel of the worker against the job's wall "
            "time), staging (rows to stored bytes) and computing seconds, summed over "
            "its batches.", "",
            "| job | GPUs | job s | speed-up | GPU busy | staging s | computing s |",
            "|---|---|---|---|---|---|---|", *rows]


def report(parts: Path, out: Path) -> Path:
    merged: dict = {"jobs": []}
    for f in sorted(parts.glob("write-path-*.json")):
        part = json.loads(f.read_text())
        merged["jobs"] += part.pop("jobs", [])
        merged.update(part)
    if not merged["jobs"]:
        del merged["jobs"]
    gpu = merged.get("gpu", "GPU")
    count = int(merged.get("machine", "1").split()[0])
    lines = [f"# The write path: GPU codecs, and jobs on 1 to {count} GPUs ({gpu})", "",
             f"`python -m bench.write_path` on {merged.get('machine', '')}, "
             f"{merged.get('date', '')}.", ""]
    if "codec" in merged:
        lines += ["## Encoding a batch's chunks on the GPU (device time, median of 5)", "",
                  "| rows | chunk | planes GB/s | planes ratio | Blosc LZ4 GB/s | Blosc ratio |"
                  " exact |", "|---|---|---|---|---|---|---|"]
        for r in merged["codec"]:
            p, b = r["planes"], r["blosc-lz4"]
            lines.append(f"| {r['rows']} | {r['chunk'][0]} x {r['chunk'][1]} | "
                         f"{p['gb_per_s']:.1f} | {p['ratio']:.2f} | {b['gb_per_s']:.1f} | "
                         f"{b['ratio']:.2f} | {p['exact'] and b['exact']} |")
        lines.append("")
    if "jobs" in merged:
        lines += ["## Jobs (`mgapsp run`, a process each; the store on the local disk)", "",
                  f"The disk: {merged.get('disk_gb_per_s', 0):.2f} GB/s written and synced.",
                  "",
                  "| job | GPUs | job s | rows/s | wall s | store GiB | disk s | GPU busy |"
                  " verify |", "|---|---|---|---|---|---|---|---|---|"]
        for j in merged["jobs"]:
            if not j.get("disk_s") and merged.get("disk_gb_per_s"):
                # a part cut short before its own disk measurement: the machine's rate
                j["disk_s"] = j["store_bytes"] / (merged["disk_gb_per_s"] * 1e9)
            busy = ", ".join(f"{w['busy']}%" for w in j["workers"])
            lines.append(f"| {j['job']} | {j['gpus']} | {j['job_s']} | "
                         f"{j['rows_per_s'] or 0:,.0f} | {j['wall_s']:.1f} | "
                         f"{j['store_bytes'] / 2**30:.2f} | {j.get('disk_s', 0):.1f} | {busy} | "
                         f"{j.get('verify', j.get('error', ''))} |")
        lines += scaling(merged["jobs"])
        lines += ["", "Summaries:", ""]
        for j in merged["jobs"]:
            lines += [f"- {j['job']} on GPUs {j['gpus']}:", "", "  ```",
                      *("  " + s for s in j["summary"]), "  ```"]
    stem = f"write-path-{merged.get('date', 'undated')}-{gpu.replace(' ', '-')}-x{count}"
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (out / f"{stem}.json").write_text(json.dumps(merged, indent=1))
    return out / f"{stem}.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["codec", "jobs", "report"])
    ap.add_argument("--parts", type=Path, default=Path("write-path-parts"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--gpus", nargs="+", default=["0"])
    ap.add_argument("--ny-sources", type=int, default=32768)
    ap.add_argument("--ny-all", action="store_true")
    ap.add_argument("--rmat-sources", type=int, default=0)
    ap.add_argument("--compressions", nargs="+", default=["planes", "lz4"])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/write-path"))
    ap.add_argument("--tag", default="", help="a name for this part's file (jobs run in "
                    "several commands)")
    ap.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE",
                    help="settings of every job of this part, e.g. MGAPSP_STORE_THREADS=8")
    args = ap.parse_args()
    args.parts.mkdir(parents=True, exist_ok=True)
    if args.part == "report":
        print(report(args.parts, args.out))
        return
    import cupy

    head = {"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "machine": f"{cupy.cuda.runtime.getDeviceCount()} GPU(s), {os.cpu_count()} cores",
            "date": dt.date.today().isoformat()}
    def save(res):
        tag = f"-{args.tag}" if args.tag else ""
        (args.parts / f"write-path-{args.part}{tag}.json").write_text(
            json.dumps({**head, **res}, indent=1))

    if args.part == "codec":
        save(codec_part())
    else:
        save(jobs_part(args.workdir, args.gpus, args.ny_sources, args.rmat_sources,
                       args.ny_all, args.compressions, save,
                       dict(e.split("=", 1) for e in args.env)))


if __name__ == "__main__":
    main()
