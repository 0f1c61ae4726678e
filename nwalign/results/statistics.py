"""Karlin-Altschul statistics of local alignment scores: bit scores and E-values for every scoring.

E = K m' n' exp(-lambda S) and bit score = (lambda S - ln K) / ln 2 (Karlin and Altschul 1990; Altschul
et al. 1997 for gapped alignments), with m' and n' the query's and the database's effective lengths:
each shortened by the expected length of a chance alignment, ``l = alpha/lambda ln(K m' n') + beta``
(BLAST's length adjustment, BLAST_ComputeLengthAdjustment in blast_stat.c; Altschul et al. 2001, NAR
29:351), once per database sequence. Where the parameters come from (:func:`parameters`):

1. **published**: NCBI BLAST's tables (blast_stat.c) for BLOSUM45/50/62/80/90 and PAM30/70/250 with
   the gap costs listed there, and the reward/penalty tables of blastn (ACGT match/mismatch scores, also
   as a multiple, as BLAST divides by their greatest common divisor). NCBI writes a gap of length k as
   a + b k; nwalign's convention is open + (k-1) extend, so BLAST (a, b) is nwalign (a + b, b).
2. **estimated**: for any other scoring, lambda and K of gapped local alignment are fitted to the scores
   of seeded random sequence pairs (maximum likelihood Gumbel fit; the random letters drawn from the
   background frequencies: Robinson and Robinson's amino acids, BLAST's Robinson_prob, or equal
   nucleotides), cached on disk per scoring; H is the ungapped relative entropy (:func:`ungapped`), and
   alpha = lambda/H, beta = 0 for the length adjustment.

``ungapped`` computes the ungapped lambda, K and H of any matrix (Karlin and Altschul 1990, PNAS 87:2264;
K by the series of Karlin, Dembo and Kawabata 1990, as BLAST's BlastKarlinLHtoK).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass

import numpy as np

from nwalign import backends
from nwalign.scoring.cache import cache_dir, read_entry, write_entry
from nwalign.scoring.blast_tables import NUCLEOTIDE, NUCLEOTIDE_CODES, PROTEIN, ROBINSON

LN2 = math.log(2)


@dataclass(frozen=True)
class KarlinAltschul:
    """Statistical parameters of one scoring: lambda (per score unit), K, relative entropy H (nats per
    aligned pair), alpha and beta of the length adjustment, and ``method`` (how they were obtained).
    ``even``: BLAST's 2/-x nucleotide tables apply to even scores only (odd ones are rounded down)."""

    lam: float
    K: float
    H: float
    alpha: float = 0.0
    beta: float = 0.0
    method: str = "published"
    even: bool = False
    #: Spouge's finite-size correction (as blastp: :func:`spouge_area`): (a, b, alpha_v, beta_v, sigma,
    #: tau), or None for the length adjustment.
    spouge: tuple | None = None

    def _score(self, score: int) -> int:
        return score - (score % 2) if self.even else score

    def bit_score(self, score: int) -> float:
        """(lambda S - ln K) / ln 2 (of the score as it is: blastn rounds odd scores for the E-value only)."""
        return (self.lam * score - math.log(self.K)) / LN2

    def fitted(self, query=None, scores=None) -> "KarlinAltschul":
        """The statistics of ``query``'s hits: these (the scoring's, the same for every query; a glocal
        search's :class:`nwalign.results.glocalstats.GlocalStatistics` fits each query)."""
        return self

    def bit_scores(self, scores, subject_lengths=None) -> np.ndarray:
        """:meth:`bit_score` of many scores (float64), equal to it to the last bit (the same operations)."""
        return (self.lam * np.asarray(scores, dtype=np.int64).astype(np.float64) - math.log(self.K)) / LN2

    def length_adjustment(self, query_length: int, db_length: int, db_count: int = 1) -> int:
        """BLAST's length adjustment l: the largest integer with l <= alpha/lambda ln(K (m - l)(n - N l))
        + beta, bounded so that K (m - l)(n - N l) stays at least max(m, n) (m: query length, n: the
        database's residues, N: its sequences)."""
        m, n, count = float(query_length), float(db_length), max(1, int(db_count))
        if self.alpha <= 0 or m <= 0 or n <= 0:
            return 0
        # the bound: the smaller root of K (m - l)(n - N l) = max(m, n)
        a, b, c = count * self.K, -self.K * (m * count + n), self.K * m * n - max(m, n)
        disc = b * b - 4 * a * c
        if c <= 0 or disc < 0:
            return 0
        high = int((-b - math.sqrt(disc)) / (2 * a))

        def short_enough(ell: int) -> bool:  # l <= f(l); f falls as l grows
            space = (m - ell) * (n - count * ell)
            return ell <= self.alpha / self.lam * (math.log(self.K) + math.log(space)) + self.beta
        low = 0
        if not short_enough(0):
            return 0
        while low < high:  # the largest l in [0, high] that is short enough
            mid = (low + high + 1) // 2
            low, high = (mid, high) if short_enough(mid) else (low, mid - 1)
        return low

    def evalue(self, score: int, query_length: int, db_length: int, db_count: int = 1,
               subject_length: int | None = None) -> float:
        """Expected number of chance alignments scoring at least ``score`` between a query of
        ``query_length`` and a database of ``db_count`` sequences, ``db_length`` residues in all
        (``subject_length``: the hit's sequence, for Spouge's correction; default the whole database)."""
        if self.spouge is not None:
            n = subject_length or db_length
            area = spouge_area(self.spouge, self.lam, self._score(score), query_length, n)
            return area * self.K * math.exp(-self.lam * self._score(score)) * db_length / n
        ell = self.length_adjustment(query_length, db_length, db_count)
        m = max(query_length - ell, 1)
        n = max(db_length - max(1, db_count) * ell, 1)
        return self.K * m * n * math.exp(-self.lam * self._score(score))


    def evalues(self, scores: np.ndarray, query_length: int, db_length: int, db_count: int = 1,
                subject_lengths: np.ndarray | None = None) -> np.ndarray:
        """:meth:`evalue` of many scores at once (float64, the shape of ``scores``; ``subject_lengths``
        the same shape, or None), equal to it to the last bit: the same operations in the same order
        (``math``'s exp and erfc applied element by element), without a Python call per score."""
        s = np.asarray(scores, dtype=np.int64)
        if self.even:
            s = s - s % 2
        s = s.astype(np.float64)
        if self.spouge is None:
            ell = self.length_adjustment(query_length, db_length, db_count)
            m = max(query_length - ell, 1)
            n = max(db_length - max(1, db_count) * ell, 1)
            return self.K * m * n * _EXP(-self.lam * s).astype(np.float64)
        n = np.full(s.shape, db_length, np.float64) if subject_lengths is None else \
            np.where(np.asarray(subject_lengths) > 0, subject_lengths, db_length).astype(np.float64)
        area = spouge_areas(self.spouge, self.lam, s, float(query_length), n)
        return area * self.K * _EXP(-self.lam * s).astype(np.float64) * db_length / n


