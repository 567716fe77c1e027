"""mgapsp.csgraph: SciPy's shortest-path functions as drop-ins (CPU).

Every test compares with ``scipy.sparse.csgraph`` itself.  ``path`` runs each case two
ways: ``scipy`` (no GPU: mgapsp validates and SciPy answers) and ``kernels`` (the CPU
backend stands in for the GPU's, so the whole non-SciPy path runs: input to canonical
graph, batches through a backend, rows back to SciPy's shapes and sentinels).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph as scipy_csgraph

import mgapsp
from mgapsp import csgraph as mcs
from mgapsp.backends import BatchResult, get_backend
from mgapsp.backends.cpu import CPUBackend
from mgapsp.errors import GraphFormatError, MgapspError, NegativeCycleError, UnsupportedError

DATA = Path(__file__).parent / "data"

NAMES = ["shortest_path", "dijkstra", "bellman_ford", "johnson", "floyd_warshall"]
#: (ours, SciPy's, extra keywords): every way to reach each algorithm
CALLS = {
    "shortest_path": ("shortest_path", {}),
    "shortest_path-FW": ("shortest_path", {"method": "FW"}),
    "shortest_path-D": ("shortest_path", {"method": "D"}),
    "shortest_path-BF": ("shortest_path", {"method": "BF"}),
    "shortest_path-J": ("shortest_path", {"method": "J"}),
    "dijkstra": ("dijkstra", {}),
    "bellman_ford": ("bellman_ford", {}),
    "johnson": ("johnson", {}),
    "floyd_warshall": ("floyd_warshall", {}),
}
WITH_INDICES = [c for c in CALLS if c not in ("floyd_warshall", "shortest_path-FW")]
NEGATIVE_OK = ["shortest_path", "shortest_path-FW", "shortest_path-BF", "shortest_path-J",
               "bellman_ford", "johnson", "floyd_warshall"]


# -- helpers (test_gpu_csgraph imports them) ---------------------------------------------
class GPULikeBackend(CPUBackend):
    """The CPU backend refusing what the GPU's refuses: predecessors in float64."""

    def distances(self, graph, sources, *, algorithm, dtype, predecessors=False,
                  potentials=None, device=False, targets=None):
        if predecessors and np.dtype(dtype) != np.float32:
            raise UnsupportedError("predecessors with dtype float32 only")
        return super().distances(graph, sources, algorithm=algorithm, dtype=dtype,
                                 predecessors=predecessors, potentials=potentials,
                                 targets=targets)


