// Wavefront kernel for one long pair: the fast default of `nwalign pair --backend cuda`.
//
// One persistent launch. The query is cut into bands of 32 x R rows; a warp owns a band, each lane R
// consecutive rows whose H and E stay in registers, and the warp sweeps the target left to right: at
// step s lane k computes column s - k + 1, receiving the H/F of the row above (and the target residue)
// from lane k - 1 by a warp shuffle. Lane 0 reads the previous band's bottom row from a ring buffer in
// global memory, 32 columns at a time, once that band has published them (a progress counter per band:
// stores, __threadfence, counter; the reader spins on the counter, fences, and reads through L2). A ring
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

#define WAVE_R 8
#define WAVE_BAND (32 * WAVE_R)
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

__device__ __forceinline__ bool better(int s, int i, int j, int bs, int bi, int bj) {
    return s > bs || (s == bs && (i < bi || (i == bi && j < bj)));
}

template <int MODE, bool STORE>
__device__ __forceinline__ void wave_band(const WaveArgs &a, const int *sS, int b, int lane) {
    const int row0 = a.r0 + b * WAVE_BAND + lane * WAVE_R;  // this lane's rows: row0 + 1 .. row0 + R
    const int ld = a.ncols + 1;
    int qa[WAVE_R], H[WAVE_R], E[WAVE_R];
#pragma unroll
    for (int r = 0; r < WAVE_R; ++r) {
        const int i = row0 + r + 1;
        qa[r] = i <= a.r1 ? a.q[i - 1] * a.A : 0;
        H[r] = nw_border(i, MODE, a.go, a.ge);
        E[r] = NW_NEG;
    }
    int diag = nw_border(row0, MODE, a.go, a.ge);  // H(row0, j - 1)
    int up_h = 0, up_f = NW_NEG, up_t = 0;           // what this lane hands to the next
    int in_h = 0, in_f = NW_NEG, in_t = 0;           // lane 0's input chunk, one column per lane
    int out_h = 0, out_f = NW_NEG;                   // lane 31's output chunk, one column per lane
    int best_s = NW_NEG, best_i = 0x7fffffff, best_j = 0x7fffffff;
    const int slot_in = (b - 1 + a.ring_slots) % a.ring_slots, slot_out = b % a.ring_slots;
    const bool checkpoint = a.ck_every > 0 && (b + 1) % a.ck_every == 0 && a.r0 + (b + 1) * WAVE_BAND <= a.r1;
    unsigned *dword = STORE ? a.dirs + ((size_t)b * 32 + lane) * ld : nullptr;
    for (int s = 0; s < a.ncols + 31; ++s) {
        if ((s & 31) == 0) {  // lane 0's next 32 input columns
            const int jc = s + 1 + lane;
            if (b == 0) {
                if (jc <= a.ncols) { in_h = a.topH[jc]; in_f = a.topF[jc]; }
            } else {
                const int need = min(s + 32, a.ncols);
                if (lane == 0)
                    while (*(volatile int *)(a.progress + b - 1) < need) { }
                __syncwarp();
                __threadfence();
                if (jc <= a.ncols) {
                    in_h = __ldcg(a.ringH + (size_t)slot_in * ld + jc);
                    in_f = __ldcg(a.ringF + (size_t)slot_in * ld + jc);
                }
            }
            if (jc <= a.ncols) in_t = a.t[jc - 1];
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
            int hu = h_in, fu = f_in, hd = diag;
            unsigned word = 0;
#pragma unroll
            for (int r = 0; r < WAVE_R; ++r) {
                const int sub = sS[qa[r] + t_in];
                int h, e, f;
                if (STORE) {
                    const u8 dir = nw_cell(hd, hu, fu, H[r], E[r], sub, a.go, a.ge, MODE, h, e, f);
                    word |= (unsigned)dir << (4 * r);
                } else {
                    e = __viaddmax_s32(H[r], -a.go, E[r] - a.ge);
                    f = __viaddmax_s32(hu, -a.go, fu - a.ge);
                    h = MODE == NW_LOCAL ? __vimax3_s32_relu(hd + sub, e, f) : __vimax3_s32(hd + sub, e, f);
                }
                hd = H[r];
                H[r] = h;
                E[r] = e;
                hu = h;
                fu = f;
                if (MODE != NW_GLOBAL && a.track) {
                    const int i = row0 + r + 1;
                    if (i <= a.r1 && (MODE == NW_LOCAL || i == a.m || j == a.n) && better(h, i, j, best_s, best_i, best_j)) {
                        best_s = h; best_i = i; best_j = j;
                    }
                }
            }
            if (STORE) dword[j] = word;
            diag = h_in;
            up_h = hu;
            up_f = fu;
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
                __threadfence();
                __syncwarp();
                if (lane == 0) *(volatile int *)(a.progress + b) = j31;
            }
        }
    }
    if (a.r1 == a.m && a.ncols == a.n) {  // H holds the last column now: the lane with row m has H(m, n)
#pragma unroll
        for (int r = 0; r < WAVE_R; ++r)
            if (row0 + r + 1 == a.m) *a.corner = H[r];
    }
    if (MODE != NW_GLOBAL && a.track) {  // the band's best end cell: score, then row, then column
        for (int o = 16; o > 0; o >>= 1) {
            const int os = __shfl_xor_sync(FULL_MASK, best_s, o);
            const int oi = __shfl_xor_sync(FULL_MASK, best_i, o);
            const int oj = __shfl_xor_sync(FULL_MASK, best_j, o);
            if (better(os, oi, oj, best_s, best_i, best_j)) { best_s = os; best_i = oi; best_j = oj; }
        }
        if (lane == 0) {
            a.band_best[3 * b] = best_s;
            a.band_best[3 * b + 1] = best_i;
            a.band_best[3 * b + 2] = best_j;
        }
    }
}

