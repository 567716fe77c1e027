"""A new store's arrays and attributes: what :meth:`Store.create
<mgapsp.store.layout.Store.create>` writes (the layout that :mod:`.layout` describes),
and the codecs its rows may be stored with."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import socket
import uuid

import numpy as np
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec

from ..errors import StoreError
from ..graph import Graph
from ..plan import PER_BATCH, JobPlan
from ..reductions import HISTOGRAM_BINS
from . import digests
from .planes import PlanesCodec

__all__ = ["FORMAT_VERSION", "COMPRESSIONS", "compression_for", "package_versions",
           "fill", "stored_labels", "run_record", "now"]

#: 2: vertex labels (integers or text) as the coordinates ``vertex``, ``source`` and
#: ``target``; 1 kept integer ids as ``vertex_ids``, ``source_ids``, ``target_ids``
FORMAT_VERSION = 2
_COMPRESSOR = BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle")
#: codecs of the distance and predecessor arrays (``--compression``).  ``auto`` picks
#: planes for a GPU job (its GPUs encode it at the kernels' pace, and it is smaller
#: than lz4 on road rows: :mod:`.planes`) and lz4 for a CPU job, whose cores run
#: Blosc's LZ4 faster: on p2p-Gnutella31 rows lz4 compressed 25x at about 3x the speed
#: of zstd level 3 (36x), and on rome99's road distances 2.5x at 6x the speed (3.0x).
COMPRESSIONS = {
    "planes": PlanesCodec(),
    "lz4": BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle"),
    "zstd": _COMPRESSOR,
    "none": None,
}
_PACKAGES = ("mgapsp", "numpy", "scipy", "dask", "distributed", "zarr", "dask-cuda",
             "cupy-cuda12x", "cupy-cuda13x")


def compression_for(name: str, backend: str) -> str:
    """The codec ``name`` stands for on ``backend``'s workers (``auto``: see
    :data:`COMPRESSIONS`)."""
    if name == "auto":
        return "planes" if backend in ("gpu", "hybrid") else "lz4"
    if name not in COMPRESSIONS:
        raise StoreError(f"unknown compression {name!r}; choose auto, "
                         f"{', '.join(COMPRESSIONS)}")
    return name


def package_versions() -> dict[str, str]:
    """The versions of the packages a store's results depend on (those installed)."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def run_record(run_id: str) -> dict:
    """The store's record of the run that owns it (``attrs["run"]``, which workers
    check: :class:`~mgapsp.store.lock.RunGuard`)."""
    return {"id": run_id, "host": socket.gethostname(), "pid": os.getpid(),
            "started": now()}