def random_matrix(seed: int, n: int = 24, density: float = 0.15, *, negative: bool = False,
                  integer: bool = True) -> np.ndarray:
    """A dense graph as SciPy reads one: 0 = no edge.  ``negative``: weights shifted by
    potentials, so some are negative but no cycle is."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 10, (n, n)).astype(float) if integer else rng.uniform(0.5, 10, (n, n))
    a = np.where(rng.random((n, n)) < density, w, 0.0)
    if negative:
        p = rng.integers(0, 8, n).astype(float)
        a = np.where(a != 0, a + p[:, None] - p[None, :], 0.0)
    return a


def as_form(a: np.ndarray, form: str):
    """``a`` as the input kind ``form``; every form holds the same graph."""
    return {"dense": lambda: a, "list": a.tolist, "csr": lambda: sp.csr_array(a),
            "csr_matrix": lambda: sp.csr_matrix(a), "coo": lambda: sp.coo_array(a),
            "masked": lambda: np.ma.masked_equal(a, 0)}[form]()


def scipy_input(obj):
    """What SciPy is given for the same graph (it refuses lists and, in FW, COO)."""
    if isinstance(obj, list):
        return np.asarray(obj)
    return obj.tocsr() if sp.issparse(obj) and obj.format == "coo" else obj


def weight_matrix(obj, directed: bool = True, unweighted: bool = False) -> np.ndarray:
    """Dense weights, inf where no edge, as the Dijkstra family reads ``obj``."""
    if sp.issparse(obj):
        coo = sp.coo_array(obj)
        W = np.full(obj.shape, np.inf)
        np.minimum.at(W, (coo.row, coo.col), coo.data.astype(float))
    elif np.ma.isMaskedArray(obj):
        W = np.where(np.ma.getmaskarray(obj), np.inf, np.ma.getdata(obj)).astype(float)
    else:
        a = np.asarray(obj, dtype=float)
        W = np.where(np.isfinite(a) & (a != 0), a, np.inf)
    if not directed:
        W = np.minimum(W, W.T)
    return np.where(np.isfinite(W), 1.0, np.inf) if unweighted else W


def check_predecessors(dist, pred, W, sources) -> None:
    """Every predecessor closes a shortest path: ``d[i, p] + W[p, j] == d[i, j]``; none
    (-9999) exactly at the source and where unreachable."""
    n = dist.shape[-1]
    dist, pred = dist.reshape(-1, n), pred.reshape(-1, n)
    sources = np.asarray(sources, dtype=np.int64).ravel()
    rows = np.arange(len(sources))
    none = pred == mcs.NULL_IDX
    expect_none = np.isinf(dist)
    expect_none[rows, sources] = True
    np.testing.assert_array_equal(none, expect_none)
    i, j = np.nonzero(~none)
    p = pred[i, j]
    np.testing.assert_allclose(dist[i, p] + W[p, j], dist[i, j], rtol=1e-12, atol=1e-12)


def assert_same(got, ref, *, exact_pred: bool = True, W=None, sources=None,
                exact: bool = True) -> None:
    """``got`` is SciPy's answer ``ref``: types, shapes, dtypes, values."""
    assert type(got) is type(ref)
    if isinstance(ref, tuple):
        assert len(got) == len(ref)
        (d, p), (rd, rp) = got[:2], ref[:2]
        assert p.dtype == rp.dtype == np.int32 and p.shape == rp.shape
        if exact_pred:
            np.testing.assert_array_equal(p, rp)
        else:
            check_predecessors(d, p, W, np.atleast_1d(sources))
        for extra, rextra in zip(got[2:], ref[2:]):
            np.testing.assert_array_equal(extra, rextra)
    else:
        d, rd = got, ref
    assert d.dtype == rd.dtype == np.float64 and d.shape == rd.shape
    if exact:
        np.testing.assert_array_equal(d, rd)
    else:
        np.testing.assert_array_equal(np.isinf(d), np.isinf(rd))
        fin = np.isfinite(rd)
        np.testing.assert_allclose(d[fin], rd[fin], rtol=1e-12, atol=1e-12)


def both(call: str, obj, **kwargs):
    """(ours, SciPy's) for ``call`` on ``obj``."""
    name, extra = CALLS[call]
    ours = getattr(mcs, name)(obj, **extra, **kwargs)
    ref = getattr(scipy_csgraph, name)(scipy_input(obj), **extra, **kwargs)
    return ours, ref


@pytest.fixture(params=["scipy", "kernels"])
def path(request, monkeypatch):
    """Which way mgapsp answers: SciPy, or a backend's kernels (the CPU backend here).
    Yields the list of SciPy calls that mgapsp made."""
    backend = None if request.param == "scipy" else get_backend("cpu")
    monkeypatch.setattr(mcs, "_kernel_backend", lambda: backend)
    calls = []
    real = mcs._call_scipy

    def spy(name, csgraph, **kwargs):
        calls.append(name)
        return real(name, csgraph, **kwargs)

    monkeypatch.setattr(mcs, "_call_scipy", spy)
    return request.param, calls


# -- the API -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_signature_is_scipys(name):
    ours = inspect.signature(getattr(mcs, name)).parameters
    theirs = inspect.signature(getattr(scipy_csgraph, name)).parameters
    assert [(p.name, p.kind, p.default) for p in ours.values()] == \
           [(p.name, p.kind, p.default) for p in theirs.values()]


def test_negative_cycle_error_is_scipys():
    assert issubclass(NegativeCycleError, scipy_csgraph.NegativeCycleError)
    assert issubclass(NegativeCycleError, ValueError)