_EXP = np.frompyfunc(math.exp, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def spouge_areas(spouge: tuple, lam: float, score: np.ndarray, m: float, n: np.ndarray) -> np.ndarray:
    """:func:`spouge_area` of float64 arrays ``score`` and ``n`` (the same operations in the same order)."""
    a, b, alpha_v, beta_v, sigma, tau = spouge
    root2pi = math.sqrt(2 * math.pi)

    def side(length):
        left = length - (a * score + b)
        var = np.maximum(2 * alpha_v / lam, alpha_v * score + beta_v)
        z = left / np.sqrt(var)
        cdf = 0.5 * _ERFC(-z / math.sqrt(2)).astype(np.float64)
        return left * cdf + np.sqrt(var) * _EXP(-0.5 * z * z).astype(np.float64) / root2pi, cdf
    p1, c1 = side(m)
    p2, c2 = side(n)
    return p1 * p2 + np.maximum(2 * sigma / lam, sigma * score + tau) * c1 * c2


def published(matrix_name: str, gap_open: int, gap_extend: int) -> KarlinAltschul | None:
    """BLAST's gapped parameters for a named protein matrix and nwalign's gap costs, or None; with the
    parameters of Spouge's finite-size correction (``spouge``), so that E-values are blastp's."""
    table = PROTEIN.get(matrix_name.upper(), {})
    row = table.get((gap_open - gap_extend, gap_extend))
    if row is None:
        return None
    lam, K, H, a, beta, _, alpha_v, sigma = row
    a_un, alpha_un = table["ungapped"][3], table["ungapped"][6]
    G = gap_open  # BLAST's a + b
    spouge = (a, 2 * G * (a_un - a), alpha_v, 2 * G * (alpha_un - alpha_v), sigma, 2 * G * (alpha_un - sigma))
    return KarlinAltschul(lam, K, H, a, beta, method=f"published (BLAST's {matrix_name.upper()} table)",
                          spouge=spouge)


def spouge_area(spouge: tuple, lam: float, score: int, m: int, n: int) -> float:
    """The effective search area of a query of length ``m`` and a subject of length ``n`` for ``score``,
    by Spouge's finite-size correction (Park, Sheetlin, Ma, Madden and Spouge 2012, BMC Bioinformatics
    13:S4; BLAST_SpougeStoE in blast_stat.c): the lengths less the expected length of an alignment of
    this score, with its normal spread, for each sequence, plus their covariance."""
    a, b, alpha_v, beta_v, sigma, tau = spouge
    root2pi = math.sqrt(2 * math.pi)

    def side(length):
        left = length - (a * score + b)
        var = max(2 * alpha_v / lam, alpha_v * score + beta_v)
        z = left / math.sqrt(var)
        cdf = 0.5 * math.erfc(-z / math.sqrt(2))
        return left * cdf + math.sqrt(var) * math.exp(-0.5 * z * z) / root2pi, cdf
    p1, c1 = side(m)
    p2, c2 = side(n)
    return p1 * p2 + max(2 * sigma / lam, sigma * score + tau) * c1 * c2


def published_nucleotide(reward: int, penalty: int, gap_open: int, gap_extend: int) -> KarlinAltschul | None:
    """blastn's parameters for ACGT scores +reward/-penalty and nwalign's gap costs (also for a multiple
    d of a tabulated scoring, its gaps divisible by d: lambda / d), or None."""
    d = math.gcd(math.gcd(reward, penalty), math.gcd(gap_open, gap_extend))
    for k in sorted({1, d}, reverse=True):
        key = (reward // k, penalty // k)
        row = NUCLEOTIDE.get(key, {}).get(((gap_open - gap_extend) // k, gap_extend // k))
        if row is not None and reward % k == penalty % k == gap_open % k == gap_extend % k == 0:
            lam, K, H, alpha, beta = row
            return KarlinAltschul(lam / k, K, H, alpha, beta * k,
                                  method=f"published (blastn's +{key[0]}/-{key[1]} table)",
                                  even=key[0] == 2 and k == 1)
    return None


def background(alphabet: str) -> np.ndarray:
    """Background frequencies (float64, (A,)) over a matrix's letters: equal A, C, G, T for nucleotide
    alphabets, Robinson and Robinson's for the 20 amino acids (ambiguity letters: 0); uniform when the
    alphabet holds none of them."""
    letters = alphabet.upper()
    if set(letters) <= NUCLEOTIDE_CODES:
        freqs = np.array([1.0 if c in "ACGT" else 0.0 for c in letters])
    else:
        freqs = np.array([ROBINSON.get(c, 0.0) for c in letters])
    if freqs.sum() == 0:
        freqs = np.ones(len(letters))
    return freqs / freqs.sum()


def score_distribution(matrix: np.ndarray, freqs: np.ndarray) -> tuple[int, np.ndarray]:
    """(lowest score, probabilities of scores lowest..highest) of one aligned pair of random letters."""
    used = freqs > 0
    sub = matrix[np.ix_(used, used)].astype(np.int64)
    pair = np.outer(freqs[used], freqs[used])
    low, high = int(sub.min()), int(sub.max())
    probs = np.zeros(high - low + 1)
    np.add.at(probs, (sub - low).ravel(), pair.ravel())
    return low, probs / probs.sum()


def ungapped(matrix: np.ndarray, freqs: np.ndarray) -> KarlinAltschul:
    """Ungapped lambda, K and H of ``matrix`` (int, (A, A)) for letters drawn with ``freqs`` (Karlin and
    Altschul 1990; K from the series of Karlin, Dembo and Kawabata 1990, as BLAST's BlastKarlinLHtoK).

    Raises:
        ValueError: the expected score is not negative or no score is positive (no local statistics).
    """
    low, probs = score_distribution(matrix, freqs)
    scores = np.arange(low, low + probs.size)
    if probs @ scores >= 0 or scores[-1] <= 0:
        raise ValueError("the expected score of a random pair must be negative and some score positive")
    d = math.gcd(*[int(s) for s in scores[probs > 0]])
    lam = _solve_lambda(scores, probs)
    H = lam * float(np.sum(probs * scores * np.exp(lam * scores)))
    K = _series_K(low // d, probs[::d] if d > 1 else probs, lam * d, H)
    return KarlinAltschul(lam, K, H, lam / H, 0.0, method="ungapped, computed")


def _solve_lambda(scores: np.ndarray, probs: np.ndarray) -> float:
    """The positive root of sum p(s) exp(lambda s) = 1 (bisection: the sum is convex in lambda)."""
    def excess(lam):
        return float(np.sum(probs * np.exp(lam * scores))) - 1.0
    high = 0.5
    while excess(high) < 0:
        high *= 2
    low = 0.0
    for _ in range(200):
        mid = (low + high) / 2
        if excess(mid) < 0 or mid == low:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _series_K(low: int, probs: np.ndarray, lam: float, H: float, terms: int = 100) -> float:
    """K = lambda exp(-2 sigma) / (H (1 - exp(-lambda))), sigma = sum_k 1/k E[min(exp(lambda S_k), 1)]
    over the sums S_k of k random pair scores (scores in units of their common divisor)."""
    dist, start, sigma = np.array([1.0]), 0, 0.0
    for k in range(1, terms + 1):
        dist, start = np.convolve(dist, probs), start + low
        values = np.arange(start, start + dist.size)
        term = float(np.sum(dist[values >= 0])) + float(np.sum(dist[values < 0] * np.exp(lam * values[values < 0])))
        sigma += term / k
        if term / k < 1e-6:
            break
        dist[dist < 1e-300] = 0.0
    return lam * math.exp(-2 * sigma) / (H * (1 - math.exp(-lam)))


def parameters(scoring, estimate: bool = True) -> KarlinAltschul | None:
    """The parameters for a local-alignment ``scoring`` (:class:`nwalign.scoring.schemes.Scoring`): published
    where BLAST tabulates them, else estimated (:func:`estimated`; None with ``estimate`` False)."""
    found = published(scoring.matrix_name, scoring.gap_open, scoring.gap_extend)
    acgt = _acgt_scores(scoring)
    if found is None and acgt is not None:
        found = published_nucleotide(*acgt, scoring.gap_open, scoring.gap_extend)
    if found is None and estimate:
        found = estimated(scoring.matrix, scoring.alphabet, scoring.gap_open, scoring.gap_extend)
    return found


def statistics_for(scoring, max_evalue: float | None = None, say: bool = True) -> KarlinAltschul | None:
    """:func:`parameters` for a search or local pair, said under ``-v`` (unless ``say`` is False); None (empty
    E-value and bit score columns) only for a scoring without local statistics, which an E-value filter
    then refuses.

    Raises:
        NwalignError: ``max_evalue`` given for such a scoring.
    """
    import logging

    from nwalign.errors import NwalignError

    try:
        found = parameters(scoring)
    except ValueError as exc:
        if max_evalue is not None and max_evalue != float("inf"):  # inf: no cut at all
            raise NwalignError(f"E-value filter: {scoring.matrix_name} with gaps {scoring.gap_open}/"
                               f"{scoring.gap_extend} has no local statistics ({exc}); filter by minimum "
                               "score instead") from None
        logging.getLogger("nwalign").warning("no E-values: %s has no local statistics (%s)", scoring.matrix_name, exc)
        return None
    if say:  # (a glocal search asks only whether local statistics exist, and says its own)
        logging.getLogger("nwalign").info("statistics: %s: lambda %.4g, K %.4g, H %.3g", found.method, found.lam,
                                          found.K, found.H)
    return found


def _acgt_scores(scoring) -> tuple[int, int] | None:
    """(reward, penalty) when the scoring is one match and one mismatch score over A, C, G, T."""
    letters = scoring.alphabet.upper()
    if not set("ACGT") <= set(letters) or not set(letters) <= NUCLEOTIDE_CODES:
        return None
    idx = [letters.index(c) for c in "ACGT"]
    sub = scoring.matrix[np.ix_(idx, idx)]
    reward, penalty = int(sub[0, 0]), -int(sub[0, 1])
    same = np.where(np.eye(4, dtype=bool), reward, -penalty)
    return (reward, penalty) if reward > 0 and penalty > 0 and np.array_equal(sub, same) else None


#: The simulation behind :func:`estimated`: pairs of random sequences, each of this length.
SIMULATED_PAIRS = 1000
SIMULATED_LENGTH = 1000  # at 300, lambda came out 12 % high for BLOSUM62 11/1 (finite length); at 1000, 1 %


def estimated(matrix: np.ndarray, alphabet: str, gap_open: int, gap_extend: int) -> KarlinAltschul:
    """Gapped lambda and K fitted to the best local scores of :data:`SIMULATED_PAIRS` seeded pairs of
    random sequences (letters drawn from :func:`background`), cached on disk per scoring
    (nwalign.scoring.cache: every entry checked, made again where it fails). H is the ungapped relative entropy; alpha = lambda/H, beta = 0.

    Raises:
        ValueError: the scoring has no local statistics (see :func:`ungapped`).
    """
    freqs = background(alphabet)
    base = ungapped(matrix, freqs)
    key = hashlib.sha256(json.dumps([np.asarray(matrix).tolist(), alphabet, gap_open, gap_extend, SIMULATED_PAIRS,
                                     SIMULATED_LENGTH, 2]).encode()).hexdigest()[:24]  # 2: the method's version
    path = _cache_path(key)
    cached = read_entry(path, _valid_parameters)
    matrix = np.asarray(matrix, dtype=np.int32)
    if cached is None:
        if linear_phase(matrix, freqs, gap_open, gap_extend, key):
            cached = {"linear": True}
        else:
            lam, mu = _simulate(matrix, freqs, gap_open, gap_extend, key)
            cached = {"lambda": lam, "mu": mu}
        write_entry(path, cached)
    if cached.get("linear"):
        raise ValueError(f"with gaps {gap_open}/{gap_extend} unrelated sequences score in proportion to their "
                         "length (the linear phase); costlier gaps give local statistics")
    lam, mu = cached["lambda"], cached["mu"]
    # location mu = ln(K m' n') / lambda, with m' = n' the simulated length less its length adjustment
    K, length = math.exp(lam * mu) / SIMULATED_LENGTH ** 2, SIMULATED_LENGTH
    for _ in range(8):
        trial = KarlinAltschul(lam, K, base.H, lam / base.H, 0.0)
        effective = max(length - trial.length_adjustment(length, length), 1)
        K = math.exp(lam * mu) / effective ** 2
    return KarlinAltschul(lam, K, base.H, lam / base.H, 0.0,
                          method=f"estimated ({SIMULATED_PAIRS} random pairs of {SIMULATED_LENGTH}, Gumbel fit)")


def linear_phase(matrix, freqs, gap_open, gap_extend, key: str = "0") -> bool:
    """Whether random sequences' best local scores grow in proportion to their length (Arratia and
    Waterman 1994): from 500 to 2000 letters they then rise about four times as much as from 125 to 500,
    where in the logarithmic phase, the only one with Karlin-Altschul statistics, they rise by the same
    ln(16)/lambda."""
    score = backends.named("cpu").local_score
    rng = np.random.default_rng(int(key[:8], 16) + 1)
    codes = np.arange(len(freqs), dtype=np.uint8)
    means = [np.mean([score(rng.choice(codes, n, p=freqs), rng.choice(codes, n, p=freqs), matrix, gap_open,
                            gap_extend) for _ in range(16)]) for n in (125, 500, 2000)]
    return means[2] - means[1] > 2.5 * (means[1] - means[0])


def _simulate(matrix, freqs, gap_open, gap_extend, key: str) -> tuple[float, float]:
    """(lambda, mu): the maximum likelihood Gumbel fit of the best local scores of random pairs (about a
    billion DP cells: a few seconds on every core, once per scoring)."""
    from concurrent.futures import ThreadPoolExecutor

    score = backends.named("cpu").local_score
    rng = np.random.default_rng(int(key[:8], 16))
    letters = rng.choice(np.arange(len(freqs), dtype=np.uint8), (SIMULATED_PAIRS, 2, SIMULATED_LENGTH), p=freqs)

    def best(pair):  # Numba's kernel releases the GIL
        return score(pair[0], pair[1], matrix, gap_open, gap_extend)
    with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        scores = np.fromiter(pool.map(best, letters), dtype=np.float64, count=SIMULATED_PAIRS)
    return gumbel_fit(scores)


def gumbel_fit(x: np.ndarray) -> tuple[float, float]:
    """Maximum likelihood (lambda, mu) of a Gumbel distribution P(X <= x) = exp(-exp(-lambda (x - mu)))
    (Newton's method on the scale equation, from the moments' estimate).

    >>> rng = np.random.default_rng(1)
    >>> lam, mu = gumbel_fit(rng.gumbel(30, 1 / 0.25, 20000))
    >>> round(lam, 2), round(mu)
    (0.25, 30)
    """
    x = np.asarray(x, dtype=np.float64)
    lam = math.pi / (math.sqrt(6) * x.std())
    for _ in range(100):
        w = np.exp(-lam * (x - x.mean()))
        f = 1 / lam - x.mean() + np.sum(x * w) / np.sum(w)
        fprime = -1 / lam ** 2 - (np.sum(x * x * w) * np.sum(w) - np.sum(x * w) ** 2) / np.sum(w) ** 2
        step = f / fprime
        lam = max(lam - step, lam / 2)
        if abs(step) < 1e-10:
            break
    mu = x.mean() - math.log(np.mean(np.exp(-lam * (x - x.mean())))) / lam
    return float(lam), float(mu)


def _cache_path(key: str) -> str:
    return os.path.join(cache_dir(), f"karlin-{key}.json")


def _valid_parameters(entry: dict) -> bool:
    """A cached estimate: the linear phase, or a finite lambda > 0 and a finite location mu."""
    if entry.get("linear") is True:
        return True
    lam, mu = entry.get("lambda"), entry.get("mu")
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (lam, mu)) \
        and lam > 0
