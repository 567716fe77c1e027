"""The CPU backend against SciPy, all pairs, on this host's cores (issue 42).

    python3 -m bench.cpu_bench [--out bench/] [--repeats 3] [--cli-repeats 5]
                               [--graphs rome99,Austin,p2p-Gnutella09] [--data DIR ...]

For each graph (found in tests/data, then in each ``--data`` folder), in one run:

- ``scipy``: ``scipy.sparse.csgraph.dijkstra`` of every pair, in this process (one
  thread: SciPy's kernel has no other), median of ``--repeats`` after a warm-up;
- ``apsp``: ``mgapsp.apsp(graph, backend="cpu")`` in this process (the Numba kernels on
  every core once the job pays for them), median after a warm-up, checked equal to
  SciPy's answer element for element;
- ``script`` and ``cli``: start to exit of two fresh processes, taken in turn
  (script, cli, script, cli, ...) after one warm-up pair: a plain SciPy script that
  reads the graph with ``mgapsp.read_graph``, runs SciPy's Dijkstra on every pair and
  saves the ``.npy``; and ``mgapsp run GRAPH -o STORE --overwrite --backend cpu -q``.
  ``cli / script`` is the median of the pairs' ratios;
- ``networkit``: ``networkit.distance.APSP(...).run()`` on every thread, where
  ``import networkit`` works (the graph built beforehand, not timed).

And PHAST on a road network (``--phast NY``, ``--phast-sources`` 4,096 random
sources): the contraction hierarchy's build in this process (once, reported apart),
``apsp(..., algorithm="phast", backend="cpu")`` and ``algorithm="dijkstra"`` over the
sources (medians after a warm-up), against SciPy's Dijkstra timed on 64 of them and
scaled by the count (its cost per source does not depend on the others), those 64
rows checked equal.

Also, once: the seconds a fresh process takes to import Numba and load the kernels
from Numba's cache (``warm``), and to compile them into an empty cache (``cold``).
Writes ``cpu-<date>-<cores>cores.md`` and ``.json`` to ``--out`` and prints the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

from bench.timing import median_wall  # a warm-up, then the median
import mgapsp

ROOT = Path(__file__).resolve().parents[1]

GRAPHS = {"rome99": "rome99.gr", "Austin": "Austin_net.tntp",
          "p2p-Gnutella09": "p2p-Gnutella09.txt", "NY": "NY.pace.gr.gz"}
#: SciPy's sample of a PHAST row's sources
SCIPY_SAMPLE = 64
SCIPY_SCRIPT = textwrap.dedent("""\
    import sys
    import numpy as np
    from scipy.sparse import csgraph
    import mgapsp
    g = mgapsp.read_graph(sys.argv[1])
    np.save(sys.argv[2], csgraph.dijkstra(g.to_scipy(), directed=True))
    """)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def wall(cmd: list[str], env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   env=env, cwd=ROOT)
    return time.perf_counter() - t


def paired(a: list[str], b: list[str], repeats: int) -> dict:
    """Start-to-exit seconds of ``a`` and ``b`` run in turn, after one warm-up pair."""
    wall(b), wall(a)
    ta, tb = [], []
    for _ in range(repeats):
        tb.append(wall(b))
        ta.append(wall(a))
    return {"a_s": statistics.median(ta), "b_s": statistics.median(tb),
            "ratio": statistics.median(x / y for x, y in zip(ta, tb)),
            "a_runs": ta, "b_runs": tb}


def kernel_load_seconds() -> dict:
    """A fresh process's seconds to make the kernels ready: from Numba's cache, and
    compiling into an empty one."""
    code = "from mgapsp import cpu_sssp; print(cpu_sssp.warm_up())"
    run = [sys.executable, "-c", code]

    def seconds(env=None) -> float:
        out = subprocess.run(run, check=True, capture_output=True, text=True, env=env,
                             cwd=ROOT).stdout
        return float(out.split()[-1])

    seconds()                                # the cache filled
    warm = statistics.median(seconds() for _ in range(3))
    with tempfile.TemporaryDirectory() as cache:
        cold = seconds(dict(os.environ, NUMBA_CACHE_DIR=cache))
    return {"warm_s": warm, "cold_s": cold}


def networkit_seconds(g, repeats: int) -> dict | None:
    try:
        import networkit as nk
    except ImportError:
        return None
    nk.setNumberOfThreads(cores())
    G = nk.Graph(g.n, weighted=True, directed=True)
    G.addEdges((g.weights, (g.sources_of_edges.astype(np.uint64),
                            g.indices.astype(np.uint64))))

    def run():
        nk.distance.APSP(G).run()
    seconds, _ = median_wall(run, repeats)
    return {"seconds": seconds, "threads": nk.getMaxNumberOfThreads(),
            "version": nk.__version__}


def find(name: str, data: list[Path]) -> Path | None:
    for folder in [ROOT / "tests" / "data", *data]:
        hits = sorted(folder.rglob(GRAPHS.get(name, name)))
        if hits:
            return hits[0]
    return None


def bench_graph(name: str, path: Path, args, tmp: Path) -> dict:
    g = mgapsp.read_graph(path)
    row = {"graph": name, "file": str(path.relative_to(ROOT) if path.is_relative_to(ROOT)
                                         else path), "n": g.n, "m": g.m}
    print(f"{name}: n={g.n:,} m={g.m:,}", flush=True)
    csr = g.to_scipy()
    row["scipy_s"], ref = median_wall(lambda: csgraph.dijkstra(csr, directed=True),
                                      args.repeats)
    row["apsp_s"], got = median_wall(lambda: mgapsp.apsp(g, backend="cpu"), args.repeats)
    row["dtype"] = str(got.dtype)
    row["equal_to_scipy"] = bool(np.array_equal(got, ref.astype(got.dtype)))
    del got, ref
    script = tmp / "scipy_apsp.py"
    script.write_text(SCIPY_SCRIPT)
    cli = [sys.executable, "-m", "mgapsp", "-q", "run", str(path), "-o",
           str(tmp / "cli.zarr"), "--overwrite", "--backend", "cpu"]
    pair = paired(cli, [sys.executable, str(script), str(path), str(tmp / "scipy.npy")],
                  args.cli_repeats)
    row.update(cli_s=pair["a_s"], script_s=pair["b_s"], cli_over_script=pair["ratio"],
               cli_runs=pair["a_runs"], script_runs=pair["b_runs"])
    row["networkit"] = networkit_seconds(g, args.repeats)
    return row


def bench_phast(name: str, path: Path, args) -> dict:
    from mgapsp import hierarchy

    g = mgapsp.read_graph(path)
    print(f"{name}: n={g.n:,} m={g.m:,}, PHAST from {args.phast_sources:,} sources",
          flush=True)
    rng = np.random.default_rng(0)
    src = rng.choice(g.n, min(args.phast_sources, g.n), replace=False)
    t = time.perf_counter()
    hierarchy.for_graph(g)
    build_s = time.perf_counter() - t
    labels = g.labels[src]
    phast_s, got = median_wall(lambda: mgapsp.apsp(g, sources=labels, algorithm="phast",
                                                   backend="cpu"), args.repeats)
    dijkstra_s, _ = median_wall(lambda: mgapsp.apsp(g, sources=labels,
                                                    algorithm="dijkstra", backend="cpu"),
                                args.repeats)
    sample = src[:SCIPY_SAMPLE]
    csr = g.to_scipy()
    t = time.perf_counter()
    ref = csgraph.dijkstra(csr, directed=True, indices=sample)
    scipy_s = (time.perf_counter() - t) * len(src) / len(sample)
    return {"graph": name, "n": g.n, "m": g.m, "sources": len(src), "build_s": build_s,
            "phast_s": phast_s, "dijkstra_s": dijkstra_s, "scipy_s": scipy_s,
            "scipy_sample": len(sample), "dtype": str(got.dtype),
            "equal_to_scipy": bool(np.array_equal(got[:len(sample)],
                                                  ref.astype(got.dtype)))}


def phast_table(r: dict) -> str:
    return ("| graph | sources | hierarchy build (s) | phast cpu (s) | dijkstra cpu (s) "
            "| SciPy, 1 thread (s, scaled) | phast / SciPy | same as SciPy |\n"
            "|---|---|---|---|---|---|---|---|\n"
            f"| {r['graph']} | {r['sources']:,} | {r['build_s']:.2f} | {r['phast_s']:.3f} "
            f"| {r['dijkstra_s']:.3f} | {r['scipy_s']:.1f} "
            f"| {r['scipy_s'] / r['phast_s']:.1f}x "
            f"| {'yes' if r['equal_to_scipy'] else 'NO'} ({r['scipy_sample']} rows) |")


def table(rows: list[dict]) -> str:
    lines = ["| graph | n | m | SciPy, 1 thread (s) | apsp cpu in process (s) | speed-up "
             "| SciPy script (s) | mgapsp run (s) | run / script (paired) "
             "| NetworKit APSP (s) | same as SciPy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        nk = r["networkit"]
        nk_s = "not installed" if nk is None else f"{nk['seconds']:.3f}"
        lines.append(
            f"| {r['graph']} | {r['n']:,} | {r['m']:,} | {r['scipy_s']:.3f} "
            f"| {r['apsp_s']:.3f} ({r['dtype']}) | {r['scipy_s'] / r['apsp_s']:.2f}x "
            f"| {r['script_s']:.2f} | {r['cli_s']:.2f} | {r['cli_over_script']:.2f} "
            f"| {nk_s} "
            f"| {'yes' if r['equal_to_scipy'] else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cli-repeats", type=int, default=5)
    ap.add_argument("--graphs", default="rome99,Austin,p2p-Gnutella09")
    ap.add_argument("--phast", default="NY", help="a road graph for PHAST ('' for none)")
    ap.add_argument("--phast-sources", type=int, default=4096)
    ap.add_argument("--data", action="append", type=Path,
                    default=[Path("/work/shared/data")])
    args = ap.parse_args(argv)
    n_cores = cores()
    busy = [os.getloadavg()[0]]         # a shared host's other work shows here
    load = kernel_load_seconds()
    rows, missing = [], []
    with tempfile.TemporaryDirectory(prefix="cpu-bench-") as tmp:
        for name in args.graphs.split(","):
            path = find(name, args.data)
            if path is None:
                missing.append(name)
                continue
            rows.append(bench_graph(name, path, args, Path(tmp)))
        phast = None
        if args.phast:
            path = find(args.phast, args.data)
            if path is None:
                missing.append(args.phast)
            else:
                phast = bench_phast(args.phast, path, args)
    busy.append(os.getloadavg()[0])
    import numba
    nk = next((r["networkit"] for r in rows if r["networkit"]), None)
    meta = {"date": dt.date.today().isoformat(), "cores": n_cores,
            "cpu": platform.processor() or platform.machine(), "python": sys.version.split()[0],
            "numpy": np.__version__, "scipy": __import__("scipy").__version__,
            "numba": numba.__version__, "numba_threading_layer": _threading_layer(),
            "networkit": nk["version"] if nk else None, "kernel_load": load,
            "repeats": args.repeats, "cli_repeats": args.cli_repeats,
            "missing_graphs": missing, "load_average_start_end": busy}
    text = (f"# CPU backend, all pairs, {n_cores} cores ({meta['date']})\n\n"
            f"{table(rows)}\n\n"
            + (f"{phast_table(phast)}\n\n" if phast else "")
            + f"Seconds: medians; SciPy and apsp of {args.repeats} runs after a warm-up, "
            f"the script and `mgapsp run` start to exit, {args.cli_repeats} pairs run in "
            f"turn after a warm-up pair (the ratio: median of the pairs' ratios). "
            f"Kernels ready in a fresh process: {load['warm_s']:.2f} s from Numba's "
            f"cache, {load['cold_s']:.2f} s compiling into an empty one. "
            f"Numba {meta['numba']} ({meta['numba_threading_layer']}), SciPy "
            f"{meta['scipy']}, NumPy {meta['numpy']}, Python {meta['python']}"
            + (f", NetworKit {meta['networkit']} on {nk['threads']} threads" if nk else
               "; NetworKit not installed (pip install networkit to add it)")
            + (f". Not found: {', '.join(missing)}" if missing else "")
            + f". Load average (1 min) at the start and the end: {busy[0]:.1f}, "
            f"{busy[1]:.1f} on {n_cores} cores (other work on the host slows the "
            f"multi-core runs most).\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"cpu-{meta['date']}-{n_cores}cores"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows,
                                                     "phast": phast},
                                                    indent=1) + "\n")
    print(text)
    print(f"wrote {stem}.md and .json")
    return 0 if all(r["equal_to_scipy"] for r in rows + [phast or {"equal_to_scipy": True}]) \
        else 1


def _threading_layer() -> str:
    """The threading layer Numba's parallel kernels ran on in this process."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:          # no parallel kernel ran here
        return "none"


if __name__ == "__main__":
    sys.exit(main())
