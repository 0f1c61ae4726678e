"""One scoring scheme on one backend, resolved once: the CPU engine (Numba, ``nwalign.backends.cpu``) or the CUDA
kernels (``nwalign.backends.cuda``), behind one interface, so that the jobs above it (pair, allpairs) never ask
which backend runs.

The four operations, each with the same results on both backends (the GPU kernels are tested against
the CPU engine under the ``gpu`` marker):

- :meth:`Aligner.align`: one pair -> :class:`~nwalign.records.alignment.Alignment`;
- :meth:`Aligner.align_many`: pairs one after another (each may be large: genomes), in order;
- :meth:`Aligner.align_batch`: many small pairs at once (on the GPU, the batch kernel, :data:`BATCH` pairs
  per call), in order;
- :meth:`Aligner.score_pairs`: optimal scores of batches of index pairs into sequence sets;
- :meth:`Aligner.score_against`: one query's scores against every sequence of a database (local mode).

The database search (:mod:`nwalign.jobs.search.pipeline`) keeps its own GPU pipeline (queries in flight, the
database uploaded while the input is read, hits aligned while the next query scans). The pair
command's job is :mod:`nwalign.jobs.pair`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.backends.cpu.allpairs import cpu_scores
from nwalign.backends.cpu.search import cpu_scan
from nwalign import backends
from nwalign.backends.engine import DEFAULT_MAX_MEMORY, Encoded, align_pair, align_pairs, alignment_from_path
from nwalign.errors import NwalignError
from nwalign.plan.pairorder import pair_batches
from nwalign.records.alignment import Alignment
from nwalign.scoring.schemes import Scoring
from nwalign.io.sequences import as_records

log = logging.getLogger("nwalign")

BATCH = 4096  # pairs per call of the GPU's batch aligner (one call aligns while the last one's alignments are built)


class Aligner:
    """A scoring scheme on a backend chosen once.

    Arguments:
        scoring: the :class:`~nwalign.scoring.schemes.Scoring` (mode, matrix, gaps).
        backend: ``auto`` (the GPU when CuPy sees one), ``cuda`` or ``cpu``.
        device: GPU number (CUDA backend).
        threads: CPU threads (the CPU engine releases the GIL; 0 means 1).
        max_memory: traceback memory budget in bytes (shared by the threads in use).
        cuda_options: a :class:`nwalign.backends.cuda.pair.Options` choosing the pair kernel (CUDA backend;
            default: the wavefront kernel).

    Attributes: ``backend`` (``cpu`` or ``cuda``, resolved), ``scoring``, ``threads``, ``device``.

    Sequences may be given as :class:`~nwalign.backends.engine.Encoded` records, or as anything
    :func:`nwalign.io.sequences.as_records` takes for one sequence (str, bytes, Biopython ``Seq`` or
    ``SeqRecord``), encoded with ``scoring``'s alphabet.

    >>> from nwalign import Aligner, make_scoring
    >>> aligner = Aligner(make_scoring("dna", "global"), backend="cpu")
    >>> aligner.align("GATTACA", "GATCACA").cigar()
    '3=1X3='
    >>> [a.score for a in aligner.align_batch([("ACGT", "ACGT"), ("ACGT", "AGT")])]
    [20, 5]

    Raises:
        NwalignError: an unknown backend, or ``cuda`` without CuPy or a GPU; letters outside the
            scoring's alphabet (at the call that gets them).
    """

    def __init__(self, scoring: Scoring, backend: str = "auto", device: int = 0, threads: int = 1,
                 max_memory: int = DEFAULT_MAX_MEMORY, cuda_options=None, announce: bool = True):
        self.scoring, self.device, self.threads, self.max_memory = scoring, device, max(1, threads), max_memory
        backend = backends.request_for_mode(backend, scoring.mode)  # free ends: the CPU engine's
        self.backend = backends.choose_name(backend, announce)  # -v says which (announce=False: resolved already)
        self.gpu = self.backend == "cuda"
        if self.gpu and cuda_options is None:
            from nwalign.backends.cuda.pair import Options

            cuda_options = Options(device=device)
        self.cuda_options = cuda_options
        self._batch = None      # the GPU's batch aligner, made at first use
        self._searchers: dict = {}

    def align(self, query: Encoded, target: Encoded, score_only: bool = False, progress=None) -> Alignment:
        """One pair (encoded records) -> its optimal :class:`~nwalign.records.alignment.Alignment` (score only with
        ``score_only``); ``progress(fraction)`` follows a large CPU traceback.

        Raises:
            NwalignError: scores could overflow, or the traceback cannot fit in ``max_memory``.
        """
        return align_pair(self.encoded(query, "query"), self.encoded(target, "target"), self.scoring, score_only,
                          self.max_memory, backend=self.backend, cuda_options=self.cuda_options, progress=progress)

    def encoded(self, sequence, name: str = "seq") -> Encoded:
        """``sequence`` as an :class:`~nwalign.backends.engine.Encoded` record (returned as it is when it is one)."""
        if isinstance(sequence, Encoded):
            return sequence
        (record,) = as_records(sequence, name)
        return Encoded(record, self.scoring.encode(record))

    def _pairs(self, pairs) -> list[tuple[Encoded, Encoded]]:
        return [(self.encoded(q, "query"), self.encoded(t, "target")) for q, t in pairs]

    def align_many(self, pairs: Iterable[tuple[Encoded, Encoded]], score_only: bool = False,
                   progress=None) -> Iterator[Alignment]:
        """Pairs one after another (the GPU's pair kernel, or ``threads`` CPU threads sharing
        ``max_memory``), yielding results in input order. A pair whose traceback cannot fit is refused at
        the call, before the first result (see :func:`nwalign.backends.engine.align_pairs`)."""
        return align_pairs(self._pairs(pairs), self.scoring, score_only, self.max_memory, self.threads,
                           self.backend, self.cuda_options, progress)

    @property
    def batch_kernel(self) -> str:
        """What :meth:`align_batch` runs: ``batch_align`` (the GPU's batch kernel) or ``cpu``."""
        from nwalign.backends.cuda.batch import MODES

        return "batch_align" if self.gpu and self.scoring.mode in MODES else "cpu"

    def align_batch(self, pairs: list[tuple[Encoded, Encoded]]) -> Iterator[Alignment]:
        """Many small pairs at once, results in input order. On the GPU in global and local mode: the
        batch kernel (kernels/batch_align.cu, one warp per pair), :data:`BATCH` pairs per call, the next
        call queued before the last one's alignments are built; pairs over its memory budget, and
        semiglobal mode, on the CPU engine. On the CPU: ``threads`` threads."""
        pairs = self._pairs(pairs)
        if self.batch_kernel == "batch_align":
            return self._gpu_batches(pairs)
        return self._cpu_batches(pairs)

    def _cpu_batches(self, pairs):
        def one(pair):
            return align_pair(pair[0], pair[1], self.scoring)

        if self.threads <= 1:
            yield from map(one, pairs)
            return
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for lo in range(0, len(pairs), 4 * BATCH):  # bounded: results wait in order
                yield from pool.map(one, pairs[lo:lo + 4 * BATCH])

    def _gpu_batches(self, pairs):
        if self._batch is None:
            from nwalign.backends.cuda.batch import BatchAligner

            self._batch = BatchAligner(self.scoring, self.device)
        pending = None
        for lo in range(0, len(pairs) + BATCH, BATCH):
            chunk = pairs[lo:lo + BATCH]
            batch = self._batch.submit([(q.codes, t.codes) for q, t in chunk]) if chunk else None
            if pending is not None:
                for (q, t), path in zip(pending[0], pending[1].result()):
                    yield alignment_from_path(q, t, self.scoring, path)
            pending = (chunk, batch) if chunk else None

    @property
    def bands_on_gpu(self) -> bool:
        """Whether :meth:`banded_aligner` runs on the GPU (the CUDA engine, its banded kernel enabled)."""
        if not self.gpu:
            return False
        from nwalign.backends.cuda import banded

        return banded.ENABLED

    def banded_aligner(self, urgent: bool = False):
        """The GPU's banded aligner on this device (:class:`nwalign.backends.cuda.banded.BandedAligner`:
        ``scores(pairs, widths)``, ``align(pairs, scores, widths)``), ``threads`` host threads; ``urgent``:
        its launches ahead of other streams' (the identity filter's scores wait on them). Where the bands
        are not on a GPU (:attr:`bands_on_gpu`): the CPU engine's banded scores
        (:class:`nwalign.backends.cpu.bandscore.BandedScorer`, ``scores`` only), ``threads`` pairs at once."""
        if not self.bands_on_gpu:
            from nwalign.backends.cpu.bandscore import BandedScorer  # Numba: only where the CPU engine runs

            return BandedScorer(self.scoring, self.threads)
        from nwalign.backends.cuda.banded import BandedAligner

        return BandedAligner(self.scoring, self.device, threads=self.threads, urgent=urgent)

    def align_banded(self, q: np.ndarray, t: np.ndarray, score: int, w_max: int):
        """One global pair's path (score, qs, qe, ts, te, ops) in the doubling bands up to half-width ``w_max``
        that reach its optimal ``score`` (the CPU engine, :mod:`nwalign.backends.cpu.banded`), or None when no
        optimal path lies within ``w_max`` of the diagonal."""
        from nwalign.backends.cpu.banded import align_global_banded  # Numba: only where the CPU engine runs

        s = self.scoring
        return align_global_banded(q, t, s.matrix, s.gap_open, s.gap_extend, score, w_max)

    def score_pairs(self, sequences: list[np.ndarray], others: list[np.ndarray] | None = None,
                    kernel: str = "auto", slice_k: int | None = None, block: int | None = None,
                    stats: dict | None = None, span: tuple[int, int] | None = None
                    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Optimal scores of every pair (i, j), i < j, of ``sequences`` (uint8 code arrays), or of every
        (i, j) of ``sequences`` x ``others``, in row order (only those at positions ``span`` = (start,
        stop) of that order when given: :func:`nwalign.plan.pairorder.pair_batches`): yields (pairs: int32 (k, 2), scores: int64 (k,))
        batch by batch (never all pairs at once). On the GPU: the all-pairs kernels after Li et al. (multiple
        pairwise NW on GPUs and clusters, section 4; ``kernel``/``slice_k``/``block`` as :class:`nwalign.backends.cuda.allpairs.AllPairsScorer`
        takes them, ``auto`` chosen from the pair count), the next batch queued before the last one is
        returned; on the CPU: ``threads`` threads, batches of :data:`nwalign.plan.pairorder.TILE` (:func:`nwalign.backends.cpu.allpairs.cpu_scores`). ``stats`` gets
        ``kernel``, ``cells`` (DP cells scored) and on the GPU ``gpu_seconds`` (kernel time).

        Raises:
            NwalignError: the GPU cannot run the kernel (unknown kernel or options, too many letters).
        """
        stats = stats if stats is not None else {}
        if self.gpu:
            yield from self._gpu_scores(sequences, others, kernel, slice_k, block, stats, span)
            return
        yield from cpu_scores(sequences, others, self.scoring, self.threads, stats, span)

    def _gpu_scorer(self, sequences, others, kernel, slice_k, block):
        """The all-pairs scorer of ``sequences`` (and ``others``) on this GPU, its kernel for the whole
        job's pair count and batch size, and the offset of ``others`` in its one concatenated set."""
        from nwalign.backends.cuda.allpairs import AllPairsScorer

        offset = len(sequences) if others is not None else 0  # the scorer indexes one concatenated set
        scorer = AllPairsScorer(list(sequences) + (list(others) if others is not None else []), self.scoring,
                                kernel, slice_k, block, self.device)
        n_a, n_b = len(sequences), None if others is None else len(others)
        name = scorer.kernel_for(n_a * (n_a - 1) // 2 if n_b is None else n_a * n_b)  # the whole job's count
        return scorer, name, scorer.batch_size(name), offset

    def _gpu_scores(self, sequences, others, kernel, slice_k, block, stats, span=None):
        scorer, name, size, offset = self._gpu_scorer(sequences, others, kernel, slice_k, block)
        n_a, n_b = len(sequences), None if others is None else len(others)
        if span is not None:  # a block of a spread job: several batches, each of whole waves
            size = block_batch(size, span[1] - span[0], scorer.wave(name))
        stats["kernel"] = name
        log.info("allpairs: GPU kernel %s, batches of up to %d pairs", name, size)
        shifted = (_shift(p, offset) for p in pair_batches(n_a, n_b, size, span))
        for pairs, scores in scorer.stream(shifted, name):
            yield _shift(pairs, -offset), scores
        stats["cells"], stats["gpu_seconds"] = scorer.cells, scorer.gpu_seconds

    def score_spans(self, sequences: list[np.ndarray], others: list[np.ndarray] | None, spans: Iterable[tuple],
                    kernel: str = "auto", slice_k: int | None = None, block: int | None = None
                    ) -> Iterator[tuple[tuple, list, dict]]:
        """GPU only: the scores of consecutive spans of the pair order (blocks of a spread all-pairs job),
        each as :meth:`score_pairs` with ``span`` gives them, but with one scorer and one stream of
        batches for all the spans (:func:`stream_spans`). ``spans`` is drawn lazily, as the stream
        needs the next batch. Yields (span, batches, stats) per span, as :func:`stream_spans` does.

        Raises:
            NwalignError: as :meth:`score_pairs`; ValueError: an empty span.
        """
        scorer, name, size, offset = self._gpu_scorer(sequences, others, kernel, slice_k, block)
        log.info("allpairs: GPU kernel %s, batches of up to %d pairs", name, size)
        yield from stream_spans(scorer, name, size, len(sequences), None if others is None else len(others),
                                spans, offset)

    def score_against(self, query: np.ndarray, codes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Local (Smith-Waterman) scores of ``query`` (uint8 codes) against every sequence of a database
        (``codes`` uint8 concatenated, ``offsets`` int64 (count + 1,)): int64 (count,). On the GPU the
        ``scan`` kernel after CUDASW++4.0 (the database uploaded at the first call and kept); on the CPU
        ``threads`` threads of the engine.

        Raises:
            NwalignError: a scoring mode other than local.
        """
        if self.scoring.mode != "local":
            raise NwalignError(f"score_against: scoring mode {self.scoring.mode}; a database scan is local")
        if not self.gpu:
            return cpu_scan(np.asarray(query, dtype=np.uint8), codes, offsets, self.scoring, self.threads)
        key = (id(codes), id(offsets))
        if key not in self._searchers:
            from nwalign.backends.cuda.search import ScanSearcher

            self._searchers[key] = (ScanSearcher(codes, offsets, self.scoring, self.device), codes, offsets)
        return self._searchers[key][0].scores(np.asarray(query, dtype=np.uint8)).astype(np.int64)


BLOCK_BATCHES = 3  # batches per block of a spread all-pairs job at least (block_batch)


def block_batch(size: int, pairs: int, wave: int) -> int:
    """The batch size for a block of ``pairs`` pairs of a spread all-pairs job: at most ``size``, at least
    one ``wave`` (the pairs the score kernel runs at once), and a whole number of waves that cuts the
    block into :data:`BLOCK_BATCHES` batches or more where it can. A block scored in one batch leaves the
    GPU idle while its rows are formatted; in several, the next batch runs meanwhile (as in one process)."""
    share = -(-pairs // BLOCK_BATCHES)
    return int(min(size, max(wave, share // wave * wave)))


def stream_spans(scorer, kernel: str, size: int, n_a: int, n_b: int | None, spans: Iterable[tuple], offset: int = 0
                 ) -> Iterator[tuple[tuple, list, dict]]:
    """Consecutive spans of the pair order scored through one stream of batches of ``scorer`` (an
    :class:`nwalign.backends.cuda.allpairs.AllPairsScorer`, or anything with its ``wave``, ``stream``, ``cells``
    and ``gpu_seconds``): each span cut as a block of a spread job is (:func:`block_batch` of ``size``),
    and the next span's first batch queued while the last of a span runs, so that the GPU does not idle
    between spans (a block per scorer, one after another, ran 12 % below the one-process rate on an
    H100). ``spans``: non-empty (start, stop) tuples, drawn as the stream's two batches in flight need
    them (the next span once a span's last batch is queued); ``offset``:
    where the second set starts in the scorer's set (0: one set). Yields (span, batches, stats) per
    span, in order: batches a list of (pairs int32 (k, 2), scores int64 (k,)), stats ``kernel``,
    ``pairs``, ``cells``, ``gpu_seconds`` and ``began``/``ended`` (wall clock, seconds: its first batch
    drawn, its last one back).

    Raises:
        ValueError: an empty span.
    """
    wave = scorer.wave(kernel)
    drawn: deque = deque()  # per batch queued: (its span, whether it is the span's last, the span's start time)
    cells: deque = deque()  # the scorer's cell count before each span's first batch was queued, and after

    def batches():
        for span in spans:
            if span[1] <= span[0]:
                raise ValueError(f"stream_spans: empty span {span}")
            began = time.time()
            parts = pair_batches(n_a, n_b, block_batch(size, span[1] - span[0], wave), span)
            cells.append(scorer.cells)
            pairs = next(parts)
            while pairs is not None:
                following = next(parts, None)
                drawn.append((span, following is None, began))
                yield _shift(pairs, offset)
                pairs = following
        cells.append(scorer.cells)

    got: list = []
    seconds = scorer.gpu_seconds
    for pairs, scores in scorer.stream(batches(), kernel):
        span, last, began = drawn.popleft()
        got.append((_shift(pairs, -offset), scores))
        if last:
            # the scorer counts a batch's cells as it queues it: by now the next span's first batch (or
            # the end) has been drawn, so the count then, less the count before, is this span's
            before, after = cells.popleft(), cells[0]
            stats = {"kernel": kernel, "pairs": span[1] - span[0], "cells": after - before,
                     "gpu_seconds": scorer.gpu_seconds - seconds, "began": began, "ended": time.time()}
            seconds = scorer.gpu_seconds
            yield span, got, stats
            got = []


def _shift(pairs: np.ndarray, offset: int) -> np.ndarray:
    """Pairs with ``offset`` added to their second index (a copy; the same array when 0)."""
    if offset == 0:
        return pairs
    out = pairs.copy()
    out[:, 1] += offset
    return out
