"""A job's tasks spread over Dask workers, in order: :class:`Spread` (the job's sequence sets written
once as temporary ``.nwdb`` files the workers memory-map and keep between tasks, :func:`pair_sets`; the
workers started or joined; the tasks mapped and their results gathered in order) and :class:`Lead`
(a job's first tasks run in this process on every GPU while the GPU workers start; the search's
scale-out uses it too). What a task does is the job's: :mod:`nwalign.allvsall_tasks` (blocks of the
pair order), :mod:`nwalign.pairjob` (chunks of the pair command's plan). Dask's side:
:mod:`nwalign.scaleout`.
"""

from __future__ import annotations

import logging
import os
import tempfile


from . import scaleout
from .background import in_background
from .database import database_from_records, load_database, write_database
from .engine import encode_all
from .errors import NwalignError, workers_lost
from .scaleout import Owned, check_gpus, worker_cached, worker_gpus

log = logging.getLogger("nwalign")

__all__ = ["Lead", "Spread", "pair_sets", "release_gpu_memory"]


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
    """A job's tasks on Dask workers: its sequence sets written once as temporary .nwdb files the workers
    read (:func:`pair_sets`), the workers started or joined, the tasks run in order by :meth:`map`.

    With ``gpus``, :meth:`map` runs the first tasks in this process on every one of those GPUs (its
    ``local`` function) and then writes the sets and starts the GPU workers in the background
    (:meth:`_start`), joining them for the next tasks: no GPU waits for Dask's start-up, and Dask's
    import does not slow the job's plan or its first launches.

    Arguments:
        label: the command, for messages (``allpairs``, ``pair``).
        sets: encoded record lists (or None), written in this order.
        backend: the workers' engine (``cuda``: each worker's one visible GPU).
        workers, scheduler, client: as :func:`nwalign.scaleout.client_for` takes them (or a ``distributed.Client``).
        gpus: GPUs for one worker process each (a local cluster), or None.
        shared_dir: where the temporary .nwdb files go (workers on other hosts must read them).
        gpu_tasks: tasks each GPU worker of ``gpus`` runs at a time.

    Attributes: ``warm`` (a function each GPU worker runs before it is ready: CuPy and its context, or
    more, e.g. :func:`prepare_pairs_worker`; set before :meth:`map`), ``paths`` (the .nwdb files, None where
    a set is None), ``workers`` (how many), ``client``
    (None until :meth:`map` joins the GPU workers), ``gpus``, ``done`` and ``total`` (the tasks whose
    results :meth:`map` yielded, of how many; None: not given).

    Raises:
        NwalignError: no Dask, a missing ``shared_dir``, a cluster that cannot be joined or runs another
            version, or (backend cuda) workers without a GPU of their own.
    """

    def __init__(self, label: str, sets, backend: str, workers: int = 0, scheduler: str | None = None,
                 client=None, gpus: list[int] | None = None, shared_dir: str | None = None, gpu_tasks: int = 1):
        self.label, self.backend, self.gpus = label, backend, gpus
        self.warm = scaleout.warm_gpu_context  # run on each GPU worker before it is ready (see prepare_pairs_worker)
        self.client = self.cluster = self.tmp = self._started = self._launch = None
        self.led = 0
        self.done, self.total = 0, None  # tasks whose results map yielded, of how many (its caller's count)
        try:
            if shared_dir is not None and not os.path.isdir(shared_dir):
                raise NwalignError(f"shared_dir {shared_dir}: no such directory",
                                   cli=f"--shared-dir {shared_dir}: no such directory")
            self.tmp = tempfile.mkdtemp(prefix="nwalign-", dir=shared_dir)
            self.paths = tuple(None if encoded is None else os.path.join(self.tmp, f"set{k}.nwdb")
                               for k, encoded in enumerate(sets))

            def write():
                for k, (path, encoded) in enumerate(zip(self.paths, sets)):
                    if encoded is not None:
                        write_database(database_from_records([e.record for e in encoded], f"set{k}"), path)

            if gpus:  # written and started in the background once the first tasks run here (map)
                from concurrent.futures import Future

                self.workers = len(gpus)
                self._started = Future()

                def launch():
                    write()
                    return scaleout.client_for(devices=gpus, gpu_tasks=gpu_tasks, warm=self.warm)
                self._launch = launch
                return
            write()
            self.client, self.cluster = (client, None) if client is not None else scaleout.client_for(workers, scheduler)
            self.own_client = client is None
            gpus_seen = worker_gpus(self.client) if backend == "cuda" else {}
            if backend == "cuda":
                check_gpus(gpus_seen)
        except BaseException:
            self.close()
            raise
        self._settle(gpus_seen)

    def _start(self) -> None:
        """Write the sets and start the GPU workers in a background thread (once; ``_started`` gets the
        (client, cluster) or the error). Started after this process's first tasks: Dask's import and
        start-up then compete for the interpreter with the workers' start, not with the first launches."""
        launch, self._launch = self._launch, None
        if launch is not None:  # an error is handed to whoever waits (map then runs every task here)
            in_background(launch, self._started)

    def close(self) -> None:
        if self._launch is not None:  # never started: nothing to wait for
            self._launch = self._started = None
        super().close()

    def _settle(self, gpus_seen: dict) -> None:
        self.workers = max(1, len(self.client.scheduler_info()["workers"]))
        log.info("%s: %d Dask workers (%s engine)", self.label, self.workers, self.backend)
        for name, (_, gpu) in sorted(gpus_seen.items()):
            log.info("%s: worker %s: %s", self.label, name, gpu)

    def join(self) -> None:
        """Wait for the GPU workers started in the background (nothing when there are none)."""
        if self._started is None:
            return
        self._start()
        started, self._started = self._started, None
        self.client, self.cluster = started.result()
        self._settle(worker_gpus(self.client) if log.isEnabledFor(logging.INFO) else {})

    def map(self, function, tasks, local=None, total: int | None = None, lead_limit: int | None = None):
        """``function(task)`` for each task on the workers, results yielded in task order (``total``: how
        many tasks, for :attr:`done`/:attr:`total`, the progress bar's count); as many tasks run as the
        workers have threads (the next one given as soon as any ends), up to twice that many done ahead of
        the one yielded. Where the GPU workers are still
        starting, ``local(tasks, gpu)`` (a pipeline yielding the same results, computed in this process on
        that GPU, for the tasks it draws from the iterator ``tasks``, in order) takes the first tasks
        meanwhile (:class:`Lead`; at most ``lead_limit`` of them); the workers take the next ones as soon as
        they are up.
        Closes the workers at the end: in the background once every result is out
        (:meth:`close_in_background`; :meth:`close` waits for it), at once on an error or when the caller
        stops early.

        Raises:
            WorkerLost: a task kept killing workers.
        """
        try:
            yield from self._map(function, tasks, local, total, lead_limit)
        except BaseException:  # GeneratorExit too: the caller stopped taking results
            self.close()
            raise
        self.close_in_background()

    def _map(self, function, tasks, local, total, lead_limit):
        import threading
        from collections import deque

        self.total = total
        todo, lock = iter(tasks), threading.Lock()
        lead = Lead(self._started, todo, lock, local, self.gpus, self.label, limit=lead_limit) \
            if local is not None and self._started is not None else None
        self._start()  # the workers, once the first tasks run here
        if lead is not None and not lead.wait():  # every task taken here: no need to wait for the workers
            yield from self._counted(lead.results())
            self.led = lead.taken
            return
        self.join()
        from distributed import KilledWorker, wait  # not before the first tasks here: ~0.5 s to import
        # As many tasks running as the workers have threads, and no more: a task waiting on a busy worker
        # is not given to another one that frees first (the last full block of an allpairs job queued
        # behind two others ran alone at the end while the other GPU idled, 0.5-0.7 s on two H200s).
        slots = max(1, sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()))
        order: deque = deque()  # the tasks' futures in task order, done ones waiting to be yielded

        def fill(spare: int = 0):
            while len(order) <= 2 * slots and sum(not f.done() for f in order) < slots + spare:
                with lock:
                    task = next(todo, None)
                if task is None:
                    return
                order.append(self.client.submit(function, task, pure=False))

        if lead is not None:  # the tasks run here come first; the workers are busy meanwhile (one
            fill(self.workers)  # more task each: none is given a new one until these are yielded)
            yield from self._counted(lead.results())
            self.led = lead.taken
            release_gpu_memory(self.gpus)
        while True:
            fill()
            if not order:
                break
            if not order[0].done():  # the next in order still runs: a new task as soon as any ends
                wait([f for f in order if not f.done()], return_when="FIRST_COMPLETED")
                continue
            try:
                result = order.popleft().result()
            except KilledWorker as exc:
                raise workers_lost(self.label, exc) from None
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


