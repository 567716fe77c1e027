// Blosc chunks compressed on the GPU: bit-shuffle, then LZ4, in Blosc's own format.
//
// Self-contained CUDA C++ (no #include): compiled by NVRTC through CuPy's RawModule
// (mgapsp/cuda/blosc.py, the only place that launches these) and by
// `nvcc -arch=sm_90 -c` in tests/test_kernels_compile.py.
//
// Why.  A GPU computes distance rows faster than a host compresses them: one H200
// fills 512 MB of p2p-Gnutella31 rows in about 10 ms, which take Blosc about 35 ms on
// 16 host threads (bench/NOTES.md).  These kernels make the very chunk
// files Zarr's BloscCodec(cname="lz4", shuffle="bitshuffle") would read, so the host
// only writes bytes.  The frames decode with any Blosc 1.x (numcodecs, c-blosc,
// python-blosc) or Blosc2; they are not byte-identical to the host encoder's, whose
// LZ4 parse differs.
//
// One Zarr chunk is one Blosc frame of `nbytes` = chunk elements x typesize bytes:
//   16-byte header: version 2, LZ4 format 1, flags 0x24 (bit-shuffle, LZ4; bit 4 "do
//     not split" left clear), typesize, nbytes, blocksize, total frame bytes;
//   one int32 per block: the frame offset of the block's first stream;
//   per block, its streams: int32 compressed size, then the LZ4 block; a size equal to
//     the stream's length means the bytes are stored as they are.
// Blocks are `blocksize` bytes (the last one may be shorter: the "leftover" block).
// Each whole block of at least 128 elements is split into `typesize` streams of
// blocksize / typesize bytes (byte plane j of its elements, after the shuffle);
// the leftover block is one stream.  The host (blosc.py) picks the blocksize as
// Blosc's own encoder does for LZ4, so the frames have the same shape.
//
// Bit-shuffle (Blosc's, from the bitshuffle library): a block of E elements, E a
// multiple of 8, becomes 8 x typesize rows of E / 8 bytes; row 8 j + k holds bit k of
// byte j of every element, element 8 m + l in bit l of byte m.  A block whose element
// count is not a multiple of 8 is stored unshuffled.
//
// LZ4 (the block format of lz4_Block_format.md): one warp per segment of a stream
// (`seg` bytes; blosc_lz4 below tells how the segments join).  The warp looks at 32
// positions at once: each lane hashes the 4 bytes at its position into the
// warp's table in shared memory (2**LZ4_HASH_LOG 16-bit positions: a candidate is only
// a hint, always checked against the bytes), and an earlier lane holding the same
// bytes is a candidate too.  The first lane with a real match of LZ4_ACCEPT_MATCH
// bytes or more wins; the warp extends the match 128 bytes per step, then backwards
// into the pending literals, and writes the sequence.  The format's end rules hold: no
// match starts in the last 12 bytes or covers the last 5.  A stream that would not
// shrink is stored as it is.
//
// Matches of 8 bytes or more, not the format's 4: a warp spends about the same on
// every sequence it writes, and the streams full of short matches held up the whole
// kernel.  One batch of p2p-Gnutella31 (1,956 rows) took the LZ4 kernel 3.63 ms with 4
// and 2.99 ms with 8, its frames 2% larger; one of the NY road network (2,048 rows)
// 26.7 and 20.5 ms, its frames 5% smaller (a short match no longer cuts a longer one
// short); bench/NOTES.md.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL_MASK 0xffffffffu
#ifndef LZ4_HASH_LOG
#define LZ4_HASH_LOG 11        // the table of a warp: 2**LZ4_HASH_LOG 16-bit positions
#endif
#ifndef LZ4_PRIME_STRIDE
#define LZ4_PRIME_STRIDE 8     // a segment's table starts with every this many positions
#endif                         // of the 64 KB before it (0: empty)
#define LZ4_WARPS 4            // warps (segments in flight) per block of 128 threads
#define LZ4_MIN_MATCH 4        // the format's shortest match
#ifndef LZ4_ACCEPT_MATCH
#define LZ4_ACCEPT_MATCH 8     // the shortest match the parse takes (4 to 8 bytes)
#endif
#if LZ4_ACCEPT_MATCH < 4 || LZ4_ACCEPT_MATCH > 8
#error "LZ4_ACCEPT_MATCH is 4 to 8"
#endif
// the bytes 4 .. LZ4_ACCEPT_MATCH - 1 of a word that a match must also hold
#define LZ4_ACCEPT_MASK (LZ4_ACCEPT_MATCH == 8 ? 0xffffffffu \
                         : (1u << (8 * (LZ4_ACCEPT_MATCH - 4))) - 1u)
