"""A search spread over Dask workers: the tasks and their exact merge.

The database is cut into shards balanced by residues (:func:`shards`: the sequences in a stable
longest-first order, dealt round-robin, so shard s takes positions s, s + K, s + 2K, ... and holds about
1/K of the residues), or kept whole where it fits in every worker's memory (one shard: query batches
against the whole database). A task (:class:`ShardTask`) is a pure function of a small spec (the
database's path, the shard's number, the queries' codes, the scoring's parameters, ``top``): no database
travels with it, workers memory-map the ``.nwdb`` themselves and keep their shard (on a GPU worker,
uploaded and ready to scan) between tasks. It returns, per query, the shard's best ``top`` hits ordered
by score descending, then database index; the client's :func:`merge` keeps the best ``top`` of all
shards in the same order, so the hits, their E-values (from the whole database's length) and the output
are those of a one-process search, whatever the number of shards or workers, and after a worker dies
(Dask runs its task again elsewhere). The search's side: :class:`nwalign.jobs.search.job.Search`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np

from nwalign.backends.cpu.search import cpu_scan
from nwalign.backends.cpu.streamed import ChunkedScan, streams as cpu_streams
from nwalign.backends.cuda.batch import BatchAligner
from nwalign.backends.cuda.device import require
from nwalign.backends.cuda.devicedb import DeviceDatabase, DoesNotFit
from nwalign.backends.cuda.search import ScanSearcher
from nwalign.backends.cuda import streamed as gpu_streamed
from nwalign.io.database import MAGIC2, load_database
from nwalign.errors import NwalignError, workers_lost
from nwalign.results.hits import merge, top_hits
from nwalign.io.mapped import copy_of
from nwalign.parallel.cluster import thread_cached, worker_cached, worker_uncache

log = logging.getLogger("nwalign")

__all__ = ["ShardTask", "best_of_shard", "gather_shards", "merge", "preload_database", "shards", "submit_shards"]


def shards(lengths: np.ndarray, count: int) -> list[np.ndarray]:
    """Database indices of each of ``count`` shards (int64 arrays, ascending): a stable longest-first
    order of ``lengths`` dealt round-robin, so that the shards' residues are nearly equal."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [np.sort(order[s::count]) for s in range(count)]


@dataclass(frozen=True)
class ShardTask:
    """What a worker needs for one shard: small and picklable (no sequences of the database)."""

    database: str                 # a .nwdb path every worker can read
    shard: int
    shards: int
    queries: tuple[bytes, ...]    # the queries' residue codes (uint8 bytes)
    scoring: object               # the Scoring (a small matrix and its parameters)
    top: int
    threads: int = 1
    backend: str = "cpu"          # "cuda": the worker's one visible GPU scans (the scan kernel)
    align: bool = False           # (cuda) the worker aligns its best hits too, on its GPU (one shard only)


def _worker_database(path: str):
    """The .nwdb at ``path``, memory-mapped once per worker process (kept with its shards). Its residues'
    checksum is left to the client, which verifies the same file before it reports any hit."""
    key = ("db", path, os.path.getmtime(path))
    return worker_cached(key, lambda: load_database(path, check_later=True))


def _load_shard(path: str, shard: int, count: int, scoring):
    """The shard's database indices (ascending) and its sequences' codes and offsets (one shard: the whole
    database as it is mapped, no copy)."""
    db = _worker_database(path)
    codes = db.encode(scoring)
    lengths = np.diff(db.offsets)
    if count == 1:
        return np.arange(lengths.size, dtype=np.int64), codes, np.asarray(db.offsets, dtype=np.int64)
    index = shards(lengths, count)[shard]
    member = np.zeros(lengths.size, dtype=bool)
    member[index] = True
    offsets = np.concatenate(([0], np.cumsum(lengths[index]))).astype(np.int64)
    return index, _members(codes, np.asarray(db.offsets), member, int(offsets[-1])), offsets


def _members(codes, offsets: np.ndarray, member: np.ndarray, total: int, block: int = 1 << 20) -> np.ndarray:
    """The residues (uint8, ``total`` of them) of the sequences where ``member`` is True, in database
    order, read a block of ``block`` sequences at a time from the file (nwalign.io.mapped): no mask over
    every residue of the database (UniRef50: 17 GB) and none of its pages in this process."""
    out = np.empty(total, dtype=np.uint8)
    at = 0
    lengths = np.diff(offsets)
    for a in range(0, member.size, block):
        b = min(a + block, member.size)
        if not member[a:b].any():
            continue
        piece = copy_of(codes, int(offsets[a]), int(offsets[b]))
        kept = piece[np.repeat(member[a:b], lengths[a:b])]
        out[at:at + kept.size] = kept
        at += kept.size
    return out


