"""A job's tasks over the GPUs of this host from one process: a thread per GPU takes the next task of a
shared iterator (:class:`DeviceThreads`), the results come back in task order, and the tasks of a GPU
that fails are run again on the others.

One process drives every GPU: each thread launches on its own device and streams, the kernels and
copies run without the GIL, and the host-side work of a task (top hits, formatting) is NumPy or Numba
that releases it. Against one worker process per GPU this saves the processes' start (1.5-2.1 s on the
H100 and H200 machines: interpreter, Dask, CuPy, a context, the database uploaded again) and the
transfer of every result between processes (docs/scaling.md has the measurements).
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable, Iterator

from nwalign.errors import NwalignError

log = logging.getLogger("nwalign")

__all__ = ["DeviceThreads"]


class DeviceThreads:
    """Tasks of the shared iterator ``todo`` run by a thread per item of ``places`` (a GPU number, or what
    a thread needs to run there): ``run(tasks, place)`` gives the results of the tasks it draws from the
    iterator ``tasks``, in that order (a pipeline may draw a few ahead). :meth:`results` yields every
    result in task order as they finish.

    Arguments:
        todo: the tasks (an iterator).
        run: the pipeline run on each place.
        places: one thread each.
        label, unit: the command and what a task is, for messages.
        window: tasks taken ahead of the result :meth:`results` yields next, at most (besides those the
            pipeline that runs that very task draws before it gives it): bounded memory when the results
            are large and the consumer is slower than the GPUs.

    Faults: a task that raises :class:`~nwalign.errors.NwalignError` (bad input, the same on every GPU)
    ends the job there. Any other error (a GPU lost, out of memory, a driver error) takes that place out:
    its unfinished tasks are run again by the other places, so nothing is lost and the results are the
    same; the error is raised only when no place is left.

    Attributes: ``taken`` (tasks drawn from ``todo``), ``running`` (threads not yet finished), ``lost``
    (place indices taken out).
    """

    def __init__(self, todo, run: Callable[[Iterator, object], Iterator], places, label: str,
                 unit: str = "tasks", window: int | None = None):
        self.todo, self.run, self.places, self.label, self.unit = todo, run, list(places), label, unit
        self.window = window
        self.ready = threading.Condition()  # guards todo and every attribute below
        self.done: dict = {}
        self.failed: list = []
        self.lost: list = []
        self.redo: list = []  # (number, task) of tasks to run again, a heap: lowest number first
        self.pending: dict = {}  # number -> task, taken and not yet done
        self.owner: dict = {}  # number -> the place index running it
        self.taken = self.yielded = 0
        self.exhausted = False
        self.running = 0
        self.drawing: set = set()  # place indices whose pipeline still draws tasks
        self.threads: dict = {}
        for k in range(len(self.places)):
            self._spawn(k)

    def _spawn(self, k: int, after: threading.Thread | None = None) -> None:
        """A thread for place ``k`` (after the place's previous thread, ``after``, has ended)."""
        self.running += 1
        self.drawing.add(k)
        thread = threading.Thread(target=self._work, args=(k, after), daemon=True, name=f"nwalign-gpu-{k}")
        self.threads[k] = thread
        thread.start()

    def _may_take(self, k: int) -> bool:
        """Whether place ``k`` may draw a new task from ``todo`` now (the window); called with the lock
        held."""
        if self.window is not None and self.taken - self.yielded >= self.window:
            return self.owner.get(self.yielded) == k  # its pipeline may need more before it gives that one
        return True

    def _take(self, k: int, mine: list):
        """The tasks place ``k`` runs: ones to run again first, then the next of ``todo``."""
        while True:
            with self.ready:
                while True:
                    if self.failed or k in self.lost:
                        self.drawing.discard(k)
                        return
                    if self.redo:
                        number, task = heapq.heappop(self.redo)
                        break
                    if self.exhausted:
                        self.drawing.discard(k)
                        return
                    if self._may_take(k):
                        task = next(self.todo, None)
                        if task is None:
                            self.exhausted = True
                            self.ready.notify_all()
                            continue
                        number = self.taken
                        self.taken += 1
                        break
                    self.ready.wait()
                self.pending[number], self.owner[number] = task, k
                mine.append(number)
            yield task

    def _work(self, k: int, after: threading.Thread | None):
        if after is not None:
            after.join()
        mine: list = []  # the numbers of the tasks this thread drew, in order
        try:
            for result in self.run(self._take(k, mine), self.places[k]):
                with self.ready:
                    number = mine.pop(0)
                    self.done[number] = result
                    self.pending.pop(number, None)
                    self.owner.pop(number, None)
                    self.ready.notify_all()
        except BaseException as exc:
            with self.ready:
                self._fail(k, exc, mine)
        finally:
            with self.ready:
                self.running -= 1
                self.drawing.discard(k)
                self.ready.notify_all()

    def _fail(self, k: int, exc: BaseException, mine: list) -> None:
        """Place ``k`` raised ``exc`` (lock held): its unfinished tasks go to the other places, or the job
        ends with the error where none is left or the error is the input's."""
        healthy = [j for j in range(len(self.places)) if j != k and j not in self.lost]
        if isinstance(exc, (NwalignError, KeyboardInterrupt, SystemExit)) or not healthy:
            self.failed.append(exc)
            return
        self.lost.append(k)
        for number in mine:
            if number in self.pending:
                heapq.heappush(self.redo, (number, self.pending[number]))
        log.warning("%s: %s failed (%s: %s); its %d unfinished %s run on the other %d", self.label,
                    _name(self.places[k]), type(exc).__name__, exc, len(mine), self.unit, len(healthy))
        for j in healthy:  # a place whose pipeline has stopped drawing gets a new thread for these
            if j not in self.drawing:
                self._spawn(j, after=self.threads.get(j))

    def results(self):
        """The results of the tasks taken here, in task order, as they finish.

        Raises:
            the error of a task (see the class's Faults).
        """
        k = 0
        while True:
            with self.ready:
                while k not in self.done and not self.failed and (self.running or self.redo):
                    self.ready.wait()
                if self.failed:
                    raise self.failed[0]
                if k not in self.done:
                    if k < self.taken:  # taken, never finished, and no thread left to finish it
                        raise RuntimeError(f"{self.label}: task {k} was lost")
                    break
                result = self.done.pop(k)
                self.yielded = k + 1
                self.ready.notify_all()  # the window moves on
            k += 1
            yield result
        for t in list(self.threads.values()):
            t.join()


def _name(place) -> str:
    """A place for messages: ``GPU 1``, or the device of a searcher."""
    device = getattr(place[0] if isinstance(place, tuple) else place, "device", place)
    return f"GPU {device}" if isinstance(device, int) else str(device)
