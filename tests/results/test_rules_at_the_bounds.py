"""What users rely on, pinned at its edges: the SAM flag of a plus- and a minus-strand hit, the strand tie
rule, --min-score and --max-evalue at equality on every CPU path (one process, the chunked scan, Dask
workers), and the IUPAC complement against a table written out here."""

import os

import pytest

from nwalign.cli import main
from nwalign.io.sequences import read_fasta, reverse_complement

from helpers import DATA

LAMBDA = os.path.join(DATA, "phage_lambda_J02459.fasta")


def _lambda() -> str:
    return read_fasta(LAMBDA)[0].seq


def _rows(capsys, argv) -> list[list[str]]:
    assert main(argv) == 0
    return [line.split("\t") for line in capsys.readouterr().out.splitlines()]


def test_sam_flags_a_minus_strand_hit_only(tmp_path):
    """A plus-strand hit's flag is 0 and a minus-strand one's 16 (reverse), read back with pysam: a flag of
    16 on every stranded hit once passed the suite."""
    import pysam

    seq = _lambda()
    (tmp_path / "q.fa").write_text(f">plus\n{seq[2000:2600]}\n>minus\n{reverse_complement(seq[5000:5600])}\n")
    sam = tmp_path / "hits.sam"
    assert main(["search", str(tmp_path / "q.fa"), LAMBDA, "--top", "1", "--max-hsps", "1", "--backend", "cpu", "--format", "sam",
                 "-o", str(sam)]) == 0
    with pysam.AlignmentFile(str(sam), "r") as reader:
        got = {r.query_name: (r.is_reverse, r.reference_start) for r in reader}
    assert got == {"plus": (False, 2000), "minus": (True, 5000)}


def test_a_query_that_is_its_own_reverse_complement_is_reported_on_the_plus_strand(capsys, tmp_path):
    """Equal scores on both strands: the documented rule reports the plus strand (sstart < send)."""
    half = _lambda()[15000:15060]
    palindrome = half + reverse_complement(half)
    assert reverse_complement(palindrome) == palindrome
    lam = _lambda()
    (tmp_path / "db.fa").write_text(f">s\n{lam[:3000]}{palindrome}{lam[3000:6000]}\n")
    (tmp_path / "q.fa").write_text(f">q\n{palindrome}\n")
    (row,) = _rows(capsys, ["search", str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "--top", "1", "--max-hsps", "1",
                            "--backend", "cpu", "--columns", "sstrand,sstart,send,score"])
    assert row[:3] == ["plus", "3001", "3120"]


def _paths(monkeypatch, path: str) -> list[str]:
    """The options of a search path: one process, the chunked CPU scan (chunks made tiny), Dask workers,
    and where a GPU is present the resident and the streamed GPU scans (memory capped for several
    chunks)."""
    if path == "chunked":
        from nwalign.backends.cpu import streamed

        monkeypatch.setattr(streamed, "CHUNK_RESIDUES", 5000)
    if path.startswith("gpu"):
        if path == "gpu-streamed":
            from nwalign.backends.cuda import streamed

            monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
            monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 13)
            return ["--backend", "cuda", "--device", "0", "--gpu-memory", "2M"]
        return ["--backend", "cuda", "--device", "0"]
    return ["--backend", "cpu"] + (["--workers", "2"] if path == "workers" else [])


