"""Scores of one query against many targets with SIMD on the CPU, through pyopal (Opal: Korpar, Šošić,
Blažeka and Šikić 2015, Bioinformatics 31:2913; 8-32 target sequences per SSE2/AVX2/NEON instruction,
8-bit scores escalated to 16 and 32 bits where they overflow, so scores stay exact).

nwalign's modes map onto Opal's algorithms: local -> ``sw``, global -> ``nw``, semiglobal (end gaps free
on both sequences) -> ``ov``, glocal (the query whole, the target's ends free) -> ``hw``; its gap convention is nwalign's (a gap of length L costs open + (L-1)
extend). Every score equals the Numba engine's (tests/backends/test_opal.py); that engine stays the reference and
does every traceback. Without pyopal (or for a scoring it cannot take) :func:`scorer` gives None and the
callers use the Numba engine.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.plan.pairorder import residue_spans

ALGORITHMS = {"local": "sw", "global": "nw", "semiglobal": "ov", "glocal": "hw"}
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
log = logging.getLogger("nwalign")


class OpalScorer:
    """The sequences ``codes``/``offsets`` (uint8 codes of ``scoring``, int64 (count + 1,) offsets) held as
    an Opal database; :meth:`scores` gives a query's optimal scores against all of them."""

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, scoring):
        import pyopal
        import scoring_matrices

        # Opal's alphabets take letters only ('*', a stop, ended in a ValueError): each code is given a
        # letter of its own, whatever the scoring calls it.
        if len(scoring.alphabet) > len(_LETTERS):
            raise ValueError(f"{len(scoring.alphabet)} letters, more than Opal's alphabets hold")
        alphabet = _LETTERS[:len(scoring.alphabet)]
        self.letters = np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)
        matrix = scoring_matrices.ScoringMatrix(np.asarray(scoring.matrix).tolist(), alphabet=alphabet)
        self.aligner = pyopal.Aligner(matrix, gap_open=int(scoring.gap_open), gap_extend=int(scoring.gap_extend))
        text = self.letters[np.asarray(codes)].tobytes()
        bounds = np.asarray(offsets, dtype=np.int64).tolist()
        self.database = pyopal.Database([text[a:b] for a, b in zip(bounds[:-1], bounds[1:])],
                                        alphabet=pyopal.Alphabet(alphabet))
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.algorithm = ALGORITHMS[scoring.mode]

    def scores_of(self, query: np.ndarray, start: int, end: int) -> np.ndarray:
        """Optimal scores of query codes ``query`` against sequences ``start``..``end - 1`` (int64), in
        this thread."""
        text = self.letters[np.asarray(query)].tobytes()
        found = self.aligner.align(text, self.database, algorithm=self.algorithm, start=start, end=end)
        out = np.fromiter((r.score for r in found), dtype=np.int64, count=end - start)
        if self.algorithm == "ov":
            np.maximum(out, 0, out=out)
        return out

    def scores(self, query: np.ndarray, threads: int = 1) -> np.ndarray:
        """Optimal scores of query codes ``query`` against every sequence (int64, (count,)), ``threads``
        threads over ranges balanced by residues (Opal releases the GIL)."""
        spans = residue_spans(self.offsets, threads * 4)
        if threads <= 1 or len(spans) == 1:
            parts = [self.scores_of(query, *span) for span in spans]
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                parts = list(pool.map(lambda span: self.scores_of(query, *span), spans))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


_LAST: list = []  # (codes, offsets, scoring, scorer): the database of the last scan, held while in use


def scorer(codes: np.ndarray, offsets: np.ndarray, scoring) -> OpalScorer | None:
    """An :class:`OpalScorer` for these sequences and scoring (the last one made is kept: a search scans
    every query against the same database), or None without pyopal or for a scoring it cannot take."""
    if _LAST and _LAST[0][0] is codes and _LAST[0][1] is offsets and _LAST[0][2] is scoring:
        return _LAST[0][3]
    try:
        made = OpalScorer(codes, offsets, scoring)
    except ImportError:
        return None
    except (ValueError, RuntimeError, KeyError) as exc:  # no SIMD backend, or a matrix Opal refuses
        log.info("cpu: Opal cannot take this scoring (%s); the Numba engine scores", exc)
        return None
    if not _LAST:
        import pyopal

        log.info("cpu: scores by Opal's SIMD kernels (pyopal %s)", pyopal.__version__)
    _LAST[:] = [(codes, offsets, scoring, made)]
    return made
