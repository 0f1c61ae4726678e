// Database search: Smith-Waterman scores of one query against many database sequences.
//
// Layout (after the intra-sequence scheme of CUDASW++4.0, Schmidt et al., BMC Bioinformatics 2024; our
// own code). The database is sorted by length and cut into partitions; a group of G threads (4..32, a
// divisor of the warp) scores one database sequence, or in the packed 16-bit form two sequences of
// nearly the same length, one per halfword of every register. Thread g of the group keeps R consecutive
// database columns in registers (H and F of the last row, and the score-table offset of its column's
// residues); the query is streamed row by row: at step k thread g computes query row k - g over its R
// columns, taking H and E of the column to its left from thread g - 1 by one shuffle each. No DP state
// goes through memory while a sequence fits in the G x R columns of one pass; longer sequences take
// several passes of G x R columns, the group's last thread writing the boundary column (H and E per
// query row) that the first thread reads in the next pass.
//
// Score lookups. The 16-bit form keeps 32 copies of the (A + 1) x (A + 1) table S + go in shared memory,
// interleaved so that lane l's copy lies in bank l: the loads of a warp never conflict (a table indexed by
// letter pairs, one load per register, measured 3.45 bank wavefronts per load, which bound the kernel).
// A register's two scores take two loads (row offset of the query letter + the column's offset for each
// sequence) and one multiply-add that merges them. The 32-bit form (recomputation) reads one plain copy.
//
// Values are kept as G = H - go, E and F, all >= -go. A cell, with E(i, j) known from the column before:
//     F = max(F - ge, G_up), t = max(G_diag + S + go, F, 0), H = max(t, E), G = H - go = max(E - go, t - go),
//     E(i, j + 1) = max(E - ge, H - go) = max(E - min(ge, go), t - go):
// five DPX/add instructions per register plus half a max for the best score, and only one of them
// (the next E) on the dependency chain along the row. The best H is a best t: an H that comes from E
// is below an earlier H of its row.
//
// Range of the 16-bit form: every value is at least -go - ge - 16384 (padding scores) and a value can only
// exceed 32767 through G_diag + S + go, i.e. after an H of at least 32767 - max S was computed (every H
// is at most the best t so far, which is folded into the best score). The host therefore takes a best score >= limit = 32767 - max(S) - go as "may have
// wrapped" and recomputes that sequence with the 32-bit form; below the limit the score is exact.
//
// Glocal (GL: the query whole, the subject's ends free; glsearch36's and edlib's infix): no clamp at 0,
// column 0 holds H(i, 0) = -(go + (i - 1) ge), and the score is the best H of the last query row, which
// only the steps that compute that row fold (every thread reaches it G - 1 steps after the one before; the
// host adds H(m, 0)). Its table differs in two rows: rows before the query take a row whose S + go is go
// everywhere, so that they keep H = 0 (row 0) without the clamp, and the padding column scores
// -(go + ge + 1), bad enough that a padding column never beats the real ones of the last row (a diagonal
// into it costs more than the vertical gap it replaces) and small enough that nothing wraps: the host runs
// the 16-bit form only where every value, down to -(2 go + (m + G) ge) and a score below it, fits.
//
// Rows outside the query (before it, while the group's pipeline fills, and after it, while it drains)
// use the padding letter: before the query they keep H = 0 (as row 0), after it every value comes from a
// real cell minus a gap penalty, so neither changes the best score. Padding columns (past a sequence's
// end) lie right of every real cell, so they cannot change real cells, and the same argument holds.
#include "common.cuh"

#define SW_QPAD 32  // rows of padding before the query in qrow and before row 0 in the boundary columns

// A 32-bit load from shared memory at a 32-bit shared-window address (one add per lookup, no rescaling).
__device__ __forceinline__ unsigned sw_lds(unsigned addr) {
    unsigned v;
    asm("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}

// Boundary rows r0 .. r0 + 3 (r0 a multiple of 4) of a group slot: one 32-byte sector.
__device__ __forceinline__ void sw_load_rows(uint4 (&v)[2], const uint2 *bnd, int r0, size_t stride, int slot) {
    const uint4 *p = (const uint4 *)(bnd + (((size_t)(r0 >> 2) * stride + slot) << 2));
    v[0] = p[0];
    v[1] = p[1];
}

__device__ __forceinline__ void sw_prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// A predicated store, so the compiler keeps the group converged (no branch around it).
__device__ __forceinline__ void sw_store_if(bool pred, uint2 *p, uint2 v) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %0, 0; @p st.global.v2.u32 [%1], {%2, %3}; }"
                 ::"r"((int)pred), "l"(p), "r"(v.x), "r"(v.y) : "memory");
}

