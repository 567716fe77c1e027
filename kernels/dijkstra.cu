// Crauser-style parallel Dijkstra, batched, for mgapsp (non-negative weights).
//
// CUDA C++ with no system headers (NVRTC and nvcc; kernels/sssp_state.cuh, shared with
// bellman_ford.cu, is inlined by the loader for NVRTC), launched only from
// mgapsp/cuda/sssp.py.  The state layout is Bellman-Ford's (kernels/bellman_ford.cu
// describes it): per (vertex, source) a word at [v * Bp + s], chunks of G sources;
// initialisation, the sinks' pull and the unpack are bellman_ford.cu's kernels.
//
// Phases (Crauser, Mehlhorn, Meyer, Sanders 1998, "A parallelization of Dijkstra's
// shortest path algorithm"; on GPUs: Ortega-Arranz et al.).  Per source s, the fringe
// F_s = reached, unsettled vertices.  Each phase
//   cr_threshold  T_s = min over u in F_s of d(u, s) + mo(u)            ("general")
//                 T_s = min over u in F_s of d(u, s) + min edge weight  ("economic")
//   cr_settle     every u in F_s with d(u, s) <= T_s is final: it leaves F_s and
//                 relaxes its out-edges (improved targets join F_s).
// mo(u) is the least weight among u's RELAXED out-edges (rows as classified for
// Bellman-Ford: no non-negative self-loops, no edges into sinks, which are finished by
// the pull): a path that leaves an unsettled u continues over one of those, so no
// vertex with d <= T can still improve.  An unsettled vertex whose distance drops to
// <= T_s during a phase is final as well (same argument), so settling it in the same
// phase, as happens when the scan reaches it later, is safe.  T_s >= min of d over F_s
// (mo >= 0, rounded down from an exact sum >= d), so every phase settles at least the
// vertices at the minimum distance, zero-weight edges or not.
//
// The fringe is a lane mask per item, CHUNK-MAJOR: fmask[c * n + v], bit g for source
// c * G + g, so that a block, which owns one chunk c and a tile of vertices, reads its
// masks coalesced; per-source minima are reduced in the block (lanes = sources) and
// leave it with one atomicMin per source.  Thresholds T are ordered words (see the
// helpers), two arrays used by phase parity; cr_settle of phase r resets the other.
// Counters: alive[r % 3] (phase r saw a fringe), [3] phases, [4] edges relaxed.

#define MGAPSP_NONE 0xffffffffu
#define MGAPSP_TILE 32
#define MGAPSP_TILE_ROWS 8
#define MGAPSP_ALL 0xffffffffu
#define CR_ROUNDS 3
#define CR_RELAXED 4
#define CR_WARPS 8

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

#include "sssp_state.cuh"

// ---------------------------------------------------------------------------
// mo(u): least weight of the relaxed out-edges of u (+inf without any).
// ---------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void row_min(const i64* __restrict__ indptr, const i64* __restrict__ rend,
                                        const T* __restrict__ w, i64 n, T* __restrict__ mo, T inf)
{
    for (i64 u = (i64)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += (i64)gridDim.x * blockDim.x) {
        T best = inf;
        for (i64 e = indptr[u]; e < rend[u]; ++e) best = w[e] < best ? w[e] : best;
        mo[u] = best;
    }
}

extern "C" __global__ void cr_row_min_f32(const i64* __restrict__ indptr, const i64* __restrict__ rend,
                                          const float* __restrict__ w, i64 n, float* __restrict__ mo)
{
    row_min<float>(indptr, rend, w, n, mo, __int_as_float(0x7f800000));
}

extern "C" __global__ void cr_row_min_f64(const i64* __restrict__ indptr, const i64* __restrict__ rend,
                                          const double* __restrict__ w, i64 n, double* __restrict__ mo)
{
    row_min<double>(indptr, rend, w, n, mo, __longlong_as_double(0x7ff0000000000000LL));
}

