"""Closeness and harmonic centrality of every vertex without the n x n matrix: mgapsp on
one GPU against NetworKit's exact ``Closeness`` and ``HarmonicCloseness`` on every
core of this machine, in the same run.

    python bench/metrics_bench.py [--out bench] [--repeats 2]

Graphs (``bench/generators.py``, seeded): R-MAT scale 16 (edge factor 8, weights
1..99, directed) and a 256 x 256 grid with 10% of its edges removed (weights 10..999,
undirected).  mgapsp: wall clock of ``mgapsp.closeness_centrality(graph,
distance="weight")`` (and ``harmonic_centrality``), the median of ``--repeats`` after
a first call.  NetworKit: one run each (they take tens of seconds).  On the
undirected grid the two definitions agree and every value is compared.  Writes
``metrics-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import generators  # noqa: E402
import mgapsp  # noqa: E402
from timing import first_then_median  # noqa: E402

BACKEND = "gpu"
#: NetworKit's algorithms to run (each takes tens of seconds to minutes)
PEER_METRICS = ("closeness", "harmonic")
GRAPHS = {"rmat16": lambda: generators.rmat(16, 8, seed=1),
          "grid256": lambda: generators.grid(256, drop=0.1, seed=1)}


def _networkit(gen, directed: bool, metrics=("closeness", "harmonic")):
    import networkit as nk

    G = nk.Graph(gen.n, weighted=True, directed=directed)
    keep = np.ones(gen.m, dtype=bool) if directed else gen.tail < gen.head
    for u, v, w in zip(gen.tail[keep].tolist(), gen.head[keep].tolist(),
                       gen.weight[keep].tolist()):
        G.addEdge(u, v, float(w))
    out = {}
    makers = {"closeness": lambda: nk.centrality.Closeness(
                  G, True, nk.centrality.ClosenessVariant.GENERALIZED),
              "harmonic": lambda: nk.centrality.HarmonicCloseness(G, False)}
    for name in metrics:
        make = makers[name]
        algo = make()
        t = time.perf_counter()
        algo.run()
        out[name] = (time.perf_counter() - t, np.asarray(algo.scores()))
    return out


def one_graph(name: str, repeats: int) -> dict:
    gen = GRAPHS[name]()
    directed = name.startswith("rmat")
    graph = mgapsp.Graph(*_csr(gen), directed=directed, name=name)
    row = {"graph": name, "n": gen.n, "m": gen.m, "directed": directed}
    for metric, fn in (("closeness", mgapsp.closeness_centrality),
                       ("harmonic", mgapsp.harmonic_centrality)):
        sec, first, _, out = first_then_median(
            lambda fn=fn: fn(graph, distance="weight", backend=BACKEND), repeats)
        row[f"{metric}_s"], row[f"{metric}_first_s"] = sec, first
        row[f"{metric}_values"] = np.array(list(out.values()))
        print(f"{name} {metric}: {sec:.3f} s (first {first:.3f} s)", flush=True)
    peer = _networkit(gen, directed, PEER_METRICS)
    for metric, (sec, scores) in peer.items():
        row[f"networkit_{metric}_s"] = sec
        row[f"vs_networkit_{metric}"] = sec / row[f"{metric}_s"]
        if not directed:
            ours = row[f"{metric}_values"]
            row[f"{metric}_max_rel_diff"] = float(np.max(np.abs(ours - scores) /
                                                         np.maximum(np.abs(scores), 1e-300)))
        print(f"{name} NetworKit {metric}: {sec:.1f} s "
              f"({row[f'vs_networkit_{metric}']:.0f}x)", flush=True)
    for metric in ("closeness", "harmonic"):
        del row[f"{metric}_values"]
    return row


def _csr(gen):
    m = gen.csr()
    return m.indptr, m.indices, m.data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--peer-metrics", default="closeness,harmonic")
    args = ap.parse_args()
    global PEER_METRICS
    PEER_METRICS = tuple(args.peer_metrics.split(","))
    import cupy

    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "gpu": gpu, "cores": os.cpu_count(),
         "graphs": [one_graph(g, args.repeats) for g in GRAPHS]}
    stem = f"metrics-{dt.date.today().isoformat()}-{gpu.replace(' ', '-')}"
    Path(args.out, stem + ".json").write_text(json.dumps(r, indent=1, default=str))
    lines = [f"# Closeness and harmonic centrality of every vertex ({r['date']}, {gpu}, "
             f"NetworKit on {r['cores']} cores)", "",
             "| graph | n | arcs | metric | mgapsp s (first call) | NetworKit s | x | "
             "max rel. diff |", "|---|---|---|---|---|---|---|---|"]
    for g in r["graphs"]:
        for metric in ("closeness", "harmonic"):
            diff = g.get(f"{metric}_max_rel_diff")
            peer = g.get(f"networkit_{metric}_s")
            lines.append(f"| {g['graph']} | {g['n']:,} | {g['m']:,} | {metric} | "
                         f"{g[f'{metric}_s']:.3f} ({g[f'{metric}_first_s']:.3f}) | "
                         + (f"{peer:.1f} | {g[f'vs_networkit_{metric}']:.0f} | "
                            if peer else "not run | - | ")
                         + f"{'-' if diff is None else f'{diff:.1e}'} |")
    Path(args.out, stem + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
