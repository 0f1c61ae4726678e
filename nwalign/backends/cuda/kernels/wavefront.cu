// Wavefront kernel for one long pair: the fast default of `nwalign pair --backend cuda`.
//
// One persistent launch. The query is cut into bands of 32 x R rows; a warp owns a band, each lane R
// consecutive rows whose H and E stay in registers, and the warp sweeps the target left to right: at
// step s lane k computes column s - k + 1, receiving the H/F of the row above (and the target residue)
// from lane k - 1 by a warp shuffle. Lane 0 reads the previous band's bottom row from a ring buffer in
// global memory, 32 columns at a time, once that band has published them (a progress counter per band:
// stores, fence, counter; the reader spins on the counter, fences, and reads through L2). A ring
// slot is reused by band b + ring_slots only after band b + 1 has read it: band b + ring_slots computes
// a column only after every band between them has, band b + 1 included. So every SM works after a short fill, instead of one launch per anti-diagonal.
// The grid is sized from the occupancy API so that every warp is resident; warps take bands in order
// (band b depends only on band b - 1), so the spin-waits cannot deadlock.
//
// Cell update with Hopper DPX instructions (__viaddmax_s32, __vimax3_s32[_relu]); CUDA emulates them on
// older GPUs, which is the portable path. The substitution matrix sits in shared memory.
// With STORE, every cell's 4-bit direction (the CPU engine's direction byte) is packed, R nibbles per
// lane per column, into one 32-bit word: layout [band][lane][column]. wave_trace walks it on the GPU.
// Bands whose bottom row is a checkpoint row (every ck_every bands) also write it to `ckH/ckF`, so a
// linear-space traceback can recompute any block of rows from its checkpoint (as CUDAlign does).
#include "common.cuh"
#include "trace.cuh"

#define STORE_R NW_DIR_ROWS  // rows per lane when directions are stored: 8 nibbles fill one 32-bit word
#define FULL_MASK 0xffffffffu

struct WaveArgs {
    const u8 *q; const u8 *t; const int *S; int A; int m; int n; int go; int ge;
    int r0; int r1; int ncols;                 // rows r0+1 .. r1, columns 1 .. ncols
    const int *topH; const int *topF;          // row r0, columns 0 .. ncols
    int *ringH; int *ringF; int *progress; int ring_slots; int nbands;  // progress: per band, zeroed
    unsigned *dirs;                            // STORE: nbands * 32 * (ncols + 1) words
    int *ckH; int *ckF; int ck_every;          // checkpoint rows, (ncols + 1) ints each
    int *corner;                               // H(m, n)
    int *band_best;                            // per band: score, i, j of its best end cell
    int track;                                 // 1: track end cells (forward pass)
};

// Message passing between bands: data stores; fence; flag store / flag load; fence; data loads. An
// acquire-release fence at GPU scope orders them (cheaper than __threadfence's sequentially consistent one).
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// Columns c0+1 .. c0+32 of row r0 + b*BAND (the previous band's bottom row), one per lane: from the
// top row for band 0, else from the ring once the previous band has published them.
__device__ __forceinline__ void wave_fetch(const WaveArgs &a, int b, int slot_in, int c0, int lane, int &h, int &f,
                                           int &t) {
    const int jc = c0 + 1 + lane;
    const size_t ld = (size_t)a.ncols + 1;
    if (b == 0) {
        if (jc <= a.ncols) { h = a.topH[jc]; f = a.topF[jc]; }
    } else {
        const int need = min(c0 + 32, a.ncols);
        if (lane == 0)
            while (*(volatile int *)(a.progress + b - 1) < need) { }
        __syncwarp();
        fence_acq_rel_gpu();
        if (jc <= a.ncols) {
            h = __ldcg(a.ringH + slot_in * ld + jc);
            f = __ldcg(a.ringF + slot_in * ld + jc);
        }
    }
    if (jc <= a.ncols) t = a.t[jc - 1];
}

// End-cell candidates: any cell (local), the last row or column of the whole matrix (semiglobal), the last
// row (glocal).
template <int MODE>
__device__ __forceinline__ void track_cell(const WaveArgs &a, int h, int i, int j, int &bs, int &bi, int &bj) {
    if (i <= a.r1 && (MODE == NW_LOCAL || i == a.m || (MODE == NW_SEMIGLOBAL && j == a.n)) &&
        nw_band_better(h, i, j, bs, bi, bj)) {
        bs = h; bi = i; bj = j;
    }
}

