// Full alignments (with traceback) of many pairs in one launch: the reported hits of a search (see
// nwalign/cuda/batch.py). One warp per pair; the warps of a persistent grid take the pairs in the order
// given (largest first), so the longest pair starts at once.
//
// A warp sweeps its pair as wavefront.cu's kernel sweeps one band (Gotoh's recurrence, the query along
// rows): the query in bands of 32 x 8 rows, lane k holding 8 consecutive rows' H and E in registers, the
// target streamed left to right (at step s lane k computes column s - k + 1, the row above coming from lane
// k - 1 by a shuffle). The bands of a pair run one after another in the same warp: a band's bottom row goes
// to the pair's row buffer, 32 columns at a time, and the next band reads it 32 columns ahead. A column of
// that buffer is read and later overwritten by the same lane, so no synchronisation is needed. Every cell's
// direction nibble (the CPU engine's direction byte: source, E extended, F extended) is stored as in
// wavefront.cu, and the warp then walks the path back (trace.cuh) from the best end cell. Same recurrence,
// same tie rules as the CPU engine (nw_cell; best end cell: larger score, then earlier row, then earlier
// column), hence the same alignments.
#include "common.cuh"
#include "trace.cuh"

struct BatchJob {
    long long q, t;   // offsets of the query's and the target's codes
    long long dirs;   // offset of the pair's direction words: ceil(m / 256) * 32 * (n + 1)
    long long row;    // offset of the pair's row buffer: 2 * (n + 1) ints
    long long ops;    // offset of the pair's columns: m + n bytes
    int m, n;         // lengths, >= 1
};
#define BATCH_OUT 6   // per pair: score, end row, end column, start row, start column, number of columns

struct BatchArgs {
    const BatchJob *jobs; int njobs;
    const u8 *q; const u8 *t; const int *S; int A; int go; int ge;
    int *rows; unsigned *dirs; u8 *ops; int *out;
};

template <int MODE>
__device__ __forceinline__ void batch_fetch(const BatchArgs &a, const u8 *t, int n, const int *rowH,
                                            const int *rowF, int b, int c0, int lane, int &h, int &f, int &tc) {
    const int jc = c0 + 1 + lane;  // this lane's column of the chunk
    if (jc <= n) {
        h = b == 0 ? nw_border(jc, MODE, a.go, a.ge) : rowH[jc];
        f = b == 0 ? NW_NEG : rowF[jc];
        tc = t[jc - 1];
    }
}

