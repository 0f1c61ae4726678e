"""Work started in a background thread, its result or error collected later (a Future)."""

from __future__ import annotations

import threading
from concurrent.futures import Future


def in_background(fn) -> Future:
    """Run ``fn()`` in a daemon thread now; returns a Future with its result or exception. For work that
    mostly releases the GIL (checksums, copies to the GPU) beside the caller's own."""
    done: Future = Future()

    def run():
        try:
            done.set_result(fn())
        except BaseException as exc:  # handed to whoever waits
            done.set_exception(exc)
    threading.Thread(target=run, daemon=True).start()
    return done
