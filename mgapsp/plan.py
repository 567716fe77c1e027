"""Planning a job: which algorithm, how large a batch, how the store is chunked.

A plan is pure data, made on the client before anything is computed or written, so
that the choices can be checked against a store being resumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .backends.base import ALGORITHMS
from .errors import UnsupportedError
from .graph import Graph

__all__ = ["JobPlan", "choose_algorithm", "choose_batch_size", "DTYPES"]

DTYPES = ("float32", "float64")

#: Floyd-Warshall beats n single-source runs when at least this fraction of the n*n
#: possible edges exists (and every row is wanted).
DENSE_FRACTION = 0.1
#: Largest graph for which auto picks Floyd-Warshall: the n*n matrix stays small.
DENSE_MAX_VERTICES = {"cpu": 4096, "gpu": 16384}
#: Target size of one stored chunk, in elements (64 MiB of float32).  Each chunk is
#: a file, and what a file costs a worker grows with the workers writing beside it:
#: on nvidia-h200-x4, 1.4 MB of frames took 0.7-0.9 ms to store with one GPU writing
#: and 1.3-2.1 ms with four.  Chunks of 2**24 values against 2**23 made all of
#: p2p-Gnutella31 on four GPUs 5-9% faster (two GPUs 2-6%), a batch's files stored
#: in 4-5 ms against 6-9; 2**21 made whole GPU jobs slower still (one GPU: 24-28k
#: rows/s against 40-50k).  A row read decompresses a batch's row of chunks either
#: way (bench/write_path_notes.md).
CHUNK_ELEMENTS = 16 * 2**20
#: Elements of one Blosc block of the store's codec (LZ4 at its default level cuts a
#: chunk into blocks of 2**17 elements, for 4- and 8-byte values alike; other levels
#: into smaller powers of two).  What is left of a chunk after its whole blocks is one
#: block of its own, compressed as a single stream (its whole blocks are cut into one
#: stream per byte plane), left unshuffled where its values are not a multiple of 8.
#: When one warp compressed each stream on the GPU, a long leftover held up the whole
#: kernel (a batch of 1,956 p2p-Gnutella31 rows in chunks of 4,288 columns left
#: 519,168 bytes, and its LZ4 kernel took 4.2 ms; one of 978 rows, whose leftover is
#: not shuffled, 27 ms: bench/write_path_notes.md); warps now parse 16 KB segments of
#: a stream, and a short leftover still compresses best.
BLOSC_BLOCK_ELEMENTS = 2**17


@dataclass(frozen=True)
class JobPlan:
    """Everything that decides what a job computes and how it is laid out."""

    algorithm: str
    backend: str
    dtype: str
    batch_size: int
    sources: np.ndarray  # internal indices, one per output row
    predecessors: bool
    col_chunk: int
    targets: np.ndarray | None = None  # internal indices of the columns; None = all
    #: backend "hybrid": the algorithm of the CPU workers (``algorithm`` is the GPUs')
    cpu_algorithm: str | None = None

    def n_targets(self, n: int) -> int:
        return n if self.targets is None else len(self.targets)

    @property
    def n_sources(self) -> int:
        return len(self.sources)

    @property
    def n_batches(self) -> int:
        return -(-self.n_sources // self.batch_size)

    def rows(self, batch: int) -> tuple[int, int]:
        start = batch * self.batch_size
        return start, min(start + self.batch_size, self.n_sources)


def choose_algorithm(graph: Graph, algorithm: str, backend: str, n_sources: int,
                     available: tuple[str, ...]) -> str:
    """Resolve ``auto`` by weight sign and density; check the choice is runnable."""
    if algorithm not in ("auto",) + ALGORITHMS:
        raise UnsupportedError(
            f"unknown algorithm {algorithm!r}; choose one of auto, {', '.join(ALGORITHMS)}")
    if algorithm == "auto":
        dense = (graph.density >= DENSE_FRACTION and graph.n <= DENSE_MAX_VERTICES[backend]
                 and n_sources * 2 >= graph.n)
        if dense and "floyd-warshall" in available:
            algorithm = "floyd-warshall"
        elif backend == "gpu":
            # Measured on one H200 (bench/sssp_notes.md, 2026-11-21), one batch each:
            # Bellman-Ford beats Crauser's Dijkstra on every graph measured, unit or
            # weighted: Gnutella09 w 1..10, 8114 sources 5.7 vs 8.8 ms; Austin, 4096
            # sources 32 vs 89 ms; NY (unit), 4096 sources 0.58 vs 1.59 s (phases vs
            # rounds 50 vs 25, 873 vs 250, 679 vs 708: a phase is two passes over the
            # fringe, a round one pass over the frontier).  No crossover: BF.
            # Negative weights: Johnson (potentials once per job, which the pipeline
            # computes anyway to find negative cycles up front; then untracked 32-bit
            # BF) 5.3 ms per 8114-source batch on Gnutella09 + potentials, vs 5.5 ms
            # for BF with predecessor tracking, which also pays a cycle check at rounds
            # 32, 64, ... on graphs of many rounds: Johnson.
            algorithm = "johnson" if graph.has_negative_weights else "bellman-ford"
        else:
            algorithm = "johnson" if graph.has_negative_weights else "dijkstra"
    if algorithm not in available:
        raise UnsupportedError(
            f"the {backend} backend does not run {algorithm}; it runs "
            f"{', '.join(available)}")
    if algorithm == "dijkstra" and graph.has_negative_weights:
        raise UnsupportedError(
            f"dijkstra needs non-negative weights, but the graph has weight "
            f"{graph.min_weight:g}; use johnson or bellman-ford")
    return algorithm


def choose_batch_size(graph: Graph, n_sources: int, *, backend: str, n_workers: int,
                      bytes_per_row: int, memory: int) -> int:
    """A batch size: large enough to keep a device busy, small enough to fit.

    GPU batches use at most a quarter of the device memory (two compute at once; the
    others a worker runs meanwhile hold only their blocks and the writer's scratch,
    a part of a batch's size without its kernels' state) and up to 8192 sources: a
    whole batch in flight is what fills the chip (on an H200 one batch of all 8114
    sources of p2p-Gnutella09 ran 1.4-1.6 times faster than four), and each GPU
    worker gets two, one for each batch that computes at once
    (``pipeline.GPU_COMPUTING``); its other threads write batches meanwhile.  The
    number of GPU batches is a multiple of those computing slots, the batches as
    equal as can be (a 4-GPU job of p2p-Gnutella31 in batches of 2048,
    31 for 8 threads, waited 10% of its time on the threads that had a fifth).  CPU
    batches hold at most 64 MiB of distances, four per worker.
    """
    if backend == "gpu":
        cap = max(1, (memory // 4) // max(bytes_per_row, 1))
        threads = max(2 * n_workers, 1)
        size = int(max(1, min(8192, cap, -(-n_sources // threads), n_sources)))
        # a whole number of batches per worker thread, all of one size, so that no
        # thread is left with a last batch while the others wait
        batches = -(-n_sources // size)
        batches = -(-batches // threads) * threads
        return int(max(1, -(-n_sources // batches)))
    size = min(512, max(1, (64 * 2**20) // max(graph.n * 8, 1)))
    per_worker = -(-n_sources // max(4 * n_workers, 1))
    size = max(1, min(size, per_worker, n_sources))
    # Powers of two keep chunk boundaries tidy.
    return 1 << (size.bit_length() - 1)


def column_chunk(n: int, batch_size: int) -> int:
    """Columns per stored chunk: about CHUNK_ELEMENTS values, and among the widths from
    7/8 of that to it, the one whose chunk leaves the fewest values after its whole
    Blosc blocks (:data:`BLOSC_BLOCK_ELEMENTS`), the widest of those."""
    target = max(1024, CHUNK_ELEMENTS // max(batch_size, 1))
    if target >= n:
        return int(n)
    widths = np.arange(target - target // 8, target + 1, dtype=np.int64)
    left = widths * batch_size % BLOSC_BLOCK_ELEMENTS
    return int(widths[np.lexsort((-widths, left))[0]])
