// Shared by wave_score.cu (32-bit cells) and wave_score16.cu (16-bit pairs): the arguments of a pass and
// the tagged hand-off words between bands (see wave_score.cu's header for the scheme).
#pragma once
#include "common.cuh"

#define FULL_MASK 0xffffffffu

struct ScoreArgs {
    const u8 *q; const u8 *t; const int *S; int A; int m; int n; int go; int ge;
    int r0; int r1; int ncols; int nbands;   // rows r0+1 .. r1, columns 1 .. ncols
    u64 *row;                                // hand-off words, columns 0 .. ncols (band 0 reads row r0 there)
    int *ckH; int *ckF; int ck_every;        // checkpoint rows: H(i, j) and F(i, j), (ncols + 1) ints each
    int *corner;                             // H(m, n)
    int *band_best;                          // per band: score, i, j of its best end cell
    unsigned *dirs; int ld;                  // STORE: nibbles of 8 rows, word (band * 32 + lane) * ld + j
};

// Tag of the words band w writes (band -1: the top row); bit 15 set so that zeroed memory never matches.
__device__ __forceinline__ unsigned wave_tag(int w) { return ((unsigned)(w + 1) & 0x7fffu) | 0x8000u; }

// SYS: system scope, for hand-off words another GPU writes over NVLink (a band pass spread over GPUs).
template <bool SYS = false>
__device__ __forceinline__ u64 load_word(const u64 *p) {
    u64 v;
    if constexpr (SYS)
        asm volatile("ld.relaxed.sys.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
        asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// The load writes v only when `pred` holds; v's register is the destination, so no move waits on the load.
template <bool SYS = false>
__device__ __forceinline__ void load_word_if(bool pred, u64 &v, const u64 *p) {
    if constexpr (SYS)
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %1, 0; @p ld.relaxed.sys.global.b64 %0, [%2]; }"
                     : "+l"(v) : "r"((int)pred), "l"(p) : "memory");
    else
        asm volatile("{ .reg .pred p; setp.ne.b32 p, %1, 0; @p ld.relaxed.gpu.global.b64 %0, [%2]; }"
                     : "+l"(v) : "r"((int)pred), "l"(p) : "memory");
}

__device__ __forceinline__ void store_word(u64 *p, u64 v) {
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Signed byte k of w, sign-extended (prmt: selector nibbles with bit 3 set replicate the byte's sign).
template <int K>
__device__ __forceinline__ int sbyte(unsigned w) {
    int r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(w), "n"(K | ((K | 8) << 4) | ((K | 8) << 8) | ((K | 8) << 12)));
    return r;
}

// Row r's score in a byte query profile: signed byte r % 4 of p[r / 4] (r is a constant once unrolled).
__device__ __forceinline__ int profile_byte(const unsigned *p, int r) {
    switch (r & 3) {
        case 0: return sbyte<0>(p[r >> 2]);
        case 1: return sbyte<1>(p[r >> 2]);
        case 2: return sbyte<2>(p[r >> 2]);
        default: return sbyte<3>(p[r >> 2]);
    }
}

// This lane's byte query profile of its R rows: prof[(c * 32 + lane) * WORDS + w] holds S(row 4w + k, c) in
// byte k, for every letter c < A. qa[r]: row r's letter times A (its row of S), or -1 outside the query
// (score 0). The caller keeps the warp's other reads of `prof` apart from it (__syncwarp before, after).
template <int R, int WORDS>
__device__ __forceinline__ void build_byte_profile(unsigned *prof, const int (&qa)[R], const int *S, int A,
                                                   int lane) {
    for (int c = 0; c < A; ++c) {
#pragma unroll
        for (int w = 0; w < WORDS; ++w) {
            unsigned word = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int s = (4 * w + k < R && qa[4 * w + k] >= 0) ? S[qa[4 * w + k] + c] : 0;
                word |= ((unsigned)s & 0xffu) << (8 * k);
            }
            prof[(c * 32 + lane) * WORDS + w] = word;
        }
    }
}

template <bool B> struct Guard { static constexpr bool value = B; };

#ifndef LOOKAHEAD
#define LOOKAHEAD 12  // steps between loading a hand-off word (or a target code) and using it (measured best of 6-12)
#endif
static_assert(LOOKAHEAD <= 16, "two groups of hand-off words must use distinct lanes");

// The hand-off words of the group of steps from s (a multiple of LOOKAHEAD): cur takes the words loaded a
// group earlier, re-loaded until they carry band b - 1's tag `expect` (rare once the band runs far enough
// behind the one above), and the lanes of the next group load theirs into nxt. Lane (s + k) & 31 then holds
// the word of column s + k + 1. Every lane of the warp must call it.
template <bool SYS = false>
__device__ __forceinline__ void fetch_handoff(const u64 *row, int ncols, int s, int lane, unsigned expect, u64 &cur,
                                              u64 &nxt) {
    cur = nxt;
    const int k = (lane - s) & 31;
    const bool stale = k < LOOKAHEAD && s + k + 1 <= ncols && (unsigned)(cur >> 48) != expect;
    if (__any_sync(FULL_MASK, stale)) {
        if (stale)
            while ((unsigned)(cur >> 48) != expect) cur = load_word<SYS>(row + s + k + 1);
        __syncwarp();
    }
    const int k2 = (lane - s - LOOKAHEAD) & 31;
    load_word_if<SYS>(k2 < LOOKAHEAD && s + LOOKAHEAD + k2 + 1 <= ncols, nxt, row + s + LOOKAHEAD + k2 + 1);
}

#ifndef WAVE_WARPS
#define WAVE_WARPS 4  // warps (bands) per block
#endif