# -- parity on random graphs ---------------------------------------------------------------
FORMS = ["dense", "list", "csr", "csr_matrix", "coo", "masked"]
#: (density, directed, predecessors): every pair of directed and predecessors, both
#: densities; each call meets each in turn over the forms (a product of all five took
#: 768 cases to test what these 96 do)
VARIANTS = [(0.15, True, False), (0.5, False, True), (0.5, True, True), (0.15, False, False)]


@pytest.mark.parametrize("call,form,density,directed,predecessors", [
    (call, form, *VARIANTS[(i + j) % len(VARIANTS)])
    for i, call in enumerate(CALLS) for j, form in enumerate(FORMS)])
def test_parity_random(call, density, form, directed, predecessors, path):
    a = random_matrix(1, density=density)
    obj = as_form(a, form)
    ours, ref = both(call, obj, directed=directed, return_predecessors=predecessors)
    kernels = path[0] == "kernels"
    assert_same(ours, ref, exact_pred=not kernels, W=weight_matrix(a, directed),
                sources=np.arange(len(a)))
    assert (path[1] == []) == kernels


@pytest.mark.parametrize("predecessors", [False, True])
@pytest.mark.parametrize("indices", [None, 3, -1, [0, 5, 2], [4, 4, 1], [[0, 1], [2, 3]], [],
                                     np.array([7, 0], dtype=np.int64)])
@pytest.mark.parametrize("call", WITH_INDICES)
def test_parity_indices(call, indices, predecessors, path):
    a = random_matrix(2, integer=False)
    ours, ref = both(call, sp.csr_array(a), indices=indices, return_predecessors=predecessors)
    kernels = path[0] == "kernels"
    sources = np.arange(len(a)) if indices is None else np.atleast_1d(indices).ravel() % len(a)
    assert_same(ours, ref, exact=not kernels, exact_pred=not kernels, W=weight_matrix(a),
                sources=sources)


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("form", ["dense", "csr", "masked"])
@pytest.mark.parametrize("call", list(CALLS))
def test_parity_unweighted(call, form, directed, path):
    a = random_matrix(3, density=0.3)
    ours, ref = both(call, as_form(a, form), directed=directed, unweighted=True)
    assert_same(ours, ref)


@pytest.mark.parametrize("predecessors", [False, True])
@pytest.mark.parametrize("min_only", [False, True])
@pytest.mark.parametrize("limit", [np.inf, 0.0, 4.5, 11])
@pytest.mark.parametrize("indices", [None, 0, [1, 6, 1]])
def test_dijkstra_limit_min_only(indices, limit, min_only, predecessors, path):
    a = random_matrix(4, density=0.2)
    ours, ref = both("dijkstra", a, indices=indices, limit=limit, min_only=min_only,
                     return_predecessors=predecessors)
    plain = limit == np.inf and not min_only
    kernels = path[0] == "kernels"
    assert_same(ours, ref, exact_pred=not (kernels and plain), W=weight_matrix(a),
                sources=np.arange(len(a)) if indices is None else indices)
    assert (path[1] == []) == (kernels and plain)


# -- negative weights and negative cycles ----------------------------------------------------
@pytest.mark.parametrize("predecessors", [False, True])
@pytest.mark.parametrize("form", ["dense", "csr", "masked"])
@pytest.mark.parametrize("density", [0.15, 0.5])
@pytest.mark.parametrize("call", NEGATIVE_OK)
def test_parity_negative_weights(call, density, form, predecessors, path):
    a = random_matrix(5, density=density, negative=True)
    assert (a < 0).any()
    ours, ref = both(call, as_form(a, form), return_predecessors=predecessors)
    kernels = path[0] == "kernels"
    assert_same(ours, ref, exact_pred=not kernels, W=weight_matrix(a), sources=np.arange(len(a)))


@pytest.mark.parametrize("call", ["dijkstra", "shortest_path-D"])
def test_dijkstra_negative_weights_is_scipys(call, path):
    """SciPy warns and answers inaccurately; mgapsp lets SciPy answer."""
    a = random_matrix(6, negative=True)
    with pytest.warns(UserWarning, match="negative weights"):
        ours, ref = both(call, a)
    assert_same(ours, ref)
    assert path[1] == ["dijkstra"]


