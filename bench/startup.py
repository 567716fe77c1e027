"""What a user waits for beyond the job itself: each command as a whole process.

Every command runs in turns with the baseline ``python -c "import numpy,
scipy.sparse.csgraph"`` (one warm-up pair, then ``--repeats`` pairs; medians).  A job's
own time is the "done: ... in X s" of its summary; its fixed cost is the wall time less
that, and the figure that counts is the fixed cost above the baseline's wall time.  One
more run of each job with ``-v`` keeps its fixed-cost line (where the seconds went).

Sets of commands (any together):

- ``--cli``: ``mgapsp --version`` and a one-line refusal of bad input;
- ``--cpu``: ``mgapsp run --backend cpu`` on rome99, p2p-Gnutella09 and Austin, each
  paired with a one-thread SciPy script computing the same rows (the peer);
- ``--gpu``: ``mgapsp run`` on one GPU (the first visible, as a host of one sees it),
  rome99 and p2p-Gnutella09;
- ``--multi-gpu 0,1,2,3``: NY by Bellman-Ford from 32,768 seeded sources on those GPUs;
- ``--in-process cpu,gpu``: ``apsp(g, backend=...)`` three times in a new process, run
  after an earlier process wrote the kernels' caches: the first call against the
  median of the others.

``--hide-gpu`` runs everything with no CUDA device visible.  Results go to
``bench/startup-<date>-<label>.{json,md}``.

    python -m bench.startup --cli --cpu --in-process cpu --label 2cores
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PY = sys.executable
BASELINE = [PY, "-c", "import numpy, scipy.sparse.csgraph"]
MGAPSP = [PY, "-m", "mgapsp"]
DONE = re.compile(r"done: ([\d,]+) rows in ([\d.]+) s")
FIXED = re.compile(r"^\s*fixed cost .*$", re.M)

SCIPY_SCRIPT = textwrap.dedent("""\
    import sys
    import numpy as np
    from scipy.sparse import csgraph
    import mgapsp
    g = mgapsp.read_graph(sys.argv[1])
    np.save(sys.argv[2], csgraph.dijkstra(g.to_scipy(), directed=True))
    """)

IN_PROCESS = textwrap.dedent("""\
    import json, sys, time
    import mgapsp
    g = mgapsp.read_graph(sys.argv[1])
    times = []
    for _ in range(int(sys.argv[3])):
        t = time.perf_counter()
        mgapsp.apsp(g, backend=sys.argv[2])
        times.append(time.perf_counter() - t)
    print(json.dumps(times))
    """)


CONTEXT = textwrap.dedent("""\
    import json, time
    t = time.perf_counter()
    import cupy
    t1 = time.perf_counter()
    cupy.cuda.runtime.memGetInfo()
    t2 = time.perf_counter()
    print(json.dumps({"cupy_import_s": t1 - t, "context_s": t2 - t1}))
    """)


def cores() -> int:
    return len(os.sched_getaffinity(0))


def run(cmd, env, expect_ok=True) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if expect_ok and p.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({p.returncode}): "
                         f"{p.stderr.strip()[-800:]}")
    if not expect_ok and p.returncode == 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} was expected to fail")
    return seconds, p.stdout + p.stderr


def paired(name: str, cmd, env, repeats: int, peer=None, job=False, expect_ok=True,
           before=None) -> dict:
    """``cmd`` in turns with the baseline (and with ``peer``, where given)."""
    others = {"baseline": BASELINE} | ({"peer": peer} if peer else {})
    if before:
        before()
    run(cmd, env, expect_ok)                    # warm-up: caches, page cache
    for other in others.values():
        run(other, env)
    walls, jobs = [], []
    other_walls = {k: [] for k in others}
    for _ in range(repeats):
        for key, other in others.items():
            other_walls[key].append(run(other, env)[0])
        if before:
            before()
        seconds, out = run(cmd, env, expect_ok)
        walls.append(seconds)
        if job:
            m = DONE.search(out)
            if not m:
                raise SystemExit(f"{name}: no 'done:' line in {out[-800:]}")
            jobs.append(float(m.group(2)))
    row = {"name": name, "command": " ".join(map(str, cmd[1:])),
           "wall_s": statistics.median(walls), "walls": walls,
           "baseline_s": statistics.median(other_walls["baseline"])}
    if job:
        fixed = [w - j for w, j in zip(walls, jobs)]
        row |= {"job_s": statistics.median(jobs), "fixed_s": statistics.median(fixed),
                "fixed_above_baseline_s": statistics.median(
                    f - b for f, b in zip(fixed, other_walls["baseline"]))}
        if before:
            before()
        wall_v, out = run(cmd[:len(MGAPSP)] + ["-v"] + cmd[len(MGAPSP):], env)
        m = FIXED.search(out)
        row["verbose"] = m.group(0).strip() if m else ""
        told = re.match(r"fixed cost ([\d.]+) s beside the job's ([\d.]+) s", row["verbose"])
        if told:
            # what the -v line cannot see: the process's exit after its last step
            row["after_command_s"] = wall_v - float(told.group(1)) - float(told.group(2))
    else:
        row["above_baseline_s"] = statistics.median(
            w - b for w, b in zip(walls, other_walls["baseline"]))
    if peer:
        row["peer_s"] = statistics.median(other_walls["peer"])
        row["peer_runs"] = other_walls["peer"]
        row["ratio_to_peer"] = row["peer_s"] / row["wall_s"]
    print(json.dumps({k: v for k, v in row.items() if not k.endswith(("walls", "runs"))}),
          flush=True)
    return row


def in_process(backend: str, graph: Path, env, tmp: Path) -> dict:
    script = tmp / "in_process.py"
    script.write_text(IN_PROCESS)
    run([PY, str(script), str(graph), backend, "1"], env)      # the caches written
    out = run([PY, str(script), str(graph), backend, "5"], env)[1]
    times = json.loads(out.strip().splitlines()[-1])
    row = {"name": f"in process, {backend}, {graph.name}", "first_s": times[0],
           "warm_s": statistics.median(times[1:]), "calls": times}
    row["first_above_warm_s"] = row["first_s"] - row["warm_s"]
    if backend == "gpu":
        # the floor of a first GPU call: CuPy imported, a CUDA context made
        row |= json.loads(run([PY, "-c", CONTEXT], env)[1].strip().splitlines()[-1])
    print(json.dumps(row), flush=True)
    return row


def ny_sources(tmp: Path, count: int) -> Path:
    import numpy as np

    n = 264_346
    ids = np.sort(np.random.default_rng(52).choice(n, size=count, replace=False)) + 1
    path = tmp / "ny-sources.txt"
    path.write_text("\n".join(map(str, ids)))
    return path


def markdown(meta: dict, rows: list[dict]) -> str:
    lines = [f"# Start-up: what a user waits for beyond the job ({meta['date']}, "
             f"{meta['label']})", "",
             f"`{meta['command']}`", "",
             f"Host: {meta['host']}.  Each command a whole process, in turns with the "
             f"baseline `python -c \"import numpy, scipy.sparse.csgraph\"`: one warm-up, "
             f"then the median of {meta['repeats']}.  Fixed cost: wall time less the job's "
             "own 'done in' time.", ""]
    jobs = [r for r in rows if "job_s" in r]
    if jobs:
        lines += ["| command | wall | job | fixed | baseline | fixed above baseline | "
                  "SciPy script | mgapsp / SciPy |", "|---|---|---|---|---|---|---|---|"]
        for r in jobs:
            peer = (f"{r['peer_s']:.2f} s | {r['ratio_to_peer']:.2f}x" if "peer_s" in r
                    else "- | -")
            lines.append(f"| {r['name']} | {r['wall_s']:.2f} s | {r['job_s']:.2f} s | "
                         f"{r['fixed_s']:.2f} s | {r['baseline_s']:.2f} s | "
                         f"**{r['fixed_above_baseline_s']:.2f} s** | {peer} |")
        lines += ["", "Where the fixed cost went (`-v`, one more run each):", ""]
        lines += [f"- {r['name']}: {r['verbose'].removeprefix('fixed cost ')}"
                  + (f"; then {r['after_command_s']:.2f} s to the process's exit"
                     if "after_command_s" in r else "") for r in jobs]
        lines.append("")
    plain = [r for r in rows if "above_baseline_s" in r]
    if plain:
        lines += ["| command | wall | baseline | above the baseline |", "|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['wall_s']:.2f} s | {r['baseline_s']:.2f} s | "
                  f"**{r['above_baseline_s']:.2f} s** |" for r in plain]
        lines.append("")
    calls = [r for r in rows if "first_s" in r]
    if calls:
        lines += ["| in a new process | first call | warm call (median) | first above warm |",
                  "|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['first_s']:.3f} s | {r['warm_s']:.3f} s | "
                  f"**{r['first_above_warm_s']:.3f} s** |" for r in calls]
        lines.append("")
        lines += [f"A new process's `import cupy` took {r['cupy_import_s']:.3f} s and its "
                  f"CUDA context {r['context_s']:.3f} s more (the first CUDA call)."
                  for r in calls if "context_s" in r]
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--multi-gpu", default=None, metavar="0,1,2,3")
    ap.add_argument("--ny-sources", type=int, default=32768)
    ap.add_argument("--in-process", default="", metavar="cpu,gpu")
    ap.add_argument("--hide-gpu", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--label", required=True, help="the host, in the results' names")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if args.hide_gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    date = datetime.date.today().isoformat()
    meta = {"date": date, "label": args.label, "repeats": args.repeats,
            "command": "python -m bench.startup " + " ".join(argv or sys.argv[1:]),
            "host": f"{cores()} cores" + (", GPU hidden" if args.hide_gpu else ""),
            "python": sys.version.split()[0]}
    stem = args.out / f"startup-{date}-{args.label}"
    rows: list[dict] = []

    def save():
        stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                        indent=1))
        stem.with_suffix(".md").write_text(markdown(meta, rows))

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store = tmp / "out.zarr"

        def clear():
            subprocess.run(["rm", "-rf", str(store)], check=True)

        def job(name, graph, *extra, peer=None, env=env):
            cmd = MGAPSP + ["-q", "run", str(graph), "-o", str(store), *extra]
            rows.append(paired(name, cmd, env, args.repeats, peer=peer, job=True,
                               before=clear))
            save()

        one_gpu = env | {"CUDA_VISIBLE_DEVICES": env.get("CUDA_VISIBLE_DEVICES",
                                                         "0").split(",")[0]}

        if args.cli:
            bad = tmp / "stray.tsv"
            bad.write_text("src dst w\n0 1 2.5\n1 2 x\n")
            rows.append(paired("mgapsp --version", MGAPSP + ["--version"], env,
                               args.repeats))
            rows.append(paired("refusal of a bad weight", MGAPSP + [
                "run", str(bad), "-o", str(store)], env, args.repeats, expect_ok=False))
            save()
        if args.cpu:
            script = tmp / "scipy_apsp.py"
            script.write_text(SCIPY_SCRIPT)
            for graph in ("rome99.gr", "p2p-Gnutella09.txt", "Austin_net.tntp"):
                peer = [PY, str(script), str(DATA / graph), str(tmp / "scipy.npy")]
                job(f"{graph}, cpu", DATA / graph, "--backend", "cpu", peer=peer)
        if args.gpu:
            # one GPU, as a host of one sees it (one worker, in this process)
            for graph in ("rome99.gr", "p2p-Gnutella09.txt"):
                job(f"{graph}, one GPU", DATA / graph, "--backend", "gpu", env=one_gpu)
        if args.multi_gpu:
            sources = ny_sources(tmp, args.ny_sources)
            job(f"NY, {args.ny_sources:,} sources, bellman-ford, --gpus {args.multi_gpu}",
                DATA / "NY.pace.gr.gz", "--sources", str(sources), "--algorithm",
                "bellman-ford", "--gpus", args.multi_gpu)
        for backend in filter(None, args.in_process.split(",")):
            rows.append(in_process(backend, DATA / "p2p-Gnutella09.txt",
                                   one_gpu if backend == "gpu" else env, tmp))
            save()
    print(stem.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