// ---------------------------------------------------------------------------
// Phase r, step 1: per-source thresholds into T (all ones = no bound; reset by the
// previous cr_settle or the host).  Grid (C, tiles), block CR_WARPS warps; lane = source.
// ---------------------------------------------------------------------------
template <int MODE>
__device__ __forceinline__ void threshold(
    const u32* __restrict__ fmask, i64 n, i64 Bp, i64 B, int G,
    const typename Word<MODE>::word_t* st, const typename Word<MODE>::dist_t* __restrict__ mo,
    typename Word<MODE>::dist_t minw, int econ, typename Word<MODE>::ord_t* T, u64* ctr,
    i64 r, i64 tile)
{
    typedef Word<MODE> W;
    typedef typename W::word_t word_t;
    typedef typename W::ord_t ord_t;
    __shared__ ord_t red[CR_WARPS][32];
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const i64 c = blockIdx.x;
    const i64 v_begin = (i64)blockIdx.y * tile;
    const i64 v_end = min(n, v_begin + tile);
    const i64 s = c * G + lane;
    const bool lane_ok = lane < G && s < B;
    const u32* fm = fmask + c * n;
    ord_t best = (ord_t)~(ord_t)0;
    bool any = false;
    for (i64 vb = v_begin + (i64)w * 32; vb < v_end; vb += (i64)CR_WARPS * 32) {
        u32 mine = vb + lane < v_end ? fm[vb + lane] : 0u;
        u32 bal = __ballot_sync(MGAPSP_ALL, mine != 0u);
        any = any || bal != 0u;
        while (bal != 0u) {
            int j = __ffs(bal) - 1;
            bal &= bal - 1u;
            u32 m = __shfl_sync(MGAPSP_ALL, mine, j);
            i64 v = vb + j;
            if (lane_ok && ((m >> lane) & 1u)) {
                word_t wd = __ldcg(st + v * Bp + s);
                ord_t cand = W::to_ord(W::add_rd(W::dist(wd), econ ? minw : mo[v]));
                best = cand < best ? cand : best;
            }
        }
    }
    red[w][lane] = best;
    __syncthreads();
    if (w == 0) {
        for (int k = 1; k < CR_WARPS; ++k) best = red[k][lane] < best ? red[k][lane] : best;
        if (lane_ok && best != (ord_t)~(ord_t)0) atomicMin(T + s, best);
    }
    if (any && lane == 0) {
        ctr[r % 3] = 1ull;
        ctr[CR_ROUNDS] = (u64)(r + 1);   // same value from every writer
    }
}