#define LZ4_MF_LIMIT 12        // a match starts at least this many bytes before the end
#define LZ4_LAST_LITERALS 5    // ... and leaves at least this many bytes of literals
#define LZ4_MAX_DISTANCE 65535

// ---- bit-shuffle -------------------------------------------------------------------
// 8 x 8 bit transpose of x, whose byte r is row r: bit (8 r + c) <-> bit (8 c + r).
__device__ __forceinline__ u64 transpose8x8(u64 x) {
    u64 t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;  x = x ^ t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull; x = x ^ t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull; x = x ^ t ^ (t << 28);
    return x;
}

// Shuffle the chunks of one batch's block straight from the block.
//   block: rows x ld elements (row-major), the batch's distances; columns n.
//   Chunk c (of `n_chunks`) is the tile of rows [0, chunk_rows) and columns
//   [(first + c) cc, +cc) of the block, row-major, padded with `fill` (the element's
//   bits) past the block's last row or column, as Zarr stores edge chunks.
//   out: n_chunks x chunk_bytes, each chunk's blocks shuffled in place of the raw ones.
// One thread per 8 elements of a block (the last group of a block whose count is not
// a multiple of 8 copies what it has).
template <int TS>
__device__ __forceinline__ void load_element(const u8* __restrict__ block, int rows, long long ld,
                                             int n, int cc, int first, long long chunk,
                                             long long e, u64 fill, u32* w) {
    long long r = e / cc;
    long long col = (long long)(first + chunk) * cc + e % cc;
    if (r < rows && col < n) {
        const u32* p = (const u32*)(block + (r * ld + col) * TS);
        w[0] = __ldg(p);
        if (TS == 8) w[1] = __ldg(p + 1);
    } else {
        w[0] = (u32)fill;
        if (TS == 8) w[1] = (u32)(fill >> 32);
    }
}

