// Batched PHAST on a contraction hierarchy, for mgapsp.
//
// CUDA C++ with no system headers (NVRTC through mgapsp/cuda/phast.py, the only place
// that launches these; nvcc in tests/test_kernels_compile.py).
//
// mgapsp/hierarchy.py builds the hierarchy on the host: ranks, the upward arcs of
// each rank (up_ptr / up_head, in rank space), their weights in both directions
// (w_up: rank -> head, w_down: head -> rank) and the elimination-tree parent.
//
// Layout.  D[r * Bp + s] is the distance of rank r from batch column s; the batch
// (padded to Bp, a multiple of 32 * V) is the fast dimension, so a warp reads 32 * V
// columns of one rank at once.  Nothing fills D: a column's entries are written by its
// up walk (the ranks on it) and by the down sweep (every rank), which takes inf for a
// rank off the column's walk (on_walk: preorder numbers of the elimination forest).
//
//   phast_up_*     one warp per source: walk the elimination tree from the source to
//                  its root (ranks increase along it), the lanes relaxing the visited
//                  rank's upward arcs.  Every upward neighbour of a rank is one of its
//                  ancestors, so a walk only writes its own column, and only ranks
//                  still ahead of it on the walk: it works in a buffer of its own by
//                  depth, then writes its entries of D.
//   phast_downV_*  one level of the down sweep: the ranks of one elimination-tree depth
//                  (root level first), a warp per (rank, 32 * V columns), V columns
//                  a lane in one vector load: the minimum over the rank's upward arcs
//                  of D[head] + w_down.  The heads are ancestors, at smaller depths,
//                  so they are final.
//   phast_down_split_*  the same for a level of few ranks (the separators at the top
//                  of a large graph's tree: one rank a level, hundreds of arcs each),
//                  which would leave most of the GPU idle while each thread walks
//                  its rank's arcs one after another: blocks of 32 columns x K
//                  lanes, lane k taking arcs k, k + K, ...; the K minima then meet
//                  in shared memory.  A tie keeps the lowest arc, as one thread
//                  walking them in order would, so D and P are the same to the bit.
//   phast_unpackV_* rank-major columns to vertex-major rows (a tiled transpose
//                  through shared memory, gathering each output column's rank).
//   phast_topV_*   the top levels at once, where sums are exact (top_sweep).
//
// RPHAST (targets given): the same kernels; the down sweep gets only the ranks the
// targets depend on (their elimination-tree paths to the root) and the unpack only
// the targets' ranks.
//
// Predecessors (P not null): P[r * Bp + s], beside D, is the vertex before rank r on
// the path of the arc that last lowered D[r * Bp + s] (last_up / last_down: each
// arc's, per direction, from the customization), -1 until one does (set on the walk,
// and by the down sweep off it).  Only a strictly
// smaller sum replaces it, so P follows the relaxations that made D.
// phast_unpackV_i32 turns it into rows as the distances are.
//
// Sums round to nearest (no cycles are walked: non-negative weights, a finite sweep).

typedef long long i64;

#define PHAST_TILE 32
#define PHAST_TILE_ROWS 8
#define PHAST_FULL 0xffffffffu

template <typename T> __device__ __forceinline__ T phast_inf();
template <> __device__ __forceinline__ float phast_inf<float>()
{
    return __int_as_float(0x7f800000);
}
template <> __device__ __forceinline__ double phast_inf<double>()
{
    return __longlong_as_double(0x7ff0000000000000LL);
}

// Whether rank r is column s's source rank or one of its ancestors: r's subtree holds
// the preorder numbers pre[r] .. pre[r] + span[r] - 1 (col_pre[s]: the source rank's,
// -1 for a padding column, which no subtree holds).
__device__ __forceinline__ bool on_walk(int col_pre, int pre_r, int span_r)
{
    return (unsigned)(col_pre - pre_r) < (unsigned)span_r;
}

