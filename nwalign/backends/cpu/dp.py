"""Numba kernels of the CPU engine: Gotoh's affine-gap recurrence over row bands, and traceback.

Recurrence (Gotoh 1982), query residues along rows i, target residues along columns j, penalties
positive, a gap of length L costing ``go + (L-1) * ge``::

    E[i,j] = max(H[i,j-1] - go, E[i,j-1] - ge)        gap in the query  (CIGAR D: target residue)
    F[i,j] = max(H[i-1,j] - go, F[i-1,j] - ge)        gap in the target (CIGAR I: query residue)
    H[i,j] = max(H[i-1,j-1] + S[q_i, t_j], E[i,j], F[i,j] [, 0 if local])

One routine, :func:`fill_band`, advances rows ``i0+1 .. i1`` from the H/F values of row ``i0``; the
whole matrix is one band. With ``store`` it writes one direction byte per cell, which the traceback
reads: bits 0-1 where H came from (0 diagonal, 1 E, 2 F, 3 local start), bit 2 E extended, bit 3 F
extended. Linear-space traceback keeps H/F rows at band boundaries and recomputes one band at a time
in reverse (checkpointing, as CUDAlign and Myers-Miller style methods do).
"""

import numpy as np
from numba import njit

from nwalign.ops import GLOBAL, LOCAL, NEG, OP_DEL, OP_INS, OP_MATCH, QUERY_END, QUERY_START, SEMIGLOBAL, TARGET_END, TARGET_START, end_mask  # noqa: E402, F401  (numba reads them as globals)
FROM_DIAG, FROM_E, FROM_F, FROM_START = 0, 1, 2, 3
ends_of = njit(cache=True, nogil=True)(end_mask)  # the free ends of a mode code, inside the kernels
E_EXTENDED, F_EXTENDED = 4, 8


@njit(cache=True, nogil=True)
def init_row0(H, F, mode, go, ge):
    """Row 0 of H and F (F is minus infinity: no vertical gap can end on row 0)."""
    H[0] = 0
    for j in range(1, H.shape[0]):
        H[j] = 0 if mode == LOCAL or ends_of(mode) & TARGET_START else -(go + (j - 1) * ge)
        F[j] = NEG
    F[0] = NEG


@njit(cache=True, nogil=True, inline="always")
def gotoh_cell(diag, h_up, f_up, h_left, e_left, s, go, ge):
    """One cell of the recurrence above: H(i-1,j-1), H/F(i-1,j), H/E(i,j-1) and S(q_i, t_j) give
    (H, E, F, src, flags): src where H came from (diagonal wins ties, then E), flags the extension
    bits of the direction byte. Shared by every CPU fill so they all break ties the same way."""
    f_open = h_up - go
    f_ext = f_up - ge
    f_extended = f_ext > f_open
    f = f_ext if f_extended else f_open
    e_open = h_left - go
    e_ext = e_left - ge
    e_extended = e_ext > e_open
    e = e_ext if e_extended else e_open
    h = diag + s
    src = np.uint8(FROM_DIAG)
    if e > h:
        h = e
        src = np.uint8(FROM_E)
    if f > h:
        h = f
        src = np.uint8(FROM_F)
    flags = (np.uint8(E_EXTENDED) if e_extended else np.uint8(0)) | (np.uint8(F_EXTENDED) if f_extended
                                                                     else np.uint8(0))
    return h, e, f, src, flags


