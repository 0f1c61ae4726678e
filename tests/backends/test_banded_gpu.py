"""The banded GPU alignment (kernels/banded_align.cu, nwalign.backends.cuda.banded) against the CPU engine's
banded alignment (nwalign.backends.cpu.banded): the same doubling bands, the same path or the same None, for
random and related pairs (lengths around the kernel's 256-row bands, m != n, narrow and whole bands),
real 16S genes and SARS-CoV-2 genomes, and allpairs --min-identity on the GPU against the CPU."""

import os

import numpy as np
import pytest

from nwalign.plan.bands import widest_band
from nwalign.backends.cpu import score_codes
from nwalign.backends.cpu.banded import align_global_banded
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import read_fasta

from helpers import DATA
from helpers import DNA, PROTEIN, mutate, random_seq

pytestmark = pytest.mark.gpu

SIXTEEN_S = os.path.join(DATA, "16S_100_dada2.fasta.gz")
SARS2 = os.path.join(DATA, "sars-cov-2_418_nextstrain.fasta.gz")


def _check(scoring, pairs, mids, w_start=32):
    """Every pair through the GPU aligner and the CPU engine; returns how many found a path."""
    from nwalign.backends.cuda.banded import BandedAligner

    s = scoring
    optima = [score_codes(q, t, s.matrix, s.gap_open, s.gap_extend, 0) for q, t in pairs]
    w_max = [widest_band(len(q), len(t), mid) for (q, t), mid in zip(pairs, mids)]
    got = BandedAligner(scoring).align(pairs, optima, w_max, w_start=w_start)
    found = 0
    for k, ((q, t), opt, wm) in enumerate(zip(pairs, optima, w_max)):
        want = align_global_banded(q, t, s.matrix, s.gap_open, s.gap_extend, opt, wm, w_start=w_start)
        if want is None:
            assert got[k] is None, (k, len(q), len(t), wm)
            continue
        found += 1
        assert got[k] is not None, (k, len(q), len(t), wm)
        assert got[k][:5] == want[:5] and np.array_equal(got[k][5], want[5]), (k, len(q), len(t), wm)
    return found


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_random_and_related_pairs_equal_cpu(alphabet):
    rng = np.random.default_rng(21)
    scoring = make_scoring(alphabet, "global")
    letters = DNA if alphabet == "dna" else PROTEIN
    pairs, mids = [], []
    for length in (1, 2, 7, 31, 255, 256, 257, 300, 511, 513, 700, 1200):
        for rate in (0.0, 0.02, 0.1, 0.3):
            a = random_seq(rng, letters, length)
            b = mutate(rng, a, letters, rate=rate)
            pairs.append((scoring.encode_str(a), scoring.encode_str(b)))
            mids.append(float(rng.choice([0.5, 0.8, 0.9, 0.97, 0.99])))
    for m, n in ((300, 40), (40, 300), (1000, 900), (5, 600)):  # unrelated, very different lengths
        pairs.append((scoring.encode_str(random_seq(rng, letters, m)), scoring.encode_str(random_seq(rng, letters, n))))
        mids.append(0.3)
    found = _check(scoring, pairs, mids)
    assert found > len(pairs) // 2


def test_narrow_first_bands_double_and_fail_as_on_the_cpu():
    """w_start 1: most pairs need several doublings; unrelated pairs end with None on both engines."""
    rng = np.random.default_rng(22)
    scoring = make_scoring("dna", "global")
    pairs, mids = [], []
    for k in range(60):
        a = random_seq(rng, DNA, int(rng.integers(200, 900)))
        b = mutate(rng, a, DNA, rate=float(rng.uniform(0.0, 0.25))) if k % 3 else random_seq(rng, DNA, len(a))
        pairs.append((scoring.encode_str(a), scoring.encode_str(b)))
        mids.append(0.9)
    _check(scoring, pairs, mids, w_start=1)


def test_real_16s_and_sars_cov_2_pairs_equal_cpu():
    scoring = make_scoring("dna", "global")
    genes = [scoring.encode(r) for r in read_fasta(SIXTEEN_S)[:14]]
    pairs = [(genes[i], genes[j]) for i in range(14) for j in range(i + 1, 14)][:60]
    _check(scoring, pairs, [0.9] * len(pairs))
    genomes = [scoring.encode(r) for r in read_fasta(SARS2)[:4]]
    pairs = [(genomes[i], genomes[j]) for i in range(4) for j in range(i + 1, 4)]
    assert _check(scoring, pairs, [0.99] * len(pairs)) == len(pairs)


