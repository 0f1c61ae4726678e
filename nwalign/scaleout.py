"""Searches and all-pairs jobs spread over worker processes through Dask (``distributed``).

Search: the database cut into shards balanced by residues, one task per shard scoring every query
against it and keeping the shard's best hits, merged exactly on the client, which alone aligns, formats
and writes. All pairs: the pair order cut into blocks of nearly equal DP cells
(:func:`nwalign.allvsall.blocks`, at least four per worker), each task aligning and formatting one block
(the rows and the distances), gathered in order by the client, which alone writes. Pairs of the pair
command: chunks of the plan balanced by DP cells (a pair is never split), aligned on the workers, their
alignments written in order by the client. Both through :class:`Spread`.

Shards: the sequences in a stable longest-first order, dealt round-robin (shard s takes positions s,
s + K, s + 2K, ...), so each holds about 1/K of the residues. A task is a pure function of a small spec
(the database's path, the shard's number, the queries' codes, the scoring's parameters, ``top``): no
database travels with it, workers memory-map the ``.nwdb`` themselves and keep their shard between tasks.
It returns, per query, the shard's best ``top`` hits ordered by score descending, then database index;
the client's merge keeps the best ``top`` of all shards in the same order, so the hits, their E-values
(from the whole database's length) and the output are those of a one-process search, whatever the
number of shards or workers, and after a worker dies (Dask runs its task again elsewhere).

Dask is optional (``pip install nwalign[dask]``) and imported only here.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np

from .errors import NwalignError, WorkerLost

log = logging.getLogger("nwalign")

__all__ = ["AlignTask", "Lead", "Owned", "PairsTask", "Spread", "WorkerLost", "align_chunk", "best_of_shard", "block_of", "check_gpus", "chunk_of", "chunks",
           "pair_block", "check_versions", "client_for", "close_started", "gather_shards", "gpu_cluster", "merge", "preload_database",
           "release_gpu_memory",
           "shards", "submit_shards", "usable", "warm_gpu_worker", "worker_gpus"]


def shards(lengths: np.ndarray, count: int) -> list[np.ndarray]:
    """Database indices of each of ``count`` shards (int64 arrays, ascending): a stable longest-first
    order of ``lengths`` dealt round-robin, so that the shards' residues are nearly equal."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [np.sort(order[s::count]) for s in range(count)]


@dataclass(frozen=True)
class ShardTask:
    """What a worker needs for one shard: small and picklable (no sequences of the database)."""

    database: str                 # a .nwdb path every worker can read
    shard: int
    shards: int
    queries: tuple[bytes, ...]    # the queries' residue codes (uint8 bytes)
    scoring: object               # the Scoring (a small matrix and its parameters)
    top: int
    threads: int = 1
    backend: str = "cpu"          # "cuda": the worker's one visible GPU scans (the scan kernel)
    align: bool = False           # (cuda) the worker aligns its best hits too, on its GPU (one shard only)


_SHARDS: dict = {}  # a worker's shards (and on a GPU worker their searchers), kept between tasks


def _worker_database(path: str):
    """The .nwdb at ``path``, memory-mapped once per worker process (kept with its shards). Its residues'
    checksum is left to the client, which verifies the same file before it reports any hit."""
    from .database import load_database

    key = ("db", path, os.path.getmtime(path))
    return _cached(key, lambda: load_database(path, check_later=True))


def _load_shard(path: str, shard: int, count: int, scoring):
    """The shard's database indices (ascending) and its sequences' codes and offsets (one shard: the whole
    database as it is mapped, no copy)."""
    db = _worker_database(path)
    codes = db.encode(scoring)
    lengths = np.diff(db.offsets)
    if count == 1:
        return np.arange(lengths.size, dtype=np.int64), codes, np.asarray(db.offsets, dtype=np.int64)
    index = shards(lengths, count)[shard]
    member = np.zeros(lengths.size, dtype=bool)
    member[index] = True
    sub = np.asarray(codes)[np.repeat(member, lengths)]  # the shard's residues in database order
    offsets = np.concatenate(([0], np.cumsum(lengths[index]))).astype(np.int64)
    return index, sub, offsets


