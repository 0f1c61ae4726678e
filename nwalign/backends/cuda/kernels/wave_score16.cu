// 16-bit packed score pass of the wavefront kernel (global mode): two cells per 32-bit register and per
// s16x2 DPX instruction, with the band sweep and tagged hand-off of wave_score.cu (see its header).
//
// Packing. Lane k keeps R = 2P rows: the upper half A (rows row0 + 1 .. row0 + P) in the low halfwords
// and the lower half B (rows row0 + P + 1 .. row0 + R) in the high halfwords, B one column behind A. At
// step s, A computes column j = s - 2k + 1 and B column j - 1: B's input row (A's last row at column
// j - 1) was computed at the previous step, so pair p (rows p of A and B) is one register and the F chain
// down the lane is P packed operations long. Lanes are thus 2 columns apart (lane 31 hands over column
// s - 62). The two scores of pair p come from the profile words of this step's target letter (A) and the
// previous step's (B), merged and sign-extended by one prmt. Per pair and column: 5 DPX/add.s16x2
// instructions and that prmt, for two cells (the 32-bit pass: 5 and 1 for one).
//
// Range. Scores are kept relative to a warp-uniform base (32-bit), so only the spread of H over the
// cells a warp holds must fit in int16, not the scores themselves (a 100k x 100k global score is about
// 400,000). Adjacent cells differ by at most go + max(S) (Gotoh: H(i, j) >= H(i-1, j) - go, and a path to
// (i, j) turned into one to (i-1, j) loses at most max(S) + go), so the spread is bounded by the warp's
// extent (32R rows, 64 + LOOKAHEAD columns) times go + max(S). Once per LOOKAHEAD steps every lane checks
// that its H values are within +-limit16 of the base (the host derives limit16 from go and max(S) so that
// nothing can wrap until the next check), then the base moves to lane 0's first row. A failed check sets
// *overflow; the host then recomputes the pass with the 32-bit kernel. The host uses this pass only when
// the bound shows the check cannot fail for the scoring, and only for long queries (250k rows and up): at
// 100k the 32-bit pass's shorter bands and lanes one column apart win (measured on the H100,
// docs/performance.md).
//
// Requires global mode, scores in [-128, 127], 0 <= ge <= go. Local and semiglobal end cells need per
// cell a comparison that yields the column (CUDA's header writes __vibmax_s16x2 for sm_90 as a max, two
// compares and two selects) and a 32-bit best per row beside the moving base, costing about what packing
// saves; those modes use wave_score.cu.
#include "wave_common.cuh"

// A predicated store: no branch, so the compiler keeps the warp converged (an `if` around store_word
// compiled to a convergence barrier and a divergence check before every shuffle of the next step).
// (Here rather than in wave_common.cuh, which wave_score.cu's tuned code generation also reads.)
template <bool SYS = false>
__device__ __forceinline__ void store_word_if(bool pred, u64 *p, u64 v) {
    if constexpr (SYS)
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %0, 0; @p st.relaxed.sys.global.b64 [%1], %2; }"
                     ::"r"((int)pred), "l"(p), "l"(v) : "memory");
    else
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %0, 0; @p st.relaxed.gpu.global.b64 [%1], %2; }"
                     ::"r"((int)pred), "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned max16(unsigned x, unsigned y) { return __vmaxs2(x, y); }
__device__ __forceinline__ unsigned min16(unsigned x, unsigned y) { return __vmins2(x, y); }
__device__ __forceinline__ unsigned pair16(int v) { return ((unsigned)v & 0xffffu) * 0x10001u; }  // v, v
__device__ __forceinline__ unsigned pack16(int lo, int hi) { return ((unsigned)lo & 0xffffu) | ((unsigned)hi << 16); }
__device__ __forceinline__ int lo16(unsigned v) { return (int)(short)(v & 0xffffu); }
__device__ __forceinline__ int hi16(unsigned v) { return (int)v >> 16; }

// prmt with a constant selector (selector nibbles with bit 3 set replicate the selected byte's sign).
template <int SEL>
__device__ __forceinline__ unsigned prmt(unsigned x, unsigned y) {
    unsigned r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "n"(SEL));
    return r;
}

// The two scores of pair p, sign-extended to halfwords: byte p % 4 of x (A) and of y (B).
template <int K>
__device__ __forceinline__ unsigned scores16(unsigned x, unsigned y) {
    return prmt<K | ((K | 8) << 4) | ((K + 4) << 8) | (((K + 4) | 8) << 12)>(x, y);
}

