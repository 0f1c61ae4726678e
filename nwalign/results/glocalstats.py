"""E-values of glocal search scores (the query whole, the subject's ends free), fitted per query to the
database's own scores, as FASTA's glsearch36 does (Pearson 1998, "Empirical statistical estimates for
sequence similarity searches", J Mol Biol 276:71: a library's scores regressed on the log of their
lengths; glsearch36 models them as normal).

A query's glocal scores against unrelated subjects are near-global sums over the whole query, the best of
the subject's placements: their mean grows with ln n (n the subject's length) and their distribution lies
between a normal (one placement) and a Gumbel (many). The model here is the best of K independent normal
placements:

    P(S >= s | n) = 1 - Phi(m_K + s_K (s - a - b ln n) / sigma)^K

Phi the standard normal's distribution, m_K and s_K the mean and spread of the best of K standard normals.
a and b by least squares over a sample of the database (up to :data:`FIT_SAMPLE` subjects at least as long
as the query, evenly spaced in database order), refitted without the scores more than 5 sigma above the
line (the query's relatives) until none is left; sigma the residuals' spread; K (1 to 10^6) so that the
model's 99.8th percentile is the sample's. Beyond the sample's largest residual ln P falls on at the
model's rate there (an exponential, Gumbel-like tail, where no data says how fast it falls). A database with fewer than :data:`FIT_MIN` such subjects adds
shuffled copies of them (each subject's own letters, seeded), so that every fit rests on at least FIT_MIN
scores. The sample's scores are the scan's where the scan gives every score (one process), else computed
by the CPU engine: the same numbers either way. A hit's E-value is ``strands x N x P`` (N: the database's
sequences at least as long as the query, the only ones with room for a chance hit), its bit score
``-log2 P``, so that E = strands x N x 2^-bits. A query longer than every
subject has no fit: its hits get no E-value.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np

from nwalign import backends
from nwalign.results.statistics import LN2

log = logging.getLogger("nwalign")

FIT_SAMPLE = 4000  # subjects a fit uses at most
FIT_MIN = 200      # scores a fit needs at least: fewer subjects long enough add shuffled copies
TAIL_QUANTILE = 0.998  # the model's and the sample's percentile agree here
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def log_normal_tail(z: np.ndarray) -> np.ndarray:
    """ln Q(z), Q the standard normal's upper tail (float64): erfc where it does not underflow, else its
    asymptotic series -z^2/2 - ln(z sqrt(2 pi)) + ln(1 - 1/z^2 + 3/z^4).

    >>> [round(float(v), 4) for v in log_normal_tail(np.array([0.0, 1.96, 40.0]))]
    [-0.6931, -3.689, -804.6084]
    """
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    near = z < 30
    out[near] = np.log(0.5 * _ERFC(z[near] / math.sqrt(2)).astype(np.float64))
    far = z[~near]
    out[~near] = -far * far / 2 - np.log(far * math.sqrt(2 * math.pi)) + np.log1p(-1 / far ** 2 + 3 / far ** 4)
    return out


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    return 0.5 * _ERFC(-np.asarray(z, dtype=np.float64) / math.sqrt(2)).astype(np.float64)


_GRID = np.linspace(-8.0, 12.0, 4001)
_LOG_CDF: list = []  # ln Phi on _GRID, made at first use


@functools.lru_cache(maxsize=4096)
def best_of_normals(K: float) -> tuple[float, float, float]:
    """(mean, spread, 99.8th percentile (TAIL_QUANTILE)) of the best of ``K`` independent standard normals (numerically,
    on a grid; K may be fractional)."""
    if not _LOG_CDF:
        _LOG_CDF.append(np.log(np.maximum(_normal_cdf(_GRID), 1e-300)))
    log_cdf = _LOG_CDF[0]
    dens = np.diff(np.exp(K * log_cdf))
    mid = (_GRID[1:] + _GRID[:-1]) / 2
    mean = float(np.sum(mid * dens))
    spread = float(math.sqrt(max(np.sum(mid * mid * dens) - mean * mean, 1e-12)))
    quantile = float(np.interp(math.log(TAIL_QUANTILE) / K, log_cdf, _GRID))  # ln Phi(z) = ln(TAIL_QUANTILE) / K
    return mean, spread, quantile


@dataclass(frozen=True)
class GlocalFit:
    """One query's fitted parameters: the mean ``a + b ln n``, the residuals' spread ``sd``, the placements
    ``K``, ``count`` (the database's sequences at least as long as the query, times the strands searched)
    and ``method`` (said under ``-v``)."""

    a: float
    b: float
    sd: float
    K: float
    count: int
    method: str = ""
    #: the largest standardised residual the fit saw: beyond it the tail goes on exponentially
    z_tail: float = math.inf

    def log_pvalues(self, scores, subject_lengths) -> np.ndarray:
        """ln P(S >= s) of an unrelated subject of each length (float64, the shape of ``scores``): the
        model up to :attr:`z_tail`, then falling at its rate there (a Gumbel's exponential tail: no data
        says the tail falls faster, and a normal's would call a 33 %-identical protein E = 1e-171)."""
        s = np.asarray(scores, dtype=np.float64)
        n = np.maximum(np.asarray(subject_lengths, dtype=np.float64), 1.0)
        z = (s - self.a - self.b * np.log(n)) / self.sd
        if not math.isfinite(self.z_tail):
            return self._log_model(z)
        at, step = self._log_model(np.array([self.z_tail, self.z_tail + 1e-3]))
        rate = (at - step) / 1e-3
        return np.where(z <= self.z_tail, self._log_model(np.minimum(z, self.z_tail)),
                        at - rate * (z - self.z_tail))

    def _log_model(self, resid: np.ndarray) -> np.ndarray:
        """ln P of the best of K normal placements at standardised residuals ``resid``."""
        mean, spread, _ = best_of_normals(self.K)
        z = mean + spread * resid
        log_q = log_normal_tail(z)
        q = np.exp(log_q)
        with np.errstate(divide="ignore"):
            exact = np.log(-np.expm1(self.K * np.log1p(-np.minimum(q, 1 - 1e-16))))
        return np.where(self.K * q < 1e-8, math.log(self.K) + log_q, exact)

    def pvalues(self, scores, subject_lengths) -> np.ndarray:
        return np.exp(self.log_pvalues(scores, subject_lengths))

    def evalues(self, scores, query_length: int = 0, db_length: int = 0, db_count: int = 0,
                subject_lengths=None) -> np.ndarray:
        """Expected chance hits scoring at least each score in the whole search (float64): ``count`` x
        :meth:`pvalues` (the other arguments are :class:`KarlinAltschul`'s; the fit knows its query)."""
        return self.count * self.pvalues(scores, subject_lengths)

    def evalue(self, score: int, query_length: int = 0, db_length: int = 0, db_count: int = 0,
               subject_length: int = 1) -> float:
        return float(self.evalues([score], subject_lengths=[subject_length])[0])

    def bit_scores(self, scores, subject_lengths) -> np.ndarray:
        """-log2 P (float64): E = count x 2^-bits."""
        return -self.log_pvalues(scores, subject_lengths) / LN2


def fit_placements(scores: np.ndarray, lengths: np.ndarray) -> tuple[float, float, float, float, float]:
    """(a, b, sd, K, z_tail): the module's model fitted to ``scores`` of subjects of ``lengths`` (z_tail: the
    largest standardised residual of the scores kept).

    >>> rng = np.random.default_rng(3)
    >>> n = rng.integers(100, 3000, 20000)
    >>> a, b, sd, K, z_tail = fit_placements(rng.normal(-50 + 4 * np.log(n), 10), n)
    >>> round(a), round(b, 1), round(sd), K < 3, 3 < z_tail < 5
    (-49, 3.9, 10, True, True)
    """
    y = np.asarray(scores, dtype=np.float64)
    x = np.log(np.maximum(np.asarray(lengths, dtype=np.float64), 1.0))
    kept = np.ones(y.size, dtype=bool)
    for _ in range(8):
        if np.ptp(x[kept]) > 1e-9:
            b, a = np.polyfit(x[kept], y[kept], 1)
        else:  # one length: no slope
            b, a = 0.0, float(y[kept].mean())
        resid = y - a - b * x
        sd = max(float(resid[kept].std()), 1e-6)
        inside = resid < 5 * sd
        if np.array_equal(inside, kept) or np.count_nonzero(inside) < FIT_MIN // 2:
            break
        kept = inside
    target = float(np.quantile(resid[kept] / sd, TAIL_QUANTILE))
    lo, hi = 0.0, math.log(1e6)  # ln K: the standardized percentile grows with K
    for _ in range(40):
        mid = (lo + hi) / 2
        mean, spread, q = best_of_normals(math.exp(mid))
        lo, hi = (mid, hi) if (q - mean) / spread < target else (lo, mid)
    return float(a), float(b), sd, math.exp((lo + hi) / 2), float((resid[kept] / sd).max())


class GlocalStatistics:
    """A glocal search's statistics: :meth:`fitted` gives each query's (and strand's) :class:`GlocalFit`.

    Arguments:
        db: the :class:`nwalign.io.database.Database`; ``codes`` its residue codes for the scoring.
        scoring: the glocal :class:`nwalign.scoring.schemes.Scoring`.
        strands: strands searched (1 for protein).
        threads: CPU threads for the sample's scores where the scan does not give them.
    """

    def __init__(self, db, codes: np.ndarray, scoring, strands: int = 1, threads: int = 1):
        self.db, self.codes, self.scoring, self.threads = db, codes, scoring, threads
        self.strands = max(1, strands)
        self.lengths = np.diff(np.asarray(db.offsets, dtype=np.int64))
        self._said = self._said_shuffled = False
        log.info("statistics: glocal E-values fitted per query to the scores of up to %d database subjects "
                 "(the best of K normal placements, mean a + b ln n)", FIT_SAMPLE)

    def fitted(self, query, scores=None) -> GlocalFit | None:
        """``query``'s fit (an encoded query: ``.codes``; each query's hits are reported once, so nothing is
        kept); ``scores``: the scan's score of every database sequence (int, (count,)) where there is one,
        else None (the sample is scored here)."""
        q = np.asarray(query.codes)
        m = int(q.size)
        eligible = np.flatnonzero(self.lengths >= m)
        if eligible.size == 0:
            if not self._said:
                self._said = True
                log.warning("no E-values for a query of %d residues: no database subject is as long", m)
            return None
        sample = eligible[np.unique(np.linspace(0, eligible.size - 1, min(eligible.size, FIT_SAMPLE)).round()
                                    .astype(np.int64))]
        if sample.size >= FIT_MIN:
            lengths = self.lengths[sample]
            got = np.asarray(scores)[sample] if isinstance(scores, np.ndarray) and scores.size == self.lengths.size \
                else self._score(q, sample, shuffled=False)
            method = f"fitted to {sample.size} database subjects"
        else:
            rounds = -(-FIT_MIN // sample.size)
            picked = np.tile(sample, rounds)
            lengths = self.lengths[picked]
            got = self._score(q, picked, shuffled=True)
            method = f"fitted to {picked.size} shuffled copies of {sample.size} database subjects"
            if not self._said_shuffled:
                self._said_shuffled = True
                log.info("statistics: fewer than %d subjects as long as a query of %d residues: its fit %s",
                         FIT_MIN, m, method)
        # E counts the subjects a chance hit can come from: those with room for the whole query
        a, b, sd, K, z_tail = fit_placements(got, lengths)
        return GlocalFit(a, b, sd, K, int(eligible.size) * self.strands, method, z_tail)

    def _score(self, q: np.ndarray, picked: np.ndarray, shuffled: bool) -> np.ndarray:
        """Glocal scores of ``q`` against database subjects ``picked`` (shuffled: each copy's letters in a
        seeded random order) on the CPU engine."""
        offsets = np.asarray(self.db.offsets, dtype=np.int64)
        parts = [self.codes[offsets[k]:offsets[k + 1]] for k in picked.tolist()]
        if shuffled:
            rng = np.random.default_rng(len(parts) * 7919 + int(q.size))
            parts = [rng.permutation(p) for p in parts]
        sub_offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=sub_offsets[1:])
        sub_codes = np.concatenate(parts).astype(np.uint8, copy=False)
        scanner = backends.named("cpu").shard_scanner(sub_codes, sub_offsets, self.scoring, self.threads)
        return np.asarray(scanner.result(scanner.submit(q)), dtype=np.int64)