def _cached(key, make):
    """A worker's cache of its database, shards and searchers between tasks: at most :data:`_KEEP`
    entries."""
    if key not in _SHARDS:
        if len(_SHARDS) >= _KEEP:
            _SHARDS.clear()
        _SHARDS[key] = make()
    return _SHARDS[key]


_KEEP = 6


def _shard_database(path: str, shard: int, count: int, scoring):
    """:func:`_load_shard`, kept by the worker process between tasks (keyed by the file, its modification
    time and the scoring alphabet)."""
    key = (path, os.path.getmtime(path), shard, count, scoring.alphabet)
    return _cached(key, lambda: _load_shard(path, shard, count, scoring))


def _upload_key(path: str) -> tuple:
    return ("upload", path, os.path.getmtime(path))


def preload_database(path: str) -> bool:
    """On a GPU worker: the whole ``.nwdb`` at ``path`` (version 2) uploaded to the worker's GPU in the
    scan's order (as a one-process search does while CuPy starts), kept for the first task of a
    one-shard search. Returns False where it does not fit in the GPU's memory (the search then cuts the
    database in one shard per worker), else True (also for a version-1 file: nothing uploaded)."""
    from .cuda.search import DeviceDatabase
    from .database import MAGIC2

    with open(path, "rb") as handle:
        if handle.read(8) != MAGIC2:
            return True
    db = _worker_database(path)
    try:
        _cached(_upload_key(path), lambda: DeviceDatabase(db.codes, db.offsets, 0))
    except NwalignError:  # too large for this GPU
        return False
    return True


def _shard_searcher(task: ShardTask):
    """The shard's indices, a :class:`nwalign.cuda.search.ScanSearcher` holding its sequences on the
    worker's GPU, and their codes and offsets on the host, kept between tasks (a worker that takes over a
    lost worker's shard holds both)."""
    sc = task.scoring
    key = ("gpu", task.database, os.path.getmtime(task.database), task.shard, task.shards, sc.alphabet,
           sc.matrix.tobytes(), sc.gap_open, sc.gap_extend)

    def make():
        from .cuda.search import ScanSearcher

        index, sub, offsets = _load_shard(task.database, task.shard, task.shards, sc)
        # The whole database uploaded beforehand (preload_database), in the file's codes: used once.
        uploaded = _SHARDS.pop(_upload_key(task.database), None)
        if task.shards != 1 or _worker_database(task.database).letters != sc.alphabet:
            uploaded = None
        searcher = ScanSearcher(sub, offsets, sc, 0, uploaded=uploaded) if index.size else None
        return index, searcher, sub, offsets

    return _cached(key, make)


def _worker_aligner(scoring):
    """A :class:`nwalign.cuda.batch.BatchAligner` on the worker's GPU for ``scoring``, kept between tasks."""
    key = ("aligner", scoring.alphabet, scoring.matrix.tobytes(), scoring.gap_open, scoring.gap_extend,
           scoring.mode)

    def make():
        from .cuda.batch import BatchAligner

        return BatchAligner(scoring, 0)

    return _cached(key, make)


def best_of_shard(task: ShardTask) -> list[tuple]:
    """Per query: (database indices, scores) of the shard's best ``task.top`` hits, score descending then
    index ascending (int64 arrays), and with ``task.align`` (GPU workers, one shard: these are the
    search's best hits) their alignments as a third item (:meth:`nwalign.cuda.batch.BatchResult.result`'s
    tuples, in the same order), aligned on the worker's GPU while it scans the next queries. Runs on a
    worker: the CPU engine, or (``backend`` cuda) the scan kernel on the one GPU the worker sees, two
    queries in flight."""
    from .dbsearch import cpu_scan, top_hits

    sc = task.scoring
    queries = [np.frombuffer(q, dtype=np.uint8) for q in task.queries]
    if task.backend == "cuda":
        index, searcher, sub, offsets = _shard_searcher(task)
        if searcher is None:
            return [(np.zeros(0, np.int64), np.zeros(0, np.int64)) + (([],) if task.align else ())
                    for _ in queries]
        aligner = _worker_aligner(sc) if task.align else None
        flying = [(q, searcher.submit(q)) for q in queries[:searcher.slots]]
        out, aligning, left = [], [], iter(queries[searcher.slots:])
        while flying:
            query, ticket = flying.pop(0)
            scores = searcher.result(ticket)
            q = next(left, None)
            if q is not None:  # the freed slot scans on while this query's best are chosen
                flying.append((q, searcher.submit(q)))
            best = top_hits(scores, task.top, None)
            out.append((index[best], np.asarray(scores[best], dtype=np.int64)))
            if aligner is not None:  # shard positions are database indices (one shard)
                pairs = [(query, sub[offsets[k]:offsets[k + 1]]) for k in best.tolist()]
                aligning.append(aligner.submit(pairs) if pairs else None)
        if aligner is not None:  # the columns copied out of the aligner's reused page-locked buffers
            out = [(i, s, [] if batch is None else [path[:5] + (np.array(path[5]),) for path in batch.result()])
                   for (i, s), batch in zip(out, aligning)]
        return out
    index, sub, offsets = _shard_database(task.database, task.shard, task.shards, sc)
    out = []
    for q in queries:
        if index.size == 0:
            out.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        scores = cpu_scan(q, sub, offsets, sc, task.threads)
        best = top_hits(scores, task.top, None)  # ties by shard position = by database index
        out.append((index[best], scores[best]))
    return out