def cycle_matrix(seed: int = 7, n: int = 20) -> np.ndarray:
    a = random_matrix(seed, n)
    a[3, 8], a[8, 12], a[12, 3] = 2.0, -5.0, 1.0          # 3 -> 8 -> 12 -> 3 weighs -2
    return a


def assert_cycle(err: NegativeCycleError, W: np.ndarray) -> None:
    assert isinstance(err, scipy_csgraph.NegativeCycleError)
    cycle = np.asarray(err.cycle)
    assert len(cycle) and err.weight < 0
    assert W[cycle, np.roll(cycle, -1)].sum() == pytest.approx(err.weight)


@pytest.mark.parametrize("form", ["dense", "csr", "masked"])
@pytest.mark.parametrize("call", NEGATIVE_OK)
def test_negative_cycle(call, form, path):
    a = cycle_matrix()
    obj = as_form(a, form)
    name, extra = CALLS[call]
    with pytest.raises(scipy_csgraph.NegativeCycleError):
        getattr(scipy_csgraph, name)(obj, **extra)
    with pytest.raises(NegativeCycleError) as info:
        getattr(mcs, name)(obj, **extra)
    assert_cycle(info.value, weight_matrix(a))


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("call", ["dijkstra", "shortest_path-D"])
def test_dijkstra_negative_cycle(call, directed, path):
    """Reachable from ``indices``: NegativeCycleError (SciPy's Dijkstra never returns);
    unreachable, or ``unweighted``: SciPy's answer and warning."""
    a = cycle_matrix()
    name, extra = CALLS[call]
    with pytest.raises(NegativeCycleError) as info:
        getattr(mcs, name)(a, directed=directed, **extra)
    assert_cycle(info.value, weight_matrix(a, directed))
    a[:, 0], a[0, :], a[0, 1], a[1, :] = 0.0, 0.0, 3.0, 0.0   # 0 reaches only 1
    if not directed:
        a[:, 1] = 0.0
        a[0, 1] = 3.0
    with pytest.warns(UserWarning, match="negative weights"):
        assert_same(*both(call, a, directed=directed, indices=[0, 1]))
    with pytest.warns(UserWarning, match="negative weights"):
        assert_same(*both(call, cycle_matrix(), directed=directed, unweighted=True))


@pytest.mark.parametrize("call", ["bellman_ford", "johnson", "floyd_warshall"])
def test_negative_undirected_edge_is_a_cycle(call, path):
    a = random_matrix(8)
    a[2, 5] = -1.0
    with pytest.raises(scipy_csgraph.NegativeCycleError):
        getattr(scipy_csgraph, call)(a, directed=False)
    with pytest.raises(NegativeCycleError) as info:
        getattr(mcs, call)(a, directed=False)
    assert sorted(info.value.cycle) == [2, 5]


@pytest.mark.parametrize("predecessors", [False, True])
def test_bellman_ford_unreachable_cycle(predecessors, path):
    """Bellman-Ford raises only for a cycle reachable from ``indices`` (Johnson: any)."""
    a = cycle_matrix()
    a[:, 0] = 0.0                                         # nothing reaches 0 ...
    a[0, :] = 0.0
    a[0, 1] = 3.0                                         # ... and 0 reaches only 1
    a[1, :] = 0.0
    ours, ref = both("bellman_ford", a, indices=0, return_predecessors=predecessors)
    assert_same(ours, ref)
    with pytest.raises(NegativeCycleError):
        mcs.johnson(a, indices=0)


@pytest.mark.parametrize("call", list(CALLS))
def test_negative_self_loop(call, path):
    """Floyd-Warshall ignores the diagonal; Bellman-Ford and Johnson see a cycle."""
    a = random_matrix(9)
    a[4, 4] = -1.0
    name, extra = CALLS[call]
    method = extra.get("method", {"shortest_path": "auto"}.get(name, name))
    if method in ("floyd_warshall", "FW"):
        assert_same(*both(call, a))
    elif method in ("bellman_ford", "johnson", "BF", "J", "auto"):
        with pytest.raises(NegativeCycleError) as info:
            getattr(mcs, name)(a, **extra)
        assert info.value.cycle == [4]
    else:                             # SciPy's Dijkstra would never return
        with pytest.raises(NegativeCycleError) as info:
            getattr(mcs, name)(a, **extra)
        assert info.value.cycle == [4]


