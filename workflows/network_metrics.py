"""Network metrics of a graph, and a picture of them: closeness and harmonic centrality
and eccentricity of every vertex, the most central vertices, and a PNG with the
centrality ranking, the eccentricities and the distribution of distances.

    python workflows/network_metrics.py tests/data/rome99.gr metrics.png

No n x n matrix is made: each vertex's row of distances is reduced where it is
computed.  The distribution of distances is drawn from the rows of ``--sample``
random sources (every source where the graph has fewer), and says so.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import mgapsp
from mgapsp.metrics import reversed_graph, row_metrics


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("png")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    parser.add_argument("--sample", type=int, default=256,
                        help="sources whose rows draw the distribution of distances")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        g = mgapsp.read_graph(args.graph)
        closeness = mgapsp.closeness_centrality(g, backend=args.backend)
        harmonic = mgapsp.harmonic_centrality(g, backend=args.backend)
        # eccentricity among the vertices each one reaches (NetworkX's needs them all)
        out = row_metrics(g, backend=args.backend)
        rng = np.random.default_rng(0)
        pick = g.labels[np.sort(rng.choice(g.n, min(args.sample, g.n), replace=False))]
        rows = np.asarray(mgapsp.apsp(g, sources=pick, backend=args.backend), dtype=float)
    except mgapsp.MgapspError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    labels = g.labels.tolist()
    c = np.array([closeness[v] for v in labels])
    order = np.argsort(-c, kind="stable")
    print(f"{g.name}: n={g.n:,} m={g.m:,} {'directed' if g.directed else 'undirected'}")
    print(f"most central by closeness{' (into each vertex)' if g.directed else ''}:")
    for k in order[:args.top]:
        print(f"  {labels[k]!s:>10}  closeness {c[k]:.6g}  harmonic {harmonic[labels[k]]:.6g}"
              f"  eccentricity {out['eccentricity'][k]:g}")
    reached = out["reachable"]
    print(f"every vertex reaches {reached.min():,} to {reached.max():,} vertices; "
          f"largest eccentricity {out['eccentricity'].max():g}")
    finite = rows[np.isfinite(rows) & (rows > 0)]
    _plot(args.png, g, c[order], out["eccentricity"], finite, len(pick))
    print(f"wrote {args.png}")
    return 0


def _plot(path, g, ranked, ecc, distances, n_rows) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    ax[0].plot(np.arange(1, len(ranked) + 1), ranked)
    ax[0].set(xscale="log", xlabel="rank", ylabel="closeness",
              title="closeness, by rank")
    ax[1].hist(ecc, bins=50)
    ax[1].set(xlabel="eccentricity (among reached vertices)", ylabel="vertices",
              title="eccentricity")
    ax[2].hist(distances, bins=60)
    ax[2].set(xlabel="distance", ylabel="pairs",
              title=f"distances from {n_rows:,} sampled sources")
    fig.suptitle(f"{g.name}: {g.n:,} vertices, {g.m:,} arcs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
