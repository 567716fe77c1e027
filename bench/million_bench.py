"""Graphs of a million vertices: what ``apsp`` in process and ``mgapsp run`` cost, and
whether ``auto`` picks as well as the best explicit choice.

    python -m bench.million_bench [--out bench] [--parts api,job] [--repeats 3]
                                  [--job-sources 8192]

The graphs are made here, seeded (``bench/generators.py``): R-MAT scale 20 (Graph500's
parameters, edge factor 8, weights 1..99) and a 1000 x 1000 grid with 10% of its edges
removed (weights 10..999).

- ``api``: ``mgapsp.apsp(graph, sources=k)`` returning a NumPy array (wall clock,
  median of ``--repeats`` after a first call of the same, reported apart), for ``auto`` and each
  explicit algorithm, and ``auto`` with ``dtype="float64"`` (what float32, checked
  batch by batch, saves); 4,096 sources of the R-MAT graph, 1,024 of the grid.
  SciPy's Dijkstra runs on a sample of the sources, scaled; every sampled row of
  every variant is compared with it.
- ``job``: ``python -m mgapsp run`` of the R-MAT graph written as DIMACS, into a
  store on the local disk, on every GPU this machine has: rows/s, GPU busy and write
  time per worker (the job's own summary), the store's size; rows checked with
  Graph500's SSSP validation (``bench/sssp_check.py``).

Writes ``million-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

from bench import generators, sssp_check
from bench.timing import first_then_median
import mgapsp
from mgapsp.backends import get_backend
from mgapsp.plan import plan_job

ROOT = Path(__file__).resolve().parents[1]

GRAPHS = {"rmat20": (lambda: generators.rmat(20, 8, seed=1), 4096),
          "grid1000": (lambda: generators.grid(1000, drop=0.1, seed=1), 1024)}
VARIANTS = [("auto", "auto"), ("bellman-ford", "auto"), ("dijkstra", "auto"),
            ("auto", "float64")]


def _sources(n: int, k: int, seed: int = 7) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(n, k, replace=False))


def scipy_rows(csr, rows: np.ndarray, sample: int):
    pick = np.sort(np.random.default_rng(1).choice(rows, min(sample, len(rows)),
                                                   replace=False))
    t = time.perf_counter()
    ref = csgraph.dijkstra(csr, indices=pick)
    return (time.perf_counter() - t) * len(rows) / len(pick), pick, ref


def api_part(repeats: int, sample: int) -> list[dict]:
    rows = []
    for name, (make, k) in GRAPHS.items():
        t = time.perf_counter()
        gen = make()
        csr = gen.csr()
        graph = mgapsp.as_graph(csr)
        setup_s = time.perf_counter() - t
        sources = _sources(gen.n, k)
        scipy_s, pick, ref = scipy_rows(csr, sources, sample)
        where = np.searchsorted(sources, pick)
        print(f"{name}: n={gen.n:,} m={gen.m:,}, made in {setup_s:.1f} s; SciPy "
              f"{scipy_s:.1f} s for {k} sources (sampled {len(pick)})", flush=True)
        for algorithm, dtype in VARIANTS:
            def call():
                return mgapsp.apsp(graph, sources=sources, algorithm=algorithm,
                                   dtype=dtype, backend="gpu")
            # the first call: kernels, the graph on the device, and the host's first
            # pages of a result of gigabytes (see bench/NOTES.md)
            seconds, first, times, out = first_then_median(call, repeats)
            exact = bool(np.array_equal(out[where].astype(np.float64), ref))
            plan = plan_job(graph, algorithm=algorithm, backend="gpu", dtype=dtype,
                            sources=sources, batch_size=None, predecessors=False,
                            n_workers=1, memory=get_backend("gpu").memory_available())
            r = {"graph": name, "n": gen.n, "m": gen.m, "sources": k,
                 "algorithm": algorithm, "dtype_asked": dtype, "ran": plan.algorithm,
                 "dtype": str(out.dtype), "checked32": plan.checked32,
                 "seconds": seconds, "runs": times, "first_s": first,
                 "scipy_s": scipy_s, "exact": exact}
            r["vs_scipy"] = scipy_s / r["seconds"]
            rows.append(r)
            print(f"  {algorithm:>12} {dtype:>7} -> {plan.algorithm} {out.dtype}: "
                  f"{r['seconds']:.2f} s ({r['vs_scipy']:.0f}x SciPy), exact {exact}",
                  flush=True)
            del out
    return rows


_BUSY = re.compile(r"(\S+): (\d+) batches, writing ([\d.]+) s \(staging ([\d.]+) s, "
                   r"files ([\d.]+) s[;)].*?, computing ([\d.]+) s.*?, GPU busy (\d+)%")


def workers(summary: str) -> list[dict]:
    """Each worker's line of a job's summary."""
    return [dict(worker=w, batches=int(b), write_s=float(ws), stage_s=float(st),
                 files_s=float(fs), compute_s=float(cs), busy=int(bz))
            for w, b, ws, st, fs, cs, bz in _BUSY.findall(summary)]


def job_part(n_sources: int, workdir: Path, variants: list[str]) -> list[dict]:
    gen = generators.rmat(20, 8, seed=1)
    graph_file = generators.write_dimacs(gen, workdir / "rmat20.gr")
    src = _sources(gen.n, n_sources)
    (workdir / "sources.txt").write_text("\n".join(str(s + 1) for s in src))
    # a fresh machine compiles the kernels on the first job of each dtype (CuPy's
    # cache on disk serves later processes): those first jobs are not timed
    for variant in dict.fromkeys(v.split("@")[0].partition(":")[0] for v in variants):
        one_job(gen, graph_file, workdir, n_sources, variant, warm_up=True)
    jobs = [one_job(gen, graph_file, workdir, n_sources, v) for v in variants]
    rate = disk_write_rate(workdir, max(j["store_gib"] for j in jobs) * 2**30)
    for j in jobs:
        j["disk_gb_per_s"] = rate / 1e9
        j["disk_s"] = j["store_gib"] * 2**30 / rate
    return jobs


def disk_write_rate(workdir: Path, nbytes: float) -> float:
    """Bytes/s this machine's disk takes ``nbytes`` at (under ``workdir``), written in
    64 MiB blocks and synced: what writing a store's bytes costs at the least."""
    block = np.random.default_rng(0).integers(0, 256, 64 << 20, dtype=np.uint8).tobytes()
    path = workdir / "disk-rate.bin"
    t = time.perf_counter()
    with open(path, "wb") as fh:
        for _ in range(max(1, int(nbytes // len(block)))):
            fh.write(block)
        fh.flush()
        os.fsync(fh.fileno())
    rate = path.stat().st_size / (time.perf_counter() - t)
    path.unlink()
    print(f"disk: {rate / 1e9:.2f} GB/s written and synced", flush=True)
    return rate


def ny_part(workdir: Path, n_sources: int = 32768) -> dict:
    """NY with ``n_sources`` sources by phast on one GPU: rows/s and GPU busy."""
    graph_file = ROOT / "tests" / "data" / "NY.pace.gr.gz"
    n = mgapsp.read_graph(graph_file).n
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0")
    runs = {}
    for name, k in (("warm-up", 1024), ("timed", n_sources)):
        src = workdir / f"ny-{k}.txt"
        src.write_text("\n".join(str(s + 1) for s in _sources(n, k)))
        cmd = [sys.executable, "-m", "mgapsp", "run", str(graph_file), "-o",
               str(workdir / "ny.zarr"), "--sources", str(src), "--algorithm", "phast",
               "--overwrite", "--no-dashboard"]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        runs[name] = p
    p = runs["timed"]
    print("\n".join(line for line in p.stdout.splitlines() if " rows (" not in line),
          p.stderr[-1000:], flush=True)
    done = re.search(r"done: ([\d,]+) rows in ([\d.]+) s \(([\d,]+) rows/s\)", p.stdout)
    return {"graph": "NY", "sources": n_sources, "rc": p.returncode,
            "job_s": float(done.group(2)) if done else None,
            "rows_per_s": float(done.group(3).replace(",", "")) if done else None,
            "workers": workers(p.stdout),
            "summary": p.stdout.splitlines()[-12:]}


def one_job(gen, graph_file: Path, workdir: Path, n_sources: int, variant: str,
            warm_up: bool = False) -> dict | None:
    """A job of ``variant``: a dtype, ``:compression`` where not the default, and
    ``@KEY=VALUE`` settings in its environment (Dask's ``DASK_MGAPSP__...``)."""
    spec, *settings = variant.split("@")
    dtype, _, compression = spec.partition(":")
    env = dict(os.environ, **dict(s.split("=", 1) for s in settings))
    out = workdir / "rmat20.zarr"
    sources = workdir / "sources.txt"
    if warm_up:
        sources = workdir / "warm.txt"
        sources.write_text("\n".join((workdir / "sources.txt").read_text().split()[:1024]))
    cmd = [sys.executable, "-m", "mgapsp", "run", str(graph_file), "-o", str(out),
           "--sources", str(sources), "--overwrite", "--no-dashboard", "--dtype", dtype,
           "--compression", compression or "lz4"]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - t
    if warm_up:
        print(f"warm-up job ({dtype}, 1,024 sources): exit {p.returncode} in {wall:.1f} s",
              flush=True)
        return None
    print("\n".join(line for line in p.stdout.splitlines() if " rows (" not in line),
          p.stderr[-1000:], flush=True)
    done = re.search(r"done: ([\d,]+) rows in ([\d.]+) s \(([\d,]+) rows/s\)", p.stdout)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    res = mgapsp.open(out)
    check = _sources(n_sources, 4, seed=3)
    labels = res.store.labels("source")[check]
    problems = sssp_check.check_rows(gen.csr(), labels - 1, res.distances(labels))
    return {"graph": "rmat20", "sources": n_sources, "dtype_asked": variant,
            "rc": p.returncode,
            "wall_s": wall, "job_s": float(done.group(2)) if done else None,
            "rows_per_s": float(done.group(3).replace(",", "")) if done else None,
            "workers": workers(p.stdout),
            "dtype": res.store.job["dtype"], "dtype_reason": res.store.job["dtype_reason"],
            "store_gib": size / 2**30, "graph500_check": problems or "ok",
            "summary": p.stdout.splitlines()[-12:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--parts", default="api,job")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--job-sources", type=int, default=8192)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--job-variants", default="auto,float64",
                    help="jobs to run: a dtype each, :zstd for that compression")
    args = ap.parse_args()
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    n_gpus = cupy.cuda.runtime.getDeviceCount()
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "gpu": gpu, "gpus": n_gpus, "cores": os.cpu_count()}
    parts = args.parts.split(",")
    if "api" in parts:
        result["api"] = api_part(args.repeats, args.sample)
    if "job" in parts:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="mgapsp-million-"))
        result["job"] = job_part(args.job_sources, work, args.job_variants.split(","))
    if "ny" in parts:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="mgapsp-ny-"))
        result["ny"] = ny_part(work)
    stem = (f"million-{dt.date.today().isoformat()}-{gpu.replace(' ', '-')}-"
            f"{n_gpus}x-{'-'.join(parts)}")
    Path(args.out, stem + ".json").write_text(json.dumps(result, indent=1, default=str))
    Path(args.out, stem + ".md").write_text(_markdown(result))
    print(_markdown(result))


