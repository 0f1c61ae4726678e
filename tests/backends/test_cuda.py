"""Every CUDA kernel against the CPU engine (marked gpu: runs on a machine with a GPU and CuPy)."""

import numpy as np
import pytest

from nwalign.backends.cpu import score_codes
from nwalign.backends.cuda import BLOCK_SHAPES, KERNELS
from nwalign.backends.engine import Encoded, align_pair
from nwalign.errors import NwalignError
from nwalign.records.alignment import rescore
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import Record, read_fasta

from helpers import GENOME_A, GENOME_B, seed_of
from helpers import DNA, DNA_IUPAC, PROTEIN, mutate, random_seq

pytestmark = pytest.mark.gpu

VARIANTS = [(k, (32, 32), True) for k in KERNELS]
VARIANTS += [("diagonal-block", shape, shared) for shape in BLOCK_SHAPES for shared in (True, False)
             if (shape, shared) != ((32, 32), True)]
# Lengths 1 and 2, tile/warp/block sizes +-1, very unequal pairs, and a few long ones.
LENGTHS = [(1, 1), (1, 2), (2, 1), (7, 9), (31, 33), (32, 32), (33, 31), (63, 65), (127, 129), (128, 128),
           (8, 130), (255, 257), (256, 256), (257, 255), (513, 40), (1, 3000), (3000, 7), (1025, 1023),
           (2000, 3000)]


def _options(kernel, block, shared):
    from nwalign.backends.cuda.pair import Options

    return Options(kernel=kernel, block=block, shared=shared, submatrix_cells=5000)


def _pairs(seed, alphabet):
    rng = np.random.default_rng(seed)
    letters = {"dna": DNA, "dna-iupac": DNA_IUPAC}.get(alphabet, PROTEIN)
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
@pytest.mark.parametrize("alphabet, gaps", [("dna", (10, 1)), ("dna", (4, 4)), ("protein", (11, 1)),
                                            ("dna-iupac", (10, 1))])
def test_kernel_equals_cpu_engine(kernel, block, shared, mode, alphabet, gaps):
    scoring = make_scoring(alphabet.replace("-iupac", ""), mode, gap_open=gaps[0], gap_extend=gaps[1])
    opts = _options(kernel, block, shared)
    seed = seed_of(kernel, mode, alphabet)
    for a, b in _pairs(seed, alphabet):
        q, t = _enc(scoring, a, "q"), _enc(scoring, b, "t")
        expected = score_codes(q.codes, t.codes, scoring.matrix, *gaps, scoring.mode_code)
        score_only = align_pair(q, t, scoring, score_only=True, backend="cuda", cuda_options=opts)
        assert score_only.score == expected, (seed, kernel, mode, len(a), len(b))
        aln = align_pair(q, t, scoring, backend="cuda", cuda_options=opts)
        assert aln.score == expected, (seed, kernel, mode, len(a), len(b))
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


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
@pytest.mark.parametrize("m, n", [(3000, 2900), (1300, 4000), (257, 5000), (4000, 300)])
def test_wavefront_linear_space_traceback(mode, m, n):
    """A tiny direction budget forces checkpoints + block recomputation; the result stays optimal."""
    from nwalign.backends.cuda.pair import Options

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


