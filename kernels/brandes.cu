// Brandes' betweenness for a batch of sources, from their distances, for mgapsp.
//
// CUDA C++ with no system headers (NVRTC through mgapsp/cuda/brandes.py, the only
// place that launches these; nvcc in tests/test_kernels_compile.py).
//
// Layout.  X[v * Bp + c] is vertex v's entry for batch column c (the batch padded to
// Bp, a multiple of 32): D the distances, P the pending counts, S the path counts,
// Y the dependencies.  O[c * n + i] is column c's i-th settled vertex and
// L[c * (n + 1) + r] where its round r starts; M[(c / 32) * m + e] holds, in bit
// c % 32, whether arc e is tight for column c: D[tail] + w == D[head].
//
//   brandes_nearest  (float weights) the batch's distances lowered to NetworkX's sums.
//   brandes_tight_*  one warp per (vertex u, 32 columns): each arc of u tested for
//                    the 32 columns at once (reads of D coalesced over the columns),
//                    the tight ones counted into their head's P.  A tie is `==` on
//                    the distances, which the searches computed as sums in the
//                    dtype: exact for integers, NetworkX's own floats otherwise
//                    (brandes.py says why).
//   brandes_forward  one block per column: Kahn's order of the shortest-path DAG,
//                    a round at a time from the source.  A settled vertex adds its
//                    path count to each tight arc's head and takes one from the
//                    head's P; the arc that takes the last one settles the head in
//                    the next round.  So a vertex's count is whole when it settles.
//   brandes_backward one block per column: the rounds in reverse, each vertex's
//                    dependency the sum over its tight arcs of
//                    S[u] * ((1 + Y[v]) / S[v]), NetworkX's expression; every head
//                    settled in a later round, so its Y is final.  With E not null
//                    each term is also added to its arc's total.
//
// A vertex with many arcs would hold its block's round: those past HEAVY_DEGREE are
// listed in shared memory and walked by a whole warp after the others.
//
// Reads of what the kernel itself writes (S in forward, Y and O in both) go to L2
// (__ldcg): the columns of one vertex share cache lines, written by blocks on other
// multiprocessors, and L1 is not coherent across them.

typedef long long i64;

#define BRANDES_FULL 0xffffffffu
#define HEAVY_DEGREE 32
#define HEAVY_SLOTS 256

// brandes_nearest: one sweep of Bellman-Ford's relaxations rounded to nearest over
// the batch, as tight_arcs walks it, lowering D in place (distances are non-negative,
// so their bits order as their values and atomicMin on them is a float minimum);
// *changed set where any entry fell.  The searches round their sums up, which with
// non-integer weights puts every distance at or above NetworkX's (left to right,
// to nearest); sweeps from there until none falls end on NetworkX's, the only fixed
// point of positive weights.
extern "C" __global__ void brandes_nearest(
    const i64* __restrict__ indptr, const int* __restrict__ indices,
    const double* __restrict__ w, double* D, i64 n, i64 Bp, int* changed)
{
    const int lane = threadIdx.x & 31;
    const i64 groups = Bp >> 5;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
    bool fell = false;
    for (i64 k = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; k < n * groups;
         k += nwarps) {
        const i64 u = k / groups, g = k - u * groups;
        const i64 c = (g << 5) + lane;
        const double du = __ldcg(&D[u * Bp + c]);
        const i64 hi = indptr[u + 1];
        for (i64 e = indptr[u]; e < hi; ++e) {
            const i64 at = (i64)indices[e] * Bp + c;
            const double cand = du + w[e];
            if (cand < __ldcg(&D[at])) {
                atomicMin((unsigned long long*)&D[at],
                          (unsigned long long)__double_as_longlong(cand));
                fell = true;
            }
        }
    }
    if (fell)
        *changed = 1;
}

