"""The allpairs job: every pair of a sequence set (i < j), or every sequence against every one of a second
set, with an identity filter, in this process (:func:`nwalign.jobs.allpairs.run.run`) or spread over workers
in blocks of the pair order (:mod:`nwalign.jobs.allpairs.tasks`), the results in pair order.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
import time
from collections.abc import Iterator

import numpy as np

from nwalign import names
from nwalign.jobs.allpairs.run import needs_traceback, KernelChoice, run, score_blocks
from nwalign.jobs.allpairs.tasks import PairsTask, block_of, gpu_wave, pair_block, scored_blocks_on, wave_of
from nwalign import backends
from nwalign.backends.engine import encode_all
from nwalign.errors import NwalignError, option_error
from nwalign.names import PAIR_GPU_MODES
from nwalign.output.writers.tsv import format_results
from nwalign.output.scorerows import ScoreRows
from nwalign.plan.pairorder import PairCells, blocks
from nwalign.parallel.placement import check_spread, within_machine, local_gpus
from nwalign.plan.options import Placement, sort_keywords
from nwalign.plan.prepare import ScoringRequest, read_side
from nwalign.records.alignment import Block, PairResult
from nwalign.scoring.schemes import Scoring
from nwalign.io.sequences import unique_records
from nwalign.parallel.spread import Spread

log = logging.getLogger("nwalign")

COLUMNS, DEFAULT_COLUMNS = names.ALLPAIRS_COLUMNS, names.ALLPAIRS_DEFAULT_COLUMNS
BLOCK_PAIRS = 1 << 14  # pairs per formatted block in one process (what waits before it is written)
FIRST_BLOCK_PAIRS = 64  # the first block's: its rows are out while the next blocks are aligned
# ... and alignment columns per block at most (a few bytes each while it waits): 16,384 genome pairs'
# alignments held 2 GB (the 418 SARS-CoV-2 genomes on the CPU engine)
BLOCK_COLUMNS = 1 << 25


@dataclass(frozen=True)
class AllPairsOptions:
    """The allpairs job's own options (see :class:`AllPairs`): ``mode``, ``columns``, ``min_identity``,
    ``distances``, ``kernel``, ``slice_k``, ``block``, ``source``, ``against_source``."""

    mode: str = "global"
    columns: tuple[str, ...] = DEFAULT_COLUMNS
    min_identity: float | None = None
    distances: bool = False
    kernel: str = "auto"
    slice_k: int | None = None
    block: int | None = None
    source: str = "sequences"
    against_source: str = "against"

    def check(self) -> None:
        """Refuse what no allpairs job takes, before any input is read.

        Raises:
            NwalignError: an identity outside [0, 1], an unknown column, kernel or kernel option.
        """
        if self.min_identity is not None and not 0.0 <= self.min_identity <= 1.0:
            raise option_error("min_identity", "--min-identity",
                               f"{self.min_identity}: give a fraction between 0 and 1")
        unknown = [c for c in self.columns if c not in COLUMNS]
        if unknown:
            raise NwalignError(f"allpairs: unknown column {unknown[0]!r} (choose from {', '.join(COLUMNS)})")
        backends.check_allpairs_options(self.kernel, self.slice_k, self.block)


class AllPairs:
    """All pairs of a set of sequences (i < j), or every sequence against every one of a second set,
    prepared and ready to run: iterate over it for :class:`PairResult` in pair order.

    Scores come from the GPU's batched kernels (Li et al.'s designs, docs/allpairs.md) or the CPU engine;
    alignments only where a column or ``min_identity`` needs them, with the identity bound of this
    module's docstring skipping the pairs that cannot reach it (global mode).

    Arguments:
        request, placement, options: the scoring asked for (:class:`nwalign.plan.prepare.ScoringRequest`),
            where the pairs run (:class:`nwalign.plan.options.Placement`) and the job's own options
            (:class:`AllPairsOptions`); every field may be given as a keyword of its name instead, as below.
        sequences: records, or anything :func:`nwalign.io.sequences.as_records` takes, or a FASTA file as a
            ``pathlib.Path``; at least two unless ``against`` is given.
        against: a second set (same kinds), or None for the pairs within ``sequences``.
        scoring: a :class:`~nwalign.scoring.schemes.Scoring`; None builds one from ``mode``, ``alphabet``
            (``auto``: guessed from each set's letters, which must agree), ``matrix``,
            ``match``/``mismatch``, ``gap_open``/``gap_extend`` with the command line's defaults.
        columns: the :data:`COLUMNS` the results will be asked for (alignments run only when one needs
            them).
        min_identity: report only pairs whose identity (BLAST's: identical columns / columns) is at least
            this fraction; ``PairResult.passes`` says which.
        distances: align every pair (a distance matrix needs every identity).
        backend, kernel, slice_k, block, device: ``auto``/``cuda``/``cpu`` and the GPU kernel choice.
        threads: CPU threads (0: every core).
        workers, scheduler, client, devices, shared_dir: spread the pairs (:mod:`nwalign.parallel.spread`;
            :meth:`blocks` then gathers blocks of the pair matrix balanced by DP cells, at least four per
            worker or GPU): over this host's GPUs of ``devices``, a thread each (``auto``: every visible
            GPU when there are two or more; see :func:`nwalign.parallel.cluster.resolve_devices`), or over Dask
            workers: a local cluster of ``workers`` CPU-engine processes, the running cluster at
            ``scheduler`` (address or scheduler file) or a ``distributed.Client``. For workers the sets
            are written once as temporary ``.nwdb`` files in ``shared_dir`` (default: the system's
            temporary directory; workers on other hosts need a directory they can all read). Results are
            those of one process, in the same order.

    Attributes: ``a``, ``b`` (encoded records; ``b`` None for pairs within ``a``), ``scoring``,
    ``backend`` (resolved), ``stats`` (filled while running: see :func:`run`).

    >>> for r in AllPairs(["GATTACA", "GATCACA", "GTTTACA"], backend="cpu", min_identity=0.8):
    ...     print(r.i, r.j, r.aln.score, r.passes)
    0 1 26 True
    0 2 26 True
    1 2 17 False

    Raises:
        NwalignError: fewer than two sequences, bad letters, sets of different alphabets, bad options.
    """

    def __init__(self, sequences, against=None, scoring: Scoring | None = None, *,
                 request: ScoringRequest | None = None, placement: Placement | None = None,
                 options: AllPairsOptions | None = None, **keywords):
        request, placement, options = sort_keywords("AllPairs", keywords, request or ScoringRequest(),
                                                    placement or Placement(), options or AllPairsOptions())
        placement = within_machine(placement)
        options.check()
        backend, device, devices, mode = placement.backend, placement.device, placement.devices, options.mode
        spread = check_spread(placement.workers, placement.scheduler, placement.client, devices, backend)
        limit = request.limit() if scoring is None else None
        first, source = read_side(sequences, options.source, limit)
        second, against_source = read_side(against, options.against_source, limit) if against is not None \
            else (None, options.against_source)
        if second is None and len(first) < 2:
            raise NwalignError(f"{source}: allpairs needs at least two sequences (or a second set: against)",
                               cli=f"{source}: allpairs needs at least two sequences (or --against)")
        sides = [(source, first)] + ([(against_source, second)] if second else [])
        self.scoring = scoring = scoring or request.make(mode, sides)
        if scoring.mode not in PAIR_GPU_MODES:  # other free ends: the CPU engine's, here or on CPU workers
            backend, devices = backends.request_for_mode(backend, scoring.mode), None
            spread = check_spread(placement.workers, placement.scheduler, placement.client, devices, backend)
        gpus = None
        if not spread:
            cells = PairCells([len(r.seq) for r in first], None if second is None else [len(r.seq) for r in second])
            device, gpus = local_gpus(devices, backend, device, cells.total)
        # Spread: the workers' engine (cuda for GPU workers, or a running cluster's with backend cuda);
        # this process aligns nothing itself.
        self.engine = backends.named("cuda") if gpus else backends.for_workers(backend) if spread else \
            backends.choose(backend)
        self.backend = self.engine.name
        first = unique_records(first, source)  # warns: after the options' errors
        second = unique_records(second, against_source) if second else None
        self.a = encode_all(first, scoring, source)
        self.b = encode_all(second, scoring, against_source) if second else None
        for rec in self.a + (self.b or []):
            scoring.check_lengths(len(rec.codes), len(rec.codes))
        self.columns, self.min_identity, self.distances = tuple(options.columns), options.min_identity, \
            options.distances
        self.kernel, self.slice_k, self.block, self.device = options.kernel, options.slice_k, options.block, device
        self.threads = placement.threads or os.cpu_count() or 1
        self.stats: dict = {}
        self._cells_along: PairCells | None = None
        self._spread = None
        if spread or gpus:
            self._spread = Spread("allpairs", (self.a, self.b), self.backend, placement.workers, placement.scheduler,
                                  placement.client, gpus, placement.shared_dir)

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
                   self.stats, self.backend, KernelChoice(self.kernel, self.slice_k, self.block), self.device)

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
        start, size = 0, FIRST_BLOCK_PAIRS  # the first rows out at once (| head), then blocks growing
        held = 0  # alignment columns the block holds
        for res in self.run():
            chunk.append(res)
            held += res.aln.length if res.aln.ops is not None else 0
            if len(chunk) == size or held >= BLOCK_COLUMNS:
                yield format_results(chunk, self.columns, self.distances, start)
                if progress:
                    progress(len(chunk))
                start += len(chunk)
                chunk, size, held = [], min(2 * size, BLOCK_PAIRS), 0
        if chunk:
            yield format_results(chunk, self.columns, self.distances, start)
            if progress:
                progress(len(chunk))

    MAX_TASK_PAIRS = 1 << 20  # pairs per task at most: a task's rows wait in memory until written
    PER_WORKER = 4            # tasks per worker or GPU at least: a slow block does not hold the others up long
    TAPER_PER_WORKER = 6      # half, quarter, then eighth blocks last, per worker or GPU: they finish together

    def _spread_blocks(self, progress):
        """The blocks from this host's GPUs or the workers (:mod:`nwalign.parallel.spread`): the pair order cut by
        :func:`blocks`; ``stats`` summed over the tasks (``score_seconds``: the wall time; ``gpu_seconds``:
        every task's kernel time, which overlap on a GPU; ``tasks``: how many)."""
        spread, stats = self._spread, self.stats
        stats.update(pairs=0, filtered=0, below=0, kernel=None, cells=0, score_seconds=0.0)
        lengths = np.array([len(e.codes) for e in self.a])
        others = None if self.b is None else np.array([len(e.codes) for e in self.b])
        threads = max(1, self.threads // spread.workers) if self.engine.on_gpu else 1
        quantum = 1
        scored = not needs_traceback(self.columns, self.min_identity, self.distances) or \
            (self.min_identity is not None and self.scoring.mode == "global" and not self.distances)
        if self.engine.on_gpu and scored:  # blocks of whole waves of the score kernel
            whole = PairsTask(spread.paths, self.scoring, self.columns, self.min_identity, self.distances,
                              self.backend, self.kernel, self.slice_k, self.block, threads, (0, self.pairs))
            quantum = wave_of(self.a, self.b, whole, spread.gpus[0]) if spread.gpus else \
                spread.client.submit(gpu_wave, whole, pure=False).result()
        count = max(self.PER_WORKER * spread.workers, -(-self.pairs // self.MAX_TASK_PAIRS))
        taper = self.TAPER_PER_WORKER * spread.workers
        # the eighth blocks come on top, so that the other blocks keep their size
        spans = blocks(lengths, others, count + taper // 3, quantum, taper=taper)
        log.info("allpairs: %d pairs in %d blocks over %d %s", self.pairs, len(spans), spread.workers,
                 "GPUs" if spread.gpus else "workers")
        tasks = (PairsTask(spread.paths, self.scoring, self.columns, self.min_identity, self.distances, self.backend,
                           self.kernel, self.slice_k, self.block, threads, span) for span in spans)
        clock, epoch = time.perf_counter(), time.time()

        rows = ScoreRows(self.a, self.b, self.columns) if not needs_traceback(
            self.columns, self.min_identity, self.distances) else None
        if rows is not None and spread.gpus:
            rows.warm_up(self.pairs)

        def here(tasks, gpu):  # blocks on one of this host's GPUs, in this process
            if rows is not None:  # one stream of batches a GPU, each block formatted in its GPU's thread
                # (a compiled loop without the GIL: the writer only writes)
                return ((scored.block(rows), part) for scored, part in scored_blocks_on(self.a, self.b, tasks, gpu))
            return (block_of(self.a, self.b, task, gpu) for task in tasks)

        for block, part in spread.map(pair_block, tasks, here, total=len(spans)):
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
                          ended - epoch, pid, f" on GPU {gpu}" if self.engine.on_gpu else "",
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