// A warp's buffer for one walk, indexed by depth (a walk meets each depth once, and a
// rank's upward arcs lead to its ancestors: ranks on the walk), so the walk's
// relaxations stay in shared memory rather than striding through D: the walk's
// values, its ranks and, with predecessors, theirs.  Its bytes (walk_bytes in
// mgapsp/cuda/phast.py): height * (sizeof(T) + 4 (+ 4)), rounded up to 16.
template <typename T>
__device__ __forceinline__ void up_walks(
    const int* __restrict__ src_rank, i64 B, i64 Bp, const int* __restrict__ parent,
    const i64* __restrict__ up_ptr, const int* __restrict__ up_head,
    const T* __restrict__ w_up, T* D, const int* __restrict__ last_up, int* P,
    const int* __restrict__ depth, int top, int* walk_rank, T* walk_value,
    int height, char* scratch)
{
    extern __shared__ __align__(16) char phast_walks[];
    const int lane = threadIdx.x & 31;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
    const i64 bytes = ((i64)height * (sizeof(T) + (P ? 8 : 4)) + 15) / 16 * 16;
    // in shared memory, or (too deep a tree for it) in global scratch, a warp's own
    char* mine = scratch ? scratch + warp * bytes : phast_walks + (threadIdx.x >> 5) * bytes;
    T* val = reinterpret_cast<T*>(mine);
    int* path = reinterpret_cast<int*>(mine + (i64)height * sizeof(T));
    int* pv = path + height;
    const T inf = phast_inf<T>();
    for (i64 b = warp; b < B; b += nwarps) {
        const int first = src_rank[b], deepest = depth[first];
        for (int d = lane; d <= deepest; d += 32) {
            val[d] = d == deepest ? (T)0 : inf;
            if (P) pv[d] = -1;
        }
        __syncwarp();
        for (int x = first; x >= 0; x = parent[x]) {
            const int dx = depth[x];
            if (lane == 0) path[dx] = x;
            const T here = val[dx];
            if (here < inf) {
                const i64 end = up_ptr[x + 1];
                for (i64 a = up_ptr[x] + lane; a < end; a += 32) {
                    const int t = depth[up_head[a]];        // heads differ: so do depths
                    const T c = here + w_up[a];
                    if (c < val[t]) {
                        val[t] = c;
                        if (P) pv[t] = last_up[a];
                    }
                }
            }
            __syncwarp();
        }
        // the walk's entries of D (and P); its top entries by depth, for top_sweep
        for (int d = lane; d <= deepest; d += 32) {
            const int r = path[d];
            D[(i64)r * Bp + b] = val[d];
            if (P) P[(i64)r * Bp + b] = pv[d];
            if (d < top) {
                walk_rank[(i64)d * Bp + b] = r;
                walk_value[(i64)d * Bp + b] = val[d];
            }
        }
        __syncwarp();
    }
}

// V consecutive columns of a row in one load of 16 or 8 bytes (float4, double2, int4...)
template <typename T, int V>
__device__ __forceinline__ void load_cols(const T* p, T (&x)[V])
{
    if constexpr (V * sizeof(T) == 16) {
        union { int4 q; T t[V]; } u;
        u.q = *reinterpret_cast<const int4*>(p);
#pragma unroll
        for (int v = 0; v < V; ++v) x[v] = u.t[v];
    } else if constexpr (V * sizeof(T) == 8) {
        union { int2 q; T t[V]; } u;
        u.q = *reinterpret_cast<const int2*>(p);
#pragma unroll
        for (int v = 0; v < V; ++v) x[v] = u.t[v];
    } else {
#pragma unroll
        for (int v = 0; v < V; ++v) x[v] = p[v];
    }
}

template <typename T, int V>
__device__ __forceinline__ void store_cols(T* p, const T (&x)[V])
{
    if constexpr (V * sizeof(T) == 16) {
        union { int4 q; T t[V]; } u;
#pragma unroll
        for (int v = 0; v < V; ++v) u.t[v] = x[v];
        *reinterpret_cast<int4*>(p) = u.q;
    } else if constexpr (V * sizeof(T) == 8) {
        union { int2 q; T t[V]; } u;
#pragma unroll
        for (int v = 0; v < V; ++v) u.t[v] = x[v];
        *reinterpret_cast<int2*>(p) = u.q;
    } else {
#pragma unroll
        for (int v = 0; v < V; ++v) p[v] = x[v];
    }
}

template <typename T, int V>
__device__ __forceinline__ void relax_cols(const T (&x)[V], T w, int arc, T (&best)[V],
                                           int (&won)[V])
{
#pragma unroll
    for (int v = 0; v < V; ++v) {
        const T c = x[v] + w;
        if (c < best[v]) {
            best[v] = c;
            won[v] = arc;
        }
    }
}

// A rank's own value in V columns before its arcs: the up walk's where it is on the
// column's walk, inf elsewhere (that memory was never written); on_any: whether any is.
template <typename T, int V>
__device__ __forceinline__ void start_cols(const T* row, const int* __restrict__ col_pre,
                                           int pre_r, int span_r, T (&best)[V],
                                           bool (&on)[V])
{
    bool any = false;
#pragma unroll
    for (int v = 0; v < V; ++v) {
        on[v] = on_walk(col_pre[v], pre_r, span_r);
        any |= on[v];
    }
    T x[V];
    if (any) load_cols<T, V>(row, x);
#pragma unroll
    for (int v = 0; v < V; ++v) best[v] = on[v] ? x[v] : phast_inf<T>();
}

