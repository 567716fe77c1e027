"""Dense Floyd-Warshall on a TSPLIB instance, with predecessors and one path.

    python workflows/floyd_warshall_tsplib.py tests/data/si175.tsp si175.zarr

TSPLIB matrices are complete graphs, the case Floyd-Warshall is for.  The job stores
distances and predecessors, is verified row by row against SciPy, and prints the
shortest path between the two vertices farthest apart.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import mgapsp
from mgapsp.store.verify import verify_store


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instance")
    parser.add_argument("out")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    args = parser.parse_args(argv)

    graph = mgapsp.read_graph(args.instance)
    group = mgapsp.apsp(graph, out=args.out, algorithm="floyd-warshall",
                        backend=args.backend, predecessors=True, overwrite=True)
    dist = group["distances"][:]
    pred = group["predecessors"][:]
    i, j = np.unravel_index(np.argmax(np.where(np.isfinite(dist), dist, -1)), dist.shape)
    path = [int(j)]
    while path[-1] != i:
        path.append(int(pred[i, path[-1]]))
    ids = graph.vertex_ids[path[::-1]]
    check = verify_store(args.out, all_rows=True)
    print(f"{graph.name}: n={graph.n}, floyd-warshall on {group.attrs['job']['backend']}")
    print(f"  farthest pair {ids[0]} -> {ids[-1]}: {dist[i, j]:g} over {len(ids) - 1} "
          f"edges: {' -> '.join(map(str, ids))}")
    print(f"  verified {check.rows_checked} rows against SciPy: "
          f"{'ok' if check.ok else 'MISMATCH'}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