template <int TS>
__device__ void bitshuffle_chunks(const u8* __restrict__ block, int rows, long long ld, int n,
                                  int cc, int first, int n_chunks, long long chunk_bytes,
                                  int blocksize, u64 fill, u8* __restrict__ out) {
    const int block_elems = blocksize / TS;
    const int groups_per_block = (block_elems + 7) / 8;
    const long long full_blocks = chunk_bytes / blocksize;
    const long long left_elems = (chunk_bytes - full_blocks * blocksize) / TS;
    const long long groups_per_chunk = full_blocks * groups_per_block + (left_elems + 7) / 8;
    const long long total = groups_per_chunk * n_chunks;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const long long chunk = t / groups_per_chunk;
        const long long g = t - chunk * groups_per_chunk;
        long long b = g / groups_per_block;
        long long m = g - b * groups_per_block;
        long long E = block_elems;
        if (b >= full_blocks) {            // the leftover block
            b = full_blocks;
            m = g - full_blocks * groups_per_block;
            E = left_elems;
        }
        const long long e0 = b * block_elems;          // the block's first element
        u8* dst = out + chunk * chunk_bytes + e0 * TS;
        if (E % 8 != 0) {                   // stored unshuffled
            const int cnt = (int)min(8ll, E - 8 * m);
            for (int l = 0; l < cnt; ++l) {
                u32 v[2];
                load_element<TS>(block, rows, ld, n, cc, first, chunk, e0 + 8 * m + l, fill, v);
#pragma unroll
                for (int i = 0; i < TS; ++i)
                    dst[(8 * m + l) * TS + i] = (u8)(v[i >> 2] >> (8 * (i & 3)));
            }
            continue;
        }
        u32 w[8 * TS / 4];
#pragma unroll
        for (int l = 0; l < 8; ++l)
            load_element<TS>(block, rows, ld, n, cc, first, chunk, e0 + 8 * m + l, fill,
                             w + l * (TS / 4));
        const long long row = E / 8;
#pragma unroll
        for (int j = 0; j < TS; ++j) {
            u64 x = 0;
#pragma unroll
            for (int l = 0; l < 8; ++l) {
                const int byte = l * TS + j;
                x |= (u64)((w[byte >> 2] >> (8 * (byte & 3))) & 0xffu) << (8 * l);
            }
            x = transpose8x8(x);
#pragma unroll
            for (int k = 0; k < 8; ++k) dst[(8 * j + k) * row + m] = (u8)(x >> (8 * k));
        }
    }
}

// blosc_bitshuffle4 (float32, int32) and blosc_bitshuffle8 (float64, int64)
#define BLOSC_BITSHUFFLE(TS)                                                              \
    extern "C" __global__ void blosc_bitshuffle##TS(                                      \
        const u8* __restrict__ block, int rows, long long ld, int n, int cc, int first,   \
        int n_chunks, long long chunk_bytes, int blocksize, u64 fill, u8* __restrict__ out) { \
        bitshuffle_chunks<TS>(block, rows, ld, n, cc, first, n_chunks, chunk_bytes,       \
                              blocksize, fill, out);                                      \
    }
BLOSC_BITSHUFFLE(4)
BLOSC_BITSHUFFLE(8)

// ---- LZ4 ---------------------------------------------------------------------------
// The 4 bytes at p, any alignment: two aligned words (the buffer is padded so that the
// second one exists) and a funnel shift.
__device__ __forceinline__ u32 load4(const u8* p) {
    const unsigned long long a = (unsigned long long)p;
    const u32* w = (const u32*)(a & ~3ull);
    return __funnelshift_r(__ldg(w), __ldg(w + 1), (u32)(a & 3) * 8);
}

__device__ __forceinline__ u32 lz4_hash(u32 v) {
    return (v * 2654435761u) >> (32 - LZ4_HASH_LOG);
}

// Bytes that a length field of `len` (already less its 15 in the token) takes after it.
__device__ __forceinline__ int length_bytes(int len) {
    return len < 15 ? 0 : (len - 15) / 255 + 1;
}

// Write the extra length bytes of `len` (>= 15) at dst + op; returns the new op.
__device__ __forceinline__ int put_length(u8* dst, int op, int len) {
    len -= 15;
    for (; len >= 255; len -= 255) dst[op++] = 255;
    dst[op++] = (u8)len;
    return op;
}

// One sequence: literals src[anchor, anchor + lit), then (if match_len > 0) a match of
// match_len bytes at distance `offset`.  Returns the new output position, or -1 when
// it would not fit below `cap`.  Every lane returns the same value.
__device__ __forceinline__ int put_sequence(const u8* __restrict__ src, u8* __restrict__ dst,
                                            int op, int cap, int anchor, int lit,
                                            int match_len, int offset, int lane) {
    const int ml = match_len - LZ4_MIN_MATCH;
    const int need = 1 + length_bytes(lit) + lit + (match_len ? 2 + length_bytes(ml) : 0);
    if (op + need >= cap) return -1;
    const int q = op + 1 + length_bytes(lit);
    if (lane == 0) {
        dst[op] = (u8)((min(lit, 15) << 4) | (match_len ? min(ml, 15) : 0));
        if (lit >= 15) put_length(dst, op + 1, lit);
    }
    for (int i = lane; i < lit; i += 32) dst[q + i] = src[anchor + i];
    if (match_len && lane == 0) {
        dst[q + lit] = (u8)(offset & 0xff);
        dst[q + lit + 1] = (u8)(offset >> 8);
        if (ml >= 15) put_length(dst, q + lit + 2, ml);
    }
    return op + need;
}

