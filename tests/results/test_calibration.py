"""E-values that mean what they say: shuffled queries (each keeps its letters, so its composition) against
real databases find about one chance hit with E <= 1 per query (0.5-2 over 50 queries), for a published
protein scoring (BLOSUM62 11/1), an estimated one (PAM250 14/2: not in BLAST's tables), the nucleotide
search default (blastn's +2/-3, gaps 7/2) and a linear-gap one (+1/-2, 2/2), DNA on both strands. The old
DNA default for local alignment (+5/-4, gaps 10/1) is in the linear phase: no E-values, said so."""

import numpy as np
import pytest

from nwalign import search
from nwalign.io.database import Database
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import read_fasta
from nwalign.results.statistics import parameters

from helpers import DATA, TEST_DATA, seed_of

QUERIES = 50


def _shuffled(seqs, length, seed):
    rng = np.random.default_rng(seed)
    return ["".join(rng.permutation(list(s[:length]))) for s in seqs[:QUERIES]]


@pytest.fixture(scope="module")
def proteins():
    queries = _shuffled([r.seq for r in read_fasta(f"{DATA}/swissprot_first196.fasta")], 400, seed_of("protein"))
    db = read_fasta(f"{DATA}/swissprot_ecoli_k12_4306.fasta.gz")[:1000]
    return queries, Database.from_records([r.seq for r in db], "ecoli-1000")


@pytest.fixture(scope="module")
def nucleotides():
    phage = read_fasta(f"{DATA}/phage_lambda_J02459.fasta")[0].seq
    queries = _shuffled([phage[k * 600:k * 600 + 300] for k in range(QUERIES)], 300, seed_of("dna"))
    genome = read_fasta(f"{DATA}/ecoli_k12_mg1655_NC_000913.fasta.gz")[0].seq[:200_000]
    return queries, Database.from_records([genome[k:k + 1000] for k in range(0, len(genome), 1000)], "ecoli-200k")


def _chance_hits(queries, db, **scoring):
    counts = [len(hits) for _, hits in search(queries, db, top=1000, max_evalue=1.0, backend="cpu", **scoring)]
    return float(np.mean(counts)), counts


@pytest.mark.slow
@pytest.mark.parametrize("kind, scoring", [
    ("protein", dict(matrix="BLOSUM62", gap_open=11, gap_extend=1)),
    ("protein", dict(matrix="PAM250", gap_open=14, gap_extend=2)),
    ("dna", dict()),
    ("dna", dict(match=1, mismatch=-2, gap_open=2, gap_extend=2)),
])
def test_chance_hits_with_evalue_at_most_one_average_about_one_per_query(request, kind, scoring):
    queries, db = request.getfixturevalue("proteins" if kind == "protein" else "nucleotides")
    mean, counts = _chance_hits(queries, db, **scoring)
    assert 0.5 <= mean <= 2.0, (scoring, mean, counts)


def test_the_linear_phase_has_no_evalues(caplog):
    """+5/-4 with gaps 10/1: a random 4 kb pair scores ~2,400 (the scores grow with the length); no
    Karlin-Altschul statistics exist, so none are given, and the reason is said."""
    with pytest.raises(ValueError, match="linear phase"):
        parameters(make_scoring("dna", "local"))
    assert parameters(make_scoring("dna", "local", search=True)).method == "published (blastn's +2/-3 table)"


def test_estimated_parameters_agree_with_published_ones_for_real_homologs():
    """BLOSUM62 11/1, estimated as any untabulated scoring is, against BLAST's table: for the hits blastp
    found of the 20 benchmark queries in the E. coli proteome with E-values from 1e-30 to 10, the two
    E-values (both by the length-adjusted formula: the table's finite-size correction set aside, as an
    estimate has none) agree within an order of magnitude."""
    import csv
    import os

    import dataclasses

    from nwalign.results.statistics import estimated, published

    scoring = make_scoring("protein", "local")
    ours = estimated(scoring.matrix, scoring.alphabet, 11, 1)
    theirs = dataclasses.replace(published("BLOSUM62", 11, 1), spouge=None)
    assert ours.method.startswith("estimated") and abs(ours.lam - theirs.lam) < 0.02
    queries = {r.id: len(r.seq) for r in read_fasta(f"{DATA}/queries_20_sw_benchmark.fasta")}
    db = read_fasta(f"{DATA}/swissprot_ecoli_k12_4306.fasta.gz")
    subjects, total = {r.id: len(r.seq) for r in db}, sum(len(r.seq) for r in db)
    path = os.path.join(TEST_DATA, "blast", "blastp_BLOSUM62_10_1.tsv")
    compared = 0
    with open(path) as handle:
        for qseqid, sseqid, score, evalue, *_ in csv.reader(handle, delimiter="\t"):
            if 1e-30 <= float(evalue) <= 10:
                a = theirs.evalue(int(score), queries[qseqid], total, len(db), subjects[sseqid])
                b = ours.evalue(int(score), queries[qseqid], total, len(db), subjects[sseqid])
                assert 0.1 < b / a < 10, (qseqid, sseqid, score, a, b)
                compared += 1
    assert compared > 100
