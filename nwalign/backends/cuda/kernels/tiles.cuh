// One BH x BW tile of the DP matrix, one thread per cell, swept along the tile's own anti-diagonals
// with a block barrier between them (Huynh et al., Algorithms 3-4). Tiles exchange borders through
// global memory: rowH/rowF hold H/F of the last row computed in each column, colH/colE H/E of the last
// column computed in each row, and cornerLeft[bi] H at the top-right of the last tile of tile-row bi
// (the diagonal corner of the next tile). With SHARED the query/target slices are staged in shared
// memory (Algorithm 4); otherwise every cell reads its residues from global memory (Algorithm 3).
#pragma once
#include "common.cuh"

struct TileArgs {
    const u8 *q; const u8 *t; const int *S; int A; int m; int n; int go; int ge; int mode;
    int *rowH; int *rowF; int *colH; int *colE; int *cornerLeft;
    u8 *dirs; int store;  // row-major m x (n+1) when store == 1
    int *corner; u64 *best; int pos_keys;
};

template <int BH, int BW, bool SHARED>
__device__ void nw_tile(const TileArgs &a, int bi, int bj, u64 &key) {
    __shared__ int sH[BH + 1][BW + 1];
    __shared__ int sE[BH + 1][BW + 1];
    __shared__ int sF[BH + 1][BW + 1];
    __shared__ u8 sq[BH];
    __shared__ u8 st[BW];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i0 = bi * BH, j0 = bj * BW;
    const int rows = min(BH, a.m - i0), cols = min(BW, a.n - j0);
    if (ty == 0 && tx < cols) {
        sH[0][tx + 1] = nw_load(a.rowH + j0 + 1 + tx);
        sF[0][tx + 1] = nw_load(a.rowF + j0 + 1 + tx);
        if (SHARED) st[tx] = a.t[j0 + tx];
    }
    if (tx == 0 && ty < rows) {
        sH[ty + 1][0] = nw_load(a.colH + i0 + 1 + ty);
        sE[ty + 1][0] = nw_load(a.colE + i0 + 1 + ty);
        if (SHARED) sq[ty] = a.q[i0 + ty];
    }
    if (tx == 0 && ty == 0) sH[0][0] = bj == 0 ? nw_border(i0, a.mode, a.go, a.ge) : nw_load(a.cornerLeft + bi);
    __syncthreads();
    const bool mine = ty < rows && tx < cols;
    for (int step = 0; step < rows + cols - 1; ++step) {
        if (mine && tx + ty == step) {
            const int i = i0 + ty + 1, j = j0 + tx + 1;
            const int qi = SHARED ? sq[ty] : a.q[i - 1];
            const int tj = SHARED ? st[tx] : a.t[j - 1];
            int h, e, f;
            const u8 dir = nw_cell(sH[ty][tx], sH[ty][tx + 1], sF[ty][tx + 1], sH[ty + 1][tx], sE[ty + 1][tx],
                                   __ldg(a.S + qi * a.A + tj), a.go, a.ge, a.mode, h, e, f);
            sH[ty + 1][tx + 1] = h;
            sE[ty + 1][tx + 1] = e;
            sF[ty + 1][tx + 1] = f;
            if (a.store) a.dirs[(long long)(i - 1) * (a.n + 1) + j] = dir;
            if (i == a.m && j == a.n) *a.corner = h;
            if (nw_end_candidate(i, j, a.m, a.n, a.mode)) {
                const u64 k = nw_key(h, a.pos_keys ? (long long)i * (a.n + 1) + j : 0);
                key = k > key ? k : key;
            }
        }
        __syncthreads();
    }
    if (ty == 0 && tx < cols) {
        a.rowH[j0 + 1 + tx] = sH[rows][tx + 1];
        a.rowF[j0 + 1 + tx] = sF[rows][tx + 1];
    }
    if (tx == 0 && ty < rows) {
        a.colH[i0 + 1 + ty] = sH[ty + 1][cols];
        a.colE[i0 + 1 + ty] = sE[ty + 1][cols];
    }
    if (tx == 0 && ty == 0) a.cornerLeft[bi] = sH[0][cols];
    __syncthreads();  // the shared tile is reused by the next tile this block takes
}

// Tiles (bi, k - bi) of tile-diagonal k for bi in [bi_lo, bi_lo + count).
__device__ __forceinline__ void tile_range(int k, int tiles_j, int tiles_i, int &bi_lo, int &count) {
    bi_lo = max(0, k - (tiles_j - 1));
    const int bi_hi = min(tiles_i - 1, k);
    count = bi_hi - bi_lo + 1;
}