template <bool WIDE>
struct SwOps;

template <>
struct SwOps<false> {  // two sequences per register, s16x2
    typedef unsigned V;
    static __device__ __forceinline__ V splat(int v) { return ((unsigned)v & 0xffffu) * 0x10001u; }
    static __device__ __forceinline__ V addmax(V a, V b, V c) { return __viaddmax_s16x2(a, b, c); }
    static __device__ __forceinline__ V add(V a, V b) { return add16(a, b); }
    static __device__ __forceinline__ V addmax_relu(V a, V b, V c) { return __viaddmax_s16x2_relu(a, b, c); }
    static __device__ __forceinline__ V max3(V a, V b, V c) { return __vimax3_s16x2(a, b, c); }
    static __device__ __forceinline__ V max2(V a, V b) { return __vmaxs2(a, b); }
    static __device__ __forceinline__ int lo(V v) { return (int)(short)(v & 0xffffu); }
    static __device__ __forceinline__ int hi(V v) { return (int)v >> 16; }
};

template <>
struct SwOps<true> {  // one sequence per register, 32-bit
    typedef int V;
    static __device__ __forceinline__ V splat(int v) { return v; }
    static __device__ __forceinline__ V addmax(V a, V b, V c) { return __viaddmax_s32(a, b, c); }
    static __device__ __forceinline__ V add(V a, V b) { return a + b; }
    static __device__ __forceinline__ V addmax_relu(V a, V b, V c) { return __viaddmax_s32_relu(a, b, c); }
    static __device__ __forceinline__ V max3(V a, V b, V c) { return __vimax3_s32(a, b, c); }
    static __device__ __forceinline__ V max2(V a, V b) { return max(a, b); }
    static __device__ __forceinline__ int lo(V v) { return v; }
    static __device__ __forceinline__ int hi(V v) { return v; }
};

struct SwArgs {
    const u8 *res;           // database residue codes, sequences in length order (longest first)
    const long long *off;    // (count + 1) offsets into res
    const int *list;         // optional: the sequences (positions in length order) to score, else first..
    int first, count;        // sequences first .. first + count - 1 (or list[0 .. count - 1])
    const int *qrow;         // padded query: byte offset of row i's table row at qrow[SW_QPAD + i]
    int m;                   // query length
    int steps;               // steps per pass, a multiple of 4, >= m + G - 1
    const unsigned *table;   // score table (global copy), table_words words
    int table_words;
    int pad;                 // padding letter (alphabet size A); table rows have A + 1 letters
    int go, ge;
    uint2 *bound;            // multi-pass: 2 x (steps + SW_QPAD + 40) x group slots (G, E) pairs
    int *scores;             // score of sequence s at scores[s] (position in length order)
    int *next;               // work counter (zero at launch): warps take their next groups from it
};

// One step of a thread: its R columns of one query row (`row`: the table row's address), d and e the
// left column's G one row up and E, both carried along the row. TRACK 1 folds every t into `best`
// (local); TRACK 2 folds the row's t into `best` where `last` (glocal: the last query row); 0 folds none.
template <bool WIDE, int R, bool GL, int TRACK>
__device__ __forceinline__ void sw_cells(typename SwOps<WIDE>::V (&Gr)[R], typename SwOps<WIDE>::V (&F)[R],
                                         const unsigned (&at0)[R], const unsigned (&at1)[WIDE ? 1 : R],
                                         unsigned row, typename SwOps<WIDE>::V d, typename SwOps<WIDE>::V &e,
                                         typename SwOps<WIDE>::V &best, bool last, typename SwOps<WIDE>::V nge,
                                         typename SwOps<WIDE>::V neg_go, typename SwOps<WIDE>::V nmin) {
    typedef SwOps<WIDE> O;
    typedef typename O::V V;
    V pair = O::splat(0), rowbest = best;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        // Packed: the two halfwords come from two conflict-free loads (low 16 bits each), merged
        // by a multiply-add, which runs beside the DPX instructions' pipe.
        const V s = WIDE ? (V)sw_lds(row + at0[r]) : (V)(sw_lds(row + at0[r]) + sw_lds(row + at1[r]) * 65536u);
        F[r] = O::addmax(F[r], nge, Gr[r]);                                    // F(i, j)
        const V t = GL ? O::addmax(d, s, F[r]) : O::addmax_relu(d, s, F[r]);  // H = max(t, E)
        const V tg = O::add(t, neg_go);
        d = Gr[r];
        Gr[r] = O::addmax(e, neg_go, tg);          // G(i, j) = H - go
        e = O::addmax(e, nmin, tg);                // E(i, j + 1) = max(E - ge, H - go)
        if (TRACK != 0) {                          // the best H is a best t (an E-cell is below an
            if (r & 1) rowbest = O::max3(rowbest, pair, t);  // earlier H of its row)
            else pair = t;
        }
    }
    if (TRACK != 0 && (R & 1)) rowbest = O::max2(rowbest, pair);
    if (TRACK == 1 || (TRACK == 2 && last)) best = rowbest;
}

