// Crauser-style parallel Dijkstra, batched, for mgapsp (non-negative weights).
//
// Self-contained CUDA C++ (no #include; NVRTC and nvcc), launched only from
// mgapsp/_kernels/sssp.py.  The state layout is Bellman-Ford's (kernels/bellman_ford.cu
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

// === shared state helpers: the same text is in kernels/dijkstra.cu ===================
__device__ __forceinline__ u32 f32_to_ordered(float f)
{
    u32 b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float ordered_to_f32(u32 o)
{
    u32 b = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
    return __uint_as_float(b);
}

__device__ __forceinline__ u64 f64_to_ordered(double f)
{
    u64 b = (u64)__double_as_longlong(f);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

__device__ __forceinline__ double ordered_to_f64(u64 o)
{
    u64 b = (o >> 63) ? (o & 0x7fffffffffffffffull) : ~o;
    return __longlong_as_double((i64)b);
}

// Record pred u for the distance `mine` just stored at *dist (mode 3).  Only the
// writer whose distance is still the stored one may succeed: it re-reads the distance
// after reading the pred word and installs its pred with a CAS on that word (the
// version in the high half rules out ABA).  If a later writer replaced the distance,
// it installs its own pred after this one, so the last pred written belongs to the
// final distance.
__device__ __forceinline__ void set_pred(u64* pred, const u64* dist, u64 mine, u32 u)
{
    while (true) {
        u64 op = __ldcg(pred);
        __threadfence();
        if (__ldcg(dist) != mine) return;  // superseded
        u64 np = ((((op >> 32) + 1ull) & 0xffffffffull) << 32) | (u64)u;
        if (atomicCAS(pred, op, np) == op) return;
    }
}

template <int MODE> struct Word;

template <> struct Word<0> {
    typedef u32 word_t;
    typedef u32 ord_t;
    typedef float dist_t;
    static __device__ __forceinline__ word_t inf() { return 0xff800000u; }
    static __device__ __forceinline__ word_t zero() { return 0x80000000u; }
    static __device__ __forceinline__ ord_t ord(word_t w) { return w; }
    static __device__ __forceinline__ u32 pred(word_t) { return MGAPSP_NONE; }
    static __device__ __forceinline__ word_t make(ord_t o, u32) { return o; }
    static __device__ __forceinline__ ord_t to_ord(dist_t d) { return f32_to_ordered(d); }
    static __device__ __forceinline__ dist_t dist(word_t w) { return ordered_to_f32(w); }
    static __device__ __forceinline__ dist_t add_ru(dist_t a, dist_t b) { return __fadd_ru(a, b) + 0.0f; }
    static __device__ __forceinline__ dist_t add_rd(dist_t a, dist_t b) { return __fadd_rd(a, b) + 0.0f; }
    static __device__ __forceinline__ bool update(word_t* st, u64*, i64 vi, ord_t o, u32, bool direct,
                                                  bool preread)
    {
        if (preread || direct) {
            word_t old = __ldcg(st + vi);
            if (o >= old) return false;
            if (direct) { st[vi] = o; return true; }
        }
        return atomicMin(st + vi, o) > o;
    }
};

template <> struct Word<1> {
    typedef u64 word_t;
    typedef u32 ord_t;
    typedef float dist_t;
    static __device__ __forceinline__ word_t inf() { return (0xff800000ull << 32) | MGAPSP_NONE; }
    static __device__ __forceinline__ word_t zero() { return (0x80000000ull << 32) | MGAPSP_NONE; }
    static __device__ __forceinline__ ord_t ord(word_t w) { return (u32)(w >> 32); }
    static __device__ __forceinline__ u32 pred(word_t w) { return (u32)(w & 0xffffffffull); }
    static __device__ __forceinline__ word_t make(ord_t o, u32 p) { return ((u64)o << 32) | (u64)p; }
    static __device__ __forceinline__ ord_t to_ord(dist_t d) { return f32_to_ordered(d); }
    static __device__ __forceinline__ dist_t dist(word_t w) { return ordered_to_f32((u32)(w >> 32)); }
    static __device__ __forceinline__ dist_t add_ru(dist_t a, dist_t b) { return __fadd_ru(a, b) + 0.0f; }
    static __device__ __forceinline__ dist_t add_rd(dist_t a, dist_t b) { return __fadd_rd(a, b) + 0.0f; }
    static __device__ __forceinline__ bool update(word_t* st, u64*, i64 vi, ord_t o, u32 u, bool direct,
                                                  bool)
    {
        word_t old = __ldcg(st + vi);
        word_t nk = make(o, u);
        if (direct) {
            if (ord(old) <= o) return false;
            st[vi] = nk;
            return true;
        }
        while (ord(old) > o) {
            word_t prev = atomicCAS(st + vi, old, nk);
            if (prev == old) return true;
            old = prev;
        }
        return false;
    }
};

template <> struct Word<2> {
    typedef u64 word_t;
    typedef u64 ord_t;
    typedef double dist_t;
    static __device__ __forceinline__ word_t inf() { return 0xfff0000000000000ull; }
    static __device__ __forceinline__ word_t zero() { return 0x8000000000000000ull; }
    static __device__ __forceinline__ ord_t ord(word_t w) { return w; }
    static __device__ __forceinline__ u32 pred(word_t) { return MGAPSP_NONE; }
    static __device__ __forceinline__ word_t make(ord_t o, u32) { return o; }
    static __device__ __forceinline__ ord_t to_ord(dist_t d) { return f64_to_ordered(d); }
    static __device__ __forceinline__ dist_t dist(word_t w) { return ordered_to_f64(w); }
    static __device__ __forceinline__ dist_t add_ru(dist_t a, dist_t b) { return __dadd_ru(a, b) + 0.0; }
    static __device__ __forceinline__ dist_t add_rd(dist_t a, dist_t b) { return __dadd_rd(a, b) + 0.0; }
    static __device__ __forceinline__ bool update(word_t* st, u64*, i64 vi, ord_t o, u32, bool direct,
                                                  bool preread)
    {
        if (preread || direct) {
            word_t old = __ldcg(st + vi);
            if (o >= old) return false;
            if (direct) { st[vi] = o; return true; }
        }
        return atomicMin(st + vi, o) > o;
    }
};

template <> struct Word<3> {
    typedef u64 word_t;
    typedef u64 ord_t;
    typedef double dist_t;
    static __device__ __forceinline__ word_t inf() { return 0xfff0000000000000ull; }
    static __device__ __forceinline__ word_t zero() { return 0x8000000000000000ull; }
    static __device__ __forceinline__ ord_t ord(word_t w) { return w; }
    static __device__ __forceinline__ u32 pred(word_t) { return MGAPSP_NONE; }
    static __device__ __forceinline__ word_t make(ord_t o, u32) { return o; }
    static __device__ __forceinline__ ord_t to_ord(dist_t d) { return f64_to_ordered(d); }
    static __device__ __forceinline__ dist_t dist(word_t w) { return ordered_to_f64(w); }
    static __device__ __forceinline__ dist_t add_ru(dist_t a, dist_t b) { return __dadd_ru(a, b) + 0.0; }
    static __device__ __forceinline__ dist_t add_rd(dist_t a, dist_t b) { return __dadd_rd(a, b) + 0.0; }
    static __device__ __forceinline__ bool update(word_t* st, u64* pw, i64 vi, ord_t o, u32 u, bool direct,
                                                  bool preread)
    {
        if (preread || direct) {
            word_t old = __ldcg(st + vi);
            if (o >= old) return false;
        }
        if (direct) {
            st[vi] = o;
            pw[vi] = (((__ldcg(pw + vi) >> 32) + 1ull) << 32) | (u64)u;
            return true;
        }
        if (atomicMin(st + vi, o) <= o) return false;
        set_pred(pw + vi, st + vi, o, u);
        return true;
    }
};

// Sum of a per-thread count over the block, added to *total by one thread.  Every
// thread of the block must call it.
__device__ __forceinline__ void block_count(u64 x, u64* total)
{
    __shared__ u64 part[32];
    for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(MGAPSP_ALL, x, off);
    int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) part[w] = x;
    __syncthreads();
    if (threadIdx.x < 32) {
        int nw = (blockDim.x + 31) >> 5;
        u64 y = (int)threadIdx.x < nw ? part[threadIdx.x] : 0ull;
        for (int off = 16; off > 0; off >>= 1) y += __shfl_down_sync(MGAPSP_ALL, y, off);
        if (threadIdx.x == 0 && y != 0ull) atomicAdd(total, y);
    }
    __syncthreads();
}

// init: every state word to "unreachable", (sources[s], s) to 0 for s < B (every
// vertex when seed_all, the Johnson virtual source).  Seeds set their lane bit in
// masks[v * mv + c * mc] (BF: mv = C, mc = 1; Crauser: mv = 1, mc = n); masks must be
// zeroed by the caller (or be a 1-element dummy with set_masks = 0).
template <int MODE>
__device__ __forceinline__ void init_state(
    typename Word<MODE>::word_t* st, u64* pw, i64 n, i64 Bp, i64 B, int G,
    const i64* __restrict__ sources, int seed_all, u32* masks, i64 mv, i64 mc, int set_masks)
{
    typedef Word<MODE> W;
    i64 total = n * Bp;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (i64)gridDim.x * blockDim.x) {
        i64 v = t / Bp;
        i64 s = t - v * Bp;
        bool seed = s < B && (seed_all || sources[s] == v);
        st[t] = seed ? W::zero() : W::inf();
        if (MODE == 3) pw[t] = (u64)MGAPSP_NONE;
        if (seed && set_masks) atomicOr(masks + v * mv + (s / G) * mc, 1u << (u32)(s % G));
    }
}

