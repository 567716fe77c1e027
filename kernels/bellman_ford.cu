// Batched frontier Bellman-Ford and a Floyd-Warshall step, for mgapsp.
//
// Self-contained CUDA C++: no #include, so the same file compiles under NVRTC (CuPy
// RawModule, loaded by mgapsp/_kernels.py, the only place that launches these) and
// under `nvcc -arch=sm_90 -c` (tests/test_kernels_compile.py).
//
// Layout.  A batch of B sources is solved at once.  Per-(vertex, source) state lives
// at [v * B + s]: the batch is the fast dimension, so the threads of a warp handle
// consecutive sources of one vertex; they read the same CSR row (broadcast) and touch
// consecutive state words (coalesced).  B need not be a power of two.
//
// float32 path.  Each state word is a packed 64-bit key
//     (orderable(float32 bits) << 32) | pred,   pred = 0xffffffff for none,
// where orderable() maps float bits to unsigned ints in the same order as the floats
// (negative floats included).  Distance and predecessor change together in one
// 64-bit CAS, so the predecessor always belongs to the stored distance.
//
// float64 path.  Distances are doubles updated with a CAS on their bit pattern.
// Predecessors are optional ("track"); when tracked they live in a second 64-bit
// word (version << 32 | pred) that only the writer of the distance still stored may
// set (see set_pred_f64), so after a round the pair is consistent as well.
//
// Both paths replace a value only when the new distance is STRICTLY smaller, never
// on a tie, so zero-weight cycles cannot make the predecessor graph cyclic; a cycle
// in it then implies a negative cycle (the classic lemma, which also holds for the
// asynchronous reads used here: a stale d[u] is never below the current one).
//
// Rounding.  Every candidate distance d[u] + w is rounded toward +inf (__fadd_ru,
// __dadd_ru), so a computed sum is never below the exact sum of the stored numbers.
// With round-to-nearest, a zero-weight cycle whose edges are not all zero (common
// after a Johnson-style reweighting) can drift downwards by rounding and close a
// predecessor cycle although no cycle is negative; with rounding up, a predecessor
// cycle implies a cycle whose (rounded-to-dtype) weights sum to less than zero, and
// a walk around a cycle of weight >= 0 never gets cheaper, so n rounds suffice.
//
// Rounds.  The host (mgapsp/_kernels.py) keeps two pairs of flags: active[v*B+s]
// ("(v, s) improved in the last round") and vflag[v] ("some source of v improved").
// A round launches relax over frontier = nonzero(vflag_cur) times B sources; the
// kernel clears the current flags it consumes and sets the next ones, so after the
// launch the current arrays are all zero again and the host just swaps them.

#define MGAPSP_NONE 0xffffffffu
#define MGAPSP_TILE 32
#define MGAPSP_TILE_ROWS 8

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

// ---------------------------------------------------------------------------
// float32 keys
// ---------------------------------------------------------------------------
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

__device__ __forceinline__ u64 make_key(float d, u32 pred)
{
    return ((u64)f32_to_ordered(d) << 32) | (u64)pred;
}

__device__ __forceinline__ float key_dist(u64 k)
{
    return ordered_to_f32((u32)(k >> 32));
}

// Sum of `x` over the warp, added to *counter by lane 0.  Every lane of the warp
// must call it (the relax kernels never return early).
__device__ __forceinline__ void warp_count(u64 x, u64* counter)
{
    for (int off = 16; off > 0; off >>= 1)
        x += __shfl_down_sync(0xffffffffu, x, off);
    if ((threadIdx.x & 31) == 0 && x != 0)
        atomicAdd(counter, x);
}

// ---------------------------------------------------------------------------
// init: every state word to "unreachable", the batch's sources to 0.
// seed_all != 0 (the Johnson virtual source): every vertex starts at 0, active.
// vflag must be zeroed by the caller; active is written for every element.
// ---------------------------------------------------------------------------
extern "C" __global__ void bf_init_f32(
    u64* __restrict__ state, unsigned char* __restrict__ active,
    unsigned char* __restrict__ vflag, const i64* __restrict__ sources,
    i64 n, i64 B, int seed_all)
{
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n * B) return;
    i64 v = t / B;
    i64 s = t - v * B;
    bool seed = seed_all || sources[s] == v;
    state[t] = seed ? make_key(0.0f, MGAPSP_NONE)
                    : make_key(__int_as_float(0x7f800000), MGAPSP_NONE);
    active[t] = seed ? 1 : 0;
    if (seed) vflag[v] = 1;
}

