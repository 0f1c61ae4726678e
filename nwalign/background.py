"""Work started in a background thread, its result or error collected later (a Future)."""

from __future__ import annotations

import threading
from concurrent.futures import Future


def in_background(fn, done: Future | None = None) -> Future:
    """Run ``fn()`` in a daemon thread now; returns a Future with its result or exception (``done``: a
    Future made beforehand, e.g. already handed to whoever waits for it). For work that mostly releases
    the GIL (checksums, copies to the GPU) beside the caller's own."""
    done = Future() if done is None else done

    def run():
        try:
            done.set_result(fn())
        except BaseException as exc:  # handed to whoever waits
            done.set_exception(exc)
    threading.Thread(target=run, daemon=True).start()
    return done


def ahead(items, depth: int = 1):
    """Iterate over ``items`` with up to ``depth`` items made ahead in a daemon thread: the caller works on
    one while the next is produced (a GPU pass and the host work on the previous one's results). Items come
    in order; an exception in the producer is raised here, where its item would have come; closing this
    generator early stops the producer at its next item."""
    import queue

    box: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def produce():
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        box.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            box.put((end, None))
        except BaseException as exc:  # handed to the consumer
            box.put((end, exc))

    threading.Thread(target=produce, daemon=True).start()
    try:
        while True:
            item, exc = box.get()
            if exc is not None:
                raise exc
            if item is end:
                return
            yield item
    finally:
        stop.set()
