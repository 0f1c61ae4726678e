"""E-values and bit scores against NCBI BLAST+'s own (blastp 2.12.0, tests/data/blast/make.sh made the
files; no BLAST is needed here): for every hit BLAST reported, nwalign's statistics for BLAST's raw score,
query and subject print the same E-value and bit score (BLAST's Spouge finite-size correction, its
tables, its tabular number formats)."""

import csv
import os

import pytest

from nwalign.output.blastfmt import blast_bitscore, blast_evalue
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import read_fasta
from nwalign.results.statistics import parameters

from helpers import DATA, TEST_DATA

BLAST = os.path.join(TEST_DATA, "blast")
QUERIES = os.path.join(DATA, "queries_20_sw_benchmark.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")


@pytest.fixture(scope="module")
def lengths():
    queries = {r.id: len(r.seq) for r in read_fasta(QUERIES)}
    db = read_fasta(ECOLI)
    return queries, {r.id: len(r.seq) for r in db}, sum(len(r.seq) for r in db), len(db)


@pytest.mark.parametrize("matrix, blast_open, extend", [("BLOSUM62", 10, 1), ("BLOSUM45", 15, 2), ("PAM250", 13, 2),
                                                        ("PAM30", 9, 1)])
def test_evalues_and_bit_scores_equal_blastp(lengths, matrix, blast_open, extend):
    queries, subjects, total, count = lengths
    scoring = make_scoring("protein", "local", matrix=matrix, gap_open=blast_open + extend, gap_extend=extend)
    ka = parameters(scoring, estimate=False)
    assert ka is not None and ka.method.startswith("published")
    with open(os.path.join(BLAST, f"blastp_{matrix}_{blast_open}_{extend}.tsv")) as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert len(rows) > 100
    for qseqid, sseqid, score, evalue, bits, *_ in rows:
        query = next(q for q in queries if qseqid.endswith(q) or q.endswith(qseqid) or q == qseqid)
        e = ka.evalue(int(score), queries[query], total, count, subjects[sseqid])
        assert (blast_evalue(e), blast_bitscore(ka.bit_score(int(score)))) == (evalue, bits), (qseqid, sseqid, score)


def test_search_prints_blasts_statistics_for_equal_scores(tmp_path, capsys):
    """End to end for two queries: where nwalign's exact score equals BLAST's (heuristic) one, the search's
    evalue and bitscore columns are BLAST's strings."""
    from nwalign.cli import main

    records = [r for r in read_fasta(QUERIES) if len(r.seq) < 200][:2]
    query = tmp_path / "q.fa"
    query.write_text("".join(f">{r.id}\n{r.seq}\n" for r in records))
    assert main(["search", str(query), ECOLI, "--backend", "cpu", "--top", "5", "--columns",
                 "qseqid,sseqid,score,evalue,bitscore"]) == 0
    ours = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    with open(os.path.join(BLAST, "blastp_BLOSUM62_10_1.tsv")) as handle:
        blast = {(r[0], r[1]): r for r in csv.reader(handle, delimiter="\t")}
    same = [r for r in ours if (r[0], r[1]) in blast and blast[(r[0], r[1])][2] == r[2]]
    assert len(same) >= 4
    for r in same:
        assert r[3:5] == blast[(r[0], r[1])][3:5], r


def _dna_database(path):
    phage = read_fasta(os.path.join(DATA, "phage_lambda_J02459.fasta"))[0].seq
    genome = read_fasta(os.path.join(DATA, "ecoli_k12_mg1655_NC_000913.fasta.gz"))[0].seq[:100_000]
    path.write_text("".join(f">lam{k}\n{phage[k:k + 2000]}\n" for k in range(0, len(phage), 2000))
                    + "".join(f">eco{k}\n{genome[k:k + 2000]}\n" for k in range(0, len(genome), 2000)))
    return str(path)


def test_nucleotide_search_equals_blastn(tmp_path, capsys):
    """Mutated lambda fragments (half reverse-complemented) against lambda and E. coli pieces, both strands,
    blastn's +2/-3 with gaps 5/2 (the search default): every hit where nwalign's exact score equals
    blastn's has blastn's E-value, bit score, coordinates and strand, as text."""
    from nwalign.cli import main

    db = _dna_database(tmp_path / "dna.fa")
    queries = os.path.join(BLAST, "dna_queries.fa")
    cols = "qseqid,sseqid,score,evalue,bitscore,qstart,qend,sstart,send,sstrand"
    assert main(["search", queries, db, "--backend", "cpu", "--top", "5", "--columns", cols]) == 0
    ours = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    with open(os.path.join(BLAST, "blastn_2_3_5_2.tsv")) as handle:
        blast = {(r[0], r[1]): r for r in csv.reader(handle, delimiter="\t")}
    same = [r for r in ours if (r[0], r[1]) in blast and blast[(r[0], r[1])][2] == r[2]]
    assert len(same) >= 15 and {r[9] for r in same} == {"plus", "minus"}
    for r in same:
        assert r[3:] == blast[(r[0], r[1])][3:], r