def test_allpairs_min_identity_gpu_equals_cpu(tmp_path, monkeypatch):
    """allpairs --min-identity (the survivors aligned in bands on the GPU) writes the CPU engine's bytes."""
    import nwalign.backends.cuda.banded
    from nwalign.cli import main

    monkeypatch.setattr(nwalign.backends.cuda.banded, "ENABLED", True)
    recs = read_fasta(SIXTEEN_S)[:30]
    fasta = tmp_path / "g.fa"
    fasta.write_text("".join(f">g{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    outs = []
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.tsv"
        assert main(["allpairs", str(fasta), "--min-identity", "0.85", "--backend", backend, "-o", str(out),
                     "--columns", "qseqid,sseqid,score,pident,length,nident,mismatch,gaps"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") > 2


@pytest.mark.parametrize("alphabet,gaps", [("dna", None), ("protein", None), ("dna", (4, 0)), ("dna", (3, 3)),
                                           ("dna", "int")])
def test_banded_scores_alone_equal_cpu(alphabet, gaps):
    """BandedAligner.scores (banded_score_global: byte profile and DPX cells; with scores outside a byte,
    banded_align_global without direction words) against the CPU's banded fill, bands from 0 to the whole
    matrix, lengths around the 256-row bands, gap extension 0 and equal to the opening."""
    from nwalign.plan.bands import band_limits
    from nwalign.backends.cpu.banded import banded_score
    from nwalign.backends.cuda.banded import BandedAligner

    rng = np.random.default_rng(5)
    if gaps == "int":
        s = make_scoring(alphabet, "global", match=300, mismatch=-200, gap_open=500, gap_extend=40)
    else:
        s = make_scoring(alphabet, "global", gap_open=gaps and gaps[0], gap_extend=gaps and gaps[1])
    assert (BandedAligner(s).score_func is None) == (gaps == "int")
    letters = DNA if alphabet == "dna" else PROTEIN
    pairs, w = [], []
    for length in (1, 3, 40, 255, 256, 257, 600, 1500):
        for rate in (0.0, 0.05, 0.3):
            a = random_seq(rng, letters, length)
            b = mutate(rng, a, letters, rate=rate)
            pairs.append((s.encode_str(a), s.encode_str(b)))
            w.append(int(rng.choice([0, 1, 5, 32, 100, 5000])))
    got = BandedAligner(s).scores(pairs, w)
    want = [banded_score(q, t, s.matrix, s.gap_open, s.gap_extend, *band_limits(len(q), len(t), wk))
            for (q, t), wk in zip(pairs, w)]
    assert got.tolist() == want


@pytest.mark.parametrize("case", ["16S", "genomes"])
def test_allpairs_scores_from_bands_equal_cpu(tmp_path, monkeypatch, case, capsys):
    """allpairs --min-identity with the optimal scores from banded fills (nwalign.plan.bands.optimal_scores, the
    path for long sequences; for 16S genes made to take it by lowering its length threshold; for 12
    SARS-CoV-2 genomes with runs of N its own): the CPU engine's bytes, and -v says which path ran."""
    import nwalign.jobs.allpairs.job
    import nwalign.jobs.allpairs.run
    from nwalign.cli import main

    if case == "16S":
        monkeypatch.setattr(nwalign.jobs.allpairs.run, "BAND_FIRST_LENGTH", 100)
        recs, mid = read_fasta(SIXTEEN_S)[:40], "0.9"
    else:
        recs, mid = read_fasta(SARS2)[:12], "0.99"
    fasta = tmp_path / "g.fa"
    fasta.write_text("".join(f">g{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    outs = []
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.tsv"
        assert main(["allpairs", str(fasta), "--min-identity", mid, "--backend", backend, "-o", str(out), "-v",
                     "--columns", "qseqid,sseqid,score,pident,length,nident,mismatch,gaps"]) == 0
        outs.append(out.read_bytes())
        err = capsys.readouterr().err
        assert f"optimal scores from banded fills on the {'GPU' if backend == 'cuda' else 'CPU'}" in err
    assert outs[0] == outs[1] and outs[0].count(b"\n") > 2


@pytest.mark.parametrize("case", ["16S", "genomes"])
def test_allpairs_every_pair_in_bands_equals_cpu(tmp_path, monkeypatch, case, capsys):
    """allpairs of long sequences on the GPU that aligns every pair (alignment columns, no identity filter;
    a distance matrix with and without --min-identity): optimal scores from proved bands, each pair then
    aligned in doubling bands up to its optimum. The same rows and matrix as the CPU engine's full
    alignments (16S genes made to take this path by lowering its length threshold; 6 SARS-CoV-2 genomes
    with runs of N take it by themselves)."""
    import nwalign.jobs.allpairs.job
    import nwalign.jobs.allpairs.run
    from nwalign.cli import main

    if case == "16S":
        monkeypatch.setattr(nwalign.jobs.allpairs.run, "BAND_FIRST_LENGTH", 100)
        recs = read_fasta(SIXTEEN_S)[:30]
    else:
        recs = read_fasta(SARS2)[:6]
    fasta = tmp_path / "g.fa"
    fasta.write_text("".join(f">g{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    cols = "qseqid,sseqid,score,pident,length,nident,mismatch,gaps,qlen,slen"
    for extra in ([], ["--min-identity", "0.85"]):
        outs, mats = [], []
        for backend in ("cpu", "cuda"):
            out, mat = tmp_path / f"{backend}.tsv", tmp_path / f"{backend}.npy"
            assert main(["allpairs", str(fasta), "--backend", backend, "-o", str(out), "-v", "--columns", cols,
                         "--matrix-out", str(mat)] + extra) == 0
            outs.append(out.read_bytes())
            mats.append(np.load(mat))
            err = capsys.readouterr().err
            assert "every pair then aligned in doubling bands" in err
            assert f"banded fills on the {'GPU' if backend == 'cuda' else 'CPU'}" in err
        assert outs[0] == outs[1] and outs[0].count(b"\n") >= 2
        assert np.array_equal(mats[0], mats[1])
