"""How a job's speed follows the graph's size: rows/s and GPU busy of ``mgapsp run``
from 2**16 to 2**22 vertices (R-MAT and grids), on one GPU and on every GPU of this
machine, with SciPy's Dijkstra on the same graphs (sampled); and, from the measured
slices, what the full APSP of a 2**20-vertex graph would take on 8 GPUs.

    python -m bench.scale_report [--out bench] [--scales 16,18,20,22]
    python -m bench.scale_report --plot bench/scale-<date>-<gpu>.json   # the PNG

Graphs (``bench/generators.py``, seeded): R-MAT of each scale (edge factor 8, weights
1..99) and square grids of as many vertices with 10% of their edges removed (weights
10..999).  Each job computes a slice of the rows (:data:`SLICES`: a few seconds of
work) into a store on the local disk, with the defaults (``auto``, float32 checked,
lz4); the job's own summary gives rows/s, GPU busy per worker and the store's bytes.
SciPy: ``csgraph.dijkstra`` from 4 sampled sources on one core, its rows/s.

The extrapolation assumes rows cost the same whichever slice they are in (the sources
are drawn at random) and that 8 GPUs scale from 2 as 1 scaled to 2 on this machine:
rows/s(8) = rows/s(2) * 4 * e, e = rows/s(2) / (2 * rows/s(1)).  Bytes are the slice's
store bytes per row times n; the disk bandwidth needed is those bytes over that time.

Writes ``scale-<date>-<gpu>.md`` and ``.json`` to ``--out``; ``--plot`` draws
``.png`` beside a results file (on a machine with Matplotlib).
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

from bench import generators
from bench.million_bench import _BUSY

ROOT = Path(__file__).resolve().parents[1]

#: rows a job computes, by family and scale: a few seconds of work each
SLICES = {"rmat": {10: 1024, 12: 1024, 16: 16384, 17: 16384, 18: 8192, 19: 8192, 20: 4096, 21: 2048,
                   22: 1024},
          "grid": {10: 1024, 12: 1024, 16: 4096, 17: 2048, 18: 1024, 19: 512, 20: 256, 21: 128, 22: 64}}
_DONE = re.compile(r"done: ([\d,]+) rows in ([\d.]+) s \(([\d,]+) rows/s\)")


def make(family: str, scale: int):
    if family == "rmat":
        return generators.rmat(scale, 8, seed=1)
    return generators.grid(int(round(2 ** (scale / 2))), drop=0.1, seed=1)


def job(graph_file: Path, sources: Path, out: Path, gpus: int) -> dict:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(map(str, range(gpus))))
    cmd = [sys.executable, "-m", "mgapsp", "run", str(graph_file), "-o", str(out),
           "--sources", str(sources), "--overwrite", "--no-dashboard"]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - t
    done = _DONE.search(p.stdout)
    if p.returncode or not done:
        print(p.stdout[-2000:], p.stderr[-2000:], flush=True)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    graph_bytes = sum(f.stat().st_size for f in (out / "graph").rglob("*") if f.is_file())
    busy = [int(b) for *_, b in _BUSY.findall(p.stdout)]
    return {"gpus": gpus, "rc": p.returncode, "wall_s": wall,
            "job_s": float(done.group(2)) if done else None,
            "rows_per_s": float(done.group(3).replace(",", "")) if done else None,
            "busy": busy, "store_bytes": size - graph_bytes,
            "algorithm": re.search(r"job: (\S+) on", p.stdout).group(1)
            if "job: " in p.stdout else None,
            "dtype": re.search(r"job: \S+ on \S+, (\w+)", p.stdout).group(1)
            if "job: " in p.stdout else None}


def job_sources(gen, family: str, scale: int) -> np.ndarray:
    k = min(SLICES[family][scale], gen.n)
    return np.sort(np.random.default_rng(7).choice(gen.n, k, replace=False))


def scipy_rate(gen, sources: np.ndarray, sample: int = 8) -> float:
    """SciPy's rows/s on ``sample`` of the job's own ``sources`` (an R-MAT graph's
    sources without arcs cost SciPy nothing: drawn from the same mix)."""
    from scipy.sparse import csgraph

    csr = gen.csr()
    pick = np.random.default_rng(1).choice(sources, min(sample, len(sources)),
                                           replace=False)
    t = time.perf_counter()
    csgraph.dijkstra(csr, indices=pick)
    return len(pick) / (time.perf_counter() - t)


def rescore_scipy(path: Path) -> Path:
    """A results file's SciPy rates measured again (on this machine: run it where the
    jobs ran), each on the job's own sources."""
    r = json.loads(Path(path).read_text())
    for g in r["rows"]:
        gen = make(g["family"], g["scale"])
        g["scipy_rows_per_s"] = scipy_rate(gen, job_sources(gen, g["family"], g["scale"]))
        print(f"{g['family']} 2^{g['scale']}: SciPy {g['scipy_rows_per_s']:.2f} rows/s",
              flush=True)
    return redo(r, Path(path).parent)


