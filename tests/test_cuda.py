"""Every CUDA kernel against the CPU engine (marked gpu: runs on a machine with a GPU and CuPy)."""

import numpy as np
import pytest

from nwalign.cpu import score_codes
from nwalign.cuda import BLOCK_SHAPES, KERNELS
from nwalign.engine import Encoded, align_pair
from nwalign.errors import NwalignError
from nwalign.results import rescore
from nwalign.scoring import make_scoring
from nwalign.sequences import Record, read_fasta

from conftest import GENOME_A, GENOME_B
from helpers import DNA, PROTEIN, mutate, random_seq

pytestmark = pytest.mark.gpu

VARIANTS = [(k, (32, 32), True) for k in KERNELS]
VARIANTS += [("diagonal-block", shape, shared) for shape in BLOCK_SHAPES for shared in (True, False)
             if (shape, shared) != ((32, 32), True)]
# Lengths 1 and 2, tile/warp/block sizes +-1, very unequal pairs, and a few long ones.
LENGTHS = [(1, 1), (1, 2), (2, 1), (7, 9), (31, 33), (32, 32), (33, 31), (63, 65), (127, 129), (128, 128),
           (8, 130), (255, 257), (256, 256), (257, 255), (513, 40), (1, 3000), (3000, 7), (1025, 1023),
           (2000, 3000)]


def _options(kernel, block, shared):
    from nwalign.cuda.pair import Options

    return Options(kernel=kernel, block=block, shared=shared, submatrix_cells=5000)


def _pairs(seed, alphabet):
    rng = np.random.default_rng(seed)
    letters = DNA if alphabet == "dna" else PROTEIN
    for k, (m, n) in enumerate(LENGTHS):
        a = random_seq(rng, letters, m)
        b = mutate(rng, a, letters)[:n] if k % 2 and n > 2 else random_seq(rng, letters, n)
        yield a, b or letters[0]


def _enc(scoring, seq, name):
    rec = Record(name, name, seq)
    return Encoded(rec, scoring.encode(rec))


@pytest.mark.parametrize("kernel, block, shared", VARIANTS,
                         ids=[f"{k}-{b[0]}x{b[1]}-{'shared' if s else 'global'}" for k, b, s in VARIANTS])
@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
@pytest.mark.parametrize("alphabet, gaps", [("dna", (10, 1)), ("dna", (4, 4)), ("protein", (11, 1))])
def test_kernel_equals_cpu_engine(kernel, block, shared, mode, alphabet, gaps):
    scoring = make_scoring(alphabet, mode, gap_open=gaps[0], gap_extend=gaps[1])
    opts = _options(kernel, block, shared)
    for a, b in _pairs(hash((kernel, mode, alphabet)) % 1000, alphabet):
        q, t = _enc(scoring, a, "q"), _enc(scoring, b, "t")
        expected = score_codes(q.codes, t.codes, scoring.matrix, *gaps, scoring.mode_code)
        score_only = align_pair(q, t, scoring, score_only=True, backend="cuda", cuda_options=opts)
        assert score_only.score == expected, (kernel, mode, len(a), len(b))
        aln = align_pair(q, t, scoring, backend="cuda", cuda_options=opts)
        assert aln.score == expected, (kernel, mode, len(a), len(b))
        assert rescore(aln, q.codes, t.codes, scoring.matrix, *gaps) == expected
        qrow, trow = aln.gapped()
        assert qrow.replace("-", "") == a[aln.query_start:aln.query_end]
        assert trow.replace("-", "") == b[aln.target_start:aln.target_end]


@pytest.mark.parametrize("kernel", KERNELS)
def test_real_genomes_on_gpu(kernel):
    scoring = make_scoring("dna")
    a, b = read_fasta(GENOME_A)[0], read_fasta(GENOME_B)[0]
    q, t = _enc(scoring, a.seq, a.id), _enc(scoring, b.seq, b.id)
    cpu = score_codes(q.codes, t.codes, scoring.matrix, 10, 1, 0)
    opts = _options(kernel, (32, 32), True)
    opts.submatrix_cells = 1 << 26
    aln = align_pair(q, t, scoring, backend="cuda", cuda_options=opts)
    assert aln.score == cpu == 138977
    assert rescore(aln, q.codes, t.codes, scoring.matrix, 10, 1) == cpu


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
@pytest.mark.parametrize("m, n", [(3000, 2900), (1300, 4000), (257, 5000), (4000, 300)])
def test_wavefront_linear_space_traceback(mode, m, n):
    """A tiny direction budget forces checkpoints + block recomputation; the result stays optimal."""
    from nwalign.cuda.pair import Options

    rng = np.random.default_rng(m + n)
    a = random_seq(rng, DNA, m)
    b = (mutate(rng, a, DNA, rate=0.2) + random_seq(rng, DNA, n))[:n]
    scoring = make_scoring("dna", mode)
    q, t = _enc(scoring, a, "q"), _enc(scoring, b, "t")
    expected = score_codes(q.codes, t.codes, scoring.matrix, 10, 1, scoring.mode_code)
    for budget in (2 * 256 * (n + 1) // 2, 256 * (n + 1) // 2, None):
        aln = align_pair(q, t, scoring, backend="cuda", cuda_options=Options(kernel="wavefront", max_memory=budget))
        assert aln.score == expected
        assert rescore(aln, q.codes, t.codes, scoring.matrix, 10, 1) == expected
        qrow, trow = aln.gapped()
        assert qrow.replace("-", "") == a[aln.query_start:aln.query_end]
        assert trow.replace("-", "") == b[aln.target_start:aln.target_end]


def test_wavefront_budget_below_one_band_is_an_error():
    from nwalign.cuda.pair import Options

    scoring = make_scoring("dna")
    q = _enc(scoring, "ACGT" * 200, "q")
    with pytest.raises(NwalignError, match="max-memory"):
        align_pair(q, q, scoring, backend="cuda", cuda_options=Options(kernel="wavefront", max_memory=1000))


def test_gpu_memory_error_is_clear():
    from nwalign.cuda.pair import Options, _check_memory
    import cupy

    with pytest.raises(NwalignError, match="GPU memory"):
        _check_memory(cupy, 1 << 50, "the direction matrix")
    with pytest.raises(NwalignError, match="unknown kernel"):
        scoring = make_scoring("dna")
        q = _enc(scoring, "ACGT", "q")
        align_pair(q, q, scoring, backend="cuda", cuda_options=Options(kernel="nope"))
