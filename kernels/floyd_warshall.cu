// Blocked (tiled) Floyd-Warshall for dense graphs, for mgapsp.
//
// Self-contained CUDA C++: no #include, so the same file compiles under NVRTC (CuPy
// RawModule, loaded by mgapsp/cuda/fw.py, the only place that launches these) and
// under `nvcc -arch=sm_90 -c` (tests/test_kernels_compile.py).
//
// The matrix.  D is n x n, row-major with a row stride of `lda` elements.  Four
// element types ("methods"):
//   f32   float,  +inf = no path, sums rounded toward +inf (__fadd_ru), as in
//         bellman_ford.cu, so that rounding never makes a cycle look negative;
//   f64   double, likewise (__dadd_ru);
//   i32   int,    INF = FW_INF_I32 = 2^30 - 1; DPX __viaddmin_s32 (min(a + b, c));
//   i16   short,  INF = FW_INF_I16 = 2^14 - 1; two adjacent columns packed in one
//         32-bit word and updated by one DPX __viaddmin_s16x2 (two int16 lanes).
// With the integer sentinels a stored value never exceeds INF, so a + b <= 2 INF never
// overflows; the host (fw.py) only picks an integer method when distances provably
// stay far from INF (see choose_fw_method there).  Any n: tiles past the edge read
// clamped (duplicated) rows and columns, and only elements < n are stored.
//
// Everything below works on "words": one element (f32, f64, i32) or a pair of
// adjacent int16 elements (i16; then lda must be even and D 4-byte aligned, and for
// odd n the word holding column n-1 also reads column n, which must exist: lda > n).
//
// One pivot block K = [K0, K0 + B) per round, four launches (fw.py's loop):
//   fw_p1_*   phase 1: the B x B diagonal tile, classic FW by one block (in registers;
//             with predecessors in shared memory).
//   fw_pack_* copies the column panel D[:, K] transposed into At (B x Mpad words,
//             At[k][i] = D[i][K0 + k]; for i16 each value duplicated into both lanes,
//             so it is the "a" operand of a packed update as is), and the row panel
//             D[K, :] into Rw (and P[K, :] into Prw): a snapshot that phase 2 reads.
//   fw_mp_*   mode 2 (phase 2): the row panel D[K, J] and the column panel D[I, K].
//             Once the diagonal tile is closed (D* = its shortest paths), running the
//             pivots of K over a panel equals one min-plus product:
//                 D[K, J] = min(D[K, J], D* (x) D[K, J])    (B operand: the snapshot)
//                 D[I, K] = min(D[I, K], D[I, K] (x) D*)    (A operand: At, packed)
//             so phase 2 is the same register-tiled kernel as phase 3.  Column-panel
//             blocks also write their new values into At, for phase 3.
//             mode 3 (phase 3): every other tile, D[I, J] = min(D[I, J], At (x) D[K, J]).
// Rows across devices (fw.py's floyd_warshall_slab): a rank holds rows [rlo, rhi) of D,
// addressed by global row (the host passes D and At shifted back by rlo rows), slab
// boundaries multiples of B.  fw_pack transposes only those rows; fw_mp_* takes the
// rows and the B operand of the column panel and of phase 3 as arguments (rlo, rhi,
// Kp = rows K of D, or the pivot rows received from their owner, pitch kpp words),
// and two more modes split phase 2: mode 4 the row panel alone (on the owner, before
// it broadcasts rows K), mode 5 the column panel alone (every rank, after).  On one
// device rlo = 0, rhi = n and Kp = D + K0 * lda.
// The min-plus kernel: a BM x BNW-word output tile per block of 256 threads, TM x TNW
// words per thread (rows ty*VEC + g*BM/MG, columns tx*VEC + g*BNW/NG, VEC words = 16
// bytes, so every shared-memory read is one 16-byte load), k staged through shared
// memory in slabs of KS with cp.async, STAGES deep.  The C tile is read into registers
// first, min-ed in place over all k of the pivot block, and written once.
//
// Predecessors (the *_p kernels, one element per word): P[i][j] = vertex before j on a
// shortest path from i, -1 none, and H[i][j] = its number of edges.  Candidates
// compare lexicographically on (distance, hops): a block-wide product picks among
// equally short paths per entry, and without the hop count two entries of a row
// could point into each other around a zero-weight cycle; with it every row of P is
// a tree (hops fall by one along each predecessor).  When (D, H)[i][j] improves
// through pivot k, P[i][j] = P[k][j] (phase 1 as in classic FW; in the products the
// first best k, P[k][j] read from the B operand's rows: Prw in the row panel, the
// diagonal tile in the column panel, the final row panel in phase 3).  Entries with
// no path may pick up junk predecessors; fw.py resets those to -1.  The phase-1
// tile without predecessors lives in registers (fw_phase1_reg).
//
// Negative cycles: values only ever decrease, and a candidate that overflows (int)
// wraps to a large positive value that never wins, so a diagonal that went negative
// stays negative; the host checks the diagonal afterwards.

typedef long long i64;
typedef unsigned int u32;
typedef unsigned long long u64;

#define FW_INF_I32 0x3fffffff
#define FW_INF_I16 0x3fff
#define FW_MP_THREADS 256
#define FW_PACK_THREADS 256

extern __shared__ __align__(16) unsigned char fw_smem[];

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ i64 lmin(i64 a, i64 b) { return a < b ? a : b; }

// ---------------------------------------------------------------------------------
// cp.async (sm_80+), with a synchronous fallback elsewhere
// ---------------------------------------------------------------------------------
__device__ __forceinline__ u32 smem_u32(const void* p)
{
    u32 a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }"
                 : "=r"(a) : "l"(p));
    return a;
}

template <int BYTES>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem)
{
#if __CUDA_ARCH__ >= 800
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                     :: "r"(smem_u32(smem)), "l"(gmem) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;"
                     :: "r"(smem_u32(smem)), "l"(gmem), "n"(BYTES) : "memory");
#else
    if (BYTES == 16) *(uint4*)smem = *(const uint4*)gmem;
    else if (BYTES == 8) *(u64*)smem = *(const u64*)gmem;
    else *(u32*)smem = *(const u32*)gmem;
