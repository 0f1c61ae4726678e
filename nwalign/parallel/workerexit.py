"""The plugins of the workers nwalign starts itself (``--workers``, ``--devices``; imported only where Dask
is)."""

import logging
import os

from distributed import WorkerPlugin


class QuickExit(WorkerPlugin):
    """Ends a GPU worker's process as soon as its worker has closed: its nanny is stopping it at the end of
    a job (or of a failed one), every result delivered, so the interpreter's and CuPy's orderly shutdown
    is skipped; the driver frees the GPU's memory as the process ends: the cluster's close, on the critical
    path of every spread job, takes about half as long so."""

    name = "nwalign-quick-exit"

    def teardown(self, worker):
        os._exit(0)


class QuietCancellations(WorkerPlugin):
    """Keeps a worker from warning of the tasks nwalign cancels itself (``allpairs --workers 2 | head``
    printed Dask's "Async instruction for <Task cancelled ...> ended with CancelledError" twice each run):
    the worker's task-state logger says only errors."""

    name = "nwalign-quiet-cancellations"

    def setup(self, worker):
        logging.getLogger("distributed.worker.state_machine").setLevel(logging.ERROR)
