"""Floyd-Warshall across devices: each rank owns a slab of rows of the matrix.

Per pivot block the rank owning those rows closes them and broadcasts them through
the job's exchange (:mod:`mgapsp.jobs.floyd_warshall_slabs`); every rank then updates
its own rows against them with the kernels of :mod:`.floyd_warshall`.  Slab
boundaries are multiples of :data:`mgapsp.backends.SLAB_ALIGN` (every method's pivot
block divides it).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import UnsupportedError
from . import floyd_warshall as fw

#: slab boundaries are multiples of this (every method's pivot block divides it)
SLAB_ALIGN = 256

#: rounds a rank may run ahead of the device before it waits (and looks for aborts)
SLAB_LOOKAHEAD = 4

_NULL = np.uint64(0)


def floyd_warshall_slab(S, r0: int, n: int, method: str, exchange, bounds,
                        *, nonneg: bool = False) -> dict:
    """Blocked FW, in place, on rows ``[r0, r0 + len(S))`` of an ``n``-vertex matrix
    whose other rows are other ranks' slabs (``bounds[rank] = (lo, hi)``, ascending,
    together ``[0, n)``, every ``lo`` a multiple of :data:`SLAB_ALIGN`).

    ``S`` is a C-contiguous (rows, lda) device buffer, ``lda >= n`` (even for int16),
    columns ``n:`` ignored.  Per pivot block the rank owning it closes the diagonal
    tile and its row panel (phase 1, pack and the row half of phase 2) and
    ``exchange.bcast`` sends those ``B`` rows to every rank; then each rank closes its
    own column panel against them and runs phase 3 on its rows.  ``exchange`` has
    ``rank``, ``bcast(buf, root)`` (in order with the current stream's work) and
    ``wait(event)`` (a device event, watching for a failed peer).  ``nonneg``: every
    entry of the whole matrix is >= 0 (all ranks must agree), for fp32's DPX variant.
    """
    run = _SlabRun(S, r0, n, method, exchange, bounds, nonneg)
    try:
        return run.run()
    finally:
        run.release()


class _SlabRun:
    """One rank's part of :func:`floyd_warshall_slab`: its buffers, kernels and the
    pivot-block loop, step by step."""

    def __init__(self, S, r0: int, n: int, method: str, exchange, bounds, nonneg: bool):
        cupy = fw.cupy_module()
        cfg = fw.FP32_NONNEG if method == "fp32" and nonneg else fw.CONFIGS[(method, False)]
        rows = int(S.shape[0])
        if S.dtype.name != cfg.dtype or not S.flags.c_contiguous or S.shape[1] < n:
            raise ValueError(f"slab must be a C-contiguous {cfg.dtype} buffer of at least "
                             f"{n} columns; got {S.dtype} {S.shape}")
        lda = int(S.shape[1])
        B, epw = cfg.B, cfg.epw
        if lda % epw or SLAB_ALIGN % B or any(lo % SLAB_ALIGN for lo, _ in bounds):
            raise ValueError(f"slab bounds {bounds} or pitch {lda} do not fit pivot block {B}")
        self.S, self.cfg, self.exchange, self.cupy = S, cfg, exchange, cupy
        self.n, self.r0, self.r1, self.rows, self.lda, self.B = n, r0, r0 + rows, rows, lda, B
        self.nblk = -(-n // B)
        self.Mpad = -(-max(rows, 1) // B) * B
        self.nw = -(-n // epw)
        self.rwp = -(-self.nw // 4) * 4
        self.ldw = lda // epw
        self.stats = {"method": method, "n": n, "rows": rows, "rounds": self.nblk,
                      "updates": rows * n * n, "exchanged_bytes": 0}
        # "virtual" pointers: row i (global) of the matrix and of the transposed column
        # panel, valid for the rows this rank holds
        self.base = S.data.ptr - r0 * lda * S.itemsize
        self.At = cupy.empty((B, self.Mpad), dtype=cfg.word)
        self.at_v = np.uint64(self.At.data.ptr - r0 * cfg.word_bytes)
        self.Rw = cupy.empty((B, self.rwp), dtype=cfg.word)
        self.Pnl = cupy.empty((B, lda), dtype=S.dtype)
        self.p1 = fw.get_launcher(cfg.p1, cfg.p1_smem)
        self.pack = fw.get_kernel(cfg.pack, fw.FW_FILE)
        self.mp = fw.get_launcher(cfg.mp, cfg.mp_smem)
        self.common = (np.uint64(self.base), np.int64(lda), _NULL, np.int64(0), _NULL,
                       np.int64(0), np.int32(n))
        self.ntj = -(-self.nw // cfg.BNW)
        self.owner = np.searchsorted(np.array([lo for lo, _ in bounds]),
                                     np.arange(self.nblk) * B, side="right") - 1
        self.me = exchange.rank

    def release(self) -> None:
        self.At = self.Rw = self.Pnl = None

    def pack_rows(self, k0, lo, hi, snapshot):
        """At (column panel K = [k0, k0 + B)) for rows [lo, hi); the snapshot of rows K
        into Rw too when ``snapshot``."""
        B, nw = self.B, self.nw
        count = -(-(hi - lo) // B) * B          # rows transposed, padded (clamped)
        grid = (count // 32) * (B // 32) + (-(-B * nw // (4 * fw.PACK_THREADS)) if snapshot
                                            else 0)
        self.pack((grid,), (fw.PACK_THREADS,), self.common + (
            np.int32(lo), np.int32(hi), np.int32(k0), np.int32(B), np.int32(count),
            self.at_v, np.int64(self.Mpad), fw.device_ptr(self.Rw), np.int64(self.rwp),
            _NULL, np.int64(0), _NULL, _NULL))

    def product(self, mode, k0, kp, lo=None, hi=None):
        """fw_mp_* mode 3, 4 or 5 of pivot block K = [k0, k0 + B) on rows [lo, hi)
        (default: this rank's); ``kp`` the device pointer of rows K (pitch lda)."""
        cfg, B = self.cfg, self.B
        lo = self.r0 if lo is None else lo
        hi = self.r1 if hi is None else hi
        if mode == 4:
            grid = ((B // cfg.BM) * self.ntj,)
        elif mode == 5:
            grid = (-(-(hi - lo) // cfg.BM) * (B // (cfg.BNW * cfg.epw)),)
        else:
            grid = (self.ntj, -(-(hi - lo) // cfg.BM))
        self.mp(grid, (fw.MP_THREADS,), self.common + (
            np.int32(k0), self.at_v, np.int64(self.Mpad), fw.device_ptr(self.Rw),
            np.int64(self.rwp), _NULL, np.int64(0), _NULL, _NULL, np.int32(lo),
            np.int32(hi), np.uint64(kp), np.int64(self.ldw), np.int32(mode)),
            shared_mem=cfg.mp_smem)

    def close_and_send(self, kb):
        """On the owner of pivot block kb, once its rows are final for every earlier
        block: close the diagonal tile and the row panel, and broadcast the rows."""
        cfg, S = self.cfg, self.S
        k0 = kb * self.B
        kc = min(self.B, self.n - k0)
        if fw.POISON_SCRATCH:
            self.Rw.fill(fw.poison_word(cfg.word))
        self.p1((1,), (cfg.p1_threads,), self.common + (np.int32(k0),),
                shared_mem=cfg.p1_smem)
        self.pack_rows(k0, k0, k0 + kc, snapshot=True)
        self.product(4, k0, 0)
        self.exchange.bcast(S[k0 - self.r0:k0 - self.r0 + kc], self.me)
        self.stats["exchanged_bytes"] += kc * self.lda * S.itemsize

    def run(self) -> dict:
        # Per pivot block: the owner has closed and sent its rows (a block ahead, see
        # below); every other rank packs its column panel and receives them; then all
        # close their column panel (mode 5) and update their rows (mode 3).  The owner
        # of the next block updates those rows first and sends them before it updates
        # the rest, so its peers never wait for its phase 3.
        if self.owner[0] == self.me:
            self.close_and_send(0)
        pending = []
        for kb in range(self.nblk):
            self.round(kb)
            ev = self.cupy.cuda.Event(disable_timing=True)
            ev.record()
            pending.append(ev)
            if len(pending) > SLAB_LOOKAHEAD:
                self.exchange.wait(pending.pop(0))
        for ev in pending:
            self.exchange.wait(ev)
        return self.stats

    def round(self, kb) -> None:
        """Pivot block kb on this rank's rows (and the next block's closing, where this
        rank owns it)."""
        S, B, n, r0, r1 = self.S, self.B, self.n, self.r0, self.r1
        k0 = kb * B
        kc = min(B, n - k0)
        root = int(self.owner[kb])
        if fw.POISON_SCRATCH:
            self.At.fill(fw.poison_word(self.cfg.word))
        self.pack_rows(k0, r0, r1, snapshot=False)
        if root == self.me:
            kp = self.base + k0 * self.lda * S.itemsize
        else:
            self.exchange.bcast(self.Pnl[:kc], root)
            self.stats["exchanged_bytes"] += kc * self.lda * S.itemsize
            kp = self.Pnl.data.ptr
        if not self.rows:
            return
        self.product(5, k0, kp)
        nxt = kb + 1
        if nxt < self.nblk and self.owner[nxt] == self.me:
            k1 = nxt * B
            k1c = min(B, n - k1)
            self.product(3, k0, kp, k1, k1 + k1c)
            self.close_and_send(nxt)
            for lo, hi in ((r0, k1), (k1 + k1c, r1)):
                if hi > lo:
                    self.product(3, k0, kp, lo, hi)
        else:
            self.product(3, k0, kp)


def floyd_warshall_rows(n: int, r0: int, r1: int, indptr, indices, weights, dtype,
                        exchange, bounds, *, methods, wmax: float, nonneg: bool,
                        name: str = "graph"):
    """Rows ``r0:r1`` of an ``n``-vertex graph's distance matrix, by
    :func:`floyd_warshall_slab` across the ranks of ``exchange`` (each calls this with
    its own rows).

    ``indptr`` (``r1 - r0 + 1``, from 0), ``indices`` and ``weights`` (host or device)
    are the rows' out-edges.  ``methods`` is :func:`plan_methods` of the whole graph
    and ``wmax``, ``nonneg`` its largest ``|w|`` and sign: all ranks must agree.  A
    speculative integer run that fails its check on any rank is run again by all with
    the next method.  Returns ``(dist, stats)``: a (r1 - r0, n) cupy array of ``dtype``
    (inf = no path) and ``method``, ``attempts``, ``rounds``, ``updates``,
    ``exchanged_bytes`` and host seconds (``build_s``, ``rounds_s``, ``check_s``).
    Raises :class:`UnsupportedError` on every rank when any slab's diagonal went
    negative (a cycle made negative by rounding: the pipeline looks for real negative
    cycles before it starts).
    """
    cupy = fw.cupy_module()
    t0 = time.perf_counter()
    dt = fw.as_dtype(dtype)
    rows = r1 - r0
    ip = cupy.asarray(indptr, dtype=cupy.int64)
    src = cupy.searchsorted(ip[1:], cupy.arange(len(indices)), side="right")
    dst = cupy.asarray(indices)
    w = cupy.asarray(weights, dtype=cupy.float64)
    local = cupy.arange(rows)
    attempts = []
    times = {"build_s": 0.0, "rounds_s": 0.0}
    for method, exact in methods:
        attempts.append(method)
        if method in ("int32-dpx", "int16x2-dpx"):
            itype, inf, tag = ((np.int32, fw.INF_I32, "i32") if method == "int32-dpx"
                               else (np.int16, fw.INF_I16, "i16"))
            S = cupy.full((rows, n + (n % 2 if itype == np.int16 else 0)), inf, itype)
            S[src, dst] = cupy.rint(w).astype(itype)
        else:
            S = cupy.full((rows, n), np.inf, dtype=dt)
            S[src, dst] = w.astype(dt)
        S[local, local + r0] = cupy.minimum(S[local, local + r0], 0)
        ev = cupy.cuda.Event()
        ev.record()
        exchange.wait(ev)
        times["build_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        stats = floyd_warshall_slab(S, r0, n, method, exchange, bounds, nonneg=nonneg)
        times["rounds_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        view = S[:, :n]
        if method in ("int32-dpx", "int16x2-dpx"):
            bad = 0 if exact else fw.count_range(view, tag, int(inf - wmax), inf)
            if exchange.allreduce_sum(np.array([bad], dtype=np.int64))[0]:
                del S, view
                continue        # a distance may have reached the sentinel somewhere
            view = fw.to_float(view, tag, dt, inf // 2 if exact else inf - 1)
        break
    del S, src, dst, w
    negative = int(bool((view[local, local + r0] < 0).any())) if rows else 0
    if exchange.allreduce_sum(np.array([negative], dtype=np.int64))[0]:
        raise UnsupportedError(
            f"with its weights rounded to {dt}, graph {name!r} has a negative "
            "cycle that its float64 weights do not have; use dtype float64")
    times["check_s"] = time.perf_counter() - t0
    return view, {**stats, "attempts": attempts, **times}


def plan_methods(dtype, weights, n: int) -> list[tuple[str, bool]]:
    """The methods :func:`floyd_warshall_rows` tries, in order, for a graph of ``n``
    vertices and these ``weights`` (host array; no device needed), each with whether
    its result is exact a priori (else checked)."""
    return fw.fw_plan(dtype, weights, n)