def now() -> str:
    """This moment, as a store records it (UTC, to the second)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _metric_arrays(group, plan: JobPlan, n_vertices: int) -> None:
    """The arrays of ``plan``'s metrics: a value per source and metric, a chunk per
    batch (each batch's worker writes its own, before its flag); and a row per batch
    of what is summed when read: a histogram's counts, the dependencies of its
    sources per vertex."""
    per_batch = {"histogram": (HISTOGRAM_BINS, "uint64", "distance_bin"),
                 "betweenness": (n_vertices, "float64", "vertex")}
    for name in plan.metrics:
        if name in per_batch:
            width, dtype, dim = per_batch[name]
            group.create_array(name, shape=(plan.n_batches, width), chunks=(1, width),
                               dtype=dtype, fill_value=0,
                               compressors=[zarr.codecs.ZstdCodec(), Crc32cCodec()],
                               dimension_names=("batch", dim))
            continue
        integer = name == "reachable"
        group.create_array(name, shape=(plan.n_sources,), chunks=(plan.batch_size,),
                           dtype="int64" if integer else "float64",
                           fill_value=-1 if integer else np.nan,
                           compressors=[Crc32cCodec()], dimension_names=("source",))
    per_source = [m for m in plan.metrics if m not in PER_BATCH]
    if per_source:
        # each batch's record of its metric chunks' CRCs, and last the batch: a
        # chunk moved to another batch's place, with or without its record, is
        # damage (what is summed per batch is only ever summed)
        group.require_group("chunk_crc").create_array(
            "metrics", shape=(plan.n_batches, len(per_source) + 1),
            chunks=(1, len(per_source) + 1), dtype="<u4", fill_value=0,
            compressors=[Crc32cCodec()], dimension_names=("batch", "metric"),
            attributes={"metrics": per_source})


def fill(group, graph: Graph, plan: JobPlan, potentials, compression: str,
         shards: bool, run_id: str) -> None:
    """Make the arrays of a new store for ``plan`` on ``graph`` in ``group`` (its root,
    marked as being created), fill those known before the job (the labels, the
    graph), and write its attributes last."""
    # every chunk ends with its CRC-32C, which reads check: damage is found
    codecs = ([COMPRESSIONS[compression]] if COMPRESSIONS[compression] else []) + [
        Crc32cCodec()]
    n, s = plan.n_targets(graph.n), plan.n_sources
    chunks = (plan.batch_size, plan.col_chunk)
    # a shard is a batch's whole row of chunks, so a worker writes one file a batch
    row = (plan.batch_size, -(-n // plan.col_chunk) * plan.col_chunk) if shards else None
    # each shard says which store and batch it is (files.ShardIdentity): a shard
    # copied into the wrong place is damage, found by the quick check
    store_id = uuid.uuid4().hex

    def ident(name):
        if shards:
            return {"mgapsp_shard_id": {"store": store_id, "array": name}}
        # chunk files: their CRCs recorded per batch (files.ChunkFiles), and last
        # the batch, so that a record moved with its chunks to another batch's
        # place says whose it is
        group.require_group("chunk_crc").create_array(
            name, shape=(plan.n_batches, -(-n // plan.col_chunk) + 1),
            chunks=(1, -(-n // plan.col_chunk) + 1), dtype="<u4", fill_value=0,
            compressors=[Crc32cCodec()], dimension_names=("batch", "chunk"))
        return {"mgapsp_chunk_crcs": f"chunk_crc/{name}"}

    # a metrics-only store (--no-distances) has no rows to hold: no array that
    # xarray or a reader would take for them
    if plan.distances:
        group.create_array("distances", shape=(s, n), chunks=chunks, shards=row,
                           dtype=plan.dtype, fill_value=np.nan, compressors=codecs,
                           dimension_names=("source", "target"),
                           attributes=ident("distances"))
    if plan.predecessors:
        group.create_array("predecessors", shape=(s, n), chunks=chunks, shards=row,
                           dtype="int32", fill_value=-1, compressors=codecs,
                           dimension_names=("source", "target"),
                           attributes=ident("predecessors"))
    targets = np.arange(graph.n) if plan.targets is None else plan.targets
    labels = stored_labels(graph)
    # labels as the coordinates of their dimensions: xarray's .sel(source=a,
    # target=b) then reads the distance from a to b
    _write_array(group, "vertex", labels, ("vertex",))
    _write_array(group, "source", labels[plan.sources], ("source",))
    _write_array(group, "source_index", plan.sources.astype(np.int64), ("source",))
    _write_array(group, "target", labels[targets], ("target",))
    _write_array(group, "target_index", targets.astype(np.int64), ("target",))
    _metric_arrays(group, plan, graph.n)
    # a chunk per batch: the worker that wrote a batch marks it (a new file, so no
    # two processes share one), and the client's records leave it alone
    group.create_array("batch_done", shape=(plan.n_batches,), dtype="uint8",
                       chunks=(1,), fill_value=0, compressors=None,
                       dimension_names=("batch",))
    g = group.create_group("graph")
    _write_array(g, "indptr", graph.indptr, ("vertex_ptr",))
    _write_array(g, "indices", graph.indices, ("edge",))
    _write_array(g, "weights", graph.weights, ("edge",))
    if potentials is not None:
        _write_array(g, "potentials", potentials, ("vertex",))
    group.attrs.update({
        "format_version": FORMAT_VERSION,
        "fingerprint": graph.fingerprint,
        "graph": {"name": graph.name, "n": graph.n, "m": graph.m,
                  "directed": graph.directed, "weighted": graph.weighted,
                  "min_weight": graph.min_weight,
                  # the labels are the text of Python objects (tuples...)
                  "object_labels": graph.object_labels},
        "job": {"algorithm": plan.algorithm, "backend": plan.backend,
                "dtype": plan.dtype, "dtype_reason": plan.dtype_reason,
                "checked32": plan.checked32, "metrics": list(plan.metrics),
                "distances": plan.distances,
                "batch_size": plan.batch_size,
                "n_batches": plan.n_batches, "n_sources": plan.n_sources,
                "predecessors": plan.predecessors, "col_chunk": plan.col_chunk,
                "n_targets": int(n), "all_targets": plan.targets is None,
                "cpu_algorithm": plan.cpu_algorithm, "compression": compression,
                "shards": bool(shards)},
        "versions": package_versions(),
        "created": now(),
        "progress": {"batches_done": 0, "n_batches": plan.n_batches,
                     "rows_done": 0, "n_rows": plan.n_sources, "complete": False,
                     "updated": now()},
        "state": "ready",
        "run": run_record(run_id),
        digests.KEY: digests.record(group, {
            "vertex": labels, "source": labels[plan.sources],
            "source_index": plan.sources.astype(np.int64),
            "target": labels[targets], "target_index": targets.astype(np.int64)}),
    })


def stored_labels(graph: Graph) -> np.ndarray:
    """The labels a store keeps: Zarr holds no Python objects, so object labels (a
    NetworkX graph's tuples) are kept as their text, which must tell them apart."""
    if not graph.object_labels:
        return graph.labels
    text = np.array([str(v) for v in graph.labels.tolist()], dtype=str)
    if len(np.unique(text)) != len(text):
        raise StoreError("a store keeps the text of the graph's node labels, and two of "
                         "them have the same text (such as 1 and '1'); relabel the nodes "
                         "first")
    return text


def _write_array(group, name, data, dims):
    data = np.ascontiguousarray(data)
    # text labels: Zarr's variable-length strings
    arr = group.create_array(name, shape=data.shape,
                             dtype=str if data.dtype.kind == "U" else data.dtype,
                             chunks=(max(min(len(data), 2**20), 1),), compressors=_COMPRESSOR,
                             dimension_names=dims)
    if len(data):
        arr[:] = data
    return arr
