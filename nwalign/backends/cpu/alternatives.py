"""Every local alignment of a pair, best first: Waterman and Eggert's non-intersecting alternatives.

Waterman, M. S. and Eggert, M. (1987) "A new algorithm for best subsequence alignments with application
to tRNA-rRNA comparisons", J. Mol. Biol. 197, 723-728; as SSEARCH's alternative alignments and LALIGN
(Huang and Miller's SIM) report them. The k-th alignment is the best local alignment that aligns no pair
of residues (i, j) aligned by the alignments before it: the Smith-Waterman recurrence of
:mod:`nwalign.backends.cpu.dp` with the diagonal step into each such cell forbidden (a gap may still
cross it). The first alignment is the plain Smith-Waterman one, with the engine's tie rules.

The second alignment costs one vectorised score pass over the matrix with the first one's pairs
forbidden (its end cell: the first best cell in row order) and the work of its own box
(:mod:`nwalign.backends.cpu.anchored`): most pairs above an E-value cut have one alignment, and the pass
that shows no second one passes the cut is the only work added to the pair's first alignment. A pair that
has a second has often many (repeats): from the third on, the whole matrix's H, E and F are kept
(:class:`StoredMatrix`, where they fit), each new alignment's pairs are forbidden by recomputing only the
cells whose values change (Waterman and Eggert's observation: a row's recomputation starts at the first
cell that changed in the row above or a newly forbidden pair, and ends past the row above's changes at
the first cell that keeps its values), and the traceback reads the kept values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nwalign.backends.cpu.anchored import Barred, end_cell, end_rows, trace_from_end
from nwalign.backends.cpu.rows import profile
from nwalign.ops import NEG, OP_DEL, OP_INS, OP_MATCH


@njit(cache=True, nogil=True, boundscheck=False)
def fill_stored(P, q, go, ge, mask, H, E, F):
    """The local matrix of ``q`` against the target of profile ``P``
    (:func:`nwalign.backends.cpu.rows.profile`) with the pairs set in ``mask`` (uint8,
    (len(q) + 1, len(t) + 1)) barred from the diagonal step, every cell's H, E and F (int32, the same
    shape) kept; each row in the three sweeps of :func:`nwalign.backends.cpu.anchored.end_rows`."""
    m, n = q.shape[0], P.shape[1] - 1
    go32, ge32, zero, neg = np.int32(go), np.int32(ge), np.int32(0), np.int32(NEG)
    H[0, :] = 0
    E[0, :] = NEG
    F[0, :] = NEG
    for i in range(1, m + 1):
        row, Hp, Hn, Fp, Fn, En, barred = P[q[i - 1]], H[i - 1], H[i], F[i - 1], F[i], E[i], mask[i]
        Hn[0], En[0], Fn[0] = 0, NEG, NEG
        for j in range(1, n + 1):
            f = max(Hp[j] - go32, Fp[j] - ge32)
            Fn[j] = f
            d = neg if barred[j] else Hp[j - 1] + row[j]
            Hn[j] = max(max(d, f), zero)
        e, h_left = neg, zero
        for j in range(1, n + 1):
            hp = Hn[j]
            e = max(h_left - go32, e - ge32)
            En[j] = e
            Hn[j] = max(hp, e)
            h_left = hp


@njit(cache=True, nogil=True, boundscheck=False)
def _row_best(H, i, row_max, row_arg):
    best, arg = np.int64(0), 0
    for j in range(1, H.shape[1]):
        if H[i, j] > best:
            best, arg = np.int64(H[i, j]), j
    row_max[i], row_arg[i] = best, arg


@njit(cache=True, nogil=True, boundscheck=False)
def rebar(q, t, S, go, ge, mask, new_rows, new_cols, H, E, F, row_max, row_arg):
    """Bar the pairs (new_rows[k], new_cols[k]) (1-based, rows ascending; already set in ``mask``):
    recompute the cells of H, E, F whose values change (see the module), each changed row's best."""
    m, n = q.shape[0], t.shape[0]
    lo, hi, k = n + 1, -1, 0
    i = new_rows[0] if new_rows.shape[0] else m + 1
    while i <= m:
        seed_lo, seed_hi = n + 1, -1
        while k < new_rows.shape[0] and new_rows[k] == i:
            seed_lo, seed_hi = min(seed_lo, new_cols[k]), max(seed_hi, new_cols[k])
            k += 1
        if lo > hi and seed_lo > seed_hi:  # nothing changed above and nothing new here: the next new row
            if k >= new_rows.shape[0]:
                break
            i = new_rows[k]
            continue
        j = min(lo, seed_lo)
        limit = max(hi + 1, seed_hi)
        e, h_left = np.int64(E[i, j - 1]), np.int64(H[i, j - 1])
        new_lo, new_hi = -1, -1
        while j <= n:
            f = max(np.int64(H[i - 1, j]) - go, np.int64(F[i - 1, j]) - ge)
            e = max(h_left - go, e - ge)
            d = np.int64(NEG) if mask[i, j] else np.int64(H[i - 1, j - 1]) + S[q[i - 1], t[j - 1]]
            h = max(d, e, f, np.int64(0))
            if h != H[i, j] or e != E[i, j] or f != F[i, j]:
                H[i, j], E[i, j], F[i, j] = h, e, f
                if new_lo < 0:
                    new_lo = j
                new_hi = j
            elif j > limit:  # past the row above's changes, a cell that keeps its values ends the row's
                break
            h_left = h
            j += 1
        if new_hi >= 0:
            _row_best(H, i, row_max, row_arg)
            lo, hi = new_lo, new_hi
        else:
            lo, hi = n + 1, -1
        i += 1