#endif
}

__device__ __forceinline__ void cp_async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#endif
}

// 16-byte vector access to an array of words
template <class W>
union V16 {
    uint4 q;
    W w[16 / sizeof(W)];
};

template <class W>
__device__ __forceinline__ void load16(const W* p, W* out)
{
    V16<W> v;
    v.q = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(W)); ++i) out[i] = v.w[i];
}

template <class W>
__device__ __forceinline__ void store16(W* p, const W* in)
{
    V16<W> v;
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(W)); ++i) v.w[i] = in[i];
    *reinterpret_cast<uint4*>(p) = v.q;
}

// ---------------------------------------------------------------------------------
// element types
// ---------------------------------------------------------------------------------
struct OpF32 {
    typedef float T;
    typedef float W;
    enum { EPW = 1, PAIR = 0 };
    static __device__ __forceinline__ W inf_word() { return __int_as_float(0x7f800000); }
    static __device__ __forceinline__ W add(W a, W b) { return __fadd_ru(a, b); }
    static __device__ __forceinline__ W addmin(W a, W b, W c) { return fminf(__fadd_ru(a, b), c); }
    static __device__ __forceinline__ bool less(W a, W b) { return a < b; }
    static __device__ __forceinline__ W a_word(T x) { return x; }
    static __device__ __forceinline__ W a_lane(W w, int) { return w; }
    static __device__ __forceinline__ W fix_tail(W w, int) { return w; }
    static __device__ __forceinline__ void store_tail(T* D, i64 off, W w) { D[off] = w; }
};

struct OpF64 {
    typedef double T;
    typedef double W;
    enum { EPW = 1, PAIR = 0 };
    static __device__ __forceinline__ W inf_word() { return __longlong_as_double(0x7ff0000000000000LL); }
    static __device__ __forceinline__ W add(W a, W b) { return __dadd_ru(a, b); }
    static __device__ __forceinline__ W addmin(W a, W b, W c) { return fmin(__dadd_ru(a, b), c); }
    static __device__ __forceinline__ bool less(W a, W b) { return a < b; }
    static __device__ __forceinline__ W a_word(T x) { return x; }
    static __device__ __forceinline__ W a_lane(W w, int) { return w; }
    static __device__ __forceinline__ W fix_tail(W w, int) { return w; }
    static __device__ __forceinline__ void store_tail(T* D, i64 off, W w) { D[off] = w; }
};

struct OpI32 {
    typedef int T;
    typedef int W;
    enum { EPW = 1, PAIR = 0 };
    static __device__ __forceinline__ W inf_word() { return FW_INF_I32; }
    static __device__ __forceinline__ W add(W a, W b) { return a + b; }
    static __device__ __forceinline__ W addmin(W a, W b, W c)
    {
#if __CUDA_ARCH__ >= 900
        return __viaddmin_s32(a, b, c);          // one VIADDMNMX
#else
        int s = a + b;
        return s < c ? s : c;
#endif
    }
    static __device__ __forceinline__ bool less(W a, W b) { return a < b; }
    static __device__ __forceinline__ W a_word(T x) { return x; }
    static __device__ __forceinline__ W a_lane(W w, int) { return w; }
    static __device__ __forceinline__ W fix_tail(W w, int) { return w; }
    static __device__ __forceinline__ void store_tail(T* D, i64 off, W w) { D[off] = w; }
};

// float32 when every value is >= 0 (non-negative weights): such floats order as their
// bit patterns do as ints, so two pivots fold into one DPX 3-way min (VIMNMX3):
// c = min(c, a0 + b0, a1 + b1), three instructions for two updates instead of four
// (FADD + FMNMX each).  Same sums (rounded up), same results as OpF32.
struct OpF32NonNeg : OpF32 {
    enum { EPW = 1, PAIR = 1 };
    static __device__ __forceinline__ W addmin2(W a0, W b0, W a1, W b1, W c)
    {
#if __CUDA_ARCH__ >= 900
        return __int_as_float(__vimin3_s32(__float_as_int(c), __float_as_int(__fadd_ru(a0, b0)),
                                           __float_as_int(__fadd_ru(a1, b1))));
#else
        return fminf(fminf(__fadd_ru(a0, b0), __fadd_ru(a1, b1)), c);
#endif
    }
};

// two int16 lanes: the low half is the even column
struct OpI16x2 {
    typedef short T;
    typedef u32 W;
    enum { EPW = 2, PAIR = 0 };
    static __device__ __forceinline__ W inf_word() { return (FW_INF_I16 << 16) | FW_INF_I16; }
    static __device__ __forceinline__ W add(W a, W b) { return __vadd2(a, b); }
    static __device__ __forceinline__ W addmin(W a, W b, W c)
    {
#if __CUDA_ARCH__ >= 900
        return __viaddmin_s16x2(a, b, c);        // one VIADDMNMX, two lanes
#else
        return __vmins2(__vadd2(a, b), c);
#endif
    }
    static __device__ __forceinline__ bool less(W a, W b) { return false; }  // unused
    // an A operand: one element, duplicated into both lanes
    static __device__ __forceinline__ W a_word(T x) { return __byte_perm((u32)(unsigned short)x, 0u, 0x1010); }
    static __device__ __forceinline__ W a_lane(W w, int lane) { return __byte_perm(w, 0u, lane ? 0x3232 : 0x1010); }
    // a word whose high lane lies past column n-1: make that lane INF
    static __device__ __forceinline__ W fix_tail(W w, int valid)
    {
        return valid >= 2 ? w : ((w & 0xffffu) | ((u32)FW_INF_I16 << 16));
    }
    static __device__ __forceinline__ void store_tail(T* D, i64 off, W w) { D[off] = (short)(w & 0xffffu); }
};

// small int vectors for the hop counts (N = 4: 16 bytes, N = 2: 8 bytes)
template <int N>
__device__ __forceinline__ void loadi(const int* p, int* out)
{
    if (N == 4) {
        const int4 q = *reinterpret_cast<const int4*>(p);
        out[0] = q.x; out[1] = q.y; out[2] = q.z; out[3] = q.w;
    } else {
        const int2 q = *reinterpret_cast<const int2*>(p);
        out[0] = q.x; out[1] = q.y;
    }
}

