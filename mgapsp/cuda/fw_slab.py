"""Floyd-Warshall across devices: each rank owns a slab of rows of the matrix.

Per pivot block the rank owning those rows closes them and broadcasts them through the
job's exchange (:mod:`mgapsp.jobs.fw_slabs`); every rank then updates its own rows
against them with the kernels of :mod:`.fw`.  Slab boundaries are multiples of
:data:`mgapsp.backends.SLAB_ALIGN` (every method's pivot block divides it).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import UnsupportedError
from . import fw

#: slab boundaries are multiples of this (every method's pivot block divides it)
SLAB_ALIGN = 256

#: rounds a rank may run ahead of the device before it waits (and looks for aborts)
SLAB_LOOKAHEAD = 4


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
    cupy = fw._cupy()
    cfg = fw._FP32_NONNEG if method == "fp32" and nonneg else fw._CONFIGS[(method, False)]
    rows = int(S.shape[0])
    r1 = r0 + rows
    if S.dtype.name != cfg.dtype or not S.flags.c_contiguous or S.shape[1] < n:
        raise ValueError(f"slab must be a C-contiguous {cfg.dtype} buffer of at least {n} "
                         f"columns; got {S.dtype} {S.shape}")
    lda = int(S.shape[1])
    B, epw, wb = cfg.B, cfg.epw, cfg.word_bytes
    if lda % epw or SLAB_ALIGN % B or any(lo % SLAB_ALIGN for lo, _ in bounds):
        raise ValueError(f"slab bounds {bounds} or pitch {lda} do not fit pivot block {B}")
    nblk = -(-n // B)
    Mpad = -(-max(rows, 1) // B) * B
    nw = -(-n // epw)
    rwp = -(-nw // 4) * 4
    ldw = lda // epw
    stats = {"method": method, "n": n, "rows": rows, "rounds": nblk,
             "updates": rows * n * n, "exchanged_bytes": 0}
    null = np.uint64(0)
    # "virtual" pointers: row i (global) of the matrix and of the transposed column
    # panel, valid for the rows this rank holds
    base = S.data.ptr - r0 * lda * S.itemsize
    At = cupy.empty((B, Mpad), dtype=cfg.word)
    at_v = np.uint64(At.data.ptr - r0 * wb)
    Rw = cupy.empty((B, rwp), dtype=cfg.word)
    Pnl = cupy.empty((B, lda), dtype=S.dtype)
    p1 = fw._launcher(cfg.p1, cfg.p1_smem)
    pack = fw._kernel(cfg.pack, fw.FW_FILE)
    mp = fw._launcher(cfg.mp, cfg.mp_smem)
    common = (np.uint64(base), np.int64(lda), null, np.int64(0), null, np.int64(0),
              np.int32(n))
    ntj = -(-nw // cfg.BNW)
    owner = np.searchsorted(np.array([lo for lo, _ in bounds]), np.arange(nblk) * B,
                            side="right") - 1
    me = exchange.rank

    def pack_rows(k0, lo, hi, snapshot):
        """At (column panel K = [k0, k0 + B)) for rows [lo, hi); the snapshot of rows K
        into Rw too when ``snapshot``."""
        count = -(-(hi - lo) // B) * B          # rows transposed, padded (clamped)
        grid = (count // 32) * (B // 32) + (-(-B * nw // (4 * fw._PACK_THREADS)) if snapshot
                                            else 0)
        pack((grid,), (fw._PACK_THREADS,), common + (
            np.int32(lo), np.int32(hi), np.int32(k0), np.int32(B), np.int32(count), at_v,
            np.int64(Mpad), fw._ptr(Rw), np.int64(rwp), null, np.int64(0), null, null))

    def product(mode, k0, kp, lo=r0, hi=r1):
        """fw_mp_* mode 3, 4 or 5 of pivot block K = [k0, k0 + B) on rows [lo, hi);
        ``kp`` the device pointer of rows K (pitch lda)."""
        if mode == 4:
            grid = ((B // cfg.BM) * ntj,)
        elif mode == 5:
            grid = (-(-(hi - lo) // cfg.BM) * (B // (cfg.BNW * epw)),)
        else:
            grid = (ntj, -(-(hi - lo) // cfg.BM))
        mp(grid, (fw._MP_THREADS,), common + (np.int32(k0), at_v, np.int64(Mpad), fw._ptr(Rw),
                                           np.int64(rwp), null, np.int64(0), null, null,
                                           np.int32(lo), np.int32(hi), np.uint64(kp),
                                           np.int64(ldw), np.int32(mode)),
           shared_mem=cfg.mp_smem)

    def close_and_send(kb):
        """On the owner of pivot block kb, once its rows are final for every earlier
        block: close the diagonal tile and the row panel, and broadcast the rows."""
        k0 = kb * B
        kc = min(B, n - k0)
        if fw._POISON_SCRATCH:
            Rw.fill(fw._poison(cfg.word))
        p1((1,), (cfg.p1_threads,), common + (np.int32(k0),), shared_mem=cfg.p1_smem)
        pack_rows(k0, k0, k0 + kc, snapshot=True)
        product(4, k0, 0)
        exchange.bcast(S[k0 - r0:k0 - r0 + kc], me)
        stats["exchanged_bytes"] += kc * lda * S.itemsize

    # Per pivot block: the owner has closed and sent its rows (a block ahead, see
    # below); every other rank packs its column panel and receives them; then all
    # close their column panel (mode 5) and update their rows (mode 3).  The owner of
    # the next block updates those rows first and sends them before it updates the
    # rest, so its peers never wait for its phase 3.
    if owner[0] == me:
        close_and_send(0)
    pending = []
    for kb in range(nblk):
        k0 = kb * B
        kc = min(B, n - k0)
        root = int(owner[kb])
        if fw._POISON_SCRATCH:
            At.fill(fw._poison(cfg.word))
        pack_rows(k0, r0, r1, snapshot=False)
        if root == me:
            kp = base + k0 * lda * S.itemsize
        else:
            exchange.bcast(Pnl[:kc], root)
            stats["exchanged_bytes"] += kc * lda * S.itemsize
            kp = Pnl.data.ptr
        if rows:
            product(5, k0, kp)
            nxt = kb + 1
            if nxt < nblk and owner[nxt] == me:
                k1 = nxt * B
                k1c = min(B, n - k1)
                product(3, k0, kp, k1, k1 + k1c)
                close_and_send(nxt)
                for lo, hi in ((r0, k1), (k1 + k1c, r1)):
                    if hi > lo:
                        product(3, k0, kp, lo, hi)
            else:
                product(3, k0, kp)
        ev = cupy.cuda.Event(disable_timing=True)
        ev.record()
        pending.append(ev)
        if len(pending) > SLAB_LOOKAHEAD:
            exchange.wait(pending.pop(0))
    for ev in pending:
        exchange.wait(ev)
    del At, Rw, Pnl
    return stats


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
    cupy = fw._cupy()
    t0 = time.perf_counter()
    dt = fw._as_dtype(dtype)
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
            bad = 0 if exact else fw._count_range(view, tag, int(inf - wmax), inf)
            if exchange.allreduce_sum(np.array([bad], dtype=np.int64))[0]:
                del S, view
                continue        # a distance may have reached the sentinel somewhere
            view = fw._to_float(view, tag, dt, inf // 2 if exact else inf - 1)
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
    return fw._plan(dtype, weights, n)