template <int MODE, bool STORE, int R>
__device__ __forceinline__ void wave_band(const WaveArgs &a, const int *sS, int b, int lane) {
    constexpr int BAND = 32 * R;
    const int row0 = a.r0 + b * BAND + lane * R;  // this lane's rows: row0 + 1 .. row0 + R
    const int ld = a.ncols + 1;
    int qa[R], H[R], E[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int i = row0 + r + 1;
        qa[r] = i <= a.r1 ? a.q[i - 1] * a.A : 0;
        H[r] = nw_column_border(i, MODE, a.go, a.ge);
        E[r] = NW_NEG;
    }
    int diag = nw_column_border(row0, MODE, a.go, a.ge);  // H(row0, j - 1)
    int up_h = 0, up_f = NW_NEG, up_t = 0;           // what this lane hands to the next
    int in_h = 0, in_f = NW_NEG, in_t = 0;           // lane 0's input chunk, one column per lane
    int nx_h = 0, nx_f = NW_NEG, nx_t = 0;           // the chunk after it, fetched 32 steps early
    int out_h = 0, out_f = NW_NEG;                   // lane 31's output chunk, one column per lane
    int best_s = NW_NEG, best_i = 0x7fffffff, best_j = 0x7fffffff;
    const int slot_in = (b - 1 + a.ring_slots) % a.ring_slots, slot_out = b % a.ring_slots;
    const bool checkpoint = a.ck_every > 0 && (b + 1) % a.ck_every == 0 && a.r0 + (b + 1) * BAND <= a.r1;
    unsigned *dword = STORE ? a.dirs + ((size_t)b * 32 + lane) * ld : nullptr;
    for (int s = 0; s < a.ncols + 31; ++s) {
        if ((s & 31) == 0) {  // lane 0's input: chunk s/32 was prefetched, fetch the one after it
            if (s == 0) wave_fetch(a, b, slot_in, 0, lane, nx_h, nx_f, nx_t);
            in_h = nx_h; in_f = nx_f; in_t = nx_t;
            if (s + 32 < a.ncols) wave_fetch(a, b, slot_in, s + 32, lane, nx_h, nx_f, nx_t);
        }
        int h_in = __shfl_up_sync(FULL_MASK, up_h, 1);
        int f_in = __shfl_up_sync(FULL_MASK, up_f, 1);
        int t_in = __shfl_up_sync(FULL_MASK, up_t, 1);
        const int h0 = __shfl_sync(FULL_MASK, in_h, s & 31);
        const int f0 = __shfl_sync(FULL_MASK, in_f, s & 31);
        const int t0 = __shfl_sync(FULL_MASK, in_t, s & 31);
        if (lane == 0) { h_in = h0; f_in = f0; t_in = t0; }
        const int j = s - lane + 1;
        if (j >= 1 && j <= a.ncols) {
            if (STORE) {
                int hu = h_in, fu = f_in, hd = diag;
                unsigned word = 0;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    int h, e, f;
                    const u8 dir = nw_cell(hd, hu, fu, H[r], E[r], sS[qa[r] + t_in], a.go, a.ge, MODE, h, e, f);
                    word |= (unsigned)dir << (4 * r);
                    hd = H[r];
                    H[r] = h;
                    E[r] = e;
                    hu = h;
                    fu = f;
                    if (MODE != NW_GLOBAL && a.track) track_cell<MODE>(a, h, row0 + r + 1, j, best_s, best_i, best_j);
                }
                dword[j] = word;
                up_h = hu;
                up_f = fu;
            } else {
                // Off the critical path: de = max(H(i-1,j-1) + s, E(i,j)) for every row at once. On it, one
                // DPX op per row: F(i+1,j) = max(F(i,j) - ge, de - go), which equals
                // max(H(i,j) - go, F(i,j) - ge) because H = max(de, F) and go >= ge.
                int de[R];
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const int e = __viaddmax_s32(H[r], -a.go, E[r] - a.ge);
                    const int d = (r == 0 ? diag : H[r - 1]) + sS[qa[r] + t_in];
                    de[r] = MODE == NW_LOCAL ? __vimax3_s32_relu(d, e, 0) : max(d, e);
                    E[r] = e;
                }
                int f = __viaddmax_s32(h_in, -a.go, f_in - a.ge);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const int h = max(de[r], f);
                    H[r] = h;
                    if (MODE != NW_GLOBAL && a.track) track_cell<MODE>(a, h, row0 + r + 1, j, best_s, best_i, best_j);
                    if (r == R - 1) { up_h = h; up_f = f; }
                    f = __viaddmax_s32(f, -a.ge, de[r] - a.go);
                }
            }
            diag = h_in;
            up_t = t_in;
        }
        // Lane 31 finished column s - 30: collect it, and publish every 32 columns for the next band.
        const int oh = __shfl_sync(FULL_MASK, up_h, 31);
        const int of = __shfl_sync(FULL_MASK, up_f, 31);
        const int j31 = s - 30;
        if (j31 >= 1) {
            if (lane == ((j31 - 1) & 31)) { out_h = oh; out_f = of; }
            if ((j31 & 31) == 0 || j31 == a.ncols) {
                const int jc = ((j31 - 1) & ~31) + 1 + lane;
                if (jc <= j31) {
                    a.ringH[(size_t)slot_out * ld + jc] = out_h;
                    a.ringF[(size_t)slot_out * ld + jc] = out_f;
                    if (checkpoint) {
                        const size_t c = (size_t)((b + 1) / a.ck_every);
                        a.ckH[c * ld + jc] = out_h;
                        a.ckF[c * ld + jc] = out_f;
                    }
                }
                fence_acq_rel_gpu();
                __syncwarp();
                if (lane == 0) *(volatile int *)(a.progress + b) = j31;
            }
        }
    }
    if (a.r1 == a.m && a.ncols == a.n) {  // H holds the last column now: the lane with row m has H(m, n)
#pragma unroll
        for (int r = 0; r < R; ++r)
            if (row0 + r + 1 == a.m) *a.corner = H[r];
    }
    if (MODE != NW_GLOBAL && a.track)  // the band's best end cell: score, then row, then column
        nw_band_best_store(a.band_best + 3 * b, best_s, best_i, best_j, lane);
}

