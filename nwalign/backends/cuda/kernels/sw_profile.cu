// Database search with a query profile: sw_search.cu's cell with the roles of the two sequences swapped.
//
// A group of G threads (4, 8, 16 or 32) holds a tile of G x R query rows in registers (thread g: rows
// g * R .. g * R + R - 1 of the tile) and streams database columns through them: at step k thread g
// computes column k - g of its rows, taking G and the vertical gap of the row above from thread g - 1 by
// one shuffle each (the same recurrence as sw_search.cu, transposed). Two database sequences of nearly
// the same length share every register (packed 16-bit). Because a thread's rows are fixed, their scores
// against a database letter b are consecutive words of a query profile, P[b][i] = S(q_i, b) + go: R / 4
// vector loads per sequence and step, and one multiply-add per register to merge the two sequences'
// scores (sw_search.cu needs two loads, two address adds and the multiply-add per register). The
// profile of the launch's tile sits in shared memory, each thread's R words padded to an odd number of
// 16-byte chunks, so that the eight threads of a quarter-warp always read eight different bank quads.
//
// Queries longer than one tile take one launch per tile (a pass); between passes the tile's last row
// (G and the vertical gap per column, 8 bytes for the pair's two sequences) of every pair goes through
// `bound`, read by thread 0 one pass later and overwritten G - 1 steps after that read. A pair of lengths
// n0 >= n1 at residue offset o0 of the range (longest first, of length Lmax) keeps its n0 entries from
// (o0 + Lmax - n0) / 2: the next pair's start is at least n0 further on, because n1 >= the next pair's
// n0, and the last ends by (residues + Lmax) / 2, so the rows take 4 bytes a residue, not 8.
//
// A group does not drain between pairs: each thread moves on to the group's next pair as soon as it has
// finished its columns of the last one (thread g starts g steps late, as a first pair of g columns that
// computes nothing), so that the pipeline fills once per launch. Thread 0 takes pair numbers from the
// work counter (longest first) two pairs ahead and, on starting pair x, leaves pair x + 1 in a ring of
// four in shared memory, where the other threads find it when they get there; a pair is at least G columns long (shorter ones are
// padded), so that no entry is overwritten before thread G - 1 has read it. Each thread folds its best
// score of a pair into the score array with an atomic max (zeroed before the first pass).
//
// Glocal (GL, as in sw_search.cu): no clamp at 0; the host puts the query's padding rows before it, so that
// its last row is the last tile's last (thread G - 1, register R - 1), the only one folded into the best
// score, and gives them a profile row of go (S = 0), so that they keep H = 0 (row 0); column 0 of each
// pair holds G = H(i, 0) - go for the tile's rows (`row0`: the query row before the tile's first, less the
// padding), and the padding column scores -(go + ge + 1). Only the last pass folds a score (the host
// fills the scores with INT_MIN and adds H(m, 0)).
//
// Range and padding: as in sw_search.cu (the host recomputes a best score >= 32767 - max S - go in
// 32-bit; padding rows and columns score -16384 and cannot raise the best score).
#include "common.cuh"

struct SpItem {  // one pair of the ring: sequences first + 2 * pair and first + 2 * pair + 1
    int o0, n0, n1, pair;  // residue offset of the first (in the range), lengths (n1 = 0: none); n0 < 0: no pair
};

struct SpArgs {
    const u8 *res;            // residues of the range: sequence `first` starts at res[0]
    const long long *off;     // offsets of the length-ordered database (global, not rebased)
    int first, count;         // the range: sequences first .. first + count - 1, in pairs
    const unsigned *profile;  // the pass's tile: A1 rows of G x R words, (S(q_i, b) + go) & 0xffff
    int A1, pad, go, ge;
    int read_bound, write_bound;  // passes after the first read the row above; all but the last write it
    uint2 *bound;             // per pair, from (o0 + Lmax - n0) / 2: (G, vertical gap) of the tile's last row
    int *scores;              // best score of sequence s at scores[s] (length order), by atomicMax
    int *next;                // work counter (zero at launch), in pairs
    int row0;                 // glocal: query rows before the tile's first, less the padding rows (< 0 in them)
};

// Glocal column 0: G = H(i, 0) - go of query row i (1-based; i <= 0: a padding row, H = 0), both halves.
__device__ __forceinline__ unsigned sp_border(int i, int go, int ge) {
    const int g = i >= 1 ? -(2 * go + (i - 1) * ge) : -go;
    return ((unsigned)g & 0xffffu) * 0x10001u;
}

