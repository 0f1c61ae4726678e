// Traceback by one warp over packed direction nibbles (the CPU engine's direction byte, bits 0-3), shared
// by wavefront.cu (one long pair) and batch_align.cu (many pairs).
#pragma once
#include "common.cuh"

#define NW_DIR_ROWS 8  // rows per 32-bit word of packed nibbles

// The direction nibble (source, bit 2 E(i,j) extended, bit 3 F(i,j) extended) of row r of a word of 8 rows:
// packed nibbles, or (planes) wave_score.cu's bit planes: per row r bits 23 - 3r (E beats the diagonal),
// 22 - 3r (F beats both), 21 - 3r (F extended), 31 - r (E extended). Source 3 is a local start in local
// mode, and reads as F elsewhere.
__device__ __forceinline__ int nw_nibble(unsigned w, int r, int planes) {
    if (!planes) return (w >> (4 * r)) & 15;
    const int src = (w >> (22 - 3 * r)) & 1 ? 2 : (w >> (23 - 3 * r)) & 1;
    return src | ((w >> (31 - r)) & 1) << 2 | ((w >> (21 - 3 * r)) & 1) << 3;
}

// The nibble of local cell `li` (rows from the launch's r0 + 1) in column j, stored as [band of 32 x 8
// rows][lane][column] words.
__device__ __forceinline__ int nw_dir(const unsigned *dirs, int li, int j, size_t ld, int planes) {
    const unsigned w = dirs[((size_t)(li / (32 * NW_DIR_ROWS)) * 32 + (li / NW_DIR_ROWS) % 32) * ld + j];
    return nw_nibble(w, li % NW_DIR_ROWS, planes);
}

// Walk back from cell (i, j) in `state` (0 H, 1 E, 2 F) until row r0, column 0 or a local start (stopped);
// dir(i, j) is cell (i, j)'s nibble. The path is sequential, but its runs are not: lane k reads the k-th
// cell ahead along the current run (diagonal in H, left in E, up in F), a ballot finds where the run ends,
// and up to 32 columns are emitted at once. ops gets the columns in reverse order (0 diagonal, 1 gap in the
// target (up), 2 gap in the query (left)) from index nops on. Every lane of the warp must call it; all
// return the same values.
template <typename Dir>
__device__ __forceinline__ void nw_trace_walk(const Dir &dir, int r0, int local_mode, int lane, u8 *ops, int &i,
                                              int &j, int &state, int &nops, int &stopped) {
    while (i > r0 && j > 0) {
        const int ik = state == 1 ? i : i - lane, jk = state == 2 ? j : j - lane;
        const bool valid = ik > r0 && jk > 0;
        const int d = valid ? dir(ik, jk) : 0;
        if (state == 0) {
            const unsigned diag = __ballot_sync(0xffffffffu, valid && (d & 3) == 0);
            const int run = diag == 0xffffffffu ? 32 : __ffs(~diag) - 1;
            if (lane < run) ops[nops + lane] = 0;
            nops += run; i -= run; j -= run;
            if (run == 32 || !(i > r0 && j > 0)) continue;
            const int src = __shfl_sync(0xffffffffu, d, run) & 3;  // cell (i, j): not a diagonal step
            if (src == 1) state = 1;
            else if (src == 2 || !local_mode) state = 2;
            else { stopped = 1; break; }
        } else {
            const unsigned ext = __ballot_sync(0xffffffffu, valid && (d & (state == 1 ? 4 : 8)));
            const int z = ext == 0xffffffffu ? 32 : __ffs(~ext) - 1;  // cells 0 .. z - 1 extend the gap
            const int left = state == 1 ? j : i - r0;
            const int emit = min(z < 32 ? z + 1 : 32, left);
            if (lane < emit) ops[nops + lane] = state == 1 ? 2 : 1;
            nops += emit;
            if (state == 1) j -= emit; else i -= emit;
            if (z < min(left, 32)) state = 0;  // cell z opened the gap: H above / left of it
        }
    }
}

// The walk over a launch's [band][lane][column] words (wavefront.cu's layout, ld words per row of a band).
__device__ __forceinline__ void nw_trace_warp(const unsigned *dirs, int r0, size_t ld, int local_mode, int planes,
                                              int lane, u8 *ops, int &i, int &j, int &state, int &nops,
                                              int &stopped) {
    const auto dir = [&](int ik, int jk) { return nw_dir(dirs, ik - r0 - 1, jk, ld, planes); };
    nw_trace_walk(dir, r0, local_mode, lane, ops, i, j, state, nops, stopped);
}
