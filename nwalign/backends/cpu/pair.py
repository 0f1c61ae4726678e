"""Host-side drivers of the CPU engine for one pair: score only, and alignment in bounded memory."""

from __future__ import annotations

import numpy as np

from nwalign.backends.cpu.anchored import best_local
from nwalign.backends.cpu.antidiagonal import fits_float32, score_antidiagonal
from nwalign.backends.cpu.budget import plan_bands, rows_per_band  # noqa: F401  (plan_bands: also imported from here)
from nwalign.backends.cpu.rows import fill_rows, profile
from nwalign.ops import QUERY_END, TARGET_END, TARGET_START, end_mask, finish_path, format_bytes  # noqa: F401  (format_bytes: also imported from here)
from nwalign.backends.cpu.dp import LOCAL, NEG, fill_band, init_row0, trace_band



def _start_best(mode: int, n: int, go: int, ge: int) -> np.ndarray:
    # Local: the empty alignment (score 0). The query's end free: cell (0, n) (semiglobal: all overhang, 0).
    if mode == LOCAL:
        return np.array([0, 0, 0], dtype=np.int64)
    ends = end_mask(mode)
    if ends & QUERY_END:
        return np.array([0 if ends & TARGET_START or n == 0 else -(go + (n - 1) * ge), 0, n], dtype=np.int64)
    return np.array([NEG, 0, 0], dtype=np.int64)


def _end_at_corner(mode: int) -> bool:
    """Whether an end-to-end mode's alignment ends at (m, n) (neither sequence's end free)."""
    return not end_mask(mode) & (QUERY_END | TARGET_END)


def score_codes(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, gap_open: int, gap_extend: int,
                mode: int) -> int:
    """Optimal score in linear memory.

    Uses the vectorised anti-diagonal kernel when every DP value is exact in float32 (sizes up to a
    few million residues), else the scalar row kernel in 64-bit integers.

    Arguments:
        q, t: uint8 residue codes, shapes (m,) and (n,), m, n >= 1.
        matrix: int32 substitution scores, shape (A, A).
        gap_open, gap_extend: non-negative penalties (gap of length L costs open + (L-1) * extend).
        mode: 0 global, 1 local, 2 semiglobal.

    Returns:
        The optimal score (int).
    """
    m, n = len(q), len(t)
    max_abs = int(max(np.abs(matrix).max(), gap_open, gap_extend))
    if fits_float32(m, n, max_abs):
        return score_antidiagonal(q, t, matrix, gap_open, gap_extend, mode)
    return score_rows(q, t, matrix, gap_open, gap_extend, mode)[0]


def score_rows(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, gap_open: int, gap_extend: int,
               mode: int) -> tuple[int, int, int]:
    """Optimal score and end cell (i, j) with the scalar row kernel (no float32 limit)."""
    m, n = len(q), len(t)
    H = np.empty(n + 1, dtype=np.int32)
    F = np.empty(n + 1, dtype=np.int32)
    init_row0(H, F, mode, gap_open, gap_extend)
    best = _start_best(mode, n, gap_open, gap_extend)
    fill_band(q, t, matrix, gap_open, gap_extend, mode, 0, m, n, H, F, np.empty((1, n + 1), np.uint8), False,
              best)
    if mode != LOCAL and _end_at_corner(mode):
        return int(H[n]), m, n
    return int(best[0]), int(best[1]), int(best[2])


