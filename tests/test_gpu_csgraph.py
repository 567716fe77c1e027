"""mgapsp.csgraph on a GPU: SciPy's answers from mgapsp's CUDA kernels (float64).

The cases of ``test_csgraph`` with the real GPU backend.  ``scipy_calls`` records every
call mgapsp makes to SciPy: none where the kernels answer (distances), SciPy's function
where they cannot give SciPy's answer (predecessors: float32 only on the GPU; ``limit``,
``min_only``; Dijkstra on negative weights).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph as scipy_csgraph

from mgapsp import csgraph as mcs
from mgapsp.errors import NegativeCycleError

from test_csgraph import (CALLS, NAMES, NEGATIVE_OK, WITH_INDICES, as_form, assert_cycle,
                          assert_same, both, cycle_matrix, random_matrix, real, weight_matrix)

pytestmark = pytest.mark.gpu


@pytest.fixture
def scipy_calls(monkeypatch):
    """The GPU path is live; yields the names of the SciPy functions mgapsp called."""
    assert mcs._kernel_backend() is not None and mcs._kernel_backend().name == "gpu"
    calls = []
    real_call = mcs._call_scipy

    def spy(name, csgraph, **kwargs):
        calls.append(name)
        return real_call(name, csgraph, **kwargs)

    monkeypatch.setattr(mcs, "_call_scipy", spy)
    return calls


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("form", ["dense", "csr", "coo", "masked"])
@pytest.mark.parametrize("density", [0.15, 0.5])
@pytest.mark.parametrize("call", list(CALLS))
def test_gpu_parity_random(call, density, form, directed, integer, scipy_calls):
    a = random_matrix(21, n=40, density=density, integer=integer)
    assert_same(*both(call, as_form(a, form), directed=directed), exact=integer)
    assert scipy_calls == []


@pytest.mark.parametrize("call", list(CALLS))
def test_gpu_predecessors_are_scipys(call, scipy_calls):
    """The GPU gives predecessors in float32 only: SciPy answers, exactly."""
    a = random_matrix(22, n=40)
    assert_same(*both(call, a, return_predecessors=True))
    assert len(scipy_calls) == 1


@pytest.mark.parametrize("indices", [3, -1, [0, 5, 2], [4, 4, 1], [[0, 1], [2, 3]]])
@pytest.mark.parametrize("call", WITH_INDICES)
def test_gpu_indices(call, indices, scipy_calls):
    a = random_matrix(23, n=40, integer=False)
    assert_same(*both(call, sp.csr_array(a), indices=indices), exact=False)
    assert scipy_calls == []


@pytest.mark.parametrize("form", ["dense", "csr", "masked"])
@pytest.mark.parametrize("call", list(CALLS))
def test_gpu_unweighted(call, form, scipy_calls):
    a = random_matrix(24, n=40, density=0.3)
    assert_same(*both(call, as_form(a, form), unweighted=True))
    assert scipy_calls == []


@pytest.mark.parametrize("density", [0.15, 0.5])
@pytest.mark.parametrize("call", NEGATIVE_OK)
def test_gpu_negative_weights(call, density, scipy_calls):
    a = random_matrix(25, n=40, density=density, negative=True)
    assert_same(*both(call, a))
    assert scipy_calls == []


@pytest.mark.parametrize("form", ["dense", "csr"])
@pytest.mark.parametrize("call", NEGATIVE_OK)
def test_gpu_negative_cycle(call, form, scipy_calls):
    a = cycle_matrix()
    name, extra = CALLS[call]
    with pytest.raises(NegativeCycleError) as info:
        getattr(mcs, name)(as_form(a, form), **extra)
    assert_cycle(info.value, weight_matrix(a))
    assert scipy_calls == []


@pytest.mark.parametrize("call", ["bellman_ford", "johnson", "floyd_warshall"])
def test_gpu_negative_self_loop(call, scipy_calls):
    """Floyd-Warshall ignores the diagonal; Bellman-Ford and Johnson see a cycle."""
    a = random_matrix(26, n=40)
    a[4, 4] = -1.0
    if call == "floyd_warshall":
        assert_same(*both(call, a))
    else:
        with pytest.raises(NegativeCycleError) as info:
            getattr(mcs, call)(a)
        assert info.value.cycle == [4]


def test_gpu_bellman_ford_unreachable_cycle(scipy_calls):
    a = cycle_matrix()
    a[:, 0], a[0, :], a[0, 1], a[1, :] = 0.0, 0.0, 3.0, 0.0
    assert_same(*both("bellman_ford", a, indices=0))
    assert scipy_calls == []


@pytest.mark.parametrize("call", ["dijkstra", "shortest_path-D"])
def test_gpu_dijkstra_negative_weights_are_scipys(call, scipy_calls):
    a = random_matrix(27, negative=True)
    with pytest.warns(UserWarning, match="negative weights"):
        assert_same(*both(call, a))
    assert scipy_calls == ["dijkstra"]


def test_gpu_limit_and_min_only_are_scipys(scipy_calls):
    a = random_matrix(28, n=40)
    assert_same(*both("dijkstra", a, limit=5.0))
    assert_same(*both("dijkstra", a, indices=[0, 3], min_only=True))
    assert scipy_calls == ["dijkstra", "dijkstra"]


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("name", ["karate.mtx", "br17.atsp", "SiouxFalls_net.tntp",
                                  "USAir97.mtx"])
def test_gpu_real(name, call, scipy_calls):
    s = real(name)
    slow = call in ("bellman_ford", "shortest_path-BF")   # SciPy's Bellman-Ford
    for obj in (s, s.toarray()):
        ours, ref = both(call, obj, **({"indices": [0, 5]} if slow else {}))
        assert_same(ours, ref, exact=name != "USAir97.mtx")
    assert scipy_calls == []


@pytest.mark.parametrize("call", ["dijkstra", "bellman_ford", "johnson", "shortest_path"])
def test_gpu_rome99(call, scipy_calls):
    s = real("rome99.gr")
    indices = np.arange(0, s.shape[0], 97 if call in ("dijkstra", "shortest_path") else 997)
    assert_same(*both(call, s, indices=indices))
    assert scipy_calls == []


def test_gpu_overwrite(scipy_calls):
    a, b = random_matrix(30, n=40, density=0.5), random_matrix(30, n=40, density=0.5)
    ours = mcs.floyd_warshall(a, overwrite=True)
    assert_same(ours, scipy_csgraph.floyd_warshall(b, overwrite=True))
    np.testing.assert_array_equal(a, b)
    assert np.shares_memory(ours, a) and scipy_calls == []


@pytest.mark.parametrize("name", NAMES)
def test_gpu_path_taken(name, monkeypatch):
    """With SciPy's shortest-path functions broken, the GPU still answers."""
    assert mcs._kernel_backend() is not None
    a = random_matrix(29, n=40)
    ref = getattr(scipy_csgraph, name)(a)

    def broken(*args, **kwargs):
        raise AssertionError("SciPy was called")

    for fn in NAMES:
        monkeypatch.setattr(scipy_csgraph, fn, broken)
    np.testing.assert_array_equal(getattr(mcs, name)(a), ref)
