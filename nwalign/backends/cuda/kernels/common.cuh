// Shared by every pair kernel: Gotoh's affine-gap cell update with the CPU engine's direction byte
// (bits 0-1: H from diagonal 0 / E 1 / F 2 / local start 3; bit 2: E extended; bit 3: F extended),
// border values, and the packed key used to find the best end cell with one 64-bit atomicMax.
#pragma once

#define NW_NEG (-(1 << 30))
#define NW_GLOBAL 0
#define NW_LOCAL 1
#define NW_SEMIGLOBAL 2
#define NW_GLOCAL 3  // the query whole, the target's ends free (the wavefront pair kernels)
#define NW_POS_BITS 34

typedef unsigned char u8;
typedef unsigned long long u64;

// H on row 0 / column 0: a leading gap of length k in global mode, free otherwise.
__device__ __forceinline__ int nw_border(long long k, int mode, int go, int ge) {
    return (mode == NW_GLOBAL && k > 0) ? -(go + (int)(k - 1) * ge) : 0;
}

// H on column 0 (a leading gap of k query residues): penalised in global and glocal mode.
__device__ __forceinline__ int nw_column_border(long long k, int mode, int go, int ge) {
    return ((mode == NW_GLOBAL || mode == NW_GLOCAL) && k > 0) ? -(go + (int)(k - 1) * ge) : 0;
}

// One cell: h_diag = H(i-1,j-1), h_up/f_up = H/F(i-1,j), h_left/e_left = H/E(i,j-1), s = S(q_i, t_j).
__device__ __forceinline__ u8 nw_cell(int h_diag, int h_up, int f_up, int h_left, int e_left, int s,
                                      int go, int ge, int mode, int &h, int &e, int &f) {
    const int f_open = h_up - go, f_ext = f_up - ge;
    u8 flags = 0;
    if (f_ext > f_open) { f = f_ext; flags = 8; } else { f = f_open; }
    const int e_open = h_left - go, e_ext = e_left - ge;
    if (e_ext > e_open) { e = e_ext; flags |= 4; } else { e = e_open; }
    h = h_diag + s;
    u8 src = 0;
    if (e > h) { h = e; src = 1; }
    if (f > h) { h = f; src = 2; }
    if (mode == NW_LOCAL && h <= 0) { h = 0; src = 3; }
    return src | flags;
}

// The same cell as the score passes write it with Hopper's DPX instructions (Gotoh 1982; scores only, F
// carried as F + go so that each update is one add-max): hd = H(i-1,j-1), sc = S(q_i, t_j), e = E(i,j),
// fg = F(i,j) + go. Returns H(i,j) and de = max(H(i-1,j-1) + s, E(i,j)) (with RELU, and 0: local mode);
// e becomes E(i,j+1) and fg F(i+1,j) + go. Ties are the recurrence's; the kernels that store directions
// take their bits from the inputs and these results (trace.cuh reads them).
template <bool RELU = false>
__device__ __forceinline__ int nw_cell_dpx(int hd, int sc, int &e, int &fg, int go, int ge, int &de) {
    de = RELU ? __viaddmax_s32_relu(hd, sc, e) : __viaddmax_s32(hd, sc, e);
    const int h = __viaddmax_s32(fg, -go, de);
    e = __viaddmax_s32(h, -go, e - ge);
    fg = __viaddmax_s32(fg, -ge, de);
    return h;
}

// Where an alignment may end besides (m, n): anywhere (local), last row or column (semiglobal), last row
// (glocal).
__device__ __forceinline__ bool nw_end_candidate(int i, int j, int m, int n, int mode) {
    return mode == NW_LOCAL || (mode == NW_SEMIGLOBAL && (i == m || j == n)) || (mode == NW_GLOCAL && i == m);
}

// Larger score wins, then the earlier cell in row order (the CPU engine's rule). Scores are below
// 2**29 in magnitude (checked on the host); positions need m*(n+1) < 2**34, else pos is passed as 0.
__device__ __forceinline__ u64 nw_key(int h, long long pos) {
    return ((u64)(h + (1 << 29)) << NW_POS_BITS) | (u64)(((1LL << NW_POS_BITS) - 1) - pos);
}

// Warp-wide max of the keys, one atomic per warp. Every lane of the warp must call it.
__device__ __forceinline__ void nw_offer(u64 *best, u64 key) {
    for (int o = 16; o > 0; o >>= 1) {
        const u64 other = __shfl_xor_sync(0xffffffffu, key, o);
        key = other > key ? other : key;
    }
    if ((((threadIdx.y * blockDim.x) + threadIdx.x) & 31) == 0 && key) atomicMax(best, key);
}

// Reads of values other blocks wrote in the same launch go to L2 (L1 is not coherent across SMs).
__device__ __forceinline__ int nw_load(const int *p) { return __ldcg(p); }

// The wavefront kernels' end-cell order: larger score, then earlier row, then earlier column.
__device__ __forceinline__ bool nw_band_better(int s, int i, int j, int bs, int bi, int bj) {
    return s > bs || (s == bs && (i < bi || (i == bi && j < bj)));
}

// Warp-wide best (score, i, j) by nw_band_better; lane 0 stores it at out[0..2]. Every lane must call it.
__device__ __forceinline__ void nw_band_best_store(int *out, int s, int i, int j, int lane) {
    for (int o = 16; o > 0; o >>= 1) {
        const int os = __shfl_xor_sync(0xffffffffu, s, o);
        const int oi = __shfl_xor_sync(0xffffffffu, i, o);
        const int oj = __shfl_xor_sync(0xffffffffu, j, o);
        if (nw_band_better(os, oi, oj, s, i, j)) { s = os; i = oi; j = oj; }
    }
    if (lane == 0) { out[0] = s; out[1] = i; out[2] = j; }
}

// x + y per halfword (sm_90 has it in hardware; older GPUs get CUDA's emulation of the SIMD intrinsic).
__device__ __forceinline__ unsigned add16(unsigned x, unsigned y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned r;
    asm("add.s16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
    return r;
#else
    return __vadd2(x, y);
#endif
}
