"""TSV rows of score-only columns written by a compiled loop (Numba, without the GIL): tens of
nanoseconds a row where Python's joins take a few hundred, so that the rows of a large all-pairs job on
several GPUs are formatted beside the GPUs' work instead of holding the interpreter for seconds."""

from __future__ import annotations

import numpy as np
from numba import njit

# Column codes: the text tables (ids, lengths as decimal text) and the score, for _rows.
QSEQID, SSEQID, SCORE, QLEN, SLEN = 0, 1, 2, 3, 4
CODES = {"qseqid": QSEQID, "sseqid": SSEQID, "score": SCORE, "qlen": QLEN, "slen": SLEN}


def tables(qseqid: list[str], sseqid: list[str], qlen: list[int], slen: list[int]) -> tuple:
    """(text uint8, offsets int64, starts int64 (4,)): the four text tables of :func:`rows` packed in one
    array (UTF-8 ids, lengths in decimal); table t's string k is ``text[offsets[starts[t] + k]:
    offsets[starts[t] + k + 1]]``."""
    encoded = [s.encode("utf-8") for s in qseqid] + [s.encode("utf-8") for s in sseqid] + \
        [str(n).encode() for n in qlen] + [str(n).encode() for n in slen]
    bounds = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=bounds[1:])
    sizes = [len(qseqid), len(sseqid), len(qlen), len(slen)]
    # each table's offsets begin where the previous table's end: its last offset is repeated
    starts = np.array([0] + list(np.cumsum(sizes)[:-1]), dtype=np.int64)
    offsets = np.concatenate([bounds[s:s + n + 1] for s, n in zip(starts, sizes)])
    starts = starts + np.arange(4, dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets, starts


@njit(cache=True, nogil=True)
def _digits(value: int) -> int:
    count = 1 if value >= 0 else 2
    value = abs(value)
    while value >= 10:
        value //= 10
        count += 1
    return count


@njit(cache=True, nogil=True)
def _span(code, i, j, offsets, starts):
    """(lo, hi) of a text column's string for the pair (i, j)."""
    k = i if code == QSEQID or code == QLEN else j
    at = starts[code if code < SCORE else code - 1] + k
    return offsets[at], offsets[at + 1]


@njit(cache=True, nogil=True)
def _rows(codes, first, second, scores, text, offsets, starts):
    """The rows as UTF-8 bytes: for each pair, the columns ``codes`` tab-separated, then a newline."""
    n = first.size
    total = 0
    for r in range(n):
        for c in codes:
            if c == SCORE:
                total += _digits(scores[r]) + 1
            else:
                lo, hi = _span(c, first[r], second[r], offsets, starts)
                total += hi - lo + 1
    out = np.empty(total, dtype=np.uint8)
    at = 0
    for r in range(n):
        for col in range(codes.size):
            c = codes[col]
            if c == SCORE:
                value = scores[r]
                width = _digits(value)
                end = at + width
                if value < 0:
                    out[at] = 45  # '-'
                    value = -value
                while True:
                    end -= 1
                    out[end] = 48 + value % 10
                    value //= 10
                    if value == 0:
                        break
                at += width
            else:
                lo, hi = _span(c, first[r], second[r], offsets, starts)
                for x in range(lo, hi):
                    out[at] = text[x]
                    at += 1
            out[at] = 9 if col < codes.size - 1 else 10  # tab, or the row's newline
            at += 1
    return out


def rows(codes: np.ndarray, pairs: np.ndarray, scores: np.ndarray, packed: tuple) -> str:
    """The TSV rows of ``pairs`` (int (k, 2)) and their ``scores`` (int64 (k,)): the columns ``codes``
    (:data:`CODES`' values, int64 array) from ``packed`` (:func:`tables`), one row per pair, each ending
    in a newline."""
    return rows_utf8(codes, pairs, scores, packed).tobytes().decode("utf-8")


def rows_utf8(codes: np.ndarray, pairs: np.ndarray, scores: np.ndarray, packed: tuple) -> np.ndarray:
    """:func:`rows` as their UTF-8 bytes (uint8 array), never decoded: what a binary stream writes without
    holding the GIL."""
    text, offsets, starts = packed
    return _rows(codes, np.ascontiguousarray(pairs[:, 0], dtype=np.int64),
                 np.ascontiguousarray(pairs[:, 1], dtype=np.int64), np.asarray(scores, dtype=np.int64), text,
                 offsets, starts)