def release_gpu_memory(gpus) -> None:
    """Hand the memory this process's tasks cached on ``gpus`` (CuPy's pools) back to the driver, for the
    workers on those GPUs (their batch sizes follow the free memory)."""
    import cupy

    for g in gpus:
        with cupy.cuda.Device(g):
            cupy.get_default_memory_pool().free_all_blocks()


class Lead:
    """The first tasks of a job spread over GPU workers, run in this process while those workers start: a
    thread per item of ``places`` (a GPU number, or what a thread needs to run there) takes the next tasks
    of the shared iterator ``todo`` until the workers are up (``started``, a Future, done without an
    error; workers that failed to start leave every task here) or no task is left. ``run(tasks, place)``
    gives the results of the tasks it draws from the iterator ``tasks``, in that order (a pipeline may
    draw a few ahead). The tasks taken here are a prefix of the task order (``taken`` of them);
    :meth:`results` yields their results in that order. ``lock`` guards ``todo`` (the caller takes the
    next tasks with it once the workers are up). ``limit``: at most that many tasks here while the
    workers start (a thread that reaches it waits for them; all tasks if they fail to start), so that
    a large task begun just before they are up does not share its GPU with theirs for its whole run.
    Used by :meth:`Spread.map` and by the search's scale-out (:class:`nwalign.dbsearch._ScaleOut`)."""

    def __init__(self, started, todo, lock, run, places, label: str, unit: str = "tasks", limit: int | None = None):
        import threading

        self.started, self.todo, self.lock, self.run, self.label = started, todo, lock, run, label
        self.limit = limit
        self.unit = unit  # what a task is, for the log (a search's are queries)
        self.ready = threading.Condition(lock)
        self.done: dict = {}
        self.failed: list = []
        self.taken = 0
        self.exhausted = False
        self.running = len(places)
        started.add_done_callback(lambda _: self._notify())
        self.threads = [threading.Thread(target=self._work, args=(p,), daemon=True) for p in places]
        for t in self.threads:
            t.start()

    def _up(self) -> bool:
        """The workers are up (a start that failed leaves every task to this process)."""
        return self.started.done() and self.started.exception() is None

    def _notify(self):
        with self.ready:
            self.ready.notify_all()

    def _work(self, place):
        from collections import deque

        mine: deque = deque()  # the numbers of the tasks this thread drew, in order

        def take():
            while True:
                with self.ready:
                    while self.limit is not None and self.taken >= self.limit and not self.started.done() \
                            and not self.failed:
                        self.ready.wait()  # the workers' start ends it: up, or failed (then no limit)
                    if self._up() or self.failed or self.exhausted:
                        return
                    task = next(self.todo, None)
                    if task is None:
                        self.exhausted = True
                        return
                    mine.append(self.taken)
                    self.taken += 1
                yield task

        try:
            for result in self.run(take(), place):
                with self.ready:
                    self.done[mine.popleft()] = result
                    self.ready.notify_all()
        except BaseException as exc:  # raised where the results are taken
            with self.ready:
                self.failed.append(exc)
        finally:
            with self.ready:
                self.running -= 1
                self.ready.notify_all()

    def wait(self) -> bool:
        """Wait until the workers are up (True: tasks are left for them) or every task was taken here
        (False)."""
        with self.ready:
            while not self._up() and not self.exhausted and self.running and not self.failed:
                self.ready.wait()
            if self.failed:
                raise self.failed[0]
            return not self.exhausted

    def results(self):
        """The results of the tasks taken here, in task order, as they finish."""
        k = 0
        while True:
            with self.ready:
                while k not in self.done and (self.running or k < self.taken) and not self.failed:
                    self.ready.wait()
                if self.failed:
                    raise self.failed[0]
                if k not in self.done:
                    break
                result = self.done.pop(k)
            k += 1
            yield result
        for t in self.threads:
            t.join()
        if self.started.done() and self.started.exception() is not None:
            log.warning("%s: the GPU workers did not start (%s); all %s ran in this process", self.label,
                        self.started.exception(), self.unit)
        log.info("%s: %d %s run here on %d GPUs while the workers started", self.label, self.taken, self.unit,
                 len(self.threads))