@pytest.mark.parametrize("predecessors", [False, True])
@pytest.mark.parametrize("call", ["floyd_warshall", "shortest_path"])
def test_overwrite(call, predecessors, path):
    """overwrite=True with a C-ordered float64 array: the result lands in the input."""
    a, b = random_matrix(15, density=0.5), random_matrix(15, density=0.5)
    ours = getattr(mcs, call)(a, overwrite=True, return_predecessors=predecessors)
    ref = getattr(scipy_csgraph, call)(b, overwrite=True, return_predecessors=predecessors)
    assert_same(ours, ref, exact_pred=path[0] == "scipy", sources=np.arange(len(a)),
                W=weight_matrix(random_matrix(15, density=0.5)))
    np.testing.assert_array_equal(a, b)
    assert np.shares_memory(ours[0] if predecessors else ours, a)
    c = random_matrix(15, density=0.5).astype(np.float32)     # not float64: left alone
    mcs.floyd_warshall(c, overwrite=True)
    np.testing.assert_array_equal(c, random_matrix(15, density=0.5).astype(np.float32))


# -- how inputs are read ---------------------------------------------------------------------
@pytest.mark.parametrize("call", list(CALLS))
def test_dense_zeros_are_no_edge(call, path):
    """The classic SciPy adjacency matrix: 0 (and inf, NaN) off the diagonal is no edge."""
    a = np.array([[0, 1, 2, 0], [0, 0, 0, 1], [2, 0, 0, 3], [0, 0, 0, 0.]])
    expected = np.array([[0, 1, 2, 2], [np.inf, 0, np.inf, 1], [2, 3, 0, 3],
                         [np.inf, np.inf, np.inf, 0]])
    ours, ref = both(call, a)
    assert_same(ours, ref)
    np.testing.assert_array_equal(ours, expected)
    b = a.copy()
    b[1, 0], b[3, 2] = np.inf, np.nan
    assert_same(*both(call, b))


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("call", list(CALLS))
def test_sparse_explicit_zeros_are_edges(call, directed, path):
    s = sp.csr_array((np.array([0.0, 4.0, 0.0, 2.0]), (np.array([0, 1, 2, 3]),
                                                        np.array([1, 2, 3, 0]))), shape=(4, 4))
    assert s.nnz == 4
    ours, ref = both(call, s, directed=directed, return_predecessors=True)
    assert ours[0][0, 1] == 0 and ours[0][2, 3] == 0
    assert_same(ours, ref, exact_pred=path[0] == "scipy", W=weight_matrix(s, directed),
                sources=np.arange(4))


@pytest.mark.parametrize("call", list(CALLS))
def test_masked_unmasked_zeros(call, path):
    """SciPy's own split: an unmasked 0 is a zero-weight edge for Dijkstra, Bellman-Ford
    and Johnson, and no edge for Floyd-Warshall."""
    m = np.ma.masked_array([[0, 0, 5], [1, 0, 0], [0, 2, 0.]],
                           mask=[[1, 0, 1], [0, 1, 1], [1, 0, 1]])
    assert_same(*both(call, m))


@pytest.mark.parametrize("call", list(CALLS))
def test_undirected_takes_the_lighter_direction(call, path):
    a = np.array([[0, 5, 0], [3, 0, 7], [0, 2, 0.]])
    ours, ref = both(call, a, directed=False)
    assert_same(ours, ref)
    np.testing.assert_array_equal(ours, [[0, 3, 5], [3, 0, 2], [5, 2, 0]])


