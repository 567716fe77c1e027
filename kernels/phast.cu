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
// (padded to Bp, a multiple of 32) is the fast dimension, so a warp reads 32 columns
// of one rank at once.
//
//   phast_up_*     one warp per source: walk the elimination tree from the source to
//                  its root (ranks increase along it), the lanes relaxing the visited
//                  rank's upward arcs.  Every upward neighbour of a rank is one of its
//                  ancestors, so a walk only writes its own column, and only ranks
//                  still ahead of it on the walk.
//   phast_down_*   one level of the down sweep: the ranks of one elimination-tree depth
//                  (root level first), each thread one (rank, column): the minimum
//                  over the rank's upward arcs of D[head] + w_down.  The heads are
//                  ancestors, at smaller depths, so they are final.
//   phast_down_split_*  the same for a level of few ranks (the separators at the top
//                  of a large graph's tree: one rank a level, hundreds of arcs each),
//                  which would leave most of the GPU idle while each thread walks
//                  its rank's arcs one after another: blocks of 32 columns x K
//                  lanes, lane k taking arcs k, k + K, ...; the K minima then meet
//                  in shared memory.  A tie keeps the lowest arc, as one thread
//                  walking them in order would, so D and P are the same to the bit.
//   phast_unpack_* rank-major columns to vertex-major rows (a tiled transpose through
//                  shared memory, gathering each output column's rank).
//
// RPHAST (targets given): the same kernels; the down sweep gets only the ranks the
// targets depend on (their elimination-tree paths to the root) and the unpack only
// the targets' ranks.
//
// Predecessors (P not null): P[r * Bp + s], beside D, is the vertex before rank r on
// the path of the arc that last lowered D[r * Bp + s] (last_up / last_down: each
// arc's, per direction, from the customization), -1 until one does.  Only a strictly
// smaller sum replaces it, so P follows the relaxations that made D.
// phast_unpack_i32 turns it into rows as the distances are.
//
// Sums round to nearest (no cycles are walked: non-negative weights, a finite sweep).

typedef long long i64;

#define PHAST_TILE 32
#define PHAST_TILE_ROWS 8

template <typename T>
__device__ __forceinline__ void up_walks(
    const int* __restrict__ src_rank, i64 B, i64 Bp, const int* __restrict__ parent,
    const i64* __restrict__ up_ptr, const int* __restrict__ up_head,
    const T* __restrict__ w_up, T* D, T inf, const int* __restrict__ last_up, int* P)
{
    const int lane = threadIdx.x & 31;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
    for (i64 b = warp; b < B; b += nwarps) {
        int x = src_rank[b];
        while (x >= 0) {
            // written by this warp's lanes in an earlier step, ordered by __syncwarp
            const T dx = D[(i64)x * Bp + b];
            if (dx < inf) {
                const i64 end = up_ptr[x + 1];
                for (i64 a = up_ptr[x] + lane; a < end; a += 32) {
                    const i64 t = (i64)up_head[a] * Bp + b;
                    const T c = dx + w_up[a];
                    if (c < D[t]) {
                        D[t] = c;
                        if (P) P[t] = last_up[a];
                    }
                }
            }
            __syncwarp();
            x = parent[x];
        }
    }
}

template <typename T>
__device__ __forceinline__ void down_level(
    const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr,
    const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,
    const int* __restrict__ last_down, int* P)
{
    const i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= Bp) return;
    for (i64 k = blockIdx.y; k < count; k += gridDim.y) {
        const int r = ranks[k];
        const i64 end = up_ptr[r + 1];
        T best = D[(i64)r * Bp + s];
        i64 won = -1;
        for (i64 a = up_ptr[r]; a < end; ++a) {
            const T c = D[(i64)up_head[a] * Bp + s] + w_down[a];
            if (c < best) {
                best = c;
                won = a;
            }
        }
        D[(i64)r * Bp + s] = best;
        if (P && won >= 0) P[(i64)r * Bp + s] = last_down[won];
    }
}

#define PHAST_MAX_LANES 32