template <int N>
__device__ __forceinline__ void storei(int* p, const int* in)
{
    if (N == 4) *reinterpret_cast<int4*>(p) = make_int4(in[0], in[1], in[2], in[3]);
    else *reinterpret_cast<int2*>(p) = make_int2(in[0], in[1]);
}

// two pivots at once where the element type can (OpF32NonNeg), else one after the other
template <class Op>
__device__ __forceinline__ typename Op::W pair_addmin(typename Op::W a0, typename Op::W b0,
                                                      typename Op::W a1, typename Op::W b1,
                                                      typename Op::W c, int (*)[Op::PAIR + 1] = 0)
{
    return Op::addmin(a1, b1, Op::addmin(a0, b0, c));
}

template <>
__device__ __forceinline__ float pair_addmin<OpF32NonNeg>(float a0, float b0, float a1,
                                                          float b1, float c, int (*)[2])
{
    return OpF32NonNeg::addmin2(a0, b0, a1, b1, c);
}

// (d, h) better than (cd, ch): lexicographic, distance first, then hop count
template <class Op>
__device__ __forceinline__ bool lex_less(typename Op::W d, int h, typename Op::W cd, int ch)
{
    return Op::less(d, cd) || (d == cd && h < ch);
}

// ---------------------------------------------------------------------------------
// phase 1: the diagonal tile [K0, K0+B)^2, classic FW in shared memory (one block).
// With predecessors (WP) the tile's P and hop counts H ride along in shared memory.
// ---------------------------------------------------------------------------------
template <class Op, int B, bool WP, int NT>
__device__ __forceinline__ void fw_phase1(typename Op::T* D, i64 lda, int* P, i64 ldp,
                                          int* H, i64 ldh, int n, int K0)
{
    typedef typename Op::T T;
    typedef typename Op::W W;
    enum { EPW = Op::EPW, BW = B / EPW, VEC = 16 / sizeof(W), NG = BW / VEC,
           RSTEP = NT / NG, RPT = B / RSTEP };
    static_assert(B % EPW == 0 && BW % VEC == 0, "tile shape");
    static_assert(NT % NG == 0 && B % RSTEP == 0, "thread shape");
    static_assert(!WP || EPW == 1, "predecessors need one element per word");

    W* Ts = reinterpret_cast<W*>(fw_smem);
    int* Ps = reinterpret_cast<int*>(Ts + B * BW);
    int* Hs = Ps + B * B;
    const int tid = threadIdx.x;
    const int kc = imin(B, n - K0);
    const i64 ldw = lda / EPW;
    W* Wd = reinterpret_cast<W*>(D);

    for (int idx = tid; idx < B * BW; idx += NT) {
        const int r = idx / BW, c = idx % BW;
        W v = Op::inf_word();
        if (r < kc && c * EPW < kc)
            v = Op::fix_tail(Wd[(i64)(K0 + r) * ldw + K0 / EPW + c], kc - c * EPW);
        Ts[idx] = v;
        if (WP) {
            const bool in = r < kc && c < kc;
            Ps[idx] = in ? P[(i64)(K0 + r) * ldp + K0 + c] : -1;
            Hs[idx] = in ? H[(i64)(K0 + r) * ldh + K0 + c] : 0;
        }
    }
    __syncthreads();

    const int g = tid % NG, r0 = tid / NG;
    const T* te = reinterpret_cast<const T*>(Ts);
    for (int k = 0; k < kc; ++k) {
        W b[VEC];
        int bh[VEC];
        load16(Ts + k * BW + g * VEC, b);
        if (WP) loadi<VEC>(Hs + k * B + g * VEC, bh);
#pragma unroll
        for (int m = 0; m < RPT; ++m) {
            const int r = r0 + m * RSTEP;
            const W a = Op::a_word(te[r * B + k]);
            W c[VEC];
            load16(Ts + r * BW + g * VEC, c);
            if (!WP) {
#pragma unroll
                for (int v = 0; v < VEC; ++v) c[v] = Op::addmin(a, b[v], c[v]);
                store16(Ts + r * BW + g * VEC, c);
            } else {
                const int ah = Hs[r * B + k];
                int ch[VEC];
                loadi<VEC>(Hs + r * B + g * VEC, ch);
                bool changed = false;
#pragma unroll
                for (int v = 0; v < VEC; ++v) {
                    const W cand = Op::add(a, b[v]);
                    const int hc = ah + bh[v];
                    if (lex_less<Op>(cand, hc, c[v], ch[v])) {
                        c[v] = cand;
                        ch[v] = hc;
                        Ps[r * B + g * VEC + v] = Ps[k * B + g * VEC + v];
                        changed = true;
                    }
                }
                if (changed) {
                    store16(Ts + r * BW + g * VEC, c);
                    storei<VEC>(Hs + r * B + g * VEC, ch);
                }
            }
        }
        __syncthreads();
    }

    for (int idx = tid; idx < B * BW; idx += NT) {
        const int r = idx / BW, c = idx % BW;
        if (r < kc && c * EPW < kc) {
            const i64 row = K0 + r;
            if (EPW == 1 || c * EPW + 1 < kc) Wd[row * ldw + K0 / EPW + c] = Ts[idx];
            else Op::store_tail(D, row * lda + K0 + c * EPW, Ts[idx]);
            if (WP) {
                P[row * ldp + K0 + c] = Ps[idx];
                H[row * ldh + K0 + c] = Hs[idx];
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// phase 1 without predecessors: the tile lives in registers (each thread RPT rows x
// VEC words); per pivot k the owners of row k and of column k put them in shared
// memory (double-buffered, so one barrier per pivot) and every thread updates its part.
// ---------------------------------------------------------------------------------
template <class Op, int B, int NT>
__device__ __forceinline__ void fw_phase1_reg(typename Op::T* D, i64 lda, int n, int K0)
{
    typedef typename Op::W W;
    enum { EPW = Op::EPW, BW = B / EPW, VEC = 16 / sizeof(W), NG = BW / VEC,
           RSTEP = NT / NG, RPT = B / RSTEP };
    static_assert(B % EPW == 0 && BW % VEC == 0, "tile shape");
    static_assert(NT % NG == 0 && B % RSTEP == 0, "thread shape");

    W* rowbuf = reinterpret_cast<W*>(fw_smem);       // [2][BW] words of row k
    W* colbuf = rowbuf + 2 * BW;                     // [2][B] A words of column k
    const int tid = threadIdx.x;
    const int g = tid % NG, r0 = tid / NG;
    const int kc = imin(B, n - K0);
    const i64 ldw = lda / EPW;
    W* Wd = reinterpret_cast<W*>(D);

    W c[RPT][VEC];
#pragma unroll
    for (int m = 0; m < RPT; ++m)
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
            const int r = r0 + m * RSTEP, cw = g * VEC + v;
            c[m][v] = (r < kc && cw * EPW < kc)
                ? Op::fix_tail(Wd[(i64)(K0 + r) * ldw + K0 / EPW + cw], kc - cw * EPW)
                : Op::inf_word();
        }

    for (int k = 0; k < kc; ++k) {
        W* rb = rowbuf + (k & 1) * BW;
        W* cb = colbuf + (k & 1) * B;
        if (r0 == k % RSTEP) {
            const int mk = k / RSTEP;
#pragma unroll
            for (int m = 0; m < RPT; ++m)
                if (m == mk) store16(rb + g * VEC, c[m]);
        }
        if (g == (k / EPW) / VEC) {
            const int vk = (k / EPW) % VEC, lane = k % EPW;
#pragma unroll
            for (int m = 0; m < RPT; ++m) {
                W x = c[m][0];
#pragma unroll
                for (int v = 1; v < VEC; ++v)
                    if (v == vk) x = c[m][v];
                cb[r0 + m * RSTEP] = Op::a_lane(x, lane);
            }
        }
        __syncthreads();
        W b[VEC];
        load16(rb + g * VEC, b);
#pragma unroll
        for (int m = 0; m < RPT; ++m) {
            const W a = cb[r0 + m * RSTEP];
#pragma unroll
            for (int v = 0; v < VEC; ++v) c[m][v] = Op::addmin(a, b[v], c[m][v]);
        }
    }

#pragma unroll
    for (int m = 0; m < RPT; ++m)
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
            const int r = r0 + m * RSTEP, cw = g * VEC + v;
            if (r < kc && cw * EPW < kc) {
                const i64 row = K0 + r;
                if (EPW == 1 || cw * EPW + 1 < kc) Wd[row * ldw + K0 / EPW + cw] = c[m][v];
                else Op::store_tail(D, row * lda + K0 + cw * EPW, c[m][v]);
            }
        }
}

// ---------------------------------------------------------------------------------
// pack: At[k][i] = a_word(D[min(i, rhi-1)][min(K0+k, n-1)]) for k < B and the Mpad rows
// i = rlo, rlo + 1, ... (a multiple of 32; At is addressed by global row: on a slab
// the host passes a pointer to "row 0" of its buffer); and, when the grid covers it,
// the snapshot
// Rw[k][w] = word w of row min(K0+k, n-1).  With predecessors also
// AtH (transposed hop counts, pitch atp) and the snapshots Prw, RwH (pitch prwp).
// ---------------------------------------------------------------------------------
template <class T, class W, class F>
__device__ __forceinline__ void transpose_tile(const T* D, i64 lda, int n, int rhi, int K0,
                                               int i0, int k0, W* At, i64 atp, T (*tile)[33],
                                               F conv)
{
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;   // 32 x 8
    const i64 kcol = imin(K0 + k0 + tx, n - 1);
#pragma unroll
    for (int r = 0; r < 32; r += 8) {
        const i64 i = imin(i0 + ty + r, rhi - 1);
        tile[ty + r][tx] = D[i * lda + kcol];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 32; r += 8)
        At[(i64)(k0 + ty + r) * atp + i0 + tx] = conv(tile[tx][ty + r]);
}

template <class Op, bool WP>
__device__ __forceinline__ void fw_pack(const typename Op::T* D, i64 lda, const int* P,
                                        i64 ldp, const int* H, i64 ldh, int n, int rlo,
                                        int rhi, int K0, int B, int Mpad,
                                        typename Op::W* At, i64 atp,
                                        typename Op::W* Rw, i64 rwp, int* Prw, i64 prwp,
                                        int* AtH, int* RwH)
{
    typedef typename Op::T T;
    typedef typename Op::W W;
    enum { EPW = Op::EPW };
    __shared__ T tile[32][33];
    __shared__ int tileh[WP ? 32 : 1][33];
    const int ntiles_i = Mpad / 32;
    const int nA = ntiles_i * (B / 32);
    int b = blockIdx.x;
    if (b < nA) {
        transpose_tile(D, lda, n, rhi, K0, rlo + (b % ntiles_i) * 32, (b / ntiles_i) * 32,
                       At, atp, tile,
                       [](T x) { return Op::a_word(x); });
        return;
    }
    b -= nA;
    if (WP) {
        if (b < nA) {
            transpose_tile(H, ldh, n, rhi, K0, rlo + (b % ntiles_i) * 32, (b / ntiles_i) * 32,
                           AtH, atp,
                           reinterpret_cast<int (*)[33]>(tileh), [](int x) { return x; });
            return;
        }
        b -= nA;
    }
    const int nw = (n + EPW - 1) / EPW;
    const i64 ldw = lda / EPW;
    const W* Wd = reinterpret_cast<const W*>(D);
    const i64 totw = (i64)B * nw;
    const i64 totn = (i64)B * n;
    const i64 tot = totw + (WP ? 2 * totn : 0);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const i64 e = ((i64)b * 4 + r) * FW_PACK_THREADS + threadIdx.x;
        if (e < totw) {
            const int k = (int)(e / nw), w = (int)(e % nw);
            Rw[(i64)k * rwp + w] = Wd[(i64)imin(K0 + k, n - 1) * ldw + w];
        } else if (e < tot) {
            const i64 f = (e - totw) % totn;
            const int k = (int)(f / n), j = (int)(f % n);
            const i64 src = (i64)imin(K0 + k, n - 1);
            if (e - totw < totn) Prw[(i64)k * prwp + j] = P[src * ldp + j];
            else RwH[(i64)k * prwp + j] = H[src * ldh + j];
        }
    }
}

// ---------------------------------------------------------------------------------
// the min-plus product (phases 2 and 3)
// ---------------------------------------------------------------------------------
template <class Op, int B, int BM, int BNW, int TM, int TNW, int KS, int STAGES, int KU, bool WP>
__device__ __forceinline__ void fw_minplus(typename Op::T* D, i64 lda, int* P, i64 ldp,
                                           int* H, i64 ldh, int n, int K0,
                                           typename Op::W* At, i64 atp,
                                           const typename Op::W* Rw, i64 rwp,
                                           const int* Prw, i64 prwp, int* AtH,
                                           const int* RwH, int rlo, int rhi,
                                           const typename Op::W* Kp, i64 kpp, int mode)
{
    typedef typename Op::T T;
    typedef typename Op::W W;
    enum {
        EPW = Op::EPW, VEC = 16 / sizeof(W), TX = BNW / TNW, TY = BM / TM,
        MG = TM / VEC, NG = TNW / VEC, RSTEP = BM / MG, CSTEP = BNW / NG,
        A_CHUNKS = KS * BM / VEC, B_CHUNKS = KS * BNW / VEC
    };
    static_assert(TX * TY == FW_MP_THREADS, "256 threads");
    static_assert(TM % VEC == 0 && TNW % VEC == 0, "thread tile in 16-byte vectors");
    static_assert(B % BM == 0 && B % (BNW * EPW) == 0, "tiles divide the pivot block");
    static_assert(B % KS == 0 && KS % KU == 0, "slabs");
    static_assert(A_CHUNKS % FW_MP_THREADS == 0 && (KS * BNW) % FW_MP_THREADS == 0, "loads");
    static_assert(!WP || EPW == 1, "predecessors need one element per word");

    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const i64 ldw = lda / EPW;
    const int nw = (n + EPW - 1) / EPW, nwfull = n / EPW;
    const int kc = imin(B, n - K0);
    W* Wd = reinterpret_cast<W*>(D);

    // which output tile, and where its B operand (rows K of D, or the snapshot) is
    int i0, j0w;
    const W* Bsrc;
    i64 bp;
    const int* Psrc;
    const int* Hsrc;
    i64 pp, hp;
    bool write_at = false;
    if (mode == 3) {
        i0 = rlo + blockIdx.y * BM;
        j0w = blockIdx.x * BNW;
        if (i0 >= K0 && i0 < K0 + B) return;
        if (j0w * EPW >= K0 && j0w * EPW < K0 + B) return;
        Bsrc = Kp; bp = kpp;
        Psrc = P + (i64)K0 * ldp; pp = ldp;
        Hsrc = H + (i64)K0 * ldh; hp = ldh;
    } else {
        const int ntj = (nw + BNW - 1) / BNW;
        const int nrow = mode == 5 ? 0 : (B / BM) * ntj;
        int b = blockIdx.x;
        if (b < nrow) {                       // row panel D[K, J]
            i0 = K0 + (b / ntj) * BM;
            j0w = (b % ntj) * BNW;
            if (i0 >= n) return;
            if (j0w * EPW >= K0 && j0w * EPW < K0 + B) return;
            Bsrc = Rw; bp = rwp;
            Psrc = Prw; pp = prwp;
            Hsrc = RwH; hp = prwp;
        } else {                              // column panel D[I, K]
            b -= nrow;
            if (mode == 4) return;
            const int ncb = B / (BNW * EPW);
            i0 = rlo + (b / ncb) * BM;
            j0w = K0 / EPW + (b % ncb) * BNW;
            if (i0 >= K0 && i0 < K0 + B) return;
            if (i0 >= rhi || j0w >= nw) return;
            Bsrc = Kp; bp = kpp;
            Psrc = P + (i64)K0 * ldp; pp = ldp;
            Hsrc = H + (i64)K0 * ldh; hp = ldh;
            write_at = true;
        }
    }

    W* As = reinterpret_cast<W*>(fw_smem);
    W* Bs = As + STAGES * KS * BM;
    int* Ahs = reinterpret_cast<int*>(Bs + STAGES * KS * BNW);   // WP only
    int* Bhs = Ahs + STAGES * KS * BM;

    // the C tile, into registers
    W acc[TM][TNW];
    int kid[WP ? TM : 1][WP ? TNW : 1];
    int acch[WP ? TM : 1][WP ? TNW : 1];
    const bool cvec = !WP && (ldw % VEC == 0) && (((u64)Wd & 15) == 0) && (i0 + BM <= rhi)
                      && (j0w + BNW <= nwfull);
#pragma unroll
    for (int gm = 0; gm < MG; ++gm)
#pragma unroll
        for (int vm = 0; vm < VEC; ++vm) {
            const int mi = gm * VEC + vm;
            const i64 row = imin(i0 + gm * RSTEP + ty * VEC + vm, rhi - 1);
#pragma unroll
            for (int gn = 0; gn < NG; ++gn) {
                const int col0 = j0w + gn * CSTEP + tx * VEC;
                if (cvec) {
                    load16(Wd + row * ldw + col0, &acc[mi][gn * VEC]);
                } else {
#pragma unroll
                    for (int vn = 0; vn < VEC; ++vn) {
                        const int col = imin(col0 + vn, nw - 1);
                        acc[mi][gn * VEC + vn] = Wd[row * ldw + col];
                        if (WP) {
                            acch[WP ? mi : 0][WP ? gn * VEC + vn : 0] = H[row * ldh + col];
                            kid[WP ? mi : 0][WP ? gn * VEC + vn : 0] = -1;
                        }
                    }
                }
            }
        }

    // cp.async descriptors, fixed per thread: pass m of a slab copies A row
    // a_k + m * A_KSTEP and B row b_k + m * B_KSTEP (B rows clamped to the last real one)
    enum {
        A_PER_ROW = BM / VEC, A_KSTEP = FW_MP_THREADS / A_PER_ROW, A_PASSES = KS / A_KSTEP,
        BV_PER_ROW = BNW / VEC, BV_KSTEP = FW_MP_THREADS / BV_PER_ROW, BV_PASSES = KS / BV_KSTEP,
        BS_KSTEP = FW_MP_THREADS / BNW, BS_PASSES = KS / BS_KSTEP,
        AH_PER_ROW = BM / 4, AH_KSTEP = FW_MP_THREADS / AH_PER_ROW,
        AH_PASSES = WP ? KS / AH_KSTEP : 0
    };
    static_assert(FW_MP_THREADS % A_PER_ROW == 0 && KS % A_KSTEP == 0, "A loads");
    static_assert(FW_MP_THREADS % BV_PER_ROW == 0 && KS % BV_KSTEP == 0, "B loads");
    static_assert(FW_MP_THREADS % BNW == 0 && KS % BS_KSTEP == 0, "B loads");
    static_assert(!WP || (FW_MP_THREADS % AH_PER_ROW == 0 && KS % AH_KSTEP == 0), "A hops");
    const bool bvec = (bp % VEC == 0) && (((u64)Bsrc & 15) == 0) && (j0w + BNW <= nw);
    const int a_k = tid / A_PER_ROW;
    const W* a_src = At + (i64)a_k * atp + i0 + (tid % A_PER_ROW) * VEC;
    const int a_dst = a_k * BM + (tid % A_PER_ROW) * VEC;
    const int b_k = bvec ? tid / BV_PER_ROW : tid / BNW;
    const int b_j = bvec ? (tid % BV_PER_ROW) * VEC : tid % BNW;
    const W* b_src = Bsrc + (bvec ? j0w + b_j : imin(j0w + b_j, nw - 1));
    const int b_dst = b_k * BNW + b_j;
    // hop counts (WP): A from AtH in 16-byte pieces, B element by element like b_src
    const int ah_k = tid / AH_PER_ROW;
    const int* ah_src = AtH + (i64)ah_k * atp + i0 + (tid % AH_PER_ROW) * 4;
    const int ah_dst = ah_k * BM + (tid % AH_PER_ROW) * 4;
    const int bh_k = tid / BNW, bh_j = tid % BNW;
    const int* bh_src = Hsrc + imin(j0w + bh_j, nw - 1);
    const int nslab = (kc + KS - 1) / KS;

    const i64 a_step = (i64)A_KSTEP * atp;
    const i64 b_step = (i64)(bvec ? BV_KSTEP : BS_KSTEP) * bp;
    auto load_slab = [&](int st, int s) {
        const int k0 = s * KS;
        W* as = As + st * KS * BM + a_dst;
        const W* ag = a_src + (i64)k0 * atp;
#pragma unroll
        for (int m = 0; m < A_PASSES; ++m, ag += a_step)
            cp_async<16>(as + m * A_KSTEP * BM, ag);
        W* bs = Bs + st * KS * BNW + b_dst;
        if (k0 + KS <= kc) {                  // every row of the slab is a real one
            const W* bg = b_src + (i64)(k0 + b_k) * bp;
            if (bvec) {
#pragma unroll
                for (int m = 0; m < BV_PASSES; ++m, bg += b_step)
                    cp_async<16>(bs + m * BV_KSTEP * BNW, bg);
            } else {
#pragma unroll
                for (int m = 0; m < BS_PASSES; ++m, bg += b_step)
                    cp_async<sizeof(W)>(bs + m * BS_KSTEP * BNW, bg);
            }
        } else {                              // the last, partial slab: clamp rows
            if (bvec) {
#pragma unroll
                for (int m = 0; m < BV_PASSES; ++m)
                    cp_async<16>(bs + m * BV_KSTEP * BNW,
                                 b_src + (i64)imin(k0 + b_k + m * BV_KSTEP, kc - 1) * bp);
            } else {
#pragma unroll
                for (int m = 0; m < BS_PASSES; ++m)
                    cp_async<sizeof(W)>(bs + m * BS_KSTEP * BNW,
                                        b_src + (i64)imin(k0 + b_k + m * BS_KSTEP, kc - 1) * bp);
            }
        }
        if (WP) {
            int* ahs = Ahs + st * KS * BM + ah_dst;
#pragma unroll
            for (int m = 0; m < AH_PASSES; ++m)
                cp_async<16>(ahs + m * AH_KSTEP * BM, ah_src + (i64)(k0 + m * AH_KSTEP) * atp);
            int* bhs = Bhs + st * KS * BNW + bh_k * BNW + bh_j;
#pragma unroll
            for (int m = 0; m < BS_PASSES; ++m)
                cp_async<4>(bhs + m * BS_KSTEP * BNW,
                            bh_src + (i64)imin(k0 + bh_k + m * BS_KSTEP, kc - 1) * hp);
        }
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nslab) load_slab(s, s);
        cp_async_commit();
    }

    for (int s = 0; s < nslab; ++s) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        {
            const int nx = s + STAGES - 1;
            if (nx < nslab) load_slab(nx % STAGES, nx);
            cp_async_commit();
        }
        const W* as = As + (s % STAGES) * KS * BM + ty * VEC;
        const W* bs = Bs + (s % STAGES) * KS * BNW + tx * VEC;
        const int* ahs = Ahs + (s % STAGES) * KS * BM + ty * VEC;
        const int* bhs = Bhs + (s % STAGES) * KS * BNW + tx * VEC;
#pragma unroll 1
        for (int k1 = 0; k1 < KS; k1 += KU) {
#pragma unroll
            for (int u = 0; u < KU; ++u) {
                const int kk = k1 + u;
                W a[TM], b[TNW];
#pragma unroll
                for (int gm = 0; gm < MG; ++gm) load16(as + kk * BM + gm * RSTEP, &a[gm * VEC]);
#pragma unroll
                for (int gn = 0; gn < NG; ++gn) load16(bs + kk * BNW + gn * CSTEP, &b[gn * VEC]);
                if (!WP && Op::PAIR) {
                    if (u % 2) continue;              // pivots kk and kk + 1 together
                    W a1[TM], b1[TNW];
#pragma unroll
                    for (int gm = 0; gm < MG; ++gm)
                        load16(as + (kk + 1) * BM + gm * RSTEP, &a1[gm * VEC]);
#pragma unroll
                    for (int gn = 0; gn < NG; ++gn)
                        load16(bs + (kk + 1) * BNW + gn * CSTEP, &b1[gn * VEC]);
#pragma unroll
                    for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                        for (int nj = 0; nj < TNW; ++nj)
                            acc[mi][nj] = pair_addmin<Op>(a[mi], b[nj], a1[mi], b1[nj], acc[mi][nj]);
                } else if (!WP) {
#pragma unroll
                    for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                        for (int nj = 0; nj < TNW; ++nj)
                            acc[mi][nj] = Op::addmin(a[mi], b[nj], acc[mi][nj]);
                } else {
                    int ah[TM], bh[TNW];
#pragma unroll
                    for (int gm = 0; gm < MG; ++gm)
                        loadi<VEC>(ahs + kk * BM + gm * RSTEP, &ah[gm * VEC]);
#pragma unroll
                    for (int gn = 0; gn < NG; ++gn)
                        loadi<VEC>(bhs + kk * BNW + gn * CSTEP, &bh[gn * VEC]);
                    const int kg = s * KS + kk;
#pragma unroll
                    for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                        for (int nj = 0; nj < TNW; ++nj) {
                            const W cand = Op::add(a[mi], b[nj]);
                            const int hc = ah[mi] + bh[nj];
                            if (lex_less<Op>(cand, hc, acc[mi][nj],
                                             acch[WP ? mi : 0][WP ? nj : 0])) {
                                acc[mi][nj] = cand;
                                acch[WP ? mi : 0][WP ? nj : 0] = hc;
                                kid[WP ? mi : 0][WP ? nj : 0] = kg;
                            }
                        }
                }
            }
        }
    }
    cp_async_wait<0>();

    // write back
