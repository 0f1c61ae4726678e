"""Nucleotide ambiguity codes as NCBI BLAST scores them, and the identity rule:
BLAST's table, the CPU engine against parasail with the same 15 x 15 matrix in every mode, identities
never counted for ambiguity codes (or X), X read as N, and the allpairs filter with the new rule."""

import numpy as np
import pytest

import nwalign
from nwalign.jobs.allpairs.run import run
from nwalign.backends.cpu import score_codes
from nwalign.backends.engine import encode_all
from nwalign.scoring.schemes import NUCLEOTIDE_BASES, NUCLEOTIDE_CODES, blast_nucleotide_matrix, make_scoring
from nwalign.io.sequences import Record

from helpers import DNA_IUPAC, mutate, random_seq


def _score(matrix, a, b):
    return int(matrix[NUCLEOTIDE_CODES.index(a), NUCLEOTIDE_CODES.index(b)])


def test_blast_table_for_the_defaults_and_for_blastn_1_2():
    m = blast_nucleotide_matrix(5, -4)
    assert np.array_equal(m, m.T) and m.dtype == np.int32 and m.shape == (15, 15)
    # the examples (NCBI BLAST with +5/-4)
    assert [_score(m, a, b) for a, b in [("A", "N"), ("N", "N"), ("A", "R"), ("R", "R"), ("R", "Y"), ("C", "B")]] \
        == [-2, -2, 1, 1, -4, -1]
    assert [_score(m, b, b) for b in "ACGT"] == [5] * 4 and _score(m, "A", "C") == -4
    assert _score(m, "W", "S") == -4 and _score(m, "B", "V") == -1 and _score(m, "D", "R") == -1
    # blastn's +1/-2: A/N = N/N = round(-5/4) = -1, A/R = R/R = round(-1/2) = -1 (halves away from zero)
    m12 = blast_nucleotide_matrix(1, -2)
    assert [_score(m12, a, b) for a, b in [("A", "N"), ("A", "R"), ("R", "R"), ("N", "N"), ("A", "A")]] \
        == [-1, -1, -1, -1, 1]
    # codes without a common base score the mismatch, whatever their degeneracy
    for a in NUCLEOTIDE_CODES:
        for b in NUCLEOTIDE_CODES:
            if not set(NUCLEOTIDE_BASES[a]) & set(NUCLEOTIDE_BASES[b]):
                assert _score(m, a, b) == -4


def test_default_dna_scoring_reads_x_as_n_and_u_as_t():
    scoring = make_scoring("dna", "global")
    assert scoring.alphabet == NUCLEOTIDE_CODES
    assert np.array_equal(scoring.encode_str("acgtuxn"), scoring.encode_str("ACGTTNN"))
    assert nwalign.align("ACGXT", "ACGNT", alphabet="dna").score == nwalign.align("ACGNT", "ACGNT", alphabet="dna").score


@pytest.mark.parametrize("mode, function", [("global", "nw_scan_32"), ("local", "sw_scan_32"),
                                            ("semiglobal", "sg_scan_32")])
def test_cpu_engine_equals_parasail_with_the_same_matrix(mode, function):
    parasail = pytest.importorskip("parasail")
    table = blast_nucleotide_matrix(5, -4)
    matrix = parasail.matrix_create(NUCLEOTIDE_CODES, 0, 0)
    for i in range(15):
        for j in range(15):
            matrix.set_value(i, j, int(table[i, j]))
    scoring = make_scoring("dna", mode)
    align = getattr(parasail, function)
    rng = np.random.default_rng(7)
    for k in range(60):
        a = random_seq(rng, DNA_IUPAC, int(rng.integers(1, 300)))
        b = mutate(rng, a, DNA_IUPAC, rate=0.3) if k % 2 else random_seq(rng, DNA_IUPAC, int(rng.integers(1, 300)))
        b = b or "N"
        want = align(a, b, 10, 1, matrix).score
        assert score_codes(scoring.encode_str(a), scoring.encode_str(b), scoring.matrix, 10, 1,
                           scoring.mode_code) == want, (a, b)
        assert nwalign.align(a, b, mode=mode, alphabet="dna").score == want


