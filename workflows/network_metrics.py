"""Network metrics of a graph, and a picture of them: closeness and harmonic centrality
and eccentricity of every vertex, the most central vertices, and a PNG with the
centrality ranking, the eccentricities and the distribution of distances.

    python workflows/network_metrics.py tests/data/rome99.gr metrics.png

No n x n matrix is made: each vertex's row of distances is reduced where it is
computed, the distribution of distances counted there too, over every pair
(:func:`mgapsp.distance_histogram`'s fixed bins).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import mgapsp
from mgapsp.metrics import row_metrics
from mgapsp.reductions import distance_histogram


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("png")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        g = mgapsp.read_graph(args.graph)
        closeness = mgapsp.closeness_centrality(g, backend=args.backend)
        harmonic = mgapsp.harmonic_centrality(g, backend=args.backend)
        # eccentricity among the vertices each one reaches (NetworkX's needs them all),
        # and the distances' histogram, from the same rows
        out = row_metrics(g, backend=args.backend, histogram=True)
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
    hist = distance_histogram(out["histogram"], int(g.n * g.n - reached.sum()),
                              integral=g.integral_weights)
    print(f"{hist.pairs - hist.unreachable:,} of {hist.pairs:,} ordered pairs connected")
    _plot(args.png, g, c[order], out["eccentricity"], hist)
    print(f"wrote {args.png}")
    return 0


def _plot(path, g, ranked, ecc, hist) -> None:
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
    # bins widen with the distance (16 to an octave): pairs per unit of distance
    counts, edges = hist
    ax[2].stairs(counts / np.diff(edges), edges, fill=True)
    ax[2].set(xlabel="distance", ylabel="pairs per unit of distance",
              title=f"distances of all {hist.pairs - hist.unreachable:,} connected pairs")
    fig.suptitle(f"{g.name}: {g.n:,} vertices, {g.m:,} arcs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
