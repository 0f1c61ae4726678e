"""Dask's side of a job spread over worker processes (``distributed``): which GPUs (``--devices``), the
client and the local cluster (one process per GPU, each seeing its GPU alone, or CPU-engine processes),
the checks on a running cluster's workers (nwalign version, one GPU each), a worker's cache between tasks,
and what a job must release. The tasks themselves: :mod:`nwalign.jobs.search.shards` (search),
:mod:`nwalign.parallel.spread` (allpairs and pair over workers or this host's GPUs).

Dask is optional (``pip install nwalign[dask]``) and imported only by these modules, only when a job
spreads.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading

import nwalign

from nwalign import backends
from nwalign.parallel import localworkers
from nwalign.parallel.running import check_dask_config, connect, wait_for_workers
from nwalign.errors import NwalignError

log = logging.getLogger("nwalign")

__all__ = ["AUTO_MIN_CELLS", "AUTO_MIN_PAIR_CELLS", "AUTO_MIN_SEARCH_CELLS", "Owned", "check_gpus", "check_versions", "client_for",
           "close_cluster", "close_started", "gpu_cluster", "resolve_devices", "usable", "worker_cached",
           "worker_gpus", "worker_uncache"]


# Under devices=auto, less work than this stays on one GPU: each further GPU costs its context, its
# kernels and (search) its copy of the database, a few tenths of a second, made at once on every GPU.
AUTO_MIN_CELLS = 10**12  # allpairs and pair: about half a second on one GPU
AUTO_MIN_SEARCH_CELLS = 3 * 10**12  # a search's, estimated from its files' sizes: under a second on one GPU
# One pair's score pass spread over the GPUs (auto): below this, starting the other GPUs costs about what
# they save (a 1 Mb pair, 0.34 s of pass, took 1.31 s on one H200 and 1.60 s on two); 3.2 Mb and up.
AUTO_MIN_PAIR_CELLS = 10**13


def resolve_devices(devices, backend: str = "auto", device: int = 0, cells: int | None = None,
                    min_cells: int = AUTO_MIN_CELLS) -> list[int] | None:
    """The GPUs a job spreads over (two or more, a thread each: :mod:`nwalign.parallel.devicethreads`), one GPU
    named alone (the caller runs on it), or None for one GPU or the CPU engine as the other options say.

    Arguments:
        devices: ``None``/``"auto"``: every visible GPU when there are two or more, ``device`` is 0 (a
            job told to use another GPU uses that one alone) and the job has at least ``min_cells`` DP cells (``cells``; None: unknown, always); ``"all"``: every
            visible GPU; ``"N[,N...]"`` or a list of ints: those GPUs (one: in this process on it).
        backend: ``cpu`` never spreads over GPUs.
        cells: the job's DP cells (allpairs, pair; a search's estimate from its files' sizes), or None.
        min_cells: the fewest cells ``auto`` spreads: :data:`AUTO_MIN_CELLS`, or for a search
            :data:`AUTO_MIN_SEARCH_CELLS`.

    Raises:
        NwalignError: a malformed list, a GPU number out of range, a repeated GPU, or GPUs with backend cpu.
    """
    spec = "auto" if devices is None else devices
    if not backends.may_use_gpu(backend):
        if spec != "auto":
            raise NwalignError(f"devices {spec}: GPUs with backend cpu", cli=f"--devices {spec}: GPUs with --backend cpu")
        return None
    if spec == "auto" and cells is not None and cells < min_cells:
        return None  # one GPU, without waiting for the driver to count them
    count = backends.gpu_count()  # asked of the driver, without waiting for CuPy's import
    if spec in ("auto", "all"):
        if count < 2 or (spec == "auto" and device != 0):
            return None
        chosen = list(range(count))
    else:
        try:
            chosen = [int(x) for x in spec.split(",")] if isinstance(spec, str) else [int(x) for x in spec]
        except (TypeError, ValueError):
            raise NwalignError(f"devices {spec!r}: give auto, all or GPU numbers such as 0,1",
                               cli=f"--devices {spec}: give auto, all or GPU numbers such as 0,1") from None
        bad = [d for d in chosen if not 0 <= d < count]
        if not chosen or bad or len(set(chosen)) != len(chosen):
            what = "no GPU is visible (" + (backends.why_no_gpu() if not count else "") + ")" if bad and not count \
                else f"GPU {bad[0]} is not one of the {count} visible" if bad else "each GPU once"
            raise NwalignError(f"devices {spec}: {what}", cli=f"--devices {spec}: {what}")
    return chosen


def usable(gpus: list[int] | None, devices) -> list[int] | None:
    """``gpus`` (from :func:`resolve_devices`, which counts GPUs without CuPy) once CuPy is known to work
    here: two or more GPUs without a working CuPy give one process for ``devices`` auto (whose backend
    choice then says what runs), an error for GPUs named.

    Raises:
        NwalignError: GPUs named (``all`` or a list) and CuPy cannot run.
    """
    if gpus is None or len(gpus) < 2:
        return gpus
    if backends.gpu_available():
        return gpus
    if devices in (None, "auto"):
        return None
    raise NwalignError(f"devices {devices}: {backends.why_no_gpu()}", cli=f"--devices {devices}: {backends.why_no_gpu()}")


def scratch_for_workers(shared_dir: str | None) -> str:
    """A new temporary directory for the ``.nwdb`` files a job's workers read: in ``shared_dir`` (workers on
    other hosts must read them), else the system's temporary directory.

    Raises:
        NwalignError: ``shared_dir`` is no directory.
    """
    if shared_dir is not None and not os.path.isdir(shared_dir):
        raise NwalignError(f"shared_dir {shared_dir}: no such directory",
                           cli=f"--shared-dir {shared_dir}: no such directory")
    return tempfile.mkdtemp(prefix="nwalign-", dir=shared_dir)


def workers_gpus(client, engine) -> dict[str, tuple[str | None, str]]:
    """The GPU of each worker of ``client`` where ``engine`` runs on GPUs (:func:`worker_gpus`), checked
    (:func:`check_gpus`: one each, none shared); empty for CPU-engine workers.

    Raises:
        NwalignError: a worker without a GPU, or two on one GPU.
    """
    if not engine.on_gpu:
        return {}
    found = worker_gpus(client)
    check_gpus(found)
    return found


def client_for(workers: int = 0, scheduler: str | None = None):
    """A Dask client: a local cluster of ``workers`` CPU-engine processes (one thread each), or the
    running cluster at ``scheduler`` (an address such as ``tcp://host:8786``, or a scheduler file ``*.json``).
    Returns (client, cluster or None: what to close).

    Raises:
        NwalignError: Dask's ``distributed`` is not installed.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise NwalignError("workers and scheduler need Dask: pip install 'nwalign[dask]'",
                           cli="--workers/--scheduler need Dask: pip install 'nwalign[dask]'") from None
    check_dask_config()
    if scheduler:
        client = connect(Client, scheduler)
        # The client's own reconnection errors are said once, in nwalign's words (errors.cluster_lost).
        logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
        try:
            check_versions(client)
            wait_for_workers(client, scheduler)
        except NwalignError:
            client.close()
            raise
        return client, None
    import dask

    from nwalign.parallel.workerexit import QuietCancellations

    _say_restarts_once()
    scratch = localworkers.scratch_directory()
    with dask.config.set({"temporary-directory": scratch}):  # the scheduler's and nannies' files too
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               local_directory=scratch, plugins={QuietCancellations()})
    localworkers.register(cluster, scratch)
    return Client(cluster), cluster


