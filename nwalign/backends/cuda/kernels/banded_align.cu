// Global alignments (with traceback) of many pairs in one launch, each restricted to a diagonal band
// lo <= j - i <= hi (see nwalign/backends/cpu/banded.py: the all-pairs identity filter's band). Host side:
// nwalign/backends/cuda/banded.py.
//
// batch_align.cu's sweep (one warp per pair; bands of 32 lanes x 8 query rows; the target streamed left to
// right, lane k computing column c0 + s - k + 1 at step s), with three changes: (1) each band of 256 rows
// sweeps only the columns its rows' diagonal band reaches, [jmin, jmax], (2) a cell outside the diagonal
// band is minus infinity (H, E and F), as in the CPU engine's fill_banded, and (3) the direction words are
// stored per band over those columns only ([band][lane][column - jmin] words of 8 nibbles, W columns per
// lane row), so a 30 kb genome pair in a band of half-width 32 keeps ~5 MB instead of ~450 MB. Same
// recurrence and tie rules as the CPU engine (nw_cell), so every in-band cell that an alignment can reach
// has the CPU's direction byte, and the traceback returns the CPU banded engine's path. With no direction
// words (BandArgs.dirs null) it gives the banded optimum alone. banded_score_global is that score pass
// (allpairs' optimal scores) with batch_align.cu's cell: a per-lane byte query profile and DPX operations.
#include "wave_common.cuh"
#include "trace.cuh"

#define BAND_ROWS 8              // rows per lane per band (one word of 8 nibbles)
#define BAND_H (32 * BAND_ROWS)  // rows per band
#define BANDED_OUT 6             // per pair: score, end row, end column, start row, start column, columns

struct BandJob {
    long long q, t;   // offsets of the query's and the target's codes
    long long dirs;   // offset of the pair's direction words: ceil(m / 256) * 32 * W
    long long row;    // offset of the pair's row buffer: 2 * (n + 1) ints
    long long ops;    // offset of the pair's columns: m + n bytes
    int m, n;         // lengths, >= 1
    int lo, hi;       // the band: lo <= j - i <= hi, lo <= min(0, n - m), hi >= max(0, n - m)
    int W;            // columns stored per lane and band: min(n, 256 + hi - lo)
};

struct BandArgs {
    const BandJob *jobs; int njobs;
    const u8 *q; const u8 *t; const int *S; int A; int go; int ge;
    int *rows; unsigned *dirs; u8 *ops; int *out;
};

// The first column that band b's rows reach (rows b * 256 + 1 ..).
__device__ __forceinline__ int band_jmin(int b, int lo) { return max(1, b * BAND_H + 1 + lo); }

// The last column that band b's rows reach.
__device__ __forceinline__ int band_jmax(int b, int m, int n, int hi) { return min(n, min(m, (b + 1) * BAND_H) + hi); }

// H on row 0 or column 0 (a leading gap of length k), minus infinity where the diagonal band excludes it.
__device__ __forceinline__ int band_border(int k, bool inside, int go, int ge) {
    return inside ? nw_border(k, NW_GLOBAL, go, ge) : NW_NEG;
}

// Lane 0's input for column jc of band b: H and F of the row above the band (row 0, or the previous band's
// last row, stored up to its last column jprev).
template <bool F_GO>
__device__ __forceinline__ void band_fetch(const BandArgs &a, const u8 *t, int n, int hi, const int *rowH,
                                           const int *rowF, int b, int jc, int jprev, int &h, int &f, int &tc) {
    if (jc <= n) {
        if (b == 0) {  // H(0, j); F_GO: F(1, j) + go = H(0, j), a gap opened below row 0
            h = band_border(jc, jc <= hi, a.go, a.ge);
            f = F_GO ? h : NW_NEG;
        } else if (jc <= jprev) {
            h = rowH[jc];
            f = rowF[jc];
        } else {
            h = NW_NEG;
            f = NW_NEG;
        }
        tc = t[jc - 1];
    }
}

// Lane 0's input stream of one band's sweep: column c0 + s + 1 of the row above (H, F and the target code)
// at step s, read from the row buffer 32 columns at a time (one per lane, the next chunk fetched 32 steps
// early); the other lanes take what the lane above handed on.
template <bool F_GO>
struct BandInput {
    const BandArgs &a;
    const u8 *t;
    const int *rowH, *rowF;
    int n, hi, b, c0, width, jprev;
    int in_h = 0, in_f = NW_NEG, in_t = 0;  // lane 0's input chunk, one column per lane
    int nx_h = 0, nx_f = NW_NEG, nx_t = 0;  // the chunk after it

