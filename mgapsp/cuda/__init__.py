"""The GPU layer: the only package that imports CuPy, compiles or launches kernels.

Importing it imports no CuPy and creates no CUDA context; kernels compile at first use.

- :mod:`.loader`: kernel sources and compilation
- :mod:`.device`: a graph on the device, memory, streams and copies
- :mod:`.frontier` and :mod:`.bellman_ford`: batched Bellman-Ford, negative cycles,
  Johnson potentials
- :mod:`.sssp`: Crauser-style Dijkstra and Johnson batches
- :mod:`.phast`: PHAST, a hierarchy's up walks and down sweep for a batch of sources
- :mod:`.floyd_warshall`: tiled Floyd-Warshall (DPX) on a whole matrix, and the
  kernels the slabs share
- :mod:`.floyd_warshall_rows`: Floyd-Warshall across devices, a slab of rows per rank
- :mod:`.reduce`: per-row reductions of a block on its device (closeness, eccentricity)
- :mod:`.planes` and :mod:`.blosc`: a block's chunks encoded on the GPU (the
  ``mgapsp.planes`` format, Blosc LZ4 frames)
- :mod:`.staging` and :mod:`.host_copy`: pinned staging, device blocks into host arrays
"""
