"""The GPU layer: the only package that imports CuPy, compiles or launches kernels.

Importing it imports no CuPy and creates no CUDA context; kernels compile at first use.

- :mod:`.loader`: kernel sources and compilation
- :mod:`.device`: a graph on the device, memory, streams and copies
- :mod:`.frontier` and :mod:`.bellman_ford`: batched Bellman-Ford, negative cycles,
  Johnson potentials
- :mod:`.sssp`: Crauser-style Dijkstra and Johnson batches
- :mod:`.fw`: tiled Floyd-Warshall (DPX), whole matrices and slabs
- :mod:`.blosc` and :mod:`.staging`: Blosc LZ4 frames made on the GPU, pinned staging
"""
