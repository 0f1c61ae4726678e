"""The plugin of the GPU workers nwalign starts itself (``--devices``; imported only where Dask is)."""

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
