"""A job's tasks spread over this host's GPUs (a thread each) or Dask workers, in order: :class:`Spread`
(for workers, the job's sequence sets written once as temporary ``.nwdb`` files they memory-map and
keep between tasks, :func:`pair_sets`; the workers started or joined; the tasks mapped and their
results gathered in order). What a task does is the job's: :mod:`nwalign.jobs.allpairs.tasks` (blocks of the
pair order), :mod:`nwalign.jobs.pair` (chunks of the pair command's plan). Dask's side:
:mod:`nwalign.parallel.cluster`.
"""

from __future__ import annotations

import logging
import os

from nwalign import backends
from nwalign.parallel import cluster as scaleout
from nwalign.parallel.running import lost_connection
from nwalign.io.database import database_from_records, load_database, write_database
from nwalign.backends.engine import encode_all
from nwalign.errors import cluster_lost, workers_lost
from nwalign.parallel.cluster import Owned, worker_cached

log = logging.getLogger("nwalign")

__all__ = ["Spread", "pair_sets"]


def pair_sets(paths: tuple, scoring):
    """The encoded records of the .nwdb files, kept by the worker between tasks."""
    key = ("sets",) + tuple((p, os.path.getmtime(p)) for p in paths if p) + (scoring.alphabet,)

    def make():
        out = []
        for path in paths:
            if path is None:
                out.append(None)
                continue
            db = load_database(path)
            out.append(encode_all([db.record(k) for k in range(db.count)], scoring, path))
        return out

    return worker_cached(key, make)


class Spread(Owned):
    """A job's tasks over this host's GPUs or Dask workers, results in task order (:meth:`map`).

    With ``gpus`` (two or more GPUs of this host), every task runs in this process, a thread per GPU
    (:class:`nwalign.parallel.devicethreads.DeviceThreads`: the ``local`` function of :meth:`map`); nothing is
    written and no process is started. Otherwise the job's sequence sets are written once as temporary
    .nwdb files the workers read (:func:`pair_sets`), the workers started or joined, and each task runs
    on a worker (``function`` of :meth:`map`).

    Arguments:
        label: the command, for messages (``allpairs``, ``pair``).
        sets: encoded record lists (or None), written in this order.
        backend: the workers' engine, or its name (``cuda``: each worker's one visible GPU).
        workers, scheduler, client: as :func:`nwalign.parallel.cluster.client_for` takes them (or a ``distributed.Client``).
        gpus: this host's GPUs, a thread each, or None.
        shared_dir: where the temporary .nwdb files go (workers on other hosts must read them).

    Attributes: ``paths`` (the .nwdb files, None where a set is None or with ``gpus``), ``workers`` (how
    many workers or GPUs), ``client`` (None with ``gpus``), ``gpus``, ``done`` and ``total`` (the tasks
    whose results :meth:`map` yielded, of how many; None: not given).

    Raises:
        NwalignError: no Dask, a missing ``shared_dir``, a cluster that cannot be joined or runs another
            version, or (backend cuda) workers without a GPU of their own.
    """

    def __init__(self, label: str, sets, backend: str, workers: int = 0, scheduler: str | None = None,
                 client=None, gpus: list[int] | None = None, shared_dir: str | None = None):
        self.engine = backends.named(backend)
        self.label, self.backend, self.gpus = label, self.engine.name, gpus
        self.client = self.cluster = self.tmp = None
        self.done, self.total = 0, None  # tasks whose results map yielded, of how many (its caller's count)
        if gpus:
            self.workers, self.paths = len(gpus), tuple(None for _ in sets)
            log.info("%s: %d GPUs, a thread each in this process", label, len(gpus))
            return
        try:
            self.tmp = scaleout.scratch_for_workers(shared_dir)
            self.paths = tuple(None if encoded is None else os.path.join(self.tmp, f"set{k}.nwdb")
                               for k, encoded in enumerate(sets))
            for k, (path, encoded) in enumerate(zip(self.paths, sets)):
                if encoded is not None:
                    write_database(database_from_records([e.record for e in encoded], f"set{k}"), path)
            self.client, self.cluster = (client, None) if client is not None else scaleout.client_for(workers, scheduler)
            self.own_client = client is None
            gpus_seen = scaleout.workers_gpus(self.client, self.engine)
        except BaseException:
            self.close()
            raise
        self.workers = max(1, len(self.client.scheduler_info()["workers"]))
        log.info("%s: %d Dask workers (%s engine)", self.label, self.workers, self.backend)
        for name, (_, gpu) in sorted(gpus_seen.items()):
            log.info("%s: worker %s: %s", self.label, name, gpu)

    def map(self, function, tasks, local=None, total: int | None = None):
        """The results of the tasks, in task order (``total``: how many tasks, for :attr:`done`/:attr:`total`,
        the progress bar's count). With ``gpus``: ``local(tasks, gpu)`` (a pipeline yielding the results
        of the tasks it draws from the iterator ``tasks``, in order, on that GPU) runs on a thread per
        GPU. Otherwise ``function(task)`` runs on the workers: as many tasks at once as they have threads
        (the next given as soon as one ends), up to twice that many done ahead of the one yielded; the
        workers are closed at the end, in the background once every result is out
        (:meth:`close_in_background`; :meth:`close` waits for it), at once on an error or when the caller
        stops early.

        Raises:
            WorkerLost: a task kept killing workers.
        """
        self.total = total
        if self.gpus:
            from nwalign.parallel.devicethreads import DeviceThreads

            threads = DeviceThreads(iter(tasks), local, self.gpus, self.label,
                                    window=self.WINDOW_PER_GPU * len(self.gpus))
            yield from self._counted(threads.results())
            return
        try:
            yield from self._map(function, tasks)
        except BaseException:  # GeneratorExit too: the caller stopped taking results
            self.close()
            raise
        self.close_in_background()

    WINDOW_PER_GPU = 3  # tasks done or running ahead of the one written, per GPU: bounded memory

    def _map(self, function, tasks):
        from collections import deque

        from distributed import KilledWorker, wait
        # As many tasks running as the workers have threads, and no more: a task waiting on a busy worker
        # is not given to another one that frees first (the last full block of an allpairs job queued
        # behind two others ran alone at the end while the other GPU idled).
        slots = max(1, sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()))
        order: deque = deque()  # the tasks' futures in task order, done ones waiting to be yielded
        todo = iter(tasks)
        while True:
            while len(order) <= 2 * slots and sum(not f.done() for f in order) < slots:
                task = next(todo, None)
                if task is None:
                    break
                order.append(self.client.submit(function, task, pure=False))
            if not order:
                break
            if not order[0].done():  # the next in order still runs: a new task as soon as any ends
                wait([f for f in order if not f.done()], return_when="FIRST_COMPLETED")
                continue
            try:
                result = order.popleft().result()
            except KilledWorker as exc:
                raise workers_lost(self.label, exc) from None
            except lost_connection():
                raise cluster_lost(self.label) from None
            self.done += 1
            yield result

    @property
    def tasks(self) -> tuple[int, int] | None:
        """(tasks done, tasks in all) once :meth:`map` was given their number, else None."""
        return (self.done, self.total) if self.total else None

    def _counted(self, results):
        for result in results:
            self.done += 1
            yield result


