// Wavefront kernel for one long pair: every pass of `nwalign pair --backend cuda` (score-only, the forward
// passes that write checkpoint rows, and with STORE the passes that keep each cell's direction bits).
//
// Same sweep as wavefront.cu: the query is cut into bands of 32 x R rows, a warp owns a band, lane k keeps
// R consecutive rows (H, E) in registers and at step s computes column s - k + 1, taking H of the row
// above and F of its first row from lane k - 1 by a warp shuffle. What differs is the hand-off between
// bands and the cell update:
//
// - One hand-off row in global memory, each column a 64-bit word {H of the band's bottom row, F of the
//   next band's first row as H - F (0 .. go), a 15-bit tag naming the band that wrote it}. The word is
//   its own ready flag: lane 31 stores it with one relaxed 64-bit store as soon as the column is done,
//   and the next band's lanes load it LOOKAHEAD steps before lane 0 needs it and re-load only if the
//   tag is not yet the expected one. No fences, no progress counters, no 32-column chunks: a band runs
//   ~32 + lookahead columns behind the one above it. A single row suffices because band b overwrites a
//   column only after it has consumed band b - 1's word there, and band b + 1 waits for b's tag.
//   (The decoupled look-back of Merrill & Garland's single-pass scan packs status and value the same way.)
// - Substitution scores from a per-lane query profile in shared memory: for each target letter, the R
//   scores of the lane's rows as signed bytes, read with one shared load per step and one byte permute
//   (prmt) per cell, instead of one dependent shared-memory lookup per cell.
// - F(i+1, j) = max(F(i, j) - ge, max(H(i-1, j-1) + s, E(i, j)) - go): one DPX operation per row on the
//   path from row to row (go >= ge makes it equal to Gotoh's max(H(i, j) - go, F(i, j) - ge)), with F
//   kept as F + go so that neither it nor H needs a separate subtraction.
//
// - STORE (8 rows per lane): per cell four direction bits, each the sign of a difference appended with a
//   funnel shift (bit planes; local mode: the CPU engine's nibbles), through a shared-memory ring to
//   coalesced rows of `dirs`, layout [band][lane][column]; wavefront.cu's wave_trace reads both forms.
//
// Requires scores in [-128, 127] and 0 <= ge <= go <= 65535 (checked on the host; otherwise the host
// uses wavefront.cu's score pass). Local and semiglobal modes keep each row's best cell (score, earliest
// column); the band's best over rows follows the CPU engine's order (score, then row, then column).
#include "wave_common.cuh"

template <int MODE, int R, bool STORE, bool WINDOW>
__device__ __forceinline__ void score_band(const ScoreArgs &a, unsigned *prof, unsigned *ring, int b, int lane) {
    static_assert(!STORE || R == 8, "stored directions are 8 nibbles per lane and column");
    constexpr int RP = R <= 4 ? 1 : (R <= 8 ? 2 : 4);  // profile words per letter and lane
    constexpr int BAND = 32 * R;
    const int row0 = a.r0 + b * BAND + lane * R;        // this lane's rows: row0 + 1 .. row0 + R
    const int ncols = a.ncols;

    // This lane's query profile: prof[(c * 32 + lane) * RP + w] holds S(q_i, c) of rows 4w .. 4w + 3.
    __syncwarp();  // the previous band's last reads are done
    for (int c = 0; c < a.A; ++c) {
#pragma unroll
        for (int w = 0; w < RP; ++w) {
            unsigned word = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int i = row0 + 4 * w + k + 1;
                const int s = (4 * w + k < R && i <= a.r1) ? a.S[a.q[i - 1] * a.A + c] : 0;
                word |= ((unsigned)s & 0xffu) << (8 * k);
            }
            prof[(c * 32 + lane) * RP + w] = word;
        }
    }
    __syncwarp();

    int H[R], E[R], bs[R], bj[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        H[r] = WINDOW ? NW_NEG : nw_column_border(row0 + r + 1, MODE, a.go, a.ge);
        E[r] = H[r] - a.go;  // E(i, 1): a gap opened from H(i, 0)
        bs[r] = NW_NEG;
        bj[r] = 0;
    }
    // WINDOW: column 0 is a window's left edge inside the matrix: only the top row's cell there is known
    // (band 0 reads row r0 from the hand-off words before writing any), the cells below it are -inf.
    int diag = !WINDOW ? nw_column_border(row0, MODE, a.go, a.ge)  // H(row0, j - 1)
                       : (row0 == a.r0 ? (int)(unsigned)a.row[0] : NW_NEG);
    // Lanes carry F + go (fg): then F(i + 1, j) + go = max(F(i, j) + go - ge, max(H(i-1, j-1) + s, E(i, j)))
    // and H(i, j) = max(that inner max, F(i, j)) are one DPX operation each.
    int up_h = 0, up_f = NW_NEG;                     // H of the last row and F + go of the row below, to lane + 1
    const unsigned expect = wave_tag(b - 1), mine = wave_tag(b) << 16;
    // A register that a load is still filling stalls the whole warp as soon as any lane reads it, so loads
    // go to registers read LOOKAHEAD steps later. Steps run in groups of LOOKAHEAD: at the start of the
    // group from step s, lane (s + k) & 31 holds the hand-off word of column s + k + 1 in `cur` (checked
    // here, once for the group), and the lanes of the next group load theirs into `nxt`. Each lane loads
    // the target code of its column at step s + u into tq[u] at step s + u - LOOKAHEAD.
    u64 cur = 0, nxt = 0;
    load_word_if(lane < LOOKAHEAD && lane + 1 <= ncols, nxt, a.row + lane + 1);
    int tq[LOOKAHEAD];
