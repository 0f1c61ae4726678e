"""Every local alignment of a pair, best first: Waterman and Eggert's non-intersecting alternatives.

Waterman, M. S. and Eggert, M. (1987) "A new algorithm for best subsequence alignments with application
to tRNA-rRNA comparisons", J. Mol. Biol. 197, 723-728; as SSEARCH's alternative alignments and LALIGN
(Huang and Miller's SIM) report them. The k-th alignment is the best local alignment that aligns no pair
of residues (i, j) aligned by the alignments before it: the Smith-Waterman recurrence of
:mod:`nwalign.backends.cpu.dp` with the diagonal step into each such cell forbidden (a gap may still
cross it). The first alignment is the plain Smith-Waterman one, with the engine's tie rules.

Each alignment costs one score pass over the whole matrix (its end cell: the first best cell in row
order, as :func:`nwalign.backends.cpu.dp.fill_band`) and a traceback over a window of columns ending
there, wide enough for any alignment of that score: an alignment with ``p`` query residues and score
``s > 0`` spans at most ``p + p * smax / min(open, extend)`` target residues (its target-only columns each
cost at least the smaller penalty, its pairs score at most ``smax``). The window's rows are filled in
bands with checkpoints when its direction bytes exceed the memory budget, as
:func:`nwalign.backends.cpu.pair.align_codes` does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nwalign.backends.cpu.dp import FROM_START, gotoh_cell, trace_step
from nwalign.backends.cpu.pair import plan_bands
from nwalign.ops import NEG, OP_DEL, OP_INS, OP_MATCH


@njit(cache=True, nogil=True, boundscheck=False)
def fill_masked(q, t, S, go, ge, i0, i1, c0, c1, H, F, dirs, store, forbid, dense, best):
    """Local (Smith-Waterman) rows ``i0+1 .. i1`` over target columns ``c0+1 .. c1`` (1-based), column
    ``c0`` the zero boundary; H and F (int32, length >= c1 - c0 + 1) hold row i0 on entry, row i1 on
    exit, indexed by ``j - c0``. ``forbid`` (int64, shape (len(q) + 1, K)): per query row, the target
    columns whose residue pair may not be aligned, ascending, padded with a value above len(t); or, with
    ``dense`` of shape (len(q) + 1, len(t) + 1) (else (1, 1)), ``dense[i, j]`` set for them. ``dirs``
    and ``store``: as :func:`nwalign.backends.cpu.dp.fill_band`; ``best`` [score, i, j]: the first
    strictly best cell in row order."""
    tt = t.astype(np.intp)
    best_score, best_i, best_j = best[0], best[1], best[2]
    ncols = c1 - c0
    use_dense = dense.shape[1] > 1
    for i in range(i0 + 1, i1 + 1):
        row = S[q[i - 1]]
        diag = np.int64(H[0])
        h_left = np.int64(0)
        H[0] = 0
        e = np.int64(NEG)
        drow = dirs[i - i0 - 1 if store else 0]
        k = 0
        while not use_dense and forbid[i, k] <= c0:
            k += 1
        banned = -1 if use_dense else forbid[i, k]
        for jj in range(1, ncols + 1):
            j = c0 + jj
            h_up = np.int64(H[jj])
            s = row[tt[j - 1]]
            d = diag
            if use_dense:
                if dense[i, j]:  # this pair is aligned by an earlier alternative
                    d = np.int64(NEG)
                    s = 0
            elif j == banned:
                d = np.int64(NEG)
                s = 0
                while forbid[i, k] == j:
                    k += 1
                banned = forbid[i, k]
            h, e, f, src, flags = gotoh_cell(d, h_up, np.int64(F[jj]), h_left, e, s, go, ge)
            if h <= 0:
                h = 0
                src = np.uint8(FROM_START)
            elif h > best_score:
                best_score, best_i, best_j = h, i, j
            drow[jj] = src | flags
            diag = h_up
            H[jj] = h
            F[jj] = f
            h_left = h
    best[0] = best_score
    best[1] = best_i
    best[2] = best_j


@njit(cache=True, nogil=True)
def trace_window(dirs, i0, c0, i, j, state, ops, nops):
    """:func:`nwalign.backends.cpu.dp.trace_band` over a window whose first column is ``c0`` (``dirs[r, j -
    c0]`` holds row i0 + 1 + r). Returns (i, j, state, nops, stopped)."""
    while i > i0 and j > c0:
        i, j, state, nops, stopped = trace_step(dirs[i - i0 - 1, j - c0], i, j, state, ops, nops)
        if stopped:
            return i, j, state, nops, True
    return i, j, state, nops, j == c0  # the boundary column is a local start (H = 0)


def forbidden_pairs(paths, m: int, n: int) -> np.ndarray:
    """The ``forbid`` array of :func:`fill_masked` for the residue pairs of ``paths`` ((score, query_start,
    query_end, target_start, target_end, ops) tuples, 0-based half-open)."""
    forbid = np.full((m + 1, len(paths) + 1), n + 2, dtype=np.int64)
    for k, path in enumerate(paths):
        rows, cols = _pairs(path)
        forbid[rows, k] = cols
    forbid.sort(axis=1)
    return forbid


def _pairs(path) -> tuple[np.ndarray, np.ndarray]:
    """The 1-based (query row, target column) of each residue pair a path aligns."""
    _, qs, _, ts, _, ops = path
    ops = np.asarray(ops)
    pair = ops == OP_MATCH
    return (qs + np.cumsum(ops != OP_DEL))[pair], (ts + np.cumsum(ops != OP_INS))[pair]


_UNUSED = np.zeros((1, 1), dtype=np.uint8)
_NO_ROWS = np.zeros((1, 1), dtype=np.int64)


class Mask:
    """The residue pairs that earlier alignments aligned: a byte per cell where the pair's matrix is
    small (up to :data:`DENSE_BYTES`: one alignment added in the time of its own length, however many
    came before), else lists per row and per column made from the paths when asked for (a long pair has
    few alignments above an E-value cut)."""

    DENSE_BYTES = 64 << 20

    def __init__(self, m: int, n: int, paths=()):
        self.m, self.n, self.paths = m, n, []
        self.dense = np.zeros((m + 1, n + 1), np.uint8) if (m + 1) * (n + 1) <= self.DENSE_BYTES else None
        for path in paths:
            self.add(path)

    def add(self, path) -> None:
        self.paths.append(path)
        if self.dense is not None:
            rows, cols = _pairs(path)
            self.dense[rows, cols] = 1

    def by_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(forbid, dense) for :func:`fill_masked`."""
        if self.dense is not None:
            return _NO_ROWS, self.dense
        return forbidden_pairs(self.paths, self.m, self.n), _UNUSED

    def by_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ptr, rows, dense) for :func:`fill_blocks`."""
        if self.dense is not None:
            return np.zeros(self.n + 2, np.int64), np.zeros(1, np.int64), self.dense
        ptr, rows = column_mask(self.paths, self.n)
        return ptr, rows, _UNUSED


def window_start(end_i: int, end_j: int, smax: int, go: int, ge: int) -> int:
    """The first target column (0-based boundary) a local alignment ending at (end_i, end_j) can reach."""
    cheapest = min(go, ge)
    if cheapest <= 0 or smax <= 0:
        return 0
    return max(0, end_j - (end_i + end_i * smax // cheapest + 1))


def best_masked(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, go: int, ge: int, mask: Mask,
                max_memory: int = 1 << 30, band_rows: int | None = None):
    """The best local alignment of ``q`` and ``t`` (uint8 codes) that aligns no pair of ``mask``, as a
    path tuple (score, query_start, query_end, target_start, target_end, ops); None when no pair scores
    above 0. ``band_rows``: force the checkpointed traceback's band height (tests).

    Raises:
        NwalignError: the traceback window cannot fit in ``max_memory`` even with checkpoints.
    """
    m, n = len(q), len(t)
    H = np.zeros(n + 1, dtype=np.int32)
    F = np.full(n + 1, NEG, dtype=np.int32)
    best = np.zeros(3, dtype=np.int64)
    forbid, dense = mask.by_rows()
    fill_masked(q, t, matrix, go, ge, 0, m, 0, n, H, F, np.empty((1, n + 1), np.uint8), False, forbid, dense, best)
    score, end_i, end_j = (int(x) for x in best)
    if score <= 0:
        return None
    return trace_masked(q, t, matrix, go, ge, mask, score, end_i, end_j, max_memory, band_rows)


def trace_masked(q, t, matrix, go: int, ge: int, mask: Mask, score: int, end_i: int, end_j: int,
                 max_memory: int = 1 << 30, band_rows: int | None = None):
    """The path tuple of the alignment of ``score`` that ends at cell (end_i, end_j) (the first best cell
    in row order of the masked matrix), traced back over the window of columns that can hold it."""
    c0 = window_start(end_i, end_j, int(matrix.max()), go, ge)
    forbid, dense = mask.by_rows()
    width = end_j - c0
    height = plan_bands(end_i, width, max_memory) if band_rows is None else max(1, band_rows)
    bounds = list(range(0, end_i, height)) + [end_i]
    H = np.zeros(width + 1, dtype=np.int32)
    F = np.full(width + 1, NEG, dtype=np.int32)
    scratch, ignored = np.empty((1, width + 1), np.uint8), np.zeros(3, dtype=np.int64)
    checkpoints = []
    for b in range(len(bounds) - 1):
        checkpoints.append((H.copy(), F.copy()))
        if len(bounds) > 2:  # one band: its direction bytes are filled below
            fill_masked(q, t, matrix, go, ge, bounds[b], bounds[b + 1], c0, end_j, H, F, scratch, False, forbid,
                        dense, ignored)
    ops = np.empty(end_i + width + 2, dtype=np.uint8)
    i, j, state, nops, stopped = end_i, end_j, 0, 0, False
    for b in range(len(bounds) - 2, -1, -1):
        top = bounds[b]
        if i <= top:
            continue
        if stopped:
            break
        Hb, Fb = checkpoints[b][0][:j - c0 + 1].copy(), checkpoints[b][1][:j - c0 + 1].copy()
        dirs = np.empty((i - top, j - c0 + 1), dtype=np.uint8)
        fill_masked(q, t, matrix, go, ge, top, i, c0, j, Hb, Fb, dirs, True, forbid, dense, ignored)
        i, j, state, nops, stopped = trace_window(dirs, top, c0, i, j, state, ops, nops)
    return score, i, end_i, j, end_j, ops[:nops][::-1].copy()


@njit(cache=True, nogil=True, boundscheck=False)
def fill_blocks(q, t, S, go, ge, b0, C, Hc, Ec, ptr, rows, dense, stH, stE, best, settled_from):
    """Column by column, the local recurrence's score over target blocks ``b0, b0 + 1, ...`` of ``C``
    columns, from the state (H and E of every query row) stored before block b0 in ``stH``/``stE``;
    each block's state is stored before it is computed and its first best cell in row order kept in
    ``best[b]`` (score, i, j). A block from ``settled_from`` on whose stored state equals the state
    reached ends the pass: every later block is what it was (the mask changed before it). ``ptr``/
    ``rows``: the forbidden query rows of each target column j (1-based), ``rows[ptr[j]:ptr[j + 1]]``
    ascending; or ``dense`` as for :func:`fill_masked`. Returns the block where the pass ended."""
    m, n = q.shape[0], t.shape[0]
    use_dense = dense.shape[1] > 1
    blocks = stH.shape[0]
    Hc[:] = stH[b0]
    Ec[:] = stE[b0]
    for b in range(b0, blocks):
        if b > b0:
            if b >= settled_from:
                same = True
                for i in range(m + 1):
                    if Hc[i] != stH[b, i] or Ec[i] != stE[b, i]:
                        same = False
                        break
                if same:
                    return b
            stH[b] = Hc
            stE[b] = Ec
        bs, bi, bj = np.int64(0), np.int64(0), np.int64(0)
        for j in range(b * C + 1, min((b + 1) * C, n) + 1):
            tj = t[j - 1]
            diag = np.int64(0)
            h_up = np.int64(0)
            f = np.int64(NEG)
            k = ptr[j] if not use_dense else 0
            banned = rows[k] if not use_dense and k < ptr[j + 1] else m + 2
            for i in range(1, m + 1):
                h_left = np.int64(Hc[i])
                e = max(h_left - go, np.int64(Ec[i]) - ge)
                f = max(h_up - go, f - ge)
                h = diag + S[q[i - 1], tj]
                if use_dense:
                    if dense[i, j]:  # aligned by an earlier alternative
                        h = np.int64(NEG)
                elif i == banned:
                    h = np.int64(NEG)
                    k += 1
                    banned = rows[k] if k < ptr[j + 1] else m + 2
                h = max(h, e, f)
                if h <= 0:
                    h = 0
                elif h > bs or (h == bs and i < bi):  # the first best cell in row order
                    bs, bi, bj = h, i, j
                diag = h_left
                Hc[i] = h
                Ec[i] = e
                h_up = h
        best[b, 0], best[b, 1], best[b, 2] = bs, bi, bj
    return blocks


def column_mask(paths, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, rows) of :func:`fill_blocks` for the residue pairs of ``paths``."""
    pairs = [_pairs(path) for path in paths]
    found = np.concatenate([np.zeros(0, np.int64)] + [rows for rows, _ in pairs])
    cols = np.concatenate([np.zeros(0, np.int64)] + [cols for _, cols in pairs])
    order = np.lexsort((found, cols))
    ptr = np.zeros(n + 2, dtype=np.int64)
    np.add.at(ptr, cols + 1, 1)
    return np.cumsum(ptr), found[order]


