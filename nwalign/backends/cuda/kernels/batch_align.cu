// Full alignments (with traceback) of many pairs in one launch: a search's reported hits, the pairs of
// `allpairs` that all need their columns (see nwalign/backends/cuda/batch.py). One warp per pair; the warps of a
// persistent grid take the pairs in the order given (largest first), so the longest pair starts at once.
//
// A warp sweeps its pair as wave_score.cu's kernel sweeps one band (Gotoh's recurrence, the query along
// rows): the query in bands of 32 x 8 rows, lane k holding 8 consecutive rows' H and E in registers, the
// target streamed left to right (at step s lane k computes column s - k + 1, the row above coming from lane
// k - 1 by a shuffle). The bands of a pair run one after another in the same warp: lane 31's last row goes
// to the pair's hand-off row, 32 columns at a time, and the next band reads it 32 columns ahead; a column
// is read and later overwritten by the same lane, so no synchronisation is needed.
//
// The cell update is wave_score.cu's: the substitution scores of a lane's 8 rows for one target letter as
// signed bytes in a per-lane query profile in shared memory (BYTES; one 64-bit shared load per step), F
// carried as F + go so that H and the next row's F are one DPX operation each, and every cell's four
// direction bits appended as the signs of differences (global mode: bit planes; local mode: the CPU
// engine's nibbles, a local start being a fourth source). A step's 32 words of directions are stored in one
// coalesced row: layout [band][step][lane], so cell (i, j) of lane k's rows is in the word of step j + k - 1.
// The warp then walks the path back from the best end cell (trace.cuh), carries a global path on to the
// origin and reverses it in place: the pair's columns come back in alignment order. Same recurrence, same
// tie rules as the CPU engine (best end cell: larger score, then earlier row, then earlier column), hence
// the same alignments.
//
// Requires 0 <= ge <= go (F's update above; checked on the host). Scores outside [-128, 127] take the
// !BYTES kernels, which read an int32 matrix from shared memory for each cell.
#include "wave_common.cuh"
#include "trace.cuh"

struct BatchJob {
    long long q, t;   // offsets of the query's and the target's codes
    long long dirs;   // offset of the pair's direction words: ceil(m / 256) * (n + 31) * 32
    long long row;    // offset of the pair's hand-off row: n + 1 words of 64 bits
    long long ops;    // offset of the pair's columns: m + n bytes
    int m, n;         // lengths, >= 1
};
#define BATCH_OUT 6   // per pair: score, end row, end column, start row, start column, number of columns
#define BATCH_WARPS 4 // warps per block

struct BatchArgs {
    const BatchJob *jobs; int njobs;
    const u8 *q; const u8 *t; const int *S; int A; int go; int ge;
    u64 *rows; unsigned *dirs; u8 *ops; int *out;
};

// Lane `lane`'s input for chunk c0 (columns c0 + 1 .. c0 + 32, one per lane): the hand-off word {H of the
// band above's last row, F + go of this band's first row} and the target code. Band 0 reads row 0.
template <int MODE>
__device__ __forceinline__ void batch_fetch(const BatchArgs &a, const u8 *t, int n, const u64 *row, int b, int c0,
                                            int lane, u64 &w, int &tc) {
    const int jc = c0 + 1 + lane;
    if (jc <= n) {
        if (b == 0) {  // H(0, j), and F(1, j) + go = H(0, j) (a gap opened below row 0)
            const unsigned h = (unsigned)nw_border(jc, MODE, a.go, a.ge);
            w = (u64)h | (u64)h << 32;
        } else {
            w = row[jc];
        }
        tc = t[jc - 1];
    }
}