@pytest.mark.parametrize("call", list(CALLS))
def test_duplicates(call, path):
    """A CSR's duplicate entries: the lightest counts; a COO's are summed by tocsr()."""
    csr = sp.csr_array((np.array([3.0, 1.0, 2.0]), np.array([1, 1, 2]), np.array([0, 2, 3, 3])),
                       shape=(3, 3))
    assert not csr.has_canonical_format
    assert_same(*both(call, csr))
    coo = sp.coo_array((np.array([3.0, 1.0, 2.0]), (np.array([0, 0, 1]), np.array([1, 1, 2]))),
                       shape=(3, 3))
    ours = getattr(mcs, CALLS[call][0])(coo, **CALLS[call][1])
    np.testing.assert_array_equal(ours[0], [0, 4, 6])


def test_floyd_warshall_reads_coo(path):
    """SciPy's floyd_warshall refuses COO; this reads it as dijkstra does."""
    coo = sp.coo_array(random_matrix(10))
    np.testing.assert_array_equal(mcs.floyd_warshall(coo), scipy_csgraph.dijkstra(coo))


@pytest.mark.parametrize("call", list(CALLS))
def test_non_finite_sparse_weights(call, path):
    s = sp.csr_array((np.array([np.inf, 1.0, 2.0]), np.array([1, 2, 0]), np.array([0, 1, 2, 3])),
                     shape=(3, 3))
    assert_same(*both(call, s))
    assert path[1]                    # SciPy answered


@pytest.mark.parametrize("a", [np.zeros((0, 0)), np.zeros((3, 3))], ids=["0x0", "no-edge"])
@pytest.mark.parametrize("call", list(CALLS))
def test_empty(call, a, path):
    assert_same(*both(call, a, return_predecessors=True))


# -- real graphs -------------------------------------------------------------------------------
def real(name: str):
    return mgapsp.read_graph(DATA / name).to_scipy()


@pytest.mark.parametrize("predecessors", [False, True])
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("name", ["karate.mtx", "br17.atsp", "SiouxFalls_net.tntp"])
def test_real_small(name, call, predecessors, path):
    """Small graphs: karate (undirected, unweighted), br17 (zero weights), Sioux Falls."""
    s = real(name)
    for obj in (s, s.toarray()):                          # sparse, and the dense reading
        ours, ref = both(call, obj, return_predecessors=predecessors)
        assert_same(ours, ref, exact_pred=path[0] == "scipy", W=weight_matrix(obj),
                     sources=np.arange(s.shape[0]))


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("call", ["shortest_path", "dijkstra", "floyd_warshall"])
def test_real_usair97(call, directed, path):
    s = real("USAir97.mtx")
    assert_same(*both(call, s, directed=directed), exact=path[0] == "scipy")


@pytest.mark.parametrize("call", ["dijkstra", "bellman_ford", "johnson", "shortest_path"])
def test_real_rome99(call, path):
    s = real("rome99.gr")
    indices = [0, 1234] if call in ("bellman_ford", "johnson") else [0, 1234, 3352, 17]
    ours, ref = both(call, s, indices=indices, return_predecessors=True)
    assert_same(ours, ref, exact_pred=path[0] == "scipy", W=weight_matrix(s),
                sources=np.array(indices))


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.zeros((2, 3)), np.zeros(3), np.zeros((2, 2, 2)),
                                 sp.csr_array((2, 3))], ids=["2x3", "1d", "3d", "sparse2x3"])
@pytest.mark.parametrize("name", NAMES)
def test_bad_graph(name, bad):
    with pytest.raises(ValueError):
        getattr(scipy_csgraph, name)(bad)
    with pytest.raises(GraphFormatError):
        getattr(mcs, name)(bad)


BAD_OPTIONS = [(call, kw) for call in WITH_INDICES
               for kw in ({"indices": 24}, {"indices": [0, -25]})]
BAD_OPTIONS += [("shortest_path", {"method": "X"}), ("dijkstra", {"limit": -1}),
                ("shortest_path", {"method": "FW", "indices": 0})]