def merge(parts: list[tuple[np.ndarray, np.ndarray]], top: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``top`` of the shards' candidates for one query: (indices, scores), score descending then
    index ascending."""
    idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    sc = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    order = np.lexsort((idx, -sc))[:top]
    return idx[order], sc[order]


AUTO_MIN_CELLS = 10**12  # allpairs and pair: less work than this stays in one process under devices=auto
# (about a second on one GPU; starting the workers takes about two)


def resolve_devices(devices, backend: str = "auto", device: int = 0, cells: int | None = None) -> list[int] | None:
    """The GPUs a job spreads over (two or more, one worker process each), one GPU named alone (the
    caller runs on it in its own process), or None for one process as the other options say.

    Arguments:
        devices: ``None``/``"auto"``: every visible GPU when there are two or more, Dask is installed,
            ``device`` is 0 (a job told to use another GPU uses that one alone) and the job has at least
            :data:`AUTO_MIN_CELLS` DP cells (``cells``; None: a search, always); ``"all"``: every
            visible GPU; ``"N[,N...]"`` or a list of ints: those GPUs (one: in this process on it).
        backend: ``cpu`` never spreads over GPUs.
        cells: the job's DP cells (allpairs, pair), or None.

    Raises:
        NwalignError: a malformed list, a GPU number out of range, a repeated GPU, GPUs with backend cpu,
            or (all, or a list of two or more) no Dask.
    """
    import importlib.util

    spec = "auto" if devices is None else devices
    have_dask = importlib.util.find_spec("distributed") is not None
    if backend == "cpu":
        if spec != "auto":
            raise NwalignError(f"devices {spec}: GPUs with backend cpu", cli=f"--devices {spec}: GPUs with --backend cpu")
        return None
    if spec == "auto" and (not have_dask or (cells is not None and cells < AUTO_MIN_CELLS)):
        return None  # one process, without waiting for CuPy to count the GPUs
    from . import cuda

    count = cuda.gpu_count()  # asked of the driver: the workers start without waiting for CuPy's import
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
            what = f"GPU {bad[0]} is not one of the {count} visible" if bad else "each GPU once"
            raise NwalignError(f"devices {spec}: {what}", cli=f"--devices {spec}: {what}")
        if len(chosen) == 1:
            return chosen  # one GPU: the caller runs in its own process on it
    if not have_dask:  # "all" or a list of two or more
        raise NwalignError(f"devices {spec}: more than one GPU needs Dask: pip install 'nwalign[dask]'",
                           cli=f"--devices {spec}: more than one GPU needs Dask: pip install 'nwalign[dask]'")
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
    from . import cuda

    if cuda.available():
        return gpus
    if devices in (None, "auto"):
        return None
    raise NwalignError(f"devices {devices}: {cuda.why_unavailable()}", cli=f"--devices {devices}: {cuda.why_unavailable()}")


def client_for(workers: int = 0, scheduler: str | None = None, devices: list[int] | None = None,
               gpu_tasks: int = 1, warm=True):
    """A Dask client: a local cluster of ``workers`` CPU-engine processes (one thread each), a local
    cluster of one process per GPU in ``devices`` (each sees only its GPU and runs ``gpu_tasks`` tasks at
    a time; ``warm``: with CuPy imported and the search's kernels loaded, :func:`warm_gpu_worker`, or
    what the function given does on each worker), or the running
    cluster at ``scheduler`` (an address such as ``tcp://host:8786``, or a scheduler file ``*.json``).
    Returns (client, cluster or None: what to close).

    Raises:
        NwalignError: Dask's ``distributed`` is not installed.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise NwalignError("workers and scheduler need Dask: pip install 'nwalign[dask]'",
                           cli="--workers/--scheduler/--devices need Dask: pip install 'nwalign[dask]'") from None
    if scheduler:
        import dask

        wait = dask.config.get("distributed.comm.timeouts.connect")  # Dask's setting (30 s by default)
        try:
            client = Client(scheduler_file=scheduler, timeout=wait) if scheduler.endswith(".json") else \
                Client(scheduler, timeout=wait)
        except (OSError, TimeoutError, ValueError) as exc:
            raise NwalignError(f"scheduler {scheduler}: cannot connect ({exc})",
                               cli=f"--scheduler {scheduler}: cannot connect ({exc})") from None
        try:
            check_versions(client)
        except NwalignError:
            client.close()
            raise
        return client, None
    if devices:
        cluster = gpu_cluster(devices, gpu_tasks)
        client = Client(cluster)
        if warm:  # CuPy, the context and the kernels, while the client reads its input
            client.run(warm if callable(warm) else warm_gpu_worker)
        return client, cluster
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    return Client(cluster), cluster


def gpu_cluster(devices: list[int], tasks: int = 1):
    """A local Dask cluster of one worker process per GPU of ``devices`` (numbers as this process sees
    them), each started by a ``distributed.Nanny`` with ``CUDA_VISIBLE_DEVICES`` naming its GPU alone,
    ``tasks`` tasks at a time (2 for allpairs: one block formats its rows while the next one's kernels
    run); worker ``gpuN`` runs on GPU N. dask-cuda's ``LocalCUDACluster`` does the same
    with more machinery (and pinned dependencies) than a scan needs."""
    import logging as logs

    import dask
    from distributed import Nanny, Scheduler, SpecCluster

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [x.strip() for x in visible.split(",")] if visible else None
    spec = {}
    for d in devices:
        physical = names[d] if names and d < len(names) else str(d)
        spec[f"gpu{d}"] = {"cls": Nanny, "options": {"nthreads": tasks, "env": {"CUDA_VISIBLE_DEVICES": physical},
                                                      "silence_logs": logs.WARNING}}
    # Without Dask's MALLOC_TRIM_THRESHOLD_ for the worker processes: setting it also fixes glibc's mmap
    # threshold, so that each query's score array (MBs) is mapped and its pages faulted in anew (a GPU
    # worker's scan measured 2.7-3.2 % over one process with it, 1.1-1.5 % without, on an H100).
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}},
                           name="nwalign-gpus", silence_logs=logs.WARNING)  # Dask's INFO lines, as LocalCluster


