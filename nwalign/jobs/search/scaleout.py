"""A search spread over Dask workers (a local CPU cluster, a running cluster, or one process per GPU of
``--devices`` holding a shard each where the database does not fit on one GPU): the rounds of queries,
the GPUs counted while the input is read, and :class:`ScaleOut`, which gathers the workers' shards
(:mod:`nwalign.jobs.search.shards`), aligning what they did not."""

from __future__ import annotations

import logging
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from nwalign import backends
from nwalign.parallel import cluster as scaleout
from nwalign.jobs.search import shards as shard_tasks
from nwalign.background import in_background
from nwalign.io.database import Database, write_database
from nwalign.errors import NwalignError
from nwalign.results.hits import hits_from_paths, reported_hits
from nwalign.parallel.cluster import Owned
from nwalign.jobs.search.pipeline import collect_hits
from nwalign.io.sequences import residues_bound

log = logging.getLogger("nwalign")


def rounds(queries: int, workers: int, shards: int, batch: int = 64, smallest: int = 8) -> list[tuple[int, int]]:
    """(start, stop) of each round of a search over Dask workers: ``batch`` queries, and where a round's
    tasks are fewer than the workers (``shards`` < ``workers``: rounds run side by side on different
    workers) at most a third of a worker's share of the queries left, down to ``smallest``, so that the
    last rounds finish close together."""
    out, lo = [], 0
    while lo < queries:
        size = batch
        if shards < workers:
            size = min(batch, max(smallest, -(-(queries - lo) // (3 * workers))))
        out.append((lo, min(queries, lo + size)))
        lo += size
    return out


def estimated_cells(queries, database) -> int | None:
    """An upper estimate of a search's DP cells before its input is read (query residues x database
    residues, from the files' sizes: :func:`nwalign.io.sequences.residues_bound`), or None where either is
    unknown (standard input, records given in Python)."""
    if not isinstance(queries, os.PathLike):
        return None
    found = residues_bound(os.fspath(queries))
    if isinstance(database, Database):
        others = database.total_length
    elif isinstance(database, (str, os.PathLike)):
        others = residues_bound(os.fspath(database))
    else:
        others = None
    return None if found is None or others is None else found * others


def count_devices(devices, backend: str, device: int, cells: int | None = None):
    """A Future of the GPUs a search spreads over (:func:`nwalign.parallel.cluster.resolve_devices`, which asks
    the CUDA driver how many there are; ``devices`` auto keeps a search of fewer than
    :data:`nwalign.parallel.cluster.AUTO_MIN_SEARCH_CELLS` estimated ``cells`` on one GPU), counted in a
    background thread from the search's first step, while the input is read. An error is raised where
    it is asked for."""
    return in_background(lambda: scaleout.resolve_devices(devices, backend, device, cells,
                                                          scaleout.AUTO_MIN_SEARCH_CELLS))


class ScaleOut(Owned):
    """A search's scan spread over Dask workers (see :mod:`nwalign.jobs.search.shards`); the hits are aligned here.

    """

    BATCH = 64  # queries per round of shard tasks: output streams, memory stays bounded
    IN_FLIGHT = 3  # rounds submitted: the workers scan the next ones while this one is aligned and written
    MIN_BATCH = 8  # the smallest round: the last rounds shrink so that no worker waits long for another

    def __init__(self, database, db: Database, placement, shards: int | None = None, engine=None):
        workers, scheduler, client, shared_dir = \
            placement.workers, placement.scheduler, placement.client, placement.shared_dir
        path = os.fspath(database) if isinstance(database, (str, os.PathLike)) else None
        self.tmp = None
        self.client = self.cluster = None
        self._shards = shards
        self.done, self.total = 0, None  # tasks gathered, of how many (once the rounds are planned)
        try:
            if path is None or db.codes is None:  # FASTA or records: one .nwdb the workers map
                if scheduler is not None and shared_dir is None:
                    raise NwalignError("a running cluster's workers need a .nwdb path they can all read "
                                       "(nwalign makedb, or shared_dir)", cli="--scheduler needs a .nwdb database "
                                       "that every worker can read (nwalign makedb), or --shared-dir")
                self.tmp = scaleout.scratch_for_workers(shared_dir)
                path = os.path.join(self.tmp, "database.nwdb")
                write_database(db, path)
            self.path = os.path.abspath(path)
            self.engine = backends.named(engine or "cpu")
            self.client, self.cluster = (client, None) if client is not None else \
                scaleout.client_for(workers, scheduler)
            self.own_client = client is None
            # a running cluster: one GPU per worker, no two on the same GPU
            gpus = scaleout.workers_gpus(self.client, self.engine)
            self._settle(None, gpus)
        except BaseException:
            self.close()
            raise

    def _settle(self, fits, gpus: dict) -> None:
        """The workers counted and the shards chosen: query batches against the whole database where it fits
        on every worker (the work balances itself, and each scan runs the whole database: fuller launches),
        else one shard per worker. ``fits``: the GPU workers' answers to
        :func:`nwalign.jobs.search.shards.preload_database` (None: ask them now)."""
        if self.engine.on_gpu and fits is None and self._shards in (None, 1):
            fits = all(self.client.run(shard_tasks.preload_database, self.path).values())
        found = self.client.scheduler_info()["workers"]
        workers = self.workers = len(found)
        self.slots = max(workers, sum(w.get("nthreads", 1) for w in found.values()))  # tasks at a time
        log.debug("search: %d Dask workers ready", workers)
        self.shards = self._shards or (1 if fits is not False else max(1, workers))
        log.info("search: %s on %d Dask workers (%s engine)", "query batches against the whole database"
                 if self.shards == 1 else f"{self.shards} shards", workers, self.engine.name)
        for name, (_, gpu) in sorted(gpus.items()):
            log.info("search: worker %s: %s", name, gpu)

    def run(self, job, progress):
        db = job.database
        try:
            todo = job._encoded
            batches = [todo[lo:hi] for lo, hi in rounds(len(todo), self.slots, self.shards, self.BATCH,
                                                        self.MIN_BATCH)]
            self.total = len(batches) * self.shards  # a task per round and shard
            # Enough tasks submitted to keep every worker thread busy and one more waiting on each worker
            # (a round: `shards` tasks).
            in_flight = max(self.IN_FLIGHT, -(-(self.slots + self.workers + 1) // self.shards))
            with ThreadPoolExecutor(max_workers=max(1, job.threads)) as pool:
                flying: deque = deque()
                first = True
                for k in range(len(batches)):
                    while len(flying) < in_flight and k + len(flying) < len(batches):
                        batch = batches[k + len(flying)]
                        flying.append(shard_tasks.submit_shards(self.client, self.path, [q.codes for q in batch],
                                                                job.scoring, job.top, self.shards,
                                                                engine=self.engine, align=job.align))
                    batch = batches[k]
                    found = shard_tasks.gather_shards(self.client, flying.popleft(), len(batch), job.top)
                    self.done += self.shards
                    log.debug("search: round %d of %d gathered (%d queries)", k + 1, len(batches), len(batch))
                    if first:
                        db.verify()
                        first = False
                    collected = []
                    for q, (idx, sc, *aligned) in zip(batch, found):
                        if progress:
                            progress(len(q.codes) * db.total_length)
                        scores = dict(zip(idx.tolist(), sc.tolist()))
                        reported = reported_hits(q, scores, db, job.stats, job.top, job.max_evalue, job.min_score,
                                             idx.tolist())
                        if aligned:  # aligned by the worker (GPU workers, one shard)
                            paths = dict(zip(idx.tolist(), aligned[0]))
                            hits = hits_from_paths(q, db, job._codes, reported, scores,
                                                   [paths[k] for k, _, _ in reported], job.scoring)
                            collected.append((q, lambda hits=hits: hits))
                            continue
                        collected.append((q, collect_hits(q, reported, scores, db, job._codes, job.scoring, job.align,
                                                      job._aligner, pool)))
                    for q, collect in collected:
                        yield q.record, collect()
                    log.debug("search: round %d written", k + 1)
        finally:
            self.close()