// pull: finish the sinks (out-degree 0, never relaxed into during the rounds):
//     d(v, s) = min(d0(v, s), min over in-edges (u, v): d(u, s) + w)
// sinks[j] has in-edges rptr[j] .. rptr[j + 1] (sources rsrc, weights rw).  Items
// (j, c); lanes = sources; K = 32 / G items per warp.  No atomics: one writer each.
template <int MODE>
__device__ __forceinline__ void pull_sinks(
    typename Word<MODE>::word_t* st, u64* pw, i64 Bp, i64 B, int G, i64 C,
    const int* __restrict__ sinks, i64 nsinks, const i64* __restrict__ rptr,
    const int* __restrict__ rsrc, const typename Word<MODE>::dist_t* __restrict__ rw)
{
    typedef Word<MODE> W;
    typedef typename W::word_t word_t;
    typedef typename W::ord_t ord_t;
    const int lane = threadIdx.x & 31;
    const int K = 32 / G;
    const int k = lane / G;
    const int g = lane - k * G;
    const i64 items = nsinks * C;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
    for (i64 base = warp * K; base < items; base += nwarps * K) {
        i64 it = base + k;
        if (k >= K || it >= items) continue;
        i64 j = it / C;
        i64 c = it - j * C;
        i64 s = c * G + g;
        if (s >= B) continue;
        i64 v = sinks[j];
        i64 vi = v * Bp + s;
        word_t cur = st[vi];
        ord_t best = W::ord(cur);
        u32 bp = MGAPSP_NONE;
        bool better = false;
        for (i64 e = rptr[j]; e < rptr[j + 1]; ++e) {
            i64 u = rsrc[e];
            word_t wu = __ldcg(st + u * Bp + s);
            if (W::ord(wu) == W::ord(W::inf())) continue;
            ord_t o = W::to_ord(W::add_ru(W::dist(wu), rw[e]));
            if (o < best) { best = o; bp = (u32)u; better = true; }
        }
        if (better) {
            st[vi] = W::make(best, bp);
            if (MODE == 3) pw[vi] = (u64)bp;
        }
    }
}

