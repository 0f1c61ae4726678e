"""One pair's optimal score with parasail's striped SIMD kernels (Farrar 2007, Bioinformatics 23:156;
Daily 2016, BMC Bioinformatics 17:81): ``nw``, ``sw``, ``sg`` (end gaps free on both sequences:
nwalign's semiglobal) and ``sg_dx`` (glocal) with saturation checks, 8-bit lanes first and 16 or 32 bits where a score
saturates, so the score is exact. parasail's gap convention is nwalign's (a gap of length L costs open +
(L-1) extend). Without parasail, :func:`striped_score` gives None and the Numba engine scores.
"""

from __future__ import annotations

import numpy as np

# Where parasail's scores are nwalign's: global and local with gap open > extend. Its striped kernels
# differ with linear gaps (open == extend: Farrar's lazy-F loop assumes open > extend), and its ``sg``
# differs from nwalign's semiglobal in rare cases (measured on random pairs; tests/backends/test_opal.py).
# Its ``sg_dx`` (the database's ends free) is nwalign's glocal: equal on 2,400 random pairs (DNA and
# protein, three gap pairs, planted copies; tests/backends/test_opal.py).
FUNCTIONS = {"global": "nw", "local": "sw", "glocal": "sg_dx"}
_MATRICES: dict = {}


def _matrix(parasail, scoring):
    """parasail's copy of the scoring's matrix (made once per scoring)."""
    key = (scoring.alphabet, np.asarray(scoring.matrix).tobytes())
    if key not in _MATRICES:
        matrix = parasail.matrix_create(scoring.alphabet, 0, 0)
        for i, row in enumerate(np.asarray(scoring.matrix).tolist()):
            for j, value in enumerate(row):
                matrix.set_value(i, j, int(value))
        _MATRICES[key] = matrix
    return _MATRICES[key]


def striped_score(q: np.ndarray, t: np.ndarray, scoring) -> int | None:
    """The optimal score of query codes ``q`` against target codes ``t`` (uint8, codes of ``scoring``) in
    ``scoring.mode``, or None without parasail or where its score could differ (see :data:`FUNCTIONS`)."""
    if scoring.mode not in FUNCTIONS or not scoring.gap_open > scoring.gap_extend:
        return None
    try:
        import parasail
    except ImportError:
        return None
    letters = np.frombuffer(scoring.alphabet.encode("ascii"), dtype=np.uint8)
    a, b = letters[np.asarray(q)].tobytes().decode(), letters[np.asarray(t)].tobytes().decode()
    name = FUNCTIONS[scoring.mode]
    matrix = _matrix(parasail, scoring)
    go, ge = int(scoring.gap_open), int(scoring.gap_extend)
    # A score that may leave 16 bits goes to 32-bit lanes at once (the 8- and 16-bit passes would saturate).
    reach = max(int(np.abs(scoring.matrix).max()) * min(len(a), len(b)), go + ge * max(len(a), len(b)))
    result = getattr(parasail, f"{name}_striped_sat")(a, b, go, ge, matrix) if reach < 2**15 - 1024 else None
    if result is None or result.saturated:
        result = getattr(parasail, f"{name}_striped_32")(a, b, go, ge, matrix)
    return int(result.score)