#pragma unroll
    for (int gm = 0; gm < MG; ++gm)
#pragma unroll
        for (int vm = 0; vm < VEC; ++vm) {
            const int mi = gm * VEC + vm;
            const int row = i0 + gm * RSTEP + ty * VEC + vm;
            if (row >= rhi) continue;
#pragma unroll
            for (int gn = 0; gn < NG; ++gn) {
                const int col0 = j0w + gn * CSTEP + tx * VEC;
                if (cvec) {
                    store16(Wd + (i64)row * ldw + col0, &acc[mi][gn * VEC]);
                    continue;
                }
#pragma unroll
                for (int vn = 0; vn < VEC; ++vn) {
                    const int col = col0 + vn;
                    const int nj = gn * VEC + vn;
                    if (col >= nw) continue;
                    if (WP) {
                        const int kk = kid[WP ? mi : 0][WP ? nj : 0];
                        if (kk >= 0) {
                            Wd[(i64)row * ldw + col] = acc[mi][nj];
                            H[(i64)row * ldh + col] = acch[WP ? mi : 0][WP ? nj : 0];
                            P[(i64)row * ldp + col] = Psrc[(i64)imin(kk, kc - 1) * pp + col];
                        }
                    } else if (EPW == 1 || col < nwfull) {
                        Wd[(i64)row * ldw + col] = acc[mi][nj];
                    } else {
                        Op::store_tail(D, (i64)row * lda + (i64)col * EPW, acc[mi][nj]);
                    }
                }
            }
        }
    if (write_at) {
        // the new column panel, transposed (and lane-duplicated) for phase 3
#pragma unroll
        for (int gn = 0; gn < NG; ++gn)
#pragma unroll
            for (int vn = 0; vn < VEC; ++vn) {
                const int col = j0w + gn * CSTEP + tx * VEC + vn;
                const int nj = gn * VEC + vn;
#pragma unroll
                for (int e = 0; e < EPW; ++e) {
                    const int jel = col * EPW + e;
                    if (jel >= n) continue;
#pragma unroll
                    for (int gm = 0; gm < MG; ++gm) {
                        const i64 off = (i64)(jel - K0) * atp + i0 + gm * RSTEP + ty * VEC;
                        W v[VEC];
#pragma unroll
                        for (int vm = 0; vm < VEC; ++vm) v[vm] = Op::a_lane(acc[gm * VEC + vm][nj], e);
                        store16(At + off, v);
                        if (WP) {
                            int hv[VEC];
#pragma unroll
                            for (int vm = 0; vm < VEC; ++vm)
                                hv[vm] = acch[WP ? gm * VEC + vm : 0][WP ? nj : 0];
                            storei<VEC>(AtH + off, hv);
                        }
                    }
                }
            }
    }
}