// wave_score.cu's arguments and the range check's. (A separate struct: two more fields in ScoreArgs changed
// ptxas's register allocation of wave_score.cu's direction-storing pass and made it 15 % slower.)
struct Score16Args {
    ScoreArgs a;
    int limit16;    // largest |H - base| accepted at a check
    int *overflow;  // set to 1 when a check fails
};

// SPREAD: the pass spread over GPUs (wave_score16_spread): hand-off words at system scope, and the band's
// own written to `out_row` (the next band's GPU's hand-off row); otherwise to a.row.
template <int P, bool SPREAD = false>
__device__ __forceinline__ void score_band16(const ScoreArgs &a, int limit16, int *overflow, unsigned *prof, int b,
                                             int lane, u64 *out_row = nullptr) {
    constexpr int R = 2 * P;
    constexpr int W = P <= 4 ? 2 : 4;  // profile words per letter and lane: A rows in the first half, B rows after
    constexpr int HW = W / 2;
    constexpr int BAND = 32 * R;
    const int top = a.r0 + b * BAND;    // the band's top row: its H arrives through the hand-off row
    const int row0 = top + lane * R;    // A: rows row0 + 1 .. row0 + P, B: rows row0 + P + 1 .. row0 + R
    const int ncols = a.ncols;

    __syncwarp();  // the previous band's last reads are done
    for (int c = 0; c < a.A; ++c) {
#pragma unroll
        for (int w = 0; w < W; ++w) {
            unsigned word = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int p = 4 * (w % HW) + k;
                const int i = row0 + (w < HW ? 0 : P) + p + 1;
                const int s = (p < P && i <= a.r1) ? a.S[a.q[i - 1] * a.A + c] : 0;
                word |= ((unsigned)s & 0xffu) << (8 * k);
            }
            prof[(c * 32 + lane) * W + w] = word;
        }
    }
    __syncwarp();

    int base = nw_border(top, NW_GLOBAL, a.go, a.ge);  // warp-uniform: every halfword is H - base
    bool bad = false;
    unsigned H[P], E[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
        const int ha = nw_border(row0 + p + 1, NW_GLOBAL, a.go, a.ge) - base;
        const int hb = nw_border(row0 + P + p + 1, NW_GLOBAL, a.go, a.ge) - base;
        bad |= max(abs(ha), abs(hb)) > limit16;
        H[p] = pack16(ha, hb);
        E[p] = pack16(ha - a.go, hb - a.go);  // E(i, 1) = H(i, 0) - go
    }
    // diag: H(row0, j - 1) | H(row0 + P, j - 2); fga: the previous step's F chain (low half: F + go of row
    // row0 + P + 1, B's input); up_out: this lane's last row (H | F + go, relative) for lane + 1.
    unsigned diag = pack16(nw_border(row0, NW_GLOBAL, a.go, a.ge) - base, 0), fga = 0, up_out = 0;
    unsigned pb[HW];  // the previous step's B profile words
#pragma unroll
    for (int w = 0; w < HW; ++w) pb[w] = 0;
    const unsigned mgo = pair16(-a.go), mge = pair16(-a.ge);
    const unsigned expect = wave_tag(b - 1), mine = wave_tag(b) << 16;
    u64 cur = 0, nxt = 0;
    load_word_if<SPREAD>(lane < LOOKAHEAD && lane + 1 <= ncols, nxt, a.row + lane + 1);
    int tq[LOOKAHEAD];