template <int MODE, bool BYTES>
__device__ void batch_pair(const BatchArgs &a, const BatchJob &J, unsigned *prof, const int *sS, int lane,
                           int *out) {
    constexpr int R = NW_DIR_ROWS, BAND = 32 * R;
    constexpr bool LOCAL = MODE == NW_LOCAL;
    const u8 *q = a.q + J.q, *t = a.t + J.t;
    const int m = J.m, n = J.n, go = a.go, ge = a.ge;
    const size_t steps = (size_t)n + 31;  // steps of a band: words per lane and band
    u64 *row = a.rows + J.row;
    unsigned *dirs = a.dirs + J.dirs;
    // Local: the empty alignment at (0, 0) scores 0 and precedes every cell.
    int best_s = LOCAL ? 0 : NW_NEG, best_i = 0, best_j = 0;
    int corner = 0;
    const int nbands = (m + BAND - 1) / BAND;
    for (int b = 0; b < nbands; ++b) {
        const int row0 = b * BAND + lane * R;  // this lane's rows: row0 + 1 .. row0 + R
        int qa[R];
        if (BYTES) {  // prof[(c * 32 + lane) * 2 + w]: S(q_i, c) of rows 4w + 1 .. 4w + 4 as signed bytes
#pragma unroll
            for (int r = 0; r < R; ++r) qa[r] = row0 + r + 1 <= m ? q[row0 + r] * a.A : -1;
            __syncwarp();  // the previous band's last reads are done
            build_byte_profile<R, 2>(prof, qa, sS, a.A, lane);
            __syncwarp();
        } else {
#pragma unroll
            for (int r = 0; r < R; ++r) qa[r] = row0 + r + 1 <= m ? q[row0 + r] * a.A : 0;
        }
        int H[R], E[R], bs[R], bj[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            H[r] = nw_border(row0 + r + 1, MODE, go, ge);
            E[r] = H[r] - go;  // E(i, 1): a gap opened from H(i, 0)
            bs[r] = NW_NEG;
            bj[r] = 0;
        }
        int diag = nw_border(row0, MODE, go, ge);  // H(row0, j - 1)
        int up_h = 0, up_f = NW_NEG, up_t = 0;      // H of the last row, F + go of the row below, the letter
        u64 in_w = 0, nx_w = 0, out_w = 0;          // lane 0's chunk, the next one, lane 31's output chunk
        int in_t = 0, nx_t = 0;
        unsigned ebits = 0;                         // the E-extended bits of the next column
        unsigned *dband = dirs + (size_t)b * steps * 32 + lane;
        for (int s = 0; s < n + 31; ++s) {
            if ((s & 31) == 0) {
                if (s == 0) batch_fetch<MODE>(a, t, n, row, b, 0, lane, nx_w, nx_t);
                in_w = nx_w; in_t = nx_t;
                if (s + 32 < n) batch_fetch<MODE>(a, t, n, row, b, s + 32, lane, nx_w, nx_t);
            }
            int h_in = __shfl_up_sync(FULL_MASK, up_h, 1);
            int f_in = __shfl_up_sync(FULL_MASK, up_f, 1);
            int t_in = __shfl_up_sync(FULL_MASK, up_t, 1);
            const int h0 = __shfl_sync(FULL_MASK, (int)(unsigned)in_w, s & 31);
            const int f0 = __shfl_sync(FULL_MASK, (int)(unsigned)(in_w >> 32), s & 31);
            const int t0 = __shfl_sync(FULL_MASK, in_t, s & 31);
            if (lane == 0) { h_in = h0; f_in = f0; t_in = t0; }
            const int j = s - lane + 1;
            unsigned word = 0;
            if (j >= 1 && j <= n) {
                unsigned p[2];
                if (BYTES) { const uint2 v = ((const uint2 *)prof)[t_in * 32 + lane]; p[0] = v.x; p[1] = v.y; }
                int hd = diag, fg = f_in, h_up = h_in;  // h_up: H(i-1, j); fg: F(i, j) + go
                word = ebits;
                unsigned enext = 0;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    int sc;
                    if (BYTES) {
                        sc = profile_byte(p, r);
                    } else {
                        sc = sS[qa[r] + t_in];
                    }
                    int de, h;
                    if (!LOCAL) {
                        // Bit planes, one funnel shift per bit (each the sign of a difference): E beats the
                        // diagonal, F beats both, F(i, j) extended (F + go > H(i-1, j)), and into the next
                        // column's word, E(i, j + 1) extended (E - ge > H - go); trace.cuh's nw_nibble.
                        const int e_in = E[r], fg_in = fg;
                        h = nw_cell_dpx(hd, sc, E[r], fg, go, ge, de);
                        word = __funnelshift_l(hd + sc - e_in, word, 1);
                        word = __funnelshift_l(de - fg_in + go, word, 1);
                        word = __funnelshift_l(h_up - fg_in, word, 1);
                        enext = __funnelshift_l(h - e_in + (ge - go), enext, 1);
                    } else {  // nibbles from the DPX operations' predicates
                        bool diag_wins, opened;
                        de = __vibmax_s32(hd + sc, E[r], &diag_wins);
                        de = max(de, 0);
                        h = __viaddmax_s32(fg, -go, de);
                        const bool f_wins = h > de;
                        if (!diag_wins && !f_wins) word |= 1u << (4 * r);
                        if (f_wins) word |= 2u << (4 * r);
                        if (h == 0) word |= 3u << (4 * r);
                        if (fg > h_up) word |= 8u << (4 * r);  // F(i, j) + go > H(i-1, j): F extended
                        E[r] = __vibmax_s32(h - go, E[r] - ge, &opened);
                        if (!opened) enext |= 4u << (4 * r);
                        bool keep;  // each row's best cell: the earliest column of its largest score
                        bs[r] = __vibmax_s32(bs[r], h, &keep);
                        if (!keep) bj[r] = j;
                        fg = __viaddmax_s32(fg, -ge, de);  // F(i + 1, j) + go
                    }
                    hd = H[r];
                    H[r] = h;
                    h_up = h;
                }
                diag = h_in;
                up_h = h_up;
                up_f = fg;
                up_t = t_in;
                ebits = enext;
            }
            dband[(size_t)s * 32] = word;
            // Lane 31 finished column s - 30: collect it, and store every 32 columns for the next band.
            if (b + 1 < nbands) {
                const int oh = __shfl_sync(FULL_MASK, up_h, 31);
                const int of = __shfl_sync(FULL_MASK, up_f, 31);
                const int j31 = s - 30;
                if (j31 >= 1) {
                    if (lane == ((j31 - 1) & 31)) out_w = (u64)(unsigned)oh | (u64)(unsigned)of << 32;
                    if ((j31 & 31) == 0 || j31 == n) {
                        const int jc = ((j31 - 1) & ~31) + 1 + lane;
                        if (jc <= j31) row[jc] = out_w;
                    }
                }
            }
        }
        if (LOCAL) {  // the band's best end cells, in the CPU engine's order: score, then row, then column
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int i = row0 + r + 1;
                if (i <= m && nw_band_better(bs[r], i, bj[r], best_s, best_i, best_j)) {
                    best_s = bs[r]; best_i = i; best_j = bj[r];
                }
            }
        } else if (b + 1 == nbands) {  // H holds column n: the lane with row m has H(m, n)
            int hm = 0;
#pragma unroll
            for (int r = 0; r < R; ++r)
                if (row0 + r + 1 == m) hm = H[r];
            corner = __shfl_sync(FULL_MASK, hm, ((m - 1) % BAND) / R);
        }
    }
    if (LOCAL) {  // the warp's best end cell
        for (int o = 16; o > 0; o >>= 1) {
            const int os = __shfl_xor_sync(FULL_MASK, best_s, o);
            const int oi = __shfl_xor_sync(FULL_MASK, best_i, o);
            const int oj = __shfl_xor_sync(FULL_MASK, best_j, o);
            if (nw_band_better(os, oi, oj, best_s, best_i, best_j)) { best_s = os; best_i = oi; best_j = oj; }
        }
    } else {
        best_s = corner; best_i = m; best_j = n;
    }
    __syncwarp();  // the direction words of every lane are written before any lane reads them
    int i = best_i, j = best_j, state = 0, nops = 0, stopped = 0;
    u8 *ops = a.ops + J.ops;
    const auto dir = [&](int ik, int jk) {
        const int li = ik - 1, k = (li / R) % 32;
        return nw_nibble(dirs[((size_t)(li / BAND) * steps + jk + k - 1) * 32 + k], li % R, !LOCAL);
    };
    nw_trace_walk(dir, 0, LOCAL, lane, ops, i, j, state, nops, stopped);
    if (!LOCAL) {  // on along column 0 or row 0 to the origin (one of i, j is 0 here)
        for (int k = lane; k < i + j; k += 32) ops[nops + k] = i ? 1 : 2;
        nops += i + j;
        i = j = 0;
    }
    __syncwarp();
    for (int k = lane; k < nops / 2; k += 32) {  // into alignment order
        const u8 x = ops[k];
        ops[k] = ops[nops - 1 - k];
        ops[nops - 1 - k] = x;
    }
    if (lane == 0) {
        out[0] = best_s; out[1] = best_i; out[2] = best_j; out[3] = i; out[4] = j; out[5] = nops;
    }
}

