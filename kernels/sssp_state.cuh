// === shared state helpers of kernels/bellman_ford.cu and kernels/dijkstra.cu ======
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

__device__ __forceinline__ u32 to_ordered(float d) { return f32_to_ordered(d); }
__device__ __forceinline__ u64 to_ordered(double d) { return f64_to_ordered(d); }
__device__ __forceinline__ float from_ordered(u32 o) { return ordered_to_f32(o); }
__device__ __forceinline__ double from_ordered(u64 o) { return ordered_to_f64(o); }
__device__ __forceinline__ float add_up(float a, float b) { return __fadd_ru(a, b) + 0.0f; }
__device__ __forceinline__ double add_up(double a, double b) { return __dadd_ru(a, b) + 0.0; }
__device__ __forceinline__ float add_down(float a, float b) { return __fadd_rd(a, b) + 0.0f; }
__device__ __forceinline__ double add_down(double a, double b) { return __dadd_rd(a, b) + 0.0; }

// A word that is the ordered distance itself (modes 0, 2 and 3: no predecessor in the
// word), updated by one atomicMin.  INF is the ordered +inf; the ordered 0.0 is the
// sign bit alone.
template <typename W, typename D, W INF> struct OrderedWord {
    typedef W word_t;
    typedef W ord_t;
    typedef D dist_t;
    static __device__ __forceinline__ word_t inf() { return INF; }
    static __device__ __forceinline__ word_t zero() { return (W)1 << (8 * sizeof(W) - 1); }
    static __device__ __forceinline__ ord_t ord(word_t w) { return w; }
    static __device__ __forceinline__ u32 pred(word_t) { return MGAPSP_NONE; }
    static __device__ __forceinline__ word_t make(ord_t o, u32) { return o; }
    static __device__ __forceinline__ ord_t to_ord(dist_t d) { return to_ordered(d); }
    static __device__ __forceinline__ dist_t dist(word_t w) { return from_ordered(w); }
    static __device__ __forceinline__ dist_t add_ru(dist_t a, dist_t b) { return add_up(a, b); }
    static __device__ __forceinline__ dist_t add_rd(dist_t a, dist_t b) { return add_down(a, b); }
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

// float32, no predecessor: one u32
template <> struct Word<0> : OrderedWord<u32, float, 0xff800000u> {};

// float32 with predecessors: the ordered distance and the predecessor in one u64,
// updated by CAS
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
    static __device__ __forceinline__ dist_t add_ru(dist_t a, dist_t b) { return add_up(a, b); }
    static __device__ __forceinline__ dist_t add_rd(dist_t a, dist_t b) { return add_down(a, b); }
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

// float64, no predecessor: one u64
template <> struct Word<2> : OrderedWord<u64, double, 0xfff0000000000000ull> {};

// float64 with predecessors: the distance word as mode 2, the predecessor in a
// versioned word of its own (set_pred)
template <> struct Word<3> : OrderedWord<u64, double, 0xfff0000000000000ull> {
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