def warm_gpu_context() -> None:
    """On a GPU worker: import CuPy and make the context (allpairs and pair load their own kernels)."""
    from . import cuda

    cuda.warm_up(0).join()


def warm_gpu_worker(database: str | None = None) -> bool | None:
    """On a GPU worker: import CuPy, make the context and load the scan kernels (as a search does), and
    meanwhile (``database``: a ``.nwdb`` path) upload the whole database (:func:`preload_database`, whose
    answer is returned)."""
    from . import cuda

    warm = cuda.warm_up_search(0)
    fits = preload_database(database) if database is not None else None
    warm.join()
    return fits


def _worker_version() -> str:
    from . import __version__

    return __version__


def check_versions(client) -> None:
    """Refuse a cluster whose workers run another nwalign version (or none): their shards' results would
    not be this version's.

    Raises:
        NwalignError: naming the first worker that differs.
    """
    from . import __version__

    try:
        found = client.run(_worker_version)
    except Exception as exc:  # a worker without nwalign cannot even unpickle the function
        raise NwalignError(f"a worker of the cluster cannot run nwalign ({type(exc).__name__}: {exc})") from None
    for address, version in sorted(found.items()):
        if version != __version__:
            raise NwalignError(f"worker {address} runs nwalign {version}, this is {__version__}: "
                               "install the same version on every worker")


