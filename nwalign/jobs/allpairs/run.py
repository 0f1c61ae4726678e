"""All-vs-all alignment of a set (or set A against set B) in one process, streamed in batches of pairs:
the whole job, or one block of the pair order as a worker runs it.

Identity filter (after Li et al., section 5.4, re-derived for nwalign's definitions): an alignment of
``length`` columns with identity >= MID has at least MID * length identical columns, each scoring at
least ``s_id`` (the smallest diagonal score among the codes that count as identities: A, C, G, T for
nucleotides, every amino acid but X, B, Z, U, O, J for protein), and every other column costs at most
``c = max(gap_open, -(smallest substitution score))``. So its score is at least
``length * (MID * s_id - (1 - MID) * c)``; in global mode ``max(m, n) <= length <= m + n``, and the
smaller of the two ends is the bound L (infinite when ``min(m, n) < MID * max(m, n)``, since at most
min(m, n) columns can be identical). A pair whose optimal score is below L has no optimal alignment
with that identity, so dropping it before the traceback never loses a pair that passes. Local and
semiglobal alignments have no useful length bound, so the filter is applied in global mode only.

Pipeline: pairs are generated in batches (never all at once), scored by the GPU kernels of
:mod:`nwalign.backends.cuda.allpairs` or the CPU engine, filtered by the bound, and the survivors aligned in a
diagonal band (:mod:`nwalign.backends.cpu.banded`, :mod:`nwalign.backends.cuda.banded`) that holds every alignment that
can reach the identity.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign import names
from nwalign.backends.aligner import Aligner
from nwalign.background import ahead
from nwalign.plan.bands import OutsideBound, optimal_scores, widest_band
from nwalign.backends.engine import Encoded, alignment_from_path
from nwalign.errors import option_error
from nwalign.output.scorerows import ScoreRows
from nwalign.plan.pairorder import TILE, pair_batches, pair_count
from nwalign.records.alignment import Alignment, Block, PairResult
from nwalign.scoring.schemes import Scoring

log = logging.getLogger("nwalign")

COLUMNS = names.ALLPAIRS_COLUMNS
SCORE_COLUMNS = {c for c in COLUMNS if not names.needs_alignment(c)}  # need no traceback
GPU_TILE = 8192  # pairs per call of the GPU's banded aligner (its launches fill every SM with genome pairs)
BAND_FIRST_LENGTH = 10_000  # median length from which the identity filter's scores come from bands on the GPU
W_FIRST = 128  # the first band of those scores (nwalign.plan.bands.optimal_scores says why)
BAND_BATCH = 1 << 14  # pairs per batch of those banded scores (genomes: one launch of ~4 GB)
BAND_BATCH_CPU = 16  # on the CPU, per thread: genomes' results (and the progress bar) every few seconds


def lengths_allow(m, n, min_identity: float):
    """Whether lengths m x n allow identity >= ``min_identity`` at all: nident <= min(m, n) and length >=
    max(m, n). Ints or arrays (then an array of bools)."""
    return np.minimum(m, n) >= min_identity * np.maximum(m, n)


def identity_bound(m: int, n: int, min_identity: float, scoring: Scoring) -> float:
    """The lower bound L on the optimal global score of an m x n pair whose alignment has identity
    >= ``min_identity`` (see the module docstring).

    >>> from nwalign.scoring.schemes import make_scoring
    >>> identity_bound(100, 100, 0.9, make_scoring("dna", "global"))
    350.0
    """
    if not lengths_allow(m, n, min_identity):
        return math.inf
    s_id = float(np.diag(scoring.matrix)[scoring.identical].min())
    c = float(max(scoring.gap_open, -int(scoring.matrix.min())))
    per_column = min_identity * s_id - (1.0 - min_identity) * c
    return min(max(m, n) * per_column, (m + n) * per_column)


def needs_traceback(columns, min_identity: float | None, distances: bool) -> bool:
    """Whether an all-pairs job aligns pairs (a column, the identity filter or a distance matrix needs it)."""
    return distances or min_identity is not None or not set(columns) <= SCORE_COLUMNS


def score_batches(a: list[Encoded], b: list[Encoded] | None, scoring: Scoring, stats: dict, backend: str = "cpu",
                  kernel: str = "auto", slice_k: int | None = None, block: int | None = None, device: int = 0,
                  threads: int = 1, span: tuple[int, int] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The scores of every pair (or of the positions ``span`` of the pair order), batch by batch:
    (pairs int32 (k, 2), scores int64 (k,)), from :meth:`nwalign.backends.aligner.Aligner.score_pairs`; ``stats``
    as :func:`run` fills it."""
    stats.update(pairs=0, filtered=0, below=0, kernel="cpu", cells=0, score_seconds=0.0)
    aligner = Aligner(scoring, backend, device, threads, announce=False)
    clock = time.perf_counter()
    for pairs, scores in aligner.score_pairs([e.codes for e in a], None if b is None else [e.codes for e in b],
                                             kernel, slice_k, block, stats, span):
        stats["score_seconds"] += time.perf_counter() - clock
        stats["pairs"] += len(pairs)
        yield pairs, scores
        clock = time.perf_counter()


