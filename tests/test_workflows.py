"""The workflow scripts run as a user runs them, on CPU workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import mgapsp

from helpers import assert_distances_equal, scipy_distances

WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows"


def workflow(name, *args, timeout=600):
    proc = subprocess.run([sys.executable, str(WORKFLOWS / name), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.slow
def test_od_matrix(data_dir, tmp_path):
    out = tmp_path / "od.zarr"
    text = workflow("od_matrix.py", data_dir / "Anaheim_net.tntp", out, "--backend", "cpu")
    assert "38 zones" in text
    graph = mgapsp.read_graph(data_dir / "Anaheim_net.tntp")
    zones = np.arange(38)
    ref = scipy_distances(graph, zones)[:, zones]
    assert_distances_equal(zarr.open_group(out)["distances"][:], ref, dtype="float32")


@pytest.mark.slow
def test_floyd_warshall_tsplib(data_dir, tmp_path):
    text = workflow("floyd_warshall_tsplib.py", data_dir / "gr120.tsp", tmp_path / "fw.zarr",
                    "--backend", "cpu")
    assert "floyd-warshall on cpu" in text and "ok" in text


@pytest.mark.slow
def test_apsp_verify(data_dir, tmp_path):
    text = workflow("apsp_verify.py", data_dir / "rome99.gr", tmp_path / "r.zarr",
                    "--backend", "cpu", "--samples", "50")
    assert "verified 50 sampled rows" in text and ": ok" in text


def _scaling_report():
    import importlib.util

    spec = importlib.util.spec_from_file_location("scaling_report",
                                                  WORKFLOWS / "scaling_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scaling_ceilings_keep_the_first_points_idle_ends():
    """A 1-worker job of 1.0 s with 0.1 + 0.1 s of idle ends: 4 workers take at least
    0.2 + 0.8 / 4 s, a speed-up of at most 2.5; from a 2-worker first point, 8 workers
    split its 0.8 s four ways."""
    ceilings = _scaling_report().ceilings
    one = {"workers": 1, "seconds": 1.0, "idle_ends_s": [0.1, 0.1]}
    assert ceilings([one, {"workers": 2}, {"workers": 4}]) == pytest.approx(
        [1.0, 1.0 / 0.6, 2.5])
    two = dict(one, workers=2)
    assert ceilings([two, {"workers": 8}]) == pytest.approx([1.0, 2.5])
    assert ceilings([dict(one, idle_ends_s=None), {"workers": 2}]) == [None, None]


@pytest.mark.slow
def test_resume_after_interruption(data_dir, tmp_path):
    text = workflow("resume_after_interruption.py", data_dir / "p2p-Gnutella08.txt",
                    tmp_path / "g.zarr", "--backend", "cpu", "--batch-size", "8")
    assert "interrupted" in text and "verified 6301 rows: ok" in text
    assert "already done" in text


@pytest.mark.slow
def test_scaling_report(data_dir, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "scaling"
    proc = workflow("scaling_report.py", data_dir / "rome99.gr", "--out", out, "--backend",
                    "cpu", "--workers", "1,2", "--sources", "512", "--batch-size", "32",
                    "--repeats", "1", "--rounds", "2")
    # the second round runs the points backwards
    rounds = [line.split(" cpu")[0] for line in proc.splitlines()
              if line.startswith("round")]
    assert rounds == ["round 1, 1", "round 1, 2", "round 2, 2", "round 2, 1"], proc
    report = json.loads((out / "scaling.json").read_text())
    assert [p["workers"] for p in report["points"]] == [1, 2]
    assert all(len(p["seconds_all"]) == 2 and p["seconds"] == min(p["seconds_all"])
               for p in report["points"])
    assert all(p["rows"] == 512 for p in report["points"])
    # what no worker computes at the job's two ends, inside the job
    assert all(0 < a and 0 < b and a + b < p["seconds"]
               for p in report["points"] for a, b in [p["idle_ends_s"]])
    table = (out / "scaling.md").read_text()
    assert "| idle ends ms |" in table
    assert all(f"| {1e3 * p['idle_ends_s'][0]:.1f}, {1e3 * p['idle_ends_s'][1]:.1f} |"
               in table for p in report["points"])
    # the ceiling: the first point's idle ends kept, its batches split over 2 workers
    first, second = report["points"]
    t, e = first["seconds"], sum(first["idle_ends_s"])
    assert first["ceiling"] == pytest.approx(1.0)
    assert second["ceiling"] == pytest.approx(t / (e + (t - e) / 2))
    assert 1.0 < second["ceiling"] < 2.0
    assert "| speed-up | ceiling |" in table
    assert f"x | {second['ceiling']:.2f}x | {second['seconds']:.3f} |" in table
    png = (out / "scaling.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_network_metrics(data_dir, tmp_path):
    """The most central vertex by closeness is NetworkX's, and the picture is drawn."""
    import networkx as nx

    png = tmp_path / "m.png"
    text = workflow("network_metrics.py", data_dir / "karate.mtx", png, "--backend", "cpu",
                    "--top", "1")
    g = mgapsp.read_graph(data_dir / "karate.mtx")
    G = nx.Graph()
    G.add_weighted_edges_from(zip(g.labels[g.sources_of_edges].tolist(),
                                  g.labels[g.indices].tolist(), g.weights.tolist()))
    c = nx.closeness_centrality(G, distance="weight")   # mgapsp reads the file's weights
    best = max(c, key=c.get)
    assert f"{best!s:>10}  closeness {c[best]:.6g}" in text
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