// One level of the down sweep: a warp per (rank, 32 * V columns), blockIdx.y over the
// level's ranks.  The warp reads the rank's arcs (head, weight) 32 at a time, one a
// lane, and passes them round by shuffles, so four loads of heads' rows are in
// flight at once.  Arcs are taken in order, a tie keeping the lower.
template <typename T, int V>
__device__ __forceinline__ void down_level(
    const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr,
    const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,
    const int* __restrict__ pre, const int* __restrict__ span,
    const int* __restrict__ col_pre, const int* __restrict__ last_down, int* P)
{
    const int lane = threadIdx.x & 31;
    const i64 group = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (group * 32 * V >= Bp) return;
    const i64 s = group * 32 * V + lane * V;
    for (i64 k = blockIdx.y; k < count; k += gridDim.y) {
        const int r = ranks[k];
        const i64 lo = up_ptr[r], hi = up_ptr[r + 1];
        T* row = D + (i64)r * Bp + s;
        T best[V];
        bool on[V];
        int won[V];
        start_cols<T, V>(row, col_pre + s, pre[r], span[r], best, on);
#pragma unroll
        for (int v = 0; v < V; ++v) won[v] = -1;
        for (i64 base = lo; base < hi; base += 32) {
            const int m = (int)(hi - base < 32 ? hi - base : 32);
            int my_head = 0;
            T my_w = 0;
            if (lane < m) {
                my_head = up_head[base + lane];
                my_w = w_down[base + lane];
            }
            const int off = (int)(base - lo);
            int j = 0;
            for (; j + 4 <= m; j += 4) {
                T x0[V], x1[V], x2[V], x3[V];
                load_cols<T, V>(D + (i64)__shfl_sync(PHAST_FULL, my_head, j) * Bp + s, x0);
                load_cols<T, V>(D + (i64)__shfl_sync(PHAST_FULL, my_head, j + 1) * Bp + s, x1);
                load_cols<T, V>(D + (i64)__shfl_sync(PHAST_FULL, my_head, j + 2) * Bp + s, x2);
                load_cols<T, V>(D + (i64)__shfl_sync(PHAST_FULL, my_head, j + 3) * Bp + s, x3);
                relax_cols<T, V>(x0, __shfl_sync(PHAST_FULL, my_w, j), off + j, best, won);
                relax_cols<T, V>(x1, __shfl_sync(PHAST_FULL, my_w, j + 1), off + j + 1, best, won);
                relax_cols<T, V>(x2, __shfl_sync(PHAST_FULL, my_w, j + 2), off + j + 2, best, won);
                relax_cols<T, V>(x3, __shfl_sync(PHAST_FULL, my_w, j + 3), off + j + 3, best, won);
            }
            for (; j < m; ++j) {
                T x[V];
                load_cols<T, V>(D + (i64)__shfl_sync(PHAST_FULL, my_head, j) * Bp + s, x);
                relax_cols<T, V>(x, __shfl_sync(PHAST_FULL, my_w, j), off + j, best, won);
            }
        }
        store_cols<T, V>(row, best);
        if (P) {
#pragma unroll
            for (int v = 0; v < V; ++v) {
                if (won[v] >= 0) P[(i64)r * Bp + s + v] = last_down[lo + won[v]];
                else if (!on[v]) P[(i64)r * Bp + s + v] = -1;
            }
        }
    }
}

// The top levels of the sweep (hundreds of levels of a few separator ranks) at
// once: rank r's distance from column s is the least, over the depths d <= depth(r)
// at which s's walk passes through r's ancestor (walk_rank, from the up walk), of
// the walk's value there plus the down distance from that ancestor to r
// (chain_dist; mgapsp/hierarchy/chains.py).  A warp takes PHAST_TOP_RANKS ranks and
// 32 * V columns; a block's warps share the columns, so the walk's entries they read
// are cached once.  Only where sums are exact (integer weights) is this the level
// sweep to the bit: it adds the same path's weights in another order.
#define PHAST_TOP_RANKS 4