def gpu_cluster(devices: list[int], tasks: int = 1):
    """A local Dask cluster of one worker process per GPU of ``devices`` (numbers as this process sees
    them), each started by a ``distributed.Nanny`` with ``CUDA_VISIBLE_DEVICES`` naming its GPU alone,
    ``tasks`` tasks at a time (2 for allpairs: one block formats its rows while the next one's kernels
    run; 2 for search: one round's hits are aligned and sent back while the other round scans); worker ``gpuN`` runs on GPU N; its process ends as soon as it is closed
    (:class:`nwalign.parallel.workerexit.QuickExit`). dask-cuda's ``LocalCUDACluster`` does the same
    with more machinery (and pinned dependencies) than a scan needs."""
    import logging as logs

    import dask
    from distributed import Nanny, Scheduler, SpecCluster

    from nwalign.parallel.workerexit import QuickExit, QuietCancellations

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [x.strip() for x in visible.split(",")] if visible else None
    spec = {}
    _say_restarts_once()
    scratch = localworkers.scratch_directory()
    for d in devices:
        physical = names[d] if names and d < len(names) else str(d)
        spec[f"gpu{d}"] = {"cls": Nanny, "options": {"nthreads": tasks, "env": {"CUDA_VISIBLE_DEVICES": physical},
                                                      "silence_logs": logs.WARNING,
                                                      "plugins": (QuickExit(), QuietCancellations()),
                                                      "local_directory": scratch}}
    # Without Dask's MALLOC_TRIM_THRESHOLD_ for the worker processes: setting it also fixes glibc's mmap
    # threshold, so that each query's score array (MBs) is mapped and its pages faulted in anew (a GPU
    # worker's scan measured slower with it than without).
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                          "temporary-directory": scratch}):
        cluster = SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}},
                              name="nwalign-gpus", silence_logs=logs.WARNING)  # Dask's INFO lines, as LocalCluster
    localworkers.register(cluster, scratch)
    return cluster


