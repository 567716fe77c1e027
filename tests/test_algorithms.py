"""The algorithm registry: one spec per algorithm, read by the command line, the API,
the planner and the backends."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from click.testing import CliRunner
from scipy.sparse import csgraph

import mgapsp
from mgapsp import UnsupportedError, algorithms, cli
from mgapsp.backends import BatchResult
from mgapsp.plan import plan_job

from helpers import assert_distances_equal


def _hops(backend, graph, sources, *, dtype, predecessors, potentials, targets):
    """A toy algorithm's CPU code: hop counts, every edge weighing 1."""
    dist = csgraph.shortest_path(graph.to_scipy(), unweighted=True, indices=sources)
    return BatchResult(dist.astype(dtype), None, {"sources": len(sources)})


@pytest.fixture
def hops():
    spec = algorithms.register(algorithms.Algorithm(
        "hops", "hop counts (a test's toy)", backends=("cpu",), code=algorithms.Code(run={"cpu": _hops})))
    yield spec
    algorithms.unregister("hops")
    assert "hops" not in algorithms.names()


def test_a_registered_algorithm_runs_everywhere_algorithms_are_named(hops, data_dir,
                                                                     tmp_path):
    """One spec and its code: the planner plans it, the API and the command line run
    it on the CPU backend, and the GPU backend refuses it in one line."""
    graph = mgapsp.read_graph(data_dir / "rome99.gr")
    want = csgraph.shortest_path(graph.to_scipy(), unweighted=True, indices=[0, 5])
    plan = plan_job(graph, algorithm="hops", backend="cpu", dtype="auto", sources=None,
                    batch_size=None, predecessors=False, n_workers=1, memory=2**34)
    assert plan.algorithm == "hops"
    assert_distances_equal(mgapsp.apsp(graph, algorithm="hops", backend="cpu",
                                       sources=graph.labels[[0, 5]]), want)
    with pytest.raises(UnsupportedError, match="the gpu backend does not run hops"):
        plan_job(graph, algorithm="hops", backend="gpu", dtype="auto", sources=None,
                 batch_size=None, predecessors=False, n_workers=1, memory=2**34)
    rows = tmp_path / "rows.txt"
    rows.write_text(f"{graph.labels[0]} {graph.labels[5]}\n")
    out = tmp_path / "hops.zarr"
    done = CliRunner().invoke(cli.main, ["-q", "run", str(data_dir / "rome99.gr"), "-o",
                                         str(out), "--algorithm", "hops", "--backend", "cpu",
                                         "--sources", str(rows), "--no-dashboard"])
    assert done.exit_code == 0, done.output
    group = zarr.open_group(str(out), mode="r")
    assert group.attrs["job"]["algorithm"] == "hops"
    assert_distances_equal(group["distances"][:], want)


def test_rules_are_the_specs():
    """Each refusal comes from the algorithm's own spec, in one line."""
    negative = mgapsp.Graph.from_edges([0, 1], [1, 2], [1.0, -1.0], n=3)
    for name in algorithms.names():
        spec = algorithms.get(name)
        if spec.non_negative:
            with pytest.raises(UnsupportedError, match=f"{name} needs non-negative"):
                mgapsp.apsp(negative, algorithm=name, backend="cpu")
        else:
            got = mgapsp.apsp(negative, algorithm=name, backend="cpu", dtype="float64")
            np.testing.assert_array_equal(got, csgraph.bellman_ford(negative.to_scipy()))
    with pytest.raises(UnsupportedError, match="unknown algorithm 'nope'; choose one of auto"):
        algorithms.get("nope")
    with pytest.raises(mgapsp.MgapspError, match="exists already"):
        algorithms.register(algorithms.DIJKSTRA)
    with pytest.raises(mgapsp.MgapspError, match="built in"):
        algorithms.unregister("dijkstra")
