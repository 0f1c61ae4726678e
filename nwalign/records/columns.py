"""An alignment's column classes and counts in one compiled pass (:func:`nwalign.records.alignment.finish` for long
alignments: the all-pairs identity filter finishes tens of thousands of genome alignments)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, boundscheck=False)
def alignment_columns(ops, q, t, qs, ts, S, identical):
    """What :func:`nwalign.records.alignment.finish` derives from the columns ``ops`` (uint8: 0 a residue pair, 1 a
    query residue against a gap, 2 the reverse) starting at query/target positions ``qs``/``ts`` of the
    codes ``q``/``t``: (cols uint8 (n,): 0 identity, 1 other pair, 2 query-only, 3 target-only; positive
    bool (n,): pairs scoring above 0; nident; npositive; gap columns; gap runs)."""
    n = ops.shape[0]
    cols = np.empty(n, dtype=np.uint8)
    positive = np.zeros(n, dtype=np.bool_)
    i, j = qs, ts
    nident = npositive = gaps = opens = 0
    prev = np.uint8(255)
    for k in range(n):
        op = ops[k]
        if op == 0:
            a, b = q[i], t[j]
            if a == b and identical[a]:
                cols[k] = 0
                nident += 1
            else:
                cols[k] = 1
            if S[a, b] > 0:
                positive[k] = True
                npositive += 1
            i += 1
            j += 1
        else:
            cols[k] = 2 if op == 1 else 3
            gaps += 1
            if op != prev:
                opens += 1
            if op == 1:
                i += 1
            else:
                j += 1
        prev = op
    return cols, positive, nident, npositive, gaps, opens