class _RestartsSaidOnce(logging.Filter):
    """Dask's nanny warns "Restarting worker" each time a worker process dies and it starts another. The
    job loses nothing (the dead worker's tasks run again), so nwalign says so once, under ``-v``."""

    said = False

    def filter(self, record) -> bool:
        if "Restarting worker" not in record.getMessage():
            return True
        if not self.said:
            self.said = True
            log.info("a worker process died; Dask started another and its tasks run again (nothing is lost)")
        return False


def _say_restarts_once() -> None:
    nanny = logging.getLogger("distributed.nanny")
    if not any(isinstance(f, _RestartsSaidOnce) for f in nanny.filters):
        nanny.addFilter(_RestartsSaidOnce())


def close_cluster(client, cluster) -> None:
    """Close ``client`` and ``cluster``, a local cluster started here, and remove its workers' scratch
    directory; after a stop by signal (:func:`nwalign.parallel.localworkers.stop_now`: the workers are gone), only
    the directory."""
    if not localworkers.stopped:
        client.close()
        cluster.close()
    localworkers.release(cluster)


def _worker_version() -> str:
    return nwalign.__version__  # the package's, read at the call


def check_versions(client) -> None:
    """Refuse a cluster whose workers run another nwalign version (or none): their shards' results would
    not be this version's.

    Raises:
        NwalignError: naming the first worker that differs.
    """
    try:
        found = client.run(_worker_version)
    except Exception as exc:  # a worker without nwalign cannot even unpickle the function
        raise NwalignError(f"a worker of the cluster cannot run nwalign ({type(exc).__name__}: {exc})") from None
    for address, version in sorted(found.items()):
        if version != nwalign.__version__:
            raise NwalignError(f"worker {address} runs nwalign {version}, this is {nwalign.__version__}: "
                               "install the same version on every worker")


def worker_gpus(client) -> dict[str, tuple[str | None, str]]:
    """Each worker's name -> (UUID, description) of the GPU it scans on ((None, ``"none"``) without one)."""
    workers = client.scheduler_info()["workers"]
    return {str(workers.get(address, {}).get("name", address)): gpu
            for address, gpu in client.run(backends.visible_gpu).items()}


