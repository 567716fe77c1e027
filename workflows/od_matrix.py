"""Origin-destination matrix of a TNTP road network: zones to zones.

    python workflows/od_matrix.py tests/data/ChicagoSketch_net.tntp chicago-od.zarr

The zones of a TNTP network are its nodes 1 .. <NUMBER OF ZONES>; the matrix holds
the shortest link-length distance from every zone to every zone (many-to-many: only
those columns are stored).  Prints the matrix's size and a few statistics.
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np

import mgapsp


def tntp_zones(path) -> int:
    """The <NUMBER OF ZONES> of a TNTP network file."""
    with open(path) as fh:
        for line in fh:
            match = re.match(r"\s*<NUMBER OF ZONES>\s*(\d+)", line)
            if match:
                return int(match.group(1))
            if "<END OF METADATA>" in line:
                break
    raise SystemExit(f"{path}: no <NUMBER OF ZONES> in the metadata")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("network")
    parser.add_argument("out")
    parser.add_argument("--weight-column", default="length",
                        help="TNTP column to minimise (length, free_flow_time, ...)")
    parser.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    args = parser.parse_args(argv)

    graph = mgapsp.read_graph(args.network, weight_column=args.weight_column)
    zones = np.arange(1, tntp_zones(args.network) + 1)
    group = mgapsp.apsp(graph, out=args.out, sources=zones, targets=zones,
                        backend=args.backend, overwrite=True)
    od = group["distances"][:]
    off = od[~np.eye(len(zones), dtype=bool)]
    reachable = np.isfinite(off)
    print(f"{graph.name}: {len(zones)} zones, OD matrix {od.shape} in {args.out}")
    print(f"  reachable pairs {reachable.mean():.1%}; {args.weight_column}: mean "
          f"{off[reachable].mean():.4g}, max {off[reachable].max():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
