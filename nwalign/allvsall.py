"""All-vs-all alignment of a sequence set (or set A against set B), streamed in tiles of pairs.

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
:mod:`nwalign.cuda.allpairs` or the CPU engine, filtered by the bound, and the survivors aligned in a
diagonal band (:mod:`nwalign.cpu.banded`) that holds every alignment that can reach the identity.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .bands import widest_band
from .engine import Encoded, alignment_from_path
from .errors import NwalignError, option_error
from . import names
from .names import needs_alignment
from .results import Alignment
from .scoring import Scoring

log = logging.getLogger("nwalign")

COLUMNS, DEFAULT_COLUMNS = names.ALLPAIRS_COLUMNS, names.ALLPAIRS_DEFAULT_COLUMNS
SCORE_COLUMNS = {c for c in COLUMNS if not needs_alignment(c)}  # need no traceback
TILE = 2048  # pairs per CPU batch: bounded memory whatever the number of sequences
GPU_TILE = 8192  # pairs per call of the GPU's banded aligner (its launches fill every SM with genome pairs)
BAND_FIRST_LENGTH = 10_000  # median length from which the identity filter's scores come from bands on the GPU
W_FIRST = 128  # the first band of those scores (nwalign.bands.optimal_scores says why)
BAND_BATCH = 1 << 14  # pairs per batch of those banded scores (genomes: one launch of ~4 GB)
BLOCK_PAIRS = 1 << 14  # pairs per formatted block in one process (what waits before it is written)


def lengths_allow(m, n, min_identity: float):
    """Whether lengths m x n allow identity >= ``min_identity`` at all: nident <= min(m, n) and length >=
    max(m, n). Ints or arrays (then an array of bools)."""
    return np.minimum(m, n) >= min_identity * np.maximum(m, n)


def identity_bound(m: int, n: int, min_identity: float, scoring: Scoring) -> float:
    """The lower bound L on the optimal global score of an m x n pair whose alignment has identity
    >= ``min_identity`` (see the module docstring)."""
    if not lengths_allow(m, n, min_identity):
        return math.inf
    s_id = float(np.diag(scoring.matrix)[scoring.identical].min())
    c = float(max(scoring.gap_open, -int(scoring.matrix.min())))
    per_column = min_identity * s_id - (1.0 - min_identity) * c
    return min(max(m, n) * per_column, (m + n) * per_column)


@dataclass
class PairResult:
    """One aligned pair: indices into the query and target sets, the alignment (or score only), and
    whether it passes --min-identity (always true without it)."""

    i: int
    j: int
    aln: Alignment
    passes: bool


@dataclass
class Block:
    """The results of the pairs at positions [start, stop) of the pair order, formatted: what a worker
    sends back, and what the command line writes in order."""

    start: int
    stop: int
    text: str                          # TSV rows of the pairs that pass (columns as asked), in pair order
    distances: np.ndarray | None       # float32 (stop - start,): 1 - identity of each pair, or None
    reported: int                      # rows in ``text``


def format_results(results: list[PairResult], columns: tuple[str, ...], distances: bool, start: int) -> Block:
    """One :class:`Block` of consecutive results (positions ``start``.. of the pair order)."""
    from .formats import field

    rows = ["\t".join([field(r.aln, c) for c in columns]) + "\n" for r in results if r.passes]
    dist = np.array([1.0 - r.aln.identity for r in results], dtype=np.float32) if distances else None
    return Block(start, start + len(results), "".join(rows), dist, len(rows))


def needs_traceback(columns, min_identity: float | None, distances: bool) -> bool:
    """Whether an all-pairs job aligns pairs (a column, the identity filter or a distance matrix needs it)."""
    return distances or min_identity is not None or not set(columns) <= SCORE_COLUMNS


class ScoreRows:
    """The TSV rows of score-only columns (:data:`SCORE_COLUMNS`) for pairs and their scores, built from
    the ids, lengths and scores without an Alignment per pair (a few hundred nanoseconds a pair instead
    of microseconds): ``rows(pairs, scores)`` with pairs int (k, 2) indices into ``a`` and ``b`` (or
    ``a``), scores int64 (k,), gives the k rows as one str."""

    def __init__(self, a: list[Encoded], b: list[Encoded] | None, columns: tuple[str, ...]):
        targets = a if b is None else b
        self.columns = columns
        self.text = {"qseqid": np.array([e.record.id for e in a], dtype=object),
                     "sseqid": np.array([e.record.id for e in targets], dtype=object),
                     "qlen": np.array([str(len(e.codes)) for e in a], dtype=object),
                     "slen": np.array([str(len(e.codes)) for e in targets], dtype=object)}

    def __call__(self, pairs: np.ndarray, scores: np.ndarray) -> str:
        fields = []
        for c in self.columns:
            if c == "score":
                fields.append(map(str, scores.tolist()))
            else:
                fields.append(self.text[c][pairs[:, 0 if c in ("qseqid", "qlen") else 1]].tolist())
        return "".join([line + "\n" for line in map("\t".join, zip(*fields))])


@dataclass
class Scored:
    """A block of a score-only job scored but not yet formatted: its (pairs, scores) batches. The command's
    own blocks while GPU workers start come back so, and are formatted as they are written
    (:meth:`block`): formatted in the threads that score them, with Dask starting in the same
    interpreter, they took 1.5-1.6 s a block against 1.15-1.2 s on a worker (two H200s)."""

    start: int
    stop: int
    batches: list

    def block(self, rows: ScoreRows) -> Block:
        text = "".join(rows(pairs, scores) for pairs, scores in self.batches)
        return Block(self.start, self.stop, text, None, self.stop - self.start)


def score_batches(a: list[Encoded], b: list[Encoded] | None, scoring: Scoring, stats: dict, backend: str = "cpu",
                  kernel: str = "auto", slice_k: int | None = None, block: int | None = None, device: int = 0,
                  threads: int = 1, span: tuple[int, int] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The scores of every pair (or of the positions ``span`` of the pair order), batch by batch:
    (pairs int32 (k, 2), scores int64 (k,)), from :meth:`nwalign.aligner.Aligner.score_pairs`; ``stats``
    as :func:`run` fills it."""
    from .aligner import Aligner

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
    :func:`format_results` would write (:class:`ScoreRows`). ``stats`` as :func:`run` fills it."""
    rows = ScoreRows(a, b, columns)
    start = 0 if span is None else span[0]
    for pairs, scores in score_batches(a, b, scoring, stats, backend, kernel, slice_k, block, device, threads, span):
        yield Block(start, start + len(pairs), rows(pairs, scores), None, len(pairs))
        start += len(pairs)


def pair_count(n_a: int, n_b: int | None) -> int:
    """How many pairs: i < j within a set of ``n_a`` (``n_b`` None), or every pair of n_a x n_b."""
    return n_a * (n_a - 1) // 2 if n_b is None else n_a * n_b


def row_starts(n_a: int, n_b: int | None) -> np.ndarray:
    """The position, in pair order, of each row's first pair (int64, shape (n_a + 1,); the last entry is
    the pair count)."""
    i = np.arange(n_a + 1, dtype=np.int64)
    return i * (n_a - 1) - i * (i - 1) // 2 if n_b is None else i * n_b


def pair_batches(n_a: int, n_b: int | None, size: int, span: tuple[int, int] | None = None) -> Iterator[np.ndarray]:
    """The pairs (i, j), i < j within one set or every (i, j) of A x B, in row order, as int32 arrays of
    shape (k, 2) with k <= size (never all pairs at once: 25,000 sequences are 312 million pairs).
    ``span`` (start, stop): only the pairs at those positions of that order (a block of the matrix)."""
    starts = row_starts(n_a, n_b)
    start, stop = span if span is not None else (0, int(starts[-1]))
    parts: list[np.ndarray] = []
    count = 0
    for i in range(int(np.searchsorted(starts, start, side="right")) - 1 if start > 0 else 0, n_a):
        if starts[i] >= stop:
            break
        first = (i + 1 if n_b is None else 0) + max(0, start - int(starts[i]))
        last = (n_a if n_b is None else n_b) - max(0, int(starts[i + 1]) - stop)
        js = np.arange(first, last, dtype=np.int32)
        pos = 0
        while pos < len(js):
            take = min(size - count, len(js) - pos)
            part = np.empty((take, 2), dtype=np.int32)
            part[:, 0] = i
            part[:, 1] = js[pos:pos + take]
            parts.append(part)
            count += take
            pos += take
            if count == size:
                yield np.concatenate(parts)
                parts, count = [], 0
    if parts:
        yield np.concatenate(parts)


class PairCells:
    """DP cells (m * n summed) along the pair order of a set (``lengths_b`` None: pairs i < j) or of A x B:
    :meth:`before` gives the cells of the pairs ahead of a position, so any span's cells in O(log n)."""

    def __init__(self, lengths_a, lengths_b=None):
        self.la = np.asarray(lengths_a, dtype=np.int64)
        self.within = lengths_b is None
        self.lb = self.la if self.within else np.asarray(lengths_b, dtype=np.int64)
        self.starts = row_starts(len(self.la), None if self.within else len(self.lb))
        # cells of each row: m_i times the summed lengths of its targets (j > i within one set)
        after = np.concatenate((np.cumsum(self.lb[::-1])[::-1][1:], [0])) if self.within else \
            np.full(len(self.la), self.lb.sum())
        self.rows = np.concatenate(([0], np.cumsum(self.la * after)))
        self.prefix_b = np.concatenate(([0], np.cumsum(self.lb)))

    @property
    def total(self) -> int:
        return int(self.rows[-1])

    def before(self, position: int) -> int:
        """Cells of the pairs at positions 0 .. position - 1."""
        if position >= self.starts[-1]:
            return self.total
        i = int(np.searchsorted(self.starts, position, side="right")) - 1
        first = i + 1 if self.within else 0
        end = first + position - int(self.starts[i])
        return int(self.rows[i] + self.la[i] * (self.prefix_b[end] - self.prefix_b[first]))


