"""Score-only CPU kernel vectorised along anti-diagonals (the wavefront order of the GPU papers).

Cells (i, j) with i + j = d depend only on diagonals d-1 and d-2, so the loop over one anti-diagonal has
no carried dependence and LLVM turns it into AVX/NEON vector code. Numba widens integer arithmetic to
64 bits, which x86 has no vector max for, so the lanes hold float32: every value the recurrence can reach
is an integer of magnitude below 2**24 (checked by the caller through :func:`fits_float32`), where float32
arithmetic is exact. The -2**30 sentinel for minus infinity is a power of two, so it is exact too.

Match/mismatch scoring (DNA without ambiguity codes) compares residue codes in the vector loop; any other matrix
gathers substitution scores in a separate scalar loop first.
"""

import numpy as np
from numba import njit

from nwalign.backends.cpu.dp import ends_of

_EXACT = 2**24
_NEG = np.float32(-(2**30))
_ZERO = np.float32(0)


def fits_float32(m: int, n: int, max_abs: int) -> bool:
    """True when every DP value of an m x n problem stays an exact float32 integer."""
    return (m + n + 2) * max_abs < _EXACT


@njit(nogil=True, fastmath=True, inline="always")
def gotoh_scores(h_diag, s, h_left, e_left, h_up, f_up, go, ge):
    """Gotoh's cell (Gotoh 1982), scores only: H(i-1,j-1), S(q_i, t_j), H/E(i,j-1) and H/F(i-1,j) give (H, E,
    F), written as selects so that a loop over an anti-diagonal's cells vectorises. The fills with a
    traceback take the same comparisons with their tie flags (:func:`nwalign.backends.cpu.dp.gotoh_cell`)."""
    a1 = h_left - go
    a2 = e_left - ge
    e = a1 if a1 > a2 else a2
    b1 = h_up - go
    b2 = f_up - ge
    f = b1 if b1 > b2 else b2
    h = h_diag + s
    h = h if h > e else e
    h = h if h > f else f
    return h, e, f


@njit(nogil=True, fastmath=True, boundscheck=False, inline="always")
def diagonal_cells(uniform, match, mismatch, Sf, qc, tc, sub, Hd, Hl, Hu, El, Fu, Ho, Eo, Fo, go, ge, local):
    """One anti-diagonal's cells, given as equal-length views (the loops vectorise); returns the largest H
    (used in local mode)."""
    cnt = Ho.shape[0]
    if uniform:
        for k in range(cnt):
            sub[k] = match if qc[k] == tc[k] else mismatch
    else:
        for k in range(cnt):
            sub[k] = Sf[qc[k] + tc[k]]
    best = _ZERO
    if local:
        for k in range(cnt):
            h, Eo[k], Fo[k] = gotoh_scores(Hd[k], sub[k], Hl[k], El[k], Hu[k], Fu[k], go, ge)
            Ho[k] = h if h > _ZERO else _ZERO
        for k in range(cnt):  # a separate pass: folding the max into the loop above stops vectorisation
            best = best if best > Ho[k] else Ho[k]
    else:
        for k in range(cnt):
            Ho[k], Eo[k], Fo[k] = gotoh_scores(Hd[k], sub[k], Hl[k], El[k], Hu[k], Fu[k], go, ge)
    return best


@njit(cache=True, nogil=True)
def lane_codes(q, t, S):
    """What an anti-diagonal fill reads its substitution scores from: (uniform, match, mismatch, Sf, qc,
    tr). ``uniform``: one match score on the diagonal and one mismatch score elsewhere over the codes
    these sequences use (DNA without ambiguity codes uses A, C, G, T, codes 0-3, whatever the other codes
    score), so the vector loop compares codes; else it gathers ``Sf[qc[i] + tr[k]]`` (Sf the matrix as
    float32, qc the query codes times the alphabet size). ``qc`` is indexed by row 1..m, ``tr`` is t
    reversed (along a diagonal the query index ascends and the target index descends), 1..n."""
    m = q.shape[0]
    n = t.shape[0]
    A = S.shape[0]
    used = max(q.max(), t.max()) + 1
    uniform = True
    match = S[0, 0]
    mismatch = S[0, 1] if A > 1 else S[0, 0]
    for a in range(used):
        for b in range(used):
            if S[a, b] != (match if a == b else mismatch):
                uniform = False
    Sf = S.ravel().astype(np.float32)
    qc = np.zeros(m + 1, np.int32)
    for i in range(1, m + 1):
        qc[i] = q[i - 1] if uniform else q[i - 1] * A
    tr = np.zeros(n + 2, np.int32)
    for k in range(1, n + 1):
        tr[k] = t[n - k]
    return uniform, match, mismatch, Sf, qc, tr


