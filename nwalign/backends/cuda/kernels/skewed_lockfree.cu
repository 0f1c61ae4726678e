// Single persistent kernel over the skewed (tile anti-diagonal) iteration space with a lock-free
// inter-block barrier, after Chaudhary et al. (NW with skewing transformation; lock-free block
// synchronisation of Xiao and Feng): every block owns one flag in `arrive` and one in `release`, no
// atomics. Block 0 waits until every block has raised its arrive flag to the current goal, then raises
// every release flag; each block waits on its own release flag.
//
// Why it cannot deadlock: the host sizes the grid from the occupancy API (resident blocks per SM x SMs),
// so every block of the grid is resident at once and runs until it reaches the barrier; no block ever
// waits for a block that is not yet scheduled. Flags only grow (goal = tile-diagonal + 1), so a flag
// left from an earlier barrier can never satisfy a later one.
// Tiles are 32 x 32 with the sequence slices in shared memory, as in the paper's shared-memory chunks.
#include "tiles.cuh"

__device__ __forceinline__ void lockfree_barrier(volatile int *arrive, volatile int *release, int goal) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;
    __threadfence();  // this block's border writes are visible before its flag is
    __syncthreads();
    if (tid == 0) arrive[blockIdx.x] = goal;
    if (blockIdx.x == 0) {
        for (int b = tid; b < gridDim.x; b += nthreads)
            while (arrive[b] < goal) { }
        __syncthreads();
        __threadfence();
        for (int b = tid; b < gridDim.x; b += nthreads) release[b] = goal;
    }
    if (tid == 0)
        while (release[blockIdx.x] < goal) { }
    __threadfence();
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(1024) skewed_lockfree(TileArgs a, int tiles_i, int tiles_j,
                                                                   int *arrive, int *release) {
    u64 key = 0;
    const int diagonals = tiles_i + tiles_j - 1;
    for (int k = 0; k < diagonals; ++k) {
        int bi_lo, count;
        tile_range(k, tiles_j, tiles_i, bi_lo, count);
        for (int idx = blockIdx.x; idx < count; idx += gridDim.x)
            nw_tile<32, 32, true>(a, bi_lo + idx, k - bi_lo - idx, key);
        lockfree_barrier(arrive, release, k + 1);
    }
    nw_offer(a.best, key);
}
