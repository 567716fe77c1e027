"""Seeded benchmark graphs: R-MAT (Graph500's Kronecker parameters), grids with holes
(and with a faster "highway" network over them), Delaunay meshes of random points;
written as DIMACS ``.gr`` (with a ``.co`` file of coordinates where the graph has
them), which ``mgapsp run`` and ``mgapsp.read_graph`` read.

Graphs of a million vertices and more are made on the machine that runs the
benchmark, never committed::

    python -m bench.generators rmat --scale 20 -o /tmp/rmat20.gr
    python -m bench.generators grid --side 1000 -o /tmp/grid1000.gr
    python -m bench.generators delaunay --points 1000000 -o /tmp/del1m.gr
    python -m bench.generators highway --side 2000 -o /tmp/highway2000.gr

In Python each generator returns a :class:`Generated` (arcs as arrays), whose
``csr()`` is what ``mgapsp.apsp`` and SciPy take.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp


@dataclass
class Generated:
    """A directed graph as arcs ``tail -> head`` of integer ``weight`` (both
    directions listed for an undirected one), vertices ``0 .. n - 1``."""

    name: str
    n: int
    tail: np.ndarray
    head: np.ndarray
    weight: np.ndarray
    coords: np.ndarray | None = None    # (n, 2) where the graph has a geometry

    @property
    def m(self) -> int:
        return len(self.tail)

    def csr(self) -> sp.csr_matrix:
        return sp.csr_matrix((self.weight.astype(np.float64), (self.tail, self.head)),
                             shape=(self.n, self.n))


def _simple(n: int, tail, head, weight) -> tuple:
    """No loops and one arc per ordered pair (the lightest of its copies)."""
    keep = tail != head
    tail, head, weight = tail[keep], head[keep], weight[keep]
    order = np.lexsort((weight, head, tail))
    tail, head, weight = tail[order], head[order], weight[order]
    first = np.ones(len(tail), dtype=bool)
    first[1:] = (tail[1:] != tail[:-1]) | (head[1:] != head[:-1])
    return tail[first], head[first], weight[first]


def rmat(scale: int, edge_factor: int = 8, *, a: float = 0.57, b: float = 0.19,
         c: float = 0.19, weights: tuple[int, int] = (1, 99), seed: int = 1) -> Generated:
    """Graph500's Kronecker generator: ``edge_factor * 2**scale`` arcs, each choosing
    a quadrant of the adjacency matrix per bit with probabilities a, b, c and 1 - a - b
    - c; vertex ids then permuted at random (as Graph500 does, so that hubs are not the
    low ids); loops and repeated arcs dropped; integer weights uniform in ``weights``."""
    rng = np.random.default_rng(seed)
    n, m = 1 << scale, edge_factor << scale
    tail = np.zeros(m, dtype=np.int64)
    head = np.zeros(m, dtype=np.int64)
    ab, a_of_ab, c_of_rest = a + b, a / (a + b), c / (1 - a - b)
    for bit in range(scale):
        down = rng.random(m) > ab
        right = rng.random(m) > np.where(down, c_of_rest, a_of_ab)
        tail |= down.astype(np.int64) << bit
        head |= right.astype(np.int64) << bit
    perm = rng.permutation(n)
    w = rng.integers(weights[0], weights[1] + 1, m)
    tail, head, w = _simple(n, perm[tail], perm[head], w)
    return Generated(f"rmat{scale}-ef{edge_factor}-s{seed}", n, tail, head, w)


def grid(side: int, *, drop: float = 0.1, weights: tuple[int, int] = (10, 999),
         seed: int = 1) -> Generated:
    """A ``side`` x ``side`` grid, each edge to the right and down kept with
    probability ``1 - drop``, undirected, integer weights uniform in ``weights``;
    vertex ``r * side + c`` at (c, r)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(side * side, dtype=np.int64).reshape(side, side)
    tail = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    head = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    keep = rng.random(len(tail)) >= drop
    tail, head = tail[keep], head[keep]
    w = rng.integers(weights[0], weights[1] + 1, len(tail))
    r, c = np.divmod(np.arange(side * side), side)
    return Generated(f"grid{side}-drop{drop:g}-s{seed}", side * side,
                     np.concatenate([tail, head]), np.concatenate([head, tail]),
                     np.concatenate([w, w]), np.stack([c, r], axis=1).astype(np.float64))


