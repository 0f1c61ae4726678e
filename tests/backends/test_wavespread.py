"""One pair's 16-bit score pass spread over GPUs (nwalign/backends/cuda/wavespread.py): the chunk plan on the CPU;
on a GPU, the pass dealt to two or three "places" on one GPU (each on its share of the SMs), and on every
GPU of the machine, against the one-GPU pass: the same score, checkpoint rows and alignment."""

import numpy as np
import pytest

from nwalign.backends.cpu import score_codes
from nwalign.backends.cuda.wavespread import CHUNKS_PER_ROUND, MAX_TAG_BANDS, chunk_bands, local_bands
from nwalign.scoring.schemes import make_scoring

from helpers import DNA, PROTEIN, mutate, random_seq


@pytest.mark.parametrize("nbands, places, warps", [(1, 2, 2112), (79, 2, 2112), (19531, 4, 2112), (19531, 2, 2112),
                                                   (5000, 3, 100), (7, 4, 1), (10 ** 6, 8, 2112), (3, 1, 4)])
def test_chunk_plan_covers_every_band_once(nbands, places, warps):
    chunk = chunk_bands(nbands, places, warps)
    assert 1 <= chunk <= max(1, warps) and places * chunk <= MAX_TAG_BANDS
    counts = [local_bands(nbands, places, chunk, g) for g in range(places)]
    assert sum(counts) == nbands
    assert chunk <= -(-nbands // places)  # no place takes more than its share in one chunk
    assert max(counts) - min(counts) <= chunk  # the places' shares differ by less than a chunk
    if nbands >= places * warps and warps >= CHUNKS_PER_ROUND * places:  # a round of warps spans chunks
        assert chunk * CHUNKS_PER_ROUND * places <= warps


def test_peer_access_only_where_a_gpu_writes():
    from nwalign.backends.cuda.wavespread import peer_pairs

    assert peer_pairs([0, 1, 2, 3]) == [(0, 1), (1, 0), (1, 2), (2, 0), (2, 3), (3, 0)]
    assert peer_pairs([2, 0]) == [(0, 2), (2, 0)] and peer_pairs([0, 0, 0]) == []


def test_a_lone_pair_spreads_where_it_pays():
    from nwalign.jobs.pair import spreads_one_pair
    from nwalign.parallel.cluster import AUTO_MIN_PAIR_CELLS

    assert spreads_one_pair("all", 10) and spreads_one_pair("0,1", 10) and spreads_one_pair([0, 1], 10)
    assert not spreads_one_pair("auto", AUTO_MIN_PAIR_CELLS - 1) and not spreads_one_pair(None, 10 ** 12)
    assert spreads_one_pair("auto", AUTO_MIN_PAIR_CELLS) and spreads_one_pair(None, 10 ** 14)


def _pair(rng, m, n, letters, rate=0.1):
    a = random_seq(rng, letters, m)
    return a, (mutate(rng, a, letters, rate=rate) + random_seq(rng, letters, n))[:n]


def _checkpoints(wf, every):
    cp = wf.cp
    count = -(-wf.m // (32 * wf.rows_per_lane)) // every
    ckH = cp.full((count + 1, wf.n + 1), 7, dtype=cp.int32)
    ckF = cp.full((count + 1, wf.n + 1), 7, dtype=cp.int32)
    wf.launch(0, wf.m, wf.n, wf.border_row, wf.neg_row, False, False, every, ckH, ckF)
    return int(wf.corner.get()[0]), ckH[1:, 1:].get(), ckF[1:, 1:].get()


def _spread_equals_one_gpu(places, chunks=(None, 1, 3)):
    import cupy
    from nwalign.backends.cuda.wavefront import Wavefront

    rng = np.random.default_rng(len(places))
    for scoring, letters in ((make_scoring("dna"), DNA), (make_scoring("protein"), PROTEIN),
                             (make_scoring("dna", gap_open=3, gap_extend=3), DNA)):
        for rows in (8, 16):
            band = 32 * rows
            for m, n in ((1, 1), (band - 1, 300), (band + 1, 65), (7 * band + 5, 900), (12 * band, 2000)):
                a, b = _pair(rng, m, n, letters)
                q, t = scoring.encode_str(a), scoring.encode_str(b)
                expected = score_codes(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend, 0)
                reference = _checkpoints(Wavefront(cupy, q, t, scoring, rows, True), 2)
                for chunk in chunks:
                    wf = Wavefront(cupy, q, t, scoring, rows, True, spread=places)
                    assert wf.spread is not None
                    wf.spread.chunk = chunk
                    assert wf.score() == expected, (places, rows, m, n, chunk)
                    got = _checkpoints(wf, 2)
                    assert got[0] == expected
                    assert all(np.array_equal(x, y) for x, y in zip(got[1:], reference[1:])), (rows, m, n, chunk)


@pytest.mark.gpu
@pytest.mark.parametrize("places", [(0, 0), (0, 0, 0)])
def test_spread_pass_on_one_gpu_equals_one_pass(places):
    """Two or three places on one GPU (chunks of 1 and 3 bands, and the planned chunk): the score and every
    checkpoint row equal the one-place pass's."""
    _spread_equals_one_gpu(places)


def _linear_space_equals_one_gpu(monkeypatch, places, m: int, chunk=None):
    """The linear-space traceback over a pass spread over ``places`` (small windows: many blocks) gives
    the one-GPU alignment."""
    import cupy
    from nwalign.backends.cuda import wavefront
    from nwalign.backends.cuda.wavefront import Wavefront, dirs_bytes

    monkeypatch.setattr(wavefront, "WINDOW_ROWS", 600)
    monkeypatch.setattr(wavefront, "WINDOW_MARGIN", 100)
    rng = np.random.default_rng(m)
    scoring = make_scoring("dna")
    a, b = _pair(rng, m, m + m // 90, DNA, rate=0.05)
    q, t = scoring.encode_str(a), scoring.encode_str(b)
    budget = dirs_bytes(len(q), len(t)) // 3
    expected = Wavefront(cupy, q, t, scoring, 8, True).align(budget)
    wf = Wavefront(cupy, q, t, scoring, 8, True, spread=places)
    wf.spread.chunk = chunk
    got = wf.align(budget)
    assert got[:5] == expected[:5] and np.array_equal(got[5], expected[5])


@pytest.mark.gpu
def test_spread_linear_space_alignment_equals_one_gpu(monkeypatch):
    """The linear-space traceback over a spread forward pass: the same alignment as on one GPU."""
    _linear_space_equals_one_gpu(monkeypatch, (0, 0), 9000, chunk=2)


@pytest.mark.gpu
@pytest.mark.multigpu
def test_spread_pass_over_every_gpu_equals_one_gpu(monkeypatch):
    """Every GPU of the machine: the score pass as on one GPU, and the linear-space alignment (its
    windows recomputed on every GPU) too."""
    from nwalign.backends import cuda

    gpus = tuple(cuda.device_numbers())
    _spread_equals_one_gpu(gpus, chunks=(None, 2))
    _linear_space_equals_one_gpu(monkeypatch, gpus, 20000)


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.parametrize("extra", [["--score-only"], ["--columns", "qseqid,sseqid,score,length,pident,cigar"],
                                   ["--columns", "qseqid,sseqid,score,length,pident,cigar", "--max-memory", "1G"]])
def test_pair_over_every_gpu_byte_identical(tmp_path, extra):
    """`pair` of one 300 kb pair (the 16-bit pass) with --devices all writes what --devices 0 writes: the
    score, and the alignment with every direction on the GPU or in linear space (its windows recomputed on
    every GPU)."""
    from nwalign.cli import main

    outs = []
    for devices in ("0", "all"):
        out = tmp_path / f"{devices}.out"
        assert main(["pair", "--random", "300k", "--mutate", "0.02", "--seed", "4", "--format", "tsv", *extra,
                     "--devices", devices, "-o", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1] and len(outs[0]) > 0


class _Stream:
    """A stand-in for a CUDA stream: done after ``polls`` queries (never where None), then its error."""

    def __init__(self, polls, error=None):
        self.polls, self.error, self.synced = polls, error, False

    @property
    def done(self):
        if self.polls is None:
            return False
        self.polls -= 1
        return self.polls < 0

    def synchronize(self):
        self.synced = True
        if self.error:
            raise self.error


def test_a_gpu_failing_mid_pass_ends_the_wait_at_once():
    """The spread pass waits for every GPU by polling: a GPU whose kernel failed ends the wait with its
    error (exit status 1) even while the others spin forever on hand-off words that never come; healthy
    ones are waited for."""
    from nwalign.backends.cuda.wavespread import SpreadPass
    from nwalign.errors import DeviceLost, WorkerLost

    spread = object.__new__(SpreadPass)
    spread.places = [0, 1, 2]
    streams = [_Stream(None), _Stream(None), _Stream(3, RuntimeError("cudaErrorIllegalAddress"))]
    with pytest.raises(DeviceLost, match="GPU 2 failed .*cudaErrorIllegalAddress") as err:
        spread._wait(streams)
    assert isinstance(err.value, WorkerLost) and "\n" not in str(err.value)
    healthy = [_Stream(2), _Stream(0), _Stream(5)]
    spread._wait(healthy)
    assert all(s.synced for s in healthy)