def score_blocks(a: list[Encoded], b: list[Encoded] | None, scoring: Scoring, columns: tuple[str, ...],
                 stats: dict, backend: str = "cpu", kernel: str = "auto", slice_k: int | None = None,
                 block: int | None = None, device: int = 0, threads: int = 1,
                 span: tuple[int, int] | None = None) -> Iterator[Block]:
    """A job of score-only columns (:data:`SCORE_COLUMNS`) as blocks, one per batch of scores: the rows
    :func:`nwalign.output.writers.tsv.format_results` would write (:class:`nwalign.output.scorerows.ScoreRows`). ``stats``
    as :func:`run` fills it."""
    rows = ScoreRows(a, b, columns)
    start = 0 if span is None else span[0]
    rows.warm_up(span[1] - span[0] if span else pair_count(len(a), None if b is None else len(b)))
    for pairs, scores in score_batches(a, b, scoring, stats, backend, kernel, slice_k, block, device, threads, span):
        yield Block(start, start + len(pairs), rows(pairs, scores), None, len(pairs))
        start += len(pairs)


@dataclass(frozen=True)
class KernelChoice:
    """The GPU's all-pairs score kernel and its knobs (see :mod:`nwalign.backends.cuda.allpairs`; ``auto``
    chooses from the whole job's pair count, so every block runs the same kernel)."""

    kernel: str = "auto"
    slice_k: int | None = None
    block: int | None = None


def run(a: list[Encoded], b: list[Encoded] | None, scoring: Scoring, columns: tuple[str, ...],
        min_identity: float | None = None, need_identity_all: bool = False, threads: int = 1,
        stats: dict | None = None, backend: str = "cpu", kernels: KernelChoice = KernelChoice(), device: int = 0,
        span: tuple[int, int] | None = None) -> Iterator[PairResult]:
    """Align every pair (or those at positions ``span`` = (start, stop) of the pair order: one block of
    :func:`nwalign.plan.pairorder.blocks`), yielding results in pair order (row by row), batch by batch.

    Scores come first, from the GPU kernels (``backend="cuda"``) or the CPU engine; a pair is then
    aligned only when a column needs the traceback, and with ``min_identity`` in global mode only when
    its score reaches :func:`identity_bound`. Those survivors are aligned inside a diagonal band: on the
    GPU with backend ``cuda`` (:mod:`nwalign.backends.cuda.banded`, launches of up to :data:`GPU_TILE` pairs), else
    on the CPU engine (:mod:`nwalign.backends.cpu.banded`), ``threads`` at a time; both give the same alignments.
    When every pair is aligned (no score filter) and the sequences are long (global mode, median length
    >= :data:`BAND_FIRST_LENGTH`), each pair is aligned the same way from its optimal score, in doubling
    bands up to the whole matrix: the alignments of the identity filter, on either backend.

    Arguments:
        a, b: encoded records; ``b`` None means all pairs i < j within ``a``.
        scoring: the scoring scheme.
        columns: requested output columns; tracebacks run only when a column needs one.
        min_identity: keep only pairs with identity >= this fraction (0-1).
        need_identity_all: align every pair even when filtered (a distance matrix needs them all).
        threads: CPU threads (the Numba kernels release the GIL).
        stats: filled with ``pairs``, ``filtered`` (by the bound), ``below`` (aligned, then below MID),
            ``kernel`` (the GPU kernel, or ``cpu``), ``cells`` (DP cells scored), ``score_seconds`` (waiting
            for scores) and, on the GPU, ``gpu_seconds`` (kernel time by CUDA events).
        backend: ``cpu`` or ``cuda`` (resolve ``auto`` first).
        kernels, device: the GPU's score kernel (:class:`KernelChoice`) and the GPU.
        span: (start, stop) positions in the pair order; None for every pair.

    Raises:
        NwalignError: min_identity outside [0, 1], or the GPU cannot run the kernel.
    """
    if min_identity is not None and not 0.0 <= min_identity <= 1.0:
        raise option_error("min_identity", "--min-identity", f"{min_identity}: give a fraction between 0 and 1")
    stats = stats if stats is not None else {}
    stats.update(pairs=0, filtered=0, below=0, kernel="cpu", cells=0, score_seconds=0.0)
    job = _BlockRun(a, b, scoring, columns, min_identity, need_identity_all, threads, stats, backend, device)
    yield from job.results(kernels.kernel, kernels.slice_k, kernels.block, span)


