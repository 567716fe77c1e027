"""The ``mgapsp`` command line: run, info, verify, path.

User errors print one line, ``error: ...``, and exit with status 1 (2 for usage
errors, as click does); no traceback.  What a command says of a finished job or of a
store's metrics is in :mod:`.report`.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import time

import click
import numpy as np

from .. import __version__, algorithms
from ..errors import GraphFormatError, MgapspError, UnknownLabelError
from ..readers.text import FORMATS
from .report import Clock, metrics_line, summary



class _AlgorithmChoice(click.Choice):
    """``auto`` and the registered algorithms (:mod:`mgapsp.algorithms`), as they are when
    the command line is read."""

    def __init__(self):
        super().__init__(["auto"])

    @property
    def choices(self):
        return ("auto",) + algorithms.names()

    @choices.setter
    def choices(self, value):       # click.Choice sets it; the registry is the truth
        pass

#: damaged batches listed one per line, at most
_MAX_DAMAGED = 20


#: the longest error line printed: a message quoting a huge field is cut
_MAX_LINE = 500
#: a graph with negative weights and at most this many edges is checked for a negative
#: cycle on the CPU before the job's cluster starts
NEGATIVE_CHECK_EDGES = 2_000_000


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_LINE else text[:_MAX_LINE] + "..."


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (MgapspError, OSError) as exc:
            click.echo(f"error: {_one_line(exc)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("error: interrupted; continue the job with --resume", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:    # what no check above foresaw: still one line
            if (ctx.obj or {}).get("verbose", 0) >= 2:
                raise
            click.echo(f"error: {type(exc).__name__}: {_one_line(exc)} (-vv shows where)",
                       err=True)
            sys.exit(1)
        finally:
            # the process ends with the command: what it made is freed with it, not
            # walked first by the collections of the interpreter's exit
            gc.freeze()


@click.group(cls=_Group)
@click.version_option(version=__version__, package_name="mgapsp")
@click.option("-v", "--verbose", count=True,
              help="Log what mgapsp does on standard error (-vv: every batch).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def main(ctx, verbose, quiet):
    """All-pairs shortest paths on GPUs and CPUs, scheduled by Dask, stored in Zarr."""
    ctx.obj = {"quiet": quiet, "verbose": verbose}
    if verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s",
                                               "%H:%M:%S"))
        log = logging.getLogger("mgapsp")
        log.addHandler(handler)
        log.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)


def _cluster_options(command):
    """The options saying where a command's batches run: an attached cluster, or the
    embedded one and its devices."""
    options = [
        click.option("--backend", type=click.Choice(["auto", "gpu", "cpu"]), default="auto",
                     show_default=True, help="auto = gpu when CUDA devices are visible."),
        click.option("--scheduler", default=None, help="Address of a running Dask scheduler."),
        click.option("--scheduler-file", default=None, type=click.Path(dir_okay=False),
                     help="Scheduler file of a running Dask cluster."),
        click.option("--tls-ca-file", type=click.Path(exists=True, dir_okay=False),
                     default=None,
                     help="CA certificate of a TLS cluster (with --tls-cert and --tls-key)."),
        click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Client certificate for a TLS cluster."),
        click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Client private key for a TLS cluster."),
        click.option("--gpus", default=None,
                     help="GPUs of the embedded cluster, e.g. 0,2 (default: every visible "
                          "one)."),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Workers of the embedded cluster (default: one per GPU or core)."),
        click.option("--dashboard/--no-dashboard", default=None,
                     help="Serve the Dask dashboard of the embedded cluster (default: "
                          "yes, unless the job is one small batch, over before the page "
                          "would load)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@main.command()
@click.argument("graph", type=click.Path(dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(), help="Zarr store to write.")
@click.option("--format", "fmt", type=click.Choice(("auto",) + FORMATS), default="auto",
              show_default=True, help="Input format (auto: from the file's name and first "
              "lines).")
@click.option("--directed/--undirected", default=None,
              help="Override the format's directedness (undirected adds both directions).")
@click.option("--unweighted", is_flag=True, help="Ignore weights: every edge weighs 1.")
@click.option("--weight-column", default=None,
              help="Weight column (name or 0-based index) for TNTP and CSV inputs.")
@click.option("--algorithm", type=_AlgorithmChoice(), default="auto", show_default=True,
              help="phast: a contraction hierarchy built once per graph and kept beside "
                   "the store (road networks, non-negative weights; positive ones for "
                   "--predecessors).")
@click.option("--dtype", type=click.Choice(["auto", "float32", "float64"]), default="auto",
              show_default=True,
              help="auto: float32 where every distance is exact in it (integer weights, "
                   "sums within 2**24), else float64.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Sources per batch (default: from the graph and device memory).")
@click.option("--sources", "sources_file", type=click.Path(dir_okay=False, exists=True),
              default=None,
              help="File of source vertex ids (whitespace or comma separated).")
@click.option("--targets", "targets_file", type=click.Path(dir_okay=False, exists=True),
              default=None,
              help="File of target vertex ids: keep only these columns (many-to-many).")
@click.option("--predecessors", is_flag=True, help="Also store shortest-path predecessors.")
@click.option("--reverse", is_flag=True,
              help="Turn every arc of a directed graph around first: each row is then "
                   "the distances *into* its source (with --metrics, NetworkX's "
                   "closeness and harmonic centrality of a directed graph).")
@click.option("--metrics", default="",
              help="Also store, per source, from its row: closeness, harmonic, "
                   "eccentricity; and histogram, the distribution of all the distances, "
                   "and betweenness, each vertex's (summed over the job's sources) "
                   "(comma separated; reachable and distance_sum come with any).")
@click.option("--no-distances", is_flag=True,
              help="Store only the --metrics, not the rows: a store of megabytes.")
@click.option("--compression", type=click.Choice(["auto", "planes", "lz4", "zstd", "none"]),
              default="auto", show_default=True,
              help="Codec of the stored blocks: planes (mgapsp's own, made on the GPUs "
                   "at their pace; needs mgapsp installed to read), lz4 or zstd (Blosc, "
                   "bit-shuffled: lz4 fast, zstd smaller).  auto: planes for GPU jobs, "
                   "lz4 for CPU jobs.  A resumed store keeps its own.")
@click.option("--shards/--no-shards", default=True, show_default=True,
              help="Store each batch's rows as one file (a Zarr shard of its chunks); "
                   "--no-shards writes a file per chunk.  A resumed store keeps its own.")
@click.option("--resume", is_flag=True, help="Continue an interrupted store.")
@click.option("--overwrite", is_flag=True, help="Replace an existing store.")
@_cluster_options
@click.option("--cpu-workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU workers beside the GPU workers of the embedded cluster (hybrid).")
@click.option("--performance-report", type=click.Path(dir_okay=False), default=None,
              help="Save Dask's performance report of the job to this HTML file.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def run(graph, out, fmt, directed, unweighted, weight_column, algorithm, backend, dtype,
        batch_size, sources_file, targets_file, predecessors, reverse, metrics, no_distances,
        compression, shards, resume, overwrite,
        scheduler, scheduler_file, tls_ca_file, tls_cert, tls_key, cpu_workers, gpus, workers,
        dashboard,
        performance_report, quiet):
    """Compute shortest-path distances from every source of GRAPH into a Zarr store.

    \b
    Examples:
      mgapsp run rome99.gr -o rome99.zarr
      mgapsp run roads.gr.gz -o od.zarr --sources origins.txt --targets sinks.txt
      mgapsp run graph.csv -o m.zarr --metrics closeness,eccentricity --no-distances
    """
    clock = Clock()
    quiet = quiet or click.get_current_context().obj.get("quiet", False)
    from ..api import resolve_backend
    from ..plan import check_metrics, small_job
    from ..readers import read_graph
    from ..store import StoreLock, check_target, new_run_id

    if scheduler and scheduler_file:
        raise MgapspError("give --scheduler or --scheduler-file, not both")
    if resume and overwrite:
        raise MgapspError("--resume and --overwrite contradict each other; pick one")
    # the store's lock first: a second run on it stops here, before any work; it is
    # released when the command ends
    metrics = check_metrics(metrics)        # a wrong name: one line, before any work
    lock = click.get_current_context().with_resource(StoreLock(out, new_run_id()))
    state = check_target(out, resume=resume, overwrite=overwrite)
    if resume and state in ("absent", "empty", "remains"):
        click.echo(f"{out}: no store to resume there; a new one is started", err=True)
    clock.lap("store lock")
    g = read_graph(graph, format=fmt, directed=directed, unweighted=unweighted,
                   weight_column=weight_column)
    t_read = clock.lap("graph read")
    if reverse and g.directed:
        from ..metrics import reversed_graph

        g = reversed_graph(g)
    sources = read_ids(sources_file, g, "source") if sources_file else None
    targets = read_ids(targets_file, g, "target") if targets_file else None
    if g.has_negative_weights and g.m <= NEGATIVE_CHECK_EDGES:
        # a negative cycle: one line before any cluster or dashboard starts
        from ..backends import get_backend

        get_backend("cpu").potentials(g)
    clock.lap("checks")
    # Distributed and the cluster only now: bad input above is refused without them
    _cluster_logs()
    from ..jobs.cluster import connect, one_process, tls_security
    from ..jobs.dashboard import page_link
    from ..jobs.driver import run_job
    from ..progress import ProgressBar

    _imported()
    clock.lap("imports")

    security = tls_security(tls_ca_file, tls_cert, tls_key)
    attached = bool(scheduler or scheduler_file)
    if security is not None and not attached:
        raise MgapspError("TLS options attach to a running cluster: give --scheduler or "
                          "--scheduler-file too")
    if not attached:
        backend = resolve_backend(backend)
    if cpu_workers and (attached or backend != "gpu"):
        raise MgapspError("--cpu-workers adds CPU workers to the embedded GPU cluster; "
                          "it needs the gpu backend and no attached cluster")
    if gpus is not None and (attached or backend != "gpu"):
        raise MgapspError("--gpus picks the devices of the embedded GPU cluster; it does "
                          "not apply to the cpu backend or an attached cluster")
    bar = ProgressBar(enabled=not quiet)

    def on_start(report):
        p = report.plan
        click.echo(f"mgapsp: {g.name}: n={g.n:,} m={g.m:,} "
                   f"{'directed' if g.directed else 'undirected'} "
                   f"{'weighted' if g.weighted else 'unweighted'} (read in {t_read:.1f} s)")
        algo = (f"{p.algorithm} on gpu + {p.cpu_algorithm} on cpu" if p.backend == "hybrid"
                else f"{p.algorithm} on {p.backend}")
        click.echo(f"  job: {algo}, {p.dtype}, {p.n_sources:,} sources "
                   f"in {p.n_batches:,} batches of {p.batch_size}"
                   + (f", {report.resumed_batches} already done" if report.resumed_batches
                      else ""))
        if p.dtype_reason:
            click.echo(f"  dtype {p.dtype}: {p.dtype_reason}")
        bar.start(p.n_sources)

    small = small_job(g, g.n if sources is None else len(sources))
    alone = not attached and one_process(backend, gpus=gpus, n_workers=workers,
                                         cpu_workers=cpu_workers, small=small)
    dashboard = not small if dashboard is None else dashboard
    with connect(scheduler=scheduler, scheduler_file=scheduler_file, backend=backend,
                 n_workers=workers, dashboard=dashboard, processes=not alone,
                 security=security, gpus=gpus, cpu_workers=cpu_workers) as client:
        clock.lap("cluster start")
        if client.dashboard_link and dashboard:
            click.echo(f"  dashboard: {client.dashboard_link}")
            click.echo(f"  job page:  {page_link(client)}")
        with _maybe_performance_report(performance_report):
            report = run_job(g, out, client, algorithm=algorithm,
                             backend="hybrid" if cpu_workers else backend,
                             dtype=dtype, sources=sources, targets=targets,
                             batch_size=batch_size, predecessors=predecessors,
                             metrics=metrics, distances=not no_distances,
                             compression=compression, shards=shards,
                             resume=resume, overwrite=overwrite, lock=lock,
                             on_start=on_start,
                             on_progress=lambda r, done, total: bar.update(done, r.rows_run))
        n_workers = len(client.scheduler_info(n_workers=-1)["workers"])
        clock.skip()
    clock.lap("teardown")
    bar.finish()
    from ..store import store_size

    summary(out, report, n_workers, store_size(out))
    if click.get_current_context().obj.get("verbose"):
        click.echo(clock.summary(report), err=True)


def _imported() -> None:
    """The command's modules are imported: what they made lives as long as the process,
    so the garbage collector need not walk it again (a job's collections walked it for
    about 0.2 s on 2 cores, and the collections at exit for 0.45 s more)."""
    gc.freeze()


def _cluster_logs() -> None:
    """Before a command starts or attaches to a cluster (so that the others, and every
    refusal of bad input, never import Distributed).  A lost worker or scheduler ends
    the job with one line of ours; Dask's client would log its reconnection attempts
    and tracebacks besides, and asyncio a "Future exception was never retrieved" for a
    timeout of the cluster's shutdown, collected after our error line (seen on a
    loaded host).  Importing Distributed sets its loggers' levels from its
    configuration: first, then ours."""
    if click.get_current_context().obj.get("verbose"):
        return
    import distributed  # noqa: F401

    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def _maybe_performance_report(path):
    if not path:
        return contextlib.nullcontext()
    from distributed import performance_report

    return performance_report(filename=str(path))


def read_ids(path, graph, what: str = "source") -> np.ndarray:
    """Parse a file of vertex labels (separated by whitespace, commas or newlines, ``#``
    comments); an unknown label is an error naming its line."""
    labels, lines = [], []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            text = line.split("#", 1)[0].replace(",", " ")
            for tok in text.split():
                labels.append(tok)
                lines.append(lineno)
    if not labels:
        raise GraphFormatError(f"no {what} labels in the file", path)
    try:
        index = graph.index_of(labels, what=what)
    except UnknownLabelError:
        for tok, lineno in zip(labels, lines):
            try:
                graph.index_of([tok])
            except UnknownLabelError:
                raise GraphFormatError(
                    f"{what} {tok!r} is not a vertex of {graph.name or 'the graph'}",
                    path, lineno) from None
        raise
    return graph.labels[index]


class _Store(click.Path):
    """A store argument: a folder that exists, or a place in object storage
    (``s3://bucket/out.zarr``), which the command itself then looks at."""

    def __init__(self):
        super().__init__(exists=True, file_okay=False)

    def convert(self, value, param, ctx):
        from ..store.place import is_url

        return value if is_url(value) else super().convert(value, param, ctx)


STORE = _Store()


@main.command()
@click.argument("store", type=STORE)
def info(store):
    """Describe a store: the graph, the options and the progress.

    \b
    Example:
      mgapsp info rome99.zarr
    """
    from ..store import Store, store_size

    s = Store.open(store)
    a = s.attrs
    g, j, p = a["graph"], a["job"], a["progress"]
    click.echo(f"store: {store} ({store_size(store) / 2**20:.1f} MiB), format "
               f"{a['format_version']}, created {a['created']}")
    click.echo(f"graph: {g['name']}: n={g['n']:,} m={g['m']:,} "
               f"{'directed' if g['directed'] else 'undirected'} "
               f"{'weighted' if g['weighted'] else 'unweighted'}, min weight "
               f"{g['min_weight']:g}, fingerprint {a['fingerprint']}")
    click.echo(f"job: {j['algorithm']} on {j['backend']}, {j['dtype']}, {j['n_sources']:,} "
               f"sources x {j['n_targets']:,} targets, batches of {j['batch_size']}"
               + (", predecessors" if j["predecessors"] else ""))
    if j.get("dtype_reason"):
        click.echo(f"dtype {j['dtype']}: {j['dtype_reason']}")
    if j.get("distances", True):
        dist = s.group["distances"]
        click.echo(f"layout: chunks of {dist.chunks[0]:,} x {dist.chunks[1]:,}, "
                   f"{j.get('compression', 'zstd')}, "
                   + ("a file per batch (a shard of its chunks)" if dist.shards
                      else "a file per chunk"))
    else:
        click.echo("layout: metrics only (--no-distances), a chunk per batch")
    from ..store import StoreLock, batch_ranges, damaged_batches

    # progress from the batches' own flags, not the last record of it
    plan = s.plan()
    done = s.done_mask()
    rows = sum(plan.rows(int(k))[1] - plan.rows(int(k))[0] for k in np.flatnonzero(done))
    state = "complete" if done.all() else "incomplete"
    click.echo(f"progress: {rows:,}/{plan.n_sources:,} rows, {int(done.sum()):,}/"
               f"{plan.n_batches:,} batches ({state}), last recorded {p['updated']}")
    if s.unreadable_flags:
        click.echo(f"damaged: the flags of {len(s.unreadable_flags):,} batch(es) are "
                   f"unreadable: {', '.join(batch_ranges(s.unreadable_flags)[:20])}; "
                   "they count as not done (--resume or repair computes them again)")
    if j.get("metrics"):
        click.echo(metrics_line(s, done.all()))
    damaged = damaged_batches(s)
    if damaged:
        click.echo(f"damaged: {len(damaged):,} flagged batch(es) fail their checks: "
                   f"{', '.join(batch_ranges(damaged)[:20])}; `mgapsp repair {store}` "
                   "computes them again")
    holder = StoreLock(store, "").holder()
    if holder:
        click.echo(f"in use by run {holder.get('run', '?')} on {holder.get('host', '?')} "
                   f"(process {holder.get('pid', '?')}, since {holder.get('started', '?')})")
    if "last_run_seconds" in p:
        click.echo(f"last run: {p['last_run_rows']:,} rows in {p['last_run_seconds']} s")
    click.echo("versions: " + ", ".join(f"{k} {v}" for k, v in a["versions"].items()))


@main.command()
@click.argument("store", type=STORE)
@click.option("--samples", type=click.IntRange(min=1), default=64, show_default=True,
              help="Rows to recompute, drawn at random from the finished batches.")
@click.option("--all", "all_rows", is_flag=True, help="Recompute every row.")
@click.option("--seed", type=int, default=0, show_default=True)
def verify(store, samples, all_rows, seed):
    """Recompute rows with SciPy; exit 0 only if every one matches.

    \b
    Examples:
      mgapsp verify rome99.zarr --samples 64
      mgapsp verify rome99.zarr --all
    """
    from ..store.verify import verify_store

    from ..store import batch_ranges

    t0 = time.perf_counter()
    rep = verify_store(store, samples=samples, all_rows=all_rows, seed=seed)
    for batch, problem in sorted(rep.damaged.items())[:_MAX_DAMAGED]:
        click.echo(f"  batch {batch}: damaged: {problem}")
    if len(rep.damaged) > _MAX_DAMAGED:
        click.echo(f"  ... and {len(rep.damaged) - _MAX_DAMAGED:,} more damaged batches")
    if rep.missing_batches:
        click.echo(f"  batch(es) {', '.join(batch_ranges(rep.missing_batches)[:20])}: "
                   "not computed yet")
    click.echo(f"verify: {rep.rows_checked:,} rows checked against scipy in "
               f"{time.perf_counter() - t0:.1f} s; max abs error {rep.max_error:.3g}")
    if rep.rows_missing:
        click.echo(f"  {rep.rows_missing:,} rows not computed yet")
    if rep.mismatched_rows:
        shown = ", ".join(map(str, rep.mismatched_rows[:10]))
        click.echo(f"  {len(rep.mismatched_rows):,} rows differ (rows {shown})")
    if rep.bad_predecessors:
        click.echo(f"  {rep.bad_predecessors:,} predecessors inconsistent")
    if rep.histogram_batches:
        click.echo(f"  the distance histogram of batch(es) "
                   f"{', '.join(batch_ranges(rep.histogram_batches)[:20])} differs")
    if rep.betweenness_batches:
        click.echo(f"  the betweenness sums of batch(es) "
                   f"{', '.join(batch_ranges(rep.betweenness_batches)[:20])} differ from "
                   "NetworkX's Brandes")
    elif rep.betweenness_checked:
        click.echo(f"  betweenness: batch(es) "
                   f"{', '.join(batch_ranges(rep.betweenness_checked)[:20])} equal to "
                   "NetworkX's Brandes")
    if not rep.ok:
        hint = f"; `mgapsp repair {store}` computes damaged batches again" if rep.damaged else ""
        click.echo(f"error: verification failed{hint}", err=True)
        sys.exit(1)
    click.echo("  ok")


@main.command()
@click.argument("store", type=STORE)
@_cluster_options
def repair(store, backend, scheduler, scheduler_file, tls_ca_file, tls_cert, tls_key,
           gpus, workers, dashboard):
    """Check every chunk of STORE against its checksum and compute the damaged (and
    missing) batches again.

    \b
    Example:
      mgapsp repair rome99.zarr
    """
    from ..api import resolve_backend
    _cluster_logs()
    from ..jobs.cluster import connect, tls_security
    from ..jobs.driver import check_for_repair, repair_job
    from ..store import batch_ranges

    t0 = time.perf_counter()
    damaged, todo = check_for_repair(store)
    click.echo(f"repair: {store}: every chunk checked in {time.perf_counter() - t0:.1f} s; "
               + (f"{len(damaged):,} damaged batch(es): "
                  f"{', '.join(batch_ranges(damaged)[:20])}" if damaged else "no damage"))
    for batch, problem in sorted(damaged.items())[:_MAX_DAMAGED]:
        click.echo(f"  batch {batch}: {problem}")
    if not todo:
        click.echo("  nothing to compute")
        return
    security = tls_security(tls_ca_file, tls_cert, tls_key)
    if not (scheduler or scheduler_file):
        backend = resolve_backend(backend)
    with connect(scheduler=scheduler, scheduler_file=scheduler_file, backend=backend,
                 n_workers=workers, dashboard=dashboard is not False, security=security,
                 gpus=gpus) as client:
        report = repair_job(store, client, backend=backend)
    click.echo(f"  computed {report.rows_run:,} rows in {report.seconds:.2f} s; "
               f"`mgapsp verify {store}` checks them")


@main.command()
@click.argument("store", type=STORE)
@click.argument("u")
@click.argument("v")
def path(store, u, v):
    """Print a shortest path from U to V (vertex labels), from stored predecessors.

    \b
    Example (a store made with --predecessors):
      mgapsp path rome99.zarr 1 100
    """
    from ..results import Result

    result = Result(store)
    hops = result.path(u, v)
    if hops is None:
        click.echo(f"no path from {u} to {v}")
        sys.exit(1)
    click.echo(" -> ".join(str(x) for x in hops))
    click.echo(f"distance {result.distance(u, v):g}, {len(hops) - 1} edges")