// unpack: state [v * Bp + s] -> out[row_of_col[s] * n + v] (row-major, one row per
// source), through a 32 x 32 tile in shared memory so that reads and writes are both
// coalesced.  Every output element in range is written.  undo (Johnson): out =
// d - h[sources[s]] + h[v] in float64, then rounded to the output type.  want_pred
// (mode 1): out_pred = the predecessor in the key, -1 for none.  Block (32, 8); grid
// (ceil(n / 32), ceil(B / 32)).
template <int MODE>
__device__ __forceinline__ void unpack_state(
    const typename Word<MODE>::word_t* __restrict__ st, i64 n, i64 Bp, i64 B,
    const int* __restrict__ row_of_col, typename Word<MODE>::dist_t* __restrict__ out,
    int* __restrict__ out_pred, int want_pred, const double* __restrict__ h,
    const i64* __restrict__ sources, int undo)
{
    typedef Word<MODE> W;
    typedef typename W::word_t word_t;
    typedef typename W::dist_t dist_t;
    __shared__ word_t tile[MGAPSP_TILE][MGAPSP_TILE + 1];
    i64 v0 = (i64)blockIdx.x * MGAPSP_TILE;
    i64 s0 = (i64)blockIdx.y * MGAPSP_TILE;
    for (int j = 0; j < MGAPSP_TILE; j += MGAPSP_TILE_ROWS) {
        i64 v = v0 + threadIdx.y + j;
        i64 s = s0 + threadIdx.x;
        if (v < n && s < B) tile[threadIdx.y + j][threadIdx.x] = st[v * Bp + s];
    }
    __syncthreads();
    for (int j = 0; j < MGAPSP_TILE; j += MGAPSP_TILE_ROWS) {
        i64 s = s0 + threadIdx.y + j;
        i64 v = v0 + threadIdx.x;
        if (v < n && s < B) {
            word_t wd = tile[threadIdx.x][threadIdx.y + j];
            dist_t d = W::dist(wd);
            if (undo) d = (dist_t)((double)d - h[sources[s]] + h[v]);
            i64 row = row_of_col[s];
            out[row * n + v] = d;
            if (want_pred) out_pred[row * n + v] = (int)W::pred(wd);
        }
    }
}
// === end of the shared state helpers ================================================

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

extern "C" __global__ void cr_threshold_m0(CR_THRESHOLD_PARAMS(u32, u32, float))
{
    threshold<0>(CR_THRESHOLD_ARGS);
}

extern "C" __global__ void cr_settle_m0(CR_SETTLE_PARAMS(u32, u32, float))
{
    settle<0>(CR_SETTLE_ARGS);
}

extern "C" __global__ void cr_threshold_m1(CR_THRESHOLD_PARAMS(u64, u32, float))
{
    threshold<1>(CR_THRESHOLD_ARGS);
}

extern "C" __global__ void cr_settle_m1(CR_SETTLE_PARAMS(u64, u32, float))
{
    settle<1>(CR_SETTLE_ARGS);
}

extern "C" __global__ void cr_threshold_m2(CR_THRESHOLD_PARAMS(u64, u64, double))
{
    threshold<2>(CR_THRESHOLD_ARGS);
}

extern "C" __global__ void cr_settle_m2(CR_SETTLE_PARAMS(u64, u64, double))
{
    settle<2>(CR_SETTLE_ARGS);
}