template <typename T>
__device__ __forceinline__ void down_level_split(
    const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr,
    const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,
    const int* __restrict__ last_down, int* P)
{
    __shared__ T best_of[PHAST_MAX_LANES][32];
    __shared__ i64 won_of[PHAST_MAX_LANES][32];
    const int col = threadIdx.x, lane = threadIdx.y, lanes = blockDim.y;
    const i64 s = (i64)blockIdx.x * 32 + col;      // Bp is a multiple of 32
    for (i64 k = blockIdx.y; k < count; k += gridDim.y) {
        const int r = ranks[k];
        const i64 end = up_ptr[r + 1];
        T best = D[(i64)r * Bp + s];
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
        }
        __syncthreads();
    }
}

// out[b * n + v] = D[rank[v] * Bp + b] for b < B and the n output columns v (every
// vertex, or the targets): blocks of 32 x 8 threads move
// 32 x 32 tiles (columns b along x when reading, vertices v along x when writing)
template <typename T>
__device__ __forceinline__ void unpack(
    const T* __restrict__ D, i64 n, i64 Bp, i64 B, const int* __restrict__ rank,
    T* __restrict__ out)
{
    __shared__ T tile[PHAST_TILE][PHAST_TILE + 1];
    const i64 v0 = (i64)blockIdx.x * PHAST_TILE;
    const i64 b0 = (i64)blockIdx.y * PHAST_TILE;
    for (int j = threadIdx.y; j < PHAST_TILE; j += PHAST_TILE_ROWS) {
        const i64 v = v0 + j, b = b0 + threadIdx.x;
        if (v < n && b < B) tile[j][threadIdx.x] = D[(i64)rank[v] * Bp + b];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < PHAST_TILE; j += PHAST_TILE_ROWS) {
        const i64 b = b0 + j, v = v0 + threadIdx.x;
        if (v < n && b < B) out[b * n + v] = tile[threadIdx.x][j];
    }
}

#define PHAST_KERNELS(SUFFIX, T)                                                      \
    extern "C" __global__ void phast_up_##SUFFIX(                                     \
        const int* __restrict__ src_rank, i64 B, i64 Bp, const int* __restrict__ parent, \
        const i64* __restrict__ up_ptr, const int* __restrict__ up_head,              \
        const T* __restrict__ w_up, T* D, T inf, const int* __restrict__ last_up,     \
        int* P)                                                                       \
    {                                                                                 \
        up_walks<T>(src_rank, B, Bp, parent, up_ptr, up_head, w_up, D, inf, last_up, P); \
    }                                                                                 \
    extern "C" __global__ void phast_down_##SUFFIX(                                   \
        const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr, \
        const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,          \
        const int* __restrict__ last_down, int* P)                                    \
    {                                                                                 \
        down_level<T>(ranks, count, Bp, up_ptr, up_head, w_down, D, last_down, P);    \
    }                                                                                 \
    extern "C" __global__ void phast_down_split_##SUFFIX(                             \
        const int* __restrict__ ranks, i64 count, i64 Bp, const i64* __restrict__ up_ptr, \
        const int* __restrict__ up_head, const T* __restrict__ w_down, T* D,          \
        const int* __restrict__ last_down, int* P)                                    \
    {                                                                                 \
        down_level_split<T>(ranks, count, Bp, up_ptr, up_head, w_down, D, last_down, P); \
    }                                                                                 \
    extern "C" __global__ void phast_unpack_##SUFFIX(                                 \
        const T* __restrict__ D, i64 n, i64 Bp, i64 B, const int* __restrict__ rank,  \
        T* __restrict__ out)                                                          \
    {                                                                                 \
        unpack<T>(D, n, Bp, B, rank, out);                                            \
    }

PHAST_KERNELS(f32, float)
PHAST_KERNELS(f64, double)

extern "C" __global__ void phast_unpack_i32(
    const int* __restrict__ P, i64 n, i64 Bp, i64 B, const int* __restrict__ rank,
    int* __restrict__ out)
{
    unpack<int>(P, n, Bp, B, rank, out);
}