// One group of G threads: one sequence (WIDE) or two, R columns per thread, passes of G x R columns
// (MULTI: the boundary column between passes through `bnd`).
template <bool WIDE, int G, int R, bool MULTI, bool GL>
__device__ __forceinline__ void sw_group(const SwArgs &a, int group, bool valid, int lane, int A1, uint2 *bnd,
                                         size_t stride, int slot) {
    typedef SwOps<WIDE> O;
    typedef typename O::V V;
    extern __shared__ unsigned sw_table[];
    const unsigned mask = 0xffffffffu;  // the whole warp runs every group's steps (see below)
    const int per = WIDE ? 1 : 2;
    const int k0 = valid ? group * per : 0, k1 = k0 + 1;
    const int s0 = a.list ? a.list[k0] : a.first + k0;
    const bool two = valid && !WIDE && k1 < a.count;
    const int s1 = two ? (a.list ? a.list[k1] : a.first + k1) : s0;
    const long long o0 = a.off[s0], o1 = a.off[s1];
    const int n0 = valid ? (int)(a.off[s0 + 1] - o0) : 0, n1 = two ? (int)(a.off[s1 + 1] - o1) : 0;
    // Every group of the warp makes as many passes as the warp's longest: groups that diverged (other pass
    // counts) would issue their instructions one after the other for the rest of the kernel.
    const int n = __reduce_max_sync(mask, max(n0, n1));
    const int span = a.steps + SW_QPAD + 40;  // rows prefetched up to 32 steps past the end
    const V nge = O::splat(-a.ge), neg_go = O::splat(-a.go), nmin = O::splat(-min(a.ge, a.go));
    const unsigned tbase = (unsigned)__cvta_generic_to_shared(sw_table);
    const unsigned own = tbase + 4 * (threadIdx.x & 31);  // this lane's copy of the packed table
    V best = O::splat(GL ? (WIDE ? -(1 << 30) : -32768) : 0);  // glocal: below every score
    const int *qp = a.qrow + SW_QPAD - lane;  // qp[k]: this thread's row offset at step k (row k - lane)

    for (int c0 = 0, pass = 0; c0 < n; c0 += G * R, ++pass) {
        // Shared addresses of the column's scores within a table row, less the row's offset: the packed
        // form reads this lane's copy of the table (bank = lane), once for each sequence.
        unsigned at0[R], at1[WIDE ? 1 : R];
        V Gr[R], F[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int j = c0 + lane * R + r;
            const int b0 = j < n0 ? a.res[o0 + j] : a.pad;
            if (WIDE) {
                at0[r] = tbase + 4 * b0;
            } else {
                const int b1 = j < n1 ? a.res[o1 + j] : a.pad;
                at0[r] = own + 128 * b0;
                at1[r] = own + 128 * b1;
            }
            Gr[r] = neg_go;  // row 0: H = 0
            F[r] = neg_go;
        }
        // Boundary columns, ping-pong between passes: row i at SW_QPAD + i (rows < 0 are never read).
        // Boundary rows r (row i of the query at SW_QPAD + i, the second buffer span rows further) of group
        // slot `slot` at entry ((r / 4) * stride + slot) * 4 + r % 4: four rows of a group share a
        // 32-byte sector (loaded at once), and the groups of a warp sit side by side.
        const int rin = (pass & 1) * span + SW_QPAD, rout = ((pass + 1) & 1) * span + SW_QPAD - (G - 1);
        const bool first_pass = c0 == 0;
        // Inputs of the first column: G and E of the column to the left (row k - lane), and its G one row up.
        // Glocal: column 0's G = H(i, 0) - go of the row computed next, -(2 go + (i - 1) ge) (E as G).
        V border = O::splat(-2 * a.go);
        V in_g = GL && lane == 0 ? border : neg_go, in_e = in_g, diag_in = neg_go;
        // Query rows and (multi-pass) boundary entries are loaded one block of 4 steps ahead.
        int q_next[4];
        uint4 b_next[2];  // rows k + 4 .. k + 7 of the boundary: every lane loads them, lane 0 keeps them
        const bool boundary = MULTI && !first_pass;
#pragma unroll
        for (int u = 0; u < 4; ++u) q_next[u] = qp[u];
        if (boundary) sw_load_rows(b_next, bnd, rin, stride, slot);
        for (int k = 0; k < a.steps; k += 4) {
            // Glocal: the blocks of 4 steps in which some thread computes the last query row.
            const bool track = GL && k + 3 >= a.m - 1 && k <= a.m + G - 2;
            int qcur[4];
            uint2 bcur[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                qcur[u] = q_next[u];
                q_next[u] = qp[k + 4 + u];  // qrow and the boundary columns are padded past the last step
            }
            if (boundary) {
                bcur[0] = make_uint2(b_next[0].x, b_next[0].y);
                bcur[1] = make_uint2(b_next[0].z, b_next[0].w);
                bcur[2] = make_uint2(b_next[1].x, b_next[1].y);
                bcur[3] = make_uint2(b_next[1].z, b_next[1].w);
                sw_load_rows(b_next, bnd, rin + k + 4, stride, slot);
                // The buffer outgrows L2 on large databases: ask for rows 32 steps ahead now.
                sw_prefetch_l2(bnd + (((size_t)((rin + k + 32) >> 2) * stride + slot) << 2));
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int step = k + u;
                if (boundary) {  // lane 0: left boundary from the previous pass (row `step`)
                    const bool take = lane == 0 && step < a.m;
                    in_g = take ? (V)bcur[u].x : in_g;
                    in_e = take ? (V)bcur[u].y : in_e;
                }
                V e = in_e;
                const unsigned row = qcur[u];
                if (!GL) {
                    sw_cells<WIDE, R, false, 1>(Gr, F, at0, at1, row, diag_in, e, best, false, nge, neg_go, nmin);
                } else if (track) {
                    sw_cells<WIDE, R, true, 2>(Gr, F, at0, at1, row, diag_in, e, best, step - lane == a.m - 1, nge,
                                               neg_go, nmin);
                } else {
                    sw_cells<WIDE, R, true, 0>(Gr, F, at0, at1, row, diag_in, e, best, false, nge, neg_go, nmin);
                }
                if (MULTI) {
                    const int r = rout + step;
                    sw_store_if(lane == G - 1, bnd + (((size_t)(r >> 2) * stride + slot) << 2) + (r & 3),
                                make_uint2((unsigned)Gr[R - 1], (unsigned)e));
                }
                diag_in = in_g;
                in_g = (V)__shfl_up_sync(mask, (unsigned)Gr[R - 1], 1, G);
                in_e = (V)__shfl_up_sync(mask, (unsigned)e, 1, G);
                if (GL) border = O::add(border, nge);
                if (lane == 0) {  // column 0 (first pass; later passes read the boundary above)
                    in_g = GL ? border : neg_go;
                    in_e = in_g;
                }
            }
        }
        if (MULTI) __syncwarp(mask);  // the boundary column is complete before the next pass reads it
    }
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) best = O::max2(best, (V)__shfl_xor_sync(mask, (unsigned)best, o, G));
    if (lane == 0) {
        if (valid) a.scores[s0] = O::lo(best);
        if (two) a.scores[s1] = O::hi(best);
    }
}

