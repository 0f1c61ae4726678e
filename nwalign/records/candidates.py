"""A query's best candidates among a database's scores: :func:`top_hits` (from one scan) and :func:`merge`
(of several shards' or chunks' lists), both ordered score descending, then database index ascending: the
order every engine and every scale-out reports in."""

from __future__ import annotations

import numpy as np

_GROUP_ROWS = 64


def merge(parts: list[tuple[np.ndarray, np.ndarray]], top: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``top`` of several lists of candidates (shards', chunks') for one query: (database indices,
    scores), score descending then index ascending."""
    idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    sc = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    order = np.lexsort((idx, -sc))[:top]
    return idx[order], sc[order]


def top_hits(scores: np.ndarray, top: int, min_score: int | None) -> np.ndarray:
    """Indices of the best ``top`` scores (int64): score descending, then database order (ties are stable).

    Only the candidates at or above a bound on the top-th best score are sorted. For a large array the
    bound comes from groups: viewed as 64 rows, each column's maximum is an element, so the top-th best of
    the column maxima is at most the top-th best score, and only the columns whose maximum reaches it can
    hold a candidate (one pass over the array instead of a partition of all of it: 0.1 ms instead of
    1.4 ms for 570,000 int64 scores on the development machine)."""
    scores = np.asarray(scores)
    n = scores.size
    if top <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if top >= n:
        cand = np.arange(n)
    elif n < _GROUP_ROWS * max(top, 64):
        kth = np.partition(scores, n - top)[n - top]
        cand = np.flatnonzero(scores >= kth)
    else:
        cols = n // _GROUP_ROWS
        body = scores[:cols * _GROUP_ROWS].reshape(_GROUP_ROWS, cols)
        maxima = body.max(axis=0)
        bound = np.partition(maxima, cols - top)[cols - top]
        hot = np.flatnonzero(maxima >= bound)
        cand = (np.arange(_GROUP_ROWS, dtype=np.int64)[:, None] * cols + hot).ravel()
        cand = cand[scores[cand] >= bound]
        tail = np.flatnonzero(scores[cols * _GROUP_ROWS:] >= bound) + cols * _GROUP_ROWS
        cand = np.concatenate((cand, tail))
    order = cand[np.lexsort((cand, -scores[cand].astype(np.int64)))]  # int64: -(-32768) fits
    if min_score is not None:
        order = order[scores[order] >= min_score]
    return order[:top]