@pytest.mark.parametrize("m, n, rate, rows", [(3000, 2950, 0.05, 6), (5000, 5200, 0.15, 16), (2600, 2400, 0.3, 12)])
def test_wavefront_windowed_linear_space(monkeypatch, caplog, m, n, rate, rows):
    """Linear space with each block recomputed over a window of columns (global mode): the same alignment
    as the blocks over whole rows and as the CPU engine's score; with no margin the windows miss the path
    and the traceback is done again over whole rows, still optimal."""
    import cupy
    from nwalign.backends.cuda import wavefront
    from nwalign.backends.cuda.wavefront import Wavefront, dirs_bytes

    rng = np.random.default_rng(m + n)
    a = random_seq(rng, DNA, m)
    b = (mutate(rng, a, DNA, rate=rate) + random_seq(rng, DNA, n))[:n]
    scoring = make_scoring("dna")
    q, t = scoring.encode_str(a), scoring.encode_str(b)
    expected = score_codes(q, t, scoring.matrix, 10, 1, 0)
    monkeypatch.setattr(wavefront, "WINDOW_ROWS", 600)
    monkeypatch.setattr(wavefront, "WINDOW_MARGIN", 100)
    budget = dirs_bytes(m, n) // 3  # not every cell's directions: linear space
    wf = Wavefront(cupy, q, t, scoring, rows_per_lane=rows, packed=rows == 16)
    whole = wf.align(budget, windowed=False)
    windowed = wf.align(budget)
    assert whole[0] == windowed[0] == expected
    assert np.array_equal(whole[5], windowed[5])
    aln = align_pair(_enc(scoring, a, "q"), _enc(scoring, b, "t"), scoring, backend="cuda",
                     cuda_options=_wave_options(budget))
    assert aln.score == expected and np.array_equal(aln.ops, whole[5])
    monkeypatch.setattr(Wavefront, "_margin", staticmethod(lambda rows: 0))
    with caplog.at_level("INFO", logger="nwalign"):
        missed = wf.align(budget)
    assert missed[0] == expected and np.array_equal(missed[5], whole[5])
    if rate >= 0.3:  # windows of exactly the block's slope cannot hold a path with this many gaps
        assert "again over whole rows" in caplog.text


def test_wavefront_windows_widen_around_a_long_insertion(monkeypatch, caplog):
    """1,200 target residues inserted in one row of the path (a gap in the query, inside one block): the
    first windows miss the path, wider ones (from the same checkpoints) hold it, and the alignment is the
    one over whole rows, without falling back to them. (A gap in the target runs down a column: windows
    hold it at any length.)"""
    import cupy
    from nwalign.backends.cuda import wavefront
    from nwalign.backends.cuda.wavefront import Wavefront, dirs_bytes

    rng = np.random.default_rng(44)
    a = random_seq(rng, DNA, 6000)
    b = mutate(rng, a[:2300] + random_seq(rng, DNA, 1200) + a[2300:], DNA, rate=0.05)
    scoring = make_scoring("dna")
    q, t = scoring.encode_str(a), scoring.encode_str(b)
    expected = score_codes(q, t, scoring.matrix, 10, 1, 0)
    monkeypatch.setattr(wavefront, "WINDOW_ROWS", 600)
    monkeypatch.setattr(wavefront, "WINDOW_MARGIN", 100)
    budget = dirs_bytes(len(q), len(t)) // 3
    wf = Wavefront(cupy, q, t, scoring)
    whole = wf.align(budget, windowed=False)
    with caplog.at_level("INFO", logger="nwalign"):
        widened = wf.align(budget)
    assert whole[0] == widened[0] == expected and np.array_equal(whole[5], widened[5])
    assert "left a block's window" in caplog.text and "again over whole rows" not in caplog.text


def _wave_options(budget):
    from nwalign.backends.cuda.pair import Options

    return Options(kernel="wavefront", max_memory=budget)


WAVE_ROWS = (4, 6, 8, 12, 16)
PACKED_ROWS = (8, 12, 16)


