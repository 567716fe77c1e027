"""A screenshot of the job page (``/mgapsp``) while a real job runs, as a user sees it
in a browser: the job on a ``LocalCUDACluster`` (``--backend gpu``, every GPU of this
machine) or a ``LocalCluster`` (``--backend cpu``), the page drawn by headless
Chromium once the job has stored ``--at`` of its rows.

    python -m bench.job_page_screenshot GRAPH --out docs/job-page-gpu.png
        [--backend gpu] [--sources 32768] [--batch-size 256] [--algorithm auto]
        [--at 0.5] [--browser chromium-headless-shell]

The store is written to a temporary folder and removed.  Prints the rows stored when
the page was drawn and the job's end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import mgapsp
from mgapsp.jobs.dashboard import JobPagePlugin, page_link


def _rows_stored(dask_scheduler) -> tuple[int, int]:
    plugin = dask_scheduler.plugins.get(JobPagePlugin.name)
    job = plugin.board.latest if plugin is not None else None
    return (0, 0) if job is None else (job.rows_stored, job.n_rows)


def _cluster(backend: str):
    if backend == "gpu":
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(host="127.0.0.1", dashboard_address="127.0.0.1:0")
    from distributed import LocalCluster

    return LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                        dashboard_address="127.0.0.1:0")


def shoot(browser: str, url: str, out: Path, settle_s: float) -> None:
    """Headless Chromium draws ``url``; once Bokeh says it has rendered the page's
    documents and ``settle_s`` more seconds have passed (the plots' first updates),
    the page is captured through the DevTools protocol (Tornado's websocket client:
    no driver to install beside the browser)."""
    import json
    import re
    import urllib.request

    from tornado.ioloop import IOLoop

    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([browser, "--no-sandbox", "--hide-scrollbars",
                                 "--remote-debugging-port=0", "--window-size=1280,1200",
                                 "about:blank"], stderr=log, stdout=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            endpoint = None
            deadline = time.time() + 30
            while endpoint is None and time.time() < deadline and proc.poll() is None:
                time.sleep(0.1)
                log.seek(0)
                m = re.search(r"DevTools listening on ws://([^/]+)/", log.read())
                endpoint = m and m.group(1)
            if endpoint is None:
                raise SystemExit(f"{browser} did not start its DevTools endpoint")
            req = urllib.request.Request(f"http://{endpoint}/json/new?about:blank",
                                         method="PUT")
            target = json.loads(urllib.request.urlopen(req, timeout=30).read())
            png = IOLoop.current().run_sync(
                lambda: _capture(target["webSocketDebuggerUrl"], url, settle_s),
                timeout=180)
        finally:
            # the browser's own children (renderer, GPU process) too: killing the
            # browser alone left them running after every screenshot
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png)


async def _capture(ws_url: str, url: str, settle_s: float) -> bytes:
    """The DevTools session of one tab: open ``url``, wait for Bokeh's drawing, then
    ``settle_s`` seconds, and return the tab's PNG."""
    import asyncio
    import base64
    import json

    from tornado.websocket import websocket_connect

    ws = await websocket_connect(ws_url, max_message_size=2**28)
    calls = iter(range(1, 1000))

    async def call(method: str, **params) -> dict:
        key = next(calls)
        await ws.write_message(json.dumps({"id": key, "method": method, "params": params}))
        while True:
            msg = json.loads(await ws.read_message())
            if msg.get("id") == key:
                return msg.get("result", {})
            seen.append(msg)

    seen: list = []
    await call("Runtime.enable")
    await call("Page.navigate", url=url)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60

    def rendered(msg) -> bool:
        return msg.get("method") == "Runtime.consoleAPICalled" and any(
            RENDERED in str(a.get("value", "")) for a in msg["params"]["args"])

    while not any(rendered(m) for m in seen) and loop.time() < deadline:
        try:
            seen.append(json.loads(await asyncio.wait_for(ws.read_message(),
                                                          deadline - loop.time())))
        except asyncio.TimeoutError:
            raise SystemExit(f"Bokeh did not draw {url} in 60 s") from None
    await asyncio.sleep(settle_s)
    shot = await call("Page.captureScreenshot", format="png")
    ws.close()
    return base64.b64decode(shot["data"])


#: the line Bokeh's client writes to the console once it has drawn a document
RENDERED = "Bokeh items were rendered successfully"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--backend", default="gpu", choices=("gpu", "cpu"))
    ap.add_argument("--sources", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--at", type=float, default=0.5,
                    help="draw the page once this fraction of the rows is stored")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds between Bokeh's first drawing and the screenshot")
    ap.add_argument("--browser", default="chromium-headless-shell")
    args = ap.parse_args()
    browser = shutil.which(args.browser) or args.browser
    graph = mgapsp.read_graph(args.graph)
    sources = None if args.sources is None else graph.labels[:args.sources]
    from distributed import Client

    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp, \
            _cluster(args.backend) as cluster, Client(cluster) as client:
        done: dict = {}

        def job():
            try:
                done["result"] = mgapsp.apsp(graph, sources=sources, out=Path(tmp, "job.zarr"),
                                             client=client, backend=args.backend,
                                             algorithm=args.algorithm,
                                             batch_size=args.batch_size)
            except BaseException as exc:      # re-raised below
                done["error"] = exc

        t0 = time.perf_counter()
        thread = threading.Thread(target=job, daemon=True)
        thread.start()
        stored, total = 0, 0
        while thread.is_alive() and (total == 0 or stored < args.at * total):
            time.sleep(0.05)
            stored, total = client.run_on_scheduler(_rows_stored)
        if not thread.is_alive():
            raise SystemExit(f"the job ended before {args.at:.0%} of it was stored "
                             f"({done.get('error', 'finished')}); give it more rows")
        link = page_link(client)
        shoot(browser, link, args.out, args.settle)
        print(f"{args.out}: drawn at {stored:,} of {total:,} rows stored "
              f"({time.perf_counter() - t0:.1f} s into the job)", flush=True)
        thread.join()
        if "error" in done:
            raise done["error"]
        print(f"job done in {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