#pragma unroll
    for (int u = 0; u < LOOKAHEAD; ++u) tq[u] = a.t[min(max(u - 2 * lane, 0), a.n - 1)];
    const bool checkpoint = a.ck_every > 0 && (b + 1) % a.ck_every == 0 && a.r0 + (b + 1) * BAND <= a.r1;
    int *ckH = checkpoint ? a.ckH + (size_t)((b + 1) / a.ck_every) * (ncols + 1) : nullptr;
    int *ckF = checkpoint ? a.ckF + (size_t)((b + 1) / a.ck_every) * (ncols + 1) : nullptr;

    auto step = [&](int s, auto guard, const int u, u64 *out, const u8 *tp) {
        constexpr bool G = decltype(guard)::value;
        const int j = s + u - 2 * lane + 1;  // A's column; B's is j - 1
        const int src = (s + u) & 31;
        const unsigned up = __shfl_up_sync(FULL_MASK, up_out, 1);
        const unsigned lo = __shfl_sync(FULL_MASK, (unsigned)cur, src);
        const unsigned hi = __shfl_sync(FULL_MASK, (unsigned)(cur >> 32), src);
        // Lane 0 takes the hand-off word; computed by every lane and selected, not branched on (a branch
        // compiled to a convergence barrier, BSSY/BSYNC, per step).
        const int h0 = (int)lo - base;
        const unsigned recv = lane == 0 ? pack16(h0, h0 - (int)(hi & 0xffffu) + a.go) : up;
        const int tc = tq[u];
        tq[u] = G ? a.t[min(max(j + LOOKAHEAD - 1, 0), a.n - 1)] : tp[u];
        if (!G || (j >= 1 && j <= ncols + 1)) {
            unsigned cw[W];
            if constexpr (W == 2) {
                const uint2 v = ((const uint2 *)prof)[tc * 32 + lane];
                cw[0] = v.x; cw[1] = v.y;
            } else {
                const uint4 v = ((const uint4 *)prof)[tc * 32 + lane];
                cw[0] = v.x; cw[1] = v.y; cw[2] = v.z; cw[3] = v.w;
            }
            const unsigned up2 = prmt<0x5410>(recv, H[P - 1]);  // H(row0, j) | H(row0 + P, j - 1)
            unsigned fg = prmt<0x5432>(recv, fga);               // F + go of rows row0 + 1 | row0 + P + 1
            unsigned hd = diag;
            unsigned oldH[P], oldE[P];
#pragma unroll
            for (int p = 0; p < P; ++p) {
                unsigned sc;
                switch (p & 3) {
                    case 0: sc = scores16<0>(cw[p >> 2], pb[p >> 2]); break;
                    case 1: sc = scores16<1>(cw[p >> 2], pb[p >> 2]); break;
                    case 2: sc = scores16<2>(cw[p >> 2], pb[p >> 2]); break;
                    default: sc = scores16<3>(cw[p >> 2], pb[p >> 2]); break;
                }
                oldH[p] = H[p];
                oldE[p] = E[p];
                const unsigned de = __viaddmax_s16x2(hd, sc, E[p]);  // max(H(i-1, j-1) + s, E(i, j))
                const unsigned h = __viaddmax_s16x2(fg, mgo, de);    // H(i, j) = max(F(i, j), that)
                E[p] = __viaddmax_s16x2(E[p], mge, add16(h, mgo));  // E(i, j + 1)
                fg = __viaddmax_s16x2(fg, mge, de);                  // F(i + 1, j) + go
                hd = H[p];
                H[p] = h;
            }
            if (G && j == 1) {  // B's column 0 is the border: keep its halves
#pragma unroll
                for (int p = 0; p < P; ++p) { H[p] = prmt<0x7610>(H[p], oldH[p]); E[p] = prmt<0x7610>(E[p], oldE[p]); }
            }
            if (G && j == ncols + 1) {  // A is past the last column: keep its halves (H(i, ncols))
#pragma unroll
                for (int p = 0; p < P; ++p) { H[p] = prmt<0x3254>(H[p], oldH[p]); E[p] = prmt<0x3254>(E[p], oldE[p]); }
            }
            diag = up2;
            fga = fg;
#pragma unroll
            for (int w = 0; w < HW; ++w) pb[w] = cw[HW + w];
            up_out = prmt<0x7632>(H[P - 1], fg);  // B's last row at column j - 1: H | F + go
        }
        // Lane 31 finished column s + u - 62: hand it to the next band (and to the checkpoint row).
        const int j31 = s + u - 62;
        const bool put = lane == 31 && (!G || (j31 >= 1 && j31 <= ncols));
        const int h_out = lo16(up_out), fg_out = hi16(up_out);
        const unsigned d_out = (unsigned)(h_out - fg_out + a.go);  // H - F of the next band's first row
        store_word_if<SPREAD>(put, out + u, (u64)(unsigned)(h_out + base) | ((u64)(mine | d_out) << 32));
        if (checkpoint && put) {
            ckH[j31] = h_out + base;
            ckF[j31] = fg_out + base - a.go + a.ge;  // F(i, j) with max(H - go, F - ge) = F(i + 1, j), exactly
        }
    };
    auto group = [&](int s, auto guard) {  // steps s .. s + LOOKAHEAD - 1, s a multiple of LOOKAHEAD
        fetch_handoff<SPREAD>(a.row, ncols, s, lane, expect, cur, nxt);
        // Range check, then the base moves to lane 0's first row (every relative value moves with it).
        unsigned hmax = H[0], hmin = H[0];
#pragma unroll
        for (int p = 1; p < P; ++p) { hmax = max16(hmax, H[p]); hmin = min16(hmin, H[p]); }
        bad |= max(lo16(hmax), hi16(hmax)) > limit16 || min(lo16(hmin), hi16(hmin)) < -limit16;
        const int delta = __shfl_sync(FULL_MASK, lo16(H[0]), 0);
        const unsigned d2 = pair16(-delta);
#pragma unroll
        for (int p = 0; p < P; ++p) { H[p] = add16(H[p], d2); E[p] = add16(E[p], d2); }
        diag = add16(diag, d2);
        fga = add16(fga, d2);
        up_out = add16(up_out, d2);
        base += delta;
        u64 *out = (SPREAD ? out_row : a.row) + s - 62;
        const u8 *tp = a.t + (s - 2 * lane + LOOKAHEAD);
#pragma unroll
        for (int u = 0; u < LOOKAHEAD; ++u) step(s, guard, u, out, tp);
    };

    // Steps 0 .. ncols + 62; from step 63 to ncols - 1 both halves of every lane are inside the matrix.
    int s = 0;
    for (; s < 63; s += LOOKAHEAD) group(s, Guard<true>());
    for (; s + LOOKAHEAD <= ncols; s += LOOKAHEAD) group(s, Guard<false>());
    for (; s < ncols + 63; s += LOOKAHEAD) group(s, Guard<true>());

    if (a.r1 == a.m && ncols == a.n) {  // H holds the last column: H(m, n)
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if (row0 + p + 1 == a.m) *a.corner = lo16(H[p]) + base;
            if (row0 + P + p + 1 == a.m) *a.corner = hi16(H[p]) + base;
        }
    }
    if (__any_sync(FULL_MASK, bad) && lane == 0) *overflow = 1;
}