// ---------------------------------------------------------------------------
// Phase r, step 2: settle every fringe lane with d <= T and relax its out-edges;
// improved targets join the fringe (one atomicOr per warp and target).  Also resets
// T_next (phase r + 1's thresholds) and alive[(r + 1) % 3].
// ---------------------------------------------------------------------------
template <int MODE>
__device__ __forceinline__ void settle(
    u32* fmask, i64 n, i64 Bp, i64 B, int G, typename Word<MODE>::word_t* st,
    const typename Word<MODE>::ord_t* __restrict__ T, typename Word<MODE>::ord_t* T_next,
    u64* ctr, i64 r, i64 tile, const i64* __restrict__ indptr, const i64* __restrict__ rend,
    const int* __restrict__ idx, const typename Word<MODE>::dist_t* __restrict__ wt)
{
    typedef Word<MODE> W;
    typedef typename W::word_t word_t;
    typedef typename W::ord_t ord_t;
    typedef typename W::dist_t dist_t;
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const i64 c = blockIdx.x;
    const i64 v_begin = (i64)blockIdx.y * tile;
    const i64 v_end = min(n, v_begin + tile);
    const i64 s = c * G + lane;
    const bool lane_ok = lane < G && s < B;
    if (blockIdx.y == 0 && w == 0 && lane < G) T_next[c * G + lane] = (ord_t)~(ord_t)0;
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) ctr[(r + 1) % 3] = 0ull;
    const ord_t Ts = lane_ok ? T[s] : (ord_t)0;
    u32* fm = fmask + c * n;
    u64 relaxed = 0;
    for (i64 vb = v_begin + (i64)w * 32; vb < v_end; vb += (i64)CR_WARPS * 32) {
        u32 mine = vb + lane < v_end ? fm[vb + lane] : 0u;
        u32 bal = __ballot_sync(MGAPSP_ALL, mine != 0u);
        while (bal != 0u) {
            int j = __ffs(bal) - 1;
            bal &= bal - 1u;
            u32 m = __shfl_sync(MGAPSP_ALL, mine, j);
            i64 v = vb + j;
            bool fr = lane_ok && ((m >> lane) & 1u);
            word_t wd = fr ? __ldcg(st + v * Bp + s) : W::inf();
            bool go = fr && W::ord(wd) <= Ts;
            u32 settled = __ballot_sync(MGAPSP_ALL, go);
            if (settled == 0u) continue;
            if (lane == 0) atomicAnd(fm + v, ~settled);
            const dist_t dv = W::dist(wd);
            const i64 beg = indptr[v];
            const i64 end = rend[v];
            if (go) relaxed += (u64)(end - beg);
            // the warp loads up to 32 edges at once, then takes them from registers
            for (i64 eb = beg; eb < end; eb += 32) {
                const int cnt = (int)(end - eb < 32 ? end - eb : 32);
                int my_t = 0;
                dist_t my_w = 0;
                if (lane < cnt) { my_t = idx[eb + lane]; my_w = wt[eb + lane]; }
                for (int j = 0; j < cnt; ++j) {
                    const int t = __shfl_sync(MGAPSP_ALL, my_t, j);
                    const dist_t we = __shfl_sync(MGAPSP_ALL, my_w, j);
                    const u32 x = (u32)t & 0x7fffffffu;
                    bool imp = false;
                    if (go) imp = W::update(st, (u64*)0, (i64)x * Bp + s,
                                            W::to_ord(W::add_ru(dv, we)), (u32)v, t < 0, true);
                    const u32 b2 = __ballot_sync(MGAPSP_ALL, imp);
                    if (b2 != 0u && lane == __ffs(b2) - 1) atomicOr(fm + x, b2);
                }
            }
        }
    }
    for (int off = 16; off > 0; off >>= 1) relaxed += __shfl_down_sync(MGAPSP_ALL, relaxed, off);
    if (lane == 0 && relaxed != 0ull) atomicAdd(ctr + CR_RELAXED, relaxed);
}

#define CR_THRESHOLD_PARAMS(WORD, ORD, DIST)                                            \
    const u32* __restrict__ fmask, i64 n, i64 Bp, i64 B, int G, const WORD* st,         \
    const DIST* __restrict__ mo, DIST minw, int econ, ORD* T, u64* ctr, i64 r, i64 tile
#define CR_THRESHOLD_ARGS fmask, n, Bp, B, G, st, mo, minw, econ, T, ctr, r, tile
#define CR_SETTLE_PARAMS(WORD, ORD, DIST)                                               \
    u32* fmask, i64 n, i64 Bp, i64 B, int G, WORD* st, const ORD* __restrict__ T,       \
    ORD* T_next, u64* ctr, i64 r, i64 tile, const i64* __restrict__ indptr,             \
    const i64* __restrict__ rend, const int* __restrict__ idx, const DIST* __restrict__ wt
#define CR_SETTLE_ARGS fmask, n, Bp, B, G, st, T, T_next, ctr, r, tile, indptr, rend, idx, wt

// The entry points of mode M (sssp_state.cuh's Word<M>), named for CuPy's lookup:
// cr_threshold_mM and cr_settle_mM.
#define CR_MODE_KERNELS(M, WORD, ORD, DIST)                                           \
    extern "C" __global__ void cr_threshold_m##M(CR_THRESHOLD_PARAMS(WORD, ORD, DIST)) \
    {                                                                                 \
        threshold<M>(CR_THRESHOLD_ARGS);                                              \
    }                                                                                 \
    extern "C" __global__ void cr_settle_m##M(CR_SETTLE_PARAMS(WORD, ORD, DIST))      \
    {                                                                                 \
        settle<M>(CR_SETTLE_ARGS);                                                    \
    }

CR_MODE_KERNELS(0, u32, u32, float)
CR_MODE_KERNELS(1, u64, u32, float)
CR_MODE_KERNELS(2, u64, u64, double)
