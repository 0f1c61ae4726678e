// GSW database-search kernel (Akoglu and Striemer, "Scalable and highly parallel implementation of
// Smith-Waterman on GPU using CUDA"): one thread per database sequence, the database sorted by length
// so the threads of a warp finish together, one launch for the whole database; the query and the
// substitution matrix in constant memory, the matrix in the paper's alphabetical 26 x 26 layout indexed
// by letter - 'A'; each thread sweeps its sequence column by column, keeping the current column of H and
// E in a temporary column in global memory (laid out [row][thread] so a warp's accesses coalesce).
// Generalised from the paper's linear gaps to affine gaps (Gotoh), as in the rest of nwalign.
#include "common.cuh"

#define GSW_MAX_QUERY 60000

__constant__ u8 c_query[GSW_MAX_QUERY];  // letters - 'A'
__constant__ int c_matrix[26 * 26];

// db: letters - 'A' of all sequences; order: thread -> sequence index (length-sorted);
// temp: 2 * m ints per thread ([row][thread] for H, then for E); best: score per sequence.
extern "C" __global__ void gsw(const u8 *db, const long long *offsets, const int *order, int count, int m, int go,
                               int ge, int *temp, int *best) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= count) return;
    const int k = order[tid];
    const long long start = offsets[k], end = offsets[k + 1];
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    int *Hcol = temp + tid;           // Hcol[i * stride]: H(i, j-1), then H(i, j)
    int *Ecol = temp + (size_t)m * stride + tid;
    for (int i = 0; i < m; ++i) {
        Hcol[i * stride] = 0;
        Ecol[i * stride] = NW_NEG;
    }
    int top = 0;
    for (long long p = start; p < end; ++p) {
        const int *row = c_matrix + db[p] * 26;
        int diag = 0;            // H(i-1, j-1), row 0 is 0 in local mode
        int h_up = 0, f = NW_NEG;  // H(i-1, j), F(i-1, j)
        for (int i = 0; i < m; ++i) {
            const int h_left = Hcol[i * stride];
            const int e = max(h_left - go, Ecol[i * stride] - ge);
            f = max(h_up - go, f - ge);
            const int h = max(max(diag + row[c_query[i]], 0), max(e, f));
            diag = h_left;
            Hcol[i * stride] = h;
            Ecol[i * stride] = e;
            h_up = h;
            top = max(top, h);
        }
    }
    best[k] = top;
}