// ---------------------------------------------------------------------------------
// after an integer run: the distances as floats (entries above `thr` are "no path",
// +inf), and the count of entries in [lo, hi) (the check of a speculative run); both
// over `rows` rows of n columns
// ---------------------------------------------------------------------------------
template <class T, class F>
__device__ __forceinline__ void fw_to_float(const T* D, i64 lda, F* out, i64 rows, i64 n,
                                            int thr)
{
    const i64 total = rows * n;
    for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (i64)gridDim.x * blockDim.x) {
        const i64 i = e / n, j = e - i * n;
        const int v = D[i * lda + j];
        out[e] = v > thr ? (F)__int_as_float(0x7f800000) : (F)v;
    }
}

template <class T>
__device__ __forceinline__ void fw_count_range(const T* D, i64 lda, i64 rows, i64 n, int lo,
                                               int hi, u64* count)
{
    const i64 total = rows * n;
    u64 c = 0;
    for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (i64)gridDim.x * blockDim.x) {
        const i64 i = e / n, j = e - i * n;
        const int v = D[i * lda + j];
        c += (v >= lo && v < hi);
    }
    for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

// ---------------------------------------------------------------------------------
// entry points.  Names carry the tile shape, so fw.py cannot launch a kernel with
// the wrong one: fw_mp_<type>_b<B>_<BM>x<BNW words>_t<TM>x<TNW>_k<KS>s<STAGES>[_p].
// ---------------------------------------------------------------------------------
#define FW_P1(NAME, OP, B, WP, NT)                                                          \
    extern "C" __global__ void __launch_bounds__(NT, 1)                                    \
    NAME(OP::T* D, i64 lda, int* P, i64 ldp, int* H, i64 ldh, int n, int K0)               \
    {                                                                                      \
        if (WP) fw_phase1<OP, B, WP, NT>(D, lda, P, ldp, H, ldh, n, K0);                   \
        else fw_phase1_reg<OP, B, NT>(D, lda, n, K0);                                      \
    }