template <int MODE>
__device__ void batch_pair(const BatchArgs &a, const BatchJob &J, const int *sS, int lane, int *out) {
    constexpr int R = NW_DIR_ROWS, BAND = 32 * R;
    const u8 *q = a.q + J.q, *t = a.t + J.t;
    const int m = J.m, n = J.n;
    const size_t ld = (size_t)n + 1;
    int *rowH = a.rows + J.row, *rowF = rowH + ld;
    unsigned *dirs = a.dirs + J.dirs;
    // Local: the empty alignment at (0, 0) scores 0 and precedes every cell.
    int best_s = MODE == NW_LOCAL ? 0 : NW_NEG, best_i = 0, best_j = 0;
    int corner = 0;
    const int nbands = (m + BAND - 1) / BAND;
    for (int b = 0; b < nbands; ++b) {
        const int row0 = b * BAND + lane * R;  // this lane's rows: row0 + 1 .. row0 + R
        int qa[R], H[R], E[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = row0 + r + 1;
            qa[r] = i <= m ? q[i - 1] * a.A : 0;
            H[r] = nw_border(i, MODE, a.go, a.ge);
            E[r] = NW_NEG;
        }
        int diag = nw_border(row0, MODE, a.go, a.ge);  // H(row0, j - 1)
        int up_h = 0, up_f = NW_NEG, up_t = 0;           // what this lane hands to the next
        int in_h = 0, in_f = NW_NEG, in_t = 0;           // lane 0's input chunk, one column per lane
        int nx_h = 0, nx_f = NW_NEG, nx_t = 0;           // the chunk after it, fetched 32 steps early
        int out_h = 0, out_f = NW_NEG;                   // lane 31's output chunk, one column per lane
        unsigned *dword = dirs + ((size_t)b * 32 + lane) * ld;
        for (int s = 0; s < n + 31; ++s) {
            if ((s & 31) == 0) {
                if (s == 0) batch_fetch<MODE>(a, t, n, rowH, rowF, b, 0, lane, nx_h, nx_f, nx_t);
                in_h = nx_h; in_f = nx_f; in_t = nx_t;
                if (s + 32 < n) batch_fetch<MODE>(a, t, n, rowH, rowF, b, s + 32, lane, nx_h, nx_f, nx_t);
            }
            int h_in = __shfl_up_sync(0xffffffffu, up_h, 1);
            int f_in = __shfl_up_sync(0xffffffffu, up_f, 1);
            int t_in = __shfl_up_sync(0xffffffffu, up_t, 1);
            const int h0 = __shfl_sync(0xffffffffu, in_h, s & 31);
            const int f0 = __shfl_sync(0xffffffffu, in_f, s & 31);
            const int t0 = __shfl_sync(0xffffffffu, in_t, s & 31);
            if (lane == 0) { h_in = h0; f_in = f0; t_in = t0; }
            const int j = s - lane + 1;
            if (j >= 1 && j <= n) {
                int hu = h_in, fu = f_in, hd = diag;
                unsigned word = 0;
                const int *srow = sS + t_in;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    int h, e, f;
                    const u8 dir = nw_cell(hd, hu, fu, H[r], E[r], srow[qa[r]], a.go, a.ge, MODE, h, e, f);
                    word |= (unsigned)dir << (4 * r);
                    hd = H[r];
                    H[r] = h;
                    E[r] = e;
                    hu = h;
                    fu = f;
                    if (MODE == NW_LOCAL && h >= best_s && row0 + r + 1 <= m &&
                        nw_band_better(h, row0 + r + 1, j, best_s, best_i, best_j)) {
                        best_s = h; best_i = row0 + r + 1; best_j = j;
                    }
                }
                dword[j] = word;
                up_h = hu;
                up_f = fu;
                diag = h_in;
                up_t = t_in;
            }
            // Lane 31 finished column s - 30: collect it, and store every 32 columns for the next band.
            const int oh = __shfl_sync(0xffffffffu, up_h, 31);
            const int of = __shfl_sync(0xffffffffu, up_f, 31);
            const int j31 = s - 30;
            if (j31 >= 1 && b + 1 < nbands) {
                if (lane == ((j31 - 1) & 31)) { out_h = oh; out_f = of; }
                if ((j31 & 31) == 0 || j31 == n) {
                    const int jc = ((j31 - 1) & ~31) + 1 + lane;
                    if (jc <= j31) { rowH[jc] = out_h; rowF[jc] = out_f; }
                }
            }
        }
        if (b + 1 == nbands) {  // H holds column n: the lane with row m has H(m, n)
            int hm = 0;
#pragma unroll
            for (int r = 0; r < R; ++r)
                if (row0 + r + 1 == m) hm = H[r];
            corner = __shfl_sync(0xffffffffu, hm, ((m - 1) % BAND) / R);
        }
    }
    if (MODE == NW_LOCAL) {  // the warp's best end cell
        for (int o = 16; o > 0; o >>= 1) {
            const int os = __shfl_xor_sync(0xffffffffu, best_s, o);
            const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
            const int oj = __shfl_xor_sync(0xffffffffu, best_j, o);
            if (nw_band_better(os, oi, oj, best_s, best_i, best_j)) { best_s = os; best_i = oi; best_j = oj; }
        }
    } else {
        best_s = corner; best_i = m; best_j = n;
    }
    __syncwarp();  // the direction words of every lane are written before any lane reads them
    int i = best_i, j = best_j, state = 0, nops = 0, stopped = 0;
    nw_trace_warp(dirs, 0, ld, MODE == NW_LOCAL, 0, lane, a.ops + J.ops, i, j, state, nops, stopped);
    if (lane == 0) {
        out[0] = best_s; out[1] = best_i; out[2] = best_j; out[3] = i; out[4] = j; out[5] = nops;
    }
}

template <int MODE>
__device__ __forceinline__ void batch_run(const BatchArgs &a) {
    __shared__ int sS[32 * 32];
    for (int k = threadIdx.x; k < a.A * a.A; k += blockDim.x) sS[k] = a.S[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    for (int k = warp; k < a.njobs; k += nwarps) batch_pair<MODE>(a, a.jobs[k], sS, lane, a.out + BATCH_OUT * k);
}

extern "C" __global__ void __launch_bounds__(128) batch_align_global(BatchArgs a) { batch_run<NW_GLOBAL>(a); }
extern "C" __global__ void __launch_bounds__(128) batch_align_local(BatchArgs a) { batch_run<NW_LOCAL>(a); }
