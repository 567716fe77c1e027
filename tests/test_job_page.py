"""The job page (/mgapsp) in a real headless browser during a real job on a real
LocalCluster, and Dask's status page beside it.

The browser is Debian's ``chromium-headless-shell`` driven by Playwright's Python
package (no browser download); Bokeh draws titles on a canvas, so the page's texts are
read from its Bokeh document's models (/work/shared/NOTES.md).
"""

from __future__ import annotations

import re
import shutil
import threading
import time

import pytest

import mgapsp
from mgapsp.jobs.dashboard import page_link

BROWSER = "/usr/bin/chromium-headless-shell"
RENDERED = "Bokeh items were rendered successfully"

# every model text of the page's Bokeh documents: titles (drawn on canvas) and Divs
TEXTS = """() => {
  const out = [];
  for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
    for (const m of doc.all_models) {
      if (typeof m.text === "string") out.push(m.text);
    }
  }
  return out;
}"""


def _browser():
    """Playwright's Chromium on Debian's headless shell, or a skip saying what lacks."""
    if shutil.which(BROWSER) is None:
        pytest.skip(f"no {BROWSER} (apt-get install chromium-headless-shell)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright missing (pip install -e '.[test]')")
    return sync_api


def _open(browser, url: str, timeout_s: float = 30):
    """A page at ``url`` once Bokeh has drawn it."""
    page = browser.new_page(viewport={"width": 1100, "height": 1300})
    with page.expect_console_message(lambda m: RENDERED in m.text,
                                     timeout=timeout_s * 1000):
        page.goto(url)
    return page


def _rows(page) -> tuple[int, int]:
    """The page's "Rows: done / total" title, as numbers."""
    for text in page.evaluate(TEXTS):
        m = re.fullmatch(r"Rows: ([\d,]+) / ([\d,]+)", text)
        if m:
            return tuple(int(g.replace(",", "")) for g in m.groups())
    raise AssertionError(f"no 'Rows: done / total' on the page: {page.evaluate(TEXTS)}")


@pytest.mark.slow
def test_job_page_follows_a_job_in_a_browser(tmp_path, data_dir):
    sync_api = _browser()
    from distributed import Client, LocalCluster

    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    out = tmp_path / "rome99.zarr"
    # batches of two rows: a job of 1,677 batches, some seconds long on two workers,
    # of which Dask's scheduler holds only the driver's window at any time
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=BROWSER, args=["--no-sandbox"])
        done: dict = {}

        def job():
            try:
                done["result"] = mgapsp.apsp(graph, out=out, client=client,
                                             backend="cpu", batch_size=2)
            except BaseException as exc:     # the test's thread re-raises it
                done["error"] = exc

        worker = threading.Thread(target=job, daemon=True)
        worker.start()
        link = page_link(client)
        assert link.endswith("/mgapsp")
        # the page serves once the job registered the plugin, and shows the job once
        # the driver's plan reached the scheduler
        deadline = time.time() + 60
        while time.time() < deadline and not client.run_on_scheduler(
                lambda dask_scheduler: getattr(dask_scheduler, "_mgapsp_page", False)):
            time.sleep(0.1)
        page = _open(browser, link)
        first = _rows(page)
        while first[1] == 0 and time.time() < deadline:
            time.sleep(0.2)
            first = _rows(page)
        assert first[1] == graph.n          # the job's true row count, not the window's
        assert first[0] < graph.n, "the job ended before the page showed it"
        # the page moves while the job runs (updates pushed over its websocket); a
        # worker may pause a few seconds (loading the hierarchy's kernels, a loaded
        # machine), so it is given until the deadline
        later = first
        while later[0] <= first[0] and time.time() < deadline + 15:
            time.sleep(0.5)
            later = _rows(page)
        assert later[1] == graph.n and later[0] > first[0], (first, later)
        assert "error" not in done

        status = _open(browser, link.replace("/mgapsp", "/status"))
        titles = status.evaluate(TEXTS)
        assert any(t.startswith("Progress") for t in titles), titles
        # Dask's pages link to ours from their navigation bar
        assert status.locator("a[href$='mgapsp']").count() >= 1

        worker.join(120)
        assert not worker.is_alive()
        if "error" in done:
            raise done["error"]
        time.sleep(1.0)                     # a redraw after the last batch
        final = _rows(page)
        assert final == (graph.n, graph.n), final
        texts = page.evaluate(TEXTS)
        assert "Batches: stored 1,677" in texts, texts
        assert any("done in" in t for t in texts), texts
        browser.close()


@pytest.mark.slow
def test_the_screenshot_tool_draws_the_page_during_a_job(tmp_path, data_dir):
    """bench/job_page_screenshot.py (what drew the monitoring page's picture): a PNG of the page
    while the job runs, not before it and not after it."""
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which(BROWSER) is None:
        pytest.skip(f"no {BROWSER} (apt-get install chromium-headless-shell)")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "page.png"
    run = subprocess.run(
        [sys.executable, "-m", "bench.job_page_screenshot",
         str(data_dir / "NY.pace.gr.gz"), "--backend", "cpu", "--sources", "300",
         "--batch-size", "4", "--at", "0.2", "--settle", "1", "--browser", BROWSER,
         "--out", str(out)], capture_output=True, text=True, timeout=240, cwd=root)
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r"drawn at (\d+) of 300 rows stored", run.stdout)
    assert m and 0 < int(m.group(1)) < 300, run.stdout
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
