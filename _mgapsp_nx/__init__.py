"""NetworkX's ``networkx.backend_info`` entry point for mgapsp's backend.

NetworkX calls :func:`get_info` while ``import networkx`` runs, in every process that
imports it; this package therefore imports nothing (``import mgapsp`` imports NumPy
and SciPy, which would slow every NetworkX user down).  The
backend itself is :mod:`mgapsp.nxbackend`, loaded only when a call dispatches to it.
"""

_ALL = ("Graphs of int or of float weights (one type; NetworkX keeps each sum's type), "
        "negative weights where NetworkX allows them (Bellman-Ford) and non-empty "
        "graphs dispatch; other calls run NetworkX's own code.")

#: each dispatched function: what runs on mgapsp, and what NetworkX answers instead
FUNCTIONS = {
    "floyd_warshall_numpy": "Every weight a real number; a negative cycle falls back.",
    "single_source_dijkstra_path_length": "Negative weights fall back.",
    "multi_source_dijkstra_path_length": "Negative weights fall back.",
    "all_pairs_dijkstra_path_length": "Negative weights fall back.",
    "all_pairs_bellman_ford_path_length": "Weights a function hides (None) fall back.",
    "average_shortest_path_length": (
        "Negative weights fall back with method 'dijkstra'; float weights with "
        "'bellman-ford' and 'floyd-warshall', negative ones with 'floyd-warshall', "
        "and hidden edges, fall back."),
    "closeness_centrality": "Negative distances fall back.",
    "harmonic_centrality": "Negative distances fall back.",
    "betweenness_centrality": ("Negative weights fall back; on the GPU where there is "
                               "one (zero weights: every CPU core)."),
    "edge_betweenness_centrality": ("Negative weights and multigraphs fall back; on "
                                    "the GPU where there is one (zero weights: every "
                                    "CPU core)."),
    "betweenness_centrality_subset": ("Negative weights and sources not in G fall back; "
                                      "on every CPU core."),
    "eccentricity": "sp= and negative weights fall back.",
    "diameter": "e=, negative weights, and usebounds=True with a weight fall back.",
    "radius": "e=, negative weights, and usebounds=True with a weight fall back.",
}


def get_info() -> dict:
    """The backend's description, in NetworkX's ``backend_info`` format."""
    return {
        "backend_name": "mgapsp",
        "project": "mgapsp",
        "package": "mgapsp",
        "short_summary": "Shortest-path distances in batches on GPUs (CUDA) or CPUs.",
        "functions": {name: {"additional_docs": f"{note} {_ALL}"}
                      for name, note in FUNCTIONS.items()},
    }