@njit(nogil=True, inline="always")
def diagonal_buffers(m):
    """The state of an anti-diagonal fill, indexed by row (length m + 1, float32, minus infinity): H of
    three diagonals, E and F of two, and the substitution scores of one (zeros)."""
    H0 = np.full(m + 1, _NEG, np.float32)
    H1 = np.full(m + 1, _NEG, np.float32)
    H2 = np.full(m + 1, _NEG, np.float32)
    E1 = np.full(m + 1, _NEG, np.float32)
    E2 = np.full(m + 1, _NEG, np.float32)
    F1 = np.full(m + 1, _NEG, np.float32)
    F2 = np.full(m + 1, _NEG, np.float32)
    return H0, H1, H2, E1, E2, F1, F2, np.zeros(m + 1, np.float32)


@njit(cache=True, nogil=True, fastmath=True, boundscheck=False)
def score_antidiagonal(q, t, S, go, ge, mode):
    """Optimal score of q (uint8 codes, shape (m,)) against t (shape (n,)) under int32 matrix S.

    Modes 0 global, 1 local, 2 semiglobal, 3 glocal, 16-31 free ends (:func:`nwalign.ops.end_mask`); gap of
    length L costs go + (L-1) * ge. The caller must have
    checked :func:`fits_float32`. Returns the score as an int.
    """
    m = q.shape[0]
    n = t.shape[0]
    uniform, match, mismatch, Sf, qc, tr = lane_codes(q, t, S)
    H0, H1, H2, E1, E2, F1, F2, sub = diagonal_buffers(m)
    gof, gef, matchf, mismatchf = np.float32(go), np.float32(ge), np.float32(match), np.float32(mismatch)
    local = mode == 1
    ends = ends_of(mode)
    best = _ZERO if local else _NEG  # local: the empty alignment; else the free ends' cells below (or (m, n))
    H1[0] = _ZERO
    for d in range(1, m + n + 1):
        lo = max(1, d - n)
        hi = min(m, d - 1)
        if hi >= lo:
            off = n - d + 1  # cell (i, d-i) needs t[d-i-1] = tr[off + i]
            top = diagonal_cells(uniform, matchf, mismatchf, Sf, qc[lo:hi + 1], tr[off + lo:off + hi + 1],
                            sub[lo:hi + 1], H0[lo - 1:hi], H1[lo:hi + 1], H1[lo - 1:hi], E1[lo:hi + 1],
                            F1[lo - 1:hi], H2[lo:hi + 1], E2[lo:hi + 1], F2[lo:hi + 1], gof, gef, local)
            if local and top > best:
                best = top
        if d <= n:  # row 0
            H2[0] = _ZERO if local or ends & 4 else np.float32(-(go + (d - 1) * ge))  # target start free
            E2[0] = _NEG
            F2[0] = _NEG
        if d <= m:  # column 0: free with the query's start
            H2[d] = _ZERO if local or ends & 1 else np.float32(-(go + (d - 1) * ge))
            E2[d] = _NEG
            F2[d] = _NEG
        if ends & 2 and d - n >= 0 and H2[d - n] > best:  # last column: the query's end free
            best = H2[d - n]
        if ends & 8 and d - m >= 0 and H2[m] > best:  # last row: the target's end free
            best = H2[m]
        H0, H1, H2 = H1, H2, H0
        E1, E2 = E2, E1
        F1, F2 = F2, F1
    if not local and not ends & 10:  # neither end free: (m, n)
        return int(H1[m])
    return int(best)