class MaskedMatrix:
    """A pair's local score matrix under a growing set of forbidden residue pairs, kept as the query-long
    column states at every ``C``-th target column and each block's best cell: a new alignment's mask is
    applied by recomputing from the block where it starts until the states agree with the old ones again
    (Waterman and Eggert's observation: only the cells downstream of the new mask change), not the whole
    matrix."""

    STATE_BYTES = 256 << 20  # the column states kept; the block width grows with the pair to fit

    def __init__(self, q, t, matrix, go: int, ge: int):
        self.q, self.t, self.matrix, self.go, self.ge = q, t, matrix, go, ge
        m, n = len(q), len(t)
        self.C = max(64, -(-n * (m + 1) * 8 // self.STATE_BYTES))
        blocks = max(1, -(-n // self.C))
        self.stH = np.zeros((blocks, m + 1), dtype=np.int32)
        self.stE = np.full((blocks, m + 1), NEG, dtype=np.int32)
        self.best = np.zeros((blocks, 3), dtype=np.int64)
        self.mask = Mask(m, n)
        self._fill(0, blocks)

    @property
    def paths(self) -> list:
        return self.mask.paths

    def _fill(self, b0: int, settled_from: int) -> None:
        m = len(self.q)
        ptr, rows, dense = self.mask.by_columns()
        fill_blocks(self.q, self.t, self.matrix, self.go, self.ge, b0, self.C, np.empty(m + 1, np.int32),
                    np.empty(m + 1, np.int32), ptr, rows, dense, self.stH, self.stE, self.best, settled_from)

    def end(self) -> tuple[int, int, int]:
        """(score, i, j): the best cell, the first in row order."""
        b = self.best
        order = np.lexsort((b[:, 2], b[:, 1], -b[:, 0]))
        return tuple(int(x) for x in b[order[0]])

    def forbid(self, path) -> None:
        """Forbid the residue pairs of ``path`` from now on."""
        self.mask.add(path)
        _, _, _, ts, te, _ = path
        self._fill(ts // self.C, -(-te // self.C))


def alternative_paths(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, go: int, ge: int, first: list,
                      keep, most: int, max_memory: int = 1 << 30) -> list:
    """The alignments after ``first`` (path tuples already reported, best first) in Waterman and Eggert's
    order: each the best that aligns no residue pair of those before it, while ``keep(score)`` holds and
    fewer than ``most`` paths are known in all (``first`` included). Returns the new paths, best first.

    Arguments:
        q, t: uint8 residue codes, shapes (m,) and (n,).
        matrix: int32 substitution scores (A, A); go, ge: the gap penalties (positive).
        first: path tuples (score, query_start, query_end, target_start, target_end, ops), 0-based
            half-open, ops in alignment order (0 pair, 1 query residue only, 2 target residue only).
        keep: a callable of a score: whether an alignment of that score is reported (scores only fall).
        most: the most paths in all.
    """
    if len(first) >= most:
        return []
    scores = MaskedMatrix(q, t, matrix, go, ge)
    for path in first:
        scores.forbid(path)
    found = []
    while len(scores.paths) < most:
        score, end_i, end_j = scores.end()
        if score <= 0 or not keep(score):
            break
        path = trace_masked(q, t, matrix, go, ge, scores.mask, score, end_i, end_j, max_memory)
        scores.forbid(path)
        found.append(path)
    return found
