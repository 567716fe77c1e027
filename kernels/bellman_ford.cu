// Batched frontier Bellman-Ford (with the H-BF techniques),
// for mgapsp.
//
// CUDA C++ with no system headers, so the same text compiles under NVRTC (CuPy
// RawModule, loaded by mgapsp/cuda/bellman_ford.py, the only place that launches these)
// and under `nvcc -arch=sm_90 -c` (tests/test_kernels_compile.py).  Its one include,
// kernels/sssp_state.cuh (shared with dijkstra.cu), is inlined by the loader for NVRTC.
//
// Layout.  A batch of B sources is solved at once.  Per-(vertex, source) state lives
// at [v * Bp + s]: the batch is the fast dimension.  The batch is cut into C chunks of
// G sources (G = 32 when B >= 32, else G = B; Bp = C * G, the padded batch).  The unit
// of work is an ITEM (v, c) = vertex v with chunk c, numbered v * C + c: the G lanes of
// an item read one CSR row (broadcast) and touch consecutive state words (coalesced).
// An item carries a 32-bit lane mask: bit g is set when (v, c * G + g) improved in the
// last round and must relax its out-edges in this one.
//
// State words ("modes"; distances as ordered unsigned integers, see f32_to_ordered):
//   0  u32  ordered float32 distance                      (float32, no predecessors)
//   1  u64  ordered float32 distance << 32 | predecessor  (float32 with predecessors)
//   2  u64  ordered float64 distance                      (float64, no predecessors)
//   3  u64  ordered float64 distance, plus a predecessor word (version << 32 | pred)
//           in a second array (float64 with predecessors: negative weights)
// Modes 0 and 2 update with one atomicMin; mode 1 with a 64-bit CAS, so that the
// distance and its predecessor change together; mode 3 with an atomicMin and then
// set_pred (only the writer of the stored distance may set the predecessor).
//
// Every mode replaces a distance only when the new one is STRICTLY smaller, never on a
// tie, so zero-weight cycles cannot make the predecessor graph cyclic; a cycle in it
// then implies a negative cycle (the classic lemma, which also holds for the
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
// Rounds (mgapsp/cuda/bellman_ford.py drives them; each can be switched off there):
//   frontier   round r relaxes only the items queued for it (queue[r % 2], lane masks
//              mask[r % 2]); off: a SWEEP over every item, every lane with a finite
//              distance relaxes ("every reached vertex relaxes every round").
//   dedup      improved (v, s) set their lane bit in the next masks (atomicOr, one per
//              warp and target in the full-warp case); bf_compact then queues every
//              item with a nonzero mask once.  Off: each successful relaxation pushes
//              its item with an atomicAdd (duplicates; bf_compact only rebuilds the
//              queue if it overflowed).
//   classify   the CSR rows are reordered on the host so that each row holds first the
//              edges that rounds relax, up to rend[u]; after them the skipped ones:
//              non-negative self-loops and edges into sinks (out-degree 0).  Sinks so
//              never enter a frontier; bf_pull finishes them after the last round from
//              their in-edges.  Targets of in-degree 1 carry bit 31 in the index: only
//              one edge can improve them and, with one visit of each (u, s) per round,
//              only one thread, so a plain store replaces the atomic (DIRECT write).
//              (A queue with duplicates can visit (u, s) twice: atomics then.)
//   virtual    lanes per item L = G * E: with G < 32 (small batches) each source's
//   warp       edge list is split over E lanes, E = the power of two >= the frontier's
//              mean out-degree (from bf_compact), at most 32 / G; K = 32 / L items per
//              warp.  G = 32: the batch fills the warp, E = 1, K = 1 (option moot).
//   early stop the host stops when a round leaves the frontier empty; off: an empty
//              frontier must be confirmed by a full sweep that changes nothing.
// PREREAD (a tuning switch, not an H-BF technique): read the target's word first and
// skip the atomic when it cannot improve (modes 0, 2; modes 1, 3 always read).
// EAGER (tuning): read d(u, s) together with the lane mask, not after it.
// Round counters live on the device (ctr, three slots used in rotation, see
// relax_round), so rounds are launched back to back without a host round trip.

