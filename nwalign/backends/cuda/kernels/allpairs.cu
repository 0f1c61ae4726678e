// Batched score-only kernels for all-pairs global (or local/semiglobal) alignment, after Li et al.,
// "Large-scale pairwise sequence alignments on a large-scale GPU cluster" (Li et al., section 4):
//
//   tiled_dscan  TiledDScan-mNW: one launch per tile anti-diagonal; every pair's tiles on that
//                diagonal are thread blocks of the same launch; tile borders go through global memory.
//   dscan        DScan-mNW: one block per pair, one launch; the block sweeps the pair's anti-diagonals,
//                the last three of them in shared memory (global scratch when they do not fit).
//   lazy_rscan   LazyRScan-mNW: one thread per pair, one launch; the matrix is cut into slices of K
//                query rows held in registers, swept left to right over the target; only the slice's
//                last row (H and F) is written to global memory, where the next slice resumes.
//                With K = 1 every row goes through global memory: that is RScan-mNW, which in the
//                paper kept whole rows in global memory for the traceback (`rscan`).
//
// The paper slices by columns and keeps the slice in shared memory; we slice by rows and keep it in
// registers, which is the same dependency structure transposed and faster on current GPUs.
// All kernels use Gotoh's affine gaps with nwalign's conventions (common.cuh) and return only the
// optimal score of each pair; the host aligns the pairs it reports.
#include "common.cuh"

#define AP_PAD (-(1 << 28))  // substitution score of padding rows: never part of an optimal path

// The query set and the target set: residue codes concatenated, sequence k at seqs[offsets[k] ..
// offsets[k + 1]). All pairs within one set pass the same arrays twice. pairs[p] = (query, target).
struct Sets {
    const u8 *qseqs;
    const long long *qoffsets;
    const u8 *tseqs;
    const long long *toffsets;
};

struct Pair {
    const u8 *q, *t;
    int m, n;
};

__device__ __forceinline__ Pair load_pair(const Sets &s, const int2 *pairs, int p) {
    const int2 pr = pairs[p];
    const long long q0 = s.qoffsets[pr.x], t0 = s.toffsets[pr.y];
    return Pair{s.qseqs + q0, s.tseqs + t0, (int)(s.qoffsets[pr.x + 1] - q0), (int)(s.toffsets[pr.y + 1] - t0)};
}

__device__ __forceinline__ int cell(int diag, int s, int e, int f) {
    return __vimax3_s32(diag + s, e, f);  // DPX on sm_90, emulated elsewhere
}

