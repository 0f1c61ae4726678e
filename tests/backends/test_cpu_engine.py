"""The CPU engine against Biopython, and its tracebacks against their own scores."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nwalign.backends.engine
from nwalign.backends.cpu.pair import align_codes, score_codes, score_rows
from nwalign.backends.engine import Encoded, align_pair
from nwalign.records.alignment import Alignment, rescore
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import Record

from helpers import seed_of
from helpers import DNA, PROTEIN, biopython_aligner, mutate, random_seq

MODES = ["global", "local", "semiglobal"]
GAPS = [(10, 1), (3, 3), (5, 2), (0, 0)]  # affine, linear, affine, free gaps
ALPHABETS = {"dna": DNA, "protein": PROTEIN}


def encoded(scoring, seq, name):
    rec = Record(name, name, seq)
    return Encoded(rec, scoring.encode(rec))


def check_alignment(aln, q, t, scoring):
    """The reported columns rescore to the score and give back the aligned residues."""
    assert rescore(aln, q.codes, t.codes, scoring.matrix, scoring.gap_open, scoring.gap_extend) == aln.score
    qrow, trow = aln.gapped()
    assert qrow.replace("-", "") == q.record.seq[aln.query_start:aln.query_end]
    assert trow.replace("-", "") == t.record.seq[aln.target_start:aln.target_end]
    assert len(qrow) == len(trow) == aln.length
    assert not any(a == "-" and b == "-" for a, b in zip(qrow, trow))
    if scoring.mode == "global":
        assert (aln.query_start, aln.query_end) == (0, len(q.record.seq))
        assert (aln.target_start, aln.target_end) == (0, len(t.record.seq))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("alphabet", ["dna", "protein"])
@pytest.mark.parametrize("gaps", GAPS)
def test_scores_equal_biopython_seeded(mode, alphabet, gaps):
    """Seeded random and related pairs, lengths 1..60 and very unequal lengths."""
    seed = seed_of(mode, alphabet, gaps)
    rng = np.random.default_rng(seed)
    letters = ALPHABETS[alphabet]
    scoring = make_scoring(alphabet, mode, gap_open=gaps[0], gap_extend=gaps[1])
    oracle = biopython_aligner(mode, alphabet, *gaps)
    lengths = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 50), (50, 1), (3, 200), (200, 3)]
    lengths += [tuple(rng.integers(1, 60, size=2)) for _ in range(22)]
    for k, (m, n) in enumerate(lengths):
        a = random_seq(rng, letters, int(m))
        b = mutate(rng, a, letters) if k % 2 and m == n else random_seq(rng, letters, int(n))
        q, t = encoded(scoring, a, "q"), encoded(scoring, b, "t")
        expected = int(oracle.score(a, b))
        assert score_codes(q.codes, t.codes, scoring.matrix, *gaps, scoring.mode_code) == expected, (seed, a, b)
        assert score_rows(q.codes, t.codes, scoring.matrix, *gaps, scoring.mode_code)[0] == expected, (seed, a, b)
        aln = align_pair(q, t, scoring)
        assert aln.score == expected, (seed, a, b)
        check_alignment(aln, q, t, scoring)


@settings(max_examples=150, deadline=None)
@given(
    a=st.text(alphabet=DNA, min_size=1, max_size=40),
    b=st.text(alphabet=DNA, min_size=1, max_size=40),
    mode=st.sampled_from(MODES),
    gap_extend=st.integers(0, 4),
    open_extra=st.integers(0, 10),
    band=st.integers(1, 7),
)
def test_property_dna(a, b, mode, gap_extend, open_extra, band):
    """Hypothesis: score equals Biopython; full-matrix and linear-space tracebacks are both optimal."""
    gap_open = gap_extend + open_extra
    scoring = make_scoring("dna", mode, gap_open=gap_open, gap_extend=gap_extend)
    q, t = encoded(scoring, a, "q"), encoded(scoring, b, "t")
    expected = int(biopython_aligner(mode, "dna", gap_open, gap_extend).score(a, b))
    full = align_pair(q, t, scoring)
    linear = align_pair(q, t, scoring, band_rows=band)
    assert full.score == linear.score == expected
    check_alignment(full, q, t, scoring)
    check_alignment(linear, q, t, scoring)


@settings(max_examples=60, deadline=None)
@given(
    a=st.text(alphabet=PROTEIN, min_size=1, max_size=50),
    b=st.text(alphabet=PROTEIN, min_size=1, max_size=50),
    mode=st.sampled_from(MODES),
    matrix=st.sampled_from(["BLOSUM62", "PAM250", "BLOSUM45"]),
)
def test_property_protein_matrices(a, b, mode, matrix):
    scoring = make_scoring("protein", mode, matrix=matrix)
    q, t = encoded(scoring, a, "q"), encoded(scoring, b, "t")
    oracle = biopython_aligner(mode, "protein", 11, 1, matrix=matrix)
    aln = align_pair(q, t, scoring)
    assert aln.score == int(oracle.score(a, b))
    check_alignment(aln, q, t, scoring)


@pytest.mark.parametrize("mode", MODES)
def test_linear_space_matches_full_matrix_on_longer_pairs(mode):
    """Forced linear space (tiny memory budget) gives the full-matrix score and a valid optimal path."""
    rng = np.random.default_rng(7)
    a = random_seq(rng, DNA, 1500)
    b = mutate(rng, a, DNA, rate=0.15)
    scoring = make_scoring("dna", mode)
    q, t = encoded(scoring, a, "q"), encoded(scoring, b, "t")
    full = align_pair(q, t, scoring)
    small = align_pair(q, t, scoring, max_memory=500_000)  # the 2.3 MB direction matrix does not fit
    assert small.score == full.score == score_codes(q.codes, t.codes, scoring.matrix, 10, 1, scoring.mode_code)
    check_alignment(small, q, t, scoring)


def _local_over_the_whole_matrix(q, t, matrix, go, ge):
    """Smith-Waterman with the direction bytes of every cell, walked back from the first best cell."""
    from nwalign.backends.cpu.dp import fill_band, init_row0, trace_band
    from nwalign.ops import finish_path

    m, n = len(q), len(t)
    H, F = np.empty(n + 1, np.int32), np.empty(n + 1, np.int32)
    init_row0(H, F, 1, go, ge)
    best, dirs = np.zeros(3, np.int64), np.empty((m, n + 1), np.uint8)
    fill_band(q, t, matrix, go, ge, 1, 0, m, n, H, F, dirs, True, best)
    ops = np.empty(m + n, np.uint8)
    i, j, _, nops, _ = trace_band(dirs, 0, int(best[1]), int(best[2]), 0, ops, 0)
    return finish_path(1, int(best[0]), i, int(best[1]), j, int(best[2]), ops, nops)


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_local_alignment_from_its_end_cell_is_the_whole_matrix_traceback(alphabet):
    """A local alignment found by a score pass, a pruned pass back from its end and the traceback of its
    box alone (in bands of 7 rows too) is the alignment, coordinates and columns, that the direction bytes
    of the whole matrix give: related and unrelated pairs, affine, linear and free gaps."""
    scoring = make_scoring(alphabet, "local")
    letters = 4 if alphabet == "dna" else 20
    rng = np.random.default_rng(59)
    for case in range(120):
        go, ge = [(scoring.gap_open, scoring.gap_extend), (3, 1), (1, 1), (6, 0)][case % 4]
        m, n = int(rng.integers(1, 500)), int(rng.integers(1, 800))
        q = rng.integers(0, letters, m).astype(np.uint8)
        t = rng.integers(0, letters, n).astype(np.uint8)
        if case % 2 and n > m:
            at = int(rng.integers(0, n - m + 1))
            t[at:at + m] = q
            t[rng.integers(0, n, 1 + n // 20)] = 0
        want = _local_over_the_whole_matrix(q, t, scoring.matrix, go, ge)
        for band_rows in (None, 7):
            got = align_codes(q, t, scoring.matrix, go, ge, 1, band_rows=band_rows)
            assert got[:5] == want[:5] and np.array_equal(got[5], want[5])


def _peer_matrices(scoring, letters: int):
    """The scoring's matrix over its first ``letters`` letters as Biopython's and parasail's matrices."""
    import parasail
    from Bio.Align import substitution_matrices

    abc, S = scoring.alphabet[:letters], scoring.matrix
    para = parasail.matrix_create(abc, 0, 0)
    for x in range(letters):
        for y in range(letters):
            para[x, y] = int(S[x, y])
    return substitution_matrices.Array(alphabet=abc, dims=2, data=S[:letters, :letters].astype(float)), para


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_glocal_equals_parasail_sg_dx_and_biopython(alphabet):
    """Glocal (the whole query, the target's leading and trailing residues free) on 1,200 random pairs a
    alphabet, related and not, affine, linear and free-extension gaps: the score equals parasail's sg_dx
    (free gaps at both ends of the database sequence; where open > extend) and Biopython's global
    aligner with the target's end deletions free; the alignment holds the whole query, its columns score
    its score, and the linear-space traceback (bands of 7 rows) gives the same alignment."""
    import warnings

    import parasail
    from Bio.Align import PairwiseAligner

    from nwalign.ops import columns_score

    scoring = make_scoring(alphabet, "glocal")
    letters = 4 if alphabet == "dna" else 20
    abc, S = scoring.alphabet[:letters], scoring.matrix
    matrix, para = _peer_matrices(scoring, letters)
    bio = PairwiseAligner(mode="global", substitution_matrix=matrix)
    rng = np.random.default_rng(57)
    for case in range(1200):
        go, ge = [(scoring.gap_open, scoring.gap_extend), (3, 1), (2, 2), (5, 0)][case % 4]
        m, n = int(rng.integers(1, 60)), int(rng.integers(1, 120))
        q = rng.integers(0, letters, m).astype(np.uint8)
        t = rng.integers(0, letters, n).astype(np.uint8)
        if case % 2 and n > m:
            at = int(rng.integers(0, n - m + 1))
            t[at:at + m] = q
            t[rng.integers(0, n, 1 + n // 15)] = 0
        got = align_codes(q, t, S, go, ge, 3)
        assert got[0] == score_codes(q, t, S, go, ge, 3) == score_rows(q, t, S, go, ge, 3)[0]
        assert (got[1], got[2]) == (0, m) and columns_score(got[5], q, t[got[3]:], S, go, ge) == got[0]
        banded = align_codes(q, t, S, go, ge, 3, band_rows=7)
        assert banded[:5] == got[:5] and np.array_equal(banded[5], got[5])
        qs, ts = "".join(abc[c] for c in q), "".join(abc[c] for c in t)
        bio.open_gap_score, bio.extend_gap_score = -go, -ge
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bio.end_deletion_score = 0  # the target's residues before and after the alignment
        assert bio.score(ts, qs) == got[0]
        if go > ge:
            assert parasail.sg_dx_scan_32(qs, ts, go, ge, para).score == got[0]


PARASAIL_ENDS = {1: "sg_qb", 2: "sg_qe", 3: "sg_qx", 4: "sg_db", 8: "sg_de", 12: "sg_dx", 5: "sg_qb_db",
                 9: "sg_qb_de", 6: "sg_qe_db", 10: "sg_qe_de", 15: "sg"}  # parasail's names of the free-end sets


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_every_set_of_free_ends_equals_parasail_and_biopython(alphabet):
    """Each of the 16 sets of free ends (mode codes FREE_ENDS + bits; 70 random pairs each, affine, linear
    and free-extension gaps): the score equals parasail's sg_* variant where it has one (open > extend), and
    Biopython's global aligner with those ends' insertion or deletion scores 0 where at most one end a side
    is free (with both, Biopython also lets an alignment end in gaps of both sequences at once), wherever
    the best alignment has a residue pair (one of gaps alone, or of nothing, is where the three differ:
    nwalign counts a path along row 0 or column 0 to a free end as parasail's sg does, its one-sided
    variants and Biopython differ among themselves there); the alignment keeps
    every residue of the ends that are not free, its columns score its score, and the banded traceback is
    the same alignment."""
    import warnings

    import parasail
    from Bio.Align import PairwiseAligner

    from nwalign.ops import FREE_ENDS, QUERY_END, QUERY_START, TARGET_END, TARGET_START, columns_score

    scoring = make_scoring(alphabet, "global")
    letters = 4 if alphabet == "dna" else 20
    abc, S = scoring.alphabet[:letters], scoring.matrix
    matrix, para = _peer_matrices(scoring, letters)
    rng = np.random.default_rng(58)
    for mask in range(16):
        mode = FREE_ENDS + mask
        for case in range(70):
            go, ge = [(scoring.gap_open, scoring.gap_extend), (3, 1), (2, 2), (5, 0)][case % 4]
            m, n = int(rng.integers(1, 50)), int(rng.integers(1, 80))
            q = rng.integers(0, letters, m).astype(np.uint8)
            t = rng.integers(0, letters, n).astype(np.uint8)
            if case % 2:
                k = min(m, n)
                t[n - k:] = q[:k] if case % 4 == 1 else q[m - k:]
            got = align_codes(q, t, S, go, ge, mode)
            assert got[0] == score_codes(q, t, S, go, ge, mode) == score_rows(q, t, S, go, ge, mode)[0]
            qs, qe, ts, te = got[1:5]
            assert (mask & QUERY_START or qs == 0) and (mask & QUERY_END or qe == m)
            assert (mask & TARGET_START or ts == 0) and (mask & TARGET_END or te == n)
            assert columns_score(got[5], q[qs:], t[ts:], S, go, ge) == got[0]
            banded = align_codes(q, t, S, go, ge, mode, band_rows=7)
            assert banded[:5] == got[:5] and np.array_equal(banded[5], got[5])
            bio = PairwiseAligner(mode="global", substitution_matrix=matrix, open_gap_score=-go, extend_gap_score=-ge)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for bit, name in ((QUERY_START, "left_insertion_score"), (QUERY_END, "right_insertion_score"),
                                  (TARGET_START, "left_deletion_score"), (TARGET_END, "right_deletion_score")):
                    if mask & bit:
                        setattr(bio, name, 0)
            qstr, tstr = "".join(abc[c] for c in q), "".join(abc[c] for c in t)
            one_a_side = (mask & 5) != 5 and (mask & 10) != 10
            pairs = bool((got[5] == 0).any())  # an alignment of gaps alone: the corner cases the three differ on
            if one_a_side and pairs:  # Biopython also ends an alignment in gaps of both sequences at once
                assert bio.score(tstr, qstr) == got[0], (mask, case)
            if go > ge and mask in PARASAIL_ENDS and pairs:
                fn = getattr(parasail, PARASAIL_ENDS[mask] + "_scan_32")
                assert fn(qstr, tstr, go, ge, para).score == got[0], (mask, case)


def test_memory_budget_too_small_is_a_clear_error():
    scoring = make_scoring("dna")
    q = encoded(scoring, "ACGT" * 500, "q")
    with pytest.raises(nwalign.backends.engine.NwalignError, match="max_memory"):
        align_pair(q, q, scoring, max_memory=1000)


def test_local_empty_alignment():
    """No positive cell: score 0 and an empty alignment, as Biopython scores it."""
    scoring = make_scoring("dna", "local")
    q, t = encoded(scoring, "AAAA", "q"), encoded(scoring, "CCCC", "t")
    aln = align_pair(q, t, scoring)
    assert aln.score == 0 and aln.length == 0 and aln.cigar() == ""


def test_long_scores_beyond_float32_range_use_integer_path():
    """Scores too large for exact float32 fall back to the integer kernel and still agree."""
    rng = np.random.default_rng(3)
    a = random_seq(rng, DNA, 300)
    b = mutate(rng, a, DNA)
    scoring = make_scoring("dna", "global", match=30000, mismatch=-20000, gap_open=25000, gap_extend=100)
    q, t = encoded(scoring, a, "q"), encoded(scoring, b, "t")
    oracle = biopython_aligner("global", "dna", 25000, 100, match=30000, mismatch=-20000)
    assert score_codes(q.codes, t.codes, scoring.matrix, 25000, 100, 0) == int(oracle.score(a, b))


def test_align_codes_ops_are_consistent():
    scoring = make_scoring("dna", "global")
    q, t = encoded(scoring, "GATTACA", "q"), encoded(scoring, "GCATGCT", "t")
    score, qs, qe, ts, te, ops = align_codes(q.codes, t.codes, scoring.matrix, 10, 1, 0)
    assert (qs, qe, ts, te) == (0, 7, 0, 7)
    assert int((ops != 2).sum()) == 7 and int((ops != 1).sum()) == 7


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("band_rows", [None, 97])
def test_progress_reporting_changes_nothing(mode, band_rows):
    """With a progress callback the traceback runs in chunks of rows (full matrix) or reports per band
    (linear space): the same alignment, and fractions that rise to 1."""
    from nwalign.backends.cpu import align_codes
    from nwalign.scoring.schemes import make_scoring

    rng = np.random.default_rng(mode + 7)
    q = rng.integers(0, 4, 1500).astype(np.uint8)
    t = np.concatenate([q[:700], rng.integers(0, 4, 50).astype(np.uint8), q[760:]])
    s = make_scoring("dna", "global")
    seen = []
    plain = align_codes(q, t, s.matrix, 10, 1, mode, band_rows=band_rows)
    shown = align_codes(q, t, s.matrix, 10, 1, mode, band_rows=band_rows, progress=seen.append)
    assert plain[:5] == shown[:5] and np.array_equal(plain[5], shown[5])
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 2


def test_columns_score_equals_rescore():
    """ops.columns_score (the GPU windowed traceback's check) agrees with the loop oracle, and refuses
    columns that run past a sequence."""
    from nwalign.ops import columns_score
    from nwalign.records.alignment import rescore

    rng = np.random.default_rng(5)
    scoring = make_scoring("dna")
    for m, n in [(1, 1), (40, 3), (300, 280), (1000, 1100)]:
        a = random_seq(rng, DNA, m)
        b = (mutate(rng, a, DNA, rate=0.2) + random_seq(rng, DNA, n))[:n]
        q, t = scoring.encode_str(a), scoring.encode_str(b)
        enc = [Encoded(Record(x, x, s), scoring.encode(Record(x, x, s))) for x, s in (("q", a), ("t", b))]
        aln = align_pair(enc[0], enc[1], scoring)
        assert columns_score(aln.ops, q, t, scoring.matrix, 10, 1) == aln.score
        assert columns_score(aln.ops, q, t, scoring.matrix, 10, 1) == rescore(aln, q, t, scoring.matrix, 10, 1)
    with pytest.raises(ValueError, match="past the end"):
        columns_score(np.zeros(3, dtype=np.uint8), q[:2], t, scoring.matrix, 10, 1)


@pytest.mark.parametrize("alphabet, mode", [("dna", "global"), ("dna", "local"), ("protein", "local"),
                                            ("protein", "semiglobal")])
def test_column_stats_of_many_alignments_equal_one_at_a_time(alphabet, mode):
    """results.column_stats_many (a search's hits of one query together) gives each alignment exactly what
    column_stats gives it: columns, identities (ambiguity codes never identical), positives, gaps, gap
    opens (a run never continues into the next alignment), from any start in query and target."""
    from nwalign.backends.cpu import align_codes
    from nwalign.records.alignment import column_stats, column_stats_many

    rng = np.random.default_rng(3)
    scoring = make_scoring(alphabet, mode)
    letters = (DNA + "NRY") if alphabet == "dna" else (PROTEIN + "XB")
    query = random_seq(rng, letters, 300)
    q = scoring.encode_str(query)
    targets, paths = [], []
    for _ in range(12):
        piece = query[rng.integers(0, 100):rng.integers(150, 300)]
        t = scoring.encode_str(random_seq(rng, letters, int(rng.integers(0, 30))) + mutate(rng, piece, letters, 0.15) +
                               random_seq(rng, letters, int(rng.integers(0, 30))))
        targets.append(t)
        paths.append(align_codes(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend, scoring.mode_code))
    many = column_stats_many(paths, q, targets, scoring)
    assert sum(d["gap_opens"] for d in many) > 0 and sum(d["nident"] for d in many) > 0
    for path, t, got in zip(paths, targets, many):
        want = column_stats(path[5], q, t, path[1], path[3], scoring)
        assert set(got) == set(want)
        for key in want:
            assert np.array_equal(np.asarray(got[key]), np.asarray(want[key])), key


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_column_stats_of_a_long_alignment_in_pieces_equal_one_pass(alphabet, monkeypatch):
    """A genome-length alignment's statistics, cut into pieces computed on threads, equal one NumPy pass
    over all its columns: gap runs that cross a cut (and one at the very cut) are counted once, the pieces
    start at the residues the columns before them used, ambiguity codes are never identities."""
    from nwalign.records import alignment as records

    monkeypatch.setattr(records, "_THREADED_FROM", 4000)
    monkeypatch.setattr(records, "_PIECE", 1000)
    monkeypatch.setattr(records.os, "cpu_count", lambda: 4)
    rng = np.random.default_rng(seed_of("pieces", alphabet))
    scoring = make_scoring(alphabet, "global")
    n = 10_001
    ops = rng.choice(np.array([0, 1, 2], dtype=np.uint8), n, p=[0.8, 0.1, 0.1])
    ops[2400:2600] = 1  # across the cut at 2,500
    ops[4999:5001] = 2  # one column either side of the cut at 5,000
    q = scoring.encode_str(random_seq(rng, (DNA + "N") if alphabet == "dna" else (PROTEIN + "X"),
                                      int(np.count_nonzero(ops != 2)) + 5))
    t = scoring.encode_str(random_seq(rng, DNA if alphabet == "dna" else PROTEIN, int(np.count_nonzero(ops != 1)) + 3))
    got = records.column_stats(ops, q, t, 5, 3, scoring)
    want = records._numpy_stats(ops, q, t, 5, 3, scoring)
    assert set(got) == set(want) and want["gap_opens"] > 100
    for key in want:
        assert np.array_equal(np.asarray(got[key]), np.asarray(want[key])), key


def test_columns_score_in_pieces_equals_one_pass(monkeypatch):
    """ops.columns_score cut into pieces on threads (a genome-length traceback's check) equals the
    column-by-column rescoring, with gap runs across the cuts, and still refuses columns past an end."""
    from nwalign import ops as ops_module
    from nwalign.ops import columns_score

    monkeypatch.setattr(ops_module, "_PIECE", 500)
    monkeypatch.setattr(ops_module.os, "cpu_count", lambda: 4)
    rng = np.random.default_rng(seed_of("score pieces"))
    scoring = make_scoring("protein", "global")
    ops = rng.choice(np.array([0, 1, 2], dtype=np.uint8), 4003, p=[0.8, 0.1, 0.1])
    ops[950:1100] = 2  # across the cut at 1,000
    q = scoring.encode_str(random_seq(rng, PROTEIN, int(np.count_nonzero(ops != 2))))
    t = scoring.encode_str(random_seq(rng, PROTEIN, int(np.count_nonzero(ops != 1))))
    aln = Alignment(query_id="q", target_id="t", mode="global", score=0, query_length=len(q), target_length=len(t),
                    query_start=0, target_start=0, ops=ops)
    assert columns_score(ops, q, t, scoring.matrix, 11, 1) == rescore(aln, q, t, scoring.matrix, 11, 1)
    with pytest.raises(ValueError, match="past the end"):
        columns_score(ops, q[:-1], t, scoring.matrix, 11, 1)
