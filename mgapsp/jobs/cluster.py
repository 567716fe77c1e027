"""Getting a Dask client: attach to a running cluster or start the embedded default.

The embedded default is a ``LocalCUDACluster`` with one worker per visible GPU when the
GPU backend runs; for the CPU backend one worker inside this process with a thread
per core (its kernels release the GIL: see :mod:`mgapsp.backends.cpu`), or, where they
cannot run (no Numba) or ``n_workers`` asks for more, a ``LocalCluster`` of
single-threaded worker processes, one per core (SciPy's kernels hold the GIL).  Dashboards bind to 127.0.0.1.  Its
scheduler and workers listen on 127.0.0.1 too, which any user of a shared host can
reach: by default (``mgapsp.cluster.tls``) every connection uses TLS with a key and
certificate made for that one run and held in memory, so only this process and the
workers it starts can talk to the scheduler.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import warnings

from distributed.diagnostics.plugin import WorkerPlugin

from .. import config
from ..backends.cpu import multicore
from ..errors import MgapspError
from .dashboard import add_page

__all__ = ["connect", "cpu_threads", "one_process", "embedded_security", "tls_security", "parse_gpus", "ConfigPlugin"]

log = logging.getLogger(__name__)

_TLS_MODES = {"auto": "auto", "true": "true", "1": "true", "yes": "true", "on": "true",
              "false": "false", "0": "false", "no": "false", "off": "false"}


class ConfigPlugin(WorkerPlugin):
    """Gives every worker of a cluster (those joining later too) this process's
    mgapsp settings (:func:`mgapsp.config.settings`); a worker's own ``MGAPSP_*``
    variables still win there."""

    name = "mgapsp-config"

    def __init__(self, values: dict | None = None):
        self.values = config.settings() if values is None else dict(values)

    def setup(self, worker=None) -> None:
        import dask.config

        dask.config.set(self.values)


def parse_gpus(text: str) -> str:
    """Validate a "0,2"-style device list; returns it normalized."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items or not all(t.isdigit() for t in items) or len(set(items)) != len(items):
        raise MgapspError(f"--gpus takes distinct device numbers like 0,2; got {text!r}")
    return ",".join(items)


def tls_security(ca_file: str | None, cert: str | None, key: str | None):
    """``distributed.Security`` for a TLS cluster, or None when no file is given."""
    if not (ca_file or cert or key):
        return None
    missing = [name for name, v in (("--tls-ca-file", ca_file), ("--tls-cert", cert),
                                     ("--tls-key", key)) if not v]
    if missing:
            raise MgapspError(f"TLS needs a CA file, a certificate and a key; missing "
                          f"{', '.join(missing)}")
    from distributed import Security

    return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key,
                    require_encryption=True)


