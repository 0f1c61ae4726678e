"""The all-pairs GPU kernels against the CPU engine (marked gpu: runs on a machine with a GPU and CuPy)."""

import os

import numpy as np
import pytest

from nwalign.jobs.allpairs.run import KernelChoice, run
from nwalign.cli import main
from nwalign.backends.cpu import score_codes
from nwalign.backends.engine import encode_all
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import read_fasta

from helpers import DATA
from helpers import DNA, DNA_IUPAC, PROTEIN, mutate, random_seq

pytestmark = pytest.mark.gpu

SIXTEEN_S = os.path.join(DATA, "16S_100_dada2.fasta.gz")
# Lengths around slice heights, tile sizes and warp sizes, 1, and very unequal pairs.
LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 257, 600]
VARIANTS = ([("lazy-rscan", k, None) for k in (2, 4, 8, 16, 32)] + [("lazy-rscan", 16, 32), ("rscan", 16, None),
            ("dscan", 16, None), ("dscan", 16, 32), ("tiled-dscan", 16, 8), ("tiled-dscan", 16, 16),
            ("tiled-dscan", 16, 32)])


def _codes(alphabet, seed):
    rng = np.random.default_rng(seed)
    letters = {"dna": DNA, "dna-iupac": DNA_IUPAC}.get(alphabet, PROTEIN)
    seqs = []
    for k, n in enumerate(LENGTHS):
        seqs.append(random_seq(rng, letters, n))
        if k % 3 == 0:  # related pairs too, so global scores are not all strongly negative
            seqs.append(mutate(rng, seqs[-1], letters, rate=0.1) or letters[0])
    return seqs


def _all_pairs(n):
    return np.array([(i, j) for i in range(n) for j in range(n)], dtype=np.int32)


@pytest.mark.parametrize("alphabet", ["dna", "protein", "dna-iupac"])
@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
@pytest.mark.parametrize("kernel, slice_k, block", VARIANTS)
def test_kernel_scores_equal_cpu_engine(kernel, slice_k, block, mode, alphabet):
    from nwalign.backends.cuda.allpairs import AllPairsScorer

    scoring = make_scoring(alphabet.replace("-iupac", ""), mode)
    seqs = _codes(alphabet, 5)
    codes = [scoring.encode_str(s) for s in seqs]
    pairs = _all_pairs(len(codes))
    scorer = AllPairsScorer(codes, scoring, kernel, slice_k, block)
    got = scorer.scores(pairs)
    want = np.array([score_codes(codes[i], codes[j], scoring.matrix, scoring.gap_open, scoring.gap_extend,
                                 scoring.mode_code) for i, j in pairs.tolist()])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(pairs[k].tolist(), int(got[k]), int(want[k])) for k in bad[:5]]


@pytest.mark.parametrize("mode", ["global", "local"])
def test_dscan_global_scratch_and_many_batches(mode):
    """dscan with its diagonals in global memory, and batches small enough to need several streams' worth."""
    from nwalign.backends.cuda.allpairs import AllPairsScorer

    scoring = make_scoring("dna", mode)
    codes = [scoring.encode_str(s) for s in _codes("dna", 9)]
    pairs = _all_pairs(len(codes))
    want = np.array([score_codes(codes[i], codes[j], scoring.matrix, 10, 1, scoring.mode_code)
                     for i, j in pairs.tolist()])
    for kernel in ("dscan", "lazy-rscan", "tiled-dscan"):
        scorer = AllPairsScorer(codes, scoring, kernel, max_memory=200_000)
        scorer.smem_optin = 0  # forces dscan's global-memory diagonals
        assert scorer.batch_size(kernel) < len(pairs) // 4
        assert np.array_equal(scorer.scores(pairs, kernel), want), kernel


