"""Alignment column codes, mode codes and the end of a traceback, shared by the engines and the result
records (NumPy only: no Numba, no CuPy)."""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

OP_MATCH, OP_INS, OP_DEL = 0, 1, 2  # alignment columns: residue pair, query residue only, target only
GLOBAL, LOCAL, SEMIGLOBAL = 0, 1, 2  # alignment modes, as every kernel numbers them (NW_GLOBAL.. in common.cuh)
GLOCAL = 3  # the query whole, the target's leading and trailing residues free (the CPU engine's kernels)
FREE_ENDS = 16  # codes 16..31: global with the free ends of the low 4 bits (the CPU engine's kernels)
QUERY_START, QUERY_END, TARGET_START, TARGET_END = 1, 2, 4, 8  # the residues an alignment may leave out free


def end_mask(mode: int) -> int:
    """Which ends of an end-to-end mode are free (bits QUERY_START .. TARGET_END): none in global mode,
    all four in semiglobal, the target's two in glocal, the low 4 bits of a FREE_ENDS code; 0 for local."""
    if mode == SEMIGLOBAL:
        return QUERY_START | QUERY_END | TARGET_START | TARGET_END
    if mode == GLOCAL:
        return TARGET_START | TARGET_END
    if mode >= FREE_ENDS:
        return mode - FREE_ENDS
    return 0
NEG = -(2**30)  # minus infinity that survives subtracting any allowed penalty in int32/int64 (NW_NEG)


def format_bytes(size: int) -> str:
    """A byte count for messages: ``1.5 GiB``, ``12.0 MiB``, ``512 bytes``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def finish_path(mode: int, score: int, i: int, end_i: int, j: int, end_j: int, ops: np.ndarray,
                nops: int) -> tuple[int, int, int, int, int, np.ndarray]:
    """Close a traceback that stopped at (i, j), its columns in ``ops[:nops]`` in reverse order: in global
    mode the path runs on along row 0 or column 0 to the origin (``ops`` needs room for i + j more); with
    free ends (:func:`end_mask`) only along the row or column whose leading residues are not free.

    Returns:
        (score, query_start, query_end, target_start, target_end, ops): 0-based half-open coordinates and
        the columns (uint8: OP_MATCH, OP_INS, OP_DEL) in alignment order.
    """
    ends = end_mask(mode)
    if mode != LOCAL and not ends & QUERY_START:  # the query's leading residues are aligned (against gaps)
        ops[nops:nops + i] = OP_INS
        nops += i
        i = 0
    if mode != LOCAL and not ends & TARGET_START:
        ops[nops:nops + j] = OP_DEL
        nops += j
        j = 0
    return score, i, end_i, j, end_j, ops[:nops][::-1].copy()


_PIECE = 1 << 18  # columns a piece of columns_score's threads at least


def in_pieces(ops: np.ndarray, piece: int, work) -> tuple[list, int]:
    """``work(part, q_before, t_before)`` on consecutive pieces of the columns ``ops`` (uint8) of at least
    ``piece`` columns, a piece a core, on threads (NumPy releases the interpreter's lock); ``q_before`` and
    ``t_before``: the residues of each sequence the columns before the piece consumed. Returns (the
    results in order, the gap runs that cross a cut: counted once in each piece they touch)."""
    pieces = max(1, min(os.cpu_count() or 1, ops.size // piece))
    if pieces == 1:
        return [work(ops, 0, 0)], 0
    bounds = np.linspace(0, ops.size, pieces + 1).astype(np.int64).tolist()
    spans = list(zip(bounds[:-1], bounds[1:]))

    def used(span):
        part = ops[span[0]:span[1]]
        return int(np.count_nonzero(part != OP_DEL)), int(np.count_nonzero(part != OP_INS))

    with ThreadPoolExecutor(max_workers=pieces) as pool:
        counts = list(pool.map(used, spans))
        q_at = np.concatenate(([0], np.cumsum([c[0] for c in counts]))).tolist()
        t_at = np.concatenate(([0], np.cumsum([c[1] for c in counts]))).tolist()
        results = list(pool.map(lambda k: work(ops[spans[k][0]:spans[k][1]], q_at[k], t_at[k]), range(pieces)))
    return results, sum(1 for a, _ in spans[1:] if ops[a] != OP_MATCH and ops[a] == ops[a - 1])


def columns_score(ops, q, t, matrix, gap_open: int, gap_extend: int) -> int:
    """Score of the columns ``ops`` (uint8, alignment order) of an alignment starting at the first residue
    of the codes ``q`` and ``t`` (uint8): pairs scored by ``matrix``, a gap run of L columns costing
    ``gap_open + (L - 1) * gap_extend``. Vectorised; a genome-length alignment in pieces on threads
    (:func:`in_pieces`; the check of the GPU's windowed tracebacks: NumPy, nothing to compile on a first run).

    Raises:
        ValueError: the columns consume more residues than ``q`` or ``t`` holds.
    """
    def piece(part, q_before: int, t_before: int) -> tuple[int, int, int]:
        pair = part == OP_MATCH
        qi = q_before + np.cumsum(part != OP_DEL) - 1
        ti = t_before + np.cumsum(part != OP_INS) - 1
        if part.size and (int(qi[-1]) >= len(q) or int(ti[-1]) >= len(t)):
            raise ValueError("alignment columns run past the end of a sequence")
        total = int(matrix[q[qi[pair]], t[ti[pair]]].astype(np.int64).sum())
        gap = ~pair
        starts = gap & np.concatenate((np.ones(1, dtype=bool), part[1:] != part[:-1]))
        return total, int(gap.sum()), int(starts.sum())

    parts, continued = in_pieces(np.ascontiguousarray(ops, dtype=np.uint8), _PIECE, piece)
    total, gaps, opens = (sum(p[k] for p in parts) for k in range(3))
    opens -= continued  # a run across a cut
    return total - opens * gap_open - (gaps - opens) * gap_extend
