"""Where mgapsp meets NetworkX's conventions and metrics meet ``targets`` (issue 51):
weight functions called per direction of travel and with a multigraph's dict of
parallel edges, closeness over a set of targets, the types NetworkX gives, and what
is refused.  Each test failed on 171b3df."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time

import networkx as nx
import numpy as np
import pytest

import faults
import mgapsp

from conftest import DATA


def _uphill(u, v, d):
    """A direction-dependent weight: downhill costs ten times the climb."""
    return d["w"] if u < v else 10 * d["w"]


def _path3():
    g = nx.path_graph(3)
    nx.set_edge_attributes(g, 1, "w")
    return g


def test_a_weight_function_is_called_per_direction_of_travel():
    g = _path3()
    got = mgapsp.apsp(g, weight=_uphill, sources=2)
    want = nx.single_source_dijkstra_path_length(g, 2, weight=_uphill)
    assert got.tolist() == [want[v] for v in g]
    assert got.tolist() == [20, 10, 0]
    assert mgapsp.as_graph(g, weight=_uphill).directed       # what it describes
    assert not mgapsp.as_graph(g, weight=lambda u, v, d: d["w"]).directed
    # directed=False keeps the lighter direction
    assert mgapsp.apsp(g, weight=_uphill, sources=2, directed=False).tolist() == [2, 1, 0]


def test_centralities_with_a_direction_dependent_weight_are_networkx_s():
    g = _path3()
    assert mgapsp.closeness_centrality(g, distance=_uphill) == pytest.approx(
        nx.closeness_centrality(g, distance=_uphill), rel=1e-15)
    assert mgapsp.harmonic_centrality(g, distance=_uphill) == pytest.approx(
        nx.harmonic_centrality(g, distance=_uphill), rel=1e-15)
    assert mgapsp.eccentricity(g, weight=_uphill) == nx.eccentricity(g, weight=_uphill)


def test_a_multigraph_s_weight_function_gets_the_dict_of_parallel_edges():
    m = nx.MultiGraph()
    m.add_edge(0, 1, w=3)
    m.add_edge(0, 1, w=1)
    m.add_edge(1, 2, w=5)

    def lightest(u, v, keyed):
        return min(attrs["w"] for attrs in keyed.values())

    want = nx.single_source_dijkstra_path_length(m, 0, weight=lightest)
    assert mgapsp.apsp(m, weight=lightest, sources=0).tolist() == [want[v] for v in m]
    assert mgapsp.apsp(m, weight="w", sources=0).tolist() == [0, 1, 6]


def test_integral_float_weights_give_float_lengths_as_networkx():
    g = nx.path_graph(3)
    nx.set_edge_attributes(g, 2.0, "weight")
    for fn in (mgapsp.eccentricity, nx.eccentricity):
        e = fn(g, weight="weight")
        assert e == {0: 4.0, 1: 2.0, 2: 4.0}
        assert all(type(x) is float for x in e.values())
    assert type(mgapsp.diameter(g, weight="weight")) is float
    e = mgapsp.eccentricity(nx.path_graph(4))
    assert all(type(x) is int for x in e.values())


def test_eccentricity_through_the_backend_is_networkx_s_to_the_bit():
    """Fractional weights on a dense graph: the backend's rows come from NetworkX's
    own left-to-right sums, never Floyd-Warshall's."""
    rng = random.Random(5)
    for seed in range(12):
        g = nx.gnp_random_graph(24, 0.6, seed=seed)
        for u, v in g.edges:
            g[u][v]["weight"] = rng.random() * 10
        if not nx.is_connected(g):
            continue
        want = nx.eccentricity(g, weight="weight")
        assert nx.eccentricity(g, weight="weight", backend="mgapsp") == want
        assert nx.diameter(g, weight="weight", backend="mgapsp") == nx.diameter(
            g, weight="weight")


def test_negative_weights_are_refused_by_the_centralities():
    d = nx.DiGraph([(0, 1), (1, 2)])
    nx.set_edge_attributes(d, -1, "w")
    for fn in (mgapsp.closeness_centrality, mgapsp.harmonic_centrality):
        with pytest.raises(nx.NetworkXError, match="negative edge weights"):
            fn(d, distance="w")