def worker_gpus(client) -> dict[str, tuple[str | None, str]]:
    """Each worker's name -> (UUID, description) of the GPU it scans on ((None, ``"none"``) without one)."""
    workers = client.scheduler_info()["workers"]
    return {str(workers.get(address, {}).get("name", address)): gpu
            for address, gpu in client.run(_worker_gpu).items()}


def _worker_gpu() -> tuple[str | None, str]:
    """(UUID, description) of the GPU a worker scans on (its first visible one), or (None, "none")."""
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        uuid = bytes(props.get("uuid", b"")).hex() or name
        return uuid, f"{name} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')})"
    except Exception:
        return None, "none"


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


def submit_shards(client, database: str, queries: list[np.ndarray], scoring, top: int, count: int,
                  threads: int = 1, backend: str = "cpu", align: bool = False) -> list:
    """Start one task per shard of ``database`` (a .nwdb path) for ``queries``; returns their futures.
    ``align``: GPU workers with one shard align the best hits themselves (see :func:`best_of_shard`).

    Dask places the tasks (no restrictions: a task whose worker died must be free to run anywhere,
    and Dask's loose restrictions left such tasks waiting); a worker keeps every shard it has loaded
    (at most 4), so each worker loads a shard at most once."""
    codes = tuple(np.asarray(q, dtype=np.uint8).tobytes() for q in queries)
    align = align and backend == "cuda" and count == 1
    return [client.submit(best_of_shard, ShardTask(database, s, count, codes, scoring, top, threads, backend, align),
                          pure=False) for s in range(count)]


def gather_shards(client, futures: list, queries: int, top: int) -> list[tuple]:
    """Per query, the merged best ``top`` (indices, scores) of :func:`submit_shards`' tasks (one task: its
    answer as it is, with the alignments where the worker made them).

    Raises:
        WorkerLost: a task kept killing workers.
    """
    from distributed import KilledWorker

    try:
        results = client.gather(futures)
    except KilledWorker as exc:
        raise WorkerLost(f"a shard's task killed every worker that ran it ({exc}); no output written") from None
    if len(results) == 1:
        return results[0]
    return [merge([r[k] for r in results], top) for k in range(queries)]


# -- all pairs ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairsTask:
    """One block of an all-pairs job: small and picklable (the sequences stay in the .nwdb files)."""

    sets: tuple                   # (.nwdb path of the set, of the second set or None)
    scoring: object
    columns: tuple
    min_identity: float | None
    distances: bool
    backend: str                  # the worker's engine: cpu, or cuda on its one visible GPU
    kernel: str
    slice_k: int | None
    block: int | None
    threads: int
    span: tuple                   # (start, stop) positions in the pair order


def _pair_sets(paths: tuple, scoring):
    """The encoded records of the .nwdb files, kept by the worker between tasks."""
    key = ("sets",) + tuple((p, os.path.getmtime(p)) for p in paths if p) + (scoring.alphabet,)

    def make():
        from .database import load_database
        from .engine import encode_all

        out = []
        for path in paths:
            if path is None:
                out.append(None)
                continue
            db = load_database(path)
            out.append(encode_all([db.record(k) for k in range(db.count)], scoring, path))
        return out

    return _cached(key, make)


def pair_block(task: PairsTask):
    """Align and format one block of an all-pairs job on a worker: (:class:`nwalign.allvsall.Block`,
    stats as :func:`nwalign.allvsall.run` fills them)."""
    a, b = _pair_sets(task.sets, task.scoring)
    return block_of(a, b, task, 0)


def block_of(a, b, task: PairsTask, device: int):
    """:func:`pair_block` on the encoded sets ``a``, ``b`` and GPU ``device`` (a worker's only GPU, or
    one of this process's while the workers start)."""
    from .allvsall import Block, format_results, needs_traceback, run, score_blocks

    stats: dict = {}
    if not needs_traceback(task.columns, task.min_identity, task.distances):
        parts = list(score_blocks(a, b, task.scoring, task.columns, stats, task.backend, task.kernel, task.slice_k,
                                  task.block, device, task.threads, task.span))
        text = "".join(p.text for p in parts)
        return Block(task.span[0], task.span[1], text, None, sum(p.reported for p in parts)), stats
    results = list(run(a, b, task.scoring, task.columns, task.min_identity, task.distances, task.threads, stats,
                       task.backend, task.kernel, task.slice_k, task.block, device, task.span))
    return format_results(results, task.columns, task.distances, task.span[0]), stats