    // Step s's inputs h, f, tc for this lane, given what it handed on (up_*). Every lane must call it.
    __device__ __forceinline__ void step(int s, int lane, int up_h, int up_f, int up_t, int &h, int &f, int &tc) {
        if ((s & 31) == 0) {
            if (s == 0) band_fetch<F_GO>(a, t, n, hi, rowH, rowF, b, c0 + 1 + lane, jprev, nx_h, nx_f, nx_t);
            in_h = nx_h; in_f = nx_f; in_t = nx_t;
            if (s + 32 < width)
                band_fetch<F_GO>(a, t, n, hi, rowH, rowF, b, c0 + s + 33 + lane, jprev, nx_h, nx_f, nx_t);
        }
        h = __shfl_up_sync(0xffffffffu, up_h, 1);
        f = __shfl_up_sync(0xffffffffu, up_f, 1);
        tc = __shfl_up_sync(0xffffffffu, up_t, 1);
        const int h0 = __shfl_sync(0xffffffffu, in_h, s & 31);
        const int f0 = __shfl_sync(0xffffffffu, in_f, s & 31);
        const int t0 = __shfl_sync(0xffffffffu, in_t, s & 31);
        if (lane == 0) { h = h0; f = f0; tc = t0; }
    }
};

// Lane 31 finished column c0 + s - 30 of a band `width` columns wide: lane (k - 1) % 32 keeps its H and F
// (k its place in the sweep, 1-based), and every 32 columns the lanes store theirs in the row buffer for
// the next band. Every lane of the warp must call it.
__device__ __forceinline__ void band_handoff(int up_h, int up_f, int s, int width, int c0, int lane, int &out_h,
                                             int &out_f, int *rowH, int *rowF) {
    const int oh = __shfl_sync(0xffffffffu, up_h, 31);
    const int of = __shfl_sync(0xffffffffu, up_f, 31);
    const int k31 = s - 30;
    if (k31 >= 1 && k31 <= width) {
        if (lane == ((k31 - 1) & 31)) { out_h = oh; out_f = of; }
        if ((k31 & 31) == 0 || k31 == width) {
            const int kc = ((k31 - 1) & ~31) + 1 + lane;
            if (kc <= k31) { rowH[c0 + kc] = out_h; rowF[c0 + kc] = out_f; }
        }
    }
}

// H(m, n) from the last band, whose H holds column n: the lane with row m has it. Every lane must call it.
template <int R>
__device__ __forceinline__ int band_corner(const int (&H)[R], int row0, int m) {
    int hm = 0;
#pragma unroll
    for (int r = 0; r < R; ++r)
        if (row0 + r + 1 == m) hm = H[r];
    return __shfl_sync(0xffffffffu, hm, ((m - 1) % BAND_H) / R);
}

// The direction nibble of cell (i, j), 1 <= i <= m, of a pair's banded words; 0 outside the stored columns
// (the traceback's look-ahead may step there; the path itself never leaves the band).
__device__ __forceinline__ int band_dir(const unsigned *dirs, int i, int j, int W, int lo) {
    const int li = i - 1, b = li / BAND_H;
    const int col = j - band_jmin(b, lo);
    if (col < 0 || col >= W) return 0;
    const unsigned w = dirs[((size_t)b * 32 + (li / BAND_ROWS) % 32) * W + col];
    return (w >> (4 * (li % BAND_ROWS))) & 15;
}

// trace.cuh's walk (global mode) over banded words.
__device__ __forceinline__ void band_trace_warp(const unsigned *dirs, int W, int lo, int lane, u8 *ops, int &i,
                                                int &j, int &nops) {
    int state = 0, stopped = 0;
    const auto dir = [&](int ik, int jk) { return band_dir(dirs, ik, jk, W, lo); };
    nw_trace_walk(dir, 0, 0, lane, ops, i, j, state, nops, stopped);
}

