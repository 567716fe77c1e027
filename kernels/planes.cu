// Zarr chunks of a batch's block encoded on the GPU in the mgapsp.planes format.
//
// Self-contained CUDA C++ (no #include): compiled by NVRTC through CuPy's RawModule
// (mgapsp/cuda/planes.py, the only place that launches these) and by
// `nvcc -arch=sm_90 -c` in tests/test_kernels_compile.py.
//
// The format is described in mgapsp/store/planes.py, whose CPU encoder
// (mgapsp/store/planes_kernels.py) follows the same rules, so that both make the same
// bytes: per block of 64 words, the first mode of fewest bytes among "offset from the
// block's smallest word", "the same, the special word aside" and "difference from the
// words 1, 2, ... 16 rows above", the residuals' common trailing zero bits shifted
// out, and the residuals stored as bit planes.
//
// One warp per block of 64 words: lane i holds words i and 32 + i, so that a ballot
// of bit k over the warp is the low and high half of plane k.  Two passes: the first
// (planes_size) picks each block's mode and says its bytes; the host sums them into
// each block's place in the frames; the second (planes_pack) computes the chosen
// residuals again and writes the frames.  The rows above that the first pass tries are
// the blocks of the warps just before, so they come from the cache, not memory.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL_MASK 0xffffffffu
#define PL_LANES 64
#define PL_HEADER 32
#define PL_OFFSET 0
#define PL_MASKED 1
#define PL_ABOVE 2
#define PL_FAR 7
// modes 2-6: the row 1-5 above; 7: a row further, its distance first in the payload
#define PL_NEAR_ROWS (PL_FAR - PL_ABOVE)
// the rows above that both encoders try (mgapsp/store/planes_kernels.py SEARCH_ROWS)
#define PL_SEARCH_ROWS 16

template <typename T> struct Bits;
template <> struct Bits<u32> {
    static constexpr int n = 32;
    __device__ static u32 wmin(u32 v) { return __reduce_min_sync(FULL_MASK, v); }
    __device__ static u32 wor(u32 v) { return __reduce_or_sync(FULL_MASK, v); }
    __device__ static int ctz(u32 v) { return v ? __ffs((int)v) - 1 : 0; }
    __device__ static int len(u32 v) { return 32 - __clz((int)v); }
    __device__ static long long sgn(u32 v) { return (long long)(int)v; }
};
template <> struct Bits<u64> {
    static constexpr int n = 64;
    __device__ static u64 wmin(u64 v) {
#pragma unroll
        for (int o = 16; o; o >>= 1) {
            const u64 t = __shfl_xor_sync(FULL_MASK, v, o);
            v = t < v ? t : v;
        }
        return v;
    }
    __device__ static u64 wor(u64 v) {
#pragma unroll
        for (int o = 16; o; o >>= 1) v |= __shfl_xor_sync(FULL_MASK, v, o);
        return v;
    }
    __device__ static int ctz(u64 v) { return v ? __ffsll((long long)v) - 1 : 0; }
    __device__ static int len(u64 v) { return 64 - __clzll((long long)v); }
    __device__ static long long sgn(u64 v) { return (long long)v; }
};

// The chunk being encoded: chunk `c` of `count` is the tile of rows [0, chunk_rows)
// and columns [(first + c) cc, +cc) of the block (rows x ld words, n columns), padded
// with `fill` past the block's last row or column, as Zarr stores edge chunks.
struct Tile {
    const void* block;
    int rows;
    long long ld;
    int n;
    int cc;
    int chunk_rows;
    int first;
    int count;
    u64 fill;
    u64 special;
};

// Where word `e` of chunk `c` lives: its row of the chunk, and its offset in the block,
// or -1 where the word is padding (past the block's last column; rows are checked by
// the reader, as the rows above a word differ only in their row).
struct Spot {
    int row;
    long long at;
    __device__ Spot(const Tile& t, int c, unsigned e) {
        const unsigned r = e / (unsigned)t.cc;
        const long long col = (long long)(t.first + c) * t.cc + (e - r * (unsigned)t.cc);
        row = (int)r;
        at = col < t.n ? r * t.ld + col : -1;
    }
    // the word `k` rows above (k <= row)
    template <typename T>
    __device__ __forceinline__ T word(const Tile& t, int k) const {
        if (at >= 0 && row - k < t.rows) return __ldg((const T*)t.block + (at - k * t.ld));
        return (T)t.fill;
    }
};