def check_gpus(gpus: dict[str, tuple[str | None, str]]) -> None:
    """Refuse a cluster for GPU scans (``gpus``: :func:`worker_gpus`) whose workers lack a GPU or share
    one (two workers on one GPU would halve each other's speed and double its memory).

    Raises:
        NwalignError: naming the worker.
    """
    seen: dict = {}
    for address, (uuid, text) in sorted(gpus.items()):
        if uuid is None:
            raise NwalignError(f"worker {address} sees no GPU: start GPU workers (one per GPU, e.g. dask cuda "
                               "worker) or use backend cpu", cli=f"worker {address} sees no GPU: start GPU workers "
                               "(one per GPU, e.g. dask cuda worker) or use --backend cpu")
        if uuid in seen:
            raise NwalignError(f"workers {seen[uuid]} and {address} share one GPU ({text}): give each worker its "
                               "own GPU (CUDA_VISIBLE_DEVICES)")
        seen[uuid] = address


_CACHE: dict = {}  # a worker's database, shards, searchers and sets, kept between tasks
_KEEP = 6


_CACHE_LOCK = threading.RLock()  # a worker's threads (two per GPU worker) make each entry once
_THREAD = threading.local()


def worker_cached(key, make):
    """``make()``, kept by this (worker) process under ``key`` between tasks: its database, shards,
    uploads and sequence sets; at most :data:`_KEEP` entries (the cache starts over when full). Made
    once where the worker's threads ask for it together."""
    found = _CACHE.get(key)
    if found is None:
        with _CACHE_LOCK:
            if key not in _CACHE:
                if len(_CACHE) >= _KEEP:
                    _CACHE.clear()
                _CACHE[key] = make()
            found = _CACHE[key]
    return found


def thread_cached(key, make):
    """:func:`worker_cached` for what one thread of a worker keeps to itself between its tasks (a scan's
    streams and buffers, an aligner's): at most :data:`_KEEP` entries per thread."""
    cache = getattr(_THREAD, "cache", None)
    if cache is None:
        cache = _THREAD.cache = {}
    if key not in cache:
        if len(cache) >= _KEEP:
            cache.clear()
        cache[key] = make()
    return cache[key]


def worker_uncache(key):
    """Take ``key``'s entry out of this process's cache (None where there is none)."""
    return _CACHE.pop(key, None)


def close_started(started) -> None:
    """Close the client and local cluster that a background start (a Future of (client, cluster, ...), or
    of None) made or is making; nothing where it failed."""
    try:
        found = started.result()
    except BaseException:
        return
    if found is not None:
        close_cluster(found[0], found[1])


class Owned:
    """What a job spread over workers must release: the client and the local cluster it started
    (``cluster`` None: a cluster it joined, left running; its client is closed when the job made it,
    ``own_client``, and left open when the caller gave it), one still starting in the background
    (``_started``, a Future) and its temporary directory."""

    client = cluster = tmp = _started = _closing = None
    own_client = False

    def close_in_background(self) -> None:
        """Start :meth:`close` in a thread and return at once, once every result is in: the command
        finishes its output meanwhile (renaming a 300 MB TSV over an existing file took 0.25 s, as long
        as the two GPU workers' close, on two H100s). :meth:`close` waits for it; so does the
        interpreter's exit."""
        import threading

        if self._closing is None:
            self._closing = threading.Thread(target=self._close_quietly, name="nwalign-close")
            self._closing.start()

    def _close_quietly(self) -> None:
        try:
            self._close_now()
        except Exception as exc:  # every result is in: a worker that fails to stop changes nothing
            log.debug("closing the workers: %s", exc)

    def close(self) -> None:
        """Stop the workers started here and remove the temporary files (again: nothing happens); waits
        for a close started by :meth:`close_in_background`."""
        closing, self._closing = self._closing, None
        if closing is not None:
            closing.join()
        self._close_now()

    def _close_now(self) -> None:
        import shutil

        if self._started is not None:  # started in the background, never joined
            started, self._started = self._started, None
            close_started(started)
        if self.cluster is not None:
            log.debug("closing the workers")
            close_cluster(self.client, self.cluster)
            self.cluster = None
            log.debug("workers closed")
        elif self.own_client and self.client is not None and not localworkers.stopped:
            self.client.close()  # a running cluster's: only the connection made here
        self.own_client = False
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