@contextlib.contextmanager
def connect(*, scheduler: str | None = None, scheduler_file: str | None = None,
            backend: str = "cpu", n_workers: int | None = None, dashboard: bool = True,
            quiet: bool = True, security=None, gpus: str | None = None,
            cpu_workers: int = 0, processes: bool = True):
    """Yield a ``distributed.Client``; an embedded cluster is closed on exit.

    ``security`` (a ``distributed.Security``) is used to attach to a TLS cluster.
    ``gpus`` ("0,2") picks the devices of the embedded ``LocalCUDACluster``; by
    default it uses every visible one (``CUDA_VISIBLE_DEVICES`` respected).  Each
    GPU worker runs ``mgapsp.cluster.gpu-worker-threads`` threads, so that batches' copies back
    and Zarr writes overlap other batches' kernels, and advertises the resource
    ``GPU=1``.  ``cpu_workers`` adds that many single-threaded CPU workers (no GPU
    visible) beside the GPU ones: each takes batches at its own pace with the CPU
    backend.  The embedded cluster uses TLS with credentials made for this run unless
    ``mgapsp.cluster.tls`` is false (:func:`embedded_security`); its client gets them
    from the cluster.

    ``processes=False`` starts the embedded cluster inside this process: one worker
    (of that many threads) that runs tasks on threads, no process spawned, no TCP
    listener (so no TLS either; the dashboard still serves on 127.0.0.1).  It is what
    :func:`one_process` picks for a job that one worker does best.
    """
    from distributed import Client

    if scheduler and scheduler_file:
        raise MgapspError("give either a scheduler address or a scheduler file, not both")
    if scheduler or scheduler_file:
        with _attach(scheduler, scheduler_file, security) as client:
            yield client
        return
    # dashboard_address=None alone still serves a dashboard on a random port.  With a
    # dashboard, its HTTP server starts with the scheduler and its pages a moment later
    # (see _dashboard_pages_later).
    options = dict(host="127.0.0.1", silence_logs=None,
                   dashboard_address=config.get("cluster.dashboard-address") if dashboard else None,
                   scheduler_kwargs={"dashboard": False})
    # Task errors reach the client as exceptions; the workers need not log them too.
    level = logging.CRITICAL if quiet else logging.WARNING
    options["silence_logs"] = level
    if _importing_main_in_a_worker():
        # a script without the __main__ guard, imported again by a worker process
        # being started: leave quietly, and the script's own process says what to add
        os._exit(3)
    if not processes:
        _tls_mode()             # nothing listens on TCP: no TLS, but a bad value is told
        with _interrupt_held() as held, _quiet_logs(level), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Port .* is already in use")
            cluster = _in_process_cluster(backend, gpus, options)
        with cluster, Client(cluster) as client, _dashboard_pages_later(cluster, dashboard), \
                _write_threads(_cpu_worker_threads() if backend == "cpu" else 1):
            if held:
                raise KeyboardInterrupt
            yield client
        return
    options["security"] = embedded_security()
    with _interrupt_held() as held, _quiet_logs(level), warnings.catch_warnings(), \
            _explain_unguarded_script():
        # "Port 8787 is already in use": another port is taken, and the link we
        # print says which.
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        if backend == "gpu":
            from dask_cuda import LocalCUDACluster

            if gpus is not None:
                options["CUDA_VISIBLE_DEVICES"] = parse_gpus(gpus)
            cluster = LocalCUDACluster(n_workers=n_workers,
                                       threads_per_worker=config.get("cluster.gpu-worker-threads"),
                                       resources={"GPU": 1}, **options)
        else:
            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=n_workers or os.cpu_count() or 1,
                                   threads_per_worker=1, processes=True, **options)
    # Client(cluster) takes the cluster's credentials (cluster.security).
    with cluster, Client(cluster) as client, _dashboard_pages_later(cluster, dashboard):
        if held:                # Ctrl-C while it started: now that it closes cleanly
            raise KeyboardInterrupt
        if cpu_workers:
            _add_cpu_workers(cluster, cpu_workers, options)
            client.wait_for_workers(len(cluster.worker_spec), timeout=120)
        yield client


@contextlib.contextmanager
def _write_threads(threads: int):
    """An in-process CPU worker of several threads compresses with as many: the store's
    default of one write thread is for a worker process per core
    (``mgapsp.store.write-threads`` set by the user wins)."""
    import dask.config

    if threads <= 1 or config.get("store.write-threads") is not None:
        yield
        return
    with dask.config.set({"mgapsp.store.write-threads": threads}):
        yield


@contextlib.contextmanager
def _interrupt_held():
    """Hold a Ctrl-C (SIGINT) that comes while a cluster starts, and yield a list that
    holds it once it came: the caller raises it when the cluster has started.  A
    cluster interrupted half started cannot be closed (its workers are neither running
    nor closed), and Dask's exit hook then prints a page of tracebacks.  Only the main
    thread receives signals; where another thread starts the cluster, or the program
    has its own handler, nothing is held."""
    held: list[int] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


#: seconds into the embedded cluster's life when its dashboard pages are made: making
#: them held the interpreter's lock for 0.5-0.6 s of a 1.1 s CPU job on 16 cores
#: (Austin, all pairs), whose threads need it between batches
DASHBOARD_DELAY = 3.0