def test_identity_never_counts_ambiguity_codes():
    seq = "ACGTAC" + "N" * 20 + "GTACGT"
    aln = nwalign.align(seq, seq, alphabet="dna")
    assert aln.score == 12 * 5 + 20 * -2
    assert (aln.nident, aln.length, aln.mismatch) == (12, 32, 20)
    assert aln.identity < 1 and aln.cigar() == "6=20X6="
    # ambiguity codes that match exactly are not identities either, and nor is X in protein
    assert nwalign.align("ACRYGT", "ACRYGT", alphabet="dna").nident == 4
    prot = nwalign.align("MKXXLV", "MKXXLV", alphabet="protein")
    assert prot.nident == 4 and prot.cigar() == "2=2X2="
    # U, O, J are scored as X; B and Z stand for two amino acids: none is an identity
    rare = nwalign.align("MKVUUUUAWE", "MKVOOOOAWE", alphabet="protein")
    assert rare.nident == 6 and rare.cigar() == "3=4X3="
    assert nwalign.align("MKBZLV", "MKBZLV", alphabet="protein").nident == 4


def test_pair_output_identity_line_follows_the_rule(tmp_path, capsys):
    from nwalign.cli import main

    (tmp_path / "a.fa").write_text(">a\nACGTACNNNNNNNNNNGTACGT\n")
    assert main(["pair", str(tmp_path / "a.fa"), str(tmp_path / "a.fa")]) == 0
    out = capsys.readouterr().out
    assert "# Identity:        12/22 ( 54.5%)" in out


def test_allpairs_filter_with_n_runs_drops_no_passing_pair():
    """Genomes with masked (N) regions: the identity bound over the counted codes keeps every pair whose
    identity (N never identical) reaches the threshold."""
    rng = np.random.default_rng(3)
    scoring = make_scoring("dna", "global")
    base = random_seq(rng, "ACGT", 400)
    seqs = []
    for k in range(12):
        s = mutate(rng, base, "ACGT", rate=0.01 * (k % 4))
        start, run_length = int(rng.integers(0, 350)), int(rng.integers(0, 40))
        s = s[:start] + "N" * run_length + s[start + run_length:]
        seqs.append(Record(f"s{k}", f"s{k}", s))
    enc = encode_all(seqs, scoring, "s")
    for mid in (0.85, 0.9, 0.93):
        every = {(r.i, r.j) for r in run(enc, None, scoring, ("qseqid", "pident"), None, threads=2)
                 if r.aln.identity >= mid}
        kept = {(r.i, r.j) for r in run(enc, None, scoring, ("qseqid", "pident"), mid, threads=2) if r.passes}
        assert kept == every and 0 < len(every) < 66