#pragma unroll
    for (int u = 0; u < LOOKAHEAD; ++u) tq[u] = a.t[min(max(u - lane, 0), a.n - 1)];
    const bool checkpoint = a.ck_every > 0 && (b + 1) % a.ck_every == 0 && a.r0 + (b + 1) * BAND <= a.r1;
    int *ckH = checkpoint ? a.ckH + (size_t)((b + 1) / a.ck_every) * (ncols + 1) : nullptr;
    int *ckF = checkpoint ? a.ckF + (size_t)((b + 1) / a.ck_every) * (ncols + 1) : nullptr;
    // Semiglobal alignments end on the last row or column: only the band holding row m tracks rows.
    const bool track = MODE == NW_LOCAL || ((MODE == NW_SEMIGLOBAL || MODE == NW_GLOCAL) && a.m > row0 - lane * R &&
                                            a.m <= row0 - lane * R + BAND);
    // STORE: lane k's word of column j goes to ring[k * 64 + j % 64] in shared memory, and `flush` copies
    // 32 columns of one lane at a time to its row of `dirs` with one coalesced store: one store per step
    // instead of 32 scattered ones. ebits: the E-extended bits of the next column, known one column early.
    unsigned ebits = 0;
    unsigned *drow = STORE ? a.dirs + (size_t)b * 32 * a.ld : nullptr;

    // Step s + u of the group from s; out = a.row + s - 30 (where lane 31 hands over), tp = the target codes
    // LOOKAHEAD columns ahead of this lane's column at step s.
    auto step = [&](int s, auto guard, const int u, u64 *out, const u8 *tp) {
        constexpr bool G = decltype(guard)::value;
        const int j = s + u - lane + 1;
        const int src = (s + u) & 31;
        int h_in = __shfl_up_sync(FULL_MASK, up_h, 1);
        int f_in = __shfl_up_sync(FULL_MASK, up_f, 1);
        const unsigned lo = __shfl_sync(FULL_MASK, (unsigned)cur, src);
        const unsigned hi = __shfl_sync(FULL_MASK, (unsigned)(cur >> 32), src);
        if (lane == 0) { h_in = (int)lo; f_in = (int)lo - (int)(hi & 0xffffu) + a.go; }
        const int tc = tq[u];
        // The host pads t, so the steady state may read a few columns past ncols.
        tq[u] = G ? a.t[min(max(j + LOOKAHEAD - 1, 0), a.n - 1)] : tp[u];
        if (!G || (j >= 1 && j <= ncols)) {
            unsigned p[RP];
            if (RP == 1) p[0] = prof[tc * 32 + lane];
            if (RP == 2) { const uint2 v = ((const uint2 *)prof)[tc * 32 + lane]; p[0] = v.x; p[1] = v.y; }
            if (RP == 4) {
                const uint4 v = ((const uint4 *)prof)[tc * 32 + lane];
                p[0] = v.x; p[1] = v.y; p[2] = v.z; p[3] = v.w;
            }
            int hd = diag, fg = f_in, h_up = h_in;  // h_up: H(i-1, j)
            unsigned word = ebits, enext = 0;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int sc = profile_byte(p, r);
                int de, h;
                if (STORE && MODE != NW_LOCAL) {
                    // Bit planes, one funnel shift per bit (each bit is the sign of a difference): E beats
                    // the diagonal, F beats both, F(i, j) extended (F + go > H(i-1, j)), and into the next
                    // column's word, E(i, j + 1) extended (E - ge > H - go). trace.cuh's nw_dir reads them.
                    const int e_in = E[r], fg_in = fg;
                    h = nw_cell_dpx(hd, sc, E[r], fg, a.go, a.ge, de);
                    word = __funnelshift_l(hd + sc - e_in, word, 1);
                    word = __funnelshift_l(de - fg_in + a.go, word, 1);
                    word = __funnelshift_l(h_up - fg_in, word, 1);
                    enext = __funnelshift_l(h - e_in + (a.ge - a.go), enext, 1);
                    h_up = h;
                } else if (STORE) {  // local: nibbles (a start is a fifth case), from the DPX ops' predicates
                    bool diag_wins;
                    de = __vibmax_s32(hd + sc, E[r], &diag_wins);
                    de = max(de, 0);
                    h = __viaddmax_s32(fg, -a.go, de);
                    const bool f_wins = h > de;
                    if (!diag_wins && !f_wins) word |= 1u << (4 * r);
                    if (f_wins) word |= 2u << (4 * r);
                    if (h == 0) word |= 3u << (4 * r);
                    if (fg > h_up) word |= 8u << (4 * r);  // F(i, j) + go > H(i-1, j): F(i, j) extended
                    bool opened;
                    E[r] = __vibmax_s32(h - a.go, E[r] - a.ge, &opened);
                    if (!opened) enext |= 4u << (4 * r);
                    fg = __viaddmax_s32(fg, -a.ge, de);
                    h_up = h;
                } else {
                    h = nw_cell_dpx<MODE == NW_LOCAL>(hd, sc, E[r], fg, a.go, a.ge, de);
                }
                hd = H[r];
                H[r] = h;
                if (MODE != NW_GLOBAL && track) {
                    bool keep;
                    bs[r] = __vibmax_s32(bs[r], h, &keep);
                    if (!keep) bj[r] = j;
                }
            }
            diag = h_in;
            up_h = H[R - 1];
            up_f = fg;
            if (STORE) {
                ring[lane * 64 + (j & 63)] = word;
                ebits = enext;
            }
        }
        // Lane 31 finished column s + u - 30: hand it to the next band (and to the checkpoint row).
        const int j31 = s + u - 30;
        const bool put = lane == 31 && (!G || (j31 >= 1 && j31 <= ncols));
        if (put) store_word(out + u, (u64)(unsigned)up_h | ((u64)(mine | (unsigned)(up_h - up_f + a.go)) << 32));
        if (checkpoint && put) {
            ckH[j31] = up_h;
            ckF[j31] = up_f - a.go + a.ge;  // F(i, j) with max(H - go, F - ge) = F(i + 1, j), exactly
        }
    };
    // STORE: for each step S of the previous group, lane S % 32's words of chunk c = S / 32 - 1 (complete
    // since step S - 1, overwritten from step S + 32), one coalesced row store each, after one __syncwarp.
    auto flush = [&](int s) {
        __syncwarp();
#pragma unroll
        for (int v = 0; v < LOOKAHEAD; ++v) {
            const int S = s - LOOKAHEAD + v, k = S & 31, jc = ((S >> 5) - 1) * 32 + 1 + lane;
            if (S >= 0 && jc >= 1 && jc <= ncols) drow[(size_t)k * a.ld + jc] = ring[k * 64 + (jc & 63)];
        }
    };
    auto group = [&](int s, auto guard) {  // steps s .. s + LOOKAHEAD - 1, s a multiple of LOOKAHEAD
        if (STORE) flush(s);
        fetch_handoff(a.row, ncols, s, lane, expect, cur, nxt);
        u64 *out = a.row + s - 30;
        const u8 *tp = a.t + (s - lane + LOOKAHEAD);
#pragma unroll
        for (int u = 0; u < LOOKAHEAD; ++u) step(s, guard, u, out, tp);
    };

    // Steps 0 .. ncols + 30; lanes compute only from step 31 to ncols - 1 without checking their column.
    int s = 0;
    for (; s < 32; s += LOOKAHEAD) group(s, Guard<true>());
    for (; s + LOOKAHEAD <= ncols; s += LOOKAHEAD) group(s, Guard<false>());
    for (; s < ncols + 31; s += LOOKAHEAD) group(s, Guard<true>());

    if (STORE) {  // the last group's copies, and the last two chunks, not all copied before the sweep ended
        flush(s);
        __syncwarp();
        const int last = (ncols - 1) >> 5;
        for (int k = 0; k < 32; ++k)
            for (int c = max(last - 1, 0); c <= last; ++c) {
                const int jc = c * 32 + 1 + lane;
                if (jc <= ncols) drow[(size_t)k * a.ld + jc] = ring[k * 64 + (jc & 63)];
            }
    }
    if (MODE == NW_GLOBAL && a.r1 == a.m && ncols == a.n) {  // H holds the last column: H(m, n)
#pragma unroll
        for (int r = 0; r < R; ++r)
            if (row0 + r + 1 == a.m) *a.corner = H[r];
    }
    if (MODE != NW_GLOBAL) {  // the band's best end cell: score, then row, then column
        int best_s = NW_NEG, best_i = 0x7fffffff, best_j = 0x7fffffff;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = row0 + r + 1;
            if (i > a.r1) continue;
            if ((MODE == NW_LOCAL || i == a.m) && nw_band_better(bs[r], i, bj[r], best_s, best_i, best_j)) {
                best_s = bs[r]; best_i = i; best_j = bj[r];
            }
            if (MODE == NW_SEMIGLOBAL && ncols == a.n && nw_band_better(H[r], i, ncols, best_s, best_i, best_j)) {
                best_s = H[r]; best_i = i; best_j = ncols;
            }
        }
        nw_band_best_store(a.band_best + 3 * b, best_s, best_i, best_j, lane);
    }
}