@contextlib.contextmanager
def _dashboard_pages_later(cluster, dashboard: bool):
    """Add the dashboard's pages to the scheduler's running HTTP server after
    :data:`DASHBOARD_DELAY` seconds, and point the client's dashboard link at the
    loopback address the server listens on.

    Making the pages imports Bokeh, which takes a second or more of one core: as long
    as a small job.  A job over sooner never pays for it; a longer one gets its
    dashboard a few seconds late.  Should the pages fail, the job goes on without them.
    """
    if not dashboard:
        yield
        return
    import dask.config

    def attach():
        try:
            from distributed.dashboard import scheduler as pages

            sched = cluster.scheduler

            def make_pages():
                pages.connect(sched.http_application, sched.http_server, sched, prefix="/")
                try:
                    add_page(sched, prefix="/")     # mgapsp's job page, beside Dask's
                except Exception as exc:
                    log.debug("the job page could not be made: %s", exc)

            cluster.loop.add_callback(make_pages)
        except Exception as exc:       # an optional page must never stop a job
            log.debug("the dashboard's pages could not be made: %s", exc)

    timer = threading.Timer(DASHBOARD_DELAY, attach)
    timer.daemon = True
    timer.start()
    address = str(config.get("cluster.dashboard-address"))
    host = address.rsplit(":", 1)[0] or "127.0.0.1"
    try:
        with dask.config.set({"distributed.dashboard.link":
                              f"http://{host}:{{port}}/status"}):
            yield
    finally:
        timer.cancel()


def one_process(backend: str, *, gpus: str | None = None, n_workers: int | None = None,
                cpu_workers: int = 0, small: bool = False) -> bool:
    """Whether the embedded cluster of a job is best this process alone: where one
    worker is all there is, a GPU worker on the one GPU this process sees, a CPU
    worker for a job of one small batch (``small``), or a CPU worker of a thread per
    core where the CPU kernels release the GIL.  Starting worker processes takes
    seconds (each imports Dask, Zarr, SciPy and CuPy again, and talks TLS to the
    scheduler); a job of a few seconds would spend most of its time on it."""
    if cpu_workers or (n_workers or 1) != 1:
        return False
    if backend == "gpu":
        from ..gpu_count import gpu_count

        return gpu_count() == 1 and (gpus is None or parse_gpus(gpus) == "0")
    return small or multicore()


def cpu_threads() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _in_process_cluster(backend: str, gpus: str | None, options: dict):
    """A ``LocalCluster`` of one worker on this process's threads (``inproc://``)."""
    from distributed import LocalCluster

    options = {k: v for k, v in options.items() if k != "host"}
    if backend == "gpu":
        return LocalCluster(n_workers=1, processes=False,
                            threads_per_worker=config.get("cluster.gpu-worker-threads"),
                            resources={"GPU": 1}, **options)
    return LocalCluster(n_workers=1, threads_per_worker=_cpu_worker_threads(),
                        processes=False, **options)


def _cpu_worker_threads() -> int:
    """Threads of the in-process CPU worker: one per core where the kernels release
    the GIL; with SciPy's, more would only queue for it."""
    return cpu_threads() if multicore() else 1


def embedded_security():
    """The ``distributed.Security`` of an embedded cluster: a key and a self-signed
    certificate made now, in memory, that the scheduler, the workers and the client all
    present and all require (mutual TLS); None for plain TCP.

    ``mgapsp.cluster.tls``: ``auto`` (TLS when the ``cryptography`` package is
    installed, else plain TCP and a warning), ``true`` (TLS or an error), ``false``.
    """
    mode = _tls_mode()
    if mode == "false":
        return None
    from distributed import Security

    try:
        return Security.temporary()
    except ImportError:  # distributed needs cryptography to make the certificate
        if mode == "true":
            raise MgapspError("mgapsp.cluster.tls is true but the cryptography package is "
                              "missing: pip install cryptography") from None
    log.warning("the embedded Dask cluster runs without TLS, so other users of this host "
                "can send it work: pip install cryptography to protect it (or set "
                "mgapsp.cluster.tls to false)")
    return None


def _tls_mode() -> str:
    """``mgapsp.cluster.tls`` read as ``auto``, ``true`` or ``false``; anything else is
    one error (also where no TLS is needed, so that a typo never passes unseen)."""
    value = config.get("cluster.tls")
    mode = _TLS_MODES.get(str(value).strip().lower())
    if mode is None:
        raise MgapspError(f"mgapsp.cluster.tls must be auto, true or false, got {value!r}")
    return mode