template <typename T>
__device__ __forceinline__ void tight_arcs(
    const i64* __restrict__ indptr, const int* __restrict__ indices,
    const T* __restrict__ w, const T* __restrict__ D, T inf, i64 n, i64 Bp, i64 m,
    unsigned* __restrict__ M, int* __restrict__ P)
{
    const int lane = threadIdx.x & 31;
    const i64 groups = Bp >> 5;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
    for (i64 k = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; k < n * groups;
         k += nwarps) {
        const i64 u = k / groups, g = k - u * groups;
        const i64 c = (g << 5) + lane;
        const T du = D[u * Bp + c];
        const bool reached = du != inf;
        const i64 hi = indptr[u + 1];
        for (i64 e = indptr[u]; e < hi; ++e) {
            const i64 v = indices[e];
            const bool t = reached && du + w[e] == D[v * Bp + c];
            const unsigned bits = __ballot_sync(BRANDES_FULL, t);
            if (lane == 0)
                M[g * m + e] = bits;
            if (t)
                atomicAdd(&P[v * Bp + c], 1);
        }
    }
}

extern "C" __global__ void brandes_tight_f32(
    const i64* indptr, const int* indices, const float* w, const float* D, float inf,
    i64 n, i64 Bp, i64 m, unsigned* M, int* P)
{
    tight_arcs<float>(indptr, indices, w, D, inf, n, Bp, m, M, P);
}

extern "C" __global__ void brandes_tight_f64(
    const i64* indptr, const int* indices, const double* w, const double* D, double inf,
    i64 n, i64 Bp, i64 m, unsigned* M, int* P)
{
    tight_arcs<double>(indptr, indices, w, D, inf, n, Bp, m, M, P);
}

// Whether vertex u, of `degree` arcs, is left to a warp after the round's others:
// listed in shared memory while it has room.
__device__ __forceinline__ bool listed_heavy(i64 u, i64 degree, int* heavy, int* n_heavy)
{
    if (degree <= HEAVY_DEGREE)
        return false;
    const int k = atomicAdd(n_heavy, 1);
    if (k >= HEAVY_SLOTS)
        return false;
    heavy[k] = (int)u;
    return true;
}

// Column c's vertex v settles: its count goes to each tight arc's head.
__device__ __forceinline__ void settle_arc(
    i64 e, const int* __restrict__ indices, i64 Bp, i64 c, double su, int* P, double* S,
    int* O, int* tail)
{
    const i64 v = indices[e];
    atomicAdd(&S[v * Bp + c], su);
    if (atomicSub(&P[v * Bp + c], 1) == 1)
        O[atomicAdd(tail, 1)] = (int)v;
}