// Blocks of WAVE_WARPS warps, each warp with its own query profile, take consecutive bands (band b
// depending only on band b - 1), so the spin-waits cannot deadlock when the grid is no larger than what
// is resident. Four warps per block put one band on each of an SM's four sub-partitions (schedulers);
// blocks of one warp can land several bands on one scheduler (measured: ~4% slower at 100k x 100k).
// Occupancy: 16 warps per SM (at most 128 registers), 8 where the band's registers need more: from 12
// rows per lane, and from 6 in local and semiglobal mode (each row's best cell too).
template <int MODE, int R, bool STORE, bool WINDOW = false>
__global__ void __launch_bounds__(32 * WAVE_WARPS, (R >= 12 || (R >= 6 && MODE != NW_GLOBAL) ? 8 : 16) / WAVE_WARPS)
    wave_score(ScoreArgs a) {
    constexpr int RP = R <= 4 ? 1 : (R <= 8 ? 2 : 4);
    extern __shared__ unsigned prof[];
    const int w = threadIdx.x >> 5;
    unsigned *ring = prof + WAVE_WARPS * a.A * 32 * RP + w * 32 * 64;  // STORE: 32 x 64 words per warp
    for (int b = blockIdx.x * WAVE_WARPS + w; b < a.nbands; b += gridDim.x * WAVE_WARPS)
        score_band<MODE, R, STORE, WINDOW>(a, prof + w * a.A * 32 * RP, ring, b, threadIdx.x & 31);
}

// Every mode for every height that wavefront.py's SCORE_ROWS offers (also what the no-spill test compiles),
// and the direction-storing pass (8 rows per lane).
#define WAVE_SCORE_MODES(R, STORE)                                \
    template __global__ void wave_score<0, R, STORE>(ScoreArgs); \
    template __global__ void wave_score<1, R, STORE>(ScoreArgs); \
    template __global__ void wave_score<2, R, STORE>(ScoreArgs); \
    template __global__ void wave_score<3, R, STORE>(ScoreArgs);
WAVE_SCORE_MODES(4, false)
WAVE_SCORE_MODES(6, false)
WAVE_SCORE_MODES(8, false)
WAVE_SCORE_MODES(12, false)
WAVE_SCORE_MODES(16, false)
WAVE_SCORE_MODES(8, true)
// The direction-storing pass over a window of columns (global mode): the linear-space traceback's blocks
// recompute only the columns around the path (wavefront.py, Wavefront.align).
template __global__ void wave_score<0, 8, true, true>(ScoreArgs);