def _importing_main_in_a_worker() -> bool:
    """True in a process that multiprocessing is starting and that runs the parent's
    script again as ``__mp_main__`` (what a script without the guard does)."""
    import multiprocessing

    # multiprocessing's own test for this (it raises, in every worker, a page long)
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


@contextlib.contextmanager
def _explain_unguarded_script():
    """Worker processes that fail to start because a script lacks the guard become one
    line saying what to add."""
    import sys

    try:
        yield
    except Exception as exc:
        script = getattr(sys.modules.get("__main__"), "__file__", None)
        if script and "failed to start" in str(exc):
            raise MgapspError(
                f"the embedded cluster's worker processes did not start: each one imports "
                f"{os.path.basename(script)}, so put the code that calls mgapsp under "
                "`if __name__ == \"__main__\":`") from None
        raise


def _add_cpu_workers(cluster, count: int, options: dict) -> None:
    from distributed import Nanny

    # the scheduler's scheme (tls or tcp) and credentials, as the cluster's own workers
    protocol = cluster.scheduler_address.split("://", 1)[0]
    for i in range(count):
        cluster.worker_spec[f"cpu-{i}"] = {"cls": Nanny, "options": {
            "nthreads": 1, "host": options["host"], "silence_logs": options["silence_logs"],
            "protocol": protocol, "security": cluster.security,
            "env": {"CUDA_VISIBLE_DEVICES": ""}}}
    cluster.sync(cluster._correct_state)


def _attach(scheduler, scheduler_file, security):
    """A client of a running cluster; a failure to attach becomes one clear error."""
    where = scheduler or f"the scheduler of {scheduler_file}"
    address = scheduler
    if scheduler_file:
        try:
            with open(scheduler_file) as fh:
                address = json.load(fh)["address"]
        except (OSError, ValueError, KeyError) as exc:
            raise MgapspError(f"cannot read the scheduler address from {scheduler_file}: "
                              f"{exc}") from None
        where = f"{address} (from {scheduler_file})"
    if str(address).startswith("tls://") and security is None:
        security = _beside(scheduler_file)
        if security is None:
            raise MgapspError(f"the scheduler at {where} uses TLS; give --tls-ca-file, "
                              "--tls-cert and --tls-key")
    try:
        return _client_within(address, security, config.get("cluster.connect-timeout"))
    except Exception as exc:  # distributed raises OSError, TimeoutError, TypeError...
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MgapspError(f"cannot connect to the Dask scheduler at {where}: "
                          f"{reason}") from None


def _client_within(address, security, seconds: float):
    """``Client(address)``, or TimeoutError after ``seconds``.  Distributed's own timeout
    does not bound a scheduler that takes the connection and never answers (a stopped
    process): the handshake it cancels is awaited until it ends, which is never.  So the
    client is made on a thread of its own, which is left behind where it does not end."""
    from distributed import Client

    made: dict = {}

    def attach():
        try:
            made["client"] = Client(address, security=security, timeout=f"{seconds}s")
        except BaseException as exc:    # noqa: BLE001 - handed to the caller
            made["error"] = exc

    thread = threading.Thread(target=attach, name="mgapsp-attach", daemon=True)
    thread.start()
    thread.join(seconds + 5)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {seconds:g} s (is the scheduler stopped "
                           "or overloaded?)")
    if "error" in made:
        raise made["error"]
    return made["client"]


def _beside(scheduler_file):
    """The TLS credentials that ``cluster/start-cluster.sh`` makes beside its
    scheduler file (``FILE.tls/{ca,cert,key}.pem``), or None where there are none."""
    if not scheduler_file:
        return None
    folder = f"{os.fspath(scheduler_file)}.tls"
    files = [os.path.join(folder, f) for f in ("ca.pem", "cert.pem", "key.pem")]
    if not all(os.path.isfile(f) for f in files):
        return None
    return tls_security(*files)


@contextlib.contextmanager
def _quiet_logs(level):
    names = ("distributed", "distributed.scheduler", "distributed.nanny",
             "distributed.worker", "distributed.core", "distributed.http.proxy")
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    for logger, _ in saved:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, lvl in saved:
            logger.setLevel(lvl)
