"""The pair command's job: query records against target records, paired one against each, each
against one, or i against i (:func:`nwalign.backends.engine.pair_plan`), each pair aligned in full, in this
process (:class:`nwalign.backends.aligner.Aligner`) or spread over workers in chunks of the plan
(:class:`AlignTask`, :func:`align_chunk`)."""

from __future__ import annotations

import dataclasses

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from nwalign.backends.aligner import Aligner
from nwalign import backends
from nwalign.backends.engine import DEFAULT_MAX_MEMORY, encode_all, pair_plan
from nwalign.plan.pairorder import chunks
from nwalign.parallel.placement import check_spread, within_machine, local_gpus
from nwalign.plan.options import Placement, sort_keywords
from nwalign.plan.prepare import ScoringRequest, read_side
from nwalign.errors import NwalignError
from nwalign.records.alignment import Alignment
from nwalign.parallel.cluster import AUTO_MIN_PAIR_CELLS
from nwalign.scoring.schemes import Scoring
from nwalign.io.sequences import unique_records
from nwalign.results.strands import better_strands, searched_strands, stranded_queries
from nwalign.parallel.spread import Spread, pair_sets

log = logging.getLogger("nwalign")


@dataclass(frozen=True)
class PairOptions:
    """The pair job's own options (see :class:`Pairs`): ``mode``, ``score_only``, ``max_memory``, ``kernel``,
    ``block``, ``shared``, ``gpu_max_memory``, ``strand``, ``query_source``, ``target_source``."""

    mode: str = "global"
    score_only: bool = False
    max_memory: int = DEFAULT_MAX_MEMORY
    kernel: str = "wavefront"
    block: tuple[int, int] = (32, 32)
    shared: bool = True
    gpu_max_memory: int | None = None
    strand: str | None = None
    query_source: str = "query"
    target_source: str = "target"
    max_hsps: int = 1

    def check(self, mode: str | None = None) -> None:
        """Refuse alternatives where there are none to give (``mode``: the scoring's, when one was given).

        Raises:
            NwalignError: ``max_hsps`` below 1, or above 1 outside local mode or with ``score_only``.
        """
        if self.max_hsps < 1:
            raise NwalignError(f"max_hsps {self.max_hsps}: give at least 1", cli=f"--max-hsps {self.max_hsps}: "
                               "give at least 1")
        mode = mode or self.mode
        if self.max_hsps > 1 and (mode != "local" or self.score_only):
            why = "--mode local" if mode != "local" else "the alignments (drop --score-only)"
            raise NwalignError(f"max_hsps > 1 needs {why}", cli=f"--max-hsps {self.max_hsps} needs {why}")


