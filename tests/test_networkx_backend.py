"""mgapsp as a NetworkX backend: every dispatched function against NetworkX itself.

Each case runs NetworkX's own code and the same call with ``backend="mgapsp"`` and
requires the same outcome: the same exception type and message, or results of the
same types and values (floats compared with ``==``; every sum is added in NetworkX's
order), lists and generators item by item in order, and dicts with the same keys (in
the same order, except the distance dicts, whose order among equal distances is
NetworkX's search order).  ``CALLS`` proves that mgapsp answered (not NetworkX behind
a fall-back); calls mgapsp does not support are checked to fall back.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from types import GeneratorType

import networkx as nx
import numpy as np
import pytest

from mgapsp.nxbackend import backend_interface
from mgapsp.nxbackend.registry import CALLS, IMPLEMENTATIONS

pytestmark = pytest.mark.filterwarnings("ignore:Note. conversions to backend graphs")


def _weighted(G, rng, kind):
    for u, v, k in (G.edges(keys=True) if G.is_multigraph() else
                    ((u, v, None) for u, v in G.edges())):
        w = rng.randint(1, 9) if kind == "int" else round(rng.uniform(0.1, 9.9), 3)
        if k is None:
            G[u][v]["weight"] = w
        else:
            G[u][v][k]["weight"] = w
    return G


def _graph(kind: str, seed: int = 0):
    rng = random.Random(seed)
    if kind == "int":
        return _weighted(nx.connected_watts_strogatz_graph(24, 4, 0.3, seed=seed), rng, "int")
    if kind == "float-directed":
        G = nx.gnp_random_graph(20, 0.2, seed=seed, directed=True)
        G.add_edges_from((i, (i + 1) % 20) for i in range(20))     # strongly connected
        return _weighted(G, rng, "float")
    if kind == "unweighted-directed":
        return nx.gnp_random_graph(22, 0.12, seed=seed, directed=True)
    if kind == "multigraph":
        G = nx.MultiDiGraph(nx.cycle_graph(16, create_using=nx.DiGraph))
        G.add_edges_from((rng.randrange(16), rng.randrange(16)) for _ in range(30))
        return _weighted(G, rng, "float")
    if kind == "tuple-nodes":
        return _weighted(nx.grid_2d_graph(4, 5), rng, "int")
    if kind == "disconnected":
        G = nx.disjoint_union(nx.path_graph(6), nx.cycle_graph(5))
        G = nx.relabel_nodes(G, {i: f"v{i}" for i in G})
        return _weighted(G, rng, "float")
    raise ValueError(kind)


KINDS = ["int", "float-directed", "unweighted-directed", "multigraph", "tuple-nodes",
         "disconnected"]


def _calls(G):
    """(name, args, kwargs, dict order compared) for every dispatched function."""
    nodes = list(G)
    a, b = nodes[1], nodes[-2]
    wfun = lambda u, v, d: (d.get("weight", 1) if not isinstance(next(iter(d.values()), None), dict)  # noqa: E731
                            else min(x.get("weight", 1) for x in d.values()))
    return [
        ("floyd_warshall_numpy", (G,), {}, True),
        ("floyd_warshall_numpy", (G,), {"weight": None, "nodelist": nodes[::-1]}, True),
        ("single_source_dijkstra_path_length", (G, a), {}, False),
        ("single_source_dijkstra_path_length", (G, a), {"cutoff": 5}, False),
        ("single_source_dijkstra_path_length", (G, b), {"weight": wfun}, False),
        ("multi_source_dijkstra_path_length", (G, {a, b}), {}, False),
        ("multi_source_dijkstra_path_length", (G, [b, a]), {"cutoff": 2.5}, False),
        ("all_pairs_dijkstra_path_length", (G,), {}, False),
        ("all_pairs_dijkstra_path_length", (G,), {"weight": None, "cutoff": 2}, False),
        ("all_pairs_bellman_ford_path_length", (G,), {}, False),
        ("average_shortest_path_length", (G,), {}, True),
        ("average_shortest_path_length", (G,), {"weight": "weight"}, True),
        ("average_shortest_path_length", (G,), {"weight": "weight",
                                                "method": "floyd-warshall-numpy"}, True),
        ("average_shortest_path_length", (G,), {"method": "bellman-ford"}, True),
        ("closeness_centrality", (G,), {}, True),
        ("closeness_centrality", (G,), {"distance": "weight"}, True),
        ("closeness_centrality", (G,), {"u": b, "distance": "weight",
                                        "wf_improved": False}, True),
        ("harmonic_centrality", (G,), {}, True),
        ("harmonic_centrality", (G,), {"distance": "weight"}, True),
        ("harmonic_centrality", (G,), {"nbunch": nodes[:5], "distance": "weight"}, True),
        ("harmonic_centrality", (G,), {"sources": nodes[::3]}, True),
        ("eccentricity", (G,), {}, True),
        ("eccentricity", (G,), {"weight": "weight", "v": a}, True),
        ("diameter", (G,), {"weight": "weight"}, True),
        ("diameter", (G,), {"usebounds": True}, True),
        ("radius", (G,), {}, True),
        ("radius", (G,), {"weight": "weight"}, True),
        ("betweenness_centrality", (G,), {}, True),
        ("betweenness_centrality", (G,), {"weight": "weight", "endpoints": True}, True),
        ("betweenness_centrality", (G,), {"k": 5, "seed": 3, "weight": "weight"}, True),
        ("edge_betweenness_centrality", (G,), {"weight": "weight",
                                               "normalized": False}, True),
        ("betweenness_centrality_subset", (G, nodes[::2], nodes[1::3]), {}, True),
        ("betweenness_centrality_subset", (G, nodes[:4], nodes),
         {"weight": "weight", "normalized": True}, True),
    ]

#: betweenness adds several sources' dependencies in another order than NetworkX
BETWEENNESS_REL = 1e-12


def _outcome(func, args, kwargs):
    try:
        result = func(*args, **kwargs)
        if isinstance(result, GeneratorType):
            return "ok", list(result)
        return "ok", result
    except NotImplementedError:
        raise
    except Exception as exc:
        return "raised", (type(exc), str(exc))


#: relative difference allowed between fractional float results: an ulp in a distance
#: (seen: SciPy 1.18 on an H100 machine against NetworkX) becomes a few in a sum of
#: them (up to 4 seen); integral results, infinities and every other value are equal
ULPS = 1e-13


def assert_same(got, want, *, dict_order=True, depth=0):
    assert type(got) is type(want), (got, want)
    if isinstance(want, dict):
        assert set(got) == set(want)
        if dict_order:
            assert list(got) == list(want)
        for k in want:
            assert_same(got[k], want[k], dict_order=dict_order, depth=depth + 1)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for x, y in zip(got, want):
            assert_same(x, y, dict_order=dict_order, depth=depth + 1)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        exact = ~np.isfinite(want) | (want == np.round(want))
        assert np.array_equal(got[exact], want[exact]), np.argwhere(got != want)[:5]
        np.testing.assert_allclose(got[~exact], want[~exact], rtol=ULPS)
    elif isinstance(want, float) and math.isfinite(want) and not want.is_integer():
        # sums of fractional weights: bit for bit NetworkX's with SciPy 1.17, within an
        # ulp per distance with SciPy 1.18 (an H100 machine)
        assert got == pytest.approx(want, rel=ULPS, abs=0), (got, want)
    else:
        assert got == want or (got != got and want != want), (got, want)


def _compare(name, args, kwargs, dict_order):
    func = getattr(nx, name)
    want = _outcome(func, args, kwargs)
    before = CALLS[name]
    got = _outcome(func, args, {**kwargs, "backend": "mgapsp"})
    assert CALLS[name] == before + 1, f"{name} did not run on mgapsp"
    assert got[0] == want[0], (got, want)
    assert_same(got[1], want[1], dict_order=dict_order)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", KINDS)
def test_every_function_as_networkx(kind, seed):
    G = _graph(kind, seed)
    for name, args, kwargs, dict_order in _calls(G):
        if name == "average_shortest_path_length" and (
                kwargs.get("method") == "bellman-ford" and kind in ("float-directed",
                                                                     "multigraph",
                                                                     "disconnected")):
            continue        # float weights with NetworkX's Bellman-Ford order: falls back
        if name == "edge_betweenness_centrality" and G.is_multigraph():
            continue        # a multigraph's edges are keyed: falls back
        if "betweenness" in name:
            before = CALLS[name]
            got = getattr(nx, name)(*args, **kwargs, backend="mgapsp")
            assert CALLS[name] == before + 1, f"{name} did not run on mgapsp"
            want = getattr(nx, name)(*args, **kwargs)
            assert list(got) == list(want)
            assert got == pytest.approx(want, rel=BETWEENNESS_REL, abs=BETWEENNESS_REL)
            continue
        _compare(name, args, kwargs, dict_order)


def test_every_registered_function_is_covered_and_listed():
    from _mgapsp_nx import FUNCTIONS, get_info

    covered = {name for name, *_ in _calls(_graph("int"))}
    assert covered == set(IMPLEMENTATIONS) == set(FUNCTIONS) == set(get_info()["functions"])
    assert all(hasattr(backend_interface, name) for name in IMPLEMENTATIONS)


def test_johnson_is_left_to_networkx():
    # nx.johnson returns paths, whose choice among equal ones is NetworkX's own
    assert not hasattr(backend_interface, "johnson")


def test_negative_weights_bellman_ford_and_cycles():
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, 4), (0, 2, 2), (2, 1, -3), (1, 3, 2), (3, 0, 1),
                               (2, 3, -1), (4, 0, -2)])
    _compare("all_pairs_bellman_ford_path_length", (G,), {}, False)
    _compare("average_shortest_path_length", (G.subgraph(range(4)),),
             {"weight": "weight", "method": "bellman-ford"}, True)
    F = nx.DiGraph(G)
    for u, v, d in F.edges(data=True):
        d["weight"] += 0.25
    _compare("all_pairs_bellman_ford_path_length", (F,), {}, False)
    # a negative cycle 5 -> 6 -> 5: NetworkX yields the sources that reach none (0 to
    # 3, then 7 in H), then raises at the first that does
    C = nx.DiGraph(G.subgraph(range(4)))
    C.add_weighted_edges_from([(4, 5, 0), (5, 6, 1), (6, 5, -2), (1, 7, 3)])
    H = nx.DiGraph(G)
    H.add_weighted_edges_from([(5, 6, 1), (6, 5, -2), (7, 5, 1), (3, 7, 0)])
    for graph in (C, H):
        want = nx.all_pairs_bellman_ford_path_length(graph)
        got = nx.all_pairs_bellman_ford_path_length(graph, backend="mgapsp")
        yielded = 0
        while True:
            w, g = _next(want), _next(got)
            assert g[0] == w[0]
            if w[0] == "raised":
                assert g[1] == w[1]
                assert yielded == (4 if graph is C else 0)
                break
            yielded += 1
            assert g[1][0] == w[1][0]
            assert_same(g[1][1], w[1][1], dict_order=False)
    _compare("average_shortest_path_length", (nx.DiGraph([(0, 1, {"weight": 1}),
                                                          (1, 0, {"weight": -2})]),),
             {"weight": "weight", "method": "bellman-ford"}, True)


def _next(it):
    try:
        return "ok", next(it)
    except StopIteration:
        return "stop", None
    except nx.NetworkXException as exc:
        return "raised", (type(exc), str(exc))


def test_errors_as_networkx():
    G = _graph("disconnected")
    D = nx.DiGraph([(0, 1), (1, 2)])
    for name, args, kwargs in [
            ("eccentricity", (G,), {}), ("eccentricity", (D,), {}),
            ("diameter", (G,), {"usebounds": True}), ("radius", (D,), {}),
            ("average_shortest_path_length", (G,), {}),
            ("average_shortest_path_length", (D,), {"weight": "weight"}),
            ("single_source_dijkstra_path_length", (G, "nowhere"), {}),
            ("closeness_centrality", (G,), {"u": "nowhere"}),
            ("closeness_centrality", (G,), {"u": "nowhere", "distance": "weight"}),
            ("floyd_warshall_numpy", (D,), {"nodelist": [0, 1, 1]}),
            ("floyd_warshall_numpy", (D,), {"nodelist": [0, 1, 7]})]:
        _compare(name, args, kwargs, True)
    for bad in ({"method": "nope"},):
        with pytest.raises(ValueError, match="method not supported"):
            nx.average_shortest_path_length(G, backend="mgapsp", **bad)
    with pytest.raises(ValueError, match="sources must not be empty"):
        nx.multi_source_dijkstra_path_length(G, set(), backend="mgapsp")


def test_callable_weights_hide_edges_and_see_multigraph_keydicts():
    G = _graph("multigraph")
    light = lambda u, v, d: None if u == 3 else min(x["weight"] for x in d.values())  # noqa: E731
    _compare("all_pairs_dijkstra_path_length", (G,), {"weight": light}, False)
    _compare("closeness_centrality", (G,), {"distance": light}, True)
    _compare("harmonic_centrality", (G,), {"distance": light, "nbunch": [0, 1]}, True)


@pytest.mark.parametrize("case", ["dijkstra-negative", "mixed-types", "bool-weights",
                                  "hidden-bellman-ford", "sp-given", "numpy-weights",
                                  "null-graph", "huge-ints"])
def test_unsupported_calls_fall_back(case, monkeypatch):
    G = nx.path_graph(5, create_using=nx.DiGraph)
    nx.set_edge_attributes(G, 2, "weight")
    name, args, kwargs = "all_pairs_dijkstra_path_length", (G,), {}
    if case == "dijkstra-negative":
        G[1][2]["weight"] = -1
    elif case == "mixed-types":
        G[1][2]["weight"] = 1.5
    elif case == "bool-weights":
        nx.set_edge_attributes(G, True, "weight")
    elif case == "hidden-bellman-ford":
        name, kwargs = "all_pairs_bellman_ford_path_length", {"weight": lambda u, v, d: None}
    elif case == "sp-given":
        name, kwargs = "eccentricity", {"sp": dict(nx.all_pairs_shortest_path_length(G))}
    elif case == "numpy-weights":
        nx.set_edge_attributes(G, np.float64(2.5), "weight")
    elif case == "null-graph":
        name, args = "eccentricity", (nx.Graph(),)
    elif case == "huge-ints":
        nx.set_edge_attributes(G, 2**60, "weight")
    with pytest.raises(NotImplementedError):
        _outcome(getattr(nx, name), args, {**kwargs, "backend": "mgapsp"})
    # with mgapsp first in NetworkX's priority, NetworkX answers it
    monkeypatch.setattr(nx.config.backend_priority, "algos", ["mgapsp"])
    before = CALLS[name]
    got = _outcome(getattr(nx, name), args, kwargs)
    monkeypatch.setattr(nx.config.backend_priority, "algos", [])
    assert CALLS[name] == before
    assert_same(got[1], _outcome(getattr(nx, name), args, kwargs)[1], dict_order=True)


def test_priority_dispatches_without_backend_keyword(monkeypatch):
    G = _graph("int")
    monkeypatch.setattr(nx.config.backend_priority, "algos", ["mgapsp"])
    before = CALLS["closeness_centrality"]
    got = nx.closeness_centrality(G, distance="weight")
    assert CALLS["closeness_centrality"] == before + 1
    monkeypatch.setattr(nx.config.backend_priority, "algos", [])
    assert_same(got, nx.closeness_centrality(G, distance="weight"))


#: NetworkX's test modules that exercise the dispatched functions
NX_TESTS = ["networkx.algorithms.shortest_paths.tests.test_dense_numpy",
            "networkx.algorithms.shortest_paths.tests.test_weighted",
            "networkx.algorithms.shortest_paths.tests.test_generic",
            "networkx.algorithms.centrality.tests.test_closeness_centrality",
            "networkx.algorithms.centrality.tests.test_harmonic_centrality",
            "networkx.algorithms.centrality.tests.test_betweenness_centrality",
            "networkx.algorithms.centrality.tests.test_betweenness_centrality_subset",
            "networkx.algorithms.tests.test_distance_measures"]


@pytest.mark.slow
def test_networkx_own_tests_pass_on_the_backend(tmp_path):
    runner = ("import json, sys, pytest\n"
              "rc = pytest.main(['-q', '-p', 'no:cacheprovider', '--pyargs', *sys.argv[1:]])\n"
              "from mgapsp.nxbackend.registry import CALLS\n"
              "print('CALLS', json.dumps(CALLS))\n"
              "sys.exit(rc)\n")
    env = {**__import__("os").environ, "NETWORKX_TEST_BACKEND": "mgapsp",
           "NETWORKX_FALLBACK_TO_NX": "True"}
    proc = subprocess.run([sys.executable, "-c", runner, *NX_TESTS], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    import json

    calls = json.loads(proc.stdout.rsplit("CALLS ", 1)[1].splitlines()[0])
    assert set(calls) == set(IMPLEMENTATIONS), tail     # every function ran on mgapsp