template <int MODE, bool STORE>
__global__ void __launch_bounds__(128) wavefront(WaveArgs a) {
    extern __shared__ int sS[];
    for (int k = threadIdx.x; k < a.A * a.A; k += blockDim.x) sS[k] = a.S[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    for (int b = warp; b < a.nbands; b += nwarps) wave_band<MODE, STORE>(a, sS, b, lane);
}

template __global__ void wavefront<0, false>(WaveArgs);
template __global__ void wavefront<1, false>(WaveArgs);
template __global__ void wavefront<2, false>(WaveArgs);
template __global__ void wavefront<0, true>(WaveArgs);
template __global__ void wavefront<1, true>(WaveArgs);
template __global__ void wavefront<2, true>(WaveArgs);

// Traceback on the GPU over the packed directions of rows r0+1 .. of one wavefront launch, from cell
// (i, j) in `state` until row r0, column 0 or a local start. One thread: the path is sequential.
// io: in  {i, j, state, nops}; out {i, j, state, nops, stopped}. ops: columns in reverse order.
extern "C" __global__ void wave_trace(const unsigned *dirs, int r0, int ncols, int *io, u8 *ops) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    int i = io[0], j = io[1], state = io[2], nops = io[3], stopped = 0;
    const size_t ld = (size_t)ncols + 1;
    while (i > r0 && j > 0) {
        const int local = i - r0 - 1;
        const int band = local / WAVE_BAND, lane = (local % WAVE_BAND) / WAVE_R, r = local % WAVE_R;
        const int d = (dirs[((size_t)band * 32 + lane) * ld + j] >> (4 * r)) & 15;
        if (state == 0) {
            const int src = d & 3;
            if (src == 0) { ops[nops++] = 0; --i; --j; }
            else if (src == 1) { state = 1; }
            else if (src == 2) { state = 2; }
            else { stopped = 1; break; }
        } else if (state == 1) {
            ops[nops++] = 2;
            if (!(d & 4)) state = 0;
            --j;
        } else {
            ops[nops++] = 1;
            if (!(d & 8)) state = 0;
            --i;
        }
    }
    io[0] = i; io[1] = j; io[2] = state; io[3] = nops; io[4] = stopped;
}
