"""float32 proven batch by batch: integer weights whose path sums may pass 2**24 are
computed in float32, each batch's largest distance checked below 2**24, and a batch
that reaches it is computed again in float64 (mgapsp.plan.choose_dtype says why that
is exact).  Every answer is compared with SciPy's float64 Dijkstra."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

import mgapsp
from mgapsp.backends import FLOAT32_EXACT, get_backend
from mgapsp.backends.base import largest_finite
from mgapsp.errors import Float32Inexact
from mgapsp.jobs.driver import run_job
from mgapsp.plan import choose_dtype
from mgapsp.store import Store

BIG = 2**23 + 1     # two of these in a row pass 2**24


def _chains(k_small: int, k_big: int) -> sp.csr_matrix:
    """Disjoint three-vertex chains: ``k_small`` whose distances stay tiny, then
    ``k_big`` whose two arcs of BIG each add up past 2**24.  Their path-sum bound
    passes 2**24 either way, so float32 is chosen checked."""
    rows, cols, w = [], [], []
    for c in range(k_small + k_big):
        a = 3 * c
        weight = BIG if c >= k_small else 1 + c % 5
        rows += [a, a + 1]
        cols += [a + 1, a + 2]
        w += [weight, weight]
    n = 3 * (k_small + k_big)
    # a heavy arc that the first chain's own path beats: the bound passes 2**24
    # whether or not there are big chains
    rows.append(0)
    cols.append(2)
    w.append(float(2**25))
    return sp.csr_matrix((np.array(w, dtype=float), (rows, cols)), shape=(n, n))


def _loose(n: int = 1500, seed: int = 1) -> sp.csr_matrix:
    """A random graph with weights up to 20,000: (n - 1) x 20,000 passes 2**24, its
    distances stay far below."""
    m = sp.random(n, n, density=4 / n, random_state=seed, format="csr")
    m.data = np.random.default_rng(seed).integers(1, 20_000, m.nnz).astype(float)
    return m


def test_the_choice_and_its_reason():
    exact = mgapsp.as_graph(sp.csr_matrix(np.array([[0, 3.0], [0, 0]])))
    assert choose_dtype(exact, "auto")[::2] == ("float32", False)
    dtype, why, checked = choose_dtype(mgapsp.as_graph(_loose()), "auto")
    assert (dtype, checked) == ("float32", True) and "checked" in why
    fractional = _loose()
    fractional.data += 0.5
    assert choose_dtype(mgapsp.as_graph(fractional), "auto")[::2] == ("float64", False)
    negative = _loose()
    negative.data[0] = -1
    assert choose_dtype(mgapsp.as_graph(negative), "auto")[::2] == ("float64", False)
    huge = _loose()
    huge.data[:] = 1e36     # sums past float32's range would read as unreachable
    assert choose_dtype(mgapsp.as_graph(huge), "auto")[::2] == ("float64", False)
    # asked for: kept, never checked
    assert choose_dtype(mgapsp.as_graph(_loose()), "float32")[2] is False


def test_largest_finite_skips_unreachable():
    block = np.array([[0, np.inf, 5], [7, -np.inf, np.nan]], dtype=np.float32)
    assert largest_finite(block) == 7
    assert largest_finite(np.full((3, 4), np.inf, dtype=np.float32)) == 0
    wide = np.zeros((3, 3_000_000), dtype=np.float32)      # several pieces
    wide[2, -1] = FLOAT32_EXACT
    assert largest_finite(wide) == FLOAT32_EXACT


def test_distances_that_stay_below_are_float32_and_exact():
    m = _loose()
    got = mgapsp.apsp(m, backend="cpu")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, dijkstra(m))


@pytest.mark.parametrize("k_small", [0, 5])
def test_a_batch_past_2_24_is_computed_again_in_float64(k_small):
    """The check must fail: the answer is float64 and SciPy's, from the first batch
    (k_small 0) or from a batch in the middle (the rows before it kept)."""
    m = _chains(k_small, 3)
    got = mgapsp.apsp(m, backend="cpu", batch_size=3)
    assert got.dtype == np.float64
    want = dijkstra(m)
    np.testing.assert_array_equal(got, want)
    assert want.max(where=np.isfinite(want), initial=0) >= FLOAT32_EXACT


def test_fill_rows_exact_says_where_it_failed():
    m = _chains(4, 2)
    g = mgapsp.as_graph(m)
    cpu = get_backend("cpu")
    dist = np.empty((g.n, g.n), dtype=np.float32)
    with pytest.raises(Float32Inexact) as info:
        cpu.fill_rows(g, np.arange(g.n), dist, batch_size=3, algorithm="dijkstra",
                      checked32=True)
    assert info.value.rows_done == 12 and info.value.value >= FLOAT32_EXACT
    done = []
    wide = cpu.fill_rows_exact(g, np.arange(g.n), np.empty((g.n, g.n), np.float32),
                               batch_size=3, algorithm="dijkstra", on_rows=done.append)
    assert wide.dtype == np.float64 and done[-1] == g.n
    np.testing.assert_array_equal(wide, dijkstra(m))


def test_a_job_checked_in_float32(cpu_client, tmp_path):
    m = _loose()
    run_job(mgapsp.as_graph(m), tmp_path / "ok.zarr", cpu_client, batch_size=100)
    store = Store.open(tmp_path / "ok.zarr")
    assert store.job["dtype"] == "float32" and store.job["checked32"]
    np.testing.assert_array_equal(mgapsp.open(tmp_path / "ok.zarr").distances(),
                                  dijkstra(m))


def test_a_job_whose_check_fails_runs_again_in_float64(cpu_client, tmp_path):
    """Its store is made again in float64 and says why; --resume keeps float64."""
    m = _chains(6, 2)
    g = mgapsp.as_graph(m)
    out = tmp_path / "again.zarr"
    report = run_job(g, out, cpu_client, batch_size=3)
    store = Store.open(out)
    assert store.job["dtype"] == "float64" and not store.job["checked32"]
    assert "float32 was checked" in store.job["dtype_reason"]
    assert report.plan.dtype == "float64"
    np.testing.assert_array_equal(mgapsp.open(out).distances(), dijkstra(m))
    again = run_job(g, out, cpu_client, batch_size=3, resume=True)
    assert again.plan.dtype == "float64" and again.rows_run == 0


def test_the_drop_ins_answer_float64():
    m = _chains(2, 2)
    got = mgapsp.dijkstra(m)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, dijkstra(m))


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ["bellman-ford", "dijkstra"])
def test_on_the_gpu(algorithm):
    """In process and through the drop-in, on the device: the check passes on a
    graph whose bound is loose, and fails (float64 then) on one whose distances
    pass 2**24, from a batch in the middle."""
    import cupy

    from mgapsp.cuda.device import largest_finite as device_largest

    block = cupy.asarray(np.array([[1, np.inf], [FLOAT32_EXACT, 3]], dtype=np.float32))
    assert float(device_largest(block)) == FLOAT32_EXACT
    loose = _loose(3000)
    got = mgapsp.apsp(loose, backend="gpu", algorithm=algorithm)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, dijkstra(loose))
    chains = _chains(40, 3)
    got = mgapsp.apsp(chains, backend="gpu", algorithm=algorithm, batch_size=8)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, dijkstra(chains))
    np.testing.assert_array_equal(mgapsp.dijkstra(loose), dijkstra(loose))
    np.testing.assert_array_equal(mgapsp.dijkstra(chains), dijkstra(chains))


@pytest.mark.gpu
def test_a_gpu_job_whose_check_fails(gpu_client, tmp_path):
    m = _chains(40, 3)
    out = tmp_path / "gpu.zarr"
    report = run_job(mgapsp.as_graph(m), out, gpu_client, backend="gpu", batch_size=8)
    assert report.plan.dtype == "float64"
    np.testing.assert_array_equal(mgapsp.open(out).distances(), dijkstra(m))
    ok = tmp_path / "gpu-ok.zarr"
    loose = _loose(3000)
    run_job(mgapsp.as_graph(loose), ok, gpu_client, backend="gpu")
    assert Store.open(ok).job["checked32"]
    np.testing.assert_array_equal(mgapsp.open(ok).distances(), dijkstra(loose))