def redo(r: dict, out: Path) -> Path:
    """A results file's tables written again from its measurements."""
    r["extrapolation"] = extrapolate(r["rows"])
    return write(r, out)


def run(scales: list[int], workdir: Path, n_gpus: int, rows: list) -> list[dict]:
    """Each graph's jobs, appended to ``rows`` as they end."""
    for scale in scales:            # every family at a size before the next size
        for family in ("rmat", "grid"):
            t = time.perf_counter()
            gen = make(family, scale)
            graph_file = generators.write_dimacs(gen, workdir / f"{family}{scale}.gr")
            src = job_sources(gen, family, scale)
            k = len(src)
            sources = workdir / "sources.txt"
            sources.write_text("\n".join(str(s + 1) for s in src))
            made = time.perf_counter() - t
            r = {"family": family, "scale": scale, "n": gen.n, "m": gen.m,
                 "sources": k, "made_s": made, "scipy_rows_per_s": scipy_rate(gen, src),
                 "jobs": []}
            for gpus in sorted({1, n_gpus}):
                out = workdir / f"{family}{scale}-{gpus}.zarr"
                j = job(graph_file, sources, out, gpus)
                r["jobs"].append(j)
                print(f"{family} 2^{scale} ({gen.n:,} vertices, {gen.m:,} arcs), {k:,} "
                      f"rows on {gpus} GPU(s): {j['rows_per_s']} rows/s, busy "
                      f"{j['busy']}, {j['algorithm']} {j['dtype']}, store "
                      f"{j['store_bytes'] / 2**20:.0f} MiB; SciPy "
                      f"{r['scipy_rows_per_s']:.2f} rows/s", flush=True)
                subprocess.run(["rm", "-rf", str(out)])
            rows.append(r)
            graph_file.unlink()
    return rows


def extrapolate(rows: list[dict], scale: int = 20, gpus: int = 8) -> list[dict]:
    """The full APSP of each 2**scale graph on ``gpus`` GPUs, from its slices."""
    out = []
    for r in rows:
        jobs = {j["gpus"]: j for j in r["jobs"] if j["rows_per_s"]}
        if r["scale"] != scale or 1 not in jobs or len(jobs) < 2:
            continue
        two = max(jobs)
        eff = jobs[two]["rows_per_s"] / (two * jobs[1]["rows_per_s"])
        rate = jobs[two]["rows_per_s"] * gpus / two * eff
        seconds = r["n"] / rate
        total = jobs[two]["store_bytes"] / r["sources"] * r["n"]
        out.append({"family": r["family"], "n": r["n"], "gpus": gpus,
                    "scaling_efficiency": eff, "rows_per_s": rate, "hours": seconds / 3600,
                    "store_tib": total / 2**40, "disk_gb_per_s": total / seconds / 1e9,
                    "scipy_core_days": r["n"] / r["scipy_rows_per_s"] / 86400})
    return out


