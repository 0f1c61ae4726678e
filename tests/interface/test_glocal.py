"""pair --mode glocal: the whole query placed inside the target (a primer, a read, a gene in a
reference), the target's leading and trailing residues free; on the CPU engine."""

import gzip
import os

from nwalign.cli import main

from helpers import DATA

PRIMER = "AGAGTTTGATCCTGGCTCAG"  # 27F, the 16S primer
COLUMNS = "qstart,qend,sstart,send,length,nident,mismatch,gaps,score"


def _fasta(tmp_path, name: str, seq: str) -> str:
    path = tmp_path / f"{name}.fa"
    path.write_text(f">{name}\n{seq}\n")
    return str(path)


def _row(capsys, argv) -> list[int]:
    assert main(argv) == 0
    return [int(float(x)) for x in capsys.readouterr().out.split()]


def test_a_primer_past_the_end_of_its_target_is_reported_whole(tmp_path, capsys):
    """A 20-nt primer against a target that ends after the primer's 15th letter: semiglobal reports the
    15 that fit as a perfect overlap; glocal reports all 20 positions, 5 in a gap that costs the score
    (15 x 5 - (10 + 4 x 1) = 61)."""
    q = _fasta(tmp_path, "primer", PRIMER)
    t = _fasta(tmp_path, "target", "G" * 24 + PRIMER[:15])
    base = ["pair", q, t, "--format", "tsv", "--columns", COLUMNS]
    assert _row(capsys, base + ["--mode", "semiglobal"]) == [1, 15, 25, 39, 15, 15, 0, 0, 75]
    assert _row(capsys, base + ["--mode", "glocal"]) == [1, 20, 25, 39, 20, 15, 0, 5, 61]


def test_a_primer_with_two_mismatches_at_its_3_prime_end_inside_a_16s_gene(tmp_path, capsys):
    """The primer's 20 positions, both mismatches among them, at the place it was taken from (gaps of 20/5,
    so that no gapped placement of its last letters scores more)."""
    with gzip.open(os.path.join(DATA, "16S_100_dada2.fasta.gz"), "rt") as handle:
        gene = "".join(line.strip() for line in handle.read().split(">")[1].splitlines()[1:])
    at = 400
    primer = gene[at:at + 18] + "".join({"A": "C", "C": "G", "G": "T", "T": "A"}[c] for c in gene[at + 18:at + 20])
    q, t = _fasta(tmp_path, "primer", primer), _fasta(tmp_path, "gene", gene)
    got = _row(capsys, ["pair", q, t, "--mode", "glocal", "--gap-open", "20", "--gap-extend", "5", "--format",
                        "tsv", "--columns", COLUMNS])
    assert got == [1, 20, at + 1, at + 20, 20, 18, 2, 0, 18 * 5 - 2 * 4]


def test_modes_the_gpu_lacks_are_refused_there_in_one_line(tmp_path, capsys):
    """pair's sets of free ends other than the named modes run on the CPU engine: --backend cuda refuses
    them in one line, before looking for a GPU."""
    q, t = _fasta(tmp_path, "q", PRIMER), _fasta(tmp_path, "t", "ACGT" + PRIMER)
    for command, mode in ((["pair", q, t, "--free-ends", "query-start"], "free-ends:query-start"),
                          (["pair", q, t, "--free-ends", "query-end,subject-end"], "free-ends:query-end,subject-end")):
        assert main(command + ["--backend", "cuda"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"nwalign: error: --mode {mode} runs on the CPU engine for now: use --backend cpu (or auto)"]


def test_allpairs_glocal_gives_pairs_scores(tmp_path, capsys):
    """allpairs --mode glocal: each pair's score and alignment length are pair's."""
    with gzip.open(os.path.join(DATA, "16S_100_dada2.fasta.gz"), "rt") as handle:
        records = handle.read().split(">")[1:7]
    fasta = tmp_path / "six.fa"
    fasta.write_text("".join(">" + r for r in records))
    cols = ["--columns", "qseqid,sseqid,score,length"]
    assert main(["allpairs", str(fasta), "--mode", "glocal"] + cols) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 15
    for qid, sid, score, length in rows:
        seqs = {r.split()[0]: "".join(r.splitlines()[1:]) for r in records}
        q, t = _fasta(tmp_path, "q", seqs[qid]), _fasta(tmp_path, "t", seqs[sid])
        assert main(["pair", q, t, "--mode", "glocal", "--format", "tsv"] + cols) == 0
        assert capsys.readouterr().out.split()[2:] == [score, length]


def test_free_ends_name_the_mode_and_refuse_what_they_cannot_be(tmp_path, capsys):
    """--free-ends: the set with a name is that mode (all four: semiglobal, the subject's two: glocal, none:
    global); another set is reported as itself, its score that of its ends (the target's start free and the
    query's end free here: the primer's first 15 letters on the target's end, the rest free); a name that is
    not an end, or --free-ends with --mode local, is one line and exit 2."""
    q = _fasta(tmp_path, "primer", PRIMER)
    t = _fasta(tmp_path, "target", "G" * 24 + PRIMER[:15])
    base = ["pair", q, t, "--format", "tsv", "--columns", "mode," + COLUMNS, "--free-ends"]
    for ends, mode in (("query-start,query-end,subject-start,subject-end", "semiglobal"),
                       ("subject-end,subject-start", "glocal"), ("none", "global")):
        assert main(base + [ends]) == 0
        assert capsys.readouterr().out.split("\t")[0] == mode
    assert main(base + ["subject-start,query-end"]) == 0
    assert capsys.readouterr().out.split() == ["free-ends:query-end,subject-start", "1", "15", "25", "39", "15", "15",
                                                "0", "0", "75"]
    assert main(base + ["query-middle"]) == 2
    assert "'query-middle' is not an end" in capsys.readouterr().err
    assert main(base + ["query-end", "--mode", "local"]) == 2
    assert capsys.readouterr().err.strip() == "nwalign: error: --free-ends is for end-to-end alignments, not --mode local"