template <int MODE, bool STORE, int R>
__global__ void __launch_bounds__(32, 16) wavefront(WaveArgs a) {
    extern __shared__ int sS[];
    for (int k = threadIdx.x; k < a.A * a.A; k += blockDim.x) sS[k] = a.S[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    for (int b = warp; b < a.nbands; b += nwarps) wave_band<MODE, STORE, R>(a, sS, b, lane);
}

template __global__ void wavefront<0, false, 4>(WaveArgs);
template __global__ void wavefront<1, false, 4>(WaveArgs);
template __global__ void wavefront<2, false, 4>(WaveArgs);
template __global__ void wavefront<0, false, 8>(WaveArgs);
template __global__ void wavefront<1, false, 8>(WaveArgs);
template __global__ void wavefront<2, false, 8>(WaveArgs);
template __global__ void wavefront<0, false, 16>(WaveArgs);
template __global__ void wavefront<1, false, 16>(WaveArgs);
template __global__ void wavefront<2, false, 16>(WaveArgs);
template __global__ void wavefront<0, true, 8>(WaveArgs);
template __global__ void wavefront<1, true, 8>(WaveArgs);
template __global__ void wavefront<2, true, 8>(WaveArgs);
template __global__ void wavefront<3, false, 4>(WaveArgs);
template __global__ void wavefront<3, false, 8>(WaveArgs);
template __global__ void wavefront<3, false, 16>(WaveArgs);
template __global__ void wavefront<3, true, 8>(WaveArgs);

// Traceback on the GPU over the directions of rows r0+1 .. of one launch (trace.cuh), from cell (i, j) in
// `state`. io: in {i, j, state, nops}; out {i, j, state, nops, stopped}. ops: columns in reverse order.
extern "C" __global__ void wave_trace(const unsigned *dirs, int r0, int ncols, int local_mode, int planes, int *io,
                                      u8 *ops) {
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    const int lane = threadIdx.x;
    int i = io[0], j = io[1], state = io[2], nops = io[3], stopped = 0;
    nw_trace_warp(dirs, r0, (size_t)ncols + 1, local_mode, planes, lane, ops, i, j, state, nops, stopped);
    if (lane == 0) { io[0] = i; io[1] = j; io[2] = state; io[3] = nops; io[4] = stopped; }
}
