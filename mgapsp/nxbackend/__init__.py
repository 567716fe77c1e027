"""mgapsp as a NetworkX backend: ``nx.closeness_centrality(G, backend="mgapsp")``.

NetworkX loads :data:`backend_interface` (entry point ``networkx.backends``) when a
call dispatches here; ``import mgapsp`` never imports this package (nor NetworkX).
Every function gives NetworkX's exact results, types and errors, or raises
NotImplementedError from its checks so that NetworkX's own code runs instead.

Modules: :mod:`.convert` (NetworkX graphs to mgapsp graphs over node indices),
:mod:`.rows` (batched distance rows from :func:`mgapsp.apsp`), the functions in
:mod:`.shortest_paths`, :mod:`.centrality`, :mod:`.distance_measures`, the table of
them in :mod:`.registry`, and :mod:`.interface`, the object NetworkX loads.
"""

from .interface import backend_interface

__all__ = ["backend_interface"]