@pytest.mark.parametrize("call,kwargs", BAD_OPTIONS, ids=str)
def test_bad_options(call, kwargs):
    call, extra = CALLS[call]
    kwargs = {**extra, **kwargs}
    a = random_matrix(11)
    with pytest.raises(ValueError):
        getattr(scipy_csgraph, call)(a, **kwargs)
    with pytest.raises(MgapspError):
        getattr(mcs, call)(a, **kwargs)


# -- the kernel path's pieces ------------------------------------------------------------------
def test_fallback_where_the_backend_refuses(monkeypatch):
    """Predecessors in float64, which the GPU refuses: SciPy answers."""
    monkeypatch.setattr(mcs, "_kernel_backend", lambda: GPULikeBackend())
    calls = []
    real = mcs._call_scipy
    monkeypatch.setattr(mcs, "_call_scipy", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    a = random_matrix(12)
    assert_same(mcs.dijkstra(a, return_predecessors=True),
                scipy_csgraph.dijkstra(a, return_predecessors=True))
    assert calls == ["dijkstra"]
    monkeypatch.setattr(mcs, "_call_scipy", lambda *a, **k: pytest.fail("SciPy called"))
    assert_same(mcs.dijkstra(a), scipy_csgraph.dijkstra(a))


def test_batches_fit_the_backend(monkeypatch):
    """Sources go in batches that fit the backend's memory."""
    seen = []

    class Small(CPUBackend):
        def memory_available(self):
            return self.memory_needed(g, 5, algorithm="dijkstra", dtype=np.float64,
                                      predecessors=False)

        def distances(self, graph, sources, **kwargs):
            seen.append(len(sources))
            return super().distances(graph, sources, **kwargs)

    a = random_matrix(13)
    g = mcs._graph(a, "D", True, False)
    monkeypatch.setattr(mcs, "_kernel_backend", lambda: Small())
    assert_same(mcs.dijkstra(a), scipy_csgraph.dijkstra(a))
    assert max(seen) <= 5 and sum(seen) == len(a)


def test_graph_is_canonical():
    a = np.array([[3, 1, 0], [0, 0, np.inf], [4, 2, 0.]])
    g = mcs._graph(a, "D", True, False)
    np.testing.assert_array_equal(g.indptr, [0, 2, 2, 4])
    np.testing.assert_array_equal(g.indices, [0, 1, 0, 1])
    np.testing.assert_array_equal(g.weights, [3, 1, 4, 2])
    u = mcs._graph(a, "FW", False, False)                # no diagonal; both ways, lighter
    assert not u.directed
    np.testing.assert_array_equal(u.indptr, [0, 2, 4, 6])
    np.testing.assert_array_equal(u.indices, [1, 2, 0, 2, 0, 1])
    np.testing.assert_array_equal(u.weights, [1, 4, 1, 2, 4, 2])
    assert mcs._graph(a, "D", True, True).weights.tolist() == [1, 1, 1, 1]
    assert mcs._graph(np.zeros((2, 2)), "D", True, False) is None
    assert mcs._graph(-a, "D", True, False) is None       # Dijkstra: SciPy's warning
    assert mcs._graph(-a, "BF", True, False) is not None


def test_scipy_shapes_from_a_backend():
    g = mcs._graph(random_matrix(14), "D", True, False)
    res: BatchResult = get_backend("cpu").distances(g, np.array([2]), algorithm="dijkstra",
                                                    dtype=np.float64, predecessors=True)
    assert (res.predecessors == -1).any()
    d, p = mcs._scipy_shapes(res.distances, res.predecessors, (g.n,))
    ref_d, ref_p = scipy_csgraph.dijkstra(g.to_scipy(), indices=2, return_predecessors=True)
    np.testing.assert_array_equal(d, ref_d)
    check_predecessors(d, p, weight_matrix(g.to_scipy()), [2])
    assert d.shape == (g.n,) and p.dtype == np.int32 and (p == mcs.NULL_IDX).sum() == (
        ref_p == mcs.NULL_IDX).sum()
    assert mcs._scipy_shapes(res.distances, None, (1, g.n)).shape == (1, g.n)


def test_no_gpu_means_scipy():
    if mcs._gpu_visible():
        pytest.skip("a GPU is visible")
    assert mcs._kernel_backend() is None