@pytest.mark.parametrize("rows", WAVE_ROWS)
@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
def test_wave_score_rows_and_grid(rows, mode):
    """wave_score.cu: band edges (32 x rows), short targets (fill and drain overlap), and grids smaller
    than the band count (warps take several bands; the hand-off row is reused)."""
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront

    band = 32 * rows
    sizes = [(1, 1), (5, 40), (40, 5), (band - 1, 300), (band, 301), (band + 1, 29), (3 * band + 7, 1000),
             (2000, 31), (2000, 32), (33, 2000)]
    rng = np.random.default_rng(rows)
    for gaps in ((10, 1), (3, 3)):
        scoring = make_scoring("dna", mode, gap_open=gaps[0], gap_extend=gaps[1])
        for m, n in sizes:
            a = random_seq(rng, DNA, m)
            b = (mutate(rng, a, DNA, rate=0.15) + random_seq(rng, DNA, n))[:n]
            q, t = scoring.encode_str(a), scoring.encode_str(b)
            expected = score_codes(q, t, scoring.matrix, *gaps, scoring.mode_code)
            for blocks in (None, 2, 1):
                for packed in ((False, True) if mode == "global" and rows in PACKED_ROWS else (False,)):
                    wf = Wavefront(cupy, q, t, scoring, rows, packed)
                    wf.max_blocks = blocks
                    assert wf.fast
                    assert wf.score() == expected, (rows, mode, gaps, m, n, blocks, packed)
                    assert wf.overflows == 0


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
def test_wave_score_gap_from_column_zero(mode):
    """Mismatches dearer than a gap: H(i, 1) may come from E(i, 1) = H(i, 0) - go (a gap leaving column 0),
    which a pass that starts E at minus infinity misses."""
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront

    rng = np.random.default_rng(3)
    scoring = make_scoring("dna", mode, match=2, mismatch=-40, gap_open=5, gap_extend=1)
    for m, n in ((300, 280), (700, 50), (64, 900)):
        q = scoring.encode_str(random_seq(rng, DNA, m))
        t = scoring.encode_str(random_seq(rng, DNA, n))
        expected = score_codes(q, t, scoring.matrix, 5, 1, scoring.mode_code)
        for rows in WAVE_ROWS:
            assert Wavefront(cupy, q, t, scoring, rows).score() == expected, (mode, m, n, rows)


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
def test_wave_score_end_cell_equals_previous_pass(mode):
    """Local/semiglobal end cells (ties: earliest row, then column) agree with wavefront.cu's pass."""
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront, GLOBAL

    rng = np.random.default_rng(5)
    scoring = make_scoring("dna", mode, match=1, mismatch=-1, gap_open=1, gap_extend=1)  # many ties
    for m, n in ((700, 650), (1500, 90), (90, 1500)):
        q = scoring.encode_str(random_seq(rng, DNA, m))
        t = scoring.encode_str(random_seq(rng, DNA, n))
        cells = []
        for fast in (True, False):
            wf = Wavefront(cupy, q, t, scoring, 8)
            wf.fast = fast
            _, band_best = wf.launch(0, m, n, wf.border_row, wf.neg_row, False, wf.mode != GLOBAL)
            cells.append(wf.end_cell(band_best))
        assert cells[0] == cells[1]
        assert cells[0][0] == score_codes(q, t, scoring.matrix, 1, 1, scoring.mode_code)