// Dynamic shared memory: the A x A int32 matrix (padded to an even count: the profile is read as uint2),
// then (BYTES) each warp's query profile, A x 32 x 2 words.
template <int MODE, bool BYTES>
__device__ __forceinline__ void batch_run(const BatchArgs &a) {
    extern __shared__ int shared[];
    int *sS = shared;
    for (int k = threadIdx.x; k < a.A * a.A; k += blockDim.x) sS[k] = a.S[k];
    __syncthreads();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned *prof = (unsigned *)(shared + ((a.A * a.A + 1) & ~1)) + w * a.A * 64;
    const int warp = blockIdx.x * BATCH_WARPS + w;
    const int nwarps = gridDim.x * BATCH_WARPS;
    for (int k = warp; k < a.njobs; k += nwarps)
        batch_pair<MODE, BYTES>(a, a.jobs[k], prof, sS, lane, a.out + BATCH_OUT * k);
}

#define BATCH_KERNEL(NAME, MODE, BYTES) \
    extern "C" __global__ void __launch_bounds__(32 * BATCH_WARPS, 4) NAME(BatchArgs a) { batch_run<MODE, BYTES>(a); }
BATCH_KERNEL(batch_align_global, NW_GLOBAL, true)
BATCH_KERNEL(batch_align_local, NW_LOCAL, true)
BATCH_KERNEL(batch_align_global_int, NW_GLOBAL, false)
BATCH_KERNEL(batch_align_local_int, NW_LOCAL, false)