def gpu_wave(task: PairsTask) -> int:
    """On a GPU worker: how many pairs the all-pairs score kernel for the whole job runs at once
    (:meth:`nwalign.cuda.allpairs.AllPairsScorer.wave`; 1 for the one-block-per-pair kernels)."""
    a, b = _pair_sets(task.sets, task.scoring)
    return wave_of(a, b, task, 0)


def wave_of(a, b, task: PairsTask, device: int) -> int:
    """:func:`gpu_wave` on the encoded sets ``a``, ``b`` and GPU ``device``."""
    from .cuda.allpairs import AllPairsScorer

    codes = [e.codes for e in a] + ([] if b is None else [e.codes for e in b])
    scorer = AllPairsScorer(codes, task.scoring, task.kernel, task.slice_k, task.block, device)
    total = len(a) * (len(a) - 1) // 2 if b is None else len(a) * len(b)
    return scorer.wave(scorer.kernel_for(total))


@dataclass(frozen=True)
class AlignTask:
    """A chunk of the pair command's plan: (query, target) indices into the two .nwdb files."""

    sets: tuple                   # (.nwdb of the queries, of the targets)
    scoring: object
    plan: tuple                   # ((query index, target index), ...)
    score_only: bool
    backend: str
    threads: int
    max_memory: int               # bytes for this task's CPU tracebacks
    options: object = None        # nwalign.cuda.pair.Options (device 0: the worker's GPU) or None


def align_chunk(task: AlignTask) -> list:
    """Align a chunk of pairs on a worker: their :class:`~nwalign.results.Alignment` objects, in order."""
    queries, targets = _pair_sets(task.sets, task.scoring)
    return chunk_of(queries, targets, task, 0)


def chunk_of(queries, targets, task: AlignTask, device: int) -> list:
    """:func:`align_chunk` on the encoded sets and GPU ``device`` (a worker's only GPU, or one of this
    process's while the workers start)."""
    from .aligner import Aligner

    aligner = Aligner(task.scoring, task.backend, device, task.threads, task.max_memory, task.options, announce=False)
    return list(aligner.align_many([(queries[q], targets[t]) for q, t in task.plan], task.score_only))


