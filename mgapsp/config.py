"""Every knob of mgapsp in one place, resolved through ``dask.config`` under ``mgapsp``.

Users set them as Dask users expect: in a Dask YAML file (``mgapsp: {store:
{write-threads: 8}}``), through the environment (``DASK_MGAPSP__STORE__WRITE_THREADS=8``)
or in code (``dask.config.set({"mgapsp.store.write-threads": 8})``).  The older
``MGAPSP_*`` environment variables still work and, where set, win.  A job sends the
client's values to its workers (:class:`mgapsp.jobs.cluster.ConfigPlugin`), so a worker computes with the
settings of the job it runs.

:data:`KNOBS` lists each key with its default and why it exists; ``user`` knobs are
documented in docs/configuration.md, the others are tuning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .errors import MgapspError

__all__ = ["KNOBS", "Knob", "get", "settings"]


@dataclass(frozen=True)
class Knob:
    default: Any
    kind: type
    why: str
    user: bool = False
    alias: str | None = None        # the environment variable of before


KNOBS: dict[str, Knob] = {
    "cluster.dashboard-address": Knob(
        "127.0.0.1:8787", str, "where the embedded cluster serves its dashboard; "
        "loopback only, so that other hosts cannot reach it", user=True),
    "cluster.tls": Knob(
        "auto", str, "TLS with credentials made per run for the embedded cluster, so that "
        "other users of a shared host cannot run code through its scheduler port: auto "
        "(on when the cryptography package is installed), true or false", user=True),
    "cluster.worker-wait": Knob(
        120.0, float, "seconds a job waits for a worker: the first of an attached "
        "cluster (a batch system may still be starting it), or a new one after every "
        "worker left", user=True),
    "cluster.connect-timeout": Knob(
        30.0, float, "seconds to attach to a running scheduler (--scheduler, "
        "--scheduler-file) before the job ends in one line", user=True),
    "cluster.gpu-worker-threads": Knob(
        4, int, "threads of each GPU worker of the embedded cluster: batches computing "
        "and others compressing and writing meanwhile"),
    "gpu.computing-batches": Knob(
        2, int, "batches whose kernels run on one GPU at once; a worker's other threads "
        "write finished blocks meanwhile, so the GPU does not wait for the disk",
        alias="MGAPSP_GPU_COMPUTING"),
    "gpu.compress": Knob(
        True, bool, "compress Blosc LZ4 chunks on the GPU (one GPU makes distances "
        "faster than the host's cores compress them)", user=True,
        alias="MGAPSP_GPU_COMPRESS"),
    "phast.hierarchy-dir": Knob(
        None, str, "where jobs keep the contraction hierarchies of the phast algorithm, "
        "one file per graph fingerprint, so that the next job on the same graph skips "
        "the build; default: a folder mgapsp-hierarchies beside the job's store",
        user=True),
    "phast.fill-limit": Knob(
        64, int, "most arcs a contraction hierarchy may have per edge and vertex of "
        "the graph; a graph whose elimination fills in beyond it is not road-like: "
        "phast refuses it and auto runs without a hierarchy (road networks have 1-3)",
        user=True),
    "phast.order": Knob(
        "auto", str, "the elimination order of a contraction hierarchy: "
        "minimum-degree (SuperLU's), nested-dissection (METIS's) or auto, which takes "
        "nested dissection for graphs of mean degree 3.3 and more (grids, meshes: fewer "
        "arcs and levels, a 1M-vertex grid built in half the time) and minimum degree "
        "for sparser ones (road networks, where it gives 8-15% fewer arcs)", user=True),
    "store.write-threads": Knob(
        None, int, "threads that compress and write chunks on the host; default: this "
        "process's share of the cores (one in a CPU worker, whose cores compute)",
        user=True, alias="MGAPSP_WRITE_THREADS"),
    "store.store-threads": Knob(
        4, int, "threads that write frames compressed on the GPU (more only hold the "
        "interpreter lock that kernel launches wait for)", alias="MGAPSP_STORE_THREADS"),
    "store.idle-store-threads": Knob(
        16, int, "threads of one host that store frames compressed on the GPU while no "
        "batch of their worker computes (a job's last batches), shared "
        "among the host's GPU workers; more slowed the page cache's writes on a "
        "two-GPU host"),
    "store.deep-check-bytes": Knob(
        2 * 2**30, int, "a resumed store this small or smaller has every stored chunk's "
        "checksum checked (about 6 s for 2 GiB on 2 cores); a larger one only its files "
        "whole (mgapsp repair checks every chunk)", user=True),
    "store.chunk-elements": Knob(
        16 * 2**20, int, "values in one stored chunk: files large enough for parallel "
        "file systems, small enough to read a row cheaply"),
    "jobs.in-flight-per-thread": Knob(
        2, int, "batch tasks a job keeps submitted per worker thread, so that a thread "
        "that frees finds one waiting (a job of more than jobs.whole-job-batches)"),
    "jobs.whole-job-batches": Knob(
        4096, int, "a job of at most this many batches submits them all at once, so "
        "that Dask's own progress (the dashboard's Progress panel, distributed.progress) "
        "counts the whole job; a longer one keeps a window in flight, since each batch "
        "submitted holds about 10 KiB of the scheduler's memory until it ends"),
    "cluster.hung-worker": Knob(
        60.0, float, "seconds without a heartbeat after which a job takes a worker for "
        "hung (stopped, or stuck on a GPU or a file system) and has the scheduler close "
        "it, so that its batches run on the others", user=True),
    "jobs.stall-timeout": Knob(
        1800.0, float, "seconds without a finished batch (or ten times the slowest batch, "
        "if longer) after which a job stops with an error rather than wait on a hung "
        "cluster", user=True),
    "store.object-retry-seconds": Knob(
        120.0, float, "seconds a request to object storage is tried again while its "
        "server does not answer or is busy (a restart, S3's 503 SlowDown) before the "
        "batch fails and the job says so", user=True),
    "store.lock-stale": Knob(
        120.0, float, "seconds after which the lock of a store whose run is on another "
        "host, and no longer refreshes it, counts as abandoned", user=True),
    "jobs.progress-interval": Knob(
        0.5, float, "most seconds between two progress records in the store (each one "
        "rewrites zarr.json)"),
    "fw.exchange": Knob(
        "nccl", str, "how Floyd-Warshall across GPUs passes pivot rows: nccl (device to "
        "device) or dask", alias="MGAPSP_FW_EXCHANGE"),
    "fw.timeout": Knob(
        3600.0, float, "seconds a Floyd-Warshall rank waits for a peer's rows before it "
        "gives up", alias="MGAPSP_FW_TIMEOUT"),
}


def _nested(flat: dict[str, Any]) -> dict:
    out: dict = {}
    for key, value in flat.items():
        section, name = key.split(".", 1)
        out.setdefault(section, {})[name] = value
    return out


def _dask_config():
    """``dask.config``, imported on first use rather than with mgapsp (importing Dask
    costs about what SciPy's csgraph does), with mgapsp's defaults in it (again, where
    a ``dask.config.set`` block that came first took them away on its exit)."""
    import dask.config

    if "mgapsp" not in dask.config.config:
        dask.config.update_defaults({"mgapsp": _nested({k: v.default
                                                         for k, v in KNOBS.items()})})
    return dask.config


def _convert(key: str, value: Any, where: str) -> Any:
    knob = KNOBS[key]
    if value is None:
        if knob.default is None:
            return None
        raise MgapspError(f"{where} must be set (default {knob.default!r})")
    if knob.kind is bool:
        if isinstance(value, str):
            text = value.strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise MgapspError(f"{where} must be true or false, got {value!r}")
        return bool(value)
    try:
        converted = knob.kind(value)
    except (TypeError, ValueError):
        what = {int: "an integer", float: "a number", str: "a string"}[knob.kind]
        raise MgapspError(f"{where} must be {what}, got {value!r}") from None
    if knob.kind in (int, float) and converted <= 0:
        raise MgapspError(f"{where} must be positive, got {value!r}")
    return converted


def get(key: str) -> Any:
    """The value of knob ``key`` (``"store.write-threads"``, without ``mgapsp.``),
    checked; a bad value raises :class:`~mgapsp.errors.MgapspError` naming where it
    was set."""
    knob = KNOBS[key]
    if knob.alias and os.environ.get(knob.alias, "").strip():
        return _convert(key, os.environ[knob.alias], knob.alias)
    return _convert(key, _dask_config().get(f"mgapsp.{key}", default=knob.default),
                    f"mgapsp.{key}")


def settings() -> dict[str, Any]:
    """Every knob's value here, as ``{"mgapsp.<key>": value}`` (what workers get)."""
    return {f"mgapsp.{key}": get(key) for key in KNOBS}