@njit(cache=True, nogil=True, boundscheck=False)
def fill_band(q, t, S, go, ge, mode, i0, i1, ncols, H, F, dirs, store, best):
    """Advance H and F (int32 arrays, length >= ncols + 1) from row i0 to row i1 over columns 0..ncols.

    dirs: uint8 array of shape (i1 - i0, ncols + 1) when ``store`` is true; otherwise a scratch array
    of shape (1, >= ncols + 1) that every row overwrites (an unconditional store is faster than a branch).
    best: int64 array [score, i, j] updated in place with the best end cell for local mode (any cell),
    semiglobal mode (last column when ncols == len(t), and the last row when i1 == len(q)) and glocal
    mode (the last row: the whole query, the target's trailing residues free; its row 0 is free too).
    Strictly greater scores replace the best, so ties keep the earliest cell in row order.
    """
    n_full = t.shape[0]
    m_full = q.shape[0]
    tt = t.astype(np.intp)
    local = mode == LOCAL
    ends = ends_of(mode)
    best_score, best_i, best_j = best[0], best[1], best[2]
    for i in range(i0 + 1, i1 + 1):
        row = S[q[i - 1]]
        diag = np.int64(H[0])
        h_left = 0 if local or ends & QUERY_START else -(go + (i - 1) * ge)
        H[0] = h_left
        e = np.int64(NEG)
        # A row view with unsigned flags lets LLVM keep the store branch-free (2-3x faster).
        drow = dirs[i - i0 - 1 if store else 0]
        for j in range(1, ncols + 1):
            h_up = np.int64(H[j])
            h, e, f, src, flags = gotoh_cell(diag, h_up, np.int64(F[j]), h_left, e, row[tt[j - 1]], go, ge)
            if local:
                if h <= 0:
                    h = 0
                    src = np.uint8(FROM_START)
                elif h > best_score:
                    best_score, best_i, best_j = h, i, j
            drow[j] = src | flags
            diag = h_up
            H[j] = h
            F[j] = f
            h_left = h
        if ends & QUERY_END and ncols == n_full and H[ncols] > best_score:
            best_score, best_i, best_j = H[ncols], i, ncols
    if ends & TARGET_END and i1 == m_full:
        for j in range(ncols + 1):
            if H[j] > best_score:
                best_score, best_i, best_j = H[j], m_full, j
    best[0] = best_score
    best[1] = best_i
    best[2] = best_j


@njit(cache=True, nogil=True, inline="always")
def trace_step(d, i, j, state, ops, nops):
    """One traceback step at cell (i, j) with direction byte d. Returns (i, j, state, nops, stopped)."""
    if state == 0:
        src = d & 3
        if src == FROM_DIAG:
            ops[nops] = OP_MATCH
            return i - 1, j - 1, 0, nops + 1, False
        if src == FROM_E:
            return i, j, 1, nops, False
        if src == FROM_F:
            return i, j, 2, nops, False
        return i, j, 0, nops, True
    if state == 1:
        ops[nops] = OP_DEL
        return i, j - 1, 1 if d & E_EXTENDED else 0, nops + 1, False
    ops[nops] = OP_INS
    return i - 1, j, 2 if d & F_EXTENDED else 0, nops + 1, False


@njit(cache=True, nogil=True)
def trace_band(dirs, i0, i, j, state, ops, nops):
    """Walk back from cell (i, j) in ``state`` (0 H, 1 E, 2 F) until row i0 or column 0 or a local start.

    dirs holds rows i0+1 .. of the band. Alignment columns are appended to ``ops`` in reverse order.
    Returns (i, j, state, nops, stopped) where ``stopped`` marks a local-alignment start.
    """
    while i > i0 and j > 0:
        i, j, state, nops, stopped = trace_step(dirs[i - i0 - 1, j], i, j, state, ops, nops)
        if stopped:
            return i, j, state, nops, True
    return i, j, state, nops, False


@njit(cache=True, nogil=True)
def trace_antidiagonal_major(adm, offsets, n, i, j, state, ops, nops):
    """Traceback over direction bytes stored in anti-diagonal-major order (Kurt et al., IV.B.3).

    Cell (i, j), i, j >= 1, lives at ``offsets[i + j] + i - max(1, i + j - n)``. Same contract as
    :func:`trace_band` for the whole matrix.
    """
    while i > 0 and j > 0:
        d = i + j
        lo = 1 if d - n < 1 else d - n
        i, j, state, nops, stopped = trace_step(adm[offsets[d] + i - lo], i, j, state, ops, nops)
        if stopped:
            return i, j, state, nops, True
    return i, j, state, nops, False