template <typename T, int V>
__device__ __forceinline__ void top_sweep(
    const int* __restrict__ top_ranks, i64 count, int top,
    const int* __restrict__ chain_rank, const T* __restrict__ chain_dist,
    const int* __restrict__ depth, const int* __restrict__ walk_rank,
    const T* __restrict__ walk_value, i64 Bp, T* D)
{
    const int K = PHAST_TOP_RANKS;
    const int lane = threadIdx.x & 31;
    const i64 s = (i64)blockIdx.x * 32 * V + lane * V;
    const i64 first = ((i64)blockIdx.y * (blockDim.x >> 5) + (threadIdx.x >> 5)) * K;
    if (first >= count) return;
    int deepest = -1, dr[K];
    T best[K][V];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        dr[k] = first + k < count ? depth[top_ranks[first + k]] : -1;
        deepest = dr[k] > deepest ? dr[k] : deepest;
#pragma unroll
        for (int v = 0; v < V; ++v) best[k][v] = phast_inf<T>();
    }
    for (int d = 0; d <= deepest; ++d) {
        int h[V];
        T w[V];
        load_cols<int, V>(walk_rank + (i64)d * Bp + s, h);
        load_cols<T, V>(walk_value + (i64)d * Bp + s, w);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (d > dr[k]) continue;
            const int a = chain_rank[(first + k) * top + d];
            const T m = chain_dist[(first + k) * top + d];
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const T c = w[v] + m;
                if (h[v] == a && c < best[k][v]) best[k][v] = c;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (first + k < count) store_cols<T, V>(D + (i64)top_ranks[first + k] * Bp + s, best[k]);
}

#define PHAST_MAX_LANES 32

template <typename T>
__device__ __forceinline__ void down_level_split(
    const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr,
    const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,
    const int* __restrict__ pre, const int* __restrict__ span,
    const int* __restrict__ col_pre, const int* __restrict__ last_down, int* P)
{
    __shared__ T best_of[PHAST_MAX_LANES][32];
    __shared__ i64 won_of[PHAST_MAX_LANES][32];
    const int col = threadIdx.x, lane = threadIdx.y, lanes = blockDim.y;
    const i64 s = (i64)blockIdx.x * 32 + col;      // Bp is a multiple of 32
    for (i64 k = blockIdx.y; k < count; k += gridDim.y) {
        const int r = ranks[k];
        const i64 end = up_ptr[r + 1];
        const bool on = on_walk(col_pre[s], pre[r], span[r]);
        T best = on ? D[(i64)r * Bp + s] : phast_inf<T>();
        i64 won = -1;
        for (i64 a = up_ptr[r] + lane; a < end; a += lanes) {
            const T c = D[(i64)up_head[a] * Bp + s] + w_down[a];
            if (c < best) {
                best = c;
                won = a;
            }
        }
        best_of[lane][col] = best;
        won_of[lane][col] = won;
        __syncthreads();
        if (lane == 0) {
            for (int q = 1; q < lanes; ++q) {
                const T c = best_of[q][col];
                const i64 w = won_of[q][col];
                if (c < best || (c == best && w >= 0 && w < won)) {
                    best = c;
                    won = w;
                }
            }
            D[(i64)r * Bp + s] = best;
            if (P && won >= 0) P[(i64)r * Bp + s] = last_down[won];
            else if (P && !on) P[(i64)r * Bp + s] = -1;
        }
        __syncthreads();
    }
}

// out[b * n + v] = D[rank[v] * Bp + b] for b < B and the n output columns v (every
// vertex, or the targets): blocks of 32 x 8 threads move tiles of 32 vertices x 32 * V
// columns, each lane reading V columns of a rank's row in one load, 16 bytes where the
// batch is padded for it (more bytes in flight than a word a lane)
template <typename T, int V>
__device__ __forceinline__ void unpack(
    const T* __restrict__ D, i64 n, i64 Bp, i64 B, const int* __restrict__ rank,
    T* __restrict__ out)
{
    __shared__ T tile[PHAST_TILE * V][PHAST_TILE + 1];
    const i64 v0 = (i64)blockIdx.x * PHAST_TILE;
    const i64 b0 = (i64)blockIdx.y * PHAST_TILE * V;
    for (int j = threadIdx.y; j < PHAST_TILE; j += PHAST_TILE_ROWS) {
        const i64 v = v0 + j, b = b0 + threadIdx.x * V;
        if (v < n && b < Bp) {
            T x[V];
            load_cols<T, V>(D + (i64)rank[v] * Bp + b, x);
#pragma unroll
            for (int c = 0; c < V; ++c) tile[threadIdx.x * V + c][j] = x[c];
        }
    }
    __syncthreads();
    for (int c = threadIdx.y; c < PHAST_TILE * V; c += PHAST_TILE_ROWS) {
        const i64 b = b0 + c, v = v0 + threadIdx.x;
        if (v < n && b < B) out[b * n + v] = tile[c][threadIdx.x];
    }
}