def _shard_database(path: str, shard: int, count: int, scoring):
    """:func:`_load_shard`, kept by the worker process between tasks (keyed by the file, its modification
    time and the scoring alphabet)."""
    key = (path, os.path.getmtime(path), shard, count, scoring.alphabet)
    return worker_cached(key, lambda: _load_shard(path, shard, count, scoring))


def _upload_key(path: str) -> tuple:
    return ("upload", path, os.path.getmtime(path))


def preload_database(path: str) -> bool:
    """On a GPU worker: the whole ``.nwdb`` at ``path`` (version 2) uploaded to the worker's GPU in the
    scan's order (as a one-process search does while CuPy starts), kept for the first task of a
    one-shard search. Returns False where it does not fit in the GPU's memory (the search then cuts the
    database in one shard per worker), else True (also for a version-1 file: nothing uploaded)."""
    with open(path, "rb") as handle:
        if handle.read(8) != MAGIC2:
            return True
    db = _worker_database(path)
    try:
        worker_cached(_upload_key(path), lambda: DeviceDatabase(db.codes, db.offsets, 0))
    except NwalignError:  # too large for this GPU
        return False
    return True


def _shard_searcher(task: ShardTask):
    """The shard's indices, a :class:`nwalign.backends.cuda.search.ScanSearcher` holding its sequences on the
    worker's GPU, and their codes and offsets on the host, kept between tasks (a worker that takes over a
    lost worker's shard holds both). The sequences are on the GPU once per worker process; each of its
    threads (a GPU worker runs two tasks at a time) scans them with a searcher of its own (streams and
    buffers)."""
    sc = task.scoring
    key = ("gpu", task.database, os.path.getmtime(task.database), task.shard, task.shards, sc.alphabet,
           sc.matrix.tobytes(), sc.gap_open, sc.gap_extend)

    def on_gpu():
        index, sub, offsets = _load_shard(task.database, task.shard, task.shards, sc)
        # The whole database uploaded beforehand (preload_database), in the file's codes: used once.
        uploaded = worker_uncache(_upload_key(task.database))
        if task.shards != 1 or _worker_database(task.database).letters != sc.alphabet:
            uploaded = None
        if uploaded is None and index.size:
            try:
                uploaded = DeviceDatabase(sub, offsets, 0)
            except (DoesNotFit, MemoryError) as exc:  # streamed through the GPU in chunks instead
                log.info("search: shard %d does not fit on this worker's GPU (%s)", task.shard, exc)
        return index, uploaded, sub, offsets

    index, uploaded, sub, offsets = worker_cached(key, on_gpu)

    def make():
        if not index.size:
            return None
        if uploaded is None:  # a shard larger than the GPU's memory
            # half the GPU's free memory: a GPU worker runs two tasks at a time, each with its own scan
            return gpu_streamed.StreamedScan(sub, offsets, sc, 0, gpu_streamed.budget_of(require(0), None)[0] // 2)
        return ScanSearcher(sub, offsets, sc, 0, uploaded=uploaded)

    return index, thread_cached(key, make), sub, offsets


def _worker_aligner(scoring):
    """A :class:`nwalign.backends.cuda.batch.BatchAligner` on the worker's GPU for ``scoring``, kept between tasks
    by each thread of the worker."""
    key = ("aligner", scoring.alphabet, scoring.matrix.tobytes(), scoring.gap_open, scoring.gap_extend,
           scoring.mode)

    def make():
        return BatchAligner(scoring, 0)

    return thread_cached(key, make)


def best_of_shard(task: ShardTask) -> list[tuple]:
    """Per query: (database indices, scores) of the shard's best ``task.top`` hits, score descending then
    index ascending (int64 arrays), and with ``task.align`` (GPU workers, one shard: these are the
    search's best hits) their alignments as a third item (:meth:`nwalign.backends.cuda.batch.BatchResult.result`'s
    tuples, in the same order), aligned on the worker's GPU while it scans the next queries. Runs on a
    worker: the CPU engine, or (``backend`` cuda) the scan kernel on the one GPU the worker sees, two
    queries in flight."""
    sc = task.scoring
    queries = [np.frombuffer(q, dtype=np.uint8) for q in task.queries]
    if task.backend == "cuda":
        index, searcher, sub, offsets = _shard_searcher(task)
        if searcher is None:
            return [(np.zeros(0, np.int64), np.zeros(0, np.int64)) + (([],) if task.align else ())
                    for _ in queries]
        aligner = _worker_aligner(sc) if task.align else None
        if isinstance(searcher, gpu_streamed.StreamedScan):
            return _streamed_shard(searcher, queries, task, index, sub, offsets, aligner)
        flying = [(q, searcher.submit(q)) for q in queries[:searcher.slots]]
        out, aligning, left = [], [], iter(queries[searcher.slots:])
        while flying:
            query, ticket = flying.pop(0)
            scores = searcher.result(ticket)
            q = next(left, None)
            if q is not None:  # the freed slot scans on while this query's best are chosen
                flying.append((q, searcher.submit(q)))
            best = top_hits(scores, task.top, None)
            out.append((index[best], np.asarray(scores[best], dtype=np.int64)))
            if aligner is not None:  # shard positions are database indices (one shard)
                pairs = [(query, sub[offsets[k]:offsets[k + 1]]) for k in best.tolist()]
                aligning.append(aligner.submit(pairs) if pairs else None)
        if aligner is not None:  # the columns copied out of the aligner's reused page-locked buffers
            out = [(i, s, [] if batch is None else [path[:5] + (np.array(path[5]),) for path in batch.result()])
                   for (i, s), batch in zip(out, aligning)]
        return out
    index, sub, offsets = _shard_database(task.database, task.shard, task.shards, sc)
    if index.size and cpu_streams(int(offsets[-1])):  # Opal's copy of a large shard, a chunk at a time
        found = ChunkedScan(sub, offsets, sc, task.threads).best(queries, task.top)
        return [(index[pos], scores) for pos, scores in found]
    out = []
    for q in queries:
        if index.size == 0:
            out.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        scores = cpu_scan(q, sub, offsets, sc, task.threads)
        best = top_hits(scores, task.top, None)  # ties by shard position = by database index
        out.append((index[best], scores[best]))
    return out


def _streamed_shard(scan, queries, task: ShardTask, index, sub, offsets, aligner) -> list[tuple]:
    """:func:`best_of_shard`'s results for a shard streamed through the worker's GPU in chunks (the
    queries over each chunk in turn), aligned afterwards where asked."""
    found = scan.best(queries, task.top)
    out = [(index[pos], np.asarray(scores, dtype=np.int64)) for pos, scores in found]
    if aligner is None:
        return out
    batches = [aligner.submit([(q, sub[offsets[k]:offsets[k + 1]]) for k in pos.tolist()]) if pos.size else None
               for q, (pos, _) in zip(queries, found)]
    return [(i, s, [] if batch is None else [path[:5] + (np.array(path[5]),) for path in batch.result()])
            for (i, s), batch in zip(out, batches)]


def submit_shards(client, database: str, queries: list[np.ndarray], scoring, top: int, count: int,
                  threads: int = 1, backend: str = "cpu", align: bool = False) -> list:
    """Start one task per shard of ``database`` (a .nwdb path) for ``queries``; returns their futures.
    ``align``: GPU workers with one shard align the best hits themselves (see :func:`best_of_shard`).

    Dask places the tasks (no restrictions: a task whose worker died must be free to run anywhere,
    and Dask's loose restrictions left such tasks waiting); a worker keeps every shard it has loaded
    (at most 4), so each worker loads a shard at most once."""
    codes = tuple(np.asarray(q, dtype=np.uint8).tobytes() for q in queries)
    align = align and backend == "cuda" and count == 1
    return [client.submit(best_of_shard, ShardTask(database, s, count, codes, scoring, top, threads, backend, align),
                          pure=False) for s in range(count)]


def gather_shards(client, futures: list, queries: int, top: int) -> list[tuple]:
    """Per query, the merged best ``top`` (indices, scores) of :func:`submit_shards`' tasks (one task: its
    answer as it is, with the alignments where the worker made them).

    Raises:
        WorkerLost: a task kept killing workers.
    """
    from distributed import KilledWorker

    try:
        results = client.gather(futures)
    except KilledWorker as exc:
        raise workers_lost("search", exc) from None
    if len(results) == 1:
        return results[0]
    return [merge([r[k] for r in results], top) for k in range(queries)]