#define FW_PACK(NAME, OP, WP)                                                               \
    extern "C" __global__ void __launch_bounds__(FW_PACK_THREADS)                          \
    NAME(const OP::T* D, i64 lda, const int* P, i64 ldp, const int* H, i64 ldh, int n,     \
         int rlo, int rhi, int K0, int B, int Mpad, OP::W* At, i64 atp, OP::W* Rw, i64 rwp, \
         int* Prw, i64 prwp, int* AtH, int* RwH)                                           \
    {                                                                                      \
        fw_pack<OP, WP>(D, lda, P, ldp, H, ldh, n, rlo, rhi, K0, B, Mpad, At, atp, Rw, rwp, \
                        Prw, prwp, AtH, RwH);                                              \
    }

#define FW_MP(NAME, OP, B, BM, BNW, TM, TNW, KS, ST, KU, WP)                                \
    extern "C" __global__ void __launch_bounds__(FW_MP_THREADS, 2)                         \
    NAME(OP::T* D, i64 lda, int* P, i64 ldp, int* H, i64 ldh, int n, int K0, OP::W* At,    \
         i64 atp, const OP::W* Rw, i64 rwp, const int* Prw, i64 prwp, int* AtH,            \
         const int* RwH, int rlo, int rhi, const OP::W* Kp, i64 kpp, int mode)             \
    {                                                                                      \
        fw_minplus<OP, B, BM, BNW, TM, TNW, KS, ST, KU, WP>(D, lda, P, ldp, H, ldh, n, K0, \
                                                            At, atp, Rw, rwp, Prw, prwp,   \
                                                            AtH, RwH, rlo, rhi, Kp, kpp,   \
                                                            mode);                         \
    }