__device__ void banded_pair(const BandArgs &a, const BandJob &J, const int *sS, int lane, int *out) {
    constexpr int R = BAND_ROWS;
    const u8 *q = a.q + J.q, *t = a.t + J.t;
    const int m = J.m, n = J.n, lo = J.lo, hi = J.hi, W = J.W;
    int *rowH = a.rows + J.row, *rowF = rowH + (n + 1);
    unsigned *dirs = a.dirs ? a.dirs + J.dirs : nullptr;  // a.dirs null: the banded score alone
    int corner = NW_NEG;
    const int nbands = (m + BAND_H - 1) / BAND_H;
    int jprev = 0;  // the previous band's last column
    for (int b = 0; b < nbands; ++b) {
        const int jmin = band_jmin(b, lo), jmax = band_jmax(b, m, n, hi);
        const int c0 = jmin - 1, width = jmax - c0;
        const int row0 = b * BAND_H + lane * R;  // this lane's rows: row0 + 1 .. row0 + R
        int qa[R], H[R], E[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = row0 + r + 1;
            qa[r] = i <= m ? q[i - 1] * a.A : 0;
            // H(i, c0): column 0 where the band holds it, else a cell left of the band
            H[r] = c0 == 0 ? band_border(i, i <= -lo, a.go, a.ge) : NW_NEG;
            E[r] = NW_NEG;
        }
        // H(row0, c0): column 0, or for lane 0 the row above the band (in the band at column c0 > 0)
        int diag = c0 == 0 ? band_border(row0, row0 <= -lo, a.go, a.ge)
                           : (lane == 0 && b > 0 ? rowH[c0] : NW_NEG);
        int up_h = 0, up_f = NW_NEG, up_t = 0;  // what this lane hands to the next
        int out_h = 0, out_f = NW_NEG;          // lane 31's output chunk, one column per lane
        BandInput<false> input{a, t, rowH, rowF, n, hi, b, c0, width, jprev};
        unsigned *dword = dirs ? dirs + ((size_t)b * 32 + lane) * W : nullptr;
        for (int s = 0; s < width + 31; ++s) {
            int h_in, f_in, t_in;
            input.step(s, lane, up_h, up_f, up_t, h_in, f_in, t_in);
            const int j = c0 + s - lane + 1;
            if (j > c0 && j <= jmax) {
                int hu = h_in, fu = f_in, hd = diag;
                unsigned word = 0;
                const int *srow = sS + t_in;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const int i = row0 + r + 1;
                    int h, e, f;
                    u8 dir = nw_cell(hd, hu, fu, H[r], E[r], srow[qa[r]], a.go, a.ge, NW_GLOBAL, h, e, f);
                    if (j - i < lo || j - i > hi) { h = NW_NEG; e = NW_NEG; f = NW_NEG; dir = 0; }
                    word |= (unsigned)dir << (4 * r);
                    hd = H[r];
                    H[r] = h;
                    E[r] = e;
                    hu = h;
                    fu = f;
                }
                if (dirs) dword[j - c0 - 1] = word;  // none when only the score is asked
                up_h = hu;
                up_f = fu;
                diag = h_in;
                up_t = t_in;
            }
            if (b + 1 < nbands) band_handoff(up_h, up_f, s, width, c0, lane, out_h, out_f, rowH, rowF);
        }
        jprev = jmax;
        // The next band's lanes read columns of the row buffer that other lanes wrote (the sweep starts at
        // another column): make the writes visible to the whole warp first.
        __syncwarp();
        if (b + 1 == nbands) corner = band_corner(H, row0, m);
    }
    if (!dirs) {  // score only: no traceback
        if (lane == 0) out[0] = corner;
        return;
    }
    __syncwarp();  // the direction words of every lane are written before any lane reads them
    int i = m, j = n, nops = 0;
    band_trace_warp(dirs, W, lo, lane, a.ops + J.ops, i, j, nops);
    if (lane == 0) {
        out[0] = corner; out[1] = m; out[2] = n; out[3] = i; out[4] = j; out[5] = nops;
    }
}

