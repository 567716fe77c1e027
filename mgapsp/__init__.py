"""mgapsp: all-pairs shortest paths on GPUs and CPUs, scheduled by Dask, stored in Zarr."""

from .api import apsp
from .csgraph import bellman_ford, dijkstra, floyd_warshall, johnson, shortest_path
from .errors import (
    EmptyGraphError,
    GraphFormatError,
    InsufficientMemoryError,
    MgapspError,
    NegativeCycleError,
    ResumeMismatchError,
    StoreError,
    UnknownLabelError,
    UnsupportedError,
)
from .graph import Graph
from .metrics import (average_shortest_path_length, betweenness_centrality,
                      betweenness_centrality_subset, closeness_centrality, diameter,
                      distance_histogram, eccentricity, edge_betweenness_centrality,
                      harmonic_centrality)
from .readers import as_graph, read_graph

__version__ = "0.1.0"


def __getattr__(name):
    # the store's reader imports Zarr: only when a program reads a store
    if name in ("Result", "open"):
        from . import results

        return getattr(results, name)
    raise AttributeError(f"module 'mgapsp' has no attribute {name!r}")

__all__ = [
    "apsp",
    "shortest_path",
    "dijkstra",
    "bellman_ford",
    "johnson",
    "floyd_warshall",
    "closeness_centrality",
    "harmonic_centrality",
    "betweenness_centrality",
    "edge_betweenness_centrality",
    "betweenness_centrality_subset",
    "eccentricity",
    "diameter",
    "average_shortest_path_length",
    "distance_histogram",
    "open",
    "Result",
    "read_graph",
    "as_graph",
    "Graph",
    "MgapspError",
    "GraphFormatError",
    "EmptyGraphError",
    "NegativeCycleError",
    "InsufficientMemoryError",
    "StoreError",
    "ResumeMismatchError",
    "UnsupportedError",
    "UnknownLabelError",
]
