"""The CPU engine's database scan: one query's optimal local scores against every database sequence
(the GPU's counterpart: the ``scan`` kernel, :class:`nwalign.backends.cuda.search.ScanSearcher`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.plan.pairorder import residue_spans


def cpu_scan(q: np.ndarray, codes: np.ndarray, offsets: np.ndarray, scoring, threads: int = 1) -> np.ndarray:
    """Optimal local scores of query codes ``q`` against every database sequence on the CPU (int64,
    shape (count,)), ``threads`` threads over chunks balanced by residues: Opal's SIMD kernels where
    pyopal is installed (:mod:`nwalign.backends.cpu.opal`), else the Numba engine (the GPU's counterpart is the
    ``scan`` kernel, :class:`nwalign.backends.cuda.search.ScanSearcher`)."""
    from nwalign.backends.cpu.opal import scorer

    fast = scorer(codes, offsets, scoring)
    if fast is not None:
        return fast.scores(q, threads)
    from nwalign.backends.cpu.pair import score_codes  # Numba loads at the first scan, not at import

    count = len(offsets) - 1
    out = np.empty(count, dtype=np.int64)
    go, ge, mode = scoring.gap_open, scoring.gap_extend, scoring.mode_code

    def chunk(lo, hi):
        for k in range(lo, hi):
            out[k] = score_codes(q, codes[offsets[k]:offsets[k + 1]], scoring.matrix, go, ge, mode)

    spans = residue_spans(offsets, threads * 4)
    if threads <= 1:
        for a, b in spans:
            chunk(a, b)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda s: chunk(*s), spans))
    return out



class CpuScanner:
    """:func:`cpu_scan` as a :class:`nwalign.backends.roles.Scanner`: one query at a time, its scores
    computed at :meth:`submit` by ``threads`` threads.

    >>> from nwalign import make_scoring
    >>> s = make_scoring("protein", "local")
    >>> codes = s.encode_str("MKTAYIAKQRGGGGS")
    >>> scanner = CpuScanner(codes, np.array([0, 10, 15]), s)
    >>> scanner.result(scanner.submit(s.encode_str("KTAYIAK"))).tolist()
    [34, 1]
    """

    slots, chunked, asynchronous = 1, False, False

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, scoring, threads: int = 1):
        self.codes, self.offsets, self.scoring, self.threads = codes, offsets, scoring, threads

    def submit(self, query) -> np.ndarray:
        """The scores of ``query`` (uint8 codes, or an encoded record): int64 (count,)."""
        return cpu_scan(getattr(query, "codes", query), self.codes, self.offsets, self.scoring, self.threads)

    @staticmethod
    def result(scores: np.ndarray) -> np.ndarray:
        return scores

    def describe(self, m: int = 0) -> str:
        return f"the CPU engine, {self.threads} threads"

    @staticmethod
    def timing() -> str:
        return ""
