"""The CPU engine against Biopython on the real sequences shipped in data/."""

import os

import pytest

from nwalign.backends.engine import Encoded, align_pair
from nwalign.records.alignment import rescore
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import read_fasta

from helpers import DATA, GENOME_A, GENOME_B
from helpers import biopython_aligner


def _encode(scoring, records):
    return [Encoded(r, scoring.encode(r)) for r in records]


@pytest.mark.slow
def test_genomes_score_equals_biopython():
    a, b = read_fasta(GENOME_A)[0], read_fasta(GENOME_B)[0]
    scoring = make_scoring("dna")
    q, t = _encode(scoring, [a, b])
    aln = align_pair(q, t, scoring)
    assert aln.score == int(biopython_aligner("global", "dna", 10, 1).score(a.seq, b.seq))
    assert rescore(aln, q.codes, t.codes, scoring.matrix, 10, 1) == aln.score
    assert 0.95 < aln.identity < 0.97
    # The linear-space traceback on the same pair (a 64 MB budget forces checkpointed bands).
    small = align_pair(q, t, scoring, max_memory=64 << 20)
    assert small.score == aln.score
    assert rescore(small, q.codes, t.codes, scoring.matrix, 10, 1) == aln.score


def test_proteins_local_blosum62_equal_biopython():
    queries = read_fasta(os.path.join(DATA, "queries_5_opal.fasta"))
    targets = read_fasta(os.path.join(DATA, "swissprot_first196.fasta"))[:12]
    scoring = make_scoring("protein", "local")
    oracle = biopython_aligner("local", "protein", 11, 1)
    for q in _encode(scoring, queries):
        for t in _encode(scoring, targets):
            aln = align_pair(q, t, scoring)
            assert aln.score == int(oracle.score(q.record.seq, t.record.seq)), (q.record.id, t.record.id)
            assert rescore(aln, q.codes, t.codes, scoring.matrix, 11, 1) == aln.score


@pytest.mark.parametrize("mode", ["global", "semiglobal"])
def test_16s_equal_biopython(mode):
    recs = read_fasta(os.path.join(DATA, "16S_100_dada2.fasta.gz"))[:6]
    scoring = make_scoring("dna", mode)
    oracle = biopython_aligner(mode, "dna", 10, 1)
    enc = _encode(scoring, recs)
    for k in range(len(enc) - 1):
        q, t = enc[k], enc[k + 1]
        aln = align_pair(q, t, scoring)
        assert aln.score == int(oracle.score(q.record.seq, t.record.seq))
        assert rescore(aln, q.codes, t.codes, scoring.matrix, 10, 1) == aln.score