// ---------------------------------------------------------------------------------------------
// lazy_rscan / rscan: one thread per pair. bufGF holds the last row of the previous slice, (G, F)
// pairs laid out [column][pair] so a warp's 8-byte loads and stores coalesce. Shared memory: the A x A matrix and
// one row of AP_PAD for the padding rows of the last slice.
// Registers hold G = H - go rather than H: G is what both gap recurrences read (E from the left, F
// from above), so each cell subtracts go once; the diagonal term adds it back through the matrix in
// shared memory, which holds S + go.
template <int MODE, int K>
__global__ void __launch_bounds__(256, 1) lazy_rscan(const Sets sets, const int2 *pairs,
                                                  int npairs, const int *matrix, int A, int go, int ge, int2 *bufGF,
                                                  int *scores) {
    extern __shared__ int sS[];
    for (int k = threadIdx.x; k < (A + 1) * A; k += blockDim.x) sS[k] = k < A * A ? matrix[k] + go : AP_PAD;
    __syncthreads();
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const Pair pr = load_pair(sets, pairs, p);
    const size_t stride = (size_t)npairs;
    int2 *col = bufGF + p;
    // local: the empty alignment; semiglobal: H(m, 0) = 0; glocal: H(m, 0), the query against gaps
    int best = MODE == NW_GLOBAL ? NW_NEG : MODE == NW_GLOCAL ? nw_column_border(pr.m, MODE, go, ge) : 0;
    for (int i0 = 0; i0 < pr.m; i0 += K) {
        const bool first = i0 == 0, last = i0 + K >= pr.m;
        const int rlast = pr.m - 1 - i0;  // slice row of query row m, in the last slice
        int prof[K], G[K], E[K];
#pragma unroll
        for (int r = 0; r < K; ++r) {
            prof[r] = (i0 + r < pr.m ? pr.q[i0 + r] : A) * A;
            G[r] = nw_column_border(i0 + r + 1, MODE, go, ge) - go;  // column 0
            E[r] = NW_NEG;
        }
        int diag_top = nw_column_border(i0, MODE, go, ge) - go;
        for (int j = 1; j <= pr.n; ++j) {
            const int c = pr.t[j - 1];
            const size_t at = (size_t)(j - 1) * stride;
            const int2 gf = first ? make_int2(nw_border(j, MODE, go, ge) - go, NW_NEG) : col[at];
            int g_up = gf.x, f = gf.y;
            int diag = diag_top;
            diag_top = g_up;
            int h_pair = 0;  // local: cells are folded into best two at a time
#pragma unroll
            for (int r = 0; r < K; ++r) {
                const int e = __viaddmax_s32(E[r], -ge, G[r]);
                f = __viaddmax_s32(f, -ge, g_up);
                int h;
                if (MODE == NW_LOCAL) {
                    h = __vimax3_s32_relu(diag + sS[prof[r] + c], e, f);  // max(., ., ., 0) in one DPX op
                    if (K == 1) best = max(best, h);
                    else if (r & 1) best = __vimax3_s32(best, h_pair, h);
                    else h_pair = h;
                } else {
                    h = cell(diag, sS[prof[r] + c], e, f);
                }
                diag = G[r];
                G[r] = h - go;
                E[r] = e;
                g_up = G[r];
            }
            if (!last) {
                col[at] = make_int2(g_up, f);
            } else if (MODE == NW_SEMIGLOBAL || MODE == NW_GLOCAL) {  // the last row of the matrix
#pragma unroll
                for (int r = 0; r < K; ++r)
                    if (r == rlast) best = max(best, G[r] + go);
            }
        }
#pragma unroll
        for (int r = 0; r < K; ++r) {  // G now holds column n
            if (MODE == NW_GLOBAL && last && r == rlast) best = G[r] + go;
            if (MODE == NW_SEMIGLOBAL && (!last || r <= rlast)) best = max(best, G[r] + go);
        }
    }
    scores[p] = best;
}

