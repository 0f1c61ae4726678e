"""A database search spread over worker processes through Dask (``distributed``): the database cut into
shards balanced by residues, one task per shard scoring every query against it and keeping the shard's
best hits, merged exactly on the client, which alone aligns, formats and writes.

Shards: the sequences in a stable longest-first order, dealt round-robin (shard s takes positions s,
s + K, s + 2K, ...), so each holds about 1/K of the residues. A task is a pure function of a small spec
(the database's path, the shard's number, the queries' codes, the scoring's parameters, ``top``): no
database travels with it, workers memory-map the ``.nwdb`` themselves and keep their shard between tasks.
It returns, per query, the shard's best ``top`` hits ordered by score descending, then database index;
the client's merge keeps the best ``top`` of all shards in the same order, so the hits, their E-values
(from the whole database's length) and the output are those of a one-process search, whatever the
number of shards or workers, and after a worker dies (Dask runs its task again elsewhere).

Dask is optional (``pip install nwalign[dask]``) and imported only here.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np

from .errors import NwalignError, WorkerLost

log = logging.getLogger("nwalign")

__all__ = ["WorkerLost", "best_of_shard", "check_versions", "client_for", "merge", "shards", "sharded_candidates"]


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


_SHARDS: dict = {}  # a worker's shards, kept between tasks


def _shard_database(path: str, shard: int, count: int, scoring):
    """The shard's database indices (ascending) and its sequences' codes and offsets, kept by the worker
    process between tasks (keyed by the file, its modification time and the scoring alphabet)."""
    key = (path, os.path.getmtime(path), shard, count, scoring.alphabet)
    if key not in _SHARDS:
        from .database import load_database

        db = load_database(path)
        codes = db.encode(scoring)
        index = shards(np.diff(db.offsets), count)[shard]
        lengths = np.diff(db.offsets)[index]
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        sub = np.concatenate([codes[db.offsets[k]:db.offsets[k + 1]] for k in index.tolist()]) if index.size \
            else np.zeros(0, np.uint8)
        if len(_SHARDS) >= 4:
            _SHARDS.clear()
        _SHARDS[key] = (index, sub, offsets)
    return _SHARDS[key]


def best_of_shard(task: ShardTask) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query: (database indices, scores) of the shard's best ``task.top`` hits, score descending then
    index ascending (int64 arrays). Runs on a worker."""
    from .dbsearch import cpu_scan, top_hits

    sc = task.scoring
    index, sub, offsets = _shard_database(task.database, task.shard, task.shards, sc)
    out = []
    for q in task.queries:
        if index.size == 0:
            out.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        scores = cpu_scan(np.frombuffer(q, dtype=np.uint8), sub, offsets, sc, task.threads)
        best = top_hits(scores, task.top, None)  # ties by shard position = by database index
        out.append((index[best], scores[best]))
    return out


def merge(parts: list[tuple[np.ndarray, np.ndarray]], top: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``top`` of the shards' candidates for one query: (indices, scores), score descending then
    index ascending."""
    idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    sc = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    order = np.lexsort((idx, -sc))[:top]
    return idx[order], sc[order]


def client_for(workers: int = 0, scheduler: str | None = None):
    """A Dask client: a local cluster of ``workers`` CPU-engine processes (one thread each), or the running
    cluster at ``scheduler`` (an address such as ``tcp://host:8786``, or a scheduler file ``*.json``).
    Returns (client, cluster or None: what to close).

    Raises:
        NwalignError: Dask's ``distributed`` is not installed.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise NwalignError("workers and scheduler need Dask: pip install 'nwalign[dask]'",
                           cli="--workers/--scheduler need Dask: pip install 'nwalign[dask]'") from None
    if scheduler:
        import dask

        wait = dask.config.get("distributed.comm.timeouts.connect")  # Dask's setting (30 s by default)
        try:
            client = Client(scheduler_file=scheduler, timeout=wait) if scheduler.endswith(".json") else \
                Client(scheduler, timeout=wait)
        except (OSError, TimeoutError, ValueError) as exc:
            raise NwalignError(f"scheduler {scheduler}: cannot connect ({exc})",
                               cli=f"--scheduler {scheduler}: cannot connect ({exc})") from None
        try:
            check_versions(client)
        except NwalignError:
            client.close()
            raise
        return client, None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    return Client(cluster), cluster


def _worker_version() -> str:
    from . import __version__

    return __version__


def check_versions(client) -> None:
    """Refuse a cluster whose workers run another nwalign version (or none): their shards' results would
    not be this version's.

    Raises:
        NwalignError: naming the first worker that differs.
    """
    from . import __version__

    try:
        found = client.run(_worker_version)
    except Exception as exc:  # a worker without nwalign cannot even unpickle the function
        raise NwalignError(f"a worker of the cluster cannot run nwalign ({type(exc).__name__}: {exc})") from None
    for address, version in sorted(found.items()):
        if version != __version__:
            raise NwalignError(f"worker {address} runs nwalign {version}, this is {__version__}: "
                               "install the same version on every worker")


def sharded_candidates(client, database: str, queries: list[np.ndarray], scoring, top: int,
                       count: int, threads: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query, the merged best ``top`` (indices, scores) over ``count`` shards of ``database`` (a
    .nwdb path), one task per shard on ``client``'s workers.

    Raises:
        WorkerLost: a task kept killing workers.
    """
    from distributed import KilledWorker

    codes = tuple(np.asarray(q, dtype=np.uint8).tobytes() for q in queries)
    tasks = [ShardTask(database, s, count, codes, scoring, top, threads) for s in range(count)]
    futures = client.map(best_of_shard, tasks, pure=False)
    try:
        results = client.gather(futures)
    except KilledWorker as exc:
        raise WorkerLost(f"a shard's task killed every worker that ran it ({exc}); no output written") from None
    return [merge([r[k] for r in results], top) for k in range(len(queries))]