@njit(cache=True, nogil=True, boundscheck=False)
def trace_stored(q, t, S, go, ge, mask, H, E, F, i, j, ops):
    """The traceback from cell (i, j) read from kept values, with the engine's choices (the diagonal on
    a tie, then E, then F; a gap extended only when that is strictly better). Returns (i, j, nops): the
    start and the columns in reverse order."""
    state, nops = 0, 0
    while i > 0 and j > 0:
        if state == 0:
            h = H[i, j]
            if h <= 0:
                break
            if not mask[i, j] and h == np.int64(H[i - 1, j - 1]) + S[q[i - 1], t[j - 1]]:
                ops[nops] = OP_MATCH
                nops += 1
                i, j = i - 1, j - 1
            elif h == E[i, j]:
                state = 1
            else:
                state = 2
        elif state == 1:
            ops[nops] = OP_DEL
            nops += 1
            state = 1 if np.int64(E[i, j - 1]) - ge > np.int64(H[i, j - 1]) - go else 0
            j -= 1
        else:
            ops[nops] = OP_INS
            nops += 1
            state = 2 if np.int64(F[i - 1, j]) - ge > np.int64(H[i - 1, j]) - go else 0
            i -= 1
    return i, j, nops


class StoredMatrix:
    """A pair's local matrix kept whole (H, E and F, and a byte a cell for the barred residue pairs: 13
    bytes a cell) under a growing set of barred pairs (from ``barred``'s on), each row's best cell kept."""

    BYTES = 256 << 20  # the largest matrix kept; a larger pair takes a score pass per alignment

    @classmethod
    def fits(cls, m: int, n: int) -> bool:
        return (m + 1) * (n + 1) * 13 <= cls.BYTES

    def __init__(self, q, t, matrix, go: int, ge: int, barred: Barred):
        self.q, self.t, self.matrix, self.go, self.ge = q, t, matrix, go, ge
        m, n = len(q), len(t)
        self.H, self.E, self.F = (np.empty((m + 1, n + 1), np.int32) for _ in range(3))
        self.mask = np.zeros((m + 1, n + 1), np.uint8)
        self.mask[barred.rows, barred.cols] = 1
        fill_stored(profile(matrix, q, t), q, go, ge, self.mask, self.H, self.E, self.F)
        self.row_max, self.row_arg = np.zeros(m + 1, np.int64), np.zeros(m + 1, np.int64)
        for i in range(1, m + 1):
            _row_best(self.H, i, self.row_max, self.row_arg)

    def end(self) -> tuple[int, int, int]:
        """(score, i, j): the best cell, the first in row order."""
        i = int(np.argmax(self.row_max))
        return int(self.row_max[i]), i, int(self.row_arg[i])

    def trace(self, score: int, end_i: int, end_j: int):
        """The path tuple of the alignment that ends at (end_i, end_j)."""
        ops = np.empty(end_i + end_j, np.uint8)
        i, j, nops = trace_stored(self.q, self.t, self.matrix, self.go, self.ge, self.mask, self.H, self.E, self.F,
                                  end_i, end_j, ops)
        return score, i, end_i, j, end_j, ops[:nops][::-1].copy()

    def forbid(self, path) -> None:
        """Bar the residue pairs of ``path`` from now on."""
        rows, cols = path_rows_cols(path)
        self.mask[rows, cols] = 1
        rebar(self.q, self.t, self.matrix, self.go, self.ge, self.mask, rows, cols, self.H, self.E, self.F,
              self.row_max, self.row_arg)