// What the parse of one segment leaves for the join (int32 each, LZ4_REC a segment).
#define REC_FIRST 0     // where its first match starts, or -1: no match (all literals)
#define REC_FIRST_LEN 1 // the first match's length
#define REC_FIRST_OFF 2 // ... and distance
#define REC_TAIL 3      // where its last match ends: its literals from there go on into
                        // the next segment's first sequence
#define REC_REST 4      // bytes of its later sequences, written at the segment's start
#define LZ4_REC 5

// Parse the segment src[seg_start, seg_end) of the stream src[0, len): its matches
// start and end within the segment and may reach back anywhere in the stream (the
// decoder has all of it by then).  The first sequence is only recorded: its literals
// begin where an earlier segment's last match ended, which this warp does not know.
// The later sequences go, encoded, to scratch[seg_start, seg_end); a segment whose
// sequences would not fit there is taken as all literals.  All 32 lanes call it.
__device__ void lz4_segment(const u8* __restrict__ src, int len, int seg_start, int seg_end,
                            u8* __restrict__ scratch, u16* table, int lane, int* rec) {
    for (int i = lane; i < (1 << LZ4_HASH_LOG); i += 32) table[i] = 0;
    __syncwarp();
#if LZ4_PRIME_STRIDE > 0
    // hints into the bytes before the segment, within a match's reach: a segment of a
    // bit plane finds the earlier plane it repeats.  The later position wins a slot
    // (the last lane of those sharing it, the later step), so the frames are the same
    // bytes every time.
    for (int base = max(0, seg_start - LZ4_MAX_DISTANCE); base <= seg_start - 4;
         base += 32 * LZ4_PRIME_STRIDE) {
        const int q = base + lane * LZ4_PRIME_STRIDE;
        const bool in = q <= seg_start - 4;
        const u32 h = in ? lz4_hash(load4(src + q)) : 0xffffffffu;
        const unsigned slot = __match_any_sync(FULL_MASK, h);
        if (in && 31 - __clz(slot) == lane) table[h] = (u16)q;
        __syncwarp();
    }
#endif
    int ip = seg_start, anchor = seg_start, op = seg_start;
    int first = -1, first_len = 0, first_off = 0;
    // a match may start at <= last_start and end at <= match_end
    const int last_start = min(len - LZ4_MF_LIMIT, seg_end - 1);
    const int match_end = min(len - LZ4_LAST_LITERALS, seg_end);
    while (ip <= last_start) {
        const int p = ip + lane;
        const bool live = p <= last_start;
        // a lane takes a match of LZ4_ACCEPT_MATCH bytes or more that ends by match_end
        const bool can = live && p + LZ4_ACCEPT_MATCH <= match_end;
        const u32 v = live ? load4(src + p) : 0u;
        const u32 v2 = can ? load4(src + p + 4) & LZ4_ACCEPT_MASK : 0u;
        const u32 h = lz4_hash(v);
        // an earlier lane with the same bytes, else the table's hint, checked (the lanes
        // below a lane that can take a match are live: another lane's key never counts)
        const unsigned same = __match_any_sync(FULL_MASK, (u64)v | ((u64)v2 << 32));
        const unsigned earlier = same & ((1u << lane) - 1u);
        int cand = -1;
        if (can) {
            if (earlier) {
                cand = ip + 31 - __clz(earlier);
            } else {
                const int d = (p - (int)table[h]) & 0xffff;
                const int c = p - d;
                if (d != 0 && c >= 0 && load4(src + c) == v
                    && (load4(src + c + 4) & LZ4_ACCEPT_MASK) == v2)
                    cand = c;
            }
        }
        __syncwarp();
        // the last lane of those sharing a hash slot records its position
        const unsigned slot = __match_any_sync(FULL_MASK, live ? h : 0xffffffffu);
        if (live && 31 - __clz(slot) == lane) table[h] = (u16)p;
        __syncwarp();
        const unsigned found = __ballot_sync(FULL_MASK, cand >= 0);
        if (!found) {
            ip += 32;
            continue;
        }
        const int f = __ffs(found) - 1;
        int mp = ip + f;
        int mc = __shfl_sync(FULL_MASK, cand, f);
        // forward: 4 bytes a lane, 128 bytes a step, never past match_end
        int mlen = LZ4_ACCEPT_MATCH;
        while (true) {
            const int q = mp + mlen + 4 * lane;
            int same_bytes = 0;
            bool stop = true;
            if (q < match_end) {
                const u32 diff = load4(src + q) ^ load4(src + mc + (q - mp));
                const int room = match_end - q;
                same_bytes = diff ? (__ffs(diff) - 1) >> 3 : 4;
                if (same_bytes > room) same_bytes = room;
                stop = diff != 0 || room <= 4;
            }
            const unsigned stops = __ballot_sync(FULL_MASK, stop);
            if (stops) {
                const int s = __ffs(stops) - 1;
                mlen += 4 * s + __shfl_sync(FULL_MASK, same_bytes, s);
                break;
            }
            mlen += 128;
        }
        // backward, into the literals not yet written (never before the segment)
        while (mp > anchor && mc > 0 && src[mp - 1] == src[mc - 1]) {
            --mp;
            --mc;
            ++mlen;
        }
        if (first < 0) {
            first = mp;
            first_len = mlen;
            first_off = mp - mc;
        } else {
            op = put_sequence(src, scratch, op, seg_end, anchor, mp - anchor, mlen, mp - mc,
                              lane);
            if (op < 0) {       // would not fit: the segment stays literals
                first = -1;
                break;
            }
        }
        ip = anchor = mp + mlen;
        if (lane == 0 && ip - 2 <= len - 4) table[lz4_hash(load4(src + ip - 2))] = (u16)(ip - 2);
        __syncwarp();
    }
    if (lane == 0) {
        rec[REC_FIRST] = first;
        rec[REC_FIRST_LEN] = first_len;
        rec[REC_FIRST_OFF] = first_off;
        rec[REC_TAIL] = anchor;
        rec[REC_REST] = first < 0 ? 0 : op - seg_start;
    }
}

