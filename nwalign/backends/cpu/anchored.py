"""A local alignment from its end cell: a score pass finds the end, a pass backwards from it the box that
holds the alignment, and the traceback fills only that box.

1. **End.** :func:`end_cell`: the Smith-Waterman recurrence of :mod:`nwalign.backends.cpu.dp` without
   direction bytes, the first strictly best cell in row order (the engine's end cell), with residue pairs
   optionally forbidden (Waterman and Eggert's alternatives, :mod:`nwalign.backends.cpu.alternatives`).
2. **Start box.** :func:`start_box`: Gotoh's recurrence run backwards from the end cell, anchored there,
   over the reversed prefixes. Every prefix of the engine's alignment scores >= 0 (its H values) and at
   most the best score, so every suffix of it scores >= 0: a point whose best suffix is negative holds no
   part of it and is dropped (its scores set to minus infinity), and the pass stops at the first row with
   no point left. The smallest row and column left bound the alignment's start. This is the reverse scan
   that SSW and parasail's traceback-free modes use to find a start, here with pruning so that its work
   follows the alignment, not the matrix.
3. **Traceback in the box.** The direction bytes of rows ``r0+1 .. end_i`` and columns ``c0+1 .. end_j``
   with a zero (local start) boundary: every value in the box is at most the whole matrix's, and the
   engine's path lies inside the box with the values it has in the whole matrix, so each step chooses as
   in the whole matrix (a predecessor preferred in the box and at the maximum would be preferred there
   too): the same alignment, tie rules included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from nwalign.backends.cpu.dp import FROM_START, gotoh_cell, trace_step
from nwalign.backends.cpu.budget import plan_bands
from nwalign.backends.cpu.rows import profile
from nwalign.ops import NEG, OP_DEL, OP_INS, OP_MATCH


@njit(cache=True, nogil=True, boundscheck=False)
def end_rows(P, q, go, ge, forbid, i0, i1, Ha, Hb, F, best, row_max, col_max):
    """Rows ``i0+1 .. i1`` of the local score matrix (:func:`end_cell`), from row i0's H (in ``Ha`` when
    i0 is even, else ``Hb``) and F; ``best``, ``row_max`` and ``col_max`` updated (their row-0 values
    zero)."""
    n = P.shape[1] - 1
    go32, ge32, zero = np.int32(go), np.int32(ge), np.int32(0)
    bs = np.int32(best[0])
    for i in range(i0 + 1, i1 + 1):
        row = P[q[i - 1]]
        Hp, Hn = (Ha, Hb) if i % 2 else (Hb, Ha)
        Hn[0] = 0
        for j in range(1, n + 1):
            f = max(Hp[j] - go32, F[j] - ge32)
            F[j] = f
            Hn[j] = max(max(Hp[j - 1] + row[j], f), zero)
        k = forbid[i]
        while forbid[k] <= n:  # a pair aligned by an earlier alternative: no diagonal step
            Hn[forbid[k]] = max(F[forbid[k]], zero)
            k += 1
        e, rb, h_left = np.int32(NEG), zero, zero
        for j in range(1, n + 1):
            hp = Hn[j]
            e = max(h_left - go32, e - ge32)
            h = max(hp, e)
            Hn[j] = h
            rb = max(rb, h)
            col_max[j] = max(col_max[j], h)
            h_left = hp
        row_max[i] = rb
        if rb > bs:  # the first cell of the row's best: the first best in row order
            for j in range(1, n + 1):
                if Hn[j] == rb:
                    bs = rb
                    best[0], best[1], best[2] = rb, i, j
                    break


@dataclass(frozen=True)
class LocalEnd:
    """A local score matrix's best score and its end cell (1-based; zeros when nothing scores above 0),
    the first strictly best in row order, and each row's and column's best H (int32, len(q) + 1 and
    len(t) + 1)."""

    score: int
    i: int
    j: int
    row_max: np.ndarray
    col_max: np.ndarray


def end_cell(q, t, S, go: int, ge: int, forbid, progress=None) -> LocalEnd:
    """The :class:`LocalEnd` of ``q`` and ``t`` (uint8 codes). ``forbid``: per query row i, the target
    columns j whose pair (i, j) may not be aligned (:meth:`Barred.by_row`). ``progress(fraction)``, when given, is called as rows
    complete.

    Each row in three sweeps (Farrar's observation that E can be computed after the rest of H): H' =
    max(diagonal, F, 0) and F for the whole row from the row above (vectorised, the pair scores read from
    a target profile), then E along the row from H' (with gap open >= gap extend, H' - open gives E what
    H - open would) and H = max(H', E): 4-5x the speed of the cell-by-cell recurrence, the same values.
    """
    m, n = len(q), len(t)
    P = profile(S, q, t)
    Ha, Hb = np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int32)
    F = np.full(n + 1, NEG, np.int32)
    best, row_max, col_max = np.zeros(3, np.int64), np.zeros(m + 1, np.int32), np.zeros(n + 1, np.int32)
    step = m if progress is None or m * n < 1 << 20 else max(1, -(-m // 64))  # a call per row chunk: long pairs
    for i0 in range(0, m, step):
        end_rows(P, q, go, ge, forbid, i0, min(m, i0 + step), Ha, Hb, F, best, row_max, col_max)
        if progress is not None:
            progress(min(m, i0 + step) / m)
    return LocalEnd(int(best[0]), int(best[1]), int(best[2]), row_max, col_max)


@njit(cache=True, nogil=True, boundscheck=False)
def start_box(q, t, S, go, ge, forbid_rev, end_i, end_j, score, row_max, col_max, cell_lo, cell_hi):
    """(r0, c0): the smallest query row and target column (0-based boundaries) at which a local alignment
    of ``score`` ending with cell (end_i, end_j) can start (see the module). A point (i, j) of it has a
    prefix scoring at most H(i, j) <= min(row_max[i], col_max[j]) (:func:`end_cell`'s), so its suffix
    scores at least ``score`` less that: a point whose best suffix is lower is dropped. ``forbid_rev``:
    :func:`end_cell`'s ``forbid`` in reversed coordinates (:meth:`Barred.reversed`). ``cell_lo`` and
    ``cell_hi`` (int64, len(q) + 1): set for each row i of the box to the first and last target column
    of its points kept (the alignment's cells of that row lie between them)."""
    H = np.full(end_j + 1, NEG, dtype=np.int32)
    F = np.full(end_j + 1, NEG, dtype=np.int32)
    H[0] = 0
    slack = np.int64(go - ge)
    lo, hi, deepest_a, widest_b = 0, 0, 0, 0
    cell_lo[end_i], cell_hi[end_i] = end_j, end_j  # the end cell: reached by a residue pair
    for a in range(1, end_i + 1):
        row = S[q[end_i - a]]
        least_row = score - np.int64(row_max[end_i - a])
        diag = np.int64(H[lo - 1]) if lo > 0 else np.int64(NEG)
        h_left = np.int64(NEG)
        e = np.int64(NEG)
        k = forbid_rev[a]
        banned = forbid_rev[k]
        while banned < lo:
            k += 1
            banned = forbid_rev[k]
        new_lo, new_hi = -1, -1
        b = lo
        while b <= end_j:
            h_up = np.int64(H[b])
            f = max(h_up - go, np.int64(F[b]) - ge)
            e = max(h_left - go, e - ge)
            d = np.int64(NEG)
            if b > 0:
                d = diag + row[t[end_j - b]]
                if b == banned:
                    d = np.int64(NEG)
                    while forbid_rev[k] == b:
                        k += 1
                    banned = forbid_rev[k]
            # the least suffix of the alignment through this point: a gap running through it is charged
            # its opening on both sides, once too often by (open - extend)
            least = max(least_row, score - np.int64(col_max[end_j - b]))
            if d < least:
                d = np.int64(NEG)
            if e < least - slack:
                e = np.int64(NEG)
            if f < least - slack:
                f = np.int64(NEG)
            h = max(d, e, f)
            if h > NEG:
                if new_lo < 0:
                    new_lo = b
                new_hi = b
            diag = h_up
            H[b] = h
            F[b] = f
            h_left = h
            if b > hi and h == NEG:  # right of the row above's points only a gap along this row reaches
                break
            b += 1
        if new_lo < 0:
            break
        lo, hi = new_lo, new_hi
        cell_lo[end_i - a], cell_hi[end_i - a] = max(1, end_j - hi), end_j - lo
        deepest_a = a
        if hi > widest_b:
            widest_b = hi
    return end_i - deepest_a, end_j - widest_b


def path_pairs(path) -> tuple[np.ndarray, np.ndarray]:
    """The 1-based (query row, target column) of each residue pair a path tuple (score, query_start,
    query_end, target_start, target_end, ops) aligns."""
    _, qs, _, ts, _, ops = path
    ops = np.asarray(ops)
    pair = ops == OP_MATCH
    return (qs + np.cumsum(ops != OP_DEL))[pair], (ts + np.cumsum(ops != OP_INS))[pair]


def _rows_of(rows: np.ndarray, cols: np.ndarray, m: int, pad: int) -> np.ndarray:
    """Each row's columns (rows 0..m), ascending, as one int64 array: entry i (i <= m) is where row i's
    list starts in the array, and each list ends with ``pad`` (above any column)."""
    counts = np.bincount(rows, minlength=m + 1)
    sizes = counts + 1
    starts = (m + 1) + np.cumsum(sizes) - sizes
    out = np.full(m + 1 + int(sizes.sum()), pad, dtype=np.int64)
    out[:m + 1] = starts
    if rows.size:
        order = np.lexsort((cols, rows))
        r = rows[order]
        out[starts[r] + np.arange(r.size) - (np.cumsum(counts) - counts)[r]] = cols[order]
    return out


class Barred:
    """The residue pairs that earlier alignments aligned (Waterman and Eggert's mask), kept as 1-based
    rows and columns as alignments are added, with the ``forbid`` arrays of the passes made from them."""

    def __init__(self, m: int, n: int, paths=()):
        self.m, self.n = m, n
        self._parts: list = []
        self._pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._by_row = None
        for path in paths:
            self.add(path)

    def add(self, path) -> None:
        self._parts.append(path_pairs(path))
        self._by_row = None

    @property
    def rows(self) -> np.ndarray:
        return self._joined()[0]

    @property
    def cols(self) -> np.ndarray:
        return self._joined()[1]

    def _joined(self) -> tuple[np.ndarray, np.ndarray]:
        if self._parts:
            rows = [self._pairs[0]] + [r.astype(np.int64) for r, _ in self._parts]
            cols = [self._pairs[1]] + [c.astype(np.int64) for _, c in self._parts]
            self._pairs, self._parts = (np.concatenate(rows), np.concatenate(cols)), []
        return self._pairs

    def by_row(self) -> np.ndarray:
        """:func:`end_cell`'s and :func:`fill_box`'s ``forbid``."""
        if self._by_row is None:
            self._by_row = _rows_of(self.rows, self.cols, self.m, self.n + 2)
        return self._by_row

    def reversed(self, end_i: int, end_j: int) -> np.ndarray:
        """:func:`start_box`'s ``forbid_rev``: pair (i, j) at (end_i - i + 1, end_j - j + 1), the pairs at
        or before the end cell only."""
        inside = (self.rows <= end_i) & (self.cols <= end_j)
        return _rows_of(end_i - self.rows[inside] + 1, end_j - self.cols[inside] + 1, end_i, end_j + 2)


@njit(cache=True, nogil=True, boundscheck=False)
def fill_box(q, t, S, go, ge, i0, i1, c0, c1, H, F, dirs, store, forbid):
    """Local rows ``i0+1 .. i1`` over target columns ``c0+1 .. c1`` (1-based), column ``c0`` a zero
    boundary; H and F (int32, length >= c1 - c0 + 1) hold row i0 on entry (zeros and minus infinity at
    the box's top), row i1 on exit, indexed by ``j - c0``. ``dirs``: one direction byte per cell
    (:mod:`nwalign.backends.cpu.dp`'s), shape (i1 - i0, c1 - c0 + 1) with ``store``, else a (1, ...)
    scratch row. ``forbid``: as :func:`end_cell`'s."""
    tt = t.astype(np.intp)
    ncols = c1 - c0
    for i in range(i0 + 1, i1 + 1):
        row = S[q[i - 1]]
        diag = np.int64(H[0])
        h_left = np.int64(0)
        H[0] = 0
        e = np.int64(NEG)
        drow = dirs[i - i0 - 1 if store else 0]
        k = forbid[i]
        while forbid[k] <= c0:
            k += 1
        banned = forbid[k]
        for jj in range(1, ncols + 1):
            j = c0 + jj
            h_up = np.int64(H[jj])
            s = row[tt[j - 1]]
            d = diag
            if j == banned:
                d = np.int64(NEG)
                s = 0
                while forbid[k] == j:
                    k += 1
                banned = forbid[k]
            h, e, f, src, flags = gotoh_cell(d, h_up, np.int64(F[jj]), h_left, e, s, go, ge)
            if h <= 0:
                h = 0
                src = np.uint8(FROM_START)
            drow[jj] = src | flags
            diag = h_up
            H[jj] = h
            F[jj] = f
            h_left = h


@njit(cache=True, nogil=True)
def trace_box(dirs, i0, c0, i, j, state, ops, nops):
    """:func:`nwalign.backends.cpu.dp.trace_band` over a box whose top row is ``i0`` and first column
    ``c0`` (``dirs[r, j - c0]`` holds row i0 + 1 + r). Returns (i, j, state, nops, stopped)."""
    while i > i0 and j > c0:
        i, j, state, nops, stopped = trace_step(dirs[i - i0 - 1, j - c0], i, j, state, ops, nops)
        if stopped:
            return i, j, state, nops, True
    return i, j, state, nops, j <= c0  # the box's first column: a local start (the box holds the alignment)


@njit(cache=True, nogil=True, boundscheck=False)
def fill_ragged(q, t, S, go, ge, r0, r1, cell_lo, cell_hi, offsets, dirs, forbid):
    """The direction bytes of rows ``r0+1 .. r1``, row i over columns cell_lo[i] .. cell_hi[i] only, at
    ``dirs[offsets[i] + j - cell_lo[i]]``; a cell outside the rows' ranges counts as a local start (H 0,
    no gap open: at most its value in the whole matrix). ``forbid``: as :func:`end_cell`'s."""
    n = t.shape[0]
    Ha, Hb = np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int32)
    Fa, Fb = np.full(n + 1, NEG, np.int32), np.full(n + 1, NEG, np.int32)
    plo, phi = 1, 0  # the row above's range (none above the box)
    for i in range(r0 + 1, r1 + 1):
        lo, hi = cell_lo[i], cell_hi[i]
        Hp, Fp, Hc, Fc = (Ha, Fa, Hb, Fb) if (i - r0) % 2 else (Hb, Fb, Ha, Fa)
        row = S[q[i - 1]]
        k = forbid[i]
        while forbid[k] < lo:
            k += 1
        h_left, e = np.int64(0), np.int64(NEG)
        for j in range(lo, hi + 1):
            inside = plo <= j <= phi
            h_up = np.int64(Hp[j]) if inside else np.int64(0)
            f_up = np.int64(Fp[j]) if inside else np.int64(NEG)
            d = np.int64(Hp[j - 1]) if plo <= j - 1 <= phi else np.int64(0)
            s = row[t[j - 1]]
            if j == forbid[k]:
                d, s = np.int64(NEG), 0
                while forbid[k] == j:
                    k += 1
            h, e, f, src, flags = gotoh_cell(d, h_up, f_up, h_left, e, s, go, ge)
            if h <= 0:
                h = 0
                src = np.uint8(FROM_START)
            dirs[offsets[i] + j - lo] = src | flags
            Hc[j], Fc[j] = h, f
            h_left = h
        plo, phi = lo, hi


@njit(cache=True, nogil=True)
def trace_ragged(dirs, offsets, cell_lo, cell_hi, r0, i, j, ops):
    """:func:`trace_box` over :func:`fill_ragged`'s bytes: stops at a local start or where the path
    leaves the rows' ranges (a local start there). Returns (i, j, nops)."""
    state, nops = 0, 0
    while i > r0 and cell_lo[i] <= j <= cell_hi[i]:
        i, j, state, nops, stopped = trace_step(dirs[offsets[i] + j - cell_lo[i]], i, j, state, ops, nops)
        if stopped:
            break
    return i, j, nops


def trace_from_end(q, t, matrix, go: int, ge: int, barred: Barred, end: LocalEnd, max_memory: int = 1 << 30,
                   band_rows: int | None = None):
    """The path tuple (score, query_start, query_end, target_start, target_end, ops) of the engine's local
    alignment that ends at ``end`` (:func:`end_cell`'s, with ``barred``'s pairs forbidden) and aligns no
    residue pair of ``barred``.

    The direction bytes cover in each row only the columns the pass back from the end kept; where those
    exceed ``max_memory``, the whole box's are filled in bands with checkpoints (``band_rows`` forces
    that, with its band height: tests).

    Raises:
        NwalignError: the box's traceback cannot fit in ``max_memory`` even with checkpoints.
    """
    score, end_i, end_j = end.score, end.i, end.j
    cell_lo, cell_hi = np.ones(end_i + 1, np.int64), np.zeros(end_i + 1, np.int64)
    r0, c0 = start_box(q, t, matrix, go, ge, barred.reversed(end_i, end_j), end_i, end_j, score, end.row_max,
                       end.col_max, cell_lo, cell_hi)
    forbid = barred.by_row()
    widths = np.maximum(cell_hi - cell_lo + 1, 0)
    if band_rows is None and int(widths.sum()) <= max_memory:  # the rows' kept ranges only
        offsets = np.cumsum(widths) - widths
        dirs = np.empty(max(1, int(widths.sum())), np.uint8)
        fill_ragged(q, t, matrix, go, ge, r0, end_i, cell_lo, cell_hi, offsets, dirs, forbid)
        ops = np.empty(end_i - r0 + end_j - c0 + 2, dtype=np.uint8)
        i, j, nops = trace_ragged(dirs, offsets, cell_lo, cell_hi, r0, end_i, end_j, ops)
        return score, i, end_i, j, end_j, ops[:nops][::-1].copy()
    width = end_j - c0
    height = plan_bands(end_i - r0, width, max_memory) if band_rows is None else max(1, band_rows)
    bounds = list(range(r0, end_i, height)) + [end_i]
    H = np.zeros(width + 1, dtype=np.int32)
    F = np.full(width + 1, NEG, dtype=np.int32)
    scratch = np.empty((1, width + 1), np.uint8)
    checkpoints = []
    for b in range(len(bounds) - 1):
        checkpoints.append((H.copy(), F.copy()))
        if len(bounds) > 2:  # one band: its direction bytes are filled below
            fill_box(q, t, matrix, go, ge, bounds[b], bounds[b + 1], c0, end_j, H, F, scratch, False, forbid)
    ops = np.empty(end_i - r0 + width + 2, dtype=np.uint8)
    i, j, state, nops, stopped = end_i, end_j, 0, 0, False
    for b in range(len(bounds) - 2, -1, -1):
        top = bounds[b]
        if i <= top:
            continue
        Hb, Fb = checkpoints[b][0][:j - c0 + 1].copy(), checkpoints[b][1][:j - c0 + 1].copy()
        dirs = np.empty((i - top, j - c0 + 1), dtype=np.uint8)
        fill_box(q, t, matrix, go, ge, top, i, c0, j, Hb, Fb, dirs, True, forbid)
        i, j, state, nops, stopped = trace_box(dirs, top, c0, i, j, state, ops, nops)
        if stopped or i > top:
            break  # a local start; else the path left the band at its top edge and the band above goes on
    return score, i, end_i, j, end_j, ops[:nops][::-1].copy()


def best_local(q, t, matrix, go: int, ge: int, paths=(), max_memory: int = 1 << 30, band_rows: int | None = None,
               progress=None):
    """The engine's best local alignment of ``q`` and ``t`` (uint8 codes) that aligns no residue pair of
    ``paths`` (path tuples), as a path tuple; None when no pair scores above 0. One score pass over the
    matrix (``progress(fraction)`` called as it goes), then the work of the alignment's box (see the
    module).

    Raises:
        NwalignError: the traceback cannot fit in ``max_memory``.
    """
    barred = Barred(len(q), len(t), paths)
    end = end_cell(q, t, matrix, go, ge, barred.by_row(), progress)
    if end.score <= 0:
        return None
    return trace_from_end(q, t, matrix, go, ge, barred, end, max_memory, band_rows)