extern "C" __global__ void bf_init_f64(
    double* __restrict__ dist, u64* __restrict__ pred, int track,
    unsigned char* __restrict__ active, unsigned char* __restrict__ vflag,
    const i64* __restrict__ sources, i64 n, i64 B, int seed_all)
{
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n * B) return;
    i64 v = t / B;
    i64 s = t - v * B;
    bool seed = seed_all || sources[s] == v;
    dist[t] = seed ? 0.0 : __longlong_as_double(0x7ff0000000000000LL);
    if (track) pred[t] = (u64)MGAPSP_NONE;
    active[t] = seed ? 1 : 0;
    if (seed) vflag[v] = 1;
}

// ---------------------------------------------------------------------------
// relax, float32: thread t handles (frontier[t / B], t % B).
// ---------------------------------------------------------------------------
extern "C" __global__ void bf_relax_f32(
    const i64* __restrict__ frontier, i64 frontier_len, i64 B,
    const i64* __restrict__ indptr, const int* __restrict__ indices,
    const float* __restrict__ weights,
    u64* state,
    unsigned char* active_cur, unsigned char* vflag_cur,
    unsigned char* active_next, unsigned char* vflag_next,
    u64* counter)
{
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 scanned = 0;
    if (t < frontier_len * B) {
        i64 i = t / B;
        i64 s = t - i * B;
        i64 u = frontier[i];
        if (s == 0) vflag_cur[u] = 0;
        i64 ui = u * B + s;
        if (active_cur[ui]) {
            active_cur[ui] = 0;
            // The latest value is fine: relaxing with a newer (smaller) d[u] only
            // gets there sooner, and the (v, s) it improves is re-activated anyway.
            float du = key_dist(((volatile u64*)state)[ui]);
            i64 beg = indptr[u];
            i64 end = indptr[u + 1];
            scanned = (u64)(end - beg);
            for (i64 e = beg; e < end; ++e) {
                int v = indices[e];
                float w = weights[e];
                if (v == (int)u && w >= 0.0f) continue;
                float nd = __fadd_ru(du, w) + 0.0f;  // + 0.0f turns -0 into +0
                u32 ond = f32_to_ordered(nd);
                i64 vi = (i64)v * B + s;
                u64 old = ((volatile u64*)state)[vi];
                while ((u32)(old >> 32) > ond) {
                    u64 nk = ((u64)ond << 32) | (u64)(u32)u;
                    u64 prev = atomicCAS(&state[vi], old, nk);
                    if (prev == old) {
                        active_next[vi] = 1;
                        vflag_next[v] = 1;
                        break;
                    }
                    old = prev;
                }
            }
        }
    }
    warp_count(scanned, counter);
}

// ---------------------------------------------------------------------------
// relax, float64
// ---------------------------------------------------------------------------

// Record pred u for the distance bits `mine` just stored at *dist_bits.  Only the
// writer whose distance is still the stored one may succeed: it re-reads the
// distance after reading the pred word and installs its pred with a CAS on that
// word (the version in the high half rules out ABA).  If a later writer replaced the
// distance, it will install its own pred after this one, so the last pred written
// always belongs to the final distance.
__device__ __forceinline__ void set_pred_f64(u64* pred, const u64* dist_bits,
                                             u64 mine, u32 u)
{
    while (true) {
        u64 op = ((volatile u64*)pred)[0];
        __threadfence();
        if (((volatile const u64*)dist_bits)[0] != mine) return;  // superseded
        u64 np = ((((op >> 32) + 1ull) & 0xffffffffull) << 32) | (u64)u;
        if (atomicCAS(pred, op, np) == op) return;
    }
}

extern "C" __global__ void bf_relax_f64(
    const i64* __restrict__ frontier, i64 frontier_len, i64 B,
    const i64* __restrict__ indptr, const int* __restrict__ indices,
    const double* __restrict__ weights,
    double* dist, u64* pred, int track,
    unsigned char* active_cur, unsigned char* vflag_cur,
    unsigned char* active_next, unsigned char* vflag_next,
    u64* counter)
{
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 scanned = 0;
    if (t < frontier_len * B) {
        i64 i = t / B;
        i64 s = t - i * B;
        i64 u = frontier[i];
        if (s == 0) vflag_cur[u] = 0;
        i64 ui = u * B + s;
        if (active_cur[ui]) {
            active_cur[ui] = 0;
            u64* bits = (u64*)dist;
            double du = __longlong_as_double((i64)((volatile u64*)bits)[ui]);
            i64 beg = indptr[u];
            i64 end = indptr[u + 1];
            scanned = (u64)(end - beg);
            for (i64 e = beg; e < end; ++e) {
                int v = indices[e];
                double w = weights[e];
                if (v == (int)u && w >= 0.0) continue;
                double nd = __dadd_ru(du, w) + 0.0;
                u64 nbits = (u64)__double_as_longlong(nd);
                i64 vi = (i64)v * B + s;
                u64 old = ((volatile u64*)bits)[vi];
                while (__longlong_as_double((i64)old) > nd) {
                    u64 prev = atomicCAS(&bits[vi], old, nbits);
                    if (prev == old) {
                        if (track) set_pred_f64(&pred[vi], &bits[vi], nbits, (u32)u);
                        active_next[vi] = 1;
                        vflag_next[v] = 1;
                        break;
                    }
                    old = prev;
                }
            }
        }
    }
    warp_count(scanned, counter);
}

