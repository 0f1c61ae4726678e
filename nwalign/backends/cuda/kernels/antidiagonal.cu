// Anti-diagonal kernels for one pair, after:
//  - Kurt, Altilar, Yilmazer Metin, "Implementations of the Needleman-Wunsch Algorithm for GPU
//    Architectures", section IV.B: three rolling anti-diagonal vectors, one launch per anti-diagonal
//    (adiag_step) or one cooperative launch with grid.sync() between anti-diagonals (adiag_coop);
//    the alignment matrix in anti-diagonal-major order, generated in sub-matrices (store == 2).
//  - Huynh et al., "Optimizing Needleman-Wunsch Algorithm through GPU Parallelization Techniques",
//    section 3.3: warp- and block-sized launches that sweep many short anti-diagonals in one launch
//    (adiag_sweep), multi-block launches for long ones.
// Generalised to affine gaps, any integer matrix and the three modes. Rolling buffers are indexed by
// the query position i (0..m): H has three (d mod 3), E and F two (d mod 2).
#include "common.cuh"
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

struct AdiagArgs {
    const u8 *q; const u8 *t; const int *S; int A; int m; int n; int go; int ge; int mode;
    int *H; int *E; int *F;            // rolling buffers: 3*(m+1), 2*(m+1), 2*(m+1)
    u8 *dirs; int store;               // 0 none, 1 row-major (m x (n+1)), 2 anti-diagonal major
    const long long *adm_off; long long adm_base;  // store == 2: offset of diagonal d, minus the sub-matrix base
    int *corner; u64 *best; int pos_keys;
};

__device__ __forceinline__ void adiag_cell(const AdiagArgs &a, int d, int i, u64 &key) {
    const int j = d - i;
    const int stride = a.m + 1;
    int *Hc = a.H + (d % 3) * stride;
    const int *H1 = a.H + ((d + 2) % 3) * stride;  // diagonal d-1
    const int *H2 = a.H + ((d + 1) % 3) * stride;  // diagonal d-2
    int *Ec = a.E + (d & 1) * stride;
    const int *E1 = a.E + ((d + 1) & 1) * stride;
    int *Fc = a.F + (d & 1) * stride;
    const int *F1 = a.F + ((d + 1) & 1) * stride;
    if (i == 0 || j == 0) {
        Hc[i] = nw_border(i == 0 ? j : i, a.mode, a.go, a.ge);
        Ec[i] = NW_NEG;
        Fc[i] = NW_NEG;
        return;
    }
    const int s = __ldg(a.S + a.q[i - 1] * a.A + a.t[j - 1]);
    int h, e, f;
    const u8 dir = nw_cell(nw_load(H2 + i - 1), nw_load(H1 + i - 1), nw_load(F1 + i - 1), nw_load(H1 + i),
                           nw_load(E1 + i), s, a.go, a.ge, a.mode, h, e, f);
    Hc[i] = h;
    Ec[i] = e;
    Fc[i] = f;
    if (a.store == 1) {
        a.dirs[(long long)(i - 1) * (a.n + 1) + j] = dir;
    } else if (a.store == 2) {
        const int lo = max(1, d - a.n);
        a.dirs[a.adm_off[d] - a.adm_base + (i - lo)] = dir;
    }
    if (i == a.m && j == a.n) *a.corner = h;
    if (nw_end_candidate(i, j, a.m, a.n, a.mode)) {
        const u64 k = nw_key(h, a.pos_keys ? (long long)i * (a.n + 1) + j : 0);
        key = k > key ? k : key;
    }
}

// One anti-diagonal d, one thread per cell.
extern "C" __global__ void adiag_step(AdiagArgs a, int d) {
    const int lo = max(0, d - a.n), hi = min(a.m, d);
    const int i = lo + blockIdx.x * blockDim.x + threadIdx.x;
    u64 key = 0;
    if (i <= hi) adiag_cell(a, d, i, key);
    nw_offer(a.best, key);
}

// Anti-diagonals d0 .. d1-1 in one block (warp-sized or block-sized), a barrier between them.
extern "C" __global__ void adiag_sweep(AdiagArgs a, int d0, int d1) {
    u64 key = 0;
    for (int d = d0; d < d1; ++d) {
        const int lo = max(0, d - a.n), hi = min(a.m, d);
        for (int i = lo + threadIdx.x; i <= hi; i += blockDim.x) adiag_cell(a, d, i, key);
        __syncthreads();
    }
    nw_offer(a.best, key);
}

// Anti-diagonals d0 .. d1-1 in one cooperative launch: a grid-stride loop over each diagonal's cells
// and grid.sync() between diagonals. The host sizes the grid to what can be resident at once, so the
// cooperative launch limit is never exceeded: long diagonals just take more strides.
extern "C" __global__ void adiag_coop(AdiagArgs a, int d0, int d1) {
    cg::grid_group grid = cg::this_grid();
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int nthreads = gridDim.x * blockDim.x;
    u64 key = 0;
    for (int d = d0; d < d1; ++d) {
        const int lo = max(0, d - a.n), hi = min(a.m, d);
        for (int i = lo + tid; i <= hi; i += nthreads) adiag_cell(a, d, i, key);
        grid.sync();
    }
    nw_offer(a.best, key);
}