def _stored_metrics(tmp_path, sources, targets):
    out = tmp_path / f"m{len(list(tmp_path.iterdir()))}.zarr"
    mgapsp.apsp(nx.path_graph(5), out=out, sources=sources, targets=targets,
                metrics=["closeness", "harmonic", "eccentricity"], backend="cpu")
    store = mgapsp.open(out).store
    return out, {k: store.metric(k).tolist() for k in ("closeness", "harmonic")}


def test_closeness_over_targets_counts_the_source_once(tmp_path):
    """path_graph(5), source 0, target 4: one target reached at 4 (0.25), the source
    counted once whether or not it is a target; never 0 or -0.0."""
    _, m = _stored_metrics(tmp_path, [0], [4])
    assert m == {"closeness": [0.25], "harmonic": [0.25]}
    _, m = _stored_metrics(tmp_path, [4], [0])
    assert m == {"closeness": [0.25], "harmonic": [0.25]}
    _, m = _stored_metrics(tmp_path, [0], [0, 4])      # the source a target too
    assert m == {"closeness": [0.25], "harmonic": [0.25]}
    # every vertex a target: NetworkX's closeness
    _, m = _stored_metrics(tmp_path, None, None)
    want = nx.closeness_centrality(nx.path_graph(5))
    assert m["closeness"] == pytest.approx([want[v] for v in range(5)], rel=1e-15)


@pytest.mark.slow
def test_verify_fails_a_store_whose_closeness_over_targets_is_wrong(tmp_path):
    out, _ = _stored_metrics(tmp_path, [0, 1], [3, 4])
    cli = [sys.executable, "-m", "mgapsp"]
    assert subprocess.run(cli + ["verify", str(out), "--all"], capture_output=True).returncode == 0
    import zarr

    arr = zarr.open_array(out / "closeness", mode="r+")
    arr[:] = [0.0, 0.0]         # what the old definition stored for a source outside
    proc = subprocess.run(cli + ["verify", str(out), "--all"], capture_output=True, text=True)
    assert proc.returncode != 0, proc.stdout


@pytest.mark.slow
def test_info_s_mean_distance_over_targets_is_the_mean_of_the_pairs(tmp_path):
    """path_graph(5), every source, targets 3 and 4: 8 pairs of a source and another
    target, whose distances sum to 17: 2.125."""
    out, _ = _stored_metrics(tmp_path, None, [3, 4])
    info = subprocess.run([sys.executable, "-m", "mgapsp", "info", str(out)],
                          capture_output=True, text=True).stdout
    assert "mean distance 2.125" in info, info
    d = nx.floyd_warshall_numpy(nx.path_graph(5))[:, [3, 4]]
    assert d[d > 0].mean() == 2.125