def _nibbles(dirs, r0, r1, ncols, planes, local):
    """Direction nibbles of rows r0+1..r1, columns 1..ncols from a [band][lane][column] word array of
    8 rows per word: nibbles, or wave_score.cu's bit planes (decoded as wavefront.cu's wave_dir does)."""
    w = dirs.get().reshape(-1, 32, ncols + 1)[:, :, None, 1:]          # band, lane, row, column
    r = np.arange(8, dtype=np.uint32)[None, None, :, None]
    if planes:
        bit = lambda pos: (w >> pos) & 1  # noqa: E731
        fw, ew = bit(22 - 3 * r), bit(23 - 3 * r)
        nib = np.where(fw == 1, 2, ew) | bit(31 - r) << 2 | bit(21 - 3 * r) << 3
    else:
        nib = (w >> (4 * r)) & 15
        if not local:
            nib = np.where(nib & 3 == 3, nib ^ 1, nib)  # source 3 outside local mode reads as F (2)
    return nib.reshape(-1, ncols)[:r1 - r0]                              # row, column


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
def test_wavefront_directions_equal_cpu_engine(mode):
    """Both direction-storing passes (wave_score.cu, and wavefront.cu for wide scores) write the CPU
    engine's direction byte (source, E and F extension, tie order) for every cell, as wave_trace reads
    them: band and 32-column chunk
    edges, ties (go == ge; +1/-1 scores), blocks starting at a row r0 > 0 (as the linear-space traceback
    recomputes them), and grids of 1-2 blocks (warps take several bands)."""
    import cupy
    from nwalign.backends.cpu.dp import fill_band, init_row0
    from nwalign.backends.cuda.wavefront import Wavefront

    rng = np.random.default_rng(11)
    for params in (dict(gap_open=10, gap_extend=1), dict(gap_open=3, gap_extend=3),
                   dict(match=1, mismatch=-1, gap_open=1, gap_extend=1)):
        scoring = make_scoring("dna", mode, **params)
        go, ge = scoring.gap_open, scoring.gap_extend
        for m, n in ((1, 1), (255, 63), (256, 64), (257, 65), (700, 1000), (1100, 31), (40, 2000)):
            a = random_seq(rng, DNA, m)
            b = (mutate(rng, a, DNA, rate=0.15) + random_seq(rng, DNA, n))[:n]
            q, t = scoring.encode_str(a), scoring.encode_str(b)
            for r0, blocks in ((0, None), (0, 1), (m // 3, 2)):
                H = np.empty(n + 1, dtype=np.int32)
                F = np.empty(n + 1, dtype=np.int32)
                init_row0(H, F, scoring.mode_code, go, ge)
                best = np.zeros(3, dtype=np.int64)
                scratch = np.empty((1, n + 1), dtype=np.uint8)
                fill_band(q, t, scoring.matrix, go, ge, scoring.mode_code, 0, r0, n, H, F, scratch, False, best)
                topH, topF = cupy.asarray(H), cupy.asarray(F)
                cpu = np.empty((m - r0, n + 1), dtype=np.uint8)
                fill_band(q, t, scoring.matrix, go, ge, scoring.mode_code, r0, m, n, H, F, cpu, True, best)
                for fast in (True, False):
                    wf = Wavefront(cupy, q, t, scoring, 6)
                    wf.fast, wf.max_blocks = fast, blocks
                    dirs, _ = wf.launch(r0, m, n, topH, topF, True, False)
                    gpu = _nibbles(dirs, r0, m, n, fast and mode != "local", mode == "local")
                    assert np.array_equal(gpu, cpu[:, 1:]), (mode, params, m, n, r0, blocks, fast)


def test_wave_score_falls_back_for_wide_scores():
    """Scores outside a signed byte take wavefront.cu's score pass; both give the CPU engine's score."""
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront

    rng = np.random.default_rng(9)
    scoring = make_scoring("dna", "global", match=300, mismatch=-200, gap_open=500, gap_extend=20)
    a = random_seq(rng, DNA, 3000)
    b = mutate(rng, a, DNA, rate=0.1)
    q, t = scoring.encode_str(a), scoring.encode_str(b)
    wf = Wavefront(cupy, q, t, scoring, 12)
    assert not wf.fast and wf.rows_per_lane == 8
    assert wf.score() == score_codes(q, t, scoring.matrix, 500, 20, 0)
    qe, te = _enc(scoring, a, "q"), _enc(scoring, b, "t")
    aln = align_pair(qe, te, scoring, backend="cuda", cuda_options=_options("wavefront", (32, 32), True))
    assert aln.score == wf.score() == rescore(aln, q, t, scoring.matrix, 500, 20)


@pytest.mark.parametrize("rows, packed", [(4, None), (12, False), (8, True), (12, True), (16, True)])
def test_wavefront_linear_space_other_band_heights(rows, packed):
    """Checkpoints written by either score pass at other band heights feed the recompute passes exactly."""
    from nwalign.backends.cuda.pair import Options

    rng = np.random.default_rng(rows)
    for mode in ("global", "local", "semiglobal") if not packed else ("global",):
        a = random_seq(rng, DNA, 3100)
        b = mutate(rng, a, DNA, rate=0.2)[:2900]
        scoring = make_scoring("dna", mode)
        q, t = _enc(scoring, a, "q"), _enc(scoring, b, "t")
        expected = score_codes(q.codes, t.codes, scoring.matrix, 10, 1, scoring.mode_code)
        # room for a few 32*rows-row bands of 4-bit directions, far below the whole matrix
        opts = Options(kernel="wavefront", max_memory=3 * 32 * rows * 2901 // 2, rows_per_lane=rows, packed=packed)
        aln = align_pair(q, t, scoring, backend="cuda", cuda_options=opts)
        assert aln.score == expected
        assert rescore(aln, q.codes, t.codes, scoring.matrix, 10, 1) == expected


def _checkpoints(wf, every):
    """Score-only pass writing H and F of every ``every``-th band boundary: (corner, ckH, ckF) on the host."""
    cp = wf.cp
    band = 32 * wf.rows_per_lane
    count = -(-wf.m // band) // every
    ckH = cp.full((count + 1, wf.n + 1), 7, dtype=cp.int32)
    ckF = cp.full((count + 1, wf.n + 1), 7, dtype=cp.int32)
    wf.launch(0, wf.m, wf.n, wf.border_row, wf.neg_row, False, False, every, ckH, ckF)
    return int(wf.corner.get()[0]), ckH[1:, 1:].get(), ckF[1:, 1:].get()


@pytest.mark.parametrize("rows", PACKED_ROWS)
def test_wave_score16_equals_32_bit_pass(rows):
    """wave_score16.cu: the score and every checkpoint row (H and F) equal the 32-bit pass's, at band edges
    (32 x rows), with DNA and protein scorings, gaps with go = ge, mismatches dearer than gaps, and grids
    smaller than the band count."""
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront

    rng = np.random.default_rng(100 + rows)
    band = 32 * rows
    sizes = [(1, 1), (2, 70), (70, 2), (band - 1, 200), (band, 64), (band + 1, 65), (3 * band + 5, 900),
             (2 * band, 63), (40, 1500)]
    scorings = [make_scoring("dna"), make_scoring("dna", gap_open=3, gap_extend=3),
                make_scoring("dna", match=2, mismatch=-40, gap_open=5, gap_extend=1), make_scoring("protein")]
    for scoring in scorings:
        letters = PROTEIN if scoring.matrix.shape[0] > 16 else DNA
        for m, n in sizes:
            a = random_seq(rng, letters, m)
            b = (mutate(rng, a, letters, rate=0.2) + random_seq(rng, letters, n))[:n]
            q, t = scoring.encode_str(a), scoring.encode_str(b)
            expected = score_codes(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend, 0)
            reference = None
            for packed, blocks in ((False, None), (True, None), (True, 1)):
                wf = Wavefront(cupy, q, t, scoring, rows, packed)
                wf.max_blocks = blocks
                assert wf.score() == expected, (rows, m, n, packed, blocks)
                got = _checkpoints(wf, 1)
                assert got[0] == expected
                if reference is None:
                    reference = got
                assert all(np.array_equal(x, y) for x, y in zip(got[1:], reference[1:])), (rows, m, n, packed)
                assert wf.packed == packed and wf.overflows == 0


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
def test_wave_score16_through_align_pair(alphabet):
    """Options(packed=True) reaches the 16-bit pass: every edge length of the kernel suite, global mode."""
    from nwalign.backends.cuda.pair import Options

    scoring = make_scoring(alphabet)
    opts = Options(kernel="wavefront", packed=True, rows_per_lane=16)
    for a, b in _pairs(17, alphabet):
        q, t = _enc(scoring, a, "q"), _enc(scoring, b, "t")
        expected = score_codes(q.codes, t.codes, scoring.matrix, scoring.gap_open, scoring.gap_extend, 0)
        assert align_pair(q, t, scoring, score_only=True, backend="cuda", cuda_options=opts).score == expected


def test_wave_score16_chosen_for_long_global_pairs():
    import cupy
    from nwalign.backends.cuda.wavefront import PACKED_MIN_ROWS, Wavefront

    scoring = make_scoring("dna")
    long_q = np.zeros(PACKED_MIN_ROWS, dtype=np.uint8)
    t = scoring.encode_str("ACGT" * 50)
    assert Wavefront(cupy, long_q, t, scoring).packed == (int(cupy.cuda.Device().compute_capability) >= 90)
    assert not Wavefront(cupy, long_q[:-1], t, scoring).packed  # shorter: the 32-bit pass is faster
    for mode in ("local", "semiglobal"):
        assert not Wavefront(cupy, long_q, t, make_scoring("dna", mode)).packed
        with pytest.raises(NwalignError, match="16-bit"):
            Wavefront(cupy, t, t, make_scoring("dna", mode), 12, True)


def test_wave_score16_overflow_is_recomputed_in_32_bit():
    """A failed range check recomputes the pass in 32-bit: forced by a tiny limit, and genuinely by scores
    whose spread over a warp's cells leaves int16."""
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront

    rng = np.random.default_rng(11)
    scoring = make_scoring("dna")
    a = random_seq(rng, DNA, 2000)
    b = mutate(rng, a, DNA, rate=0.1)
    q, t = scoring.encode_str(a), scoring.encode_str(b)
    expected = score_codes(q, t, scoring.matrix, 10, 1, 0)
    reference = _checkpoints(Wavefront(cupy, q, t, scoring, 12, False), 1)
    wf = Wavefront(cupy, q, t, scoring, 12, True)
    wf.limit16 = 3
    got = _checkpoints(wf, 1)
    assert wf.overflows == 1 and not wf.packed
    assert got[0] == expected and all(np.array_equal(x, y) for x, y in zip(got[1:], reference[1:]))

    # Equal sequences, +100/-100, gaps 400/1: down a column H rises by 100 per row until the diagonal, so
    # a band crossing it spans far more than int16 holds (and the host would not choose the 16-bit pass).
    big = make_scoring("dna", match=100, mismatch=-100, gap_open=400, gap_extend=1)
    seq = random_seq(rng, DNA, 1500)
    q = t = big.encode_str(seq)
    expected = score_codes(q, t, big.matrix, 400, 1, 0)
    wf = Wavefront(cupy, q, t, big, 16, True)
    assert wf.score() == expected
    assert wf.overflows == 1 and not wf.packed
    assert not Wavefront(cupy, q, t, big).packed
    opts = _options("wavefront", (32, 32), True)
    # linear space (two 512-row bands of directions per block): its forward pass overflows
    opts.packed, opts.rows_per_lane, opts.max_memory = True, 16, 2 * 512 * 1501 // 2
    qe = _enc(big, seq, "q")
    aln = align_pair(qe, qe, big, backend="cuda", cuda_options=opts)
    assert aln.score == expected == rescore(aln, q, t, big.matrix, 400, 1)


def test_wavefront_budget_below_one_band_is_an_error():
    from nwalign.backends.cuda.pair import Options

    scoring = make_scoring("dna")
    q = _enc(scoring, "ACGT" * 200, "q")
    with pytest.raises(NwalignError, match="max_memory"):
        align_pair(q, q, scoring, backend="cuda", cuda_options=Options(kernel="wavefront", max_memory=1000))


def test_gpu_memory_error_is_clear():
    from nwalign.backends.cuda.pair import Options, _check_memory
    import cupy

    with pytest.raises(NwalignError, match="GPU memory"):
        _check_memory(cupy, 1 << 50, "the direction matrix")
    with pytest.raises(NwalignError, match="unknown kernel"):
        scoring = make_scoring("dna")
        q = _enc(scoring, "ACGT", "q")
        align_pair(q, q, scoring, backend="cuda", cuda_options=Options(kernel="nope"))


@pytest.mark.parametrize("alphabet, gaps", [("dna", (10, 1)), ("dna", (4, 4)), ("protein", (11, 1))])
def test_glocal_on_the_gpu_is_the_cpu_engines_alignment(alphabet, gaps):
    """Glocal on the wavefront kernels (the query whole, the target's ends free): the CPU engine's score,
    end cell and alignment, for a query inside, across and past the target's ends, short and long (the
    row-band score pass and its checkpointed traceback), and a query longer than its target."""
    from nwalign.backends.cpu.pair import align_codes
    from nwalign.backends.cuda.pair import Options

    rng = np.random.default_rng(57)
    letters = DNA if alphabet == "dna" else PROTEIN
    scoring = make_scoring(alphabet, "glocal", gap_open=gaps[0], gap_extend=gaps[1])
    for m, n, place in ((20, 300, "inside"), (400, 5000, "inside"), (300, 4000, "start"), (300, 4000, "end"),
                        (3000, 2000, "longer"), (1, 50, "inside"), (50, 1, "longer")):
        a = random_seq(rng, letters, m)
        t = random_seq(rng, letters, n)
        if place == "inside":
            at = int(rng.integers(0, max(1, n - m)))
            t = t[:at] + mutate(rng, a, letters, rate=0.1) + t[at + m:]
        elif place == "start":
            t = mutate(rng, a, letters, rate=0.1)[m // 3:] + t
        elif place == "end":
            t = t + mutate(rng, a, letters, rate=0.1)[:2 * m // 3]
        q, tt = _enc(scoring, a, "q"), _enc(scoring, t, "t")
        want = align_codes(q.codes, tt.codes, scoring.matrix, gaps[0], gaps[1], scoring.mode_code)
        for budget in (None, 3 * 32 * 8 * (len(t) + 1) // 2):
            opts = Options(kernel="wavefront") if budget is None else Options(kernel="wavefront", max_memory=budget)
            got = align_pair(q, tt, scoring, backend="cuda", cuda_options=opts)
            assert (got.score, got.query_start, got.query_end, got.target_start, got.target_end) == want[:5], \
                (m, n, place, budget)
            assert np.array_equal(got.ops, want[5])

