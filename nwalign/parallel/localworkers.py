"""The Dask worker processes this process started (``--workers``, ``--devices``), for a stop by signal.

Ctrl-C or SIGTERM during a spread job used to take seconds: Dask's orderly close of the cluster, with an
asyncio traceback and Dask's warnings on the way, and a ``dask-scratch-space`` directory and sometimes a
worker left behind. :func:`stop_now` instead kills the worker processes at once and removes their scratch
directories; the close that follows is skipped (:data:`stopped`), and the command ends without the
interpreter's teardown (:func:`nwalign.cli.group.entry`). Imports nothing heavy: the signal handlers use it.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
import warnings

_STARTED: dict[str, object] = {}  # scratch directory -> its local cluster (None while it starts)
_MADE: list[str] = []  # every scratch directory made here (removed again as the process exits on a signal)
#: True once :func:`stop_now` has killed the workers: nothing is to be closed in order any more.
stopped = False


def scratch_directory() -> str:
    """A new scratch directory for a local cluster about to start (Dask's ``local_directory``); from now on
    a signal kills whatever the start has spawned."""
    directory = tempfile.mkdtemp(prefix="nwalign-dask-")
    _STARTED[directory] = None
    _MADE.append(directory)
    return directory


def register(cluster, directory: str) -> None:
    """``cluster``, started here, writes into ``directory``."""
    _STARTED[directory] = cluster


@atexit.register
def _close_left_open() -> None:
    """Close what is still registered as the interpreter exits, while Dask's modules are whole: a cluster
    object that lives on into the interpreter's teardown prints ``Exception ignored in: Cluster.__del__
    ... AttributeError`` (its ``__del__`` reads a module global that is gone by then), closed or not."""
    if stopped:
        return
    for directory, cluster in list(_STARTED.items()):
        if cluster is not None and getattr(cluster, "status", None) not in _closed():
            try:
                cluster.close()
            except Exception:  # exiting anyway: nothing is waiting for this cluster's results
                pass
        shutil.rmtree(directory, ignore_errors=True)
    _STARTED.clear()


def release(cluster) -> None:
    """``cluster`` is closed: remove its scratch directory."""
    for directory, started in list(_STARTED.items()):
        if started is cluster:
            del _STARTED[directory]
            shutil.rmtree(directory, ignore_errors=True)


def running() -> bool:
    """Whether a local cluster started here is still open (or starting)."""
    return bool(_STARTED)


def stop_now(last: bool = False) -> None:
    """Kill every worker process this process started (with their children), remove the scratch
    directories and silence Dask's and asyncio's loggers (the event loop notices the dead workers); once
    called, the clusters are not closed in order (:data:`stopped`). Nothing when no cluster was started
    here. Called again, ``last``, just before the process exits: a nanny may have restarted a worker
    meanwhile, and multiprocessing's resource tracker goes too (killed earlier, it is started again with a
    warning; left alive, it warns of the semaphores the skipped teardown did not release)."""
    global stopped
    _silence_dask()  # a running cluster's client too (--scheduler): its cancelled gathers' asyncio tasks
    if not _STARTED and not stopped:
        return
    if not stopped:
        _quiet_new_children()
    stopped = True
    for cluster in _STARTED.values():  # a nanny restarts a worker that dies (in its event loop thread)
        for nanny in getattr(cluster, "workers", {}).values():
            nanny.auto_restart = False
    if last:  # killed here on purpose: a nanny thread still starting a worker would relaunch it, and say so
        warnings.filterwarnings("ignore", message="resource_tracker: process died unexpectedly")
    kill_children(tracker=last)
    # Every scratch directory made here, again on the last call: a cluster stopped while it started has
    # nannies in this process's event loop that may make a worker's directories after the first removal.
    for directory in _MADE:
        shutil.rmtree(directory, ignore_errors=True)
    _STARTED.clear()


def _closed() -> tuple:
    from distributed.core import Status  # loaded: a cluster was started

    return (None, Status.closed, Status.closing)


def _silence_dask() -> None:
    """Dask's, Tornado's and asyncio's loggers say nothing more: a stop by signal cancels their work, and
    each cancelled task would say so ("Task exception was never retrieved ... AllExit")."""
    for name in ["distributed", "asyncio", "tornado"] + [n for n in logging.root.manager.loggerDict
                                                         if n.startswith(("distributed.", "tornado."))]:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _quiet_new_children() -> None:
    """Point file descriptor 2 at /dev/null, and this process's ``sys.stderr`` at a copy of the real one: a
    worker a nanny spawns while the workers are being killed finds its parent gone and ends, with a
    traceback that now goes nowhere."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        sys.stderr = os.fdopen(saved, "w", buffering=1, encoding=sys.stderr.encoding, errors="backslashreplace")
    except (OSError, ValueError, AttributeError):  # no real stderr (embedded, tests): nothing to do
        pass


def kill_children(tracker: bool) -> None:
    """SIGKILL every descendant process of this one (psutil comes with Dask); multiprocessing's resource
    tracker only with ``tracker``."""
    try:
        import psutil
    except ImportError:
        return
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        try:
            if tracker or not any("resource_tracker" in word for word in child.cmdline()):
                child.kill()
        except psutil.Error:
            pass