// float32
FW_P1(fw_p1_f32_b128, OpF32, 128, false, 1024)
FW_P1(fw_p1_f32_b128_p, OpF32, 128, true, 1024)
FW_PACK(fw_pack_f32, OpF32, false)
FW_PACK(fw_pack_f32_p, OpF32, true)
FW_MP(fw_mp_f32_b128_128x128_t8x8_k32s3, OpF32, 128, 128, 128, 8, 8, 32, 3, 8, false)
FW_MP(fw_mp_f32_b128_128x128_t8x8_k16s4, OpF32, 128, 128, 128, 8, 8, 16, 4, 8, false)
FW_MP(fw_mp_f32nn_b128_128x128_t8x8_k32s3, OpF32NonNeg, 128, 128, 128, 8, 8, 32, 3, 8, false)
FW_MP(fw_mp_f32_b128_64x64_t4x4_k32s3_p, OpF32, 128, 64, 64, 4, 4, 32, 3, 8, true)

// float64
FW_P1(fw_p1_f64_b128, OpF64, 128, false, 512)
FW_P1(fw_p1_f64_b64_p, OpF64, 64, true, 1024)
FW_PACK(fw_pack_f64, OpF64, false)
FW_PACK(fw_pack_f64_p, OpF64, true)
FW_MP(fw_mp_f64_b128_64x64_t4x4_k32s3, OpF64, 128, 64, 64, 4, 4, 32, 3, 8, false)
FW_MP(fw_mp_f64_b64_64x64_t4x4_k16s3_p, OpF64, 64, 64, 64, 4, 4, 16, 3, 8, true)

