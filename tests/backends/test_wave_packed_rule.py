"""When the wavefront score pass runs 16-bit (wave_score16.cu): the host's rule and range bound (no GPU needed)."""

import numpy as np

from nwalign.backends.cpu.dp import GLOBAL, LOCAL, SEMIGLOBAL
from nwalign.backends.cuda.wavefront import (LOOKAHEAD, PACKED_MIN_ROWS, PACKED_ROWS, choose_packed, packed_limit,
                                    packed_spread)
from nwalign.scoring.schemes import make_scoring


def _rule(scoring, rows=16, m=PACKED_MIN_ROWS, capability=90, mode=None):
    smax = max(int(scoring.matrix.max()), 0)
    fast = int(np.abs(scoring.matrix).max()) <= 127
    mode = scoring.mode_code if mode is None else mode
    return choose_packed(mode, fast, rows, scoring.gap_open, smax, m, capability)


def test_default_scorings_take_the_16_bit_pass_on_long_global_pairs():
    for alphabet in ("dna", "protein"):
        for rows in PACKED_ROWS:
            assert _rule(make_scoring(alphabet), rows)


def test_the_32_bit_pass_everywhere_else():
    dna = make_scoring("dna")
    assert not _rule(dna, m=PACKED_MIN_ROWS - 1)  # shorter queries: the 32-bit pass is faster
    assert not _rule(dna, capability=80)  # s16x2 DPX instructions are sm_90's
    assert not _rule(dna, rows=6)  # no 16-bit pass at that band height
    assert not _rule(dna, mode=LOCAL) and not _rule(dna, mode=SEMIGLOBAL)
    assert _rule(dna, mode=GLOBAL)
    assert not _rule(make_scoring("dna", match=100, mismatch=-100, gap_open=400, gap_extend=1))  # range
    assert not _rule(make_scoring("dna", match=300, mismatch=-200, gap_open=500, gap_extend=20))  # not bytes


def test_range_bound_leaves_no_room_to_wrap():
    for go in (0, 1, 10, 100, 1000):
        for smax in (0, 5, 11, 127):
            limit = packed_limit(go, smax)
            # twice the limit (the base moves by up to the limit) plus LOOKAHEAD + 2 neighbour steps and
            # the intermediate values' 3 go + smax stay inside int16
            assert 2 * limit + (LOOKAHEAD + 2) * (go + smax) + 3 * go + smax <= 32767 or limit <= 0
    assert packed_spread(16, 10, 5) == (32 * 16 + 64 + 2 * LOOKAHEAD) * 15


def test_packed_band_height_follows_the_measured_best():
    from nwalign.backends.cuda.wavefront import packed_rows

    assert packed_rows(PACKED_MIN_ROWS) == 12 and packed_rows(399_999) == 12
    assert packed_rows(400_000) == 16 and packed_rows(10**6) == 16
    assert all(packed_rows(m) in PACKED_ROWS for m in (PACKED_MIN_ROWS, 10**6))