#define PHAST_DOWN_ARGS(T)                                                            \
    const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr, \
    const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,              \
    const int* __restrict__ pre, const int* __restrict__ span,                        \
    const int* __restrict__ col_pre, const int* __restrict__ last_down, int* P
#define PHAST_DOWN_PASS ranks, count, Bp, up_ptr, up_head, w_down, D, pre, span, col_pre, \
    last_down, P

#define PHAST_KERNELS(SUFFIX, T)                                                      \
    extern "C" __global__ void phast_up_##SUFFIX(                                     \
        const int* __restrict__ src_rank, i64 B, i64 Bp, const int* __restrict__ parent, \
        const i64* __restrict__ up_ptr, const int* __restrict__ up_head,              \
        const T* __restrict__ w_up, T* D, const int* __restrict__ last_up, int* P,    \
        const int* __restrict__ depth, int top, int* walk_rank, T* walk_value,        \
        int height, char* scratch)                                                    \
    {                                                                                 \
        up_walks<T>(src_rank, B, Bp, parent, up_ptr, up_head, w_up, D, last_up, P,   \
                    depth, top, walk_rank, walk_value, height, scratch);              \
    }                                                                                 \
    extern "C" __global__ void phast_down1_##SUFFIX(PHAST_DOWN_ARGS(T))               \
    {                                                                                 \
        down_level<T, 1>(PHAST_DOWN_PASS);                                            \
    }                                                                                 \
    extern "C" __global__ void phast_down_split_##SUFFIX(PHAST_DOWN_ARGS(T))          \
    {                                                                                 \
        down_level_split<T>(PHAST_DOWN_PASS);                                         \
    }                                                                                 \
    extern "C" __global__ void phast_unpack1_##SUFFIX(                                \
        const T* __restrict__ D, i64 n, i64 Bp, i64 B, const int* __restrict__ rank,  \
        T* __restrict__ out)                                                          \
    {                                                                                 \
        unpack<T, 1>(D, n, Bp, B, rank, out);                                         \
    }

PHAST_KERNELS(f32, float)
PHAST_KERNELS(f64, double)

// 16 bytes of columns a lane: four float32 or two float64
extern "C" __global__ void phast_down4_f32(PHAST_DOWN_ARGS(float))
{
    down_level<float, 4>(PHAST_DOWN_PASS);
}
extern "C" __global__ void phast_down2_f64(PHAST_DOWN_ARGS(double))
{
    down_level<double, 2>(PHAST_DOWN_PASS);
}

#define PHAST_UNPACK(SUFFIX, T, V)                                                    \
    extern "C" __global__ void phast_unpack##V##_##SUFFIX(                            \
        const T* __restrict__ D, i64 n, i64 Bp, i64 B, const int* __restrict__ rank,  \
        T* __restrict__ out)                                                          \
    {                                                                                 \
        unpack<T, V>(D, n, Bp, B, rank, out);                                         \
    }

PHAST_UNPACK(f32, float, 4)
PHAST_UNPACK(f64, double, 2)
// predecessors, V as the batch's distances
PHAST_UNPACK(i32, int, 1)
PHAST_UNPACK(i32, int, 2)
PHAST_UNPACK(i32, int, 4)

#define PHAST_TOP_ARGS(T)                                                             \
    const int* __restrict__ top_ranks, i64 count, int top,                            \
    const int* __restrict__ chain_rank, const T* __restrict__ chain_dist,             \
    const int* __restrict__ depth, const int* __restrict__ walk_rank,                 \
    const T* __restrict__ walk_value, i64 Bp, T* D
#define PHAST_TOP_PASS top_ranks, count, top, chain_rank, chain_dist, depth, walk_rank, \
    walk_value, Bp, D

extern "C" __global__ void phast_top1_f32(PHAST_TOP_ARGS(float))
{
    top_sweep<float, 1>(PHAST_TOP_PASS);
}
extern "C" __global__ void phast_top4_f32(PHAST_TOP_ARGS(float))
{
    top_sweep<float, 4>(PHAST_TOP_PASS);
}
extern "C" __global__ void phast_top1_f64(PHAST_TOP_ARGS(double))
{
    top_sweep<double, 1>(PHAST_TOP_PASS);
}
extern "C" __global__ void phast_top2_f64(PHAST_TOP_ARGS(double))
{
    top_sweep<double, 2>(PHAST_TOP_PASS);
}