class Pairs:
    """The pair command's job, prepared and ready to run: query records against target records, paired as
    :func:`nwalign.backends.engine.pair_plan` says (one against each, each against one, or i against i), each
    pair aligned in full by an :class:`Aligner` (Gotoh's affine-gap Needleman-Wunsch, Smith-Waterman or
    semi-global; on a GPU the ``wavefront`` kernel unless ``kernel`` names one of the papers').

    Arguments:
        queries, targets: records, or anything :func:`nwalign.io.sequences.as_records` takes, or FASTA files
            as ``pathlib.Path`` (an over-long record is refused while it is read).
        request, placement, options: the scoring asked for (:class:`nwalign.plan.prepare.ScoringRequest`),
            where the pairs run (:class:`nwalign.plan.options.Placement`) and the job's own options
            (:class:`PairOptions`); every field may be given as a keyword of its name instead, as below.
        scoring: a :class:`~nwalign.scoring.schemes.Scoring`; None builds one from ``mode``, ``alphabet`` (``auto``:
            guessed from both sides' letters, which must agree), ``matrix``, ``match``/``mismatch``,
            ``gap_open``/``gap_extend`` with the command line's defaults.
        score_only: optimal scores only (linear memory).
        backend, device, threads, max_memory: as :class:`Aligner` takes them.
        kernel, block, shared: the GPU pair kernel and its knobs (:class:`nwalign.backends.cuda.pair.Options`).
        query_source, target_source: names for the two sides in messages (file names).
        strand: nucleotides: ``plus``, ``minus`` (the query's reverse complement) or ``both`` (the better
            of the two per pair; the plus strand on equal scores); None: as given, no strand reported.
        workers, scheduler, client, devices, shared_dir: spread the pairs in chunks of the plan balanced by
            DP cells (a pair is never split) over this host's GPUs (a thread each) or Dask workers, as
            :class:`nwalign.jobs.allpairs.job.AllPairs` takes them; each of ``workers`` local processes gets ``max_memory`` / workers for its CPU
            tracebacks (a cluster's workers the whole of it). The alignments are those of one process, in
            the same order.

    Attributes: ``queries``, ``targets`` (encoded records), ``plan`` ((query, target) index pairs),
    ``scoring``, ``aligner``, ``backend``.

    >>> from nwalign import Pairs
    >>> [(a.target_id, a.cigar()) for a in Pairs("GATTACA", ["GATCACA", "GATTACA"], backend="cpu")]
    [('target1', '3=1X3='), ('target2', '7=')]

    Raises:
        NwalignError: bad sequences or letters, sides of different alphabets, record counts that cannot
            be paired, sequences too long for 32-bit scores, an unknown matrix, mode or backend.
    """

    PER_WORKER = 4          # chunks per worker at least (spread)
    MAX_CHUNK_PAIRS = 4096  # pairs per chunk at most: a chunk's alignments wait in memory until written
    BATCH_CELLS = 1 << 22   # GPU: pairs of at most this many cells go to the batch kernel (one warp each),
    BATCH_MIN = 32          # when the plan holds at least this many of them; larger pairs take the pair kernel

    def __init__(self, queries, targets, scoring: Scoring | None = None, *, request: ScoringRequest | None = None,
                 placement: Placement | None = None, options: PairOptions | None = None, **keywords):
        request, placement, options = sort_keywords("Pairs", keywords, request or ScoringRequest(),
                                                    placement or Placement(), options or PairOptions())
        placement = within_machine(placement)
        options.check(scoring.mode if scoring is not None else None)
        self.max_hsps = options.max_hsps
        limit = request.limit() if scoring is None else None
        qrecs, qname = read_side(queries, options.query_source, limit, "query")
        trecs, tname = read_side(targets, options.target_source, limit, "target")
        self.scoring = scoring = scoring or request.make(options.mode, [(qname, qrecs), (tname, trecs)])
        qrecs, trecs = unique_records(qrecs, qname), unique_records(trecs, tname)  # warns: after the errors
        log.info("scoring: %s, gap open %d, extend %d, mode %s", scoring.matrix_name, scoring.gap_open,
                 scoring.gap_extend, scoring.mode)
        self.queries, self.targets = encode_all(qrecs, scoring, qname), encode_all(trecs, scoring, tname)
        self.plan = pair_plan(self.queries, self.targets)
        # --strand: each query on the strands asked for (nucleotides), the better one reported per pair
        self.strands = None if options.strand is None else searched_strands(options.strand, scoring.alphabet)
        if self.strands is not None:
            n = len(self.strands)
            self.queries = stranded_queries(self.queries, scoring, self.strands, qname)
            self.plan = [(qi * n + k, ti) for qi, ti in self.plan for k in range(n)]
        for qi, ti in self.plan:
            scoring.check_lengths(len(self.queries[qi].codes), len(self.targets[ti].codes))
        self._place(placement, options)

    def _place(self, placement: Placement, options: PairOptions) -> None:
        """The engine, the GPUs or workers, and the aligner or the spread, resolved once."""
        placement = dataclasses.replace(placement, backend=backends.request_for_mode(placement.backend,
                                                                                   self.scoring.mode))
        backend, device, devices = placement.backend, placement.device, placement.devices
        kernel, block, shared = options.kernel, options.block, options.shared
        threads = 1 if placement.threads is None else placement.threads
        self.score_only, self.kernel = options.score_only, kernel
        spread = check_spread(placement.workers, placement.scheduler, placement.client, devices, backend)
        gpus, over = None, ()
        if not spread:
            device, gpus = local_gpus(devices, backend, device, sum(self.cells(k) for k in range(len(self.plan))))
            if gpus is not None and len(self.plan) == 1:  # one pair: its score passes spread over the GPUs
                device, gpus, over = gpus[0], None, tuple(gpus) if spreads_one_pair(devices, self.cells(0)) else ()
        # Spread: the workers' engine (cuda for GPU workers, or a running cluster's with backend cuda).
        self.engine = backends.named("cuda") if gpus else backends.for_workers(backend) if spread else \
            backends.choose(backend)
        self.backend = self.engine.name
        engine_options = self.engine.pair_options(kernel, block, shared, 0 if gpus or spread else device,
                                                  options.gpu_max_memory, over)
        if self.engine.on_gpu:
            log.info("kernel: %s%s", kernel, f" {block[0]}x{block[1]}, shared={shared}"
                     if kernel == "diagonal-block" else "")
        self._spread = None
        if spread or gpus:
            self._start_spread(placement, gpus, options.max_memory, threads, engine_options)
            return
        self.aligner = Aligner(self.scoring, self.backend, device, threads, options.max_memory, engine_options,
                               announce=False)

    def _start_spread(self, placement: Placement, gpus, max_memory, threads, options) -> None:
        workers = placement.workers
        # Local CPU workers share this host's memory; a cluster's workers have their own.
        self._share = max(1, max_memory // workers) if workers > 1 else max_memory
        if not self.score_only:  # a CPU traceback that cannot fit is refused here, before any worker starts
            for qi, ti in self.plan:
                self.engine.check_traceback(len(self.queries[qi].codes), len(self.targets[ti].codes), self._share)
        self._spread = Spread("pair", (self.queries, self.targets), self.backend, workers, placement.scheduler,
                              placement.client, gpus, placement.shared_dir)
        self._options, self._threads = options, threads
        self.aligner = None

    def cells(self, k: int = 0) -> int:
        """DP cells of pair ``k`` of the plan."""
        qi, ti = self.plan[k]
        return len(self.queries[qi].codes) * len(self.targets[ti].codes)

    def run(self, progress=None) -> Iterator[Alignment]:
        """The alignments in plan order. A pair whose traceback cannot fit ``max_memory`` is refused here,
        before the first result. ``progress(fraction)`` follows a lone pair's CPU traceback (in this process).

        Raises:
            nwalign.errors.WorkerLost: (spread) a task kept killing its workers.
        """
        found = self._run(progress)
        if self.max_hsps > 1:
            return self._every_alignment(found)
        return found if self.strands is None else better_strands(found, self.strands)

    def _every_alignment(self, found) -> Iterator[Alignment]:
        """Each pair's alignment, then its Waterman-Eggert alternatives (each the best that aligns no residue
        pair of those before it; :func:`nwalign.backends.engine.alternative_alignments`) on each strand asked
        for, the ``max_hsps`` best of them, best first (the strand asked for first on equal scores)."""
        from nwalign.backends.engine import alternative_alignments

        n = len(self.strands or (None,))
        found = iter(found)
        for k in range(0, len(self.plan), n):
            group = []
            for s, (qi, ti) in enumerate(self.plan[k:k + n]):
                aln = next(found)
                more = alternative_alignments(self.queries[qi], self.targets[ti], self.scoring, [aln],
                                              lambda score: score >= 1, self.max_hsps)
                strand = self.strands[s] if self.strands else None
                group += [a if strand is None else dataclasses.replace(a, strand=strand) for a in [aln, *more]]
            group.sort(key=lambda a: -a.score)
            yield from group[:self.max_hsps]

    def _run(self, progress) -> Iterator[Alignment]:
        if self._spread is not None:
            return self._spread_run()
        if self.score_only and not self.engine.on_gpu and len(self.plan) > 1 and len({a for a, _ in self.plan}) == 1:
            found = self._one_against_many()
            if found is not None:
                return found
        pairs = [(self.queries[a], self.targets[b]) for a, b in self.plan]
        small = [k for k in range(len(pairs)) if self.cells(k) <= self.BATCH_CELLS]
        if self.aligner.batch_kernel == "batch_align" and not self.score_only and self.kernel == "wavefront" \
                and len(small) >= self.BATCH_MIN:
            return self._batched_run(pairs, small, progress)
        return self.aligner.align_many(pairs, self.score_only, progress)

    def _one_against_many(self) -> Iterator[Alignment] | None:
        """Scores of one query against every target by the engine's one-query scorer (Opal's SIMD kernels), or
        None without one."""
        targets = [self.targets[b] for _, b in self.plan]
        offsets = np.concatenate(([0], np.cumsum([len(t.codes) for t in targets]))).astype(np.int64)
        fast = self.engine.one_query_scorer(np.concatenate([t.codes for t in targets]), offsets, self.scoring)
        if fast is None:
            return None
        query = self.queries[self.plan[0][0]]
        scores = fast.scores(query.codes, self.aligner.threads)
        return iter([Alignment(query_id=query.record.id, target_id=t.record.id, mode=self.scoring.mode,
                               score=int(score), query_length=len(query.codes), target_length=len(t.codes))
                     for t, score in zip(targets, scores.tolist())])

    def _batched_run(self, pairs, small: list[int], progress) -> Iterator[Alignment]:
        """Many small pairs on the GPU: the batch kernel aligns them (:meth:`Aligner.align_batch`: calls of
        :data:`BATCH` pairs, the next queued before the last one's alignments are built), the pair kernel
        the others, in plan order.
        Both follow the CPU engine's recurrence and tie rules: the same alignments as pair by pair."""
        log.info("pair: %d of %d pairs on the GPU's batch kernel (at most %d cells each)", len(small), len(pairs),
                 self.BATCH_CELLS)
        is_small = np.zeros(len(pairs), dtype=bool)
        is_small[small] = True
        large = self.aligner.align_many([p for p, s in zip(pairs, is_small) if not s], False, progress)
        batched = self.aligner.align_batch([pairs[k] for k in small])
        for k in range(len(pairs)):
            yield next(batched) if is_small[k] else next(large)

    def _spread_run(self) -> Iterator[Alignment]:
        spread = self._spread
        cells = np.array([self.cells(k) for k in range(len(self.plan))], dtype=np.float64)
        count = max(self.PER_WORKER * spread.workers, -(-len(self.plan) // self.MAX_CHUNK_PAIRS))
        parts = chunks(cells, count)
        threads = max(1, self._threads // spread.workers) if self.engine.on_gpu else 1
        log.info("pair: %d pairs in %d chunks over %d %s", len(self.plan), len(parts), spread.workers,
                 "GPUs" if spread.gpus else "workers")
        tasks = (AlignTask(spread.paths, self.scoring, tuple(self.plan[a:b]), self.score_only, self.backend, threads,
                           self._share, self._options) for a, b in parts)

        def here(tasks, gpu):  # chunks on one of this host's GPUs, in this process
            return (chunk_of(self.queries, self.targets, task, gpu) for task in tasks)

        for alignments in spread.map(align_chunk, tasks, here, total=len(parts)):
            yield from alignments

    @property
    def tasks(self) -> tuple[int, int] | None:
        """(tasks done, tasks in all) of a job spread over workers once its chunks are planned, else None."""
        return None if self._spread is None else self._spread.tasks

    def close(self) -> None:
        """Stop the workers this job started (a spread job that is not run to its end)."""
        if self._spread is not None:
            self._spread.close()

    def __iter__(self):
        return self.run()


@dataclass(frozen=True)
class AlignTask:
    """A chunk of the pair command's plan: (query, target) indices into the two .nwdb files."""

    sets: tuple                   # (.nwdb of the queries, of the targets)
    scoring: object
    plan: tuple                   # ((query index, target index), ...)
    score_only: bool
    backend: str
    threads: int
    max_memory: int               # bytes for this task's CPU tracebacks
    options: object = None        # nwalign.backends.cuda.pair.Options (device 0: the worker's GPU) or None


def spreads_one_pair(devices, cells: int) -> bool:
    """Whether a lone pair of ``cells`` DP cells spreads its score pass over the GPUs ``devices`` resolved
    to (:mod:`nwalign.backends.cuda.wavespread`): GPUs named (``all`` or a list) always, ``auto`` (or None) from
    :data:`nwalign.parallel.cluster.AUTO_MIN_PAIR_CELLS`."""
    return devices not in (None, "auto") or cells >= AUTO_MIN_PAIR_CELLS


def align_chunk(task: AlignTask) -> list:
    """Align a chunk of pairs on a worker: their :class:`~nwalign.records.alignment.Alignment` objects, in order."""
    queries, targets = pair_sets(task.sets, task.scoring)
    return chunk_of(queries, targets, task, 0)


def chunk_of(queries, targets, task: AlignTask, device: int) -> list:
    """:func:`align_chunk` on the encoded sets and GPU ``device`` (a worker's only GPU, or one of this
    host's GPUs in this process)."""
    aligner = Aligner(task.scoring, task.backend, device, task.threads, task.max_memory, task.options, announce=False)
    return list(aligner.align_many([(queries[q], targets[t]) for q, t in task.plan], task.score_only))