// The residuals of one block under a mode (all lanes call it): ra, rb for the lane's
// two words, the shift, the width, and the base of the offset modes.
template <typename T>
struct Block {
    T a, b;
    bool va, vb;
    Spot sa, sb;
    int reach;  // how many whole rows lie above the block (0 where rows are under 64 words)
    __device__ Block(const Tile& t, int c, long long blk, int lane)
        : sa(t, c, (unsigned)(blk * PL_LANES) + lane),
          sb(t, c, (unsigned)(blk * PL_LANES) + lane + 32) {
        const unsigned N = (unsigned)t.chunk_rows * (unsigned)t.cc;
        const unsigned lo = (unsigned)(blk * PL_LANES);
        va = lo + lane < N;
        vb = lo + lane + 32 < N;
        a = va ? sa.word<T>(t, 0) : (T)0;
        b = vb ? sb.word<T>(t, 0) : (T)0;
        reach = t.cc >= PL_LANES ? (int)(lo / (unsigned)t.cc) : 0;
    }
    // offset modes: `skip_special` leaves the special word out
    __device__ void offset(bool skip_special, T special, T& ra, T& rb, T& base, int& s,
                           int& w) const {
        const bool ia = va && !(skip_special && a == special);
        const bool ib = vb && !(skip_special && b == special);
        const T big = (T)~(T)0;
        const bool have = __ballot_sync(FULL_MASK, ia || ib) != 0;
        const T la = ia ? a : big, lb = ib ? b : big;
        base = Bits<T>::wmin(la < lb ? la : lb);
        if (!have) base = 0;
        ra = ia ? (T)(a - base) : (T)0;
        rb = ib ? (T)(b - base) : (T)0;
        const T acc = Bits<T>::wor(ra | rb);
        s = Bits<T>::ctz(acc);
        ra >>= s;
        rb >>= s;
        w = acc ? Bits<T>::len(acc >> s) : 0;
    }
    __device__ static T zigzag(T d, int s) {
        const long long sd = Bits<T>::sgn(d) >> s;
        return (T)(((u64)sd << 1) ^ (u64)(sd >> 63));
    }
    // the difference from the words `rows` rows above; one pass over the lanes, as
    // zigzag(d >> s) == zigzag(d) >> s where d's low s bits are 0
    __device__ void above(const Tile& t, int rows, T& ra, T& rb, int& s, int& w) const {
        const T da = va ? (T)(a - sa.word<T>(t, rows)) : (T)0;
        const T db = vb ? (T)(b - sb.word<T>(t, rows)) : (T)0;
        ra = zigzag(da, 0);
        rb = zigzag(db, 0);
        s = Bits<T>::ctz(Bits<T>::wor(da | db));
        const T acc = Bits<T>::wor(ra | rb) >> s;
        ra >>= s;
        rb >>= s;
        w = acc ? Bits<T>::len(acc) : 0;
    }
};

// Each block's descriptor and payload bytes: desc[g], size[g] for block g = c nb + k.
template <typename T>
__device__ void planes_size(const Tile t, long long nb, u16* __restrict__ desc,
                            int* __restrict__ size, int* __restrict__ rows_at) {
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    const long long total = nb * t.count;
    constexpr int W = sizeof(T);
    for (long long g = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; g < total;
         g += warps) {
        const int c = (int)(g / nb);
        const Block<T> blk(t, c, g - c * nb, lane);
        T ra, rb, base;
        int s, w;
        blk.offset(false, (T)t.special, ra, rb, base, s, w);
        int mode = PL_OFFSET, best = W + 8 * w, ms = s, mw = w;
        blk.offset(true, (T)t.special, ra, rb, base, s, w);
        if (8 + W + 8 * w < best) {
            mode = PL_MASKED;
            best = 8 + W + 8 * w;
            ms = s;
            mw = w;
        }
        int rows = 0;
        const int reach = blk.reach < PL_SEARCH_ROWS ? blk.reach : PL_SEARCH_ROWS;
        for (int k = 1; k <= reach; ++k) {
            blk.above(t, k, ra, rb, s, w);
            const int bytes = 8 * w + (k > PL_NEAR_ROWS ? 4 : 0);
            if (bytes < best) {
                mode = PL_ABOVE;
                rows = k;
                best = bytes;
                ms = s;
                mw = w;
            }
        }
        if (mode == PL_ABOVE && rows > PL_NEAR_ROWS) mode = PL_FAR;
        else if (mode == PL_ABOVE) mode = PL_ABOVE + rows - 1;
        if (lane == 0) rows_at[g] = rows;
        if (lane == 0) {
            desc[g] = (u16)(mw | (ms << 7) | (mode << 13));
            size[g] = best;
        }
    }
}

