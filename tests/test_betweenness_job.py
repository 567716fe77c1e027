"""``mgapsp run --metrics betweenness`` (issue 55): each batch's dependency sums in the
store, summed when read; equal to NetworkX's betweenness over every vertex or over
sampled sources; resumed batches add up to the same; verify recomputes a batch with
NetworkX's own Brandes; jobs it cannot answer are refused before anything is written."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest

import mgapsp
from mgapsp import MgapspError

from tests.test_cli import mgapsp_cli
from tests.test_betweenness import _networkx, _same


def _job(g, out, client, **kw):
    from mgapsp.jobs.driver import run_job

    return run_job(g, out, client, metrics=("betweenness",), distances=False, **kw)


@pytest.mark.slow
def test_a_job_is_networkxs_and_resumes(cpu_client, data_dir, tmp_path):
    from mgapsp.store import Store
    from mgapsp.store.verify import verify_store

    g = mgapsp.read_graph(data_dir / "USAir97.mtx")         # float weights
    G = _networkx(g)
    out = tmp_path / "b.zarr"
    _job(g, out, cpu_client, batch_size=48)
    res = mgapsp.open(out)
    want = nx.betweenness_centrality(G, weight="w")
    _same(res.betweenness(), want)
    _same(res.betweenness(normalized=False), nx.betweenness_centrality(
        G, weight="w", normalized=False))
    with pytest.raises(MgapspError, match="Result.betweenness"):
        res.metric("betweenness")
    rep = verify_store(out, samples=8)
    assert rep.ok and len(rep.betweenness_checked) == 1
    # batches cleared and computed again by --resume: the same sums
    Store.open(out, mode="r+").unmark_batches([0, 2, 5])
    with pytest.raises(MgapspError, match="not computed yet"):
        mgapsp.open(out).betweenness()
    _job(g, out, cpu_client, batch_size=48, resume=True)
    _same(mgapsp.open(out).betweenness(), want)
    # a batch's sums changed (their checksum made anew): verify finds it
    s = Store.open(out, mode="r+")
    values = {name: s.metric(name)[48 * 3:48 * 4] for name in s.job["metrics"]}
    values["betweenness"] = s.metric_array("betweenness")[3] * 1.001
    s.write_metrics(3, values)
    rep = verify_store(out, all_rows=True)
    assert 3 in rep.betweenness_batches and not rep.ok


@pytest.mark.slow
def test_sampled_sources_are_networkxs_k(cpu_client, data_dir, tmp_path):
    """A job from some sources is NetworkX's ``k`` sampled sources, scaled as it scales
    them: the sources NetworkX draws with the seed, given to the job."""
    g = mgapsp.read_graph(data_dir / "karate.mtx")
    G = _networkx(g)
    drawn = random.Random(7).sample(list(G.nodes()), 10)
    out = tmp_path / "k.zarr"
    _job(g, out, cpu_client, batch_size=4, sources=drawn)
    _same(mgapsp.open(out).betweenness(),
          nx.betweenness_centrality(G, k=10, seed=7, weight="w"))


def test_jobs_it_cannot_answer_are_refused(tmp_path):
    from mgapsp.plan import plan_job

    g = mgapsp.as_graph(([0, 1, 2], [1, 2, 0], [0.5, 1.5, 2.5]))
    kw = dict(backend="cpu", dtype="auto", sources=None, batch_size=None,
              predecessors=False, n_workers=1, memory=2**30, metrics=("betweenness",))
    with pytest.raises(MgapspError, match="drop --targets"):
        plan_job(g, algorithm="auto", targets=[1], **kw)
    with pytest.raises(MgapspError, match="needs dijkstra or bellman-ford"):
        plan_job(g, algorithm="floyd-warshall", **kw)
    assert plan_job(g, algorithm="auto", **kw).algorithm == "dijkstra"
    exact = mgapsp.as_graph(([0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0]))
    assert plan_job(exact, algorithm="floyd-warshall", **kw).algorithm == "floyd-warshall"
    negative = mgapsp.as_graph(([0, 1], [1, 2], [1.0, -1.0]))
    with pytest.raises(MgapspError, match="non-negative weights"):
        plan_job(negative, algorithm="auto", **kw)


@pytest.mark.slow
def test_the_cli_runs_reports_and_verifies_it(data_dir, tmp_path):
    out = tmp_path / "sioux.zarr"
    mgapsp_cli("run", data_dir / "SiouxFalls_net.tntp", "-o", out, "--backend", "cpu",
               "--workers", "2", "--metrics", "betweenness", "--no-distances",
               "--no-dashboard")
    info = mgapsp_cli("info", out).stdout
    sums = mgapsp.open(out).betweenness(normalized=False)
    top = max(sums, key=sums.get)
    assert "each vertex's betweenness" in info and f"vertex {top!r}" in info
    verify = mgapsp_cli("verify", out, "--all").stdout
    assert "equal to NetworkX's Brandes" in verify and "ok" in verify


@pytest.mark.gpu
def test_a_gpu_job_is_the_cpus(gpu_client, data_dir, tmp_path):
    """Dependencies summed on the device per batch: integer weights (float32, checked),
    float weights (float64, brought to NetworkX's sums), the rows kept or not."""
    g = mgapsp.read_graph(data_dir / "rome99.gr")
    want = mgapsp.betweenness_centrality(g, backend="cpu")
    for distances in (True, False):
        out = tmp_path / f"rome-{distances}.zarr"
        from mgapsp.jobs.driver import run_job

        run_job(g, out, gpu_client, backend="gpu", batch_size=700, distances=distances,
                metrics=("betweenness", "closeness"))
        _same(mgapsp.open(out).betweenness(), want)
    f = mgapsp.read_graph(data_dir / "USAir97.mtx")
    out = tmp_path / "usair.zarr"
    _job(f, out, gpu_client, backend="gpu", batch_size=100)
    _same(mgapsp.open(out).betweenness(), mgapsp.betweenness_centrality(f, backend="cpu"))