// Blocks of WAVE_WARPS warps take consecutive bands, as in wave_score.cu; 16 warps per SM.
template <int P>
__global__ void __launch_bounds__(32 * WAVE_WARPS, 16 / WAVE_WARPS) wave_score16(Score16Args args) {
    constexpr int W = P <= 4 ? 2 : 4;
    extern __shared__ unsigned prof[];
    const ScoreArgs &a = args.a;
    const int w = threadIdx.x >> 5;
    for (int b = blockIdx.x * WAVE_WARPS + w; b < a.nbands; b += gridDim.x * WAVE_WARPS)
        score_band16<P>(a, args.limit16, args.overflow, prof + w * a.A * 32 * W, b, threadIdx.x & 31);
}

// Pairs per lane: 8, 12 and 16 rows per lane, the band heights of wave_score.cu's 32-bit fallback.
template __global__ void wave_score16<4>(Score16Args);
template __global__ void wave_score16<6>(Score16Args);
template __global__ void wave_score16<8>(Score16Args);

// The pass spread over GPUs: the bands, in chunks of `chunk` consecutive bands, dealt round-robin (chunk k to
// GPU k % gpus); this launch runs GPU `gpu`'s bands in order, as wave_score16 runs all of them. A band
// reads the previous band's hand-off words from a.row, on its own GPU, and writes its own to the row of the
// GPU that runs the next band (`next_row` for a chunk's last band, else a.row): every GPU's row receives
// its words in band order, so the tags work as on one GPU (the host keeps gpus x chunk below 2^15 bands).
// Checkpoint rows, the corner and the overflow flag are on the first GPU (peer access).
struct Spread16Args {
    Score16Args s;
    u64 *next_row;    // the hand-off row of GPU (gpu + 1) % gpus
    int gpu, gpus, chunk, local_bands;
};

template <int P>
__global__ void __launch_bounds__(32 * WAVE_WARPS, 16 / WAVE_WARPS) wave_score16_spread(Spread16Args args) {
    constexpr int W = P <= 4 ? 2 : 4;
    extern __shared__ unsigned prof[];
    const ScoreArgs &a = args.s.a;
    const int w = threadIdx.x >> 5;
    for (int l = blockIdx.x * WAVE_WARPS + w; l < args.local_bands; l += gridDim.x * WAVE_WARPS) {
        const int k = l / args.chunk, within = l - k * args.chunk;
        const int b = (k * args.gpus + args.gpu) * args.chunk + within;
        unsigned *mine = prof + w * a.A * 32 * W;
        // Only a chunk's first band (its words come from another GPU) and last (its words go to one) need
        // system-scope loads and stores; the others run wave_score16's band as it is.
        if (within == 0 || within == args.chunk - 1)
            score_band16<P, true>(a, args.s.limit16, args.s.overflow, mine, b, threadIdx.x & 31,
                                  within == args.chunk - 1 ? args.next_row : a.row);
        else
            score_band16<P, false>(a, args.s.limit16, args.s.overflow, mine, b, threadIdx.x & 31);
    }
}

template __global__ void wave_score16_spread<4>(Spread16Args);
template __global__ void wave_score16_spread<6>(Spread16Args);
template __global__ void wave_score16_spread<8>(Spread16Args);