// ---------------------------------------------------------------------------------------------
// dscan: one block per pair; thread x computes cells x, x + blockDim, ... of each anti-diagonal.
// Diagonal arrays are indexed by the row i (0..m): H of d-2, d-1, d; E and F of d-1, d.
// scratch_ints == 0: the arrays live in dynamic shared memory after the matrix; otherwise in global
// scratch, scratch_ints per block.
template <int MODE>
__global__ void dscan(const Sets sets, const int2 *pairs, int npairs, const int *matrix,
                      int A, int go, int ge, int *scratch, long long scratch_ints, int *scores) {
    extern __shared__ int smem[];
    __shared__ int block_best;
    const int p = blockIdx.x;
    if (p >= npairs) return;
    for (int k = threadIdx.x; k < A * A; k += blockDim.x) smem[k] = matrix[k];
    if (threadIdx.x == 0) block_best = MODE == NW_GLOBAL || MODE == NW_GLOCAL ? NW_NEG : 0;
    const Pair pr = load_pair(sets, pairs, p);
    const int m = pr.m, n = pr.n, w = m + 1;
    int *base = scratch_ints ? scratch + (size_t)p * (size_t)scratch_ints : smem + A * A;
    int *Hd2 = base, *Hd1 = base + w, *Hn = base + 2 * w, *E1 = base + 3 * w, *En = base + 4 * w,
        *F1 = base + 5 * w, *Fn = base + 6 * w;
    if (threadIdx.x == 0) {
        Hd2[0] = 0;                                              // d = 0: (0, 0)
        Hd1[0] = nw_border(1, MODE, go, ge); F1[0] = NW_NEG;     // d = 1: (0, 1)
        Hd1[1] = nw_column_border(1, MODE, go, ge); E1[1] = NW_NEG;  //   (1, 0)
    }
    __syncthreads();
    int best = MODE == NW_GLOBAL ? NW_NEG : MODE != NW_GLOCAL ? 0
                                          : threadIdx.x == 0 ? nw_column_border(m, MODE, go, ge) : NW_NEG;  // H(m, 0)
    for (int d = 2; d <= m + n; ++d) {
        const int lo = max(0, d - n), hi = min(m, d);
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) {
            const int j = d - i;
            if (i == 0) { Hn[0] = nw_border(j, MODE, go, ge); Fn[0] = NW_NEG; continue; }
            if (j == 0) { Hn[i] = nw_column_border(i, MODE, go, ge); En[i] = NW_NEG; continue; }
            const int e = __viaddmax_s32(E1[i], -ge, Hd1[i] - go);
            const int f = __viaddmax_s32(F1[i - 1], -ge, Hd1[i - 1] - go);
            int h = cell(Hd2[i - 1], smem[pr.q[i - 1] * A + pr.t[j - 1]], e, f);
            if (MODE == NW_LOCAL) { h = max(h, 0); best = max(best, h); }
            if ((MODE == NW_SEMIGLOBAL && (i == m || j == n)) || (MODE == NW_GLOCAL && i == m)) best = max(best, h);
            Hn[i] = h; En[i] = e; Fn[i] = f;
        }
        __syncthreads();
        int *tmp = Hd2; Hd2 = Hd1; Hd1 = Hn; Hn = tmp;
        tmp = E1; E1 = En; En = tmp;
        tmp = F1; F1 = Fn; Fn = tmp;
    }
    if (MODE == NW_GLOBAL) {
        if (threadIdx.x == 0) scores[p] = Hd1[m];
        return;
    }
    atomicMax(&block_best, best);
    __syncthreads();
    if (threadIdx.x == 0) scores[p] = block_best;
}

