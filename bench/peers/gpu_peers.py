"""The GPU single-source peers of bench/road_bench.py: Gunrock and ADDS.

Their binaries come from ``bench/peers/gunrock.sh`` and ``bench/peers/adds.sh``
(``prepare`` here, ``build`` on the device) under ``.peers/``.  This module writes a
:class:`mgapsp.Graph` in the format they read (Galois ``.gr`` v1, u32 weights), runs
one peer over a list of sources and returns its per-source seconds and the distance
rows of the first ``keep`` sources (float64, ``inf`` where unreached).

    from bench.peers import gpu_peers
    paths = gpu_peers.prepare(graph, sources, "/tmp/peers")
    secs, rows = gpu_peers.run_gunrock(paths, keep=8)
    secs, rows = gpu_peers.run_adds(paths, keep=8)

Times: Gunrock's is its enactor's (CUDA events around the frontier loop, what Gunrock
reports; the wall time of each whole call, allocation included, is in
``last_times["gunrock..."]``); ADDS's is the artifact's own: the mean of 8 runs of
each source, CUDA events around its delta-choosing probe and its kernels.

As a script, the one device call of the peers (after both ``build`` steps)::

    python3 -m bench.peers.gpu_peers --graph tests/data/NY.pace.gr.gz --sources 64 \
        --check 8 --json $OUT/gpu_peers.json

runs every peer on the same sources (a subsample of road_bench.py's 4,096), checks
the first ``--check`` rows of each against SciPy's Dijkstra, and prints a table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / ".peers"
BINARIES = {
    "gunrock-f32": PEERS / "gunrock" / "bin" / "gunrock_sssp_f32",
    "gunrock-i32": PEERS / "gunrock" / "bin" / "gunrock_sssp_i32",
    "adds": PEERS / "adds" / "bin" / "adds_sssp",
    "adds-tb127": PEERS / "adds" / "bin" / "adds_sssp_tb127",
}
# the raw per-source times of the latest run of each peer (for reports)
last_times: dict[str, dict] = {}


# -- input ---------------------------------------------------------------------------

def integer_weights(graph) -> np.ndarray:
    """The weights as uint32, or ValueError where they are not exact non-negative
    integers below 2**31 (both peers keep integer distances; ADDS in int32)."""
    w = np.asarray(graph.weights)
    if w.size and (w.min() < 0 or w.max() >= 2**31 or not np.array_equal(w, np.rint(w))):
        raise ValueError("the GPU peers take non-negative integer weights below 2**31")
    return w.astype(np.uint32)


def write_gr(graph, path) -> Path:
    """Write ``graph`` (its CSR as is: rows sorted, both directions of undirected
    inputs) as a Galois .gr v1 file with u32 edge values."""
    path = Path(path)
    n, m = graph.n, graph.m
    weights = integer_weights(graph)
    if n >= 2**31 - 1 or m >= 2**31 - 1:
        raise ValueError("the GPU peers take 32-bit vertex and edge ids")
    with open(path, "wb") as f:
        f.write(np.array([1, 4, n, m], dtype="<u8").tobytes())
        f.write(np.asarray(graph.indptr[1:], dtype="<u8").tobytes())
        f.write(np.asarray(graph.indices, dtype="<u4").tobytes())
        if m % 2:
            f.write(b"\0\0\0\0")
        f.write(weights.astype("<u4").tobytes())
    return path


def read_gr(path):
    """(indptr, indices, weights) of a .gr v1 file with 4-byte values (a check)."""
    raw = np.fromfile(path, dtype=np.uint8)
    version, size, n, m = np.frombuffer(raw[:32], dtype="<u8")
    assert version == 1 and size == 4
    n, m = int(n), int(m)
    off = 32
    ends = np.frombuffer(raw[off:off + 8 * n], dtype="<u8")
    off += 8 * n
    indices = np.frombuffer(raw[off:off + 4 * m], dtype="<u4")
    off += 4 * m + 4 * (m % 2)
    weights = np.frombuffer(raw[off:off + 4 * m], dtype="<u4")
    assert off + 4 * m == raw.size
    return np.concatenate([[0], ends]).astype(np.int64), indices, weights


def prepare(graph, sources, workdir) -> dict:
    """Write the graph (``graph.gr``, reused while its fingerprint matches) and the
    sources (0-based internal indices, ``sources.txt``) into ``workdir``."""
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    sources = np.asarray(sources, dtype=np.int64)
    if sources.size == 0 or sources.min() < 0 or sources.max() >= graph.n:
        raise ValueError("sources must be internal vertex indices 0 .. n-1")
    gr, stamp = work / "graph.gr", work / "graph.fingerprint"
    if not (gr.exists() and stamp.exists() and stamp.read_text() == graph.fingerprint):
        write_gr(graph, gr)
        stamp.write_text(graph.fingerprint)
    src = work / "sources.txt"
    src.write_text("".join(f"{s}\n" for s in sources))
    # float32 distances stay exact while every sum is below 2**24
    w_max = float(graph.weights.max()) if graph.m else 0.0
    return {"graph": gr, "sources": src, "work": work, "n": graph.n, "m": graph.m,
            "count": int(sources.size), "sources_array": sources,
            "f32_exact_bound": w_max * max(graph.n - 1, 0) < 2**24}


# -- runs ----------------------------------------------------------------------------

def _run(name, argv, paths, timeout):
    log = Path(paths["work"]) / f"{name}.log"
    t = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.run([str(a) for a in argv], stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout, cwd=paths["work"])
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{name} exited with {proc.returncode}; log {log}:\n{tail}")
    return wall, log


def _rows(path, n, keep, dtype, unreached):
    raw = np.fromfile(path, dtype=dtype)
    if raw.size != keep * n:
        raise RuntimeError(f"{path}: {raw.size} values, expected {keep} x {n}")
    rows = raw.reshape(keep, n).astype(np.float64)
    rows[raw.reshape(keep, n) == unreached] = np.inf
    return rows


def _keep(paths, keep):
    return paths["count"] if keep is None else max(0, min(int(keep), paths["count"]))


def run_gunrock(paths, *, weight="f32", keep=None, warmup=1, timeout=600, binary=None):
    """Gunrock's SSSP for every source of ``paths`` (from :func:`prepare`): the list of
    seconds per source (enactor time) and the rows of the first ``keep`` sources."""
    name = f"gunrock-{weight}"
    binary = binary or BINARIES[name]
    keep = _keep(paths, keep)
    work = Path(paths["work"])
    times, rows = work / f"{name}.times.tsv", work / f"{name}.rows.bin"
    wall, log = _run(name, [binary, paths["graph"], paths["sources"], times, rows,
                            "--keep", keep, "--warmup", warmup], paths, timeout)
    table = np.loadtxt(times, comments="#", ndmin=2)
    if len(table) != paths["count"]:
        raise RuntimeError(f"{times}: {len(table)} lines for {paths['count']} sources")
    last_times[name] = {"source": table[:, 0].astype(np.int64).tolist(),
                        "enact_s": (table[:, 1] * 1e-3).tolist(),
                        "call_wall_s": (table[:, 2] * 1e-3).tolist(),
                        "process_wall_s": wall, "log": str(log)}
    dtype, inf = ((np.float32, np.finfo(np.float32).max) if weight == "f32"
                  else (np.int32, np.iinfo(np.int32).max))
    return (table[:, 1] * 1e-3).tolist(), _rows(rows, paths["n"], keep, dtype, inf)


def run_adds(paths, *, variant="adds", keep=None, timeout=600, binary=None):
    """ADDS for every source of ``paths``: the list of seconds per source (the
    artifact's mean of 8 runs) and the rows of the first ``keep`` sources.
    ``variant``: "adds" (every persistent block the occupancy allows) or "adds-tb127"
    (the artifact's limit of 127 blocks)."""
    binary = binary or BINARIES[variant]
    keep = _keep(paths, keep)
    work = Path(paths["work"])
    times, rows = work / f"{variant}.times.txt", work / f"{variant}.rows.bin"
    wall, log = _run(variant, [binary, paths["graph"], paths["sources"], times, rows,
                               "--keep", keep], paths, timeout)
    lines = [ln.split() for ln in times.read_text().splitlines() if ln.strip()]
    if len(lines) != paths["count"]:
        raise RuntimeError(f"{times}: {len(lines)} lines for {paths['count']} sources")
    secs = [float(ln[1]) * 1e-3 for ln in lines]
    text = log.read_text(errors="replace")
    last_times[variant] = {"source": paths["sources_array"].tolist(), "mean_of_8_s": secs,
                           "work": [int(ln[2]) for ln in lines], "process_wall_s": wall,
                           "config": [ln for ln in text.splitlines()
                                      if ln.startswith("sm count")][:1],
                           "log": str(log)}
    return secs, _rows(rows, paths["n"], keep, np.int32, np.iinfo(np.int32).max)


# -- checks and the device call ------------------------------------------------------

def reference_rows(graph, sources):
    from scipy.sparse import csgraph
    return csgraph.dijkstra(graph.to_scipy(), directed=True, indices=np.asarray(sources))


def mismatches(rows, ref) -> int:
    """Entries of ``rows`` that differ from ``ref`` (exact: integer distances)."""
    return int(np.count_nonzero(~((rows == ref) | (np.isinf(rows) & np.isinf(ref)))))


def road_sources(n, count, seed=4):
    """``count`` of bench/road_bench.py's 4,096 sources (the same draw), sorted."""
    rng = np.random.default_rng(seed)
    many = np.sort(rng.choice(n, min(4096, n), replace=False))
    if count >= len(many):
        return many
    return np.sort(np.random.default_rng(seed + 1).choice(many, count, replace=False))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", default=str(ROOT / "tests" / "data" / "NY.pace.gr.gz"))
    parser.add_argument("--sources", type=int, default=64)
    parser.add_argument("--check", type=int, default=8, help="rows checked against SciPy")
    # adds (512 blocks) ran past 150 s on NY and rome99 on an H200 (2026-11-24): left
    # out unless named
    parser.add_argument("--peers", default="gunrock-f32,gunrock-i32,adds-tb127",
                        help="comma list of gunrock-f32, gunrock-i32, adds, adds-tb127")
    parser.add_argument("--work", default="/tmp/mgapsp-peers")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per peer")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import mgapsp

    graph = mgapsp.read_graph(args.graph)
    sources = road_sources(graph.n, args.sources)
    paths = prepare(graph, sources, args.work)
    check = min(args.check, len(sources))
    t = time.perf_counter()
    ref = reference_rows(graph, sources[:check])
    scipy_s = (time.perf_counter() - t) / max(check, 1)
    far = float(ref[np.isfinite(ref)].max()) if np.isfinite(ref).any() else 0.0
    print(f"{graph.name}: n {graph.n:,}, m {graph.m:,}, {len(sources)} sources, "
          f"SciPy Dijkstra {scipy_s * 1e3:.1f} ms a source; largest checked distance "
          f"{far:g} (float32 exact below 2**24)", flush=True)

    report = {"graph": str(args.graph), "n": graph.n, "m": graph.m,
              "sources": sources.tolist(), "scipy_dijkstra_s_per_source": scipy_s,
              "largest_checked_distance": far, "peers": {}}
    for peer in [p for p in args.peers.split(",") if p]:
        entry = {}
        try:
            if peer.startswith("gunrock"):
                secs, rows = run_gunrock(paths, weight=peer.split("-", 1)[1], keep=check,
                                         timeout=args.timeout)
            else:
                secs, rows = run_adds(paths, variant=peer, keep=check, timeout=args.timeout)
            key = peer
            bad = mismatches(rows, ref)
            entry = {"ok": bad == 0, "mismatches": bad, "checked_rows": check,
                     "median_s": statistics.median(secs), "mean_s": statistics.fmean(secs),
                     "min_s": min(secs), "total_s": sum(secs), **last_times[key]}
            print(f"{peer:26s} median {entry['median_s'] * 1e3:9.3f} ms  mean "
                  f"{entry['mean_s'] * 1e3:9.3f} ms  total {entry['total_s']:.3f} s  "
                  f"check {'ok' if bad == 0 else f'{bad} WRONG'}  "
                  f"(process {entry['process_wall_s']:.1f} s)", flush=True)
        except subprocess.TimeoutExpired:
            entry = {"ok": False, "error": f"timeout after {args.timeout} s"}
            print(f"{peer:26s} TIMEOUT after {args.timeout} s", flush=True)
        except Exception as exc:  # noqa: BLE001 - report and go on to the next peer
            entry = {"ok": False, "error": str(exc)[-3000:]}
            print(f"{peer:26s} FAILED: {str(exc)[-1500:]}", flush=True)
        report["peers"][peer] = entry
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0 if all(e.get("ok") for e in report["peers"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
