"""Every local alignment of a subject (--max-hsps; Waterman-Eggert alternatives) and the per-alignment
filters: blastn's HSPs of a fragment planted three times and SSEARCH36's alternatives of a repeated
protein (recorded by tests/data/hsps/make.sh), the alternatives' own rules against a full recomputation,
and each filter at equality."""

import os

import numpy as np
import pytest

from nwalign.cli import main

from helpers import ROOT

HSPS = os.path.join(ROOT, "tests", "data", "hsps")
FRAGMENT, PLANTED = os.path.join(HSPS, "fragment.fa"), os.path.join(HSPS, "planted.fa")
REPEAT_Q, REPEAT_S = os.path.join(HSPS, "repeat_query.fa"), os.path.join(HSPS, "repeat_subject.fa")


def _rows(capsys, argv) -> list[list[str]]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return [line.split("\t") for line in out.splitlines()]


def _table(name: str) -> list[list[str]]:
    with open(os.path.join(HSPS, name)) as handle:
        return [line.rstrip("\n").split("\t") for line in handle]


@pytest.mark.parametrize("path", ["cpu", "workers", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_fragment_planted_three_times_gives_blastns_three_hsps(capsys, path):
    """Two plus-strand copies and one minus-strand copy (mutated) in 60 kb: the three rows blastn reports
    at E <= 1e-10, with its scores, coordinates and strands (blastn's +2/-3 with gaps 5/2: --gap-open 7)."""
    extra = {"cpu": ["--backend", "cpu"], "workers": ["--backend", "cpu", "--workers", "2"],
             "gpu": ["--backend", "cuda"]}[path]
    got = _rows(capsys, ["search", FRAGMENT, PLANTED, "--gap-open", "7", "--gap-extend", "2", "--max-evalue",
                         "1e-10", "--columns", "qseqid,sseqid,score,evalue,qstart,qend,sstart,send,sstrand"] + extra)
    want = _table("blastn_planted.tsv")
    assert [[r[2]] + r[4:] for r in got] == [[r[2]] + r[4:] for r in want]
    assert _rows(capsys, ["search", FRAGMENT, PLANTED, "--gap-open", "7", "--gap-extend", "2", "--max-hsps", "2",
                          "--columns", "score"] + extra) == [["945"], ["920"]]


def test_ssearch_alternatives_are_reported_with_their_coordinates(capsys):
    """SSEARCH36's Waterman-Eggert alternatives of a protein held twice in a subject (BLOSUM62, -f 11 -g 1:
    --gap-open 12): each of its rows is one of nwalign's, in the same order, with the same coordinates and
    identity."""
    got = _rows(capsys, ["search", REPEAT_Q, REPEAT_S, "--gap-open", "12", "--gap-extend", "1", "--backend",
                         "cpu"])
    want = _table("ssearch_repeats.tsv")
    spans = [tuple(r[6:10]) for r in got]
    found = [spans.index(tuple(r[6:10])) for r in want]
    assert found == sorted(found) and found[:2] == [0, 1]
    for r, k in zip(want, found):
        assert round(float(got[k][2]), 2) == float(r[2])


def _reference_alternatives(q, t, S, go: int, ge: int, most: int) -> list:
    """Waterman-Eggert alternatives written out cell by cell: Gotoh's local recurrence over the whole
    matrix with each earlier alignment's residue pairs barred from the diagonal step, the engine's tie
    rules (diagonal, then E, then F; a gap opened on a tie; the first best cell in row order), and its
    traceback."""
    m, n, neg = len(q), len(t), -(1 << 30)
    paths, barred = [], set()
    while len(paths) < most:
        H = np.zeros((m + 1, n + 1), np.int64)
        E = np.full((m + 1, n + 1), neg, np.int64)
        F = np.full((m + 1, n + 1), neg, np.int64)
        src, e_ext, f_ext = {}, {}, {}
        best = (0, 0, 0)
        for i in range(1, m + 1):
            for j in range(1, n + 1):
                f_ext[i, j] = F[i - 1, j] - ge > H[i - 1, j] - go
                F[i, j] = max(H[i - 1, j] - go, F[i - 1, j] - ge)
                e_ext[i, j] = E[i, j - 1] - ge > H[i, j - 1] - go
                E[i, j] = max(H[i, j - 1] - go, E[i, j - 1] - ge)
                h, where = (neg if (i, j) in barred else H[i - 1, j - 1] + S[q[i - 1], t[j - 1]]), "diag"
                if E[i, j] > h:
                    h, where = E[i, j], "E"
                if F[i, j] > h:
                    h, where = F[i, j], "F"
                if h <= 0:
                    h, where = 0, "start"
                elif h > best[0]:
                    best = (int(h), i, j)
                H[i, j], src[i, j] = h, where
        score, i, j = best
        if score <= 0:
            return paths
        ops, state = [], "H"
        while i > 0 and j > 0:
            if state == "H":
                if src[i, j] == "start":
                    break
                if src[i, j] == "diag":
                    ops.append(0)
                    i, j = i - 1, j - 1
                else:
                    state = src[i, j]
            elif state == "E":
                ops.append(2)
                state = "E" if e_ext[i, j] else "H"
                j -= 1
            else:
                ops.append(1)
                state = "F" if f_ext[i, j] else "H"
                i -= 1
        ops = np.array(ops[::-1], np.uint8)
        path = (score, i, best[1], j, best[2], ops)
        rows = i + np.cumsum(ops != 2)
        cols = j + np.cumsum(ops != 1)
        barred |= set(zip(rows[ops == 0].tolist(), cols[ops == 0].tolist()))
        paths.append(path)
    return paths


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_alternatives_equal_the_recurrence_written_out_and_share_no_residue_pair(alphabet):
    """Each alternative (one vectorised score pass with the earlier pairs barred, then the traceback of
    the alignment's own box) equals the recurrence written out cell by cell over the whole matrix, with
    affine, linear and free gaps; the first is the CPU engine's Smith-Waterman alignment; scores never
    rise; no two alternatives align the same residue pair; each one's columns score what it says."""
    from nwalign.backends.cpu import alternatives
    from nwalign.backends.cpu.pair import align_codes
    from nwalign.ops import OP_DEL, OP_INS, OP_MATCH, columns_score
    from nwalign.scoring.schemes import make_scoring

    scoring = make_scoring(alphabet, "local")
    letters = 4 if alphabet == "dna" else 20
    rng = np.random.default_rng(56)
    for case in range(36):
        go, ge = [(scoring.gap_open, scoring.gap_extend), (3, 1), (2, 2), (4, 0)][case % 4]
        m = int(rng.integers(3, 30))
        n = int(rng.integers(m + 1, 160))
        q = rng.integers(0, letters, m).astype(np.uint8)
        t = rng.integers(0, letters, n).astype(np.uint8)
        for _ in range(int(rng.integers(0, 4))):
            at = int(rng.integers(0, n - m + 1))
            t[at:at + m] = q
        got = alternatives.alternative_paths(q, t, scoring.matrix, go, ge, [], lambda score: True, 5)
        want = _reference_alternatives(q, t, scoring.matrix, go, ge, 5)
        assert [p[:5] for p in got] == [p[:5] for p in want]
        assert all(np.array_equal(a[5], b[5]) for a, b in zip(got, want))
        if got:
            first = align_codes(q, t, scoring.matrix, go, ge, 1)
            assert got[0][:5] == first[:5] and np.array_equal(got[0][5], first[5])
        assert [p[0] for p in got] == sorted((p[0] for p in got), reverse=True)
        seen = set()
        for score, qs, _, ts, _, ops in got:
            assert columns_score(ops, q[qs:], t[ts:], scoring.matrix, go, ge) == score
            rows = qs + np.cumsum(ops != OP_DEL)
            cols = ts + np.cumsum(ops != OP_INS)
            pairs = set(zip(rows[ops == OP_MATCH].tolist(), cols[ops == OP_MATCH].tolist()))
            assert not pairs & seen
            seen |= pairs


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_the_kept_matrix_and_a_pass_per_alignment_give_the_same_alternatives(monkeypatch, alphabet):
    """From the third alternative on, a pair's matrix is kept and only the cells a new alignment changes
    are recomputed; with no matrix kept, each alternative is a score pass and its box. Both give the same
    alignments on pairs with up to five copies of the query (affine, linear and free gaps)."""
    from nwalign.backends.cpu import alternatives
    from nwalign.scoring.schemes import make_scoring

    scoring = make_scoring(alphabet, "local")
    letters = 4 if alphabet == "dna" else 20
    rng = np.random.default_rng(11)
    for case in range(40):
        go, ge = [(scoring.gap_open, scoring.gap_extend), (3, 1), (2, 2), (5, 0)][case % 4]
        m = int(rng.integers(5, 300))
        n = int(rng.integers(m + 1, 1200))
        q = rng.integers(0, letters, m).astype(np.uint8)
        t = rng.integers(0, letters, n).astype(np.uint8)
        for _ in range(int(rng.integers(0, 6))):
            at = int(rng.integers(0, n - m + 1))
            t[at:at + m] = q
            t[rng.integers(0, n, 3)] = 0
        kept = alternatives.alternative_paths(q, t, scoring.matrix, go, ge, [], lambda score: True, 12)
        monkeypatch.setattr(alternatives.StoredMatrix, "BYTES", 0)
        passes = alternatives.alternative_paths(q, t, scoring.matrix, go, ge, [], lambda score: True, 12)
        monkeypatch.undo()
        assert [p[:5] for p in kept] == [p[:5] for p in passes]
        assert all(np.array_equal(a[5], b[5]) for a, b in zip(kept, passes))


def test_max_hsps_caps_each_subject_and_the_default_cut_is_an_evalue_of_10(capsys):
    base = ["search", REPEAT_Q, REPEAT_S, "--gap-open", "12", "--gap-extend", "1", "--backend", "cpu", "--columns",
            "sseqid,score,evalue"]
    every = _rows(capsys, base)
    assert len(every) > 3 and all(float(r[2]) <= 10 for r in every)
    assert _rows(capsys, base + ["--max-hsps", "3"]) == every[:3]
    beyond = _rows(capsys, base + ["--max-evalue", "30"])
    assert beyond[:len(every)] == every and any(10 < float(r[2]) <= 30 for r in beyond[len(every):])
    assert _rows(capsys, base + ["--max-evalue", "inf"]) == every[:1]  # no cut: the best alignment alone


def test_sam_marks_a_querys_later_alignments_secondary(tmp_path):
    """The first alignment of a query is its primary SAM line, the others flag 256, read back with pysam."""
    import pysam

    sam = tmp_path / "hits.sam"
    assert main(["search", FRAGMENT, PLANTED, "--gap-open", "7", "--gap-extend", "2", "--max-evalue", "1e-10",
                 "--format", "sam", "-o", str(sam)]) == 0
    with pysam.AlignmentFile(str(sam), "r") as reader:
        got = [(r.is_secondary, r.is_reverse, r.reference_start) for r in reader]
    assert got == [(False, False, 8000), (True, True, 47000), (True, False, 30000)]


@pytest.mark.parametrize("option, value", [("--min-identity", lambda r: int(r["nident"]) / int(r["length"])),
                                           ("--query-cover", lambda r: 100.0 * (int(r["qend"]) - int(r["qstart"]) + 1)
                                            / int(r["qlen"])),
                                           ("--subject-cover", lambda r: 100.0 * (int(r["send"]) - int(r["sstart"]) + 1)
                                            / int(r["slen"]))])
def test_each_filter_keeps_an_alignment_at_exactly_its_bound(capsys, option, value):
    """An alignment whose identity or coverage equals the bound passes it; the next number above fails it."""
    cols = "sseqid,qstart,qend,sstart,send,nident,length,qlen,slen"
    base = ["search", REPEAT_Q, REPEAT_S, "--gap-open", "12", "--gap-extend", "1", "--backend", "cpu", "--columns",
            cols]
    rows = [dict(zip(cols.split(","), r)) for r in _rows(capsys, base)]
    second = rows[1]
    bound = value(second)
    kept = _rows(capsys, base + [option, repr(bound)])
    assert list(second.values()) in kept
    above = _rows(capsys, base + [option, repr(float(np.nextafter(bound, np.inf)))])
    assert list(second.values()) not in above


@pytest.mark.parametrize("argv, words", [(["--min-identity", "90"], ["--min-identity 90.0", "0.9"]),
                                         (["--query-cover", "101"], ["--query-cover 101.0", "percentage"]),
                                         (["--subject-cover", "-1"], ["--subject-cover -1.0", "percentage"]),
                                         (["--max-hsps", "0"], ["--max-hsps"])])
def test_filters_out_of_range_are_one_line(capsys, argv, words):
    code = main(["search", REPEAT_Q, REPEAT_S, "--backend", "cpu"] + argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and all(w in err for w in words), err


@pytest.mark.gpu
def test_every_alignment_of_a_subject_is_the_same_on_the_gpu_resident_streamed_and_the_cpu(tmp_path, monkeypatch):
    """The default report (every alignment with E-value <= 10) of 25 queries against a database of tied
    copies: the CPU engine's rows, on a resident and on a streamed GPU database."""
    from nwalign import search
    from nwalign.backends.cuda import streamed
    from nwalign.io.sequences import read_fasta

    from helpers import DATA, search_rows, tied_ecoli_nwdb

    db = tied_ecoli_nwdb(tmp_path, 3)
    queries = read_fasta(os.path.join(DATA, "queries_5_opal.fasta")) + \
        read_fasta(os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz"))[:20]
    want = search_rows(search(queries, db, top=12, backend="cpu"))
    assert len(want) > len({r[:2] for r in want})  # subjects with a second alignment
    assert search_rows(search(queries, db, top=12, backend="cuda", devices="0")) == want
    monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
    monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 14)
    job = search(queries, db, top=12, backend="cuda", gpu_memory="3M", devices="0")
    assert job.streamed and search_rows(job) == want


def test_pair_max_hsps_gives_the_alternatives_search_gives(capsys):
    """`pair --mode local --max-hsps N`: the N best alignments of the pair, as search reports the subject's,
    on both strands with --strand both."""
    cols = "score,qstart,qend,sstart,send"
    scoring = ["--gap-open", "12", "--gap-extend", "1", "--backend", "cpu"]
    searched = _rows(capsys, ["search", REPEAT_Q, REPEAT_S, "--max-hsps", "4", "--columns", cols] + scoring)
    paired = _rows(capsys, ["pair", REPEAT_Q, REPEAT_S, "--mode", "local", "--max-hsps", "4", "--format", "tsv",
                            "--columns", cols] + scoring)
    assert paired == searched and len(paired) == 4
    dna = _rows(capsys, ["pair", FRAGMENT, PLANTED, "--mode", "local", "--strand", "both", "--max-hsps", "3",
                         "--gap-open", "7", "--gap-extend", "2", "--match", "2", "--mismatch", "-3", "--format", "tsv",
                         "--columns", "score,sstart,send,sstrand"])
    assert dna == [[r[2], r[6], r[7], r[8]] for r in _table("blastn_planted.tsv")]


@pytest.mark.parametrize("argv, words", [(["--max-hsps", "2"], ["--max-hsps 2", "--mode local"]),
                                         (["--mode", "local", "--max-hsps", "2", "--score-only"], ["--score-only"])])
def test_pair_max_hsps_outside_local_alignments_is_one_line(capsys, argv, words):
    code = main(["pair", REPEAT_Q, REPEAT_S] + argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and all(w in err for w in words), err


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_the_batched_first_pass_gives_each_pairs_score_pass(alphabet):
    """engine.next_alternative_scores: many pairs of different lengths in one call, each with its first
    alignment's pairs barred (or none), give the best score of anchored.end_cell's pass over that pair
    (affine, linear and free gaps; pairs with copies of the query, so that second alignments exist)."""
    from nwalign.backends.cpu import alternatives
    from nwalign.backends.cpu.anchored import Barred, end_cell
    from nwalign.backends.engine import Encoded, next_alternative_scores
    from nwalign.io.sequences import Record
    from nwalign.records.alignment import Alignment
    from nwalign.scoring.schemes import make_scoring

    letters = 4 if alphabet == "dna" else 20
    rng = np.random.default_rng(7)
    for go, ge in [(None, None), (3, 1), (2, 2), (4, 0)]:
        scoring = make_scoring(alphabet, "local", gap_open=go, gap_extend=ge)
        S, go, ge = scoring.matrix, scoring.gap_open, scoring.gap_extend
        q = rng.integers(0, letters, int(rng.integers(3, 60))).astype(np.uint8)
        targets, firsts, want = [], [], []
        for k in range(12):
            t = rng.integers(0, letters, int(rng.integers(1, 200))).astype(np.uint8)
            for _ in range(int(rng.integers(0, 3))):
                if len(t) > len(q):
                    at = int(rng.integers(0, len(t) - len(q) + 1))
                    t[at:at + len(q)] = q
            paths = alternatives.alternative_paths(q, t, S, go, ge, [], lambda score: True, 1) if k % 4 else []
            firsts.append(Alignment(query_id="q", target_id="t", mode="local", score=paths[0][0], query_length=len(q),
                                    target_length=len(t),
                                    query_start=paths[0][1], query_end=paths[0][2], target_start=paths[0][3],
                                    target_end=paths[0][4], ops=paths[0][5]) if paths else None)
            want.append(end_cell(q, t, S, go, ge, Barred(len(q), len(t), paths).by_row()).score)
            targets.append(t)
        got = next_alternative_scores(Encoded(Record("q", "", ""), q), targets, scoring, firsts)
        assert got.tolist() == want
        assert any(f is not None and w > 0 for f, w in zip(firsts, want))


PROTEIN_SEARCH = ["search", REPEAT_Q, REPEAT_S, "--max-evalue", "1e-3", "--columns",
                  "qseqid,sseqid,score,qstart,qend,sstart,send,evalue,qcovs"]
SWISSPROT_SEARCH = ["search", os.path.join(ROOT, "data", "queries_5_opal.fasta"),
                    os.path.join(ROOT, "data", "swissprot_first196.fasta"), "--top", "40", "--max-evalue", "100"]
DNA_SEARCH = ["search", FRAGMENT, PLANTED, "--columns", "qseqid,sseqid,score,qstart,qend,sstart,send,sstrand,evalue,qcovs"]


@pytest.mark.parametrize("argv", [PROTEIN_SEARCH, PROTEIN_SEARCH + ["--max-hsps", "2"], DNA_SEARCH,
                                  DNA_SEARCH + ["--strand", "minus"], SWISSPROT_SEARCH])
def test_subjects_settled_by_the_batched_pass_report_what_each_subjects_own_passes_report(capsys, monkeypatch, argv):
    """results.hsps: a query's subjects whose next alignment the batched pass shows cannot be kept get
    their best row at once; the rows are those of every subject taking its own passes (the batched pass
    made to settle none), on one strand and both."""
    import nwalign.results.hsps as hsps

    settled = []
    best_only = hsps._best_only
    monkeypatch.setattr(hsps, "_best_only", lambda *args: settled.append(1) or best_only(*args))
    batched = _rows(capsys, argv + ["--backend", "cpu"])
    assert settled or argv is not SWISSPROT_SEARCH  # most subjects there have one alignment
    monkeypatch.setattr(hsps, "next_alternative_scores",
                        lambda query, targets, scoring, firsts: np.full(len(targets), 1 << 20, dtype=np.int64))
    each = _rows(capsys, argv + ["--backend", "cpu"])
    assert batched == each and len(batched) >= 2