// int32, DPX
FW_P1(fw_p1_i32_b128, OpI32, 128, false, 1024)
FW_P1(fw_p1_i32_b128_p, OpI32, 128, true, 1024)
FW_PACK(fw_pack_i32, OpI32, false)
FW_PACK(fw_pack_i32_p, OpI32, true)
FW_MP(fw_mp_i32_b128_128x128_t8x8_k32s3, OpI32, 128, 128, 128, 8, 8, 32, 3, 8, false)
FW_MP(fw_mp_i32_b128_64x64_t4x4_k32s3_p, OpI32, 128, 64, 64, 4, 4, 32, 3, 8, true)

// int16 x 2, DPX (no predecessor variant: fw.py runs those through int32)
FW_P1(fw_p1_i16_b256, OpI16x2, 256, false, 512)
FW_P1(fw_p1_i16_b128, OpI16x2, 128, false, 1024)
FW_PACK(fw_pack_i16, OpI16x2, false)
FW_MP(fw_mp_i16_b256_128x128_t8x8_k32s3, OpI16x2, 256, 128, 128, 8, 8, 32, 3, 8, false)
FW_MP(fw_mp_i16_b128_128x64_t8x4_k32s3, OpI16x2, 128, 128, 64, 8, 4, 32, 3, 8, false)

// conversions and checks for the integer paths
#define FW_TO_FLOAT(NAME, T, F)                                                             \
    extern "C" __global__ void NAME(const T* D, i64 lda, F* out, i64 rows, i64 n, int thr) \
    { fw_to_float<T, F>(D, lda, out, rows, n, thr); }
#define FW_COUNT_RANGE(NAME, T)                                                             \
    extern "C" __global__ void NAME(const T* D, i64 lda, i64 rows, i64 n, int lo, int hi,  \
                                    u64* count)                                            \
    { fw_count_range<T>(D, lda, rows, n, lo, hi, count); }

FW_TO_FLOAT(fw_i32_to_f32, int, float)
FW_TO_FLOAT(fw_i32_to_f64, int, double)
FW_TO_FLOAT(fw_i16_to_f32, short, float)
FW_TO_FLOAT(fw_i16_to_f64, short, double)
FW_COUNT_RANGE(fw_count_range_i32, int)
FW_COUNT_RANGE(fw_count_range_i16, short)
