"""Diagonal bands for the all-pairs identity filter: which band an alignment of identity >= MID can use,
and a bound on the score of every global alignment that leaves a band.

A band of half-width ``w`` around an m x n pair holds the cells ``min(0, d) - w <= j - i <= max(0, d) + w``
(d = n - m), the diagonals every global path must cross plus ``w`` on each side. An alignment of identity
>= MID lies in the band of half-width :func:`widest_band` (:mod:`nwalign.backends.cpu.banded`'s docstring says why).

Proving a banded score optimal without the full matrix (Ukkonen's observation, Information and Control
64, 1985, carried to affine gaps and substitution matrices): a global path that leaves the band of
half-width ``w`` reaches offset ``max(0, d) + w + 1`` or ``min(0, d) - w - 1``, so it has at least
``max(0, d) + w + 1`` deletion columns and ``max(0, -d) + w + 1`` insertion columns: at least
``G = |d| + 2w + 2`` gap columns in at least two runs (cost >= ``2 go + (G - 2) ge``; nwalign's
schemes have ``go >= ge``), and at most ``P = min(m, n) - w - 1`` residue pairs. Each pair scores at most the best score
of its query letter against any letter (and of its target letter), each query residue is used at most once,
and a path may take fewer pairs: so the pairs score at most the sum of the ``P`` largest positive letter
maxima of the query (and likewise of the target). :func:`outside_bound` is that bound; when a banded
optimum reaches it, the banded optimum is the pair's optimum.
"""

from __future__ import annotations

import math

import numpy as np


def band_limits(m: int, n: int, w: int) -> tuple[int, int]:
    """(lo, hi): the band of half-width ``w`` of an m x n pair, ``lo <= j - i <= hi``."""
    return min(0, n - m) - w, max(0, n - m) + w


def covers(m: int, n: int, w: int) -> bool:
    """True when the band of half-width ``w`` holds every cell of the m x n matrix."""
    return w >= min(m, n)


def widest_band(m: int, n: int, min_identity: float) -> int:
    """The half-width beyond which no global alignment of identity >= ``min_identity`` goes (>= 0)."""
    return max(0, math.floor(((1.0 - min_identity) * (m + n) - abs(m - n)) / 2))


class OutsideBound:
    """Upper bounds on the global score of any alignment that leaves a band, for pairs of two sets.

    Arguments:
        scoring: a :class:`nwalign.scoring.schemes.Scoring` (global mode).
        counts_a: int64 (len(a), A): letter counts of each sequence of the first set (queries).
        counts_b: the same for the second set (targets); None when the pairs are within the first.

    Source: this module's docstring.
    """

    def __init__(self, scoring, counts_a: np.ndarray, counts_b: np.ndarray | None = None):
        S = np.asarray(scoring.matrix, dtype=np.int64)
        self.go, self.ge = int(scoring.gap_open), int(scoring.gap_extend)
        self._a = self._cumulative(np.asarray(counts_a, dtype=np.int64), S.max(axis=1))
        self._b = self._a if counts_b is None else self._cumulative(np.asarray(counts_b, dtype=np.int64),
                                                                     S.max(axis=0))

    @staticmethod
    def _cumulative(counts: np.ndarray, best: np.ndarray):
        """Letters with a positive best score, best first: per sequence, the running count of such
        residues and the running sum of their best scores (int64 (N, k + 1) each, column 0 zero)."""
        order = [c for c in np.argsort(-best, kind="stable") if best[c] > 0]
        n = np.zeros((counts.shape[0], len(order) + 1), dtype=np.int64)
        s = np.zeros_like(n)
        if order:
            n[:, 1:] = np.cumsum(counts[:, order], axis=1)
            s[:, 1:] = np.cumsum(counts[:, order] * best[order], axis=1)
        return n, s, best[order] if order else np.zeros(0, dtype=np.int64)

    @staticmethod
    def _top(cum, rows: np.ndarray, P: np.ndarray) -> np.ndarray:
        """The sum of the ``P`` largest positive letter maxima of each sequence ``rows``."""
        n, s, best = cum
        n, s = n[rows], s[rows]
        full = (n <= P[:, None]).sum(axis=1) - 1  # the letters taken whole (column index into n, s)
        total = s[np.arange(rows.size), full]
        part = full < best.size  # then part of the next letter
        rest = P - n[np.arange(rows.size), full]
        nxt = np.minimum(full, max(best.size - 1, 0))
        return total + np.where(part, rest * (best[nxt] if best.size else 0), 0)

    def __call__(self, i: np.ndarray, j: np.ndarray, m: np.ndarray, n: np.ndarray, w: np.ndarray) -> np.ndarray:
        """int64 bounds for pairs (a[i], b[j]) of lengths m, n and bands of half-width w (arrays of one
        shape); the int64 minimum where the band covers the matrix (no path leaves it)."""
        i, j, m, n, w = (np.asarray(x, dtype=np.int64) for x in (i, j, m, n, w))
        P = np.minimum(m, n) - w - 1
        inside = P < 0
        P = np.maximum(P, 0)
        pairs = np.minimum(self._top(self._a, i, P), self._top(self._b, j, P))
        G = np.abs(n - m) + 2 * w + 2
        gaps = 2 * self.go + (G - 2) * self.ge
        return np.where(inside, np.iinfo(np.int64).min, pairs - gaps)


