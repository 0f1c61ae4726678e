// Diagonal-block kernel (Huynh et al., "Optimizing Needleman-Wunsch Algorithm through GPU
// Parallelization Techniques", Algorithms 3-4 and Table 1): one launch per diagonal of BH x BW tiles,
// each block sweeping its own tile's anti-diagonals; with or without shared memory for the sequence
// slices. Block shapes 8x8, 16x16, 32x32, 8x128 and 16x64 (rows x columns).
#include "tiles.cuh"

template <int BH, int BW, bool SHARED>
__global__ void __launch_bounds__(BH * BW) diagonal_block(TileArgs a, int k, int tiles_i, int tiles_j) {
    int bi_lo, count;
    tile_range(k, tiles_j, tiles_i, bi_lo, count);
    u64 key = 0;
    if ((int)blockIdx.x < count) nw_tile<BH, BW, SHARED>(a, bi_lo + blockIdx.x, k - bi_lo - blockIdx.x, key);
    nw_offer(a.best, key);
}

template __global__ void diagonal_block<8, 8, true>(TileArgs, int, int, int);
template __global__ void diagonal_block<8, 8, false>(TileArgs, int, int, int);
template __global__ void diagonal_block<16, 16, true>(TileArgs, int, int, int);
template __global__ void diagonal_block<16, 16, false>(TileArgs, int, int, int);
template __global__ void diagonal_block<32, 32, true>(TileArgs, int, int, int);
template __global__ void diagonal_block<32, 32, false>(TileArgs, int, int, int);
template __global__ void diagonal_block<8, 128, true>(TileArgs, int, int, int);
template __global__ void diagonal_block<8, 128, false>(TileArgs, int, int, int);
template __global__ void diagonal_block<16, 64, true>(TileArgs, int, int, int);
template __global__ void diagonal_block<16, 64, false>(TileArgs, int, int, int);
