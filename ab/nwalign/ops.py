"""Alignment column codes, mode codes and the end of a traceback, shared by the engines and the result
records (NumPy only: no Numba, no CuPy)."""

import numpy as np

OP_MATCH, OP_INS, OP_DEL = 0, 1, 2  # alignment columns: residue pair, query residue only, target only
GLOBAL, LOCAL, SEMIGLOBAL = 0, 1, 2  # alignment modes, as every kernel numbers them (NW_GLOBAL.. in common.cuh)


def finish_path(mode: int, score: int, i: int, end_i: int, j: int, end_j: int, ops: np.ndarray,
                nops: int) -> tuple[int, int, int, int, int, np.ndarray]:
    """Close a traceback that stopped at (i, j), its columns in ``ops[:nops]`` in reverse order: in global
    mode the path runs on along row 0 or column 0 to the origin (``ops`` needs room for i + j more).

    Returns:
        (score, query_start, query_end, target_start, target_end, ops): 0-based half-open coordinates and
        the columns (uint8: OP_MATCH, OP_INS, OP_DEL) in alignment order.
    """
    if mode == GLOBAL:
        ops[nops:nops + i] = OP_INS
        nops += i
        i = 0
        ops[nops:nops + j] = OP_DEL
        nops += j
        j = 0
    return score, i, end_i, j, end_j, ops[:nops][::-1].copy()
