// scan16: the packed 16-bit form of the search kernel (local alignment, one query against a
// database). Each thread scores TWO database sequences at once, one per 16-bit half of every register
// (neighbours in length order, so the halves finish together), with the query cut into slices of K
// rows held in registers as in lazy_rscan (allpairs.cu): every DPX instruction (__viaddmax_s16x2,
// __vimax3_s16x2_relu) updates two cells.
//
// Range: values are kept as G = H - go, E and F, all >= -go in local mode; the diagonal term is a
// saturating add, so no value wraps. A pair whose best score reaches `limit` = 32767 - (max S + go)
// may have saturated and is flagged; the host recomputes it in 32 bits. Below `limit` no cell
// reached saturation, so the score is exact.
#include "common.cuh"

#define S16_PAD (-16000)   // padding rows (query) and columns (shorter sequence of a pair)
#define S16_NEG (-30000)   // minus infinity for E and F on the first column / row

__device__ __forceinline__ unsigned pack2(int lo, int hi) { return __byte_perm(lo, hi, 0x5410); }
__device__ __forceinline__ int lo16(unsigned v) { return (int)(short)(v & 0xffffu); }
__device__ __forceinline__ int hi16(unsigned v) { return (int)(short)(v >> 16); }

// order: database sequence indices, longest first; slot p scores order[2p] (low half) and
// order[2p + 1] (high half, absent for the last slot of an odd count). bufGF: (G, F) of the previous
// slice's last row, [column][slot]. scores[2p + h]: best local score of half h.
template <int K>
__global__ void __launch_bounds__(256, 1) scan16(const u8 *tseqs, const long long *toffsets, const int *order,
                                                 int count, const u8 *q, int m, const int *matrix, int A, int go,
                                                 int ge, uint2 *bufGF, int *scores) {
    extern __shared__ int sS[];  // (A + 1) x (A + 1): S + go, last row and column S16_PAD
    const int A1 = A + 1;
    for (int k = threadIdx.x; k < A1 * A1; k += blockDim.x) {
        const int a = k / A1, b = k % A1;
        sS[k] = (a < A && b < A) ? matrix[a * A + b] + go : S16_PAD;
    }
    __syncthreads();
    const int slots = (count + 1) / 2;
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= slots) return;
    const int k0 = order[2 * p], k1 = 2 * p + 1 < count ? order[2 * p + 1] : -1;
    const u8 *t0 = tseqs + toffsets[k0];
    const int n0 = (int)(toffsets[k0 + 1] - toffsets[k0]);
    const u8 *t1 = k1 >= 0 ? tseqs + toffsets[k1] : t0;
    const int n1 = k1 >= 0 ? (int)(toffsets[k1 + 1] - toffsets[k1]) : 0;
    const int n = max(n0, n1);
    const size_t stride = (size_t)slots;
    uint2 *col = bufGF + p;
    const unsigned go2 = pack2(go, go), nge2 = pack2(-ge, -ge), neg2 = pack2(S16_NEG, S16_NEG);
    const unsigned g0 = pack2(-go, -go);  // G on row 0 and column 0: H = 0
    unsigned best = 0;
    for (int i0 = 0; i0 < m; i0 += K) {
        const bool first = i0 == 0, last = i0 + K >= m;
        int prof[K];
        unsigned G[K], E[K];
#pragma unroll
        for (int r = 0; r < K; ++r) {
            prof[r] = (i0 + r < m ? q[i0 + r] : A) * A1;
            G[r] = g0;
            E[r] = neg2;
        }
        unsigned diag_top = g0;
        for (int j = 1; j <= n; ++j) {
            const int c0 = j <= n0 ? t0[j - 1] : A, c1 = j <= n1 ? t1[j - 1] : A;
            const size_t at = (size_t)(j - 1) * stride;
            const uint2 gf = first ? make_uint2(g0, neg2) : col[at];
            unsigned g_up = gf.x, f = gf.y, diag = diag_top, h_pair = 0;
            diag_top = g_up;
#pragma unroll
            for (int r = 0; r < K; ++r) {
                const unsigned s = pack2(sS[prof[r] + c0], sS[prof[r] + c1]);
                const unsigned e = __viaddmax_s16x2(E[r], nge2, G[r]);
                f = __viaddmax_s16x2(f, nge2, g_up);
                const unsigned h = __vimax3_s16x2_relu(__vaddss2(diag, s), e, f);
                if (r & 1) best = __vimax3_s16x2(best, h_pair, h);
                else h_pair = h;
                diag = G[r];
                G[r] = __vsub2(h, go2);
                E[r] = e;
                g_up = G[r];
            }
            if (!last) col[at] = make_uint2(g_up, f);
        }
    }
    scores[2 * p] = lo16(best);
    if (k1 >= 0) scores[2 * p + 1] = hi16(best);
}

template __global__ void scan16<16>(const u8 *, const long long *, const int *, int, const u8 *, int, const int *,
                                    int, int, int, uint2 *, int *);
template __global__ void scan16<32>(const u8 *, const long long *, const int *, int, const u8 *, int, const int *,
                                    int, int, int, uint2 *, int *);