// ---------------------------------------------------------------------------
// unpack: state [v * B + s] -> output [s * n + v] (source-major), through a 32x32
// tile in shared memory so that reads and writes are both coalesced.  Every output
// element in range is written.  Block (32, 8); grid (ceil(n/32), ceil(B/32)).
// ---------------------------------------------------------------------------
extern "C" __global__ void bf_unpack_f32(
    const u64* __restrict__ state, i64 n, i64 B,
    float* __restrict__ out, int* __restrict__ out_pred, int want_pred)
{
    __shared__ u64 tile[MGAPSP_TILE][MGAPSP_TILE + 1];
    i64 v0 = (i64)blockIdx.x * MGAPSP_TILE;
    i64 s0 = (i64)blockIdx.y * MGAPSP_TILE;
    for (int j = 0; j < MGAPSP_TILE; j += MGAPSP_TILE_ROWS) {
        i64 v = v0 + threadIdx.y + j;
        i64 s = s0 + threadIdx.x;
        if (v < n && s < B) tile[threadIdx.y + j][threadIdx.x] = state[v * B + s];
    }
    __syncthreads();
    for (int j = 0; j < MGAPSP_TILE; j += MGAPSP_TILE_ROWS) {
        i64 s = s0 + threadIdx.y + j;
        i64 v = v0 + threadIdx.x;
        if (v < n && s < B) {
            u64 k = tile[threadIdx.x][threadIdx.y + j];
            out[s * n + v] = key_dist(k);
            if (want_pred) out_pred[s * n + v] = (int)(u32)(k & 0xffffffffull);
        }
    }
}

extern "C" __global__ void bf_unpack_f64(
    const double* __restrict__ dist, i64 n, i64 B, double* __restrict__ out)
{
    __shared__ double tile[MGAPSP_TILE][MGAPSP_TILE + 1];
    i64 v0 = (i64)blockIdx.x * MGAPSP_TILE;
    i64 s0 = (i64)blockIdx.y * MGAPSP_TILE;
    for (int j = 0; j < MGAPSP_TILE; j += MGAPSP_TILE_ROWS) {
        i64 v = v0 + threadIdx.y + j;
        i64 s = s0 + threadIdx.x;
        if (v < n && s < B) tile[threadIdx.y + j][threadIdx.x] = dist[v * B + s];
    }
    __syncthreads();
    for (int j = 0; j < MGAPSP_TILE; j += MGAPSP_TILE_ROWS) {
        i64 s = s0 + threadIdx.y + j;
        i64 v = v0 + threadIdx.x;
        if (v < n && s < B) out[s * n + v] = tile[threadIdx.x][threadIdx.y + j];
    }
}

// ---------------------------------------------------------------------------
// Floyd-Warshall, one pivot k, in place on a dense row-major n x n matrix:
//     D[i, j] = min(D[i, j], D[i, k] + D[k, j]),  P[i, j] = P[k, j] on improvement
// (strict improvement only; the sum rounded toward +inf, as in Bellman-Ford).
// In place is safe without negative cycles: row k and column k do not change in
// step k (D[k, k] >= 0); with one, some D[i, i] < 0 afterwards, which the host checks.
// Block (32, 8); grid (ceil(n/32), ceil(n/8)).
// ---------------------------------------------------------------------------
__device__ __forceinline__ float add_ru(float a, float b) { return __fadd_ru(a, b); }
__device__ __forceinline__ double add_ru(double a, double b) { return __dadd_ru(a, b); }

template <typename T>
__device__ __forceinline__ void fw_step(T* D, int* P, int want_pred, i64 n, i64 k)
{
    i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 i = (i64)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    T dik = D[i * n + k];
    T dkj = D[k * n + j];
    T cand = add_ru(dik, dkj);
    T cur = D[i * n + j];
    if (cand < cur) {
        D[i * n + j] = cand;
        if (want_pred) P[i * n + j] = P[k * n + j];
    }
}

extern "C" __global__ void fw_step_f32(float* D, int* P, int want_pred, i64 n, i64 k)
{
    fw_step<float>(D, P, want_pred, n, k);
}

extern "C" __global__ void fw_step_f64(double* D, int* P, int want_pred, i64 n, i64 k)
{
    fw_step<double>(D, P, want_pred, n, k);
}