PATHS = ["one", "chunked", "workers", pytest.param("gpu", marks=pytest.mark.gpu),
         pytest.param("gpu-streamed", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("path", PATHS)
def test_min_score_keeps_a_hit_at_exactly_the_bound_on_every_path(capsys, monkeypatch, path):
    opal, db = os.path.join(DATA, "queries_5_opal.fasta"), os.path.join(DATA, "swissprot_first196.fasta")
    base = ["search", opal, db, "--top", "3", "--max-hsps", "1", "--columns", "qseqid,sseqid,score"]
    rows = _rows(capsys, base + ["--backend", "cpu"])
    bound = int(rows[1][2])  # a query's second subject
    extra = _paths(monkeypatch, path)
    kept = _rows(capsys, base + extra + ["--min-score", str(bound)])
    assert rows[1] in kept and all(int(r[2]) >= bound for r in kept)
    above = _rows(capsys, base + extra + ["--min-score", str(bound + 1)])
    assert rows[1] not in above and all(int(r[2]) > bound for r in above)


@pytest.mark.parametrize("path", PATHS)
def test_max_evalue_keeps_hits_at_exactly_the_cut_on_every_path(capsys, monkeypatch, tmp_path, path):
    """--max-evalue 0 keeps the hits whose E-value is exactly 0.0 (two 1,000-bp lambda pieces), and a cut at
    a hit's E-value keeps that hit."""
    lam = _lambda()
    (tmp_path / "q.fa").write_text(f">a\n{lam[1000:2000]}\n>b\n{reverse_complement(lam[20000:21000])}\n")
    extra = _paths(monkeypatch, path)
    base = ["search", str(tmp_path / "q.fa"), LAMBDA, "--top", "1", "--columns", "qseqid,sstrand,evalue"]
    zero = _rows(capsys, base + extra + ["--max-evalue", "0"])
    assert [(r[0], r[1], float(r[2])) for r in zero] == [("a", "plus", 0.0), ("b", "minus", 0.0)]
    opal, db = os.path.join(DATA, "queries_5_opal.fasta"), os.path.join(DATA, "swissprot_first196.fasta")
    prot = ["search", opal, db, "--top", "2", "--columns", "qseqid,sseqid,evalue"]
    rows = _rows(capsys, prot + ["--backend", "cpu"])
    cut = rows[1][2]
    kept = _rows(capsys, prot + extra + ["--max-evalue", cut])
    assert rows[1] in kept


def test_the_iupac_complement_against_a_table():
    """The complement of every IUPAC code, from a table written here (not computed by the code under
    test): a broken complement (R and Y swapped) was caught only by a doctest."""
    table = {"A": "T", "C": "G", "G": "C", "T": "A", "U": "A", "R": "Y", "Y": "R", "S": "S", "W": "W", "K": "M",
             "M": "K", "B": "V", "V": "B", "D": "H", "H": "D", "N": "N"}
    letters = "ACGTRYSWKMBVDHN"
    assert reverse_complement(letters) == "".join(table[c] for c in reversed(letters))


def test_a_minus_strand_hit_gives_the_query_coordinates_as_given(capsys, tmp_path):
    """A query of 20 unrelated letters then the reverse complement of lambda 5,001-5,600: on the query as
    given the hit is 21-620 (ascending), on the subject 5,600-5,001 (descending), as blastn prints it."""
    lam = _lambda()
    (tmp_path / "q.fa").write_text(f">q\n{'ACGT' * 5}{reverse_complement(lam[5000:5600])}\n")
    row = _rows(capsys, ["search", str(tmp_path / "q.fa"), LAMBDA, "--top", "1", "--backend", "cpu",
                         "--columns", "sstrand,qstart,qend,sstart,send"])[0]  # the best of the subject's alignments
    assert row == ["minus", "21", "620", "5600", "5001"]


@pytest.mark.parametrize("path", PATHS)
def test_top_keeps_the_first_of_tied_subjects_in_database_order_on_every_path(capsys, monkeypatch, tmp_path, path):
    """--top 2 with the second and third best scores tied keeps the earlier subject (the documented tie
    rule: score descending, then database order), whatever the path."""
    lam = _lambda()
    piece = lam[3000:3400]
    subjects = [("far", lam[9000:9400]), ("t1", lam[100:300] + piece[:200]), ("best", piece),
                ("t2", lam[100:300] + piece[:200]), ("t3", lam[100:300] + piece[:200])]
    (tmp_path / "db.fa").write_text("".join(f">{n}\n{s}\n" for n, s in subjects))
    (tmp_path / "q.fa").write_text(f">q\n{piece}\n")
    extra = _paths(monkeypatch, path)
    rows = _rows(capsys, ["search", str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "--top", "3", "--strand",
                          "plus", "--max-hsps", "1", "--columns", "sseqid,score"] + extra)
    assert [r[0] for r in rows] == ["best", "t1", "t2"] and rows[1][1] == rows[2][1]
    rows = _rows(capsys, ["search", str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "--top", "2", "--strand",
                          "plus", "--max-hsps", "1", "--columns", "sseqid,score"] + extra)
    assert [r[0] for r in rows] == ["best", "t1"]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("columns", ["qseqid,sseqid,pident", "qseqid,sseqid,score"])
def test_allpairs_min_identity_keeps_a_pair_at_exactly_the_bound(capsys, tmp_path, backend, columns):
    """Identity exactly 0.75 (30 of 40 columns: ten spread substitutions, or a 30-letter prefix of a 40-letter
    sequence, where the lengths themselves sit at the bound) passes --min-identity 0.75 and fails 0.7501,
    with identity columns asked for or not (the band-first path)."""
    lam = _lambda()
    a = lam[5000:5040]
    b = "".join(("A" if c != "A" else "C") if k % 4 == 1 else c for k, c in enumerate(a))
    (tmp_path / "s.fa").write_text(f">a\n{a}\n>b\n{b}\n>p\n{a[:30]}\n>far\n{lam[20000:20040]}\n")
    base = ["allpairs", str(tmp_path / "s.fa"), "--backend", backend, "--columns", columns]
    kept = {tuple(r[:2]) for r in _rows(capsys, base + ["--min-identity", "0.75"])}
    assert {("a", "b"), ("a", "p")} <= kept and ("b", "p") not in kept and ("a", "far") not in kept
    above = {tuple(r[:2]) for r in _rows(capsys, base + ["--min-identity", "0.7501"])}
    assert not above & {("a", "b"), ("a", "p")}


@pytest.mark.parametrize("path", PATHS)
def test_a_query_with_no_positive_local_score_has_no_hit(capsys, monkeypatch, tmp_path, path):
    """A query of N only (every pair scores below 0) had a row with score 0, length 0 and coordinates 0 (an
    empty local alignment) and an E-value of 59,649; BLAST and SSEARCH report nothing, nor does nwalign now."""
    (tmp_path / "n.fa").write_text(">n\nNNNNNNNNNN\n")
    extra = _paths(monkeypatch, path)
    assert _rows(capsys, ["search", str(tmp_path / "n.fa"), LAMBDA, "--min-score", "-5", "--max-evalue", "inf"]
                 + extra) == []