def blocks(lengths_a: np.ndarray, lengths_b: np.ndarray | None, count: int, quantum: int = 1, taper: int = 0,
           head: int = 0) -> list[tuple[int, int]]:
    """Cut the pair order into at most ``count`` spans (start, stop) of nearly equal DP cells (the sum of
    m * n over their pairs), in order and covering every pair once: the tasks of an all-pairs job spread
    over workers. A span may start or end inside a row (one long row is cut too). ``quantum``: every cut
    at a multiple of it (a GPU worker's wave of pairs, so that no block ends with a nearly idle wave).
    ``taper``: the last ``taper`` blocks (at most half of them) get in thirds half, a quarter, then an
    eighth of a block's cells, so that the workers finish nearly together (the last block taken runs
    alone). ``head``: the first ``head`` blocks (at most the blocks before the taper) get a quarter of a
    block's cells: those run in the command's own process while the GPU workers start, and a block it
    has begun when they are up shares its GPU with theirs until it ends."""
    along = PairCells(lengths_a, lengths_b)
    total_pairs = int(along.starts[-1])
    if total_pairs == 0:
        return []
    taper = min(max(0, taper), count // 2)
    weights = np.ones(count)
    weights[count - taper:] = [0.5 if j < taper // 3 else 0.25 if j < 2 * taper // 3 else 0.125 for j in range(taper)]
    weights[:min(max(0, head), count - taper)] = 0.25
    ends = np.cumsum(weights) / weights.sum()
    cuts = [0]
    for k in range(1, count):
        want = along.total * ends[k - 1]
        i = min(int(np.searchsorted(along.rows, want, side="right")) - 1, len(along.la) - 1)
        first = i + 1 if along.within else 0
        inside = along.la[i] * (along.prefix_b[first + 1:] - along.prefix_b[first])  # row i's cells so far
        j = int(np.searchsorted(inside, want - along.rows[i], side="left"))
        cut = min(int(along.starts[i]) + j, total_pairs)
        cuts.append(min(round(cut / quantum) * quantum, total_pairs))
    cuts.append(total_pairs)
    cuts = sorted(set(cuts))
    return [(a, b) for a, b in zip(cuts, cuts[1:])]


def run(a: list[Encoded], b: list[Encoded] | None, scoring: Scoring, columns: tuple[str, ...],
        min_identity: float | None = None, need_identity_all: bool = False, threads: int = 1,
        stats: dict | None = None, backend: str = "cpu", kernel: str = "auto", slice_k: int | None = None,
        block: int | None = None, device: int = 0, span: tuple[int, int] | None = None) -> Iterator[PairResult]:
    """Align every pair (or those at positions ``span`` = (start, stop) of the pair order: one block of
    :func:`blocks`), yielding results in pair order (row by row), batch by batch.

    Scores come first, from the GPU kernels (``backend="cuda"``) or the CPU engine; a pair is then
    aligned only when a column needs the traceback, and with ``min_identity`` in global mode only when
    its score reaches :func:`identity_bound`. Those survivors are aligned inside a diagonal band: on the
    GPU with backend ``cuda`` (:mod:`nwalign.cuda.banded`, launches of up to :data:`GPU_TILE` pairs), else
    on the CPU engine (:mod:`nwalign.cpu.banded`), ``threads`` at a time; both give the same alignments.
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
        kernel, slice_k, block, device: GPU kernel choice (see :mod:`nwalign.cuda.allpairs`; ``auto``
            chooses from the whole job's pair count, so every block runs the same kernel).
        span: (start, stop) positions in the pair order; None for every pair.

    Raises:
        NwalignError: min_identity outside [0, 1], or the GPU cannot run the kernel.
    """
    if min_identity is not None and not 0.0 <= min_identity <= 1.0:
        raise option_error("min_identity", "--min-identity", f"{min_identity}: give a fraction between 0 and 1")
    from .aligner import Aligner

    stats = stats if stats is not None else {}
    stats.update(pairs=0, filtered=0, below=0, kernel="cpu", cells=0, score_seconds=0.0)
    traceback = need_identity_all or min_identity is not None or not set(columns) <= SCORE_COLUMNS
    use_bound = min_identity is not None and scoring.mode == "global" and not need_identity_all
    need_scores = use_bound or not traceback
    targets = a if b is None else b
    aligner = Aligner(scoring, backend, device, threads, announce=False)
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    mapper = pool.map if pool else map

    def base(i, j, score):
        q, t = a[i], targets[j]
        return Alignment(query_id=q.record.id, target_id=t.record.id, mode=scoring.mode, score=int(score),
                         query_length=len(q.codes), target_length=len(t.codes))

    def w_max(i, j):
        """The widest band half-width worth trying (nwalign.cpu.banded's module docstring); every pair
        aligned in bands (``band_all``): the whole matrix."""
        m, n = len(a[i].codes), len(targets[j].codes)
        return max(m, n) if band_all else widest_band(m, n, min_identity)

    def banded(item):
        """A survivor of the identity bound, aligned inside the band that any alignment reaching
        min_identity lies in (CPU engine); a score-only record when none is optimal there."""
        i, j, score = item
        q, t = a[i], targets[j]
        from .cpu.banded import align_global_banded

        path = align_global_banded(q.codes, t.codes, scoring.matrix, scoring.gap_open, scoring.gap_extend,
                                   int(score), w_max(i, j))
        if path is None:  # no optimal path within w_max gap columns of the diagonal: identity < MID
            return i, j, base(i, j, score)
        return i, j, alignment_from_path(q, t, scoring, path)

    # Every pair aligned (alignment columns or a distance matrix, no score filter) of long sequences
    # (median length >= BAND_FIRST_LENGTH), global mode, on either backend: optimal scores first, then each
    # pair aligned in doubling bands up to the one that reaches its optimum (the identity filter's band
    # sequence: the same alignments with or without --min-identity, on the GPU and the CPU engine), instead
    # of a full matrix of directions per pair.
    long_pairs = scoring.mode == "global" and _long(a) and (b is None or _long(b))
    band_all = traceback and not use_bound and long_pairs
    need_scores = need_scores or band_all
    gpu_banded = []  # the GPU's banded aligner, made at first use
    if aligner.gpu and (use_bound or band_all):
        from .cuda import banded as gpu_band

        on_gpu = gpu_band.ENABLED
    else:
        on_gpu = False

    def banded_paths(part):
        """(part, paths): a tile of survivors aligned in their bands on the GPU
        (:class:`nwalign.cuda.banded.BandedAligner`, the CPU engine's doubling bands and paths)."""
        if not gpu_banded:  # (this runs in a thread of its own, see aligned: the aligner launches on its device)
            from .cuda.banded import BandedAligner

            gpu_banded.append(BandedAligner(scoring, device, threads=threads, urgent=band_first))
        clock = time.perf_counter()
        paths = gpu_banded[0].align([(a[i].codes, targets[j].codes) for i, j, _ in part],
                                    [int(score) for _, _, score in part], [w_max(i, j) for i, j, _ in part])
        log.debug("allpairs: %d survivors aligned in their bands in %.2f s", len(part), time.perf_counter() - clock)
        stats["banded_seconds"] = stats.get("banded_seconds", 0.0) + time.perf_counter() - clock
        stats["banded_gpu_seconds"] = gpu_banded[0].kernel_seconds
        stats["banded_pairs"] = stats.get("banded_pairs", 0) + len(part)
        return part, paths

    def result(item):
        (i, j, score), path = item
        return i, j, base(i, j, score) if path is None else alignment_from_path(a[i], targets[j], scoring, path)

    def aligned(todo):
        """(i, j, alignment) of the pairs to align, in order: banded under the identity bound or for
        ``band_all`` (on the GPU with backend cuda, else on the CPU engine), else every pair in full by the
        aligner's batches (the GPU's batch kernel where it has one)."""
        if on_gpu:  # the GPU aligns the next tile while this one's alignments are built
            from .background import ahead

            for part, paths in ahead(banded_paths(todo[lo:lo + GPU_TILE]) for lo in range(0, len(todo), GPU_TILE)):
                yield from mapper(result, zip(part, paths))
            return
        if use_bound or band_all:
            for lo in range(0, len(todo), TILE):  # bounded: a tile's results wait in order
                yield from mapper(banded, todo[lo:lo + TILE])
            return
        alns = aligner.align_batch([(a[i], targets[j]) for i, j, _ in todo])
        for (i, j, _), aln in zip(todo, alns):
            yield i, j, aln

    band_first = on_gpu and kernel == "auto" and long_pairs

    def optimal_from_bands():
        """(pairs, optimal scores) batch by batch from banded fills on the GPU alone
        (:func:`nwalign.bands.optimal_scores`: a pair's matrix is filled only in bands that the bound of
        :mod:`nwalign.bands` proves optimal). A pair that the length test of :func:`identity_bound` filters
        whatever its score is not filled: its score is given as the int64 minimum, which the bound filters."""
        from .bands import OutsideBound, optimal_scores
        from .cuda.banded import BandedAligner

        A = scoring.matrix.shape[0]

        def counts(seqs):
            return np.stack([np.bincount(e.codes, minlength=A) for e in seqs]).astype(np.int64)

        bound = OutsideBound(scoring, counts(a), None if b is None else counts(b))
        la = np.array([len(e.codes) for e in a], dtype=np.int64)
        lb = la if b is None else np.array([len(e.codes) for e in b], dtype=np.int64)
        scorer = BandedAligner(scoring, device, threads=threads)
        stats["kernel"] = "banded"
        log.info("allpairs: optimal scores from banded fills on the GPU, each band proved optimal by the bound "
                 "of nwalign.bands (median length >= %d)%s", BAND_FIRST_LENGTH,
                 "" if not band_all else "; every pair then aligned in doubling bands up to its optimum")
        for pairs in pair_batches(len(a), None if b is None else len(b), BAND_BATCH, span):
            i, j = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
            m, n = la[i], lb[j]
            scores = np.full(len(pairs), np.iinfo(np.int64).min, dtype=np.int64)
            fill = np.arange(len(pairs)) if band_all else np.flatnonzero(lengths_allow(m, n, min_identity))

            def banded_scores(ks, w, fill=fill, i=i, j=j):
                return scorer.scores([(a[i[x]].codes, targets[j[x]].codes) for x in fill[ks].tolist()], w.tolist())

            if fill.size:
                clock = time.perf_counter()
                scores[fill], w = optimal_scores(bound, i[fill], j[fill], m[fill], n[fill], banded_scores, W_FIRST)
                log.debug("allpairs: banded scores of %d pairs in %.2f s (%d needed a second band)", fill.size,
                          time.perf_counter() - clock, int((w > W_FIRST).sum()))
            stats["cells"], stats["gpu_seconds"] = scorer.cells, scorer.kernel_seconds
            yield pairs, scores

    if need_scores and band_first:  # the next batch's scores on the GPU while this one's survivors align
        from .background import ahead

        scored = ahead(optimal_from_bands())
    elif need_scores:
        scored = aligner.score_pairs([e.codes for e in a], None if b is None else [e.codes for e in b], kernel,
                                     slice_k, block, stats, span)
    else:
        stats["kernel"] = aligner.batch_kernel
        if aligner.gpu:
            log.info("allpairs: every pair is aligned (no score filter): kernel %s", aligner.batch_kernel)
        scored = ((pairs, None) for pairs in pair_batches(len(a), None if b is None else len(b), TILE, span))
    try:
        clock = time.perf_counter()
        for pairs, scores in scored:
            stats["score_seconds"] += time.perf_counter() - clock
            stats["pairs"] += len(pairs)
            ij = pairs.tolist()
            if not traceback:
                for (i, j), score in zip(ij, scores.tolist()):
                    yield PairResult(i, j, base(i, j, score), True)
                clock = time.perf_counter()
                continue
            if scores is None:
                todo = [(i, j, None) for i, j in ij]
            else:
                todo = []
                for (i, j), score in zip(ij, scores.tolist()):
                    if use_bound and score < identity_bound(len(a[i].codes), len(targets[j].codes),
                                                            min_identity, scoring):
                        stats["filtered"] += 1
                        continue
                    todo.append((i, j, score))
            log.debug("allpairs: a batch of %d pairs scored, %d to align", len(ij), len(todo))
            for i, j, aln in aligned(todo):
                passes = min_identity is None or (aln.ops is not None and aln.identity >= min_identity)
                if not passes:
                    stats["below"] += 1
                yield PairResult(i, j, aln, passes)
            clock = time.perf_counter()
    finally:
        if pool:
            pool.shutdown()


def _long(seqs: list[Encoded]) -> bool:
    """Whether a set's median length reaches :data:`BAND_FIRST_LENGTH` (pairs long enough that the banded
    scores' per-pair host work is small beside a full matrix's fill)."""
    return bool(seqs) and float(np.median([len(e.codes) for e in seqs])) >= BAND_FIRST_LENGTH


class AllPairs:
    """All pairs of a set of sequences (i < j), or every sequence against every one of a second set,
    prepared and ready to run: iterate over it for :class:`PairResult` in pair order.

    Scores come from the GPU's batched kernels (Li et al.'s designs, docs/allpairs.md) or the CPU engine;
    alignments only where a column or ``min_identity`` needs them, with the identity bound of this
    module's docstring skipping the pairs that cannot reach it (global mode).

    Arguments:
        sequences: records, or anything :func:`nwalign.sequences.as_records` takes, or a FASTA file as a
            ``pathlib.Path``; at least two unless ``against`` is given.
        against: a second set (same kinds), or None for the pairs within ``sequences``.
        scoring: a :class:`~nwalign.scoring.Scoring`; None builds one from ``mode``, ``alphabet``
            (``auto``: guessed from each set's letters, which must agree), ``matrix``,
            ``match``/``mismatch``, ``gap_open``/``gap_extend`` with the command line's defaults.
        columns: the :data:`COLUMNS` the results will be asked for (alignments run only when one needs
            them).
        min_identity: report only pairs whose identity (BLAST's: identical columns / columns) is at least
            this fraction; ``PairResult.passes`` says which.
        distances: align every pair (a distance matrix needs every identity).
        backend, kernel, slice_k, block, device: ``auto``/``cuda``/``cpu`` and the GPU kernel choice.
        threads: CPU threads (0: every core).
        workers, scheduler, client, devices, shared_dir: spread the pairs over Dask workers
            (:mod:`nwalign.spread`; :meth:`blocks` then gathers blocks of the pair matrix balanced by DP
            cells, at least four per worker, formatted by the workers): a local cluster of ``workers``
            CPU-engine processes, the running cluster at ``scheduler`` (address or scheduler file), a
            ``distributed.Client``, or one worker process per GPU of ``devices`` (``auto``: every visible
            GPU when there are two or more and Dask is installed; see
            :func:`nwalign.scaleout.resolve_devices`). The sets are written once as temporary ``.nwdb``
            files in ``shared_dir`` (default: the system's temporary directory; workers on other hosts
            need a directory they can all read). Results are those of one process, in the same order.

    Attributes: ``a``, ``b`` (encoded records; ``b`` None for pairs within ``a``), ``scoring``,
    ``backend`` (resolved), ``stats`` (filled while running: see :func:`run`).

    Raises:
        NwalignError: fewer than two sequences, bad letters, sets of different alphabets, bad options.
    """

    def __init__(self, sequences, against=None, scoring: Scoring | None = None, *, mode: str = "global",
                 alphabet: str = "auto", matrix: str | None = None, match: int | None = None,
                 mismatch: int | None = None, gap_open: int | None = None, gap_extend: int | None = None,
                 columns: tuple[str, ...] = DEFAULT_COLUMNS, min_identity: float | None = None,
                 distances: bool = False, backend: str = "auto", kernel: str = "auto", slice_k: int | None = None,
                 block: int | None = None, device: int = 0, threads: int = 0, source: str = "sequences",
                 against_source: str = "against", workers: int = 0, scheduler: str | None = None, client=None,
                 devices=None, shared_dir: str | None = None):
        import os

        from .cuda.allpairs import check_options
        from .engine import choose_backend, encode_all
        from .scoring import make_scoring, max_sequence_length
        from .sequences import as_records, choose_alphabet, letter_counts, read_fasta, unique_records

        if min_identity is not None and not 0.0 <= min_identity <= 1.0:
            raise option_error("min_identity", "--min-identity", f"{min_identity}: give a fraction between 0 and 1")
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown:
            raise NwalignError(f"allpairs: unknown column {unknown[0]!r} (choose from {', '.join(COLUMNS)})")
        check_options(kernel, slice_k, block)
        spread = workers > 1 or scheduler is not None or client is not None
        if spread and devices not in (None, "auto"):
            raise NwalignError("devices and workers/scheduler/client: choose one",
                               cli="--devices and --workers/--scheduler: choose one")
        if backend == "cuda" and workers > 1:
            raise NwalignError("workers run the CPU engine: for GPUs use devices, or a cluster of GPU workers "
                               "(scheduler or client) with backend 'cuda'", cli="--workers runs the CPU engine: "
                               "for GPUs use --devices, or --scheduler with --backend cuda")
        limit = max_sequence_length(alphabet, matrix, match, mismatch, gap_open, gap_extend) if scoring is None \
            else None

        def records(items, name):
            if isinstance(items, os.PathLike):
                return read_fasta(os.fspath(items), limit), os.fspath(items)
            return as_records(items), name

        first, source = records(sequences, source)
        second, against_source = records(against, against_source) if against is not None else (None, against_source)
        if second is None and len(first) < 2:
            raise NwalignError(f"{source}: allpairs needs at least two sequences (or a second set: against)",
                               cli=f"{source}: allpairs needs at least two sequences (or --against)")
        if scoring is None:
            kind = choose_alphabet([(source, letter_counts(first))] +
                                   ([(against_source, letter_counts(second))] if second else []), alphabet)
            scoring = make_scoring(kind, mode, matrix, match, mismatch, gap_open, gap_extend)
        self.scoring = scoring
        gpus = None
        if not spread:
            from .scaleout import resolve_devices, usable

            cells = PairCells([len(r.seq) for r in first], None if second is None else [len(r.seq) for r in second])
            gpus = usable(resolve_devices(devices, backend, device, cells.total), devices)
            if gpus is not None and len(gpus) == 1:
                device, gpus = gpus[0], None
        # Spread: the workers' engine (cuda for GPU workers, or a running cluster's with backend cuda);
        # this process aligns nothing itself.
        self.backend = "cuda" if gpus or (spread and backend == "cuda") else \
            "cpu" if spread else choose_backend(backend)
        first = unique_records(first, source)  # warns: after the options' errors
        second = unique_records(second, against_source) if second else None
        self.a = encode_all(first, scoring, source)
        self.b = encode_all(second, scoring, against_source) if second else None
        for rec in self.a + (self.b or []):
            scoring.check_lengths(len(rec.codes), len(rec.codes))
        self.columns, self.min_identity, self.distances = tuple(columns), min_identity, distances
        self.kernel, self.slice_k, self.block, self.device = kernel, slice_k, block, device
        self.threads = threads or os.cpu_count() or 1
        self.stats: dict = {}
        self._cells_along: PairCells | None = None
        self._spread = None
        if spread or gpus:
            from .spread import Spread

            self._spread = Spread("allpairs", (self.a, self.b), self.backend, workers, scheduler, client, gpus,
                                  shared_dir, gpu_tasks=2)  # a block formats its rows while the next is scored

    @property
    def cells(self) -> int:
        """DP cells of every pair (m x n summed): the work of a full score pass."""
        return self._pair_cells().total

    def span_cells(self, start: int, stop: int) -> int:
        """DP cells of the pairs at positions [start, stop) of the pair order."""
        cells = self._pair_cells()
        return cells.before(stop) - cells.before(start)

    def _pair_cells(self) -> PairCells:
        if self._cells_along is None:
            self._cells_along = PairCells([len(e.codes) for e in self.a],
                                          None if self.b is None else [len(e.codes) for e in self.b])
        return self._cells_along

    @property
    def tasks(self) -> tuple[int, int] | None:
        """(tasks done, tasks in all) of a job spread over workers once its blocks are planned, else None."""
        return None if self._spread is None else self._spread.tasks

    @property
    def pairs(self) -> int:
        """How many pairs the run yields."""
        return len(self.a) * len(self.b) if self.b else len(self.a) * (len(self.a) - 1) // 2

    def run(self) -> Iterator[PairResult]:
        """Yield a :class:`PairResult` per pair, row by row (:func:`run`), in this process; ``stats`` is
        filled meanwhile.

        Raises:
            NwalignError: the job was made to spread over workers (use :meth:`blocks`).
        """
        if self._spread is not None:
            raise NwalignError("allpairs spread over workers: iterate over blocks(), formatted by the workers")
        return run(self.a, self.b, self.scoring, self.columns, self.min_identity, self.distances, self.threads,
                   self.stats, self.backend, self.kernel, self.slice_k, self.block, self.device)

    def __iter__(self):
        return self.run()

    def blocks(self, progress=None) -> Iterator[Block]:
        """The results as consecutive :class:`Block` objects covering the pair order (TSV rows of the
        pairs that pass, and 1 - identity per pair when ``distances``): from this process, or from the
        workers when the job is spread (the same text and values either way). ``progress(pairs)`` is
        called after each block.

        Raises:
            nwalign.errors.WorkerLost: (spread) a task kept killing its workers.
        """
        if self._spread is not None:
            yield from self._spread_blocks(progress)
            return
        if not needs_traceback(self.columns, self.min_identity, self.distances):
            for blk in score_blocks(self.a, self.b, self.scoring, self.columns, self.stats, self.backend, self.kernel,
                                    self.slice_k, self.block, self.device, self.threads):
                yield blk
                if progress:
                    progress(blk.stop - blk.start)
            return
        chunk: list[PairResult] = []
        start = 0
        for res in self.run():
            chunk.append(res)
            if len(chunk) == BLOCK_PAIRS:
                yield format_results(chunk, self.columns, self.distances, start)
                if progress:
                    progress(len(chunk))
                start += len(chunk)
                chunk = []
        if chunk:
            yield format_results(chunk, self.columns, self.distances, start)
            if progress:
                progress(len(chunk))

    MAX_TASK_PAIRS = 1 << 20  # pairs per worker task at most: a task's rows wait in memory until written
    PER_WORKER = 4            # tasks per worker at least: a slow block does not hold the others up long
    HEAD_PER_GPU = 8          # quarter blocks per GPU first: run here while the workers start (1.5-2.1 s)
    TAPER_PER_WORKER = 6      # half, quarter, then eighth blocks last: each GPU worker runs two blocks at a time

    def _spread_blocks(self, progress):
        """The blocks from the workers (:mod:`nwalign.spread`): the pair order cut by :func:`blocks`;
        ``stats`` summed over the tasks (``score_seconds``: the wall time; ``gpu_seconds``: every task's
        kernel time, which overlap on a GPU; ``tasks``: how many)."""
        from .spread import PairsTask, pair_block

        spread, stats = self._spread, self.stats
        stats.update(pairs=0, filtered=0, below=0, kernel=None, cells=0, score_seconds=0.0)
        lengths = np.array([len(e.codes) for e in self.a])
        others = None if self.b is None else np.array([len(e.codes) for e in self.b])
        threads = max(1, self.threads // spread.workers) if self.backend == "cuda" else 1
        quantum = 1
        scored = not needs_traceback(self.columns, self.min_identity, self.distances) or \
            (self.min_identity is not None and self.scoring.mode == "global" and not self.distances)
        if self.backend == "cuda" and scored:  # blocks of whole waves of the score kernel
            from .spread import gpu_wave, wave_of

            whole = PairsTask(spread.paths, self.scoring, self.columns, self.min_identity, self.distances,
                              self.backend, self.kernel, self.slice_k, self.block, threads, (0, self.pairs))
            # this host's GPUs (the workers' own) are asked here, while the workers start
            quantum = wave_of(self.a, self.b, whole, spread.gpus[0]) if spread.gpus else \
                spread.client.submit(gpu_wave, whole, pure=False).result()
            if spread.gpus:  # the GPU workers, still to start, ready only once they can run a block at once
                import functools

                from .spread import prepare_pairs_worker

                spread.warm = functools.partial(prepare_pairs_worker, whole)
        per_worker = self.PER_WORKER * (2 if spread.gpus else 1)  # smaller blocks: some run here first
        count = max(per_worker * spread.workers, -(-self.pairs // self.MAX_TASK_PAIRS))
        head = self.HEAD_PER_GPU * spread.workers if spread.gpus else 0  # the quarter blocks run here first
        taper = self.TAPER_PER_WORKER * spread.workers
        # the eighth blocks come on top, so that the other blocks keep their size (measured: session 22)
        spans = blocks(lengths, others, count + head + taper // 3, quantum, taper=taper, head=head)
        log.info("allpairs: %d pairs in %d blocks over %d workers", self.pairs, len(spans), spread.workers)
        tasks = (PairsTask(spread.paths, self.scoring, self.columns, self.min_identity, self.distances, self.backend,
                           self.kernel, self.slice_k, self.block, threads, span) for span in spans)
        clock, epoch = time.perf_counter(), time.time()

        rows = ScoreRows(self.a, self.b, self.columns) if not needs_traceback(
            self.columns, self.min_identity, self.distances) else None

        def here(tasks, gpu):  # blocks on one of the workers' GPUs, in this process, while they start
            from .spread import block_of, scored_blocks_on

            if rows is not None:  # one stream of batches; formatted below, as they are written
                return scored_blocks_on(self.a, self.b, tasks, gpu)
            return (block_of(self.a, self.b, task, gpu) for task in tasks)

        # here the quarter blocks only: a full one begun as the workers come up shared its GPU with
        # theirs for 2.5 s (session 22: 9.48 s against 8.89-9.21 s)
        for block, part in spread.map(pair_block, tasks, here if spread.gpus else None, total=len(spans),
                                      lead_limit=head or None):
            if isinstance(block, Scored):
                block = block.block(rows)
            for key in ("pairs", "filtered", "below", "cells"):
                stats[key] += part.get(key, 0)
            stats["kernel"] = part.get("kernel", stats["kernel"])
            if part.get("gpu_seconds"):
                stats["gpu_seconds"] = stats.get("gpu_seconds", 0.0) + part["gpu_seconds"]
            stats["tasks"] = spread.done
            if "ran" in part:  # the -v timeline (NWALIGN_LOG_TIMES): where and when each block ran
                began, ended, pid, gpu = part["ran"]
                log.debug("allpairs: block %d of %d in (%d pairs): ran %.2f-%.2f s after the plan in process %d%s, "
                          "kernels %.2f s", spread.done, len(spans), block.stop - block.start, began - epoch,
                          ended - epoch, pid, f" on GPU {gpu}" if self.backend == "cuda" else "",
                          part.get("gpu_seconds") or 0.0)
            stats["score_seconds"] = time.perf_counter() - clock
            if progress:
                progress(block.stop - block.start)
            yield block

    def close(self) -> None:
        """Stop the workers this job started (a spread job that is not run to its end)."""
        if self._spread is not None:
            self._spread.close()


def allpairs(sequences, against=None, scoring: Scoring | None = None, **options) -> AllPairs:
    """All pairs of ``sequences`` (or each against each of ``against``); see :class:`AllPairs` for the
    arguments. Iterate over the result for :class:`PairResult` (``i``, ``j``, ``aln``, ``passes``).

    >>> from nwalign import allpairs
    >>> for r in allpairs(["GATTACA", "GATCACA", "GTTTACA"], backend="cpu"):
    ...     print(r.i, r.j, r.aln.score, round(r.aln.identity, 3))
    0 1 26 0.857
    0 2 26 0.857
    1 2 17 0.714

    Raises:
        NwalignError: as :class:`AllPairs`.
    """
    return AllPairs(sequences, against, scoring, **options)