def align_codes(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, gap_open: int, gap_extend: int,
                mode: int, max_memory: int = 4 << 30, band_rows: int | None = None, progress=None
                ) -> tuple[int, int, int, int, int, np.ndarray]:
    """Optimal alignment with traceback, in at most about ``max_memory`` bytes of DP state.

    Global and semi-global: when the direction matrix ((m) x (n+1) bytes) is small
    (:func:`nwalign.backends.cpu.budget.rows_per_band`), it is filled once and walked back. Otherwise the
    forward pass keeps the H and F rows at every band boundary, and the traceback recomputes the bands
    in reverse, each only up to the column where the path leaves it: about twice the work, memory
    O(n sqrt(m)). Rows are filled in :mod:`nwalign.backends.cpu.rows`' vectorised sweeps. Local: a score
    pass, then the alignment's own band (:mod:`nwalign.backends.cpu.anchored`).

    Arguments:
        q, t, matrix, gap_open, gap_extend, mode: as for :func:`score_codes`.
        max_memory: byte budget for direction bytes plus checkpoints.
        band_rows: force this band height (tests use it to exercise the linear-space path).
        progress: optional callable, given the fraction of the work done (0..1) as bands complete.

    Returns:
        (score, query_start, query_end, target_start, target_end, ops): 0-based half-open coordinates
        of the aligned region and its columns as uint8 codes (0 residue pair, 1 query residue against a
        gap (CIGAR I), 2 target residue against a gap (CIGAR D)), in alignment order.

    Raises:
        NwalignError: the traceback cannot fit in ``max_memory``.
    """
    if mode == LOCAL:  # a score pass, then the alignment's own box (same path, tie rules included)
        return _local(q, t, matrix, gap_open, gap_extend, max_memory, band_rows, progress)
    m, n = len(q), len(t)
    height = rows_per_band(m, n, max_memory) if band_rows is None else max(1, band_rows)
    P = profile(matrix, q, t)
    H = np.empty(n + 1, dtype=np.int32)
    F = np.empty(n + 1, dtype=np.int32)
    init_row0(H, F, mode, gap_open, gap_extend)
    best = _start_best(mode, n, gap_open, gap_extend)
    bounds = list(range(0, m, height)) + [m]
    ops = np.empty(m + n, dtype=np.uint8)

    report = progress or (lambda fraction: None)
    if height >= m:  # the whole direction matrix fits: one pass (in chunks of rows when progress is shown)
        dirs = np.empty((m, n + 1), dtype=np.uint8)
        step = m if progress is None else max(1, -(-m // 64))
        for i0 in range(0, m, step):
            i1 = min(m, i0 + step)
            fill_rows(P, q, gap_open, gap_extend, mode, i0, i1, n, H, F, dirs[i0:i1], True, best)
            report(0.95 * i1 / m)
        score, i, j = (int(H[n]), m, n) if _end_at_corner(mode) else (int(best[0]), int(best[1]), int(best[2]))
        end_i, end_j = i, j
        i, j, state, nops, stopped = trace_band(dirs, 0, i, j, 0, ops, 0)
    else:
        checkpoints = []
        scratch_row = np.empty((1, n + 1), dtype=np.uint8)
        for b in range(len(bounds) - 1):
            checkpoints.append((H.copy(), F.copy()))
            fill_rows(P, q, gap_open, gap_extend, mode, bounds[b], bounds[b + 1], n, H, F, scratch_row, False, best)
            report(0.5 * bounds[b + 1] / m)
        score, i, j = (int(H[n]), m, n) if _end_at_corner(mode) else (int(best[0]), int(best[1]), int(best[2]))
        end_i, end_j = i, j
        state, nops, stopped = 0, 0, False
        dirs_buf = np.empty(height * (n + 1), dtype=np.uint8)
        for b in range(len(bounds) - 2, -1, -1):
            top = bounds[b]
            if i <= top:
                continue
            if j == 0 or stopped:
                break
            Hb = checkpoints[b][0][: j + 1].copy()
            Fb = checkpoints[b][1][: j + 1].copy()
            dirs = dirs_buf[: (i - top) * (j + 1)].reshape(i - top, j + 1)
            scratch = np.array([NEG, 0, 0], dtype=np.int64)  # the best cell is already known
            fill_rows(P, q, gap_open, gap_extend, mode, top, i, j, Hb, Fb, dirs, True, scratch)
            i, j, state, nops, stopped = trace_band(dirs, top, i, j, state, ops, nops)
            report(0.5 + 0.5 * (m - top) / m)

    report(1.0)
    return finish_path(mode, score, i, end_i, j, end_j, ops, nops)


def _local(q, t, matrix, gap_open: int, gap_extend: int, max_memory: int, band_rows, progress):
    """:func:`align_codes` of a local alignment by :func:`nwalign.backends.cpu.anchored.best_local` (the
    empty alignment, score 0, where nothing scores above 0)."""
    path = best_local(q, t, matrix, gap_open, gap_extend, (), max_memory, band_rows,
                      progress=None if progress is None else lambda fraction: progress(0.9 * fraction))
    if progress is not None:
        progress(1.0)
    if path is None:
        return 0, 0, 0, 0, 0, np.zeros(0, dtype=np.uint8)
    return path