def path_rows_cols(path) -> tuple[np.ndarray, np.ndarray]:
    """A path's residue pairs (1-based, int64), rows ascending."""
    _, qs, _, ts, _, ops = path
    ops = np.asarray(ops)
    pair = ops == OP_MATCH
    return (qs + np.cumsum(ops != OP_DEL))[pair].astype(np.int64), (ts + np.cumsum(ops != OP_INS))[pair].astype(np.int64)


@njit(cache=True, nogil=True, boundscheck=False)
def barred_bests(q, S, go, ge, targets, t_off, ops, o_off, q_start, t_start, out):
    """The best score of :func:`nwalign.backends.cpu.anchored.end_cell`'s pass for each of many pairs, in
    one call without the GIL: ``q`` (uint8 codes) against target k, ``targets[t_off[k]:t_off[k + 1]]``,
    with the residue pairs that path k aligns barred from the diagonal step: its columns
    ``ops[o_off[k]:o_off[k + 1]]`` (OP_MATCH, OP_INS, OP_DEL) from query and target positions
    ``q_start[k]``, ``t_start[k]`` (0-based; an empty path bars nothing). ``out[k]`` (int64): the best,
    0 where nothing scores above 0. Each pair runs :func:`nwalign.backends.cpu.anchored.end_rows` itself, on a
    target profile and forbid list built here (a path aligns each query row once at most)."""
    m = q.shape[0]
    for k in range(out.shape[0]):
        t = targets[t_off[k]:t_off[k + 1]]
        n = t.shape[0]
        P = np.empty((S.shape[0], n + 1), np.int32)  # the target profile of rows.profile, q's letters only
        for a in np.unique(q):
            P[a, 0] = 0
            for j in range(n):
                P[a, j + 1] = S[a, t[j]]
        # end_rows' forbid (Barred.by_row's layout): row i's list starts at forbid[i], ends with n + 2
        forbid = np.full(2 * (m + 1) + m, n + 2, np.int64)
        at = m + 1
        i, j = q_start[k], t_start[k]
        row = 0
        for x in range(o_off[k], o_off[k + 1]):
            op = ops[x]
            i += op != OP_DEL
            j += op != OP_INS
            if op == OP_MATCH:
                while row < i:  # rows before i: empty lists
                    forbid[row] = at
                    at += 1
                    row += 1
                forbid[i] = at
                forbid[at] = j
                at += 2
                row = i + 1
        while row <= m:
            forbid[row] = at
            at += 1
            row += 1
        best = np.zeros(3, np.int64)
        end_rows(P, q, go, ge, forbid, 0, m, np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int32),
                 np.full(n + 1, NEG, np.int32), best, np.zeros(m + 1, np.int32), np.zeros(n + 1, np.int32))
        out[k] = best[0]


def alternative_paths(q, t, matrix, go: int, ge: int, first: list, keep, most: int, max_memory: int = 1 << 30) -> list:
    """The alignments after ``first`` (path tuples already reported, best first) in Waterman and Eggert's
    order: each the best that aligns no residue pair of those before it, while ``keep(score)`` holds and
    fewer than ``most`` paths are known in all (``first`` included). Returns the new paths, best first.

    Arguments:
        q, t: uint8 residue codes, shapes (m,) and (n,).
        matrix: int32 substitution scores (A, A); go, ge: the gap penalties (go >= ge >= 0).
        first: path tuples (score, query_start, query_end, target_start, target_end, ops), 0-based
            half-open, ops in alignment order (0 pair, 1 query residue only, 2 target residue only).
        keep: a callable of a score: whether an alignment of that score is reported (scores only fall).
        most: the most paths in all.

    Raises:
        NwalignError: a traceback cannot fit in ``max_memory``.
    """
    barred = Barred(len(q), len(t), first)
    found: list = []
    stored = None
    while len(first) + len(found) < most:
        if len(found) == 1 and StoredMatrix.fits(len(q), len(t)):  # a second alignment: often many (repeats)
            stored = StoredMatrix(q, t, matrix, go, ge, barred)
        if stored is not None:
            score, end_i, end_j = stored.end()
            if score <= 0 or not keep(score):
                break
            path = stored.trace(score, end_i, end_j)
            stored.forbid(path)
        else:
            end = end_cell(q, t, matrix, go, ge, barred.by_row())
            if end.score <= 0 or not keep(end.score):
                break
            path = trace_from_end(q, t, matrix, go, ge, barred, end, max_memory)
            barred.add(path)
        found.append(path)
    return found