@pytest.mark.slow
def test_a_metrics_only_store_holds_no_distance_array(tmp_path):
    """--no-distances: no ``distances`` array that xarray or a reader would take for
    all-NaN rows; the repr and info say what the store holds."""
    out = tmp_path / "m.zarr"
    mgapsp.apsp(nx.path_graph(6), out=out, metrics=["closeness"], distances=False,
                backend="cpu")
    r = mgapsp.open(out)
    assert "distances" not in r
    assert "metrics only of 6 sources" in repr(r)
    assert "distances" not in r.to_xarray().data_vars
    assert r.store.metric("closeness").tolist() == pytest.approx(
        list(nx.closeness_centrality(nx.path_graph(6)).values()), rel=1e-15)
    info = subprocess.run([sys.executable, "-m", "mgapsp", "info", str(out)],
                          capture_output=True, text=True)
    assert info.returncode == 0 and "metrics only" in info.stdout, info.stderr
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "verify", str(out), "--all"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_cli_says_what_it_does_with_a_missing_file_or_store(tmp_path):
    """--sources naming no file: one line, a non-zero exit, no traceback; --resume of a
    store that is not there says that a new one is started; one worker is a worker."""
    cli = [sys.executable, "-m", "mgapsp", "run", str(DATA / "rome99.gr"), "--backend",
           "cpu", "--no-dashboard", "-q"]
    proc = subprocess.run(cli + ["-o", str(tmp_path / "a.zarr"), "--sources",
                                 str(tmp_path / "missing.txt")], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "does not exist" in proc.stderr and "Errno" not in proc.stderr
    (tmp_path / "src.txt").write_text("1 2")
    proc = subprocess.run(cli + ["-o", str(tmp_path / "b.zarr"), "--resume", "--sources",
                                 str(tmp_path / "src.txt"), "--workers", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "no store to resume there; a new one is started" in proc.stderr
    assert "on 1 worker;" in proc.stdout


def test_a_finished_store_opens_in_xarray_without_warnings_or_bookkeeping(tmp_path):
    """Consolidated metadata once the job ends (again after a resumed run), and the
    store's bookkeeping arrays out of ``to_xarray``'s data variables."""
    import warnings

    import xarray as xr

    out = tmp_path / "c.zarr"
    mgapsp.apsp(DATA / "rome99.gr", out=out, sources=[1, 2, 3], backend="cpu",
                metrics=["closeness"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(out)
    assert ds["distances"].shape == (3, 3353)
    assert set(mgapsp.open(out).to_xarray().data_vars) == {
        "distances", "closeness", "reachable", "distance_sum"}
    # a resumed run leaves it right
    mgapsp.apsp(DATA / "rome99.gr", out=out, sources=[1, 2, 3], backend="cpu",
                metrics=["closeness"], resume=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(xr.open_zarr(out)["distances"].sel(source=1, target=2)) == 193.0


@pytest.mark.slow
@pytest.mark.parametrize("content,words", [
    ("A B 1\nB C 2\n".encode("utf-16"), "not UTF-8 text: UTF-16"),
    (b"caf\xe9 B 1\ncafe B 2\n", "1: not UTF-8 text: byte 0xe9"),
    (b"a b 1\n\x00\x01\x02\xff garbage\n", "not UTF-8 text: binary data"),
])
def test_text_that_is_not_utf8_is_refused_in_one_line(tmp_path, content, words):
    """Never read with replacement characters: two labels differing in one Latin-1
    letter would become one vertex (issue 56's item 10 too)."""
    path = tmp_path / "g.txt"
    path.write_bytes(content)
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "run", str(path), "-o",
                           str(tmp_path / "g.zarr"), "--backend", "cpu", "-q",
                           "--no-dashboard"], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert words in line and "\\x" not in line, line
    assert not (tmp_path / "g.zarr").exists()


@pytest.mark.parametrize("name,text,words", [
    # issue 56 item 11: a stray first line, then the real header; the header had been
    # read as an edge and every weight dropped
    ("stray.tsv", "EOF\nsrc\tdst\tw\n0\t1\t1.5\n1\t2\t2.0\n0\t2\t3.5\n",
     "stray.tsv:1: 'EOF' is neither an edge nor a header"),
    # item 12: a header naming fewer columns than the records have
    ("fewer.csv", "src,dst\n0,1,2.5\n1,2,1.0\n",
     "fewer.csv:2: 3 fields in '0,1,2.5', but the header (line 1) names 2"),
    # the same without a header: the first record says how many columns there are
    ("later.csv", "0,1\n1,2,7.5\n", "later.csv:2: 3 fields in '1,2,7.5', but the first "
     "record (line 1) has 2"),
])
def test_a_column_nothing_names_is_refused_not_dropped(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    r = faults.mgapsp("run", path, "-o", tmp_path / "g.zarr", "--backend", "cpu", "-q",
                      "--no-dashboard")
    assert r.one_line_error and words in r.err_lines[0], r.err
    assert not (tmp_path / "g.zarr").exists()


def test_named_and_unweighted_columns_still_read(tmp_path):
    """What the header names is read, extra named columns are ignored, and with
    ``unweighted`` the weights are dropped because the user asked."""
    named = tmp_path / "named.csv"
    named.write_text("src,dst,w,road\n0,1,2.5,A1\n1,2,1.0,A2\n0,2,9,\n")
    g = mgapsp.read_graph(named)
    assert g.to_scipy().toarray()[0, 1] == 2.5 and g.to_scipy().toarray()[0, 2] == 9
    fewer = tmp_path / "fewer.csv"
    fewer.write_text("src,dst\n0,1,2.5\n1,2,1.0\n")
    assert mgapsp.read_graph(fewer, unweighted=True).to_scipy().toarray()[0, 1] == 1
    assert mgapsp.read_graph(fewer, weight_column=2).to_scipy().toarray()[0, 1] == 2.5


@pytest.mark.slow
def test_a_negative_cycle_is_refused_before_any_cluster(tmp_path):
    """Found on the CPU while nothing is started: no dashboard, no store."""
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "-v", "run",
                           str(DATA / "soc-sign-bitcoinalpha.csv"), "-o",
                           str(tmp_path / "n.zarr"), "--backend", "cpu", "-q"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith("error: negative cycle")
    assert "dashboard" not in proc.stderr.lower() and "cluster" not in proc.stderr.lower()
    assert not (tmp_path / "n.zarr").exists()


def test_every_subcommand_s_help_has_an_example_and_formats_are_listed():
    from click.testing import CliRunner

    from mgapsp.cli import main
    from mgapsp.readers import FORMATS

    runner = CliRunner()
    for cmd in ("run", "info", "verify", "repair", "path"):
        out = runner.invoke(main, [cmd, "--help"]).output
        assert "Example" in out and f"mgapsp {cmd} " in out, out
    run_help = runner.invoke(main, ["run", "--help"]).output
    assert all(f in run_help for f in FORMATS)


def test_bad_input_is_refused_without_importing_distributed(tmp_path):
    """Issue 52: a refusal of bad input (and --version) imports neither Distributed nor
    the cluster, nor Zarr or Dask (the store's place is checked and locked without
    them); they come only once the job is about to start one."""
    bad = tmp_path / "stray.tsv"
    bad.write_text("EOF\nsrc\tdst\tw\n0\t1\t1.5\n")
    for args in (["run", str(bad), "-o", str(tmp_path / "g.zarr")], ["--version"]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "mgapsp", *args],
                              capture_output=True, text=True)
        modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                   if line.startswith("import time:")}
        heavy = {"distributed", "mgapsp.jobs.cluster", "zarr", "dask"} & modules
        assert modules and not heavy, (args, sorted(heavy))
        if args[0] == "run":
            assert proc.returncode == 1 and "'EOF' is neither an edge" in proc.stderr


def test_verbose_run_says_where_its_fixed_cost_went(tmp_path):
    """Issue 52: ``-v`` ends a job with its fixed cost, step by step: the process's
    start and imports, the graph's read, the cluster's start, the job's own steps
    before its batches (the store's creation among them) and the teardown, which
    together with the job's time account for the command's wall time."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "-v", "run",
                           str(DATA / "karate.mtx"), "-o", str(tmp_path / "k.zarr"),
                           "--backend", "cpu", "-q"], capture_output=True, text=True)
    wall = time.perf_counter() - t
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if "fixed cost" in x)
    m = re.match(r"\s*fixed cost ([\d.]+) s beside the job's ([\d.]+) s: (.*)$", line)
    assert m, line
    steps = dict(re.findall(r"([a-z][a-z -]*?) ([\d.]+) s", m.group(3)))
    for name in ("start and imports", "imports", "store"):   # steps under 5 ms unsaid
        assert name in steps, (name, line)
    assert abs(sum(map(float, steps.values())) - float(m.group(1))) < 0.05, line
    # what the line accounts for is the command's time, less only its exit
    assert 0 < wall - float(m.group(1)) - float(m.group(2)) < 1.5, (wall, line)


def test_an_answer_in_memory_imports_no_dask(tmp_path):
    """Issue 52: ``apsp`` without ``out``, SciPy's drop-ins and the metrics compute in
    this process without Dask, Distributed or Zarr (Dask's import was a tenth of a first call's
    cost, for a chunk size no store would use)."""
    code = ("import sys, mgapsp\n"
            f"g = mgapsp.read_graph({str(DATA / 'rome99.gr')!r})\n"
            "d = mgapsp.apsp(g, backend='cpu')\n"
            "mgapsp.dijkstra(g.to_scipy(), indices=[0, 1])\n"
            "mgapsp.closeness_centrality(g)\n"
            "assert d.shape == (g.n, g.n)\n"
            "print(sorted({'dask', 'distributed', 'zarr'} & set(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