#define MGAPSP_NONE 0xffffffffu
#define MGAPSP_TILE 32
#define MGAPSP_TILE_ROWS 8
#define MGAPSP_ALL 0xffffffffu

// relax_round flags (mirrored in mgapsp/cuda/bellman_ford.py)
#define BF_SWEEP 1
#define BF_PRODUCE 2
#define BF_PUSH 4
#define BF_DIRECT 8
#define BF_VWARP 16
#define BF_EXIT_UNCHANGED 32
#define BF_PREREAD 64
#define BF_EAGER 128
// bf_compact flags
#define BF_COMPACT_DEGREES 1
#define BF_COMPACT_IF_OVERFLOW 2
// counters: three slots of 8 words, then totals
#define CTR_SLOT 8
#define CTR_PUSHED 0
#define CTR_QUEUED 1
#define CTR_DEGREES 2
#define CTR_CHANGED 3
#define CTR_OVERFLOW 4
#define CTR_ROUNDS 24
#define CTR_SCANNED 25

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

#include "sssp_state.cuh"

// ---------------------------------------------------------------------------
// One round of Bellman-Ford.  Counters: three slots of CTR_SLOT words; round r reads
// slot r % 3 (its frontier size), writes slot (r + 1) % 3 (the next frontier) and
// zeroes slot (r + 2) % 3 for round r + 1.  Slot words: PUSHED (queue entries pushed,
// dedup off), QUEUED and DEGREES (from bf_compact), CHANGED (some (v, s) improved),
// OVERFLOW (a push found the queue full; bf_compact then rebuilds it from the masks).
// The grid is persistent: warps stride over the items, so a round whose frontier is
// empty costs one tiny launch and the host never waits between rounds.
// ---------------------------------------------------------------------------
template <int MODE, bool FULL>
__device__ __forceinline__ void relax_round(
    const u32* __restrict__ queue, u32* __restrict__ queue_next, u64 qcap,
    u64* ctr, i64 r, int flags, i64 n, i64 Bp, i64 B, int G, i64 C,
    const i64* __restrict__ indptr, const i64* __restrict__ rend,
    const int* __restrict__ idx, const typename Word<MODE>::dist_t* __restrict__ wt,
    typename Word<MODE>::word_t* st, u64* pw, u32* mask_cur, u32* mask_next,
    double avgdeg)
{
    typedef Word<MODE> W;
    typedef typename W::word_t word_t;
    typedef typename W::dist_t dist_t;
    u64* in = ctr + CTR_SLOT * (r % 3);
    u64* out = ctr + CTR_SLOT * ((r + 1) % 3);
    u64* nxt = ctr + CTR_SLOT * ((r + 2) % 3);
    if (blockIdx.x == 0 && threadIdx.x < CTR_SLOT) nxt[threadIdx.x] = 0ull;
    const bool sweep = (flags & BF_SWEEP) != 0;
    const bool produce = (flags & BF_PRODUCE) != 0;
    const bool push = (flags & BF_PUSH) != 0;
    const bool compacted = !push || in[CTR_OVERFLOW] != 0ull;
    // a direct write needs one visit of each (u, s) per round: items must be unique
    const bool direct_ok = (flags & BF_DIRECT) != 0 && (sweep || compacted);
    const bool preread = (flags & BF_PREREAD) != 0;
    const bool eager = (flags & BF_EAGER) != 0;
    u64 n_items;
    if (sweep) {
        if ((flags & BF_EXIT_UNCHANGED) && r > 0 && in[CTR_CHANGED] == 0ull) return;
        n_items = (u64)n * (u64)C;
    } else {
        n_items = compacted ? in[CTR_QUEUED] : in[CTR_PUSHED];
    }
    if (n_items == 0ull) return;
    if (blockIdx.x == 0 && threadIdx.x == 0) ctr[CTR_ROUNDS] += 1ull;   // rounds with work

    // virtual warp: L = G * E lanes per item, K items per warp
    int E = 1, L = 32, K = 1;
    if (!FULL) {
        if (flags & BF_VWARP) {
            double avg = avgdeg;
            if (!sweep && compacted) avg = (double)in[CTR_DEGREES] / (double)n_items;
            int emax = 1;
            while (emax * 2 * G <= 32) emax *= 2;
            while (E < emax && (double)E < avg) E *= 2;
        }
        L = G * E;
        K = 32 / L;
    }
    const int lane = threadIdx.x & 31;
    const int k = FULL ? 0 : lane / L;
    const int rr = FULL ? lane : lane - k * L;
    const int g = FULL ? lane : rr % G;
    const int e0 = FULL ? 0 : rr / G;
    const bool lane_in = FULL || k < K;
    const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u64 nwarps = ((u64)gridDim.x * blockDim.x) >> 5;
    u64 scanned = 0;
    bool changed = false;

    for (u64 base = warp * (u64)K; base < n_items; base += nwarps * (u64)K) {
        const u64 qi = base + (u64)k;
        const bool item_ok = lane_in && qi < n_items;
        u32 item = 0;
        if (item_ok) item = sweep ? (u32)qi : queue[qi];
        const i64 u = (i64)(item / (u32)C);
        const i64 c = (i64)item - u * C;
        const i64 s = c * G + g;
        const bool lane_ok = item_ok && s < B;
        const i64 ui = u * Bp + s;
        // independent loads first, so that they are in flight together: the lane
        // mask, the row bounds and (EAGER) the state word, which a lane without its
        // bit then ignores; a value read a moment early is still a valid d(u, s)
        u32 m = 0u;
        word_t wu = W::inf();
        i64 beg = 0, end = 0;
        if (item_ok) {
            if (!sweep) m = __ldcg(mask_cur + item);
            if (lane_ok && (sweep || eager)) wu = __ldcg(st + ui);
            beg = indptr[u];
            end = rend[u];
        }
        bool active;
        if (sweep) {
            active = lane_ok && W::ord(wu) != W::ord(W::inf());
        } else {
            active = lane_ok && ((m >> g) & 1u);
            if (!active) wu = W::inf();
            else if (!eager) wu = __ldcg(st + ui);
            __syncwarp();
            if (item_ok && rr == 0 && m != 0u) mask_cur[item] = 0u;  // consumed
        }
        const dist_t du = W::dist(wu);
        int trips = 0;
        if (active) {
            i64 cnt = end - beg - e0;
            if (cnt > 0) trips = (int)((cnt + E - 1) / E);
        }
        scanned += (u64)trips;
        if (FULL) {
            // one item per warp, every lane on the same edge: the warp loads up to 32
            // edges at once (coalesced), then takes them one by one from registers
            const i64 tmax = __any_sync(MGAPSP_ALL, active) ? end - beg : 0;
            for (i64 eb = 0; eb < tmax; eb += 32) {
                const int cnt = (int)(tmax - eb < 32 ? tmax - eb : 32);
                int my_t = 0;
                dist_t my_w = 0;
                if (lane < cnt) { my_t = idx[beg + eb + lane]; my_w = wt[beg + eb + lane]; }
                for (int j = 0; j < cnt; ++j) {
                    const int t = __shfl_sync(MGAPSP_ALL, my_t, j);
                    const dist_t we = __shfl_sync(MGAPSP_ALL, my_w, j);
                    const u32 v = (u32)t & 0x7fffffffu;
                    bool imp = false;
                    if (active)
                        imp = W::update(st, pw, (i64)v * Bp + s, W::to_ord(W::add_ru(du, we)),
                                        (u32)u, direct_ok && t < 0, preread);
                    const u32 bal = __ballot_sync(MGAPSP_ALL, imp);
                    if (bal != 0u) {
                        changed = true;
                        if (produce && lane == __ffs(bal) - 1)
                            atomicOr(mask_next + (u64)v * C + c, bal);
                        if (push && imp) {
                            u64 pos = atomicAdd(out + CTR_PUSHED, 1ull);
                            if (pos < qcap) queue_next[pos] = (u32)((u64)v * C + c);
                            else out[CTR_OVERFLOW] = 1ull;
                        }
                    }
                }
            }
        } else {
            const int tmax = (int)__reduce_max_sync(MGAPSP_ALL, (u32)trips);
            for (int it = 0; it < tmax; ++it) {
                u32 v = 0;
                bool imp = false;
                if (it < trips) {
                    i64 e = beg + e0 + (i64)it * E;
                    int t = idx[e];
                    v = (u32)t & 0x7fffffffu;
                    imp = W::update(st, pw, (i64)v * Bp + s, W::to_ord(W::add_ru(du, wt[e])),
                                    (u32)u, direct_ok && t < 0, preread);
                }
                if (imp) {
                    changed = true;
                    if (produce) atomicOr(mask_next + (u64)v * C + c, 1u << g);
                    if (push) {
                        u64 pos = atomicAdd(out + CTR_PUSHED, 1ull);
                        if (pos < qcap) queue_next[pos] = (u32)((u64)v * C + c);
                        else out[CTR_OVERFLOW] = 1ull;
                    }
                }
            }
        }
    }
    if (__any_sync(MGAPSP_ALL, changed) && lane == 0) out[CTR_CHANGED] = 1ull;
    block_count(scanned, ctr + CTR_SCANNED);
}

