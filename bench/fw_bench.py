"""Time the blocked Floyd-Warshall kernels on one GPU (see bench/NOTES.md).

    python3 -m bench.fw_bench [--n 16384] [--repeats 3]
    compute-sanitizer --tool memcheck python3 -m bench.fw_bench --memcheck
    ncu --clock-control none -k regex:f32nn -s 3 -c 1 --section SchedulerStats \
        --section WarpStateStats --section ComputeWorkloadAnalysis \
        python3 -m bench.fw_bench --ncu

For each method and tile variant: a random dense graph (integer weights 1..100 on
about half the pairs, the rest "no path", so every method computes the same exact
answer), one warm-up run, then ``repeats`` runs, each on a fresh copy of the input,
timed with CUDA events around the whole in-place FW (all launches; the copy is not
timed); the median gives n**3 / t updates per second.  Every result is compared with
the first method's, element by element.  One more traced run per main method times
each launch (events around each) and sums them per phase.
"""

from __future__ import annotations

import argparse
import statistics
import time

import cupy as cp
import numpy as np

from mgapsp.cuda import floyd_warshall as fw


def make_input(n: int, seed: int = 1):
    rs = cp.random.RandomState(seed)
    w = rs.randint(1, 101, size=(n, n), dtype=cp.int32)
    keep = rs.random_sample((n, n), dtype=cp.float32) < 0.5
    D = cp.where(keep, w, fw.INF_I32).astype(cp.int32)
    del w, keep
    cp.fill_diagonal(D, 0)
    return D


def as_method(D32, method: str):
    """The int32 input (INF_I32 = no path) in ``method``'s storage."""
    if method in ("fp32", "fp64"):
        dt = cp.float32 if method == "fp32" else cp.float64
        return cp.where(D32 >= fw.INF_I32, cp.inf, D32.astype(dt)).astype(dt)
    if method == "int16x2-dpx":
        return cp.where(D32 >= fw.INF_I32, fw.INF_I16, D32).astype(cp.int16)
    return D32.copy()


