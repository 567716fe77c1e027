"""Floyd-Warshall across workers: each owns a slab of rows, pivot rows are exchanged.

A job that wants every row of a Floyd-Warshall matrix (and no predecessors) does not
let each worker compute the whole matrix.  The rows are cut into one slab per worker
(:func:`slab_bounds`: contiguous, whole batches, multiples of the pivot block), and one
long task per worker (``apsp-fw-<token>-<rank>``) runs blocked Floyd-Warshall on its
slab.  Per pivot block, the worker owning those rows closes them and broadcasts them;
every worker then updates its own rows against them.  Afterwards the ordinary batch
tasks, each placed on the worker that holds its rows, take them from the slab
(:func:`mgapsp.jobs.tasks.cached_rows`) and write them, so progress, resume and the dashboard work as for
any job.

Exchanges:

* :class:`DaskExchange`, the default and the CPU workers' one: the owner stores the
  panel on its own worker (``scatter``) and hands the future to each peer through a
  Dask queue named for the message and the peer, which fetches it straight from the
  owner's worker.  Dask also carries the control messages of the NCCL exchange.
* :class:`NCCLExchange`, for GPU workers when CuPy has NCCL: the panel goes device to
  device (NVLink on one host), ordered with the kernels on the worker's stream.

If one rank fails it sets the job's abort event (``distributed.Event``); the others see
it while they wait, abort their communicator and fail too, so no collective hangs.

About 430 lines in one module: the exchanges, the rank task and the client's side
share the abort protocol (the job's ``distributed.Event``), kept in one place.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from .. import config
from ..backends import floyd_warshall, get_backend
from ..errors import MgapspError
from ..plan import slab_bounds
from .tasks import job_store, drop_slabs, keep_slab, worker_name

__all__ = ["run_slabs", "fw_rank",
           "gather_ranks", "job_info", "load_rows", "connect", "DaskExchange", "NCCLExchange",
           "PeerFailedError"]

#: seconds between looks at the abort event while waiting for a peer or the device
POLL_S = 1.0
#: seconds a rank waits for one message before it gives up on its peers



class PeerFailedError(MgapspError):
    """Another rank of a distributed Floyd-Warshall failed (its error is the cause)."""


# -- exchanges -------------------------------------------------------------------------
class DaskExchange:
    """Broadcasts between the ranks' tasks through Dask (see the module docstring).

    Every rank must call :meth:`bcast` and :meth:`allreduce_sum` in the same order:
    messages are numbered, and the number names the queue.
    """

    kind = "dask"

    def __init__(self, prefix: str, rank: int, size: int):
        from distributed import Event, get_client, get_worker

        self.prefix, self.rank, self.size = prefix, rank, size
        self.client = get_client()
        self.address = get_worker().address
        self.abort_event = Event(f"{prefix}-abort", client=self.client)
        self.seq = 0

    def _queue(self, seq: int, rank: int):
        from distributed import Queue

        return Queue(f"{self.prefix}-m{seq}-r{rank}", client=self.client)

    def check(self) -> None:
        """Raise :class:`PeerFailedError` if a peer has failed."""
        if self.abort_event.is_set():
            raise PeerFailedError(f"another rank of {self.prefix} failed")

    def fail(self) -> None:
        """Tell the peers this rank failed."""
        try:
            self.abort_event.set()
        except Exception:  # pragma: no cover - the scheduler is gone too
            pass

    def close(self) -> None:
        pass

    def bcast(self, buf, root: int) -> None:
        """``root``'s ``buf`` into every other rank's ``buf`` (same shape; NumPy or
        CuPy: a device buffer is copied through the host, after the stream's work)."""
        self._dask_bcast(buf, root)

    def _dask_bcast(self, buf, root: int) -> None:
        seq = self.seq
        self.seq += 1
        if self.size == 1:
            return
        if root == self.rank:
            host = buf.get() if hasattr(buf, "get") else np.ascontiguousarray(buf)
            [fut] = self.client.scatter([host], workers=[self.address], hash=False)
            for r in range(self.size):
                if r != self.rank:
                    self._queue(seq, r).put(fut)
            return
        q = self._queue(seq, self.rank)
        waited = 0.0
        while True:
            try:
                fut = q.get(timeout=POLL_S)
                break
            except TimeoutError:
                self.check()
                waited += POLL_S
                if waited >= config.get("fw.timeout"):
                    raise PeerFailedError(
                        f"{self.prefix}: no message {seq} from rank {root} in "
                        f"{config.get('fw.timeout'):g} s") from None
        data = fut.result()
        q.close()
        if hasattr(buf, "set"):
            buf.set(data)
        else:
            buf[...] = data

    def allreduce_sum(self, values: np.ndarray) -> np.ndarray:
        """The sum over ranks of each rank's ``values`` (a small int64 array)."""
        return self.allgather(values).sum(axis=0)

    def allgather(self, values: np.ndarray) -> np.ndarray:
        """Every rank's ``values`` (a small int64 array), stacked in rank order."""
        values = np.ascontiguousarray(values, dtype=np.int64)
        out = np.empty((self.size,) + values.shape, dtype=np.int64)
        for root in range(self.size):
            out[root] = values if root == self.rank else 0
            self._dask_bcast(out[root], root)
        return out

    def wait(self, event) -> None:
        """Wait for a device event, looking for a failed peer every POLL_S."""
        last = time.monotonic()
        while not event.done:
            time.sleep(50e-6)
            if time.monotonic() - last >= POLL_S:
                last = time.monotonic()
                self.check()


class NCCLExchange(DaskExchange):
    """Broadcasts device to device with NCCL (CuPy's bindings), on the current stream;
    Dask carries the abort event.  Made by :func:`connect`."""

    kind = "nccl"

    def __init__(self, prefix: str, rank: int, size: int, comm, lock, cached: bool):
        super().__init__(prefix, rank, size)
        from cupy.cuda import nccl

        self._nccl = nccl
        self.comm, self._lock, self._cached = comm, lock, cached
        self.reused = False

    def _stream(self) -> int:
        import cupy

        return cupy.cuda.get_current_stream().ptr

    def bcast(self, buf, root: int) -> None:
        self.comm.broadcast(buf.data.ptr, buf.data.ptr, buf.nbytes, self._nccl.NCCL_INT8,
                            root, self._stream())

    def allreduce_sum(self, values: np.ndarray) -> np.ndarray:
        import cupy

        d = cupy.asarray(np.ascontiguousarray(values, dtype=np.int64))
        self.comm.allReduce(d.data.ptr, d.data.ptr, d.size, self._nccl.NCCL_INT64,
                            self._nccl.NCCL_SUM, self._stream())
        ev = cupy.cuda.Event(disable_timing=True)
        ev.record()
        self.wait(ev)
        return d.get()

    def wait(self, event) -> None:
        try:
            super().wait(event)
        except PeerFailedError:
            self._abort()
            raise

    def fail(self) -> None:
        super().fail()
        self._abort()

    def _abort(self) -> None:
        if self.comm is not None:
            _forget_comm(self.comm)
            self.comm.abort()
            self.comm = None

    def close(self) -> None:
        if self.comm is None:
            return
        if self._cached:            # kept for the next job of the same ranks
            self._lock.release()
        else:                       # ncclCommDestroy takes a few hundred ms: not here
            comm = self.comm
            threading.Thread(target=comm.destroy, name="nccl-destroy", daemon=True).start()
        self.comm = None


#: per process: the NCCL communicator of a set of ranks (their worker addresses in rank
#: order), kept across jobs, and a lock held by the job using it
_COMMS: dict[tuple, tuple] = {}


def _forget_comm(comm) -> None:
    for key, (c, _lock) in list(_COMMS.items()):
        if c is comm:
            del _COMMS[key]


def _device_tag() -> int:
    """This process's GPU, as a number (its PCI bus id hashed): equal for two workers
    that share one device."""
    import zlib

    import cupy

    return zlib.crc32(cupy.cuda.Device().pci_bus_id.encode())


def connect(prefix: str, rank: int, size: int, peers: tuple, want: str) -> DaskExchange:
    """This rank's exchange: NCCL when ``want == "nccl"`` and every rank has it, else
    Dask.  Ranks agree through Dask first (which also makes sure all are alive before
    any enters NCCL's blocking set-up); a communicator all of them still hold from an
    earlier job of the same ranks is reused, else rank 0 makes a new id and sends it
    through Dask."""
    dask_ex = DaskExchange(prefix, rank, size)
    if want != "nccl" or size == 1:
        return dask_ex
    try:
        from cupy.cuda import nccl

        available = bool(nccl.available)
    except Exception:  # pragma: no cover - CuPy without its NCCL module
        available = False
    key = tuple(peers)
    entry = _COMMS.get(key) if available else None
    mine = entry is not None and entry[1].acquire(blocking=False)
    seen = dask_ex.allgather(np.array([int(available), int(mine), _device_tag()]))
    have, held = seen[:, :2].sum(axis=0)
    # NCCL refuses two ranks on one device (workers sharing a GPU): Dask it is
    if have < size or len(set(seen[:, 2])) < size:
        if mine:
            entry[1].release()
        return dask_ex
    if held == size:
        ex = NCCLExchange(prefix, rank, size, entry[0], entry[1], cached=True)
        ex.reused = True
        return ex
    if mine:                    # a peer lost its half (a restarted worker): drop ours
        _forget_comm(entry[0])
        entry[0].abort()
    # NVLink multicast (NVLS) is off: it needs fabric set-up that not every host of this
    # kind has, and a panel broadcast gains nothing from it.
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    uid = np.zeros(128, dtype=np.uint8)         # NCCL_UNIQUE_ID_BYTES
    if rank == 0:
        uid[:] = np.frombuffer(bytes(nccl.get_unique_id()), dtype=np.uint8)
    dask_ex._dask_bcast(uid, 0)
    comm = nccl.NcclCommunicator(size, uid.tobytes(), rank)
    lock = threading.Lock()
    lock.acquire()
    cached = key not in _COMMS
    if cached:
        _COMMS[key] = (comm, lock)
    ex = NCCLExchange(prefix, rank, size, comm, lock, cached)
    # NCCL connects the ranks at the first collective: do it here, not in round one
    ex.allreduce_sum(np.zeros(1, dtype=np.int64))
    return ex


# -- the client side ---------------------------------------------------------------------
def gather_ranks(client, futures, prefix: str) -> list[dict]:
    """The ranks' results.  When one fails, the others are told (the abort event) and
    the first error that is not a :class:`PeerFailedError` is raised once all stopped;
    the job's message queues are dropped in any case."""
    from distributed import Event, as_completed

    try:
        for fut in as_completed(futures):
            if fut.status == "error":
                Event(f"{prefix}-abort", client=client).set()
        errors = [f.exception() for f in futures if f.status == "error"]
        if errors:
            raise next((e for e in errors if not isinstance(e, PeerFailedError)), errors[0])
        return client.gather(futures)
    except BaseException:
        Event(f"{prefix}-abort", client=client).set()
        raise
    finally:
        client.run_on_scheduler(_forget_queues, prefix)


def _forget_queues(prefix: str, dask_scheduler=None) -> int:
    """On the scheduler: drop a job's message queues (some may hold unread futures)."""
    ext = dask_scheduler.extensions["queues"]
    names = [q for q in ext.queues if q.startswith(prefix + "-")]
    for name in names:
        ext.client_refcount[name] = 1
        ext.release(name=name)
    return len(names)


# -- the worker task -----------------------------------------------------------------------
def job_info(graph, dtype: str, backend: str) -> dict:
    """What every rank must agree on and can only learn from the whole graph: the
    methods to try (GPU), the largest |weight| and the sign of the weights (a scan of
    every weight: kept for the next job of the same graph)."""
    key = (graph.fingerprint, str(dtype), backend)
    if key in _INFO:
        return _INFO[key]
    info = {"n": graph.n, "name": graph.name, "nonneg": not graph.has_negative_weights,
            "wmax": float(np.abs(graph.weights).max()) if graph.m else 0.0, "methods": None}
    if backend == "gpu":
        info["methods"] = floyd_warshall.slab_methods(dtype, graph.weights, graph.n)
    _INFO.clear()
    _INFO[key] = info
    return info


_INFO: dict[tuple, dict] = {}


def load_rows(store, r0: int, r1: int):
    """The out-edges of rows ``r0:r1`` from the store's CSR: ``(indptr from 0, indices,
    weights)``; only the chunks holding them are read."""
    g = store.group["graph"]
    indptr = g["indptr"][r0:r1 + 1]
    lo, hi = int(indptr[0]), int(indptr[-1])
    return indptr - lo, g["indices"][lo:hi], g["weights"][lo:hi]


def fw_rank(store_path: str, fingerprint: str, run: str, prefix: str, rank: int, bounds,
            backend: str, dtype: str, info: dict, peers: tuple = (),
            exchange: str = "dask") -> dict:
    """Worker task: this rank's slab of the job's Floyd-Warshall matrix, kept in the
    process (:func:`mgapsp.jobs.tasks.cached_rows`) for the batch tasks that write it.  ``info`` is
    :func:`job_info`; the rank reads only its own rows' edges from the store.  ``run``
    names the run (see :func:`mgapsp.jobs.tasks.run_batch`)."""
    
    t0 = time.perf_counter()
    drop_slabs()
    r0, r1 = bounds[rank]
    size = len(bounds)
    dt = np.dtype(dtype)
    n = info["n"]
    want, exchange = exchange, None
    times = {}
    try:
        edges = load_rows(job_store(store_path, fingerprint, run), r0, r1)
        times["load_s"] = time.perf_counter() - t0
        if backend == "gpu":
            t1 = time.perf_counter()
            exchange = connect(prefix, rank, size, peers, want)
            times["connect_s"] = time.perf_counter() - t1
        else:
            exchange = DaskExchange(prefix, rank, size)
        dist, stats = floyd_warshall.slab_rows(get_backend(backend), n, r0, r1, edges, dt,
                                               exchange, bounds, info)
    except PeerFailedError:
        raise
    except BaseException:
        if exchange is not None:
            exchange.fail()
        else:           # failed before it could join: tell the peers all the same
            from distributed import Event

            Event(f"{prefix}-abort").set()
        raise
    finally:
        if exchange is not None:
            exchange.close()
    keep_slab(fingerprint, dt, r0, r1, dist)
    return {"rank": rank, "rows": r1 - r0, "worker": worker_name(),
            "exchange": exchange.kind if size > 1 else "none",
            "reused_communicator": getattr(exchange, "reused", False),
            "seconds": time.perf_counter() - t0, **times, **stats}


# -- the client side of a job ---------------------------------------------------------
def run_slabs(client, store, graph, plan, addresses: list[str], token: str, report):
    """Run the job's Floyd-Warshall as one slab per worker ; returns
    ``(bounds, address of each rank)`` for placing the batches."""
    bounds = slab_bounds(graph.n, len(addresses), plan.batch_size)
    ranks = addresses[:len(bounds)]
    prefix = f"apsp-fw-{token}"
    # GPU ranks exchange pivot rows with NCCL where every one has it (mgapsp.fw.exchange
    # = dask forces Dask's comms); CPU ranks through Dask
    exchange = config.get("fw.exchange") if plan.backend == "gpu" else "dask"
    t0 = time.perf_counter()
    info = job_info(graph, plan.dtype, plan.backend)
    t_info = time.perf_counter() - t0
    futures = [client.submit(fw_rank, store.path, graph.fingerprint, token, prefix,
                             r, bounds, plan.backend, plan.dtype, info, tuple(ranks), exchange,
                             key=f"{prefix}-{r}", workers=[addr], allow_other_workers=False,
                             pure=False)
               for r, addr in enumerate(ranks)]
    try:
        results = gather_ranks(client, futures, prefix)
    finally:
        for f in futures:
            f.release()
    report.floyd_warshall = {
        "ranks": len(ranks), "exchange": results[0]["exchange"],
        "method": results[0]["method"], "attempts": results[0].get("attempts", []),
        "seconds": time.perf_counter() - t0, "info_s": t_info,
        "exchanged_bytes": sum(r.get("exchanged_bytes", 0) for r in results),
        "per_rank": results}
    for r in results:
        report.compute_s += r["seconds"]
        if "gpu_s" in r:
            report.gpu_s[r["worker"]] += r["gpu_s"]
    return bounds, ranks

