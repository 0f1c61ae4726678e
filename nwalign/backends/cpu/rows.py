"""Gotoh's recurrence a row at a time in three sweeps that LLVM vectorises, with
:func:`nwalign.backends.cpu.dp.fill_band`'s values and direction bytes, for global and semi-global
alignment.

In a row, F and the diagonal candidate depend on the row above only: the first sweep computes them for
the whole row (the pair scores read from a target profile). E depends on the row itself, but with gap
open >= gap extend, E(j) = max(H(j-1) - open, E(j-1) - extend) equals max(H'(j-1) - open, E(j-1) -
extend) with H' = max(diagonal, F) (Farrar's observation, as in :mod:`nwalign.backends.cpu.anchored`): the
second sweep is a chain of one max and one subtraction a cell. The third sweep takes H = max(H', E) and
writes each cell's direction byte as :func:`nwalign.backends.cpu.dp.gotoh_cell` chooses it (diagonal on a
tie, then E, then F; a gap extended only when that is strictly better than opening one), from the values
of the row's cells and their left neighbours. Same values, same bytes, 3-5x the speed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nwalign.backends.cpu.dp import E_EXTENDED, F_EXTENDED, FROM_E, FROM_F
from nwalign.backends.cpu.dp import ends_of
from nwalign.ops import NEG, QUERY_END, QUERY_START, TARGET_END


def profile(S, q, t):
    """The pair scores along the target of each letter ``q`` holds: int32 (len(S), len(t) + 1), row a
    column j = S[a, t[j - 1]] (rows of letters absent from q unset). NumPy: it runs once a pair, where
    Numba would compile it on a first run."""
    letters = np.unique(np.asarray(q))
    P = np.empty((S.shape[0], len(t) + 1), dtype=np.int32)
    P[letters, 0] = 0
    P[letters, 1:] = np.asarray(S, dtype=np.int32)[letters][:, np.asarray(t, dtype=np.intp)]
    return P


@njit(cache=True, nogil=True, boundscheck=False)
def fill_rows(P, q, go, ge, mode, i0, i1, ncols, H, F, dirs, store, best):
    """:func:`nwalign.backends.cpu.dp.fill_band` (same arguments, ``P`` a :func:`profile` in place of the
    codes of the target and the matrix; ``mode`` end to end: global, semiglobal, glocal or free ends) in
    three sweeps a row."""
    n_full = P.shape[1] - 1
    m_full = q.shape[0]
    go32, ge32, neg = np.int32(go), np.int32(ge), np.int32(NEG)
    Hn = np.empty(ncols + 1, dtype=np.int32)
    Hd = np.empty(ncols + 1, dtype=np.int32)  # max(diagonal, F): H before E
    E = np.empty(ncols + 1, dtype=np.int32)
    best_score, best_i, best_j = best[0], best[1], best[2]
    ends = ends_of(mode)
    for i in range(i0 + 1, i1 + 1):
        row = P[q[i - 1]]
        drow = dirs[i - i0 - 1 if store else 0]
        h0 = np.int32(0) if ends & QUERY_START else np.int32(-(go + (i - 1) * ge))
        for j in range(1, ncols + 1):  # F and the diagonal: the row above only
            f = max(H[j] - go32, F[j] - ge32)
            F[j] = f
            Hd[j] = max(H[j - 1] + row[j], f)
        e = neg
        E[0] = neg
        hd_left = h0
        for j in range(1, ncols + 1):  # E along the row
            e = max(hd_left - go32, e - ge32)
            E[j] = e
            hd_left = Hd[j]
        Hn[0] = h0
        for j in range(1, ncols + 1):  # H
            Hn[j] = max(Hd[j], E[j])
        for j in range(1, ncols + 1 if store else 1):  # each cell's direction byte, without branches
            d = H[j - 1] + row[j]
            hd, e = Hd[j], E[j]
            is_f = np.uint8(hd != d)
            is_e = np.uint8((e > hd) | ((e == hd) & (hd != d)))
            src = is_e * np.uint8(FROM_E) + (is_f & (np.uint8(1) - is_e)) * np.uint8(FROM_F)
            e_flag = np.uint8(E[j - 1] - ge32 > Hn[j - 1] - go32) * np.uint8(E_EXTENDED)
            f_flag = np.uint8(F[j] > H[j] - go32) * np.uint8(F_EXTENDED)  # F = max(open, extended)
            drow[j] = src | e_flag | f_flag
        H[0] = h0
        for j in range(1, ncols + 1):
            H[j] = Hn[j]
        if ends & QUERY_END and ncols == n_full and H[ncols] > best_score:
            best_score, best_i, best_j = H[ncols], i, ncols
    if ends & TARGET_END and i1 == m_full:
        for j in range(ncols + 1):
            if H[j] > best_score:
                best_score, best_i, best_j = H[j], m_full, j
    best[0] = best_score
    best[1] = best_i
    best[2] = best_j