def write(r: dict, out: Path) -> Path:
    stem = f"scale-{r['date'][:10]}-{r['gpu'].replace(' ', '-')}"
    path = out / (stem + ".json")
    path.write_text(json.dumps(r, indent=1))
    lines = [f"# Rows/s against graph size ({r['date']}, {r['gpus']} x {r['gpu']}, "
             f"SciPy on one core)", "",
             "| graph | vertices | arcs | rows | GPUs | algorithm, dtype | rows/s | "
             "GPU busy % | store MiB | SciPy rows/s | x SciPy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in r["rows"]:
        for j in g["jobs"]:
            rate = j["rows_per_s"] or 0
            lines.append(f"| {g['family']} 2^{g['scale']} | {g['n']:,} | {g['m']:,} | "
                         f"{g['sources']:,} | {j['gpus']} | {j['algorithm']}, {j['dtype']} | "
                         f"{rate:,.0f} | {', '.join(map(str, j['busy']))} | "
                         f"{j['store_bytes'] / 2**20:,.0f} | "
                         f"{g['scipy_rows_per_s']:.2f} | "
                         f"{rate / g['scipy_rows_per_s']:,.0f} |")
    if r.get("interrupted"):
        lines += ["", "The run reached its time limit before the next graph (the device "
                  "call's limit): the sizes not listed were not measured."]
    lines += ["", "Full APSP of the 2^20-vertex graphs on 8 GPUs, extrapolated from the "
              "slices above:", "",
              "| graph | scaling 1 to 2 GPUs | rows/s on 8 | hours | store TiB | "
              "disk GB/s needed | SciPy core-days |", "|---|---|---|---|---|---|---|"]
    for e in r["extrapolation"]:
        lines.append(f"| {e['family']} ({e['n']:,}) | {e['scaling_efficiency']:.2f} | "
                     f"{e['rows_per_s']:,.0f} | {e['hours']:.2f} | {e['store_tib']:.2f} | "
                     f"{e['disk_gb_per_s']:.2f} | {e['scipy_core_days']:.1f} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return path


def plot(path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = json.loads(Path(path).read_text())
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for family, marker in (("rmat", "o"), ("grid", "s")):
        rows = [g for g in r["rows"] if g["family"] == family]
        n = [g["n"] for g in rows]
        for gpus, style in ((1, "-"), (r["gpus"], "--")):
            rate = [next((j["rows_per_s"] for j in g["jobs"] if j["gpus"] == gpus), None)
                    for g in rows]
            busy = [np.mean(next((j["busy"] for j in g["jobs"] if j["gpus"] == gpus), [0])
                            or [0]) for g in rows]
            ax.plot(n, rate, style, marker=marker, label=f"{family}, {gpus} GPU(s)")
            bx.plot(n, busy, style, marker=marker, label=f"{family}, {gpus} GPU(s)")
        ax.plot(n, [g["scipy_rows_per_s"] for g in rows], ":", marker=marker,
                color="gray", label=f"{family}, SciPy (1 core)")
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.set_xlabel("vertices")
        a.grid(alpha=0.3)
    ax.set_yscale("log")
    ax.set_ylabel("rows/s (each row: distances to every vertex)")
    bx.set_ylabel("GPU busy, % of the job (mean over workers)")
    bx.set_ylim(0, 100)
    ax.legend(fontsize=7)
    fig.suptitle(f"mgapsp run, {r['gpu']} ({r['date'][:10]})")
    fig.tight_layout()
    png = Path(path).with_suffix(".png")
    fig.savefig(png, dpi=110)
    return png


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--scales", default="16,18,20,22")
    ap.add_argument("--plot", default=None, help="draw the PNG of a results file")
    ap.add_argument("--rescore-scipy", default=None,
                    help="measure a results file's SciPy rates again")
    ap.add_argument("--tables", default=None,
                    help="write a results file's tables again (no measurement)")
    args = ap.parse_args()
    if args.plot:
        print(plot(Path(args.plot)))
        return
    if args.rescore_scipy:
        print(rescore_scipy(Path(args.rescore_scipy)))
        return
    if args.tables:
        print(redo(json.loads(Path(args.tables).read_text()), Path(args.tables).parent))
        return
    import cupy

    n_gpus = cupy.cuda.runtime.getDeviceCount()
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
         "gpus": n_gpus, "cores": os.cpu_count()}
    r["rows"] = []
    try:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
            run([int(s) for s in args.scales.split(",")], Path(d), n_gpus, r["rows"])
    except KeyboardInterrupt:       # out of time (timeout -s INT): what was measured
        r["interrupted"] = True
    r["extrapolation"] = extrapolate(r["rows"])
    write(r, Path(args.out))


if __name__ == "__main__":
    main()