extern "C" __global__ void brandes_forward(
    const i64* __restrict__ indptr, const int* __restrict__ indices,
    const unsigned* __restrict__ M, i64 n, i64 Bp, i64 m,
    const i64* __restrict__ sources, int* P, double* S, int* O, int* L, int* rounds)
{
    __shared__ int tail, n_heavy;
    __shared__ int heavy[HEAVY_SLOTS];
    const i64 c = blockIdx.x;
    const unsigned bit = 1u << (c & 31);
    const unsigned* __restrict__ Mc = M + (c >> 5) * m;
    int* Oc = O + c * n;
    int* Lc = L + c * (n + 1);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    if (threadIdx.x == 0) {
        const i64 s = sources[c];
        Oc[0] = (int)s;
        S[s * Bp + c] = 1.0;
        Lc[0] = 0;
        tail = 1;
        n_heavy = 0;
    }
    __syncthreads();
    int head = 0, r = 0;
    while (true) {
        const int end = tail;
        __syncthreads();                 // every thread has the round's end
        if (head >= end)
            break;
        for (int i = head + threadIdx.x; i < end; i += blockDim.x) {
            const i64 u = __ldcg(&Oc[i]);
            const i64 lo = indptr[u], hi = indptr[u + 1];
            if (listed_heavy(u, hi - lo, heavy, &n_heavy))
                continue;
            const double su = __ldcg(&S[u * Bp + c]);
            for (i64 e = lo; e < hi; ++e)
                if (Mc[e] & bit)
                    settle_arc(e, indices, Bp, c, su, P, S, Oc, &tail);
        }
        __syncthreads();
        const int listed = min(n_heavy, HEAVY_SLOTS);
        for (int k = warp; k < listed; k += warps) {
            const i64 u = heavy[k];
            const double su = __ldcg(&S[u * Bp + c]);
            const i64 hi = indptr[u + 1];
            for (i64 e = indptr[u] + lane; e < hi; e += 32)
                if (Mc[e] & bit)
                    settle_arc(e, indices, Bp, c, su, P, S, Oc, &tail);
        }
        __syncthreads();
        head = end;
        ++r;
        if (threadIdx.x == 0) {
            Lc[r] = end;
            n_heavy = 0;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        rounds[c] = r;
}

// The dependency of column c's vertex u from its tight arcs [lo, hi), stride `step`.
__device__ __forceinline__ double depend(
    i64 lo, i64 hi, int step, const int* __restrict__ indices,
    const unsigned* __restrict__ Mc, unsigned bit, i64 Bp, i64 c, double su,
    const double* __restrict__ S, const double* Y, double* E)
{
    double acc = 0.0;
    for (i64 e = lo; e < hi; e += step) {
        if (!(Mc[e] & bit))
            continue;
        const i64 v = indices[e];
        const double t = su * ((1.0 + __ldcg(&Y[v * Bp + c])) / S[v * Bp + c]);
        acc += t;
        if (E)
            atomicAdd(&E[e], t);
    }
    return acc;
}

extern "C" __global__ void brandes_backward(
    const i64* __restrict__ indptr, const int* __restrict__ indices,
    const unsigned* __restrict__ M, i64 n, i64 Bp, i64 m,
    const i64* __restrict__ sources, const double* __restrict__ S, double* Y,
    const int* __restrict__ O, const int* __restrict__ L, const int* __restrict__ rounds,
    double* E)
{
    __shared__ int n_heavy;
    __shared__ int heavy[HEAVY_SLOTS];
    const i64 c = blockIdx.x;
    const unsigned bit = 1u << (c & 31);
    const unsigned* __restrict__ Mc = M + (c >> 5) * m;
    const int* __restrict__ Oc = O + c * n;
    const int* __restrict__ Lc = L + c * (n + 1);
    const i64 s = sources[c];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    if (threadIdx.x == 0)
        n_heavy = 0;
    __syncthreads();
    for (int r = rounds[c] - 1; r >= 0; --r) {
        const int first = Lc[r], end = Lc[r + 1];
        for (int i = first + threadIdx.x; i < end; i += blockDim.x) {
            const i64 u = Oc[i];
            const i64 lo = indptr[u], hi = indptr[u + 1];
            if (listed_heavy(u, hi - lo, heavy, &n_heavy))
                continue;
            const double acc = depend(lo, hi, 1, indices, Mc, bit, Bp, c, S[u * Bp + c],
                                      S, Y, E);
            Y[u * Bp + c] = u == s ? 0.0 : acc;
        }
        __syncthreads();
        const int listed = min(n_heavy, HEAVY_SLOTS);
        for (int k = warp; k < listed; k += warps) {
            const i64 u = heavy[k];
            double acc = depend(indptr[u] + lane, indptr[u + 1], 32, indices, Mc, bit, Bp,
                                c, S[u * Bp + c], S, Y, E);
            for (int d = 16; d > 0; d >>= 1)
                acc += __shfl_down_sync(BRANDES_FULL, acc, d);
            if (lane == 0)
                Y[u * Bp + c] = u == s ? 0.0 : acc;
        }
        __syncthreads();
        if (threadIdx.x == 0)
            n_heavy = 0;
        __syncthreads();
    }
}