// ---------------------------------------------------------------------------
// compact: queue every item whose mask (the masks round r produced) is nonzero; each
// thread scans 16 consecutive items and a tile of 4096 keeps its items in increasing
// order (vertex order, for locality); one atomicAdd per tile reserves its place.  DEGREES: also sum the items' relaxed out-degrees (for
// the virtual warp).  IF_OVERFLOW (dedup off): only when round r's pushes overflowed.
// Block of 256 threads.
// ---------------------------------------------------------------------------
#define COMPACT_THREADS 256
#define COMPACT_PER 16
extern "C" __global__ void bf_compact(
    const u32* __restrict__ masks, u64 total, u32* __restrict__ queue_out, u64* ctr, i64 r,
    const i64* __restrict__ indptr, const i64* __restrict__ rend, i64 C, int flags)
{
    __shared__ u32 warp_sum[COMPACT_THREADS / 32];
    __shared__ u64 tile_base;
    u64* out = ctr + CTR_SLOT * ((r + 1) % 3);
    if ((flags & BF_COMPACT_IF_OVERFLOW) && out[CTR_OVERFLOW] == 0ull) return;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int w = tid >> 5;
    const u64 tile = (u64)COMPACT_THREADS * COMPACT_PER;
    for (u64 tb = (u64)blockIdx.x * tile; tb < total; tb += (u64)gridDim.x * tile) {
        const u64 first = tb + (u64)tid * COMPACT_PER;   // this thread's consecutive items
        u32 vals[COMPACT_PER];
        u32 cnt = 0;
        u64 deg = 0;
#pragma unroll
        for (int j = 0; j < COMPACT_PER; ++j) {
            u64 i = first + (u64)j;
            u32 mv = i < total ? masks[i] : 0u;
            vals[j] = mv;
            if (mv != 0u) {
                ++cnt;
                if (flags & BF_COMPACT_DEGREES) {
                    i64 v = (i64)(i / (u64)C);
                    deg += (u64)(rend[v] - indptr[v]);
                }
            }
        }
        // block-wide exclusive scan of cnt
        u32 incl = cnt;
        for (int off = 1; off < 32; off <<= 1) {
            u32 y = __shfl_up_sync(MGAPSP_ALL, incl, off);
            if (lane >= off) incl += y;
        }
        if (lane == 31) warp_sum[w] = incl;
        __syncthreads();
        u32 before = 0, block_total = 0;
        for (int j = 0; j < COMPACT_THREADS / 32; ++j) {
            u32 x = warp_sum[j];
            if (j < w) before += x;
            block_total += x;
        }
        if (block_total != 0u && tid == 0) tile_base = atomicAdd(out + CTR_QUEUED, (u64)block_total);
        if (flags & BF_COMPACT_DEGREES) {
            for (int off = 16; off > 0; off >>= 1) deg += __shfl_down_sync(MGAPSP_ALL, deg, off);
            if (lane == 0 && deg != 0ull) atomicAdd(out + CTR_DEGREES, deg);
        }
        __syncthreads();
        if (block_total != 0u) {
            u64 pos = tile_base + before + (incl - cnt);
#pragma unroll
            for (int j = 0; j < COMPACT_PER; ++j) {
                if (vals[j] != 0u) queue_out[pos++] = (u32)(first + (u64)j);
            }
        }
        __syncthreads();  // warp_sum and tile_base are reused
    }
}