def test_16s_every_kernel_equals_cpu_and_filter_matches():
    scoring = make_scoring("dna")
    enc = encode_all(read_fasta(SIXTEEN_S)[:40], scoring, "16S")
    cols = ("qseqid", "sseqid", "score")
    cpu = [(r.i, r.j, r.aln.score) for r in run(enc, None, scoring, cols, threads=4)]
    for kernel in ("lazy-rscan", "rscan", "dscan", "tiled-dscan", "auto"):
        gpu = [(r.i, r.j, r.aln.score) for r in run(enc, None, scoring, cols, backend="cuda", kernels=KernelChoice(kernel))]
        assert gpu == cpu, kernel
    stats_cpu, stats_gpu = {}, {}
    cols = ("qseqid", "sseqid", "score", "pident", "length")
    want = [(r.i, r.j, r.aln.score, r.aln.identity) for r in run(enc, None, scoring, cols, 0.9, threads=4,
                                                                 stats=stats_cpu) if r.passes]
    got = [(r.i, r.j, r.aln.score, r.aln.identity) for r in run(enc, None, scoring, cols, 0.9, threads=4,
                                                                stats=stats_gpu, backend="cuda") if r.passes]
    assert got == want and stats_gpu["filtered"] == stats_cpu["filtered"] > 0


def test_against_and_cli_equal_cpu(tmp_path):
    recs = read_fasta(SIXTEEN_S)[:12]
    a, b = tmp_path / "a.fa", tmp_path / "b.fa"
    a.write_text("".join(f">a{k}\n{r.seq}\n" for k, r in enumerate(recs[:7])))
    b.write_text("".join(f">b{k}\n{r.seq[100:1200]}\n" for k, r in enumerate(recs[7:])))
    outs = {}
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.tsv"
        assert main(["allpairs", str(a), "--against", str(b), "--backend", backend, "-o", str(out),
                     "--columns", "qseqid,sseqid,score,pident,length,nident", "--min-identity", "0.7"]) == 0
        outs[backend] = out.read_text()
    assert outs["cpu"] == outs["cuda"] and len(outs["cpu"].splitlines()) > 0  # rows only, no header line


def test_score_blocks_on_the_gpu_equal_cpu(tmp_path):
    """The score-only fast path on the GPU, whole and in a span, writes the CPU engine's rows; the CLI too."""
    from nwalign.jobs.allpairs.run import score_blocks

    scoring = make_scoring("dna")
    enc = encode_all(read_fasta(SIXTEEN_S)[:30], scoring, "16S")
    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    for span in (None, (17, 400)):
        cpu = "".join(b.rows for b in score_blocks(enc, None, scoring, cols, {}, "cpu", threads=4, span=span))
        gpu = "".join(b.rows for b in score_blocks(enc, None, scoring, cols, {}, "cuda", span=span))
        assert gpu == cpu and cpu.count("\n") == (435 if span is None else 383)
    fasta = tmp_path / "s.fa"
    fasta.write_text("".join(f">g{k}\n{e.record.seq}\n" for k, e in enumerate(enc)))
    outs = []
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.tsv"
        assert main(["allpairs", str(fasta), "--backend", backend, "--columns", ",".join(cols), "-o", str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_bad_options_are_one_line_errors(capsys):
    for args, message in ((["--kernel", "tiled-dscan", "--block", "12"], "--block 12"),
                          (["--kernel", "dscan", "--block", "48"], "--block 48")):
        assert main(["allpairs", SIXTEEN_S, "--backend", "cuda", "--columns", "qseqid,sseqid,score", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


def test_a_score_no_alignment_has_is_an_error_not_a_row(monkeypatch):
    """A kernel that left a score unset (minus infinity, as a failed launch would leave it) is reported as
    an internal error; the batch is not handed out."""
    from nwalign.backends.cuda import allpairs
    from nwalign.errors import NwalignError

    scoring = make_scoring("dna", "global")
    codes = [np.frombuffer(b"\x00\x01\x02\x03" * 20, dtype=np.uint8).copy() for _ in range(3)]
    scorer = allpairs.AllPairsScorer(codes, scoring, kernel="lazy-rscan")

    def unset(self, kernel, d_pairs, n, d_scores, *rest):
        d_scores.fill(-(1 << 30))
    monkeypatch.setattr(allpairs.AllPairsScorer, "_launch", unset)
    with pytest.raises(NwalignError, match="internal error: the GPU's all-pairs kernel"):
        scorer.scores(np.array([[0, 1], [0, 2]], dtype=np.int32))