// The kernel: a persistent grid over the groups of one partition (or of a list of sequences).
template <bool WIDE, int G, int R, bool MULTI, bool GL>
__global__ void __launch_bounds__(256, R > 20 ? 1 : 2) sw_scan(const SwArgs a) {
    extern __shared__ unsigned sw_table[];
    for (int k = threadIdx.x; k < a.table_words; k += blockDim.x) sw_table[k] = a.table[k];
    __syncthreads();

    const int lane = threadIdx.x % G;
    const int per = WIDE ? 1 : 2;  // sequences per group
    const int gpw = 32 / G;        // groups per warp
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, warps = gridDim.x * blockDim.x / 32;
    const int slot = warp * gpw + (threadIdx.x & 31) / G;
    const int groups = (a.count + per - 1) / per;
    const int A1 = a.pad + 1;
    const size_t stride = (size_t)warps * gpw;  // group slots in the grid
    uint2 *bnd = a.bound;
    // A persistent grid: the table is loaded once per block, and each warp takes the next gpw groups from a
    // counter (longest first, so the last to start are the shortest: little tail). The loop is uniform
    // across the warp; groups past the end run as empty sequences.
    for (;;) {
        int base = 0;
        if ((threadIdx.x & 31) == 0) base = atomicAdd(a.next, 1);
        base = __shfl_sync(0xffffffffu, base, 0) * gpw;
        if (base >= groups) break;
        const int group = base + (threadIdx.x & 31) / G;
        sw_group<WIDE, G, R, MULTI, GL>(a, group, group < groups, lane, A1, bnd, stride, slot);
    }
}