// ---------------------------------------------------------------------------------------------
// tiled_dscan: launch D computes, for every pair, its T x T tiles (ti, tj) with ti + tj = D.
// grid = (pairs, tile slots on the diagonal), T threads; thread x owns tile row x + 1 and sweeps the
// tile's anti-diagonals in shared memory. Tile borders: rowbuf[pair][tile column] holds the bottom
// row of the tile above (H[0..T], then F[1..T]); colbuf[pair][tile row] the right column of the
// tile to the left (H[0..T], then E[1..T]). Only tile (ti, tj) touches those two slots on diagonal D,
// so blocks of one launch never race. scores must start at NW_NEG (global, glocal) or 0.
template <int MODE, int T>
__global__ void __launch_bounds__(T) tiled_dscan(const Sets sets, const int2 *pairs,
                                                 int npairs, const int *matrix, int A, int go, int ge, int D,
                                                 int *rowbuf, int *colbuf, int row_slots, int col_slots,
                                                 int *scores) {
    extern __shared__ int sS[];
    __shared__ int sH[T + 1][T + 1], sE[T + 1][T + 1], sF[T + 1][T + 1];
    __shared__ u8 sT[T];
    const int p = blockIdx.x;
    if (p >= npairs) return;
    const Pair pr = load_pair(sets, pairs, p);
    const int ntr = (pr.m + T - 1) / T, ntc = (pr.n + T - 1) / T;
    const int ti = max(0, D - ntc + 1) + (int)blockIdx.y, tj = D - ti;
    if (ti > min(D, ntr - 1) || tj < 0) return;  // whole block: this pair has no such tile
    const int x = threadIdx.x;
    for (int k = x; k < A * A; k += T) sS[k] = matrix[k];
    const int r0 = ti * T, c0 = tj * T, tr = min(T, pr.m - r0), tc = min(T, pr.n - c0);
    int *rb = rowbuf + ((size_t)p * row_slots + tj) * (2 * T + 1);
    int *cb = colbuf + ((size_t)p * col_slots + ti) * (2 * T + 1);
    for (int c = x; c <= tc; c += T) {
        sH[0][c] = ti == 0 ? nw_border(c0 + c, MODE, go, ge) : rb[c];
        if (c > 0) sF[0][c] = ti == 0 ? NW_NEG : rb[T + c];
    }
    for (int r = x + 1; r <= tr; r += T) {
        sH[r][0] = tj == 0 ? nw_column_border(r0 + r, MODE, go, ge) : cb[r];
        sE[r][0] = tj == 0 ? NW_NEG : cb[T + r];
    }
    if (x < tc) sT[x] = pr.t[c0 + x];
    const int qa = x < tr ? pr.q[r0 + x] * A : 0;
    __syncthreads();
    int best = MODE == NW_GLOBAL || MODE == NW_GLOCAL ? NW_NEG : 0;
    if (MODE == NW_GLOCAL && tj == 0 && x == 0 && r0 + tr == pr.m) best = sH[tr][0];  // H(m, 0)
    const int r = x + 1;
    for (int s = 0; s < tr + tc - 1; ++s) {
        const int c = s - x + 1;
        if (r <= tr && c >= 1 && c <= tc) {
            const int e = __viaddmax_s32(sE[r][c - 1], -ge, sH[r][c - 1] - go);
            const int f = __viaddmax_s32(sF[r - 1][c], -ge, sH[r - 1][c] - go);
            int h = cell(sH[r - 1][c - 1], sS[qa + sT[c - 1]], e, f);
            if (MODE == NW_LOCAL) { h = max(h, 0); best = max(best, h); }
            if ((MODE == NW_SEMIGLOBAL && (r0 + r == pr.m || c0 + c == pr.n)) || (MODE == NW_GLOCAL && r0 + r == pr.m))
                best = max(best, h);
            sH[r][c] = h; sE[r][c] = e; sF[r][c] = f;
        }
        __syncthreads();
    }
    for (int c = x; c <= tc; c += T) {
        rb[c] = sH[tr][c];
        if (c > 0) rb[T + c] = sF[tr][c];
    }
    for (int rr = x; rr <= tr; rr += T) {
        cb[rr] = sH[rr][tc];
        if (rr > 0) cb[T + rr] = sE[rr][tc];
    }
    if (MODE == NW_GLOBAL) {
        if (x == 0 && r0 + tr == pr.m && c0 + tc == pr.n) scores[p] = sH[tr][tc];
        return;
    }
    const unsigned lanes = T == 32 ? 0xffffffffu : (1u << T) - 1u;  // the block is one (partial) warp
    for (int o = T / 2; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(lanes, best, o));
    if (x == 0) atomicMax(&scores[p], best);
}

#define AP_LAZY(M, K)                                                                                        \
    template __global__ void lazy_rscan<M, K>(const Sets, const int2 *, int, const int *, \
                                              int, int, int, int2 *, int *);
#define AP_LAZY_ALL(K) AP_LAZY(0, K) AP_LAZY(1, K) AP_LAZY(2, K) AP_LAZY(3, K)
AP_LAZY_ALL(1)
AP_LAZY_ALL(2)
AP_LAZY_ALL(4)
AP_LAZY_ALL(8)
AP_LAZY_ALL(16)
AP_LAZY_ALL(32)

template __global__ void dscan<0>(const Sets, const int2 *, int, const int *, int, int, int, int *,
                                  long long, int *);
template __global__ void dscan<1>(const Sets, const int2 *, int, const int *, int, int, int, int *,
                                  long long, int *);
template __global__ void dscan<2>(const Sets, const int2 *, int, const int *, int, int, int, int *,
                                  long long, int *);
template __global__ void dscan<3>(const Sets, const int2 *, int, const int *, int, int, int, int *,
                                  long long, int *);

#define AP_TILED(M, T)                                                                                        \
    template __global__ void tiled_dscan<M, T>(const Sets, const int2 *, int, const int *, \
                                               int, int, int, int, int *, int *, int, int, int *);
#define AP_TILED_ALL(T) AP_TILED(0, T) AP_TILED(1, T) AP_TILED(2, T) AP_TILED(3, T)
AP_TILED_ALL(8)
AP_TILED_ALL(16)
AP_TILED_ALL(32)