// Parse streams by segments: stream s is src[in_off[s], + len[s]), its segment k the
// bytes [k seg, (k + 1) seg) of it (`n_seg` a stream, those past its end empty); the
// later sequences go to dst[in_off[s] + k seg, ...) (dst shaped like src), the record
// to rec[(s n_seg + k) LZ4_REC, ...].  Warps stride over the segments.
//
// Why segments.  One warp per whole stream (128 KB of a Gnutella31 batch) left the
// kernel waiting on its slowest stream, one full of short matches: 3.0-3.6 ms for a
// batch whose median stream took a sixth of that (bench/NOTES.md).  The
// segments of a stream are parsed at once and joined after: the LZ4 block format lets
// a match refer to any earlier byte, so the only seam is the literals between a
// segment's last match and the next one's first, which blosc_lz4_sizes and
// blosc_join write as one sequence.  A segment cuts a match that would run past its
// end (a few bytes of frame more per segment).
extern "C" __global__ void __launch_bounds__(32 * LZ4_WARPS)
blosc_lz4(const u8* __restrict__ src, const long long* __restrict__ in_off,
          const int* __restrict__ len, int seg, int n_seg, u8* __restrict__ dst,
          int* __restrict__ rec, long long n_streams) {
    __shared__ u16 tables[LZ4_WARPS][1 << LZ4_HASH_LOG];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const long long items = n_streams * n_seg;
    for (long long i = (long long)blockIdx.x * LZ4_WARPS + warp; i < items;
         i += (long long)gridDim.x * LZ4_WARPS) {
        const long long s = i / n_seg;
        const int k = (int)(i - s * n_seg);
        const long long o = in_off[s];
        const int n = len[s];
        const int a = (int)min((long long)k * seg, (long long)n);
        const int b = (int)min((long long)a + seg, (long long)n);
        lz4_segment(src + o, n, a, b, dst + o, tables[warp], lane, rec + i * LZ4_REC);
        __syncwarp();
    }
}