def chunks(cells: np.ndarray, count: int) -> list[tuple[int, int]]:
    """Cut a list of pairs (their DP cells, in order) into at most ``count`` consecutive (start, stop)
    ranges of nearly equal cells; a pair is never split."""
    total = np.cumsum(np.asarray(cells, dtype=np.float64))
    if total.size == 0:
        return []
    cuts = {0, int(total.size)}
    for k in range(1, count):
        cuts.add(int(np.searchsorted(total, total[-1] * k / count, side="left")) + 1)
    cuts = sorted(c for c in cuts if 0 <= c <= total.size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def close_started(started) -> None:
    """Close the client and local cluster that a background start (a Future of (client, cluster, ...), or
    of None) made or is making; nothing where it failed."""
    try:
        found = started.result()
    except BaseException:
        return
    if found is not None:
        found[0].close()
        found[1].close()


class Owned:
    """What a job spread over workers must release: the client and the local cluster it started
    (``cluster`` None: a cluster it joined, left running), one still starting in the background
    (``_started``, a Future) and its temporary directory."""

    client = cluster = tmp = _started = None

    def close(self) -> None:
        """Stop the workers started here and remove the temporary files (again: nothing happens)."""
        import shutil

        if self._started is not None:  # started in the background, never joined
            started, self._started = self._started, None
            close_started(started)
        if self.cluster is not None:
            self.client.close()
            self.cluster.close()
            self.cluster = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


class Spread(Owned):
    """A job's tasks on Dask workers: its sequence sets written once as temporary .nwdb files the workers
    read (:func:`_pair_sets`), the workers started or joined, the tasks run in order by :meth:`map`.

    With ``gpus``, :meth:`map` runs the first tasks in this process on every one of those GPUs (its
    ``local`` function) and then writes the sets and starts the GPU workers in the background
    (:meth:`_start`), joining them for the next tasks: no GPU waits for Dask's start-up, and Dask's
    import does not slow the job's plan or its first launches.

    Arguments:
        label: the command, for messages (``allpairs``, ``pair``).
        sets: encoded record lists (or None), written in this order.
        backend: the workers' engine (``cuda``: each worker's one visible GPU).
        workers, scheduler, client: as :func:`client_for` takes them (or a ``distributed.Client``).
        gpus: GPUs for one worker process each (a local cluster), or None.
        shared_dir: where the temporary .nwdb files go (workers on other hosts must read them).
        gpu_tasks: tasks each GPU worker of ``gpus`` runs at a time.

    Attributes: ``paths`` (the .nwdb files, None where a set is None), ``workers`` (how many), ``client``
    (None until :meth:`map` joins the GPU workers), ``gpus``.

    Raises:
        NwalignError: no Dask, a missing ``shared_dir``, a cluster that cannot be joined or runs another
            version, or (backend cuda) workers without a GPU of their own.
    """

    def __init__(self, label: str, sets, backend: str, workers: int = 0, scheduler: str | None = None,
                 client=None, gpus: list[int] | None = None, shared_dir: str | None = None, gpu_tasks: int = 1):
        import tempfile

        from .database import database_from_records, write_database

        self.label, self.backend, self.gpus = label, backend, gpus
        self.client = self.cluster = self.tmp = self._started = self._launch = None
        self.led = 0
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
                    return client_for(devices=gpus, gpu_tasks=gpu_tasks, warm=warm_gpu_context)
                self._launch = launch
                return
            write()
            self.client, self.cluster = (client, None) if client is not None else client_for(workers, scheduler)
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
        from .background import in_background

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

    def map(self, function, tasks, local=None):
        """``function(task)`` for each task on the workers, results yielded in task order; up to
        2 x workers + 1 tasks run or wait ahead of the one yielded. Where the GPU workers are still
        starting, ``local(task, gpu)`` (the same result, computed in this process on that GPU) takes the
        first tasks meanwhile (:class:`Lead`); the workers take the next ones as soon as they are up.
        Closes the workers at the end.

        Raises:
            WorkerLost: a task kept killing workers.
        """
        import threading
        from collections import deque

        try:
            todo, lock = iter(tasks), threading.Lock()
            lead = Lead(self._started, todo, lock, lambda tasks, gpu: (local(t, gpu) for t in tasks), self.gpus,
                        self.label) if local is not None and self._started is not None else None
            self._start()  # the workers, once the first tasks run here
            if lead is not None and not lead.wait():  # every task taken here: no need to wait for the workers
                yield from lead.results()
                self.led = lead.taken
                return
            self.join()
            from distributed import KilledWorker  # not before the first tasks here: its import takes ~0.5 s
            flying: deque = deque()

            def fill():
                while len(flying) < 2 * self.workers + 1:
                    with lock:
                        task = next(todo, None)
                    if task is None:
                        return
                    flying.append(self.client.submit(function, task, pure=False))

            fill()
            if lead is not None:  # the tasks run here come first; the workers are busy meanwhile
                yield from lead.results()
                self.led = lead.taken
                release_gpu_memory(self.gpus)
            while True:
                fill()
                if not flying:
                    break
                try:
                    result = flying.popleft().result()
                except KilledWorker as exc:
                    raise WorkerLost(f"a {self.label} task killed every worker that ran it ({exc}); no output "
                                     "written") from None
                yield result
        finally:
            self.close()


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
    next tasks with it once the workers are up). Used by :meth:`Spread.map` and by the search's scale-out
    (:class:`nwalign.dbsearch._ScaleOut`)."""

    def __init__(self, started, todo, lock, run, places, label: str):
        import threading

        self.started, self.todo, self.lock, self.run, self.label = started, todo, lock, run, label
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
                with self.lock:
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
            log.warning("%s: the GPU workers did not start (%s); every task ran in this process", self.label,
                        self.started.exception())
        log.info("%s: %d tasks run here on %d GPUs while the workers started", self.label, self.taken,
                 len(self.threads))