#define SW_ONE(W, G, R, M)                                              \
    template __global__ void sw_scan<W, G, R, M, false>(const SwArgs); \
    template __global__ void sw_scan<W, G, R, M, true>(const SwArgs);
// The configurations the host uses (cuda/search.py CONFIGS; as many columns per thread as fit in 128
// registers without spilling): with Hopper's DPX instructions, where they are emulated, and both.
SW_ONE(false, 4, 4, false)
SW_ONE(false, 4, 8, false)
SW_ONE(false, 4, 12, false)
SW_ONE(false, 8, 10, false)
SW_ONE(false, 8, 12, false)
SW_ONE(false, 16, 10, false)
SW_ONE(false, 16, 12, false)
SW_ONE(false, 32, 10, false)
SW_ONE(false, 32, 12, false)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
SW_ONE(false, 4, 16, false)
SW_ONE(false, 8, 14, false)
SW_ONE(false, 8, 16, false)
SW_ONE(false, 8, 18, false)
SW_ONE(false, 16, 14, false)
SW_ONE(false, 16, 16, false)
SW_ONE(false, 16, 18, false)
SW_ONE(false, 32, 14, false)
SW_ONE(false, 32, 16, false)
SW_ONE(false, 32, 18, false)
SW_ONE(false, 32, 20, false)
SW_ONE(false, 32, 24, false)  // wider single passes: 168 registers, one block per SM (plan "wide")
SW_ONE(false, 32, 28, false)
SW_ONE(false, 32, 32, false)  // plan "wider": up to 1,280 residues, 213-228 registers
SW_ONE(false, 32, 40, false)
SW_ONE(false, 4, 14, true)
SW_ONE(false, 8, 14, true)
SW_ONE(false, 16, 14, true)
SW_ONE(false, 32, 14, true)
#endif
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
SW_ONE(false, 8, 8, false)
SW_ONE(false, 16, 8, false)
SW_ONE(false, 32, 8, false)
SW_ONE(false, 4, 6, true)
SW_ONE(false, 8, 6, true)
SW_ONE(false, 16, 6, true)
SW_ONE(false, 32, 6, true)
#endif
SW_ONE(true, 32, 14, true)

// The database in length order: sequence s of the output is sequence order[s] of the input. One warp
// per sequence, 8 per block.
extern "C" __global__ void sw_gather(const u8 *src, const long long *src_off, const int *order,
                                     const long long *dst_off, u8 *dst, long long count) {
    const long long s = (long long)blockIdx.x * 8 + threadIdx.x / 32;
    if (s >= count) return;
    const long long from = src_off[order[s]], to = dst_off[s], n = dst_off[s + 1] - to;
    for (long long k = threadIdx.x % 32; k < n; k += 32) dst[to + k] = src[from + k];
}

// The scan's scores back to database order: out[order[s]] = scores[s]. Here rather than CuPy's scatter,
// whose kernel each process generates and loads at its first use (~50 ms of a small search's start).
extern "C" __global__ void sw_scatter_scores(const int *scores, const int *order, int *out, long long count) {
    const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (s < count) out[order[s]] = scores[s];
}
