"""All-vs-all alignment of a sequence set (or set A against set B), streamed in tiles of pairs.

Identity filter (after Li et al., section 5.4, re-derived for nwalign's definitions): an alignment of
``length`` columns with identity >= MID has at least MID * length identical columns, each scoring at
least ``s_id`` (the smallest diagonal score of the matrix), and every other column costs at most
``c = max(gap_open, -(smallest substitution score))``. So its score is at least
``length * (MID * s_id - (1 - MID) * c)``; in global mode ``max(m, n) <= length <= m + n``, and the
smaller of the two ends is the bound L. A pair whose optimal score is below L has no optimal alignment
with that identity, so dropping it before the traceback never loses a pair that passes. Local and
semiglobal alignments have no useful length bound, so the filter is applied in global mode only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .cpu import score_codes
from .engine import Encoded, align_pair
from .errors import NwalignError
from .results import Alignment
from .scoring import Scoring

log = logging.getLogger("nwalign")

COLUMNS = ("qseqid", "sseqid", "score", "pident", "length", "nident", "mismatch", "gaps", "qlen", "slen")
DEFAULT_COLUMNS = ("qseqid", "sseqid", "score", "pident", "length")
SCORE_COLUMNS = {"qseqid", "sseqid", "score", "qlen", "slen"}  # need no traceback
TILE = 2048  # pairs per tile: bounded memory whatever the number of sequences


def identity_bound(m: int, n: int, min_identity: float, scoring: Scoring) -> float:
    """The lower bound L on the optimal global score of an m x n pair whose alignment has identity
    >= ``min_identity`` (see the module docstring)."""
    s_id = float(np.diag(scoring.matrix).min())
    c = float(max(scoring.gap_open, -int(scoring.matrix.min())))
    per_column = min_identity * s_id - (1.0 - min_identity) * c
    return min(max(m, n) * per_column, (m + n) * per_column)


@dataclass
class PairResult:
    """One aligned pair: indices into the query and target sets, the alignment (or score only), and
    whether it passes --min-identity (always true without it)."""

    i: int
    j: int
    aln: Alignment
    passes: bool


def pair_indices(n_a: int, n_b: int | None) -> Iterator[tuple[int, int]]:
    """(i, j) with i < j within one set, or every (i, j) of set A x set B."""
    if n_b is None:
        for i in range(n_a):
            for j in range(i + 1, n_a):
                yield i, j
    else:
        for i in range(n_a):
            for j in range(n_b):
                yield i, j


def run(a: list[Encoded], b: list[Encoded] | None, scoring: Scoring, columns: tuple[str, ...],
        min_identity: float | None = None, need_identity_all: bool = False, threads: int = 1,
        stats: dict | None = None) -> Iterator[PairResult]:
    """Align every pair, yielding results in pair order, tile by tile.

    Arguments:
        a, b: encoded records; ``b`` None means all pairs i < j within ``a``.
        scoring: the scoring scheme.
        columns: requested output columns; tracebacks run only when a column needs one.
        min_identity: keep only pairs with identity >= this fraction (0-1).
        need_identity_all: align every pair even when filtered (a distance matrix needs them all).
        threads: pairs aligned at once (the Numba kernels release the GIL).
        stats: filled with ``pairs``, ``filtered`` (by the bound) and ``below`` (aligned, then below MID).

    Raises:
        NwalignError: min_identity outside [0, 1].
    """
    if min_identity is not None and not 0.0 <= min_identity <= 1.0:
        raise NwalignError(f"--min-identity {min_identity}: give a fraction between 0 and 1")
    stats = stats if stats is not None else {}
    stats.update(pairs=0, filtered=0, below=0)
    traceback = need_identity_all or min_identity is not None or not set(columns) <= SCORE_COLUMNS
    use_bound = min_identity is not None and scoring.mode == "global" and not need_identity_all
    targets = a if b is None else b
    go, ge, mode = scoring.gap_open, scoring.gap_extend, scoring.mode_code

    def one(pair):
        i, j = pair
        q, t = a[i], targets[j]
        if use_bound:
            score = score_codes(q.codes, t.codes, scoring.matrix, go, ge, mode)
            if score < identity_bound(len(q.codes), len(t.codes), min_identity, scoring):
                return i, j, None
        return i, j, align_pair(q, t, scoring, score_only=not traceback)

    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    try:
        tile: list[tuple[int, int]] = []
        for pair in pair_indices(len(a), None if b is None else len(b)):
            tile.append(pair)
            if len(tile) == TILE:
                yield from _finish(tile, one, pool, min_identity, stats)
                tile = []
        if tile:
            yield from _finish(tile, one, pool, min_identity, stats)
    finally:
        if pool:
            pool.shutdown()


def _finish(tile, one, pool, min_identity, stats) -> Iterator[PairResult]:
    results = pool.map(one, tile) if pool else map(one, tile)
    for i, j, aln in results:
        stats["pairs"] += 1
        if aln is None:  # below the score bound: cannot reach the identity
            stats["filtered"] += 1
            continue
        passes = min_identity is None or aln.identity >= min_identity
        if not passes:
            stats["below"] += 1
        yield PairResult(i, j, aln, passes)