__device__ __forceinline__ uint4 sp_lds128(unsigned addr) {
    uint4 v;
    asm("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}

// Pair `pair` of the range (n0 = -1 past the end).
__device__ __forceinline__ SpItem sp_item(const SpArgs &a, int pair, long long base) {
    SpItem it;
    it.pair = pair;
    if (2 * pair < a.count) {
        const int s0 = a.first + 2 * pair;
        const long long o0 = a.off[s0], o1 = a.off[s0 + 1];
        it.o0 = (int)(o0 - base);
        it.n0 = (int)(o1 - o0);
        it.n1 = 2 * pair + 1 < a.count ? (int)(a.off[s0 + 2] - o1) : 0;
    } else {
        it.o0 = 0;
        it.n0 = -1;
        it.n1 = 0;
    }
    return it;
}

template <int G, int R, bool GL>
__global__ void __launch_bounds__(256, 2) sw_profile(const SpArgs a) {
    static_assert(R % 4 == 0 && G >= 4 && 32 % G == 0, "R a multiple of 4, G of 4, 8, 16 or 32");
    // Words per thread in a profile row: an odd number of 16-byte chunks, so that the threads g of a group
    // in a quarter-warp read different bank quads. Groups of 4 share a quarter-warp two by two: a row is
    // then padded to a multiple of 8 chunks and the second group reads a copy of the profile 4 chunks
    // further on (its quads are the first group's plus 4).
    constexpr int SEG = ((R / 4) | 1) * 4;
    constexpr int COPIES = G == 4 ? 2 : 1;
    constexpr int ROW = G * SEG + (G == 4 ? 16 : 0);
    extern __shared__ unsigned sp_smem[];
    const int copy_words = a.A1 * ROW + (COPIES > 1 ? 16 : 0);
    for (int k = threadIdx.x; k < a.A1 * G * R; k += blockDim.x) {
        const int b = k / (G * R), i = k % (G * R);
        const unsigned w = a.profile[k];
#pragma unroll
        for (int c = 0; c < COPIES; ++c) sp_smem[c * copy_words + b * ROW + (i / R) * SEG + i % R] = w;
    }
    SpItem *ring = (SpItem *)(sp_smem + COPIES * copy_words) + 4 * (threadIdx.x / G);
    const unsigned full = 0xffffffffu;
    const int g = threadIdx.x % G;
    const long long base = a.off[a.first];
    const int lmax = (int)(a.off[a.first + 1] - base);  // the range's longest sequence: its first
    int pending = 0;
    if (g == 0) {
        ring[0] = sp_item(a, atomicAdd(a.next, 1), base);
        ring[1] = sp_item(a, atomicAdd(a.next, 1), base);
        pending = atomicAdd(a.next, 1);
    }
    __syncthreads();

    typedef unsigned V;
    const V nge = ((unsigned)(-a.ge) & 0xffffu) * 0x10001u, neg_go = ((unsigned)(-a.go) & 0xffffu) * 0x10001u;
    const V nmin = ((unsigned)(-min(a.ge, a.go)) & 0xffffu) * 0x10001u;
    const unsigned lane_base = (unsigned)__cvta_generic_to_shared(sp_smem) +
                               4 * (g * SEG + (COPIES > 1 ? ((threadIdx.x / G) & 1) * copy_words : 0));
    V Gr[R], F[R];
#pragma unroll
    for (int r = 0; r < R; ++r) Gr[r] = F[r] = neg_go;
    const V floor = GL ? 0x80008000u : 0u;  // the best score before any cell
    const bool track = GL && !a.write_bound && g == G - 1;  // glocal: this thread holds the last query row
    V best = floor, in_g = neg_go, in_e = neg_go, diag_in = neg_go;
    // The thread's place in the group's stream: pair x (x = -1: the lead-in of g columns), column j of L.
    SpItem it;
    it.o0 = 0; it.n0 = 0; it.n1 = 0; it.pair = -1;
    int x = -1, j = 0, L = g;
    bool live = true;
    unsigned b0 = a.pad, b1 = a.pad;
    uint2 bnd = make_uint2(neg_go, neg_go);
    // Above a later pass, the padding columns past a pair's end (no row was kept for them): H = 0 locally;
    // glocal, no better than column 0 there (a padding column must never beat the real ones).
    const V pad_top = GL ? sp_border(a.row0, a.go, a.ge) : neg_go;

    // Next pair: fold the best score of the one done, take the next from the ring, reset the columns.
    auto advance = [&]() {
        if (x >= 0 && it.n0 >= 0 && (!GL || track)) {
            const int s0 = a.first + 2 * it.pair;
            atomicMax(a.scores + s0, (int)(short)(best & 0xffffu));
            if (it.n1 > 0) atomicMax(a.scores + s0 + 1, (int)best >> 16);
        }
        best = floor;
        ++x;
        if (g == 0 && x >= 1) {  // thread 0 is the first to get here: the pair after the next into the ring
            ring[(x + 1) & 3] = sp_item(a, pending, base);
            pending = atomicAdd(a.next, 1);
        }
        it = ring[x & 3];
        live = it.n0 >= 0;
        L = live ? max(it.n0, G) : 0x7fffffff;
        j = 0;
        diag_in = GL ? sp_border(a.row0 + g * R, a.go, a.ge) : neg_go;  // H(i, 0) left of the first column
#pragma unroll
        for (int r = 0; r < R; ++r) Gr[r] = F[r] = GL ? sp_border(a.row0 + g * R + r + 1, a.go, a.ge) : neg_go;
    };
    // The letters (and for thread 0 the row above) of the thread's next column.
    auto fetch = [&]() {
        b0 = j < it.n0 ? __ldg(a.res + it.o0 + j) : a.pad;
        b1 = j < it.n1 ? __ldg(a.res + it.o0 + it.n0 + j) : a.pad;
        if (g == 0 && a.read_bound)
            bnd = j < it.n0 ? a.bound[((it.o0 + lmax - it.n0) >> 1) + j] : make_uint2(pad_top, pad_top);
    };
    if (L == 0) advance();
    fetch();
    __syncwarp(full);

    while (__any_sync(full, live)) {
        if (g == 0) {
            in_g = bnd.x;
            in_e = bnd.y;
        }
        const unsigned p0 = lane_base + 4 * ROW * b0, p1 = lane_base + 4 * ROW * b1;
        V d = diag_in, e = in_e, pair = 0;
#pragma unroll
        for (int c = 0; c < R / 4; ++c) {
            const uint4 w0 = sp_lds128(p0 + 16 * c), w1 = sp_lds128(p1 + 16 * c);
            const V s4[4] = {w0.x + w1.x * 65536u, w0.y + w1.y * 65536u, w0.z + w1.z * 65536u,
                             w0.w + w1.w * 65536u};
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int r = 4 * c + u;
                F[r] = __viaddmax_s16x2(F[r], nge, Gr[r]);         // horizontal gap
                const V t = GL ? __viaddmax_s16x2(d, s4[u], F[r])         // max(diagonal, F)
                               : __viaddmax_s16x2_relu(d, s4[u], F[r]);  // max(diagonal, F, 0); H = max(t, V)
                // Glocal: the last row's H = max(t, V), V the vertical gap into it (here, unlike along a
                // row, a V-cell can beat every t of its row: the query's tail in a gap past the subject).
                if (GL && r == R - 1 && track) best = __vimax3_s16x2(best, t, e);
                const V tg = add16(t, neg_go);
                d = Gr[r];
                Gr[r] = __viaddmax_s16x2(e, neg_go, tg);           // G = H - go
                e = __viaddmax_s16x2(e, nmin, tg);                 // vertical gap of the row below
                if (!GL) {
                    if (r & 1) best = __vimax3_s16x2(best, pair, t);
                    else pair = t;
                }
            }
        }
        if (g == G - 1 && a.write_bound && x >= 0 && j < it.n0)
            a.bound[((it.o0 + lmax - it.n0) >> 1) + j] = make_uint2(Gr[R - 1], e);
        diag_in = in_g;
        in_g = __shfl_up_sync(full, Gr[R - 1], 1, G);
        in_e = __shfl_up_sync(full, e, 1, G);
        if (++j == L) advance();
        fetch();
        __syncwarp(full);  // thread 0's ring entries are seen by the others
    }
}

// The host (cuda/search.py PROFILE_CONFIGS) runs them on sm_90 and later; older GPUs compile them with
// emulated DPX instructions (checked for spills in CI) but take plan "wider".
#define SP_LOCAL(G, R) template __global__ void sw_profile<G, R, false>(const SpArgs);
// Glocal up to 28 rows a thread: its column-0 set-up spills at 32 and 36 (cuda/scanplan.py PROFILE_CONFIGS_GLOCAL).
#define SP_ONE(G, R) SP_LOCAL(G, R) template __global__ void sw_profile<G, R, true>(const SpArgs);
SP_ONE(4, 16)
SP_ONE(4, 20)
SP_ONE(4, 24)
SP_ONE(4, 28)
SP_LOCAL(4, 32)
SP_LOCAL(4, 36)
SP_ONE(8, 16)
SP_ONE(8, 20)
SP_ONE(8, 24)
SP_ONE(8, 28)
SP_LOCAL(8, 32)
SP_ONE(16, 16)
SP_ONE(16, 20)
SP_ONE(16, 24)
SP_ONE(16, 28)
SP_LOCAL(16, 32)
SP_ONE(32, 16)
SP_ONE(32, 20)
SP_ONE(32, 24)
SP_ONE(32, 28)