def highway(side: int, *, every: int = 50, speedup: int = 4, drop: float = 0.1,
            weights: tuple[int, int] = (10, 999), seed: int = 1) -> Generated:
    """:func:`grid` with a faster network over it: the edges along every ``every``-th
    row and column (never removed) weigh ``speedup`` times less, as roads of a higher
    class do (a hierarchy must find them, as it finds a country's motorways)."""
    g = grid(side, drop=0.0, weights=weights, seed=seed)
    rng = np.random.default_rng(seed + 1)
    r_t, c_t = np.divmod(g.tail, side)
    r_h, c_h = np.divmod(g.head, side)
    fast = ((r_t == r_h) & (r_t % every == 0)) | ((c_t == c_h) & (c_t % every == 0))
    undirected = g.tail < g.head
    keep = fast | (rng.random(len(g.tail)) >= drop)
    keep = keep & undirected
    tail, head = g.tail[keep], g.head[keep]
    w = np.where(fast[keep], np.maximum(1, g.weight[keep] // speedup), g.weight[keep])
    return Generated(f"highway{side}-every{every}-x{speedup}-s{seed}", side * side,
                     np.concatenate([tail, head]), np.concatenate([head, tail]),
                     np.concatenate([w, w]), g.coords)


def delaunay(points: int, *, extent: float = 1e6, seed: int = 1) -> Generated:
    """The Delaunay triangulation of ``points`` uniform random points in a square of
    side ``extent``, undirected, each edge weighing its Euclidean length rounded up
    (planar and sparse like a road network)."""
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(seed)
    xy = rng.random((points, 2)) * extent
    tri = Delaunay(xy).simplices
    tail = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]]).astype(np.int64)
    head = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]]).astype(np.int64)
    lo, hi = np.minimum(tail, head), np.maximum(tail, head)
    pairs = np.unique(lo * points + hi)
    tail, head = np.divmod(pairs, points)
    w = np.maximum(1, np.ceil(np.hypot(*(xy[tail] - xy[head]).T))).astype(np.int64)
    return Generated(f"delaunay{points}-s{seed}", points, np.concatenate([tail, head]),
                     np.concatenate([head, tail]), np.concatenate([w, w]), xy)


def write_dimacs(g: Generated, path) -> Path:
    """``g`` as a DIMACS shortest-path file (``p sp n m``, ``a u v w``, 1-based ids),
    and its coordinates as ``.co`` beside it (``v id x y``, rounded) where it has
    them."""
    import pandas as pd

    path = Path(path)
    with open(path, "w") as fh:
        fh.write(f"c {g.name}, made by mgapsp's bench/generators.py\n")
        fh.write(f"p sp {g.n} {g.m}\n")
        pd.DataFrame({"a": "a", "u": g.tail + 1, "v": g.head + 1, "w": g.weight}).to_csv(
            fh, sep=" ", header=False, index=False)
    if g.coords is not None:
        with open(path.with_suffix(".co"), "w") as fh:
            fh.write(f"p aux sp co {g.n}\n")
            pd.DataFrame({"v": "v", "id": np.arange(1, g.n + 1),
                          "x": np.round(g.coords[:, 0]).astype(np.int64),
                          "y": np.round(g.coords[:, 1]).astype(np.int64)}).to_csv(
                fh, sep=" ", header=False, index=False)
    return path


def make(kind: str, **options) -> Generated:
    return {"rmat": rmat, "grid": grid, "highway": highway,
            "delaunay": delaunay}[kind](**options)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["rmat", "grid", "highway", "delaunay"])
    ap.add_argument("--scale", type=int, default=20, help="rmat: 2**scale vertices")
    ap.add_argument("--edge-factor", type=int, default=8, help="rmat: arcs per vertex")
    ap.add_argument("--side", type=int, default=1000,
                    help="grid, highway: side x side vertices")
    ap.add_argument("--drop", type=float, default=0.1, help="grid: edges removed")
    ap.add_argument("--points", type=int, default=1_000_000, help="delaunay: vertices")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)
    options = {"rmat": dict(scale=args.scale, edge_factor=args.edge_factor),
               "grid": dict(side=args.side, drop=args.drop),
               "highway": dict(side=args.side, drop=args.drop),
               "delaunay": dict(points=args.points)}[args.kind]
    t0 = time.perf_counter()
    g = make(args.kind, seed=args.seed, **options)
    t1 = time.perf_counter()
    write_dimacs(g, args.out)
    print(f"{g.name}: n={g.n:,} m={g.m:,} arcs, made in {t1 - t0:.1f} s, written to "
          f"{args.out} in {time.perf_counter() - t1:.1f} s")


if __name__ == "__main__":
    main()