__device__ __forceinline__ void put64(u8* p, u64 v) {
    ((u32*)p)[0] = (u32)v;
    ((u32*)p)[1] = (u32)(v >> 32);
}

// The frames: block g's payload at out[pos[g]], chunk c's header and descriptors at
// out[starts[c]].
template <typename T>
__device__ void planes_pack(const Tile t, long long nb, const u16* __restrict__ desc,
                            const int* __restrict__ rows_at,
                            const long long* __restrict__ pos,
                            const long long* __restrict__ starts, u8* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    const long long total = nb * t.count;
    constexpr int W = sizeof(T);
    for (long long g = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; g < total;
         g += warps) {
        const int c = (int)(g / nb);
        const long long k = g - c * nb;
        u8* frame = out + starts[c];
        if (k == 0) {
            const u64 N = (u64)t.chunk_rows * (u64)t.cc;
            // "MGPL", version 2 and the word size, N, C, the special word
            const u64 field = lane < 2 ? (0x4C50474Dull | ((2ull | ((u64)W << 8)) << 32))
                              : lane < 4 ? N : lane < 6 ? (u64)t.cc : t.special;
            if (lane < 8) ((u32*)frame)[lane] = (u32)(field >> (32 * (lane & 1)));
            if (lane == 8 && (nb & 1)) ((u16*)(frame + PL_HEADER))[nb] = 0;
        }
        const int d = desc[g];
        const int w = d & 127, mode = (d >> 13) & 7;
        if (lane == 0) ((u16*)(frame + PL_HEADER))[k] = (u16)d;
        const Block<T> blk(t, c, k, lane);
        T ra, rb, base = 0;
        int s, ww;
        if (mode >= PL_ABOVE) blk.above(t, rows_at[g], ra, rb, s, ww);
        else blk.offset(mode == PL_MASKED, (T)t.special, ra, rb, base, s, ww);
        u8* p = out + pos[g];
        if (mode == PL_MASKED) {
            const u32 lo = __ballot_sync(FULL_MASK, blk.va && blk.a == (T)t.special);
            const u32 hi = __ballot_sync(FULL_MASK, blk.vb && blk.b == (T)t.special);
            if (lane == 0) put64(p, (u64)lo | ((u64)hi << 32));
            p += 8;
        }
        if (mode < PL_ABOVE) {
            if (lane == 0) {
                if (W == 4) *(u32*)p = (u32)base;
                else put64(p, (u64)base);
            }
            p += W;
        } else if (mode == PL_FAR) {
            if (lane == 0) *(u32*)p = (u32)rows_at[g];
            p += 4;
        }
        // plane j lives in lane j % 32 until every ballot is done, then lanes write
        u64 mine0 = 0, mine1 = 0;
        for (int j = 0; j < w; ++j) {
            const u32 lo = __ballot_sync(FULL_MASK, (ra >> j) & 1);
            const u32 hi = __ballot_sync(FULL_MASK, (rb >> j) & 1);
            if ((j & 31) == lane) {
                if (j < 32) mine0 = (u64)lo | ((u64)hi << 32);
                else mine1 = (u64)lo | ((u64)hi << 32);
            }
        }
        if (lane < w) put64(p + 8 * lane, mine0);
        if (lane + 32 < w) put64(p + 8 * (lane + 32), mine1);
    }
}

#define PLANES_KERNELS(W, T)                                                                \
    extern "C" __global__ void planes_size##W(                                             \
        const void* block, int rows, long long ld, int n, int cc, int chunk_rows,          \
        int first, int count, u64 fill, u64 special, long long nb, u16* desc, int* size,   \
        int* rows_at) {                                                                    \
        const Tile t{block, rows, ld, n, cc, chunk_rows, first, count, fill, special};     \
        planes_size<T>(t, nb, desc, size, rows_at);                                        \
    }                                                                                      \
    extern "C" __global__ void planes_pack##W(                                             \
        const void* block, int rows, long long ld, int n, int cc, int chunk_rows,          \
        int first, int count, u64 fill, u64 special, long long nb, const u16* desc,        \
        const int* rows_at, const long long* pos, const long long* starts, u8* out) {     \
        const Tile t{block, rows, ld, n, cc, chunk_rows, first, count, fill, special};     \
        planes_pack<T>(t, nb, desc, rows_at, pos, starts, out);                            \
    }
PLANES_KERNELS(4, u32)
PLANES_KERNELS(8, u64)
