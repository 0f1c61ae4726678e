"""nwalign allpairs on the CPU: scores against Biopython, the identity bound, the filter, outputs, errors."""

import os

import numpy as np
import pytest

from nwalign.allpairs import identity_bound, run
from nwalign.cli import main
from nwalign.engine import Encoded, align_pair, encode_all
from nwalign.scoring import make_scoring
from nwalign.sequences import Record, read_fasta

from conftest import DATA
from helpers import DNA, PROTEIN, biopython_aligner, mutate, random_seq

SIXTEEN_S = os.path.join(DATA, "16S_100_dada2.fasta.gz")


def _records(n):
    return read_fasta(SIXTEEN_S)[:n]


def test_bound_holds_for_every_alignment_reaching_the_identity():
    """score >= L whenever identity >= MID, over random and related pairs, DNA and protein."""
    rng = np.random.default_rng(11)
    checked = 0
    for alphabet, letters in (("dna", DNA), ("protein", PROTEIN)):
        scoring = make_scoring(alphabet, "global")
        for k in range(150):
            a = random_seq(rng, letters, int(rng.integers(5, 120)))
            b = mutate(rng, a, letters, rate=float(rng.uniform(0, 0.6)))
            q, t = (Encoded(Record(n, n, s), scoring.encode(Record(n, n, s))) for n, s in (("q", a), ("t", b)))
            aln = align_pair(q, t, scoring)
            for mid in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0):
                if aln.identity >= mid:
                    checked += 1
                    assert aln.score >= identity_bound(len(a), len(b), mid, scoring), (a, b, mid)
    assert checked > 200


@pytest.mark.parametrize("mid", [0.8, 0.9, 0.97])
def test_filter_never_drops_a_passing_pair(mid):
    scoring = make_scoring("dna")
    enc = encode_all(_records(24), scoring, "16S")
    unfiltered = {(r.i, r.j) for r in run(enc, None, scoring, ("qseqid", "pident"), None, threads=2)
                  if r.aln.identity >= mid}
    stats = {}
    filtered = {(r.i, r.j) for r in run(enc, None, scoring, ("qseqid", "pident"), mid, threads=2, stats=stats)
                if r.passes}
    assert filtered == unfiltered and stats["pairs"] == 24 * 23 // 2
    if mid >= 0.9:  # at 0.8 the bound (2 per column with +5/-4, 10/1) is below every 16S pair's score
        assert stats["filtered"] > 0


def test_scores_equal_biopython_on_16s():
    scoring = make_scoring("dna")
    recs = _records(8)
    enc = encode_all(recs, scoring, "16S")
    oracle = biopython_aligner("global", "dna", 10, 1)
    results = list(run(enc, None, scoring, ("qseqid", "sseqid", "score"), threads=1))
    assert len(results) == 28
    for r in results:
        assert r.aln.score == int(oracle.score(recs[r.i].seq, recs[r.j].seq))


def test_cli_tsv_against_and_matrices(capsys, tmp_path):
    src = tmp_path / "s.fa"
    other = tmp_path / "o.fa"
    recs = _records(6)
    src.write_text("".join(f">s{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    other.write_text("".join(f">o{k}\n{r.seq[50:900]}\n" for k, r in enumerate(recs[:3])))
    out = tmp_path / "out.tsv"
    phy, npy = tmp_path / "d.phy", tmp_path / "d.npy"
    assert main(["allpairs", str(src), "--columns", "qseqid,sseqid,score,pident,length,nident,mismatch,gaps,qlen,slen",
                 "--matrix-out", str(phy), "-o", str(out), "--threads", "2"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][:3] == ["qseqid", "sseqid", "score"] and len(rows) == 1 + 15
    for row in rows[1:]:
        length, nident, mismatch, gaps = (int(x) for x in row[4:8])
        assert nident + mismatch + gaps == length and abs(float(row[3]) - 100 * nident / length) < 0.01
    lines = phy.read_text().splitlines()
    assert lines[0] == "6" and len(lines) == 7
    dist = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    assert np.allclose(dist, dist.T) and np.all(np.diag(dist) == 0) and np.all((dist >= 0) & (dist <= 1))
    assert main(["allpairs", str(src), "--against", str(other), "--matrix-out", str(npy), "--no-header",
                 "--columns", "qseqid,sseqid,score"]) == 0
    got = np.load(npy)
    assert got.shape == (6, 3) and np.all((got >= 0) & (got <= 1))
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 18 and printed[0].startswith("s0\to0\t")


@pytest.mark.parametrize("args, message", [
    (["--columns", "qseqid,bogus"], "unknown column 'bogus'"),
    (["--min-identity", "1.5"], "between 0 and 1"),
    (["--matrix-out", "x.txt"], "must end in .phy"),
    (["--backend", "cuda"], "no GPU kernels yet"),
])
def test_cli_errors(capsys, args, message):
    code = main(["allpairs", SIXTEEN_S, *args])
    out, err = capsys.readouterr()
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert out == "" or out.startswith("qseqid")  # a header at most, never a result row


def test_cli_single_sequence_is_an_error(capsys, tmp_path):
    one = tmp_path / "one.fa"
    one.write_text(">a\nACGT\n")
    assert main(["allpairs", str(one)]) == 2
    assert "at least two sequences" in capsys.readouterr().err
