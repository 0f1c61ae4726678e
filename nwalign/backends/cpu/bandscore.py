"""Optimal global scores inside a diagonal band, without direction bytes: the all-pairs scores proved
optimal by :mod:`nwalign.plan.bands` (first bands of half-width 128, proof bands of a few hundred to a few
thousand) on the CPU engine.

The values are :func:`nwalign.backends.cpu.banded.fill_banded`'s (Gotoh's recurrence, the cells with
``lo <= j - i <= hi``, minus infinity outside); two ways to fill them:

- :func:`score_band_rows`: a row at a time in three sweeps, as :mod:`nwalign.backends.cpu.rows` and
  :func:`nwalign.backends.cpu.anchored.end_rows` fill whole rows (Farrar's observation: with gap open >=
  gap extend, E can follow the rest of the row), int32, the pair scores read from a target profile. A
  row's overhead is a few loop set-ups, so narrow bands run near the sweeps' speed.
- :func:`score_band_diagonals`: along anti-diagonals in float32 lanes, as
  :func:`nwalign.backends.cpu.banded.fill_banded_antidiagonal` (exact while
  :func:`nwalign.backends.cpu.antidiagonal.fits_float32` holds), without its direction bytes; each
  anti-diagonal costs a dozen array views, so it pays on wide bands.

:func:`band_score` takes the faster for the band's width (measured on SARS-CoV-2 genome pairs).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nwalign.backends.cpu.antidiagonal import diagonal_buffers, diagonal_cells, fits_float32, lane_codes
from nwalign.backends.cpu.banded import band_borders, banded_score
from nwalign.plan.bands import band_limits
from nwalign.backends.cpu.rows import profile
from nwalign.ops import NEG



@njit(nogil=True, boundscheck=False, inline="always")
def _sweep(up, diag, F, pair, out, go, ge, cnt):
    """A row's first sweep over equal-length views: F, and H' = max(diagonal, F) (vectorises)."""
    for k in range(cnt):
        f = max(up[k] - go, F[k] - ge)
        F[k] = f
        out[k] = max(diag[k] + pair[k], f)


@njit(cache=True, nogil=True, boundscheck=False)
def score_band_rows(P, q, go, ge, lo, hi, n):
    """H(m, n) of the band ``lo <= j - i <= hi`` (lo <= min(0, n - m), hi >= max(0, n - m)) of ``q``
    (uint8 codes) against the target whose profile is ``P`` (:func:`nwalign.backends.cpu.rows.profile`,
    int32 (A, n + 1)), as an int64. Each row: H' = max(diagonal, F) and F over the row's band from the row
    above, then E along the row from H', then H = max(H', E); cells never written hold minus infinity."""
    m = q.shape[0]
    go32, ge32, neg = np.int32(go), np.int32(ge), np.int32(NEG)
    Ha = np.full(n + 2, neg, np.int32)
    Hb = np.full(n + 2, neg, np.int32)
    F = np.full(n + 2, neg, np.int32)
    Ha[0] = 0
    for j in range(1, min(n, hi) + 1):
        Ha[j] = -(go32 + np.int32(j - 1) * ge32)
    for i in range(1, m + 1):
        Hp, Hn = (Ha, Hb) if i % 2 else (Hb, Ha)
        row = P[q[i - 1]]
        jlo, jhi = max(1, i + lo), min(n, i + hi)
        border = -(go32 + np.int32(i - 1) * ge32) if i + lo <= 0 else neg  # H(i, 0) where the band holds it
        Hn[0] = border
        cnt = jhi - jlo + 1
        _sweep(Hp[jlo:jhi + 1], Hp[jlo - 1:jhi], F[jlo:jhi + 1], row[jlo:jhi + 1], Hn[jlo:jhi + 1], go32, ge32, cnt)
        e, h_left = neg, border if jlo == 1 else neg
        for j in range(jlo, jhi + 1):
            hp = Hn[j]
            e = max(h_left - go32, e - ge32)
            Hn[j] = max(hp, e)
            h_left = hp
        if jlo > 1:
            Hn[jlo - 1] = neg  # left of the band: the next row's diagonal of its first cell reads it
    return np.int64(Hb[n]) if m % 2 else np.int64(Ha[n])


@njit(cache=True, nogil=True, fastmath=True, boundscheck=False)
def score_band_diagonals(q, t, S, go, ge, lo, hi):
    """H(m, n) of the band ``lo <= j - i <= hi`` along anti-diagonals in float32 (the caller checks
    :func:`nwalign.backends.cpu.antidiagonal.fits_float32`), as an int64. Three diagonals of H (two of E
    and F) are kept, indexed by row, minus infinity just outside each diagonal's band cells."""
    m = q.shape[0]
    n = t.shape[0]
    uniform, match, mismatch, Sf, qc, tr = lane_codes(q, t, S)
    H0, H1, H2, E1, E2, F1, F2, sub = diagonal_buffers(m)
    gof, gef, matchf, mismatchf = np.float32(go), np.float32(ge), np.float32(match), np.float32(mismatch)
    H1[0] = np.float32(0)  # diagonal 0: the origin
    a, b = 1, 0
    for d in range(1, m + n + 1):
        if d >= 2:  # rows of diagonal d in the band: lo <= d - 2i <= hi
            a = max(1, d - n, -((hi - d) // 2))
            b = min(m, d - 1, (d - lo) // 2)
        if b >= a:
            off = n - d + 1  # cell (i, d - i) needs t[d - i - 1] = tr[off + i]
            diagonal_cells(uniform, matchf, mismatchf, Sf, qc[a:b + 1], tr[off + a:off + b + 1], sub[a:b + 1],
                           H0[a - 1:b], H1[a:b + 1], H1[a - 1:b], E1[a:b + 1], F1[a - 1:b],
                           H2[a:b + 1], E2[a:b + 1], F2[a:b + 1], gof, gef, False)
        band_borders(H2, E2, F2, a, b, d, m, n, lo, hi, go, ge)
        H0, H1, H2 = H1, H2, H0
        E1, E2 = E2, E1
        F1, F2 = F2, F1
    return np.int64(H1[m])


INT32_EXACT = 1 << 29  # |values| below this: int32 sums with minus infinity (-2**30) cannot wrap
ROWS_UP_TO = 512  # band widths (hi - lo + 1) up to which the row sweeps are the faster fill


def band_score(q: np.ndarray, t: np.ndarray, S: np.ndarray, go: int, ge: int, lo: int, hi: int) -> int:
    """The optimal global score of ``q`` and ``t`` (uint8 codes) inside the band ``lo <= j - i <= hi`` (int32
    matrix ``S``, gap open ``go`` >= extend ``ge``): the row sweeps for narrow bands or where float32 is
    not exact, else the anti-diagonals."""
    largest = int(max(np.abs(S).max(), go, ge))
    if fits_float32(len(q), len(t), largest) and hi - lo + 1 > ROWS_UP_TO:
        return int(score_band_diagonals(q, t, S, go, ge, lo, hi))
    if (len(q) + len(t) + 2) * largest < INT32_EXACT:
        return int(score_band_rows(profile(S, q, t), q, go, ge, lo, hi, len(t)))
    return banded_score(q, t, S, go, ge, lo, hi)  # 64-bit integers


class BandedScorer:
    """The CPU engine's counterpart of the GPU's banded aligner's scores
    (:meth:`nwalign.backends.cuda.banded.BandedAligner.scores`): each pair's optimal global score inside a
    band, by :func:`band_score` (no direction bytes: row sweeps for narrow bands, float32 anti-diagonals
    for wide ones; 1.4x :mod:`nwalign.backends.cpu.banded`'s fills on SARS-CoV-2 genome pairs), ``threads``
    pairs at once (the fills release the GIL). ``cells``: the band cells filled so far;
    ``kernel_seconds``: the time spent in fills, summed over threads."""

    def __init__(self, scoring, threads: int = 1):
        self.scoring, self.threads = scoring, max(1, threads)
        self.cells, self.kernel_seconds = 0, 0.0

    def score(self, q: np.ndarray, t: np.ndarray, w: int) -> int:
        """One pair's optimal score in the band of half-width ``w``."""
        import time

        s = self.scoring
        lo, hi = band_limits(len(q), len(t), w)
        clock = time.perf_counter()
        found = band_score(q, t, s.matrix, s.gap_open, s.gap_extend, lo, hi)
        self.kernel_seconds += time.perf_counter() - clock
        self.cells += len(q) * (hi - lo + 1)
        return found

    def scores(self, pairs: list[tuple[np.ndarray, np.ndarray]], w: list[int]) -> np.ndarray:
        """The optimal global score of each pair inside its band of half-width ``w[k]`` (int64 (len(pairs),))."""
        from concurrent.futures import ThreadPoolExecutor

        if self.threads == 1 or len(pairs) < 2:
            return np.array([self.score(q, t, wk) for (q, t), wk in zip(pairs, w)], dtype=np.int64)
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            return np.array(list(pool.map(lambda k: self.score(*pairs[k], w[k]), range(len(pairs)))), dtype=np.int64)
