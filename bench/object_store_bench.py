"""A GPU job's rows into object storage (``s3://``) against the same job into a local
folder, in one run on one machine.

    python -m bench.object_store_bench [--sources 8192] [--repeats 2] [--out bench]

The job: ``--sources`` rows of the NY road network by ``phast`` (hierarchy built
once beforehand, kept for every run) on a ``LocalCUDACluster`` of every GPU here,
``mgapsp.apsp(graph, out=...)``, wall clock; the local runs and the object-store
runs alternate.  The S3 server is moto's server mode (``tests/s3_local.py``), the
S3-protocol server the package managers here install; its own rate of whole-object
PUTs (obstore, 16 MiB objects, 8 at a time) and the folder's rate of whole-file
writes are measured beside the jobs, to say what bounds each.

Writes ``object-store-<date>-<gpu>.md`` and ``.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tests.s3_local import S3Server

ROOT = Path(__file__).resolve().parents[1]

OBJECT = 16 * 2**20
OBJECTS = 64


def put_rate(put, threads: int = 8) -> float:
    """Bytes per second of ``put(i, data)`` for ``OBJECTS`` objects of ``OBJECT``
    bytes, ``threads`` at once."""
    data = np.random.default_rng(0).bytes(OBJECT)
    t = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: put(i, data), range(OBJECTS)))
    return OBJECTS * OBJECT / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mgapsp-objects-"))
    server = S3Server(work, record=False).start()
    os.environ.update(server.env)
    # one hierarchy folder for every run (workers read the variable as Dask config)
    os.environ["DASK_MGAPSP__PHAST__HIERARCHY_DIR"] = str(work / "hierarchies")
    server.create_bucket("mgapsp-bench")
    try:
        import cupy
        from dask_cuda import LocalCUDACluster
        from distributed import Client

        import mgapsp
        from mgapsp.store import store_size
        from mgapsp.store.objects import bucket

        gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        graph = mgapsp.read_graph(ROOT / "tests" / "data" / "NY.pace.gr.gz")
        sources = graph.labels[:args.sources]
        local, remote = str(work / "ny.zarr"), "s3://mgapsp-bench/runs/ny.zarr"
        runs: dict[str, list[float]] = {"local": [], "s3": []}
        sizes = {}
        with LocalCUDACluster(dashboard_address=None) as cluster, Client(cluster) as client:
            n_gpus = len(client.scheduler_info()["workers"])

            def job(out):
                t = time.perf_counter()
                mgapsp.apsp(graph, out=out, sources=sources, algorithm="phast",
                            client=client, overwrite=True)
                return time.perf_counter() - t

            first = job(local)                   # builds the hierarchy, compiles
            print(f"first local job (hierarchy built): {first:.2f} s", flush=True)
            for _ in range(args.repeats):
                for kind, out in (("local", local), ("s3", remote)):
                    runs[kind].append(job(out))
                    sizes[kind] = store_size(out)
                    print(f"{kind}: {runs[kind][-1]:.2f} s, "
                          f"{args.sources / runs[kind][-1]:,.0f} rows/s", flush=True)
            check = mgapsp.Result(remote)["distances"][-1]
            want = mgapsp.Result(local)["distances"][-1]
            if not np.array_equal(check, want):
                raise SystemExit("the object store's rows differ from the folder's")
        b = bucket("s3://mgapsp-bench/raw/x")
        s3_rate = put_rate(lambda i, d: b.put(f"o{i}", d))
        (work / "raw").mkdir()
        disk_rate = put_rate(lambda i, d: (work / "raw" / f"o{i}").write_bytes(d))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    rows = {k: args.sources / v for k, v in med.items()}
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "gpu": gpu, "gpus": n_gpus, "cpus": os.cpu_count(), "sources": args.sources,
              "runs_s": runs, "median_s": med, "rows_per_s": rows, "store_bytes": sizes,
              "moto_put_bytes_per_s": s3_rate, "disk_write_bytes_per_s": disk_rate}
    ratio = rows["s3"] / rows["local"]
    text = "\n".join([
        f"# A GPU job into object storage against a local folder, {dt.date.today()}", "",
        f"{n_gpus} x {gpu}, {os.cpu_count()} CPU cores. NY road network, "
        f"{args.sources:,} sources by phast (hierarchy built beforehand), "
        f"`mgapsp.apsp(graph, out=...)` on a LocalCUDACluster, wall clock, median of "
        f"{args.repeats}, the runs alternating. The S3 server is moto's server mode on "
        "this machine. `python -m bench.object_store_bench`", "",
        "| store | time | rows/s | stored |", "|---|---|---|---|",
        f"| local folder | {med['local']:.2f} s | {rows['local']:,.0f} | "
        f"{sizes['local'] / 2**30:.2f} GiB |",
        f"| s3:// (moto) | {med['s3']:.2f} s | {rows['s3']:,.0f} ({ratio:.2f}x) | "
        f"{sizes['s3'] / 2**30:.2f} GiB |", "",
        f"What bounds them, measured beside the jobs ({OBJECTS} objects of 16 MiB, 8 at "
        f"once): moto takes whole-object PUTs at {s3_rate / 1e9:.2f} GB/s; the local "
        f"folder takes whole files at {disk_rate / 1e9:.2f} GB/s. The job wrote "
        f"{sizes['s3'] / med['s3'] / 1e9:.2f} GB/s into moto and "
        f"{sizes['local'] / med['local'] / 1e9:.2f} GB/s into the folder.", ""])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"object-store-{dt.date.today()}-{gpu.replace(' ', '-')}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
