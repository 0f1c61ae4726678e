"""The CPU engine's banded scores without direction bytes (nwalign.backends.cpu.bandscore): both fills
equal fill_banded's 64-bit score on random pairs, every band width, every gap model."""

import numpy as np
import pytest

from nwalign.backends.cpu import bandscore
from nwalign.backends.cpu.banded import banded_score
from nwalign.backends.cpu.rows import profile
from nwalign.plan.bands import band_limits
from nwalign.scoring.schemes import make_scoring


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_row_sweeps_and_anti_diagonals_give_fill_banded_scores(alphabet, monkeypatch):
    """score_band_rows (int32, three sweeps a row) and score_band_diagonals (float32 lanes) against
    fill_banded (int64, cell by cell): narrow and whole-matrix bands, pairs with copies of the query and
    length differences, affine, linear and free gaps; band_score picks either and the 64-bit fill where
    int32 could wrap."""
    rng = np.random.default_rng(31)
    letters = 4 if alphabet == "dna" else 20
    for case in range(240):
        scoring = make_scoring(alphabet, "global")
        go, ge = [(scoring.gap_open, scoring.gap_extend), (3, 1), (2, 2), (5, 0)][case % 4]
        S = scoring.matrix
        m, n = int(rng.integers(1, 120)), int(rng.integers(1, 120))
        q = rng.integers(0, letters, m).astype(np.uint8)
        t = rng.integers(0, letters, n).astype(np.uint8)
        if case % 3 == 0:
            k = min(m, n)
            t[:k] = q[:k]
        lo, hi = band_limits(m, n, int(rng.integers(0, 130)))
        want = banded_score(q, t, S, go, ge, lo, hi)
        assert int(bandscore.score_band_rows(profile(S, q, t), q, go, ge, lo, hi, n)) == want
        assert int(bandscore.score_band_diagonals(q, t, S, go, ge, lo, hi)) == want
        for rows_up_to, exact in ((0, 1 << 29), (10**6, 1 << 29), (10**6, 0)):  # diagonals, rows, 64-bit
            monkeypatch.setattr(bandscore, "ROWS_UP_TO", rows_up_to)
            monkeypatch.setattr(bandscore, "INT32_EXACT", exact)
            assert bandscore.band_score(q, t, S, go, ge, lo, hi) == want
        monkeypatch.undo()