def to_common(D, method: str):
    """A result as int32 with -1 for "no path" (for comparisons)."""
    if method in ("fp32", "fp64"):
        return cp.where(cp.isinf(D), -1, D).astype(cp.int32)
    inf = fw.INF_I32 if method == "int32-dpx" else fw.INF_I16
    return cp.where(D > inf // 2, -1, D.astype(cp.int32))


def time_variant(D0, method: str, cfg, repeats: int, with_p: bool = False):
    n = D0.shape[0]
    src = as_method(D0, method)
    work = cp.empty_like(src)
    P0 = P = None
    if with_p:
        P0 = cp.where(D0 < fw.INF_I32, cp.arange(n, dtype=cp.int32)[:, None], -1).astype(cp.int32)
        cp.fill_diagonal(P0, -1)
        P = cp.empty_like(P0)
    times = []
    for r in range(repeats + 1):
        work[...] = src
        if with_p:
            P[...] = P0
        cp.cuda.Device().synchronize()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        t0 = time.perf_counter()
        e0.record()
        fw._dense(work, P, cfg, method)
        e1.record()
        e1.synchronize()
        wall = time.perf_counter() - t0
        ms = cp.cuda.get_elapsed_time(e0, e1)
        if r > 0:
            times.append(ms / 1e3)
        else:
            print(f"    warm-up {ms / 1e3:.3f} s (wall {wall:.3f} s, compile included)", flush=True)
    del src
    return work, P, times


def trace(D0, method: str, cfg):
    src = as_method(D0, method)
    fw._TRACE = []
    try:
        fw._dense(src, None, cfg, method)
        cp.cuda.Device().synchronize()
        per = {}
        for what, a, b in fw._TRACE:
            per[what] = per.get(what, 0.0) + cp.cuda.get_elapsed_time(a, b) / 1e3
        first, last = fw._TRACE[0][1], fw._TRACE[-1][2]
        total = cp.cuda.get_elapsed_time(first, last) / 1e3
    finally:
        fw._TRACE = None
    return per, total


def memcheck():
    """Small runs of every kernel for compute-sanitizer.  CuPy's memory pool is off,
    so each array is its own allocation and an access past its end is caught; n = 301
    is odd (int16 goes through an (n, n + 1) copy) and leaves partial tiles."""
    cp.cuda.set_allocator(None)
    n = 301
    rs = np.random.default_rng(0)
    w = rs.integers(1, 10, (n, n))
    keep = rs.random((n, n)) < 0.3
    base = np.where(keep, w, -1)
    np.fill_diagonal(base, 0)
    for method, dt, inf in (("fp32", np.float32, np.inf), ("fp64", np.float64, np.inf),
                            ("int32-dpx", np.int32, fw.INF_I32),
                            ("int16x2-dpx", np.int16, fw.INF_I16)):
        for pred in (False, True):
            D = cp.asarray(np.where(base < 0, inf, base).astype(dt))
            P = None
            if pred:
                P = cp.asarray(np.where(base >= 0, np.arange(n)[:, None], -1).astype(np.int32))
                cp.fill_diagonal(P, -1)
            s = fw.floyd_warshall_dense(D, method=method, P=P)
            cp.cuda.Device().synchronize()
            print(method, "pred" if pred else "", s["method"], "ok", flush=True)


def ncu_runs():
    """n = 4096 runs of the fp32 (FMNMX), fp32 (>= 0, VIMNMX3) and int16x2 kernels,
    for Nsight Compute to pick a phase-3 launch from (-s 3 -c 1 with a -k regex)."""
    n = 4096
    rs = cp.random.RandomState(2)
    D0 = cp.where(rs.random_sample((n, n)) < 0.5, rs.randint(1, 101, (n, n)), fw.INF_I32)
    cp.fill_diagonal(D0, 0)
    F = cp.where(D0 >= fw.INF_I32, cp.inf, D0).astype(cp.float32)
    for cfg in (fw.CONFIGS[("fp32", False)], fw.FP32_NONNEG):
        fw._dense(F.copy(), None, cfg, "fp32")
    fw._dense(cp.where(D0 >= fw.INF_I32, fw.INF_I16, D0).astype(cp.int16), None,
              fw.CONFIGS[("int16x2-dpx", False)], "int16x2-dpx")
    cp.cuda.Device().synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n64", type=int, default=8192, help="n for fp64 and predecessors")
    ap.add_argument("--memcheck", action="store_true", help="small runs for compute-sanitizer")
    ap.add_argument("--ncu", action="store_true", help="n = 4096 runs for Nsight Compute")
    args = ap.parse_args()
    if args.memcheck:
        return memcheck()
    if args.ncu:
        return ncu_runs()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print(f"device: {props['name'].decode()}, {props['multiProcessorCount']} SMs, "
          f"CuPy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")

    # registers and local memory as NVRTC built them
    cfgs = list(fw.CONFIGS.values()) + list(fw._VARIANTS.values()) + [fw.FP32_NONNEG]
    names = sorted({c.mp for c in cfgs} | {c.p1 for c in cfgs} | {c.pack for c in cfgs})
    for name in names:
        k = fw.get_kernel(name, fw.FW_FILE)
        print(f"  {name:45s} regs {k.num_regs:3d}  local {k.local_size_bytes:4d} B")

    n = args.n
    D0 = make_input(n)
    runs = [
        ("fp32 (>=0, VIMNMX3)", "fp32", fw.FP32_NONNEG),
        ("fp32 (FMNMX)", "fp32", fw.CONFIGS[("fp32", False)]),
        ("fp32 k16s4", "fp32", fw._VARIANTS["fp32-k16s4"]),
        ("int32-dpx", "int32-dpx", fw.CONFIGS[("int32-dpx", False)]),
        ("int16x2-dpx", "int16x2-dpx", fw.CONFIGS[("int16x2-dpx", False)]),
        ("int16x2 b128", "int16x2-dpx", fw._VARIANTS["int16x2-b128"]),
    ]
    table = []
    ref = None
    for label, method, cfg in runs:
        print(f"{label} ({cfg.mp}), n={n}", flush=True)
        try:
            out, _, times = time_variant(D0, method, cfg, args.repeats)
        except Exception as exc:                       # keep going: report it
            print(f"    FAILED: {type(exc).__name__}: {exc}")
            table.append((label, n, float("nan"), float("nan"), "failed"))
            continue
        res = to_common(out, method)
        del out
        if ref is None:
            ref, same = res, "reference"
        else:
            bad = int(cp.count_nonzero(res != ref))
            same = "identical" if bad == 0 else f"{bad} DIFFER"
        del res
        med = statistics.median(times)
        print(f"    times {', '.join(f'{t:.4f}' for t in times)} s; median {med:.4f} s; "
              f"{n**3 / med / 1e12:.2f} T updates/s; {same}", flush=True)
        table.append((label, n, med, n**3 / med / 1e12, same))

    print("traced runs (sum of per-launch event times by phase):")
    for label, method, cfg in (runs[0], runs[1], runs[3], runs[4], runs[5]):
        per, total = trace(D0, method, cfg)
        parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in per.items())
        B = cfg.B
        p3 = (n - B) ** 2 * n
        print(f"  {label}: total {total:.4f} s: {parts}; phase 3 alone "
              f"{p3 / per['phase3'] / 1e12:.2f} T/s")
    del ref

    n64 = args.n64
    D1 = D0[:n64, :n64].copy()
    del D0
    ref = None
    for label, method, cfg, with_p in (
            ("fp64", "fp64", fw.CONFIGS[("fp64", False)], False),
            ("fp32 +pred", "fp32", fw.CONFIGS[("fp32", True)], True),
            ("int32-dpx +pred", "int32-dpx", fw.CONFIGS[("int32-dpx", True)], True),
            ("fp64 +pred", "fp64", fw.CONFIGS[("fp64", True)], True)):
        print(f"{label} ({cfg.mp}), n={n64}", flush=True)
        try:
            out, P, times = time_variant(D1, method, cfg, 2, with_p=with_p)
        except Exception as exc:
            print(f"    FAILED: {type(exc).__name__}: {exc}")
            table.append((label, n64, float("nan"), float("nan"), "failed"))
            continue
        res = to_common(out, method)
        if ref is None:
            ref, same = res, "reference"
        else:
            bad = int(cp.count_nonzero(res != ref))
            same = "identical" if bad == 0 else f"{bad} DIFFER"
        if P is not None:
            # spot check: P[i, j] is an edge into j that is tight
            rs = np.random.default_rng(0)
            ii = cp.asarray(rs.integers(0, n64, 4096))
            jj = cp.asarray(rs.integers(0, n64, 4096))
            p = P[ii, jj]
            ok = (p >= 0) & (ii != jj)
            pk = cp.where(ok, p, 0)
            tight = res[ii, pk] + D1[pk, jj] == res[ii, jj]
            same += f"; preds tight {int(cp.count_nonzero(tight & ok))}/{int(cp.count_nonzero(ok))}"
        med = statistics.median(times)
        print(f"    times {', '.join(f'{t:.4f}' for t in times)} s; median {med:.4f} s; "
              f"{n64**3 / med / 1e12:.2f} T updates/s; {same}", flush=True)
        table.append((label, n64, med, n64**3 / med / 1e12, same))
        del out, P, res

    print()
    print(f"{'method':18s} {'n':>6s} {'median s':>9s} {'T upd/s':>8s}  check")
    for label, nn, med, rate, same in table:
        print(f"{label:18s} {nn:6d} {med:9.4f} {rate:8.2f}  {same}")


if __name__ == "__main__":
    main()
