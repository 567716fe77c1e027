"""Reading text edge lists: the peak memory and the time per record (issue 56, item 13).

    python -m bench.reader_memory [--out bench] [--gzip-gb 1.0] [--workdir DIR]

The files, made by seeded generators in ``--workdir`` (never committed):

- ``0 1`` lines: 16.8 million lines of ``0 1`` (64 MB), the file the issue measured;
- random: 16.8 million arcs ``u v`` between a million ids (SNAP, unweighted);
- random weighted: the same with weights 1..99;
- DIMACS: the same weighted arcs as ``a u v w`` under ``p sp`` (ids declared);
- gzip: random weighted arcs between ten million ids, gzip level 1, ``--gzip-gb`` GB.

Each is read by ``mgapsp.read_graph`` in a process of its own under ``/usr/bin/time
-v`` (peak resident size, wall time); bytes per record is the peak less that of a
process that imports mgapsp and reads a small graph, over the records.  The peer, in
the same run: ``pandas.read_csv`` (C engine) into a ``scipy.sparse`` CSR with the
minimum of parallel arcs, what a SciPy user would write.

Writes ``reader-memory-<date>-<cores>cores.{md,json}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RECORDS = 16_800_000

_MGAPSP = """
import sys, time
import mgapsp
t = time.perf_counter()
g = mgapsp.read_graph(sys.argv[1])
print("RESULT", time.perf_counter() - t, g.n, g.m)
"""

_PEER = """
import resource, sys, time
import numpy as np, pandas as pd, scipy.sparse as sp
# a peer that outgrows the machine fails alone, not the machine's other processes
resource.setrlimit(resource.RLIMIT_AS, (16 * 2**30, 16 * 2**30))
t = time.perf_counter()
path, skip, cols = sys.argv[1], int(sys.argv[2]), [int(c) for c in sys.argv[3].split(",")]
df = pd.read_csv(path, sep=" ", header=None, usecols=cols, skiprows=skip, engine="c")
src, dst = df[cols[0]].to_numpy(), df[cols[1]].to_numpy()
w = df[cols[2]].to_numpy(np.float64) if len(cols) > 2 else np.ones(len(df))
del df
ids, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
n, m = len(ids), len(src)
coo = sp.coo_array((w, (inv[:m], inv[m:])), shape=(n, n))
order = np.lexsort((coo.data, coo.col, coo.row))   # parallel arcs: the lightest
r, c, d = coo.row[order], coo.col[order], coo.data[order]
keep = np.r_[True, (r[1:] != r[:-1]) | (c[1:] != c[:-1])]
csr = sp.csr_array((d[keep], (r[keep], c[keep])), shape=(n, n))
print("RESULT", time.perf_counter() - t, n, csr.nnz)
"""


def _write_text(path: Path, frames, opener=open) -> Path:
    with opener(path, "wt") as fh:
        for head, df in frames:
            if head:
                fh.write(head)
            df.to_csv(fh, sep=" ", header=False, index=False)
    return path


def _arcs(rng, m: int, ids: int, weighted: bool, tag: bool = False) -> pd.DataFrame:
    cols = {}
    if tag:
        cols["a"] = np.full(m, "a")
    cols["u"] = rng.integers(0, ids, m) + (1 if tag else 0)
    cols["v"] = rng.integers(0, ids, m) + (1 if tag else 0)
    if weighted:
        cols["w"] = rng.integers(1, 100, m)
    return pd.DataFrame(cols)


def make_files(workdir: Path, gzip_gb: float) -> list[dict]:
    workdir.mkdir(parents=True, exist_ok=True)
    files = []
    short = workdir / "short-lines.txt"
    if not short.exists():
        short.write_bytes(b"0 1\n" * RECORDS)
    files.append({"name": "`0 1` lines (SNAP, 64 MB)", "path": short, "skip": 0,
                  "cols": "0,1", "records": RECORDS})
    for name, weighted in (("random", False), ("random-weighted", True)):
        path = workdir / f"{name}.txt"
        if not path.exists():
            _write_text(path, [("", _arcs(np.random.default_rng(1), RECORDS, 10**6,
                                          weighted))])
        files.append({"name": f"{name.replace('-', ' ')} arcs, a million ids (SNAP)",
                      "path": path, "skip": 0, "cols": "0,1,2" if weighted else "0,1",
                      "records": RECORDS})
    path = workdir / "random-weighted.gr"
    if not path.exists():
        _write_text(path, [(f"p sp {10**6} {RECORDS}\n",
                            _arcs(np.random.default_rng(1), RECORDS, 10**6, True, True))])
    files.append({"name": "the same weighted arcs (DIMACS, ids declared)", "path": path,
                  "skip": 1, "cols": "1,2,3", "records": RECORDS})
    if gzip_gb > 0:
        path = workdir / f"random-{gzip_gb:g}GB.txt.gz"
        records = 0
        if not (workdir / f"{path.name}.records").exists():   # (written last)
            rng = np.random.default_rng(2)
            with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb",
                                                        compresslevel=1) as gz, \
                    io.TextIOWrapper(gz) as fh:
                while raw.tell() < gzip_gb * 1e9:
                    df = _arcs(rng, 4_000_000, 10**7, True)
                    df.to_csv(fh, sep=" ", header=False, index=False)
                    fh.flush()
                    records += len(df)
            (workdir / f"{path.name}.records").write_text(str(records))
        records = int((workdir / f"{path.name}.records").read_text())
        files.append({"name": f"random weighted arcs, ten million ids, gzip "
                              f"({path.stat().st_size / 1e9:.2f} GB)",
                      "path": path, "skip": 0, "cols": "0,1,2", "records": records})
    return files


_RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")


def measure(code: str, *args) -> dict:
    p = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-c", code, *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = {"rc": p.returncode, "peak_bytes": int(_RSS.search(p.stderr).group(1)) * 1024}
    res = [line.split() for line in p.stdout.splitlines() if line.startswith("RESULT")]
    if res:
        out.update(seconds=float(res[0][1]), n=int(res[0][2]), m=int(res[0][3]))
    else:
        out["error"] = (p.stderr.strip().splitlines() or [""])[-1][:300]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--gzip-gb", type=float, default=1.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/reader-memory"))
    args = ap.parse_args(argv)
    files = make_files(args.workdir, args.gzip_gb)
    base = measure(_MGAPSP, ROOT / "tests" / "data" / "rome99.gr")["peak_bytes"]
    rows = []
    for f in files:
        ours = measure(_MGAPSP, f["path"])
        peer = measure(_PEER, f["path"], f["skip"], f["cols"])
        rows.append({**{k: str(v) if isinstance(v, Path) else v for k, v in f.items()},
                     "size": f["path"].stat().st_size, "mgapsp": ours, "peer": peer})
        print(f["name"], ours, peer, flush=True)
    date = dt.date.today().isoformat()
    stem = args.out / f"reader-memory-{date}-{os.cpu_count()}cores"
    stem.with_suffix(".json").write_text(json.dumps({"base_bytes": base, "rows": rows},
                                                    indent=1))
    lines = [f"# Reading text edge lists: peak memory and time ({os.cpu_count()} cores, "
             f"{date})", "",
             "`python -m bench.reader_memory`: each file read by `mgapsp.read_graph` in a "
             "process of its own under `/usr/bin/time -v`; bytes per record: the peak less "
             f"{base / 2**20:.0f} MiB (a process that imports mgapsp and reads rome99), "
             "over the records.  Peer, same run: `pandas.read_csv` (C engine) into a "
             "`scipy.sparse` CSR keeping the lightest of parallel arcs.", "",
             "| file | bytes | records | mgapsp peak | bytes per record | mgapsp s | "
             "peer peak | peer s | graph |", "|---|---|---|---|---|---|---|---|---|"]

    def gib(b):
        return f"{b / 2**30:.2f} GiB"

    def graph(o):
        return f"n={o['n']:,}, m={o['m']:,}" if "n" in o else o.get("error", "")
    for r in rows:
        o, p = r["mgapsp"], r["peer"]
        per = (o["peak_bytes"] - base) / r["records"]
        lines.append(
            f"| {r['name']} | {r['size']:,} | {r['records']:,} | {gib(o['peak_bytes'])} | "
            f"{per:.0f} | {o.get('seconds', 0):.1f} | {gib(p['peak_bytes'])} | "
            f"{p.get('seconds', 0):.1f} | "
            f"{graph(o)} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(stem.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
