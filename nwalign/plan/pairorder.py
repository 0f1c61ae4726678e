"""The pair order of a set (i < j) or of A x B, and cutting it into tasks: batches of pairs
(:func:`pair_batches`), DP cells along it (:class:`PairCells`), blocks of nearly equal cells
(:func:`blocks`, an all-pairs job's tasks) and chunks of a list of pairs (:func:`chunks`, the pair
command's tasks). Plain NumPy: every job and engine uses it.

>>> [p.tolist() for p in pair_batches(3, None, 2)]
[[[0, 1], [0, 2]], [[1, 2]]]
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

TILE = 2048  # pairs per CPU batch: bounded memory whatever the number of sequences


def pair_count(n_a: int, n_b: int | None) -> int:
    """How many pairs: i < j within a set of ``n_a`` (``n_b`` None), or every pair of n_a x n_b."""
    return n_a * (n_a - 1) // 2 if n_b is None else n_a * n_b


def row_starts(n_a: int, n_b: int | None) -> np.ndarray:
    """The position, in pair order, of each row's first pair (int64, shape (n_a + 1,); the last entry is
    the pair count)."""
    i = np.arange(n_a + 1, dtype=np.int64)
    return i * (n_a - 1) - i * (i - 1) // 2 if n_b is None else i * n_b


def pair_batches(n_a: int, n_b: int | None, size: int, span: tuple[int, int] | None = None) -> Iterator[np.ndarray]:
    """The pairs (i, j), i < j within one set or every (i, j) of A x B, in row order, as int32 arrays of
    shape (k, 2) with k <= size (never all pairs at once: 25,000 sequences are 312 million pairs).
    ``span`` (start, stop): only the pairs at those positions of that order (a block of the matrix)."""
    starts = row_starts(n_a, n_b)
    start, stop = span if span is not None else (0, int(starts[-1]))
    parts: list[np.ndarray] = []
    count = 0
    for i in range(int(np.searchsorted(starts, start, side="right")) - 1 if start > 0 else 0, n_a):
        if starts[i] >= stop:
            break
        first = (i + 1 if n_b is None else 0) + max(0, start - int(starts[i]))
        last = (n_a if n_b is None else n_b) - max(0, int(starts[i + 1]) - stop)
        js = np.arange(first, last, dtype=np.int32)
        pos = 0
        while pos < len(js):
            take = min(size - count, len(js) - pos)
            part = np.empty((take, 2), dtype=np.int32)
            part[:, 0] = i
            part[:, 1] = js[pos:pos + take]
            parts.append(part)
            count += take
            pos += take
            if count == size:
                yield np.concatenate(parts)
                parts, count = [], 0
    if parts:
        yield np.concatenate(parts)


class PairCells:
    """DP cells (m * n summed) along the pair order of a set (``lengths_b`` None: pairs i < j) or of A x B:
    :meth:`before` gives the cells of the pairs ahead of a position, so any span's cells in O(log n)."""

    def __init__(self, lengths_a, lengths_b=None):
        self.la = np.asarray(lengths_a, dtype=np.int64)
        self.within = lengths_b is None
        self.lb = self.la if self.within else np.asarray(lengths_b, dtype=np.int64)
        self.starts = row_starts(len(self.la), None if self.within else len(self.lb))
        # cells of each row: m_i times the summed lengths of its targets (j > i within one set)
        after = np.concatenate((np.cumsum(self.lb[::-1])[::-1][1:], [0])) if self.within else \
            np.full(len(self.la), self.lb.sum())
        self.rows = np.concatenate(([0], np.cumsum(self.la * after)))
        self.prefix_b = np.concatenate(([0], np.cumsum(self.lb)))

    @property
    def total(self) -> int:
        return int(self.rows[-1])

    def before(self, position: int) -> int:
        """Cells of the pairs at positions 0 .. position - 1."""
        if position >= self.starts[-1]:
            return self.total
        i = int(np.searchsorted(self.starts, position, side="right")) - 1
        first = i + 1 if self.within else 0
        end = first + position - int(self.starts[i])
        return int(self.rows[i] + self.la[i] * (self.prefix_b[end] - self.prefix_b[first]))


def blocks(lengths_a: np.ndarray, lengths_b: np.ndarray | None, count: int, quantum: int = 1,
           taper: int = 0) -> list[tuple[int, int]]:
    """Cut the pair order into at most ``count`` spans (start, stop) of nearly equal DP cells (the sum of
    m * n over their pairs), in order and covering every pair once: the tasks of an all-pairs job spread
    over workers. A span may start or end inside a row (one long row is cut too). ``quantum``: every cut
    at a multiple of it (a GPU worker's wave of pairs, so that no block ends with a nearly idle wave).
    ``taper``: the last ``taper`` blocks (at most half of them) get in thirds half, a quarter, then an
    eighth of a block's cells, so that the workers finish nearly together (the last block taken runs
    alone)."""
    along = PairCells(lengths_a, lengths_b)
    total_pairs = int(along.starts[-1])
    if total_pairs == 0:
        return []
    taper = min(max(0, taper), count // 2)
    weights = np.ones(count)
    weights[count - taper:] = [0.5 if j < taper // 3 else 0.25 if j < 2 * taper // 3 else 0.125 for j in range(taper)]
    ends = np.cumsum(weights) / weights.sum()
    cuts = [0]
    for k in range(1, count):
        want = along.total * ends[k - 1]
        i = min(int(np.searchsorted(along.rows, want, side="right")) - 1, len(along.la) - 1)
        first = i + 1 if along.within else 0
        inside = along.la[i] * (along.prefix_b[first + 1:] - along.prefix_b[first])  # row i's cells so far
        j = int(np.searchsorted(inside, want - along.rows[i], side="left"))
        cut = min(int(along.starts[i]) + j, total_pairs)
        cuts.append(min(round(cut / quantum) * quantum, total_pairs))
    cuts.append(total_pairs)
    cuts = sorted(set(cuts))
    return [(a, b) for a, b in zip(cuts, cuts[1:])]


def chunks(cells: np.ndarray, count: int) -> list[tuple[int, int]]:
    """Cut a list of pairs (their DP cells, in order) into at most ``count`` consecutive (start, stop)
    ranges of nearly equal cells; a pair is never split."""
    total = np.cumsum(np.asarray(cells, dtype=np.float64))
    if total.size == 0:
        return []
    cuts = {0, int(total.size)}
    for k in range(1, count):
        cuts.add(int(np.searchsorted(total, total[-1] * k / count, side="left")) + 1)
    cuts = sorted(c for c in cuts if 0 <= c <= total.size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def residue_spans(offsets: np.ndarray, pieces: int) -> list[tuple[int, int]]:
    """About ``pieces`` consecutive ranges of the sequences at ``offsets`` (int64, (count + 1,)), balanced
    by residues, not by sequence counts; empty ranges left out."""
    count = len(offsets) - 1
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], max(1, pieces) + 1)).tolist()
    cuts[0], cuts[-1] = 0, count
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