def proof_band(bound: OutsideBound, i, j, m, n, reached, w_from) -> np.ndarray:
    """Per pair, the narrowest half-width ``w >= w_from`` whose outside bound is at most ``reached`` (a score
    the pair is known to reach, such as a narrower band's optimum): the band of that half-width then holds
    an optimal alignment, since its banded optimum is >= ``reached`` >= the bound on every path that leaves
    it. At most min(m, n) (the whole matrix, which nothing leaves). int64 arrays of one shape in and out;
    the bound falls as ``w`` grows, so a vectorised bisection finds it (~15 bound evaluations)."""
    i, j, m, n, reached = (np.asarray(x, dtype=np.int64) for x in (i, j, m, n, reached))
    lo = np.minimum(np.asarray(w_from, dtype=np.int64), np.minimum(m, n))
    hi = np.minimum(m, n)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        ok = bound(i, j, m, n, mid) <= reached
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid + 1)
    return hi


def optimal_scores(bound: OutsideBound, i, j, m, n, banded_scores, w_first: int = 128,
                   floor=None) -> tuple[np.ndarray, np.ndarray]:
    """Optimal global scores of pairs from banded fills alone, in at most two passes: every pair in the
    band of half-width ``w_first``; a pair whose banded optimum S there reaches its outside bound is done
    (S is the optimum); any other is filled once more, in the narrowest band whose bound is at most S
    (:func:`proof_band`), whose banded optimum is then proved optimal. Near-identical genomes need a small
    fraction of their matrices (SARS-CoV-2 genomes: ~1/40 of the cells; the second band is up to ~10 x
    the identity filter's widest band for genomes with long runs of N). With ``floor`` (per pair: a score
    below which the caller drops the pair, such as the identity filter's), a pair whose optimum is
    proved below its floor is not filled again: its optimum is at most max(S, the outside bound), and it
    is given S, which is below the floor too (a quarter of SARS-CoV-2 pairs at 99 % had needed the
    second band, most of them to be dropped).

    Arguments:
        bound: an :class:`OutsideBound` over the sets that ``i`` and ``j`` index.
        i, j, m, n: int64 arrays of one shape: the pairs' indices and lengths.
        banded_scores: ``banded_scores(ks, w)``: the banded optima (int64) of the pairs at positions ``ks``
            (an int64 array) in bands of half-widths ``w`` (int64, same shape).
        w_first: the first band's half-width (128: the fewest cells over 160 sampled pairs of SARS-CoV-2
            genomes at 99 %, counted as the GPU kernel sweeps them, 256 + the band's width per row; 64:
            +31 %, the identity filter's widest band: +16 %; narrower first bands leave genomes whose ends
            differ by more than the band to a second band near the whole matrix).

        floor: None, or a float array of the pairs' shape (see above).

    Returns:
        (scores, w): int64 arrays: each pair's optimal global score and the half-width that proved it (a
        pair proved below its floor: its first band's optimum, which is below the floor, and ``w_first``).

    Raises:
        AssertionError: a wider band scored less than a narrower one (a broken banded fill).
    """
    i, j, m, n = (np.asarray(x, dtype=np.int64) for x in (i, j, m, n))
    w = np.minimum(np.int64(w_first), np.minimum(m, n))
    everyone = np.arange(i.size, dtype=np.int64)
    scores = np.asarray(banded_scores(everyone, w), dtype=np.int64).copy()
    outside = bound(i, j, m, n, w)
    unproved = scores < outside
    if floor is not None:  # the optimum, at most max(S, outside), is proved below the floor
        unproved &= np.maximum(scores, outside) >= np.asarray(floor, dtype=np.float64)
    todo = np.flatnonzero(unproved)
    if todo.size:
        wider = proof_band(bound, i[todo], j[todo], m[todo], n[todo], scores[todo], w[todo] + 1)
        again = np.asarray(banded_scores(todo, wider), dtype=np.int64)
        assert np.all(again >= scores[todo]), "a wider band scored less than a narrower one"
        scores[todo], w[todo] = again, wider
    return scores, w