extern "C" __global__ void __launch_bounds__(128) banded_align_global(BandArgs a) {
    __shared__ int sS[32 * 32];
    for (int k = threadIdx.x; k < a.A * a.A; k += blockDim.x) sS[k] = a.S[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    for (int k = warp; k < a.njobs; k += nwarps) banded_pair(a, a.jobs[k], sS, lane, a.out + BANDED_OUT * k);
}

// The banded optimum alone (allpairs' score pass, BandArgs.dirs unused): banded_pair's sweep with
// batch_align.cu's cell (each lane's 8 rows of substitution scores as signed bytes from a per-lane query
// profile in shared memory; F carried as F + go, so that H and the next row's F are one DPX operation
// each; the row buffer's F half holds F + go). A cell outside the diagonal band gets H = -inf and hands
// F + go = -inf down: a path can leave the band only through such a cell (right of the band by E, then
// down into it by F; left of it by F, then right into it by E, whose input H is then -inf), so the
// banded optimum is the CPU engine's. Needs 0 <= ge <= go and scores in [-128, 127] (the host checks).
__device__ void banded_score_pair(const BandArgs &a, const BandJob &J, unsigned *prof, const int *sS, int lane,
                                  int *out) {
    constexpr int R = BAND_ROWS;
    const u8 *q = a.q + J.q, *t = a.t + J.t;
    const int m = J.m, n = J.n, lo = J.lo, hi = J.hi, go = a.go, ge = a.ge;
    const unsigned span = (unsigned)(hi - lo);
    int *rowH = a.rows + J.row, *rowF = rowH + (n + 1);
    int corner = NW_NEG;
    const int nbands = (m + BAND_H - 1) / BAND_H;
    int jprev = 0;  // the previous band's last column
    for (int b = 0; b < nbands; ++b) {
        const int jmin = band_jmin(b, lo), jmax = band_jmax(b, m, n, hi);
        const int c0 = jmin - 1, width = jmax - c0;
        const int row0 = b * BAND_H + lane * R;  // this lane's rows: row0 + 1 .. row0 + R
        int qa[R], H[R], E[R];
#pragma unroll
        for (int r = 0; r < R; ++r) qa[r] = row0 + r + 1 <= m ? q[row0 + r] * a.A : -1;
        __syncwarp();  // the previous band's last reads of the profile are done
        build_byte_profile<R, 2>(prof, qa, sS, a.A, lane);  // S(q_i, c) of rows 4w + 1 .. 4w + 4
        __syncwarp();
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = row0 + r + 1;
            H[r] = c0 == 0 ? band_border(i, i <= -lo, go, ge) : NW_NEG;  // H(i, c0)
            E[r] = H[r] - go;                                            // E(i, c0 + 1)
        }
        int diag = c0 == 0 ? band_border(row0, row0 <= -lo, go, ge) : (lane == 0 && b > 0 ? rowH[c0] : NW_NEG);
        int up_h = 0, up_f = NW_NEG, up_t = 0;  // what this lane hands to the next
        int out_h = 0, out_f = NW_NEG;          // lane 31's output chunk, one column per lane
        BandInput<true> input{a, t, rowH, rowF, n, hi, b, c0, width, jprev};
        for (int s = 0; s < width + 31; ++s) {
            int h_in, f_in, t_in;
            input.step(s, lane, up_h, up_f, up_t, h_in, f_in, t_in);
            const int j = c0 + s - lane + 1;
            if (j > c0 && j <= jmax) {
                const uint2 v = ((const uint2 *)prof)[t_in * 32 + lane];
                const unsigned p[2] = {v.x, v.y};
                const int d0 = j - row0 - 1 - lo;  // row r's diagonal j - i, less lo, is d0 - r
                int hd = diag, fg = f_in;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const int sc = profile_byte(p, r);
                    const bool inside = (unsigned)(d0 - r) <= span;
                    const int de = __viaddmax_s32(hd, sc, E[r]);
                    const int h = inside ? __viaddmax_s32(fg, -go, de) : NW_NEG;
                    E[r] = __viaddmax_s32(h, -go, E[r] - ge);          // E(i, j + 1)
                    fg = inside ? __viaddmax_s32(fg, -ge, de) : NW_NEG;  // F(i + 1, j) + go
                    hd = H[r];
                    H[r] = h;
                }
                up_h = H[R - 1];
                up_f = fg;
                diag = h_in;
                up_t = t_in;
            }
            if (b + 1 < nbands) band_handoff(up_h, up_f, s, width, c0, lane, out_h, out_f, rowH, rowF);
        }
        jprev = jmax;
        __syncwarp();  // the row buffer's writes are visible to every lane of the next band
        if (b + 1 == nbands) corner = band_corner(H, row0, m);
    }
    if (lane == 0) out[0] = corner;
}

// Dynamic shared memory: the A x A int32 matrix (padded to an even count: the profile is read as uint2),
// then each warp's query profile, A x 32 x 2 words.
extern "C" __global__ void __launch_bounds__(128) banded_score_global(BandArgs a) {
    extern __shared__ int shared[];
    for (int k = threadIdx.x; k < a.A * a.A; k += blockDim.x) shared[k] = a.S[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    unsigned *prof = (unsigned *)(shared + ((a.A * a.A + 1) & ~1)) + (threadIdx.x >> 5) * a.A * 64;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    for (int k = warp; k < a.njobs; k += nwarps)
        banded_score_pair(a, a.jobs[k], prof, shared, lane, a.out + BANDED_OUT * k);
}
