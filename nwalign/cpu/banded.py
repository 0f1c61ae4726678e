"""Global alignment restricted to a diagonal band, for pairs that must reach a minimum identity.

An alignment with identity >= MID has at most ``(1 - MID) * length`` non-identical columns, gap
columns included, and ``length <= m + n``. Its path starts on diagonal 0 (offset j - i = 0) and ends on
d = n - m; to reach offset max(0, d) + x or min(0, d) - x on the way it needs at least |d| + 2x gap
columns. So every such alignment lies in the band ``min(0, d) - w <= j - i <= max(0, d) + w`` with
``w_max = floor(((1 - MID)(m + n) - |d|) / 2)``. For the all-pairs identity filter (Li et al.'s multiple
pairwise NW on GPUs and clusters, section 5.4) we start with a narrow band and double it until the banded optimum equals the pair's full
optimal score (known from the score kernels), which proves an optimal path lies inside. If even
``w_max`` does not reach the optimum, every optimal alignment leaves that band and none can have
identity >= MID.

The fill uses the same cell update (:func:`nwalign.cpu.dp.gotoh_cell`) as :func:`nwalign.cpu.dp.fill_band`,
so when the unbanded engine's optimal path lies inside the band, the banded traceback returns that
same path; among co-optimal paths of which the unbanded choice leaves the band, it returns one inside.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .dp import NEG, _trace_step, gotoh_cell
from .pair import align_codes, finish_path


@njit(cache=True, nogil=True, boundscheck=False)
def fill_banded(q, t, S, go, ge, lo, hi, dirs):
    """Global H(m, n) over the cells with lo <= j - i <= hi (lo <= min(0, n-m), hi >= max(0, n-m)).

    dirs: uint8 (m, hi - lo + 1); cell (i, j) writes dirs[i - 1, j - i - lo]. Cells outside the band
    are minus infinity.
    """
    m, n = q.shape[0], t.shape[0]
    H = np.full(n + 1, NEG, dtype=np.int64)
    F = np.full(n + 1, NEG, dtype=np.int64)
    H[0] = 0
    for j in range(1, min(n, hi) + 1):
        H[j] = -(go + (j - 1) * ge)
    tt = t.astype(np.intp)
    for i in range(1, m + 1):
        row = S[q[i - 1]]
        jlo = max(1, i + lo)
        jhi = min(n, i + hi)
        diag = H[jlo - 1]
        if i + lo <= 0:  # column 0 is in the band
            h_left = np.int64(-(go + (i - 1) * ge))
            H[0] = h_left
        else:
            h_left = np.int64(NEG)
        e = np.int64(NEG)
        drow = dirs[i - 1]
        for j in range(jlo, jhi + 1):
            h_up = H[j]
            h, e, f, src, flags = gotoh_cell(diag, h_up, F[j], h_left, e, row[tt[j - 1]], go, ge)
            drow[j - i - lo] = src | flags
            diag = h_up
            H[j] = h
            F[j] = f
            h_left = h
    return H[n]


@njit(cache=True, nogil=True)
def trace_banded(dirs, lo, m, n, ops):
    """Walk back from (m, n) through banded direction bytes; returns (i, j, nops) where it reached row or
    column 0 (the columns are in reverse order in ops)."""
    i, j, state, nops = m, n, 0, 0
    while i > 0 and j > 0:
        i, j, state, nops, _ = _trace_step(dirs[i - 1, j - i - lo], i, j, state, ops, nops)
    return i, j, nops


def align_global_banded(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, gap_open: int, gap_extend: int,
                        optimum: int, w_max: int, w_start: int = 32):
    """An optimal global alignment inside the narrowest doubling band that reaches ``optimum``.

    Arguments:
        q, t: uint8 residue codes, shapes (m,) and (n,), m, n >= 1.
        matrix, gap_open, gap_extend: as for :func:`nwalign.cpu.pair.align_codes`.
        optimum: the pair's optimal global score (from a score-only kernel).
        w_max: the widest band worth trying (see the module docstring), >= 0.
        w_start: the first band half-width.

    Returns:
        align_codes' tuple (score, query_start, query_end, target_start, target_end, ops), or None when
        no optimal path lies within ``w_max`` gap columns of the diagonal (so identity < MID).
    """
    m, n = len(q), len(t)
    w = max(0, min(w_start, w_max))
    while True:
        lo, hi = min(0, n - m) - w, max(0, n - m) + w
        if lo <= -m and hi >= n:  # the band is the whole matrix
            return align_codes(q, t, matrix, gap_open, gap_extend, 0)
        dirs = np.empty((m, hi - lo + 1), dtype=np.uint8)
        score = int(fill_banded(q, t, matrix, gap_open, gap_extend, lo, hi, dirs))
        if score == optimum:
            ops = np.empty(m + n, dtype=np.uint8)
            i, j, nops = trace_banded(dirs, lo, m, n, ops)
            return finish_path(0, score, i, m, j, n, ops, nops)
        if score > optimum:
            raise AssertionError(f"banded score {score} exceeds the optimum {optimum}")
        if w >= w_max:
            return None
        w = min(max(1, 2 * w), w_max)