// ---------------------------------------------------------------------------
// Kernels, one per state mode (m0 .. m3, see the top of the file); the relax kernels
// also per warp shape (_full: B >= 32, one item per warp).
// ---------------------------------------------------------------------------
#define BF_RELAX_PARAMS(WORD, DIST)                                                   \
    const u32* __restrict__ queue, u32* __restrict__ queue_next, u64 qcap, u64* ctr,  \
    i64 r, int flags, i64 n, i64 Bp, i64 B, int G, i64 C,                             \
    const i64* __restrict__ indptr, const i64* __restrict__ rend,                     \
    const int* __restrict__ idx, const DIST* __restrict__ wt, WORD* st, u64* pw,      \
    u32* mask_cur, u32* mask_next, double avgdeg
#define BF_RELAX_ARGS                                                                 \
    queue, queue_next, qcap, ctr, r, flags, n, Bp, B, G, C, indptr, rend, idx, wt, st, \
    pw, mask_cur, mask_next, avgdeg
#define BF_INIT_PARAMS(WORD)                                                          \
    WORD* st, u64* pw, i64 n, i64 Bp, i64 B, int G, const i64* __restrict__ sources,  \
    int seed_all, u32* masks, i64 mv, i64 mc, int set_masks
#define BF_INIT_ARGS st, pw, n, Bp, B, G, sources, seed_all, masks, mv, mc, set_masks
#define BF_PULL_PARAMS(WORD, DIST)                                                    \
    WORD* st, u64* pw, i64 Bp, i64 B, int G, i64 C, const int* __restrict__ sinks,    \
    i64 nsinks, const i64* __restrict__ rptr, const int* __restrict__ rsrc,           \
    const DIST* __restrict__ rw