def _long(seqs: list[Encoded]) -> bool:
    """Whether a set's median length reaches :data:`BAND_FIRST_LENGTH` (pairs long enough that the banded
    scores' per-pair host work is small beside a full matrix's fill)."""
    return bool(seqs) and float(np.median([len(e.codes) for e in seqs])) >= BAND_FIRST_LENGTH


class _BlockRun:
    """:func:`run`'s state: which pairs need scores and alignments, and the engines that give them."""

    def __init__(self, a, b, scoring: Scoring, columns, min_identity, need_identity_all: bool, threads: int,
                 stats: dict, backend: str, device: int):
        self.a, self.b, self.targets = a, b, a if b is None else b
        self.scoring, self.min_identity, self.threads, self.stats, self.device = \
            scoring, min_identity, threads, stats, device
        self.traceback = need_identity_all or min_identity is not None or not set(columns) <= SCORE_COLUMNS
        self.use_bound = min_identity is not None and scoring.mode == "global" and not need_identity_all
        # Every pair aligned (alignment columns or a distance matrix, no score filter) of long sequences
        # (median length >= BAND_FIRST_LENGTH), global mode, on either backend: optimal scores first, then
        # each pair aligned in doubling bands up to the one that reaches its optimum (the identity filter's
        # band sequence: the same alignments with or without --min-identity, on the GPU and the CPU
        # engine), instead of a full matrix of directions per pair.
        self.long_pairs = scoring.mode == "global" and _long(a) and (b is None or _long(b))
        self.band_all = self.traceback and not self.use_bound and self.long_pairs
        self.need_scores = self.use_bound or not self.traceback or self.band_all
        self.aligner = Aligner(scoring, backend, device, threads, announce=False)
        self.on_gpu = self.aligner.bands_on_gpu and (self.use_bound or self.band_all)
        self.band_first = False
        self._banded = None  # the GPU's banded aligner, made at first use

    def base(self, i: int, j: int, score) -> Alignment:
        """A score-only record of pair (i, j)."""
        q, t = self.a[i], self.targets[j]
        return Alignment(query_id=q.record.id, target_id=t.record.id, mode=self.scoring.mode, score=int(score),
                         query_length=len(q.codes), target_length=len(t.codes))

    def w_max(self, i: int, j: int) -> int:
        """The widest band half-width worth trying (nwalign.backends.cpu.banded's module docstring); every pair
        aligned in bands (``band_all``): the whole matrix."""
        m, n = len(self.a[i].codes), len(self.targets[j].codes)
        return max(m, n) if self.band_all else widest_band(m, n, self.min_identity)

    def banded(self, item):
        """A survivor of the identity bound, aligned inside the band that any alignment reaching
        min_identity lies in (CPU engine); a score-only record when none is optimal there."""
        i, j, score = item
        q, t = self.a[i], self.targets[j]
        path = self.aligner.align_banded(q.codes, t.codes, int(score), self.w_max(i, j))
        if path is None:  # no optimal path within w_max gap columns of the diagonal: identity < MID
            return i, j, self.base(i, j, score)
        return i, j, alignment_from_path(q, t, self.scoring, path)

    def banded_paths(self, part):
        """(part, paths): a tile of survivors aligned in their bands on the GPU
        (:class:`nwalign.backends.cuda.banded.BandedAligner`, the CPU engine's doubling bands and paths)."""
        if self._banded is None:  # (this runs in a thread of its own: the aligner launches on its device)
            self._banded = self.aligner.banded_aligner(urgent=self.band_first)
        clock = time.perf_counter()
        paths = self._banded.align([(self.a[i].codes, self.targets[j].codes) for i, j, _ in part],
                                   [int(score) for _, _, score in part], [self.w_max(i, j) for i, j, _ in part])
        log.debug("allpairs: %d survivors aligned in their bands in %.2f s", len(part), time.perf_counter() - clock)
        stats = self.stats
        stats["banded_seconds"] = stats.get("banded_seconds", 0.0) + time.perf_counter() - clock
        stats["banded_gpu_seconds"] = self._banded.kernel_seconds
        stats["banded_pairs"] = stats.get("banded_pairs", 0) + len(part)
        return part, paths

    def result(self, item):
        (i, j, score), path = item
        if path is None:
            return i, j, self.base(i, j, score)
        return i, j, alignment_from_path(self.a[i], self.targets[j], self.scoring, path)

    def aligned(self, todo, mapper):
        """(i, j, alignment) of the pairs to align, in order: banded under the identity bound or for
        ``band_all`` (on the GPU with backend cuda, else on the CPU engine), else every pair in full by the
        aligner's batches (the GPU's batch kernel where it has one)."""
        if self.on_gpu:  # the GPU aligns the next tile while this one's alignments are built
            tiles = (self.banded_paths(todo[lo:lo + GPU_TILE]) for lo in range(0, len(todo), GPU_TILE))
            for part, paths in ahead(tiles):
                yield from mapper(self.result, zip(part, paths))
            return
        if self.use_bound or self.band_all:
            for lo in range(0, len(todo), TILE):  # bounded: a tile's results wait in order
                yield from mapper(self.banded, todo[lo:lo + TILE])
            return
        alns = self.aligner.align_batch([(self.a[i], self.targets[j]) for i, j, _ in todo])
        for (i, j, _), aln in zip(todo, alns):
            yield i, j, aln

    def optimal_from_bands(self, span):
        """(pairs, optimal scores) batch by batch from banded fills alone (the GPU's, or the CPU engine's)
        (:func:`nwalign.plan.bands.optimal_scores`: a pair's matrix is filled only in bands that the bound of
        :mod:`nwalign.plan.bands` proves optimal). A pair that the length test of :func:`identity_bound` filters
        whatever its score is not filled: its score is given as the int64 minimum, which the bound filters."""
        a, b, targets = self.a, self.b, self.targets
        size = self.scoring.matrix.shape[0]

        def counts(seqs):
            return np.stack([np.bincount(e.codes, minlength=size) for e in seqs]).astype(np.int64)

        bound = OutsideBound(self.scoring, counts(a), None if b is None else counts(b))
        la = np.array([len(e.codes) for e in a], dtype=np.int64)
        lb = la if b is None else np.array([len(e.codes) for e in b], dtype=np.int64)
        scorer = self.aligner.banded_aligner()
        self.stats["kernel"] = "banded"
        log.info("allpairs: optimal scores from banded fills on the %s, each band proved optimal by the bound "
                 "of nwalign.plan.bands (median length >= %d)%s", "GPU" if self.on_gpu else "CPU", BAND_FIRST_LENGTH,
                 "" if not self.band_all else "; every pair then aligned in doubling bands up to its optimum")
        batch = BAND_BATCH if self.on_gpu else BAND_BATCH_CPU * max(1, self.threads)
        for pairs in pair_batches(len(a), None if b is None else len(b), batch, span):
            i, j = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
            m, n = la[i], lb[j]
            scores = np.full(len(pairs), np.iinfo(np.int64).min, dtype=np.int64)
            fill = np.arange(len(pairs)) if self.band_all else np.flatnonzero(lengths_allow(m, n, self.min_identity))

            def banded_scores(ks, w, fill=fill, i=i, j=j):
                return scorer.scores([(a[i[x]].codes, targets[j[x]].codes) for x in fill[ks].tolist()], w.tolist())

            if fill.size:
                clock = time.perf_counter()
                floor = None if not self.use_bound else \
                    [identity_bound(int(x), int(y), self.min_identity, self.scoring) for x, y in zip(m[fill], n[fill])]
                scores[fill], w = optimal_scores(bound, i[fill], j[fill], m[fill], n[fill], banded_scores, W_FIRST,
                                                 floor)
                log.debug("allpairs: banded scores of %d pairs in %.2f s (%d needed a second band)", fill.size,
                          time.perf_counter() - clock, int((w > W_FIRST).sum()))
            self.stats["cells"] = scorer.cells
            if self.on_gpu:
                self.stats["gpu_seconds"] = scorer.kernel_seconds
            yield pairs, scores

    def scored(self, kernel: str, slice_k, block, span):
        """(pairs, scores or None) batch by batch: what the pairs need before any alignment."""
        a, b = self.a, self.b
        self.band_first = kernel == "auto" and self.long_pairs and (self.use_bound or self.band_all)
        if self.need_scores and self.band_first and self.on_gpu:  # the next batch's scores while this one's align
            return ahead(self.optimal_from_bands(span))
        if self.need_scores and self.band_first:  # the CPU engine: its threads do both, one after the other
            return self.optimal_from_bands(span)
        if self.need_scores:
            return self.aligner.score_pairs([e.codes for e in a], None if b is None else [e.codes for e in b],
                                            kernel, slice_k, block, self.stats, span)
        self.stats["kernel"] = self.aligner.batch_kernel
        if self.aligner.gpu:
            log.info("allpairs: every pair is aligned (no score filter): kernel %s", self.aligner.batch_kernel)
        return ((pairs, None) for pairs in pair_batches(len(a), None if b is None else len(b), TILE, span))

    def to_align(self, ij, scores) -> list:
        """(i, j, score) of the pairs of a batch to align: those the identity bound keeps."""
        if scores is None:
            return [(i, j, None) for i, j in ij]
        todo = []
        for (i, j), score in zip(ij, scores.tolist()):
            if self.use_bound and score < identity_bound(len(self.a[i].codes), len(self.targets[j].codes),
                                                         self.min_identity, self.scoring):
                self.stats["filtered"] += 1
                continue
            todo.append((i, j, score))
        return todo

    def results(self, kernel: str, slice_k, block, span) -> Iterator[PairResult]:
        stats, min_identity = self.stats, self.min_identity
        pool = ThreadPoolExecutor(max_workers=self.threads) if self.threads > 1 else None
        mapper = pool.map if pool else map
        scored = self.scored(kernel, slice_k, block, span)
        try:
            clock = time.perf_counter()
            for pairs, scores in scored:
                stats["score_seconds"] += time.perf_counter() - clock
                stats["pairs"] += len(pairs)
                ij = pairs.tolist()
                if not self.traceback:
                    for (i, j), score in zip(ij, scores.tolist()):
                        yield PairResult(i, j, self.base(i, j, score), True)
                    clock = time.perf_counter()
                    continue
                todo = self.to_align(ij, scores)
                log.debug("allpairs: a batch of %d pairs scored, %d to align", len(ij), len(todo))
                for i, j, aln in self.aligned(todo, mapper):
                    passes = min_identity is None or (aln.ops is not None and aln.identity >= min_identity)
                    if not passes:
                        stats["below"] += 1
                    yield PairResult(i, j, aln, passes)
                clock = time.perf_counter()
        finally:
            if pool:
                pool.shutdown()
