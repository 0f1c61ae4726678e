"""The tasks of an all-pairs job spread over workers (:class:`nwalign.parallel.spread.Spread`): one block of the
pair order each (:class:`PairsTask`), aligned and formatted where it runs (:func:`pair_block` on a
worker, :func:`block_of` or :func:`scored_blocks_on` in the command's own process while GPU workers
start), and the score kernel's wave that the blocks are cut in (:func:`gpu_wave`)."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass

from nwalign import backends
from nwalign.backends.aligner import Aligner
from nwalign.jobs.allpairs.run import needs_traceback, KernelChoice, run, score_blocks
from nwalign.output.writers.tsv import format_results
from nwalign.output.scorerows import Scored
from nwalign.records.alignment import Block
from nwalign.parallel.spread import pair_sets


@dataclass(frozen=True)
class PairsTask:
    """One block of an all-pairs job: small and picklable (the sequences stay in the .nwdb files)."""

    sets: tuple                   # (.nwdb path of the set, of the second set or None)
    scoring: object
    columns: tuple
    min_identity: float | None
    distances: bool
    backend: str                  # the worker's engine: cpu, or cuda on its one visible GPU
    kernel: str
    slice_k: int | None
    block: int | None
    threads: int
    span: tuple                   # (start, stop) positions in the pair order


def pair_block(task: PairsTask):
    """Align and format one block of an all-pairs job on a worker: (:class:`nwalign.jobs.allpairs.job.Block`,
    stats as :func:`nwalign.jobs.allpairs.job.run` fills them)."""
    a, b = pair_sets(task.sets, task.scoring)
    return block_of(a, b, task, 0)


def block_of(a, b, task: PairsTask, device: int):
    """:func:`pair_block` on the encoded sets ``a``, ``b`` and GPU ``device`` (a worker's only GPU, or
    one of this host's GPUs in this process; score-only blocks there: :func:`scored_blocks_on`)."""
    stats: dict = {}
    began = time.time()  # wall clock, comparable across the processes of one host (the -v timeline)
    if not needs_traceback(task.columns, task.min_identity, task.distances):
        parts = list(score_blocks(a, b, task.scoring, task.columns, stats, task.backend, task.kernel, task.slice_k,
                                  task.block, device, task.threads, task.span))
        text = "".join(p.text for p in parts)
        block = Block(task.span[0], task.span[1], text, None, sum(p.reported for p in parts))
    else:
        results = list(run(a, b, task.scoring, task.columns, task.min_identity, task.distances, task.threads, stats,
                           task.backend, KernelChoice(task.kernel, task.slice_k, task.block), device, task.span))
        block = format_results(results, task.columns, task.distances, task.span[0])
    stats["ran"] = (began, time.time(), os.getpid(), device)
    return block, stats


def scored_blocks_on(a, b, tasks, device: int):
    """The score-only blocks a job runs in this process on one of this host's GPUs, for the tasks drawn
    from the iterator ``tasks``, on GPU ``device``: one scorer and one stream of batches for all of them
    (:meth:`nwalign.backends.aligner.Aligner.score_spans`), so that the GPU does not idle between blocks (a block
    per scorer ran at 1.34-1.40 s against 1.19 s at the one-process rate on two H100s), and each block
    scored but not formatted (:class:`nwalign.output.scorerows.Scored`: formatted as the command writes it; in
    the threads that score, with Dask starting in the same interpreter, formatting made blocks 1.5-1.6 s
    on two H200s). Yields (Scored, stats as :func:`block_of` gives them) per task, in order, drawing the
    next task once a task's last batch is queued (a pipeline, as :meth:`Spread.map` takes)."""
    tasks = iter(tasks)
    first = next(tasks, None)  # the job's scoring and kernel options (the same in every task)
    if first is None:
        return
    spans = (task.span for task in itertools.chain([first], tasks))
    aligner = Aligner(first.scoring, first.backend, device, first.threads, announce=False)
    for span, batches, part in aligner.score_spans([e.codes for e in a], None if b is None else [e.codes for e in b],
                                                   spans, first.kernel, first.slice_k, first.block):
        stats = {"pairs": part["pairs"], "filtered": 0, "below": 0, "kernel": part["kernel"], "cells": part["cells"],
                 "gpu_seconds": part["gpu_seconds"], "ran": (part["began"], part["ended"], os.getpid(), device)}
        yield Scored(span[0], span[1], batches), stats


def gpu_wave(task: PairsTask) -> int:
    """On a GPU worker: how many pairs the all-pairs score kernel for the whole job runs at once
    (:meth:`nwalign.backends.cuda.allpairs.AllPairsScorer.wave`; 1 for the one-block-per-pair kernels)."""
    a, b = pair_sets(task.sets, task.scoring)
    return wave_of(a, b, task, 0)


def wave_of(a, b, task: PairsTask, device: int) -> int:
    """:func:`gpu_wave` on the encoded sets ``a``, ``b`` and GPU ``device``."""
    codes = [e.codes for e in a] + ([] if b is None else [e.codes for e in b])
    total = len(a) * (len(a) - 1) // 2 if b is None else len(a) * len(b)
    return backends.named(task.backend).pair_wave(codes, task.scoring, task.kernel, task.slice_k, task.block, device,
                                                  total)
