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

from nwalign import backends
from nwalign.io.database import MAGIC2, load_database
from nwalign.errors import NwalignError, cluster_lost, workers_lost
from nwalign.records.candidates import merge, top_hits
from nwalign.io.mapped import copy_of
from nwalign.parallel.cluster import thread_cached, worker_cached, worker_uncache
from nwalign.parallel.running import lost_connection

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
    backend: str = "cpu"          # the worker's engine by name; "cuda": its one visible GPU scans
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


def _upload_key(path: str) -> tuple:
    return ("upload", path, os.path.getmtime(path))


def preload_database(path: str, engine: str = "cuda") -> bool:
    """On a GPU worker: the whole ``.nwdb`` at ``path`` (version 2) held by the worker's engine (uploaded to
    its GPU in the scan's order, as a one-process search does while CuPy starts), kept for the first task of
    a one-shard search. Returns False where it does not fit (the search then cuts the database in one shard
    per worker), else True (also for a version-1 file: nothing held)."""
    with open(path, "rb") as handle:
        if handle.read(8) != MAGIC2:
            return True
    db = _worker_database(path)
    try:
        worker_cached(_upload_key(path), lambda: backends.named(engine).preload_database(db.codes, db.offsets))
    except NwalignError:  # too large for this GPU
        return False
    return True


def _held_shard(task: ShardTask, engine):
    """The shard's indices, what the worker's engine holds of it (its sequences on the worker's GPU, where
    they fit), and their codes and offsets on the host, kept by the worker process between tasks (a worker
    that takes over a lost worker's shard holds both)."""
    sc = task.scoring
    key = ("shard", engine.name, task.database, os.path.getmtime(task.database), task.shard, task.shards,
           sc.alphabet, sc.matrix.tobytes(), sc.gap_open, sc.gap_extend)

    def load():
        index, sub, offsets = _load_shard(task.database, task.shard, task.shards, sc)
        # The whole database held beforehand (preload_database), in the file's codes: used once.
        preloaded = worker_uncache(_upload_key(task.database))
        if task.shards != 1 or _worker_database(task.database).letters != sc.alphabet:
            preloaded = None
        return index, engine.hold_shard(sub, offsets, preloaded) if index.size else None, sub, offsets

    return key, worker_cached(key, load)


def _worker_aligner(engine, scoring):
    """The worker's hit aligner for ``scoring`` (its GPU's batch kernel), kept between tasks by each thread
    of the worker."""
    key = ("aligner", engine.name, scoring.alphabet, scoring.matrix.tobytes(), scoring.gap_open,
           scoring.gap_extend, scoring.mode)
    return thread_cached(key, lambda: engine.hit_aligner(scoring, 0))


def best_of_shard(task: ShardTask) -> list[tuple]:
    """Per query: (database indices, scores) of the shard's best ``task.top`` hits, score descending then
    index ascending (int64 arrays), and with ``task.align`` (GPU workers, one shard: these are the
    search's best hits) their alignments as a third item (the hit aligner's paths, in the same order),
    aligned while the worker scans the next queries. Runs on a worker, on the engine ``task.backend``
    names: the CPU engine, or the scan kernel on the one GPU the worker sees, its ``slots`` queries in
    flight."""
    engine = backends.named(task.backend)
    queries = [np.frombuffer(q, dtype=np.uint8) for q in task.queries]
    key, (index, held, sub, offsets) = _held_shard(task, engine)
    if not index.size:
        return [(np.zeros(0, np.int64), np.zeros(0, np.int64)) + (([],) if task.align else ()) for _ in queries]
    scanner = thread_cached(key, lambda: engine.shard_scanner(sub, offsets, task.scoring, task.threads, held))
    aligner = _worker_aligner(engine, task.scoring) if task.align else None
    if scanner.chunked:  # the queries over each chunk in turn, aligned afterwards where asked
        found = scanner.best(queries, task.top)
        out = [(index[pos], np.asarray(scores, dtype=np.int64)) for pos, scores in found]
        aligning = [_align_best(aligner, q, pos, sub, offsets) for q, (pos, _) in zip(queries, found)]
        return out if aligner is None else _with_paths(out, aligning)
    flying = [(q, scanner.submit(q)) for q in queries[:scanner.slots]]
    out, aligning, left = [], [], iter(queries[scanner.slots:])
    while flying:
        query, ticket = flying.pop(0)
        scores = scanner.result(ticket)
        q = next(left, None)
        if q is not None:  # the freed slot scans on while this query's best are chosen
            flying.append((q, scanner.submit(q)))
        best = top_hits(scores, task.top, None)  # ties by shard position = by database index
        out.append((index[best], np.asarray(scores[best], dtype=np.int64)))
        aligning.append(_align_best(aligner, query, best, sub, offsets))  # while the next query scans
    return out if aligner is None else _with_paths(out, aligning)


def _align_best(aligner, query, positions, sub, offsets):
    """The aligner's batch of ``query`` against its best (shard ``positions``: database indices, one
    shard), or None (no aligner, no hit)."""
    if aligner is None or not positions.size:
        return None
    return aligner.submit([(query, sub[offsets[k]:offsets[k + 1]]) for k in positions.tolist()])


def _with_paths(out, batches) -> list[tuple]:
    """``out`` with each query's alignments as a third item, the columns copied out of the aligner's reused
    page-locked buffers."""
    return [(i, s, [] if batch is None else [path[:5] + (np.array(path[5]),) for path in batch.result()])
            for (i, s), batch in zip(out, batches)]


def submit_shards(client, database: str, queries: list[np.ndarray], scoring, top: int, count: int,
                  threads: int = 1, engine=None, align: bool = False) -> list:
    """Start one task per shard of ``database`` (a .nwdb path) for ``queries``; returns their futures.
    ``engine``: the workers' (default the CPU engine); ``align``: GPU workers with one shard align the best
    hits themselves (see :func:`best_of_shard`).

    Dask places the tasks (no restrictions: a task whose worker died must be free to run anywhere,
    and Dask's loose restrictions left such tasks waiting); a worker keeps every shard it has loaded
    (at most 4), so each worker loads a shard at most once."""
    codes = tuple(np.asarray(q, dtype=np.uint8).tobytes() for q in queries)
    engine = backends.named(engine or "cpu")
    align = align and engine.on_gpu and count == 1 and scoring.mode == "local"  # the batch kernels' modes
    return [client.submit(best_of_shard, ShardTask(database, s, count, codes, scoring, top, threads, engine.name,
                                                   align), pure=False) for s in range(count)]


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
    except lost_connection():
        raise cluster_lost("search") from None
    if len(results) == 1:
        return results[0]
    return [merge([r[k] for r in results], top) for k in range(queries)]