def _worker_lines(j: dict) -> list[str]:
    return [f"- {w['worker']}: {w['batches']} batches, writing {w['write_s']} s (staging "
            f"{w['stage_s']} s, files {w['files_s']} s), computing {w['compute_s']} s, "
            f"GPU busy {w['busy']}%" for w in j["workers"]]


def _markdown(r: dict) -> str:
    lines = [f"# Million-vertex graphs ({r['date']}, {r['gpus']} x {r['gpu']}, "
             f"{r['cores']} cores)", ""]
    if "api" in r:
        lines += ["## apsp in process (one GPU)", "",
                  "| graph | sources | algorithm | dtype asked | ran | dtype | seconds | "
                  "first call | x SciPy | exact |", "|---|---|---|---|---|---|---|---|---|---|"]
        for a in r["api"]:
            lines.append(f"| {a['graph']} | {a['sources']:,} | {a['algorithm']} | "
                         f"{a['dtype_asked']} | {a['ran']} | {a['dtype']}"
                         f"{' (checked)' if a['checked32'] else ''} | {a['seconds']:.2f} | "
                         f"{a['first_s']:.2f} | "
                         f"{a['vs_scipy']:.0f} | {a['exact']} |")
        lines.append("")
    for j in r.get("job", []):
        lines += [f"## mgapsp run, R-MAT 2^20, {j['sources']:,} sources, "
                  f"{j['dtype_asked']}", "",
                  f"exit {j['rc']}; {j['job_s']} s, {j['rows_per_s']} rows/s; store "
                  f"{j['store_gib']:.2f} GiB, {j['dtype']} ({j['dtype_reason']}); "
                  f"Graph500 check of 4 rows: {j['graph500_check']}; the disk writes "
                  f"the store's bytes in {j['disk_s']:.1f} s ({j['disk_gb_per_s']:.2f} "
                  f"GB/s, synced): the job takes {j['job_s'] / j['disk_s']:.2f}x that", ""]
        lines += _worker_lines(j) + [""]
    if "ny" in r:
        j = r["ny"]
        lines += [f"## mgapsp run, NY, {j['sources']:,} sources, phast, one GPU", "",
                  f"exit {j['rc']}; {j['job_s']} s, {j['rows_per_s']} rows/s", ""]
        lines += _worker_lines(j) + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