#define BF_PULL_ARGS st, pw, Bp, B, G, C, sinks, nsinks, rptr, rsrc, rw
#define BF_UNPACK_PARAMS(WORD, DIST)                                                  \
    const WORD* __restrict__ st, i64 n, i64 Bp, i64 B, const int* __restrict__ row_of_col, \
    DIST* __restrict__ out, int* __restrict__ out_pred, int want_pred,                \
    const double* __restrict__ h, const i64* __restrict__ sources, int undo
#define BF_UNPACK_ARGS st, n, Bp, B, row_of_col, out, out_pred, want_pred, h, sources, undo

// The entry points of mode M (sssp_state.cuh's Word<M>), named for CuPy's lookup:
// bf_relax_mM, bf_relax_mM_full, bf_init_mM, bf_pull_mM and bf_unpack_mM.
#define BF_MODE_KERNELS(M, WORD, DIST)                                                \
    extern "C" __global__ void bf_relax_m##M(BF_RELAX_PARAMS(WORD, DIST))             \
    {                                                                                 \
        relax_round<M, false>(BF_RELAX_ARGS);                                         \
    }                                                                                 \
    extern "C" __global__ void bf_relax_m##M##_full(BF_RELAX_PARAMS(WORD, DIST))      \
    {                                                                                 \
        relax_round<M, true>(BF_RELAX_ARGS);                                          \
    }                                                                                 \
    extern "C" __global__ void bf_init_m##M(BF_INIT_PARAMS(WORD))                     \
    {                                                                                 \
        init_state<M>(BF_INIT_ARGS);                                                  \
    }                                                                                 \
    extern "C" __global__ void bf_pull_m##M(BF_PULL_PARAMS(WORD, DIST))               \
    {                                                                                 \
        pull_sinks<M>(BF_PULL_ARGS);                                                  \
    }                                                                                 \
    extern "C" __global__ void bf_unpack_m##M(BF_UNPACK_PARAMS(WORD, DIST))           \
    {                                                                                 \
        unpack_state<M>(BF_UNPACK_ARGS);                                              \
    }

BF_MODE_KERNELS(0, u32, float)
BF_MODE_KERNELS(1, u64, float)
BF_MODE_KERNELS(2, u64, double)
BF_MODE_KERNELS(3, u64, double)