def test_named_matrices_cached_as_biopython_reads_them(tmp_path, monkeypatch):
    """A named matrix comes from the per-user cache on later runs (Biopython is not imported then); the
    cached values equal Biopython's; a damaged entry or an unwritable cache falls back to Biopython."""
    import glob

    import numpy as np
    from Bio.Align import substitution_matrices

    from nwalign.scoring import schemes as scoring
    from nwalign.errors import NwalignError

    monkeypatch.setenv("NWALIGN_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("LEVIN", "MCLACHLAN", "RAO", "NUC.4.4"):  # Biopython's (BLAST's names: NCBI's tables)
        first = scoring._load_matrix(name)
        cached = scoring._cached_matrix(name)
        assert cached is not None and cached[1] == first[1] and cached[2] == name
        bio = substitution_matrices.load(name)
        assert np.array_equal(cached[0], np.asarray(bio, dtype=np.int32)) and cached[1] == "".join(bio.alphabet)
        assert np.array_equal(scoring._load_matrix(name.lower())[0], first[0])
    entry = glob.glob(str(tmp_path / "cache" / "matrices" / "LEVIN-*.json"))
    assert len(entry) == 1
    with open(entry[0], "w") as handle:
        handle.write('{"alphabet": "AR", "values": [[1]]}')  # damaged: the wrong shape
    assert scoring._cached_matrix("LEVIN") is None
    values, letters, label = scoring._load_matrix("LEVIN")  # read again through Biopython, cached again
    assert label == "LEVIN" and values.shape == (len(letters), len(letters))
    assert scoring._cached_matrix("LEVIN") is not None
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NWALIGN_CACHE_DIR", str(blocker / "sub"))  # cannot be made: no cache, same matrix
    assert np.array_equal(scoring._load_matrix("LEVIN")[0], values)
    with pytest.raises(NwalignError, match="unknown matrix 'BLOSUM99'"):
        scoring._load_matrix("BLOSUM99")
    assert scoring._cached_matrix("../../etc/passwd") is None
    monkeypatch.setenv("NWALIGN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # a file of the user's named like Biopython's matrix is never cached as it
    (tmp_path / "LEVIN").write_text("   A  C\nA  9 -1\nC -1  9\n")
    assert scoring._load_matrix("LEVIN")[1] == "AC"
    assert np.array_equal(scoring._cached_matrix("LEVIN")[0], values)


def _edit_entry(path, edit) -> None:
    """Change a cache entry's payload by hand (its checksum left as it was, as an editor would)."""
    import json

    entry = json.loads(path.read_text())
    edit(entry["payload"])
    path.write_text(json.dumps(entry))


def test_an_edited_matrix_in_the_cache_is_read_again_from_biopython(tmp_path, monkeypatch):
    monkeypatch.setenv("NWALIGN_CACHE_DIR", str(tmp_path))
    want = make_scoring("protein", "local", matrix="RAO").matrix.copy()
    (path,) = list((tmp_path / "matrices").glob("RAO-*.json"))
    _edit_entry(path, lambda p: p["values"][0].__setitem__(0, 99))
    assert np.array_equal(make_scoring("protein", "local", matrix="RAO").matrix, want)
    path.write_text("{not json")
    assert np.array_equal(make_scoring("protein", "local", matrix="RAO").matrix, want)


@pytest.mark.parametrize("bad", [-0.5, 0, "abc", float("nan"), None])
def test_karlin_altschul_parameters_that_fail_their_checks_are_estimated_again(tmp_path, monkeypatch, bad):
    """A cached estimate edited by hand (lambda -0.5 once gave E = 2.4e18 and negative bits; 0, every hit
    19.9 bits; text, a traceback), or written with a valid checksum but no usable lambda, is never used:
    the estimate is made again."""
    import json

    from nwalign.results import statistics
    from nwalign.scoring.cache import write_entry

    monkeypatch.setenv("NWALIGN_CACHE_DIR", str(tmp_path))
    made = []
    monkeypatch.setattr(statistics, "linear_phase", lambda *a: False)
    monkeypatch.setattr(statistics, "_simulate", lambda *a: made.append(1) or (0.25, 40.0))
    scoring = make_scoring("protein", "local", matrix="PAM250", gap_open=14, gap_extend=2)
    first = statistics.estimated(scoring.matrix, scoring.alphabet, 14, 2)
    (path,) = list(tmp_path.glob("karlin-*.json"))
    _edit_entry(path, lambda p: p.__setitem__("lambda", bad))
    again = statistics.estimated(scoring.matrix, scoring.alphabet, 14, 2)
    write_entry(str(path), {"lambda": bad, "mu": 40.0})  # a valid checksum, an invalid value
    third = statistics.estimated(scoring.matrix, scoring.alphabet, 14, 2)
    assert len(made) == 3 and first.lam == again.lam == third.lam == 0.25 and first.K == third.K
    assert json.loads(path.read_text())["payload"]["lambda"] == 0.25


def test_blasts_matrix_names_are_ncbis_own_tables():
    """The names blastp knows are NCBI's tables, as blastp scores with them: X against any residue -1 (C-X
    is -2 in Biopython's BLOSUM62), a row for J, and BLOSUM80 at half-bit scale (A-A 5; Biopython's: 7),
    the scale BLAST's BLOSUM80 statistics assume; U scores as C and O as X, as blastp scores them."""
    from nwalign.io.sequences import Record

    b62 = make_scoring("protein", "local", matrix="BLOSUM62")
    at = b62.alphabet.index
    assert b62.matrix[at("C"), at("X")] == -1 and b62.matrix[at("J"), at("I")] == 3
    b80 = make_scoring("protein", "local", matrix="BLOSUM80")
    assert b80.matrix[b80.alphabet.index("A"), b80.alphabet.index("A")] == 5
    codes = b62.encode(Record("p", "", "UOC"))
    assert codes[0] == codes[2] == at("C") and codes[1] == at("X")


def test_odd_letters_score_as_blastp_scores_them(capsys):
    """Queries with eight each of X, B, Z, J, U, O and * against the sequence they come from: blastp's raw
    scores (tests/data/letters, BLOSUM62 with gaps 11/1, i.e. --gap-open 12)."""
    import os

    from nwalign.cli import main

    from helpers import ROOT

    here = os.path.join(ROOT, "tests", "data", "letters")
    assert main(["search", os.path.join(here, "odd_letters.fa"), os.path.join(here, "subject.fa"), "--gap-open",
                 "12", "--gap-extend", "1", "--max-hsps", "1", "--backend", "cpu", "--columns",
                 "qseqid,score,qstart,qend,sstart,send"]) == 0
    got = capsys.readouterr().out
    with open(os.path.join(here, "blastp_scores.tsv")) as handle:
        assert got == handle.read()