// Each stream's stored size from its segments' records: the compressed size, or its
// length where it would not shrink (then it is stored as it is).  A thread a stream.
extern "C" __global__ void blosc_lz4_sizes(const int* __restrict__ len, const int* __restrict__ rec,
                                           int n_seg, int* __restrict__ size,
                                           long long n_streams) {
    for (long long s = blockIdx.x * (long long)blockDim.x + threadIdx.x; s < n_streams;
         s += (long long)gridDim.x * blockDim.x) {
        const int* r = rec + s * n_seg * LZ4_REC;
        long long total = 0;
        int carry = 0;      // where the pending literals begin
        for (int k = 0; k < n_seg; ++k, r += LZ4_REC) {
            if (r[REC_FIRST] < 0) continue;
            const int lit = r[REC_FIRST] - carry;
            total += 3 + length_bytes(lit) + lit
                     + length_bytes(r[REC_FIRST_LEN] - LZ4_MIN_MATCH) + r[REC_REST];
            carry = r[REC_TAIL];
        }
        const int lit = len[s] - carry;
        total += 1 + length_bytes(lit) + lit;
        size[s] = total < len[s] ? (int)total : len[s];
    }
}

// Write each stream, its int32 size in front, at out[at[s]]: its segments' sequences
// joined (each segment's first sequence with the literals left pending before it, then
// its later sequences from dst, then the stream's last literals), or the shuffled
// bytes from src where it did not shrink.  A warp a stream.
extern "C" __global__ void blosc_join(const u8* __restrict__ src, const u8* __restrict__ dst,
                                      const long long* __restrict__ in_off,
                                      const int* __restrict__ len, const int* __restrict__ size,
                                      const int* __restrict__ rec, int seg, int n_seg,
                                      const long long* __restrict__ at, u8* __restrict__ out,
                                      long long n_streams) {
    const int lane = threadIdx.x & 31;
    for (long long s = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; s < n_streams;
         s += (long long)gridDim.x * blockDim.x / 32) {
        const int n = size[s], L = len[s];
        const u8* from = src + in_off[s];
        u8* to = out + at[s];
        if (lane < 4) to[lane] = (u8)((u32)n >> (8 * lane));
        if (n == L) {
            for (int i = lane; i < n; i += 32) to[4 + i] = from[i];
            continue;
        }
        const int* r = rec + s * n_seg * LZ4_REC;
        int op = 4, carry = 0;
        for (int k = 0; k < n_seg; ++k, r += LZ4_REC) {
            const int first = r[REC_FIRST];
            if (first < 0) continue;
            op = put_sequence(from, to, op, 0x7fffffff, carry, first - carry,
                              r[REC_FIRST_LEN], r[REC_FIRST_OFF], lane);
            const int rest = r[REC_REST];
            const u8* later = dst + in_off[s] + (long long)k * seg;
            for (int i = lane; i < rest; i += 32) to[op + i] = later[i];
            op += rest;
            carry = r[REC_TAIL];
        }
        put_sequence(from, to, op, 0x7fffffff, carry, L - carry, 0, 0, lane);
    }
}
