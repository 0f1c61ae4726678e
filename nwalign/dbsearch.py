"""Database search: every query against every database sequence with Smith-Waterman, top hits per
query, then full alignments of the reported hits only, with Karlin-Altschul E-values.

The database is one block of residues plus offsets (from FASTA, or memory-mapped from a ``.nwdb``
file written by ``nwalign makedb``), encoded once for all queries.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import cpu, names
from .database import Database
from .engine import Encoded, align_pair, alignment_from_path
from .errors import NwalignError
from .formats import field as column_field
from .results import Alignment
from .scaleout import Owned
from .scoring import Scoring
from .sequences import Record
from .statistics import KarlinAltschul

log = logging.getLogger("nwalign")

# BLAST's 12 columns, --format json's fields, every column, those known from the scan alone (nwalign.names).
BLAST_COLUMNS, JSON_COLUMNS = names.SEARCH_BLAST_COLUMNS, names.SEARCH_JSON_COLUMNS
COLUMNS, SCORE_COLUMNS = names.SEARCH_COLUMNS, names.SEARCH_SCORE_COLUMNS


def cpu_scan(q: np.ndarray, codes: np.ndarray, offsets: np.ndarray, scoring: Scoring, threads: int = 1) -> np.ndarray:
    """Optimal local scores of query codes ``q`` against every database sequence on the CPU engine
    (int64, shape (count,)), ``threads`` threads over chunks balanced by residues (the GPU's counterpart is
    the ``scan`` kernel, :class:`nwalign.cuda.search.ScanSearcher`)."""
    count = len(offsets) - 1
    out = np.empty(count, dtype=np.int64)
    go, ge, mode = scoring.gap_open, scoring.gap_extend, scoring.mode_code

    def chunk(lo, hi):
        for k in range(lo, hi):
            out[k] = cpu.score_codes(q, codes[offsets[k]:offsets[k + 1]], scoring.matrix, go, ge, mode)

    # Chunks balanced by residues, not by sequence counts.
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], max(1, threads * 4) + 1)).tolist()
    cuts[0], cuts[-1] = 0, count
    spans = [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    if threads <= 1:
        for a, b in spans:
            chunk(a, b)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda s: chunk(*s), spans))
    return out


@dataclass
class Hit:
    query: Record
    db_index: int
    aln: Alignment
    evalue: float | None
    bitscore: float | None
    title: str = ""  # the database sequence's FASTA header line (BLAST's stitle)


def top_hits(scores: np.ndarray, top: int, min_score: int | None) -> np.ndarray:
    """Indices of the best ``top`` scores (int64): score descending, then database order (ties are stable).

    Only the candidates at or above a bound on the top-th best score are sorted. For a large array the
    bound comes from groups: viewed as 64 rows, each column's maximum is an element, so the top-th best of
    the column maxima is at most the top-th best score, and only the columns whose maximum reaches it can
    hold a candidate (one pass over the array instead of a partition of all of it: 0.1 ms instead of
    1.4 ms for 570,000 int64 scores on the development machine)."""
    scores = np.asarray(scores)
    n = scores.size
    if top <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if top >= n:
        cand = np.arange(n)
    elif n < _GROUP_ROWS * max(top, 64):
        kth = np.partition(scores, n - top)[n - top]
        cand = np.flatnonzero(scores >= kth)
    else:
        cols = n // _GROUP_ROWS
        body = scores[:cols * _GROUP_ROWS].reshape(_GROUP_ROWS, cols)
        maxima = body.max(axis=0)
        bound = np.partition(maxima, cols - top)[cols - top]
        hot = np.flatnonzero(maxima >= bound)
        cand = (np.arange(_GROUP_ROWS, dtype=np.int64)[:, None] * cols + hot).ravel()
        cand = cand[scores[cand] >= bound]
        tail = np.flatnonzero(scores[cols * _GROUP_ROWS:] >= bound) + cols * _GROUP_ROWS
        cand = np.concatenate((cand, tail))
    order = cand[np.lexsort((cand, -scores[cand].astype(np.int64)))]  # int64: -(-32768) fits
    if min_score is not None:
        order = order[scores[order] >= min_score]
    return order[:top]


_GROUP_ROWS = 64


def _hit(query: Encoded, db: Database, codes: np.ndarray, k: int, scoring: Scoring, evalue, bitscore) -> Hit:
    target = Encoded(db.record(k), codes[db.offsets[k]:db.offsets[k + 1]])
    return Hit(query.record, k, align_pair(query, target, scoring), evalue, bitscore, db.descriptions[k])


def _hit_from_path(query: Encoded, db: Database, codes: np.ndarray, k: int, scan_score: int, path, scoring: Scoring,
                   evalue, bitscore) -> Hit:
    """A hit from an alignment computed elsewhere (``path``: :func:`nwalign.cpu.align_codes`'s tuple)."""
    if path[0] != scan_score:  # two engines disagree: never report either
        raise NwalignError(f"internal error: query {query.record.id} against {db.ids[k]}: the alignment scores "
                           f"{path[0]}, the scan {scan_score}; please report this (use --backend cpu meanwhile)")
    target = Encoded(db.record(k), codes[db.offsets[k]:db.offsets[k + 1]])
    return Hit(query.record, k, alignment_from_path(query, target, scoring, path), evalue, bitscore,
               db.descriptions[k])


def _score_hit(query: Encoded, db: Database, k: int, score: int, scoring: Scoring, evalue, bitscore) -> Hit:
    aln = Alignment(query_id=query.record.id, target_id=db.ids[k], mode=scoring.mode, score=score,
                    query_length=len(query.codes), target_length=int(db.offsets[k + 1] - db.offsets[k]))
    return Hit(query.record, k, aln, evalue, bitscore, db.descriptions[k])


def _reported(query: Encoded, scores, db: Database, stats: KarlinAltschul | None, top: int,
              max_evalue: float | None, min_score: int | None,
              ranked: list[int] | None = None) -> list[tuple[int, float | None, float | None]]:
    """(database index, E-value, bit score) of the hits to report, from the scan's scores alone (they are
    the alignments' scores): the E-value uses the whole database's length. ``scores``: every database
    sequence's score, or with ``ranked`` (candidates already ordered by score descending, then index, as
    merged from shards) a mapping from those candidates to their scores."""
    if ranked is None:
        ranked = top_hits(scores, top, min_score).tolist()
    else:
        ranked = [k for k in ranked[:top] if min_score is None or scores[k] >= min_score]
    out = []
    for k in ranked:
        score = int(scores[k])
        evalue = stats.evalue(score, len(query.codes), db.total_length) if stats else None
        if max_evalue is not None and evalue is not None and evalue > max_evalue:
            continue
        out.append((k, evalue, stats.bit_score(score) if stats else None))
    return out


def search_query(query: Encoded, db: Database, codes: np.ndarray, scoring: Scoring, stats: KarlinAltschul | None,
                 top: int = 10, max_evalue: float | None = None, min_score: int | None = None,
                 threads: int = 1, gpu=None, aligner=None) -> list[Hit]:
    """Scan one query (on the CPU engine, or ``gpu``: a :class:`nwalign.cuda.search.ScanSearcher` or
    ``GswSearcher``), then align its reported hits (on the CPU engine, or the GPU with ``aligner``: a
    :class:`nwalign.cuda.batch.BatchAligner`; the same alignments) with statistics."""
    for _, hits in search_all([query], db, codes, scoring, stats, top, max_evalue, min_score, threads, gpu,
                              aligner=aligner):
        return hits
    return []


class Search:
    """A database search, prepared and ready to run: iterate over it for ``(query, hits)`` in query order.

    Every query is scored against every database sequence with Smith-Waterman (Gotoh's affine gaps;
    on a GPU the ``scan`` kernel after CUDASW++4.0, Schmidt et al. 2024, or ``gsw`` after Akoglu and
    Striemer 2009); the best ``top`` per query (score descending, then database order) are aligned in
    full, with Karlin-Altschul E-values and bit scores from the whole database's length (Altschul et al.
    1997's published BLOSUM62 parameters; None for scoring without published ones).

    Arguments:
        queries: records, or anything :func:`nwalign.sequences.as_records` takes (str, bytes, Biopython
            ``Seq``/``SeqRecord``, or an iterable of them), or a FASTA file as a ``pathlib.Path``.
        database: a :class:`~nwalign.database.Database`, or the path of a FASTA or ``.nwdb`` file.
        scoring: a local-mode :class:`~nwalign.scoring.Scoring`; None builds one from ``alphabet``
            (``auto``: guessed from all letters of the queries and of the database, which must agree;
            :func:`nwalign.sequences.choose_alphabet`), ``matrix``,
            ``match``/``mismatch`` and ``gap_open``/``gap_extend`` with the command line's defaults.
        top: hits reported per query (>= 1).
        max_evalue, min_score: report only hits with E-value <= max_evalue, raw score >= min_score.
        align: False reports score-only hits (no columns, coordinates or identity; faster).
        backend: ``auto`` (the GPU when CuPy sees one), ``cuda`` or ``cpu``.
        kernel: GPU scan kernel, ``scan`` or ``gsw``.
        device: GPU number.
        threads: CPU threads (0: every core).
        query_source: a name for the queries in error messages (a file name).
        workers, scheduler, client, shards: spread the scan over Dask workers (:mod:`nwalign.shards`):
            a local cluster of ``workers`` CPU-engine processes, the running cluster at ``scheduler`` (an
            address or a scheduler file), or ``client`` (a ``distributed.Client``), whose workers run
            the CPU engine, or with ``backend="cuda"`` the scan kernel on the one GPU each sees; the
            database cut into ``shards`` (default: one per worker). The hits are those of a
            one-process search. A FASTA database is written once as a temporary ``.nwdb`` in
            ``shared_dir`` (default: the system's temporary directory); a running cluster needs a
            ``.nwdb`` path, or a ``shared_dir``, that every worker can read.
        devices: the GPUs to scan on (:func:`nwalign.scaleout.resolve_devices`: ``auto``, ``all``, or
            numbers such as ``"0,1"``): two or more start one worker process per GPU, each holding a
            shard of the database; the hits are aligned here on the first of them.

    Attributes: ``queries`` (list of Record), ``database``, ``scoring``, ``stats`` (the Karlin-Altschul
    parameters or None), ``gpu`` (the GPU searcher or None).

    Raises:
        NwalignError: bad sequences or letters, queries and database of different alphabets (unless
            ``alphabet`` is given), unknown matrix, a mode other than local, max_evalue without published
            statistics, or an unusable GPU.
    """

    def __init__(self, queries, database, scoring: Scoring | None = None, *, alphabet: str = "auto",
                 matrix: str | None = None, match: int | None = None, mismatch: int | None = None,
                 gap_open: int | None = None, gap_extend: int | None = None, top: int = 10,
                 max_evalue: float | None = None, min_score: int | None = None, align: bool = True,
                 backend: str = "auto", kernel: str = "scan", device: int = 0, threads: int = 0,
                 query_source: str = "queries", workers: int = 0, scheduler: str | None = None, client=None,
                 shards: int | None = None, devices=None, shared_dir: str | None = None):
        import dataclasses
        import os
        import time

        from .database import load_database
        from .engine import choose_backend, encode_all
        from .scoring import make_scoring
        from .sequences import as_records, choose_alphabet, letter_counts, unique_ids, unique_records
        from .statistics import parameters

        started = time.perf_counter()
        if top < 1:
            raise NwalignError(f"top must be at least 1 (got {top})")
        if kernel not in ("scan", "gsw"):
            raise NwalignError(f"unknown search kernel {kernel!r} (choose from scan, gsw)")
        # An unknown name, or cuda without a GPU, is said before any input is read; auto is resolved after.
        self._spread = workers > 1 or scheduler is not None or client is not None
        chosen = choose_backend(backend) if backend != "auto" and not self._spread else None
        gpus, cluster = None, None
        worker_backend = "cpu"
        if self._spread:  # CPU-engine workers, or (backend cuda) a running cluster's GPU workers
            if backend == "cuda" and workers > 1:
                raise NwalignError("workers run the CPU engine: for GPUs use devices, or a cluster of GPU "
                                   "workers (scheduler or client) with backend 'cuda'",
                                   cli="--workers runs the CPU engine: for GPUs use --devices, or --scheduler "
                                       "with --backend cuda")
            if devices not in (None, "auto"):
                raise NwalignError("devices and workers/scheduler/client: choose one",
                                   cli="--devices and --workers/--scheduler: choose one")
            worker_backend, backend = backend if backend == "cuda" else "cpu", "cpu"  # hits aligned here on the CPU
        try:
            if backend != "cpu":  # CuPy is imported and the GPU's context made while the input is read
                from .cuda import warm_up_search

                warm_up_search(device)
            resolved = None
            if not self._spread and kernel == "scan":  # GPUs counted (and their workers started) meanwhile
                resolved, cluster = _start_devices(devices, backend, device, database,
                                                   _estimated_cells(queries, database))
            if isinstance(queries, os.PathLike):
                from .scoring import max_sequence_length
                from .sequences import read_fasta

                query_source = os.fspath(queries)
                limit = max_sequence_length(alphabet, matrix, match, mismatch, gap_open, gap_extend) \
                    if scoring is None else None
                queries = read_fasta(query_source, limit)  # an over-long record is refused while it streams
            self.queries = as_records(queries, "query")
            log.debug("search: %d queries read", len(self.queries))
            self.database = db = database if isinstance(database, Database) else \
                load_database(os.fspath(database), check_later=True)  # verified before the first hits: run()
            log.debug("search: database loaded")
            order = None
            if backend != "cpu" and kernel == "scan" and db.codes is not None and not self._spread:
                # The scan's length order, sorted while CuPy is imported (NumPy's sort releases the GIL).
                from .background import in_background
                from .cuda.search import length_order

                offsets = db.offsets
                order = in_background(lambda: length_order(offsets))
            if resolved is not None:
                from .scaleout import close_started, usable

                gpus = resolved.result()
                if gpus is not None and len(gpus) > 1 and usable(gpus, devices) is None:  # no working CuPy
                    close_started(cluster)
                    gpus = None
                if gpus is not None and len(gpus) == 1:
                    device, gpus = gpus[0], None
                elif gpus is not None:  # one worker process per GPU, starting since the beginning
                    self._spread, backend, worker_backend = True, "cuda", "cuda"
            upload = None
            if backend != "cpu" and kernel == "scan" and db.codes is not None:
                # A .nwdb's codes go to the GPU now, while the queries' alphabet is settled (used when it is
                # the file's; see below). Over several GPUs: to each, where the first queries are scanned
                # here while the workers start.
                from .background import in_background

                codes, offsets = db.codes, db.offsets
                upload = {g: in_background(lambda g=g: _device_database(codes, offsets, g, order))
                          for g in (gpus or [device])}
            if scoring is None:
                kind = choose_alphabet([(query_source, letter_counts(self.queries)), (db.source, db.alphabet_counts())],
                                       alphabet)
                scoring = make_scoring(kind, "local", matrix, match, mismatch, gap_open, gap_extend)
            elif scoring.mode != "local":
                raise NwalignError(f"search: scoring mode {scoring.mode}; a search is local (Smith-Waterman)")
            self.scoring = scoring
            self.stats = parameters(scoring.matrix_name, scoring.gap_open, scoring.gap_extend)
            if self.stats is None and max_evalue is not None:
                raise NwalignError(f"E-value filter: no published statistics for {scoring.matrix_name} with gaps "
                                   f"{scoring.gap_open}/{scoring.gap_extend}; filter by minimum score instead")
            # Distinct names for every output (SAM needs one reference per sequence); warns, after the errors.
            self.queries = unique_records(self.queries, query_source)
            if not db.ids_unique:  # a .nwdb says so in its header: no pass over 570,000 ids
                ids = unique_ids(db.ids, db.source)
                self.database = db = db if ids is db.ids else dataclasses.replace(db, ids=ids)
            self.top, self.max_evalue, self.min_score, self.align = top, max_evalue, min_score, align
            self.threads = threads or os.cpu_count() or 1
            self._encoded = encode_all(self.queries, scoring, query_source)
            self._codes = db.encode(scoring)
            log.info("search: database read and encoded in %.2f s", time.perf_counter() - started)
            use_gpu = (chosen or choose_backend(backend)) == "cuda"
            self.gpu = self._aligner = None
            #: Over several GPUs: (searcher, aligner) on each, for the queries scanned here while the workers
            #: start (see _ScaleOut).
            self.leads: list = []
            if gpus is not None:
                from .cuda.batch import BatchAligner

                if kernel == "scan" and (upload is None or db.letters == scoring.alphabet):
                    # A .nwdb's codes uploaded above; a FASTA database's uploaded now, on every GPU at once.
                    from .background import in_background
                    from .cuda.search import ScanSearcher

                    def lead_on(g):
                        return (ScanSearcher(self._codes, db.offsets, scoring, g,
                                             uploaded=upload[g].result() if upload else None),
                                BatchAligner(scoring, g) if align else None)
                    made = [in_background(lambda g=g: lead_on(g)) for g in gpus]
                    failed = [m.exception() for m in made if m.exception() is not None]
                    if failed and all(isinstance(e, NwalignError) for e in failed):
                        # too large to hold here beside a worker's copy: the workers scan every query
                        log.info("search: no scans here while the workers start (%s)", failed[0])
                    elif failed:
                        raise failed[0]
                    else:
                        self.leads = [m.result() for m in made]
                elif upload is not None:
                    for pending in upload.values():
                        pending.exception()
                if align:  # the hits of sharded databases, aligned here on the first GPU (see _ScaleOut)
                    self._aligner = self.leads[0][1] if self.leads else BatchAligner(scoring, gpus[0])
                from .cuda import require

                require(gpus[0])  # this thread's GPU again (each searcher selected its own)
            elif use_gpu:
                from .cuda.batch import BatchAligner
                from .cuda.search import GswSearcher, ScanSearcher

                t0 = time.perf_counter()
                uploaded = None
                if upload is not None and db.letters == scoring.alphabet:
                    uploaded = upload[device].result()
                elif upload is not None:  # other codes: wait for that copy, so that two are never on the GPU
                    upload[device].exception()
                self.gpu = GswSearcher(db, scoring, device) if kernel == "gsw" else \
                    ScanSearcher(self._codes, db.offsets, scoring, device, uploaded=uploaded)
                if align:  # the reported hits, one batch per query, while the GPU scans the next query
                    self._aligner = BatchAligner(scoring, device)
                log.info("search: kernel %s on the GPU (database uploaded in %.2f s); hits aligned %s", kernel,
                         time.perf_counter() - t0, "on the GPU" if align else "(none: score columns only)")
                if hasattr(self.gpu, "describe") and self._encoded:  # as for the longest query
                    log.info("search: %s", self.gpu.describe(max(int(q.codes.size) for q in self._encoded)))
            log.info("search: %d queries x %d database sequences (%d residues), %s, %d threads", len(self.queries),
                     db.count, db.total_length, scoring.matrix_name, self.threads)
            self._scaleout = None
            if self._spread:
                self._scaleout = _ScaleOut(database, db, workers, scheduler, client, shards, cluster, shared_dir,
                                           worker_backend)
        except BaseException:  # the GPU workers started above must not outlive a failed set-up
            if cluster is not None:
                from .scaleout import close_started

                close_started(cluster)
            raise


    def run(self, progress=None):
        """Yield ``(query, hits)`` per query, in query order: ``query`` a Record, ``hits`` a list of
        :class:`Hit` (score descending, then database order). ``progress(cells)`` is called after each
        query's scan with its DP cells (query length x the database's residues).

        Raises:
            nwalign.errors.WorkerLost: (spread over workers) a task kept killing its workers.
        """
        if self._scaleout is not None:
            yield from self._scaleout.run(self, progress)
            return
        for q, hits in search_all(self._encoded, self.database, self._codes, self.scoring, self.stats, self.top,
                                  self.max_evalue, self.min_score, self.threads, self.gpu, progress, self.align,
                                  self._aligner):
            self.database.verify()  # a checksum left running by the load (the first scans ran meanwhile)
            log.debug("search: query %s done", q.record.id)
            yield q.record, hits

    @property
    def tasks(self) -> tuple[int, int] | None:
        """(tasks done, tasks in all) of a search spread over workers once its rounds are planned (after the
        queries scanned here while GPU workers start), else None."""
        out = getattr(self, "_scaleout", None)
        return (out.done, out.total) if out is not None and out.total else None

    def __iter__(self):
        return self.run()


def rounds(queries: int, workers: int, shards: int, batch: int = 64, smallest: int = 8) -> list[tuple[int, int]]:
    """(start, stop) of each round of a search over Dask workers: ``batch`` queries, and where a round's
    tasks are fewer than the workers (``shards`` < ``workers``: rounds run side by side on different
    workers) at most a third of a worker's share of the queries left, down to ``smallest``, so that the
    last rounds finish close together."""
    out, lo = [], 0
    while lo < queries:
        size = batch
        if shards < workers:
            size = min(batch, max(smallest, -(-(queries - lo) // (3 * workers))))
        out.append((lo, min(queries, lo + size)))
        lo += size
    return out


def _estimated_cells(queries, database) -> int | None:
    """An upper estimate of a search's DP cells before its input is read (query residues x database
    residues, from the files' sizes: :func:`nwalign.sequences.residues_bound`), or None where either is
    unknown (standard input, records given in Python)."""
    import os

    from .sequences import residues_bound

    if not isinstance(queries, os.PathLike):
        return None
    found = residues_bound(os.fspath(queries))
    if isinstance(database, Database):
        others = database.total_length
    elif isinstance(database, (str, os.PathLike)):
        others = residues_bound(os.fspath(database))
    else:
        others = None
    return None if found is None or others is None else found * others


def _start_devices(devices, backend: str, device: int, database, cells: int | None = None):
    """Futures of (1) the GPUs a search spreads over (:func:`nwalign.scaleout.resolve_devices`, which
    asks the CUDA driver how many there are; ``devices`` auto keeps a search of fewer than
    :data:`nwalign.scaleout.AUTO_MIN_SEARCH_CELLS` estimated ``cells`` in one process) and (2) for two or
    more, their worker processes started (:func:`_start_gpu_workers`; else None), both in a background
    thread from the search's first step: the workers' start-up (processes, CuPy, contexts, kernels, the
    database uploaded) overlaps the reading of the input. An error of the first is raised where it is
    asked for."""
    import os
    from concurrent.futures import Future

    from .background import in_background
    from .scaleout import AUTO_MIN_SEARCH_CELLS, resolve_devices

    path = os.fspath(database) if isinstance(database, (str, os.PathLike)) else None
    if path is not None and (path == "-" or not os.path.isfile(path)):
        path = None
    resolved: Future = Future()

    def start():
        try:
            gpus = resolve_devices(devices, backend, device, cells, AUTO_MIN_SEARCH_CELLS)
        except BaseException as exc:
            resolved.set_exception(exc)
            return None
        resolved.set_result(gpus)
        return _start_gpu_workers(gpus, path) if gpus is not None and len(gpus) > 1 else None

    return resolved, in_background(start)


def _start_gpu_workers(gpus: list[int], path: str | None):
    """(client, cluster, fits): one Dask worker per GPU of ``gpus``, each warmed up and, where ``path`` is
    a .nwdb, holding the whole database on its GPU; ``fits``: whether it fitted on every GPU (None: no
    database given to upload)."""
    from .scaleout import client_for
    from .shards import warm_gpu_worker

    client, cluster = client_for(devices=gpus, gpu_tasks=_ScaleOut.GPU_TASKS)  # warmed below, with the upload
    try:
        answers = client.run(warm_gpu_worker, path)
    except BaseException:
        client.close()
        cluster.close()
        raise
    return client, cluster, (all(answers.values()) if path is not None else None)


def _workers_holding(started, written, path: str):
    """A Future of (client, cluster, fits) as :func:`_start_gpu_workers` gives it: the GPU workers of
    ``started`` once the temporary .nwdb ``path`` (of a FASTA database, ``written`` in the background) is
    written and each worker holds it on its GPU (:func:`nwalign.shards.preload_database`; ``fits``: on
    every one). Until then this process scans the first queries (:class:`_ScaleOut`); a failure here
    leaves every query to it, as workers that failed to start do."""
    from .background import in_background

    def ready():
        client, cluster, _ = started.result()
        try:
            from .shards import preload_database

            written.result()
            return client, cluster, all(client.run(preload_database, path).values())
        except BaseException:
            client.close()
            cluster.close()
            raise
    return in_background(ready)


def _device_database(codes, offsets, device, order=None):
    """The .nwdb's codes on the GPU in the scan's order (``order``: a background :func:`length_order`)."""
    from .cuda.search import DeviceDatabase

    return DeviceDatabase(codes, offsets, device, None if order is None else order.result())


class _ScaleOut(Owned):
    """A search's scan spread over Dask workers (see :mod:`nwalign.shards`); the hits are aligned here.

    GPU workers started in the background by :class:`Search` (``cluster``, a Future) are joined when the
    search runs: until they are ready, this process scans the first queries itself on every one of their
    GPUs (``job.leads``: the one-process path on each) and the workers take the rest."""

    BATCH = 64  # queries per round of shard tasks: output streams, memory stays bounded
    IN_FLIGHT = 3  # rounds submitted: the workers scan the next ones while this one is aligned and written
    MIN_BATCH = 8  # the smallest round: the last rounds shrink so that no worker waits long for another
    # Rounds a GPU worker scans at a time (each thread its own searcher over the one upload): its GPU
    # scans on while one round's last hits are aligned and sent back and the next round starts.
    GPU_TASKS = 2

    def __init__(self, database, db: Database, workers: int, scheduler, client, shards, cluster=None, shared_dir=None,
                 backend: str = "cpu"):
        import os
        import tempfile

        from .scaleout import check_gpus, client_for, worker_gpus

        path = os.fspath(database) if isinstance(database, (str, os.PathLike)) else None
        self.tmp = None
        self.client = self.cluster = None
        self._started, self._shards = cluster, shards
        self.done, self.total = 0, None  # tasks gathered, of how many (once the rounds are planned)
        try:
            if path is None or db.codes is None:  # FASTA or records: one .nwdb the workers map
                if scheduler is not None and shared_dir is None:
                    raise NwalignError("a running cluster's workers need a .nwdb path they can all read "
                                       "(nwalign makedb, or shared_dir)", cli="--scheduler needs a .nwdb database "
                                       "that every worker can read (nwalign makedb), or --shared-dir")
                if shared_dir is not None and not os.path.isdir(shared_dir):
                    raise NwalignError(f"shared_dir {shared_dir}: no such directory",
                                       cli=f"--shared-dir {shared_dir}: no such directory")
                from .database import write_database

                self.tmp = tempfile.mkdtemp(prefix="nwalign-", dir=shared_dir)
                path = os.path.join(self.tmp, "database.nwdb")
                if cluster is not None:  # GPU workers starting: written meanwhile, while the first queries scan here
                    from .background import in_background

                    written = in_background(lambda: write_database(db, path))
                    self._started = _workers_holding(cluster, written, os.path.abspath(path))
                else:
                    write_database(db, path)
            self.path = os.path.abspath(path)
            self.backend = backend
            if cluster is None:
                self.client, self.cluster = (client, None) if client is not None else client_for(workers, scheduler)
                self.own_client = client is None
                gpus = worker_gpus(self.client) if backend == "cuda" else {}
                if backend == "cuda":
                    check_gpus(gpus)  # a running cluster: one GPU per worker, no two on the same GPU
                self._settle(None, gpus)
        except BaseException:
            self.close()
            raise

    def _settle(self, fits, gpus: dict) -> None:
        """The workers counted and the shards chosen: query batches against the whole database where it fits
        on every worker (the work balances itself, and each scan runs the whole database: fuller launches),
        else one shard per worker. ``fits``: the GPU workers' answers to :func:`preload_database` (None: ask
        them now)."""
        from .shards import preload_database

        if self.backend == "cuda" and fits is None and self._shards in (None, 1):
            fits = all(self.client.run(preload_database, self.path).values())
        found = self.client.scheduler_info()["workers"]
        workers = self.workers = len(found)
        self.slots = max(workers, sum(w.get("nthreads", 1) for w in found.values()))  # tasks at a time
        log.debug("search: %d Dask workers ready", workers)
        self.shards = self._shards or (1 if fits is not False else max(1, workers))
        log.info("search: %s on %d Dask workers (%s engine)", "query batches against the whole database"
                 if self.shards == 1 else f"{self.shards} shards", workers, self.backend)
        for name, (_, gpu) in sorted(gpus.items()):
            log.info("search: worker %s: %s", name, gpu)

    def _join(self) -> None:
        """Wait for the GPU workers started in the background (and close them on an error)."""
        from .scaleout import worker_gpus

        started, self._started = self._started, None
        self.client, self.cluster, fits = started.result()
        self._settle(fits, worker_gpus(self.client) if log.isEnabledFor(logging.INFO) else {})

    def _lead(self, job: Search, progress):
        """Queries scanned here, on every GPU of the workers at once (``job.leads``: the one-process path on
        each, :class:`nwalign.spread.Lead`'s thread per GPU taking the next queries), while the workers
        start; yields (query, hits) in query order and leaves in ``self.led`` how many (a prefix of the
        queries)."""
        import threading

        from .spread import Lead, release_gpu_memory

        self.led = 0
        if not job.leads or self._started is None:
            return
        db = job.database

        def scan_here(queries, lead):
            import cupy

            searcher, aligner = lead
            cupy.cuda.Device(searcher.device).use()
            yield from search_all(queries, db, job._codes, job.scoring, job.stats, job.top, job.max_evalue,
                                  job.min_score, job.threads, searcher, None, job.align, aligner)

        lead = Lead(self._started, iter(job._encoded), threading.Lock(), scan_here, job.leads, "search", "queries")
        for q, hits in lead.results():
            db.verify()
            if progress:
                progress(len(q.codes) * db.total_length)
            yield q.record, hits
        self.led = lead.taken
        devices = [searcher.device for searcher, _ in job.leads]
        job.leads = []  # their copies of the database leave the GPUs for the workers'
        release_gpu_memory(devices)

    def run(self, job: Search, progress):
        from collections import deque

        from .shards import gather_shards, submit_shards

        db = job.database
        try:
            yield from self._lead(job, progress)
            todo = job._encoded[self.led:]
            if not todo:  # every query scanned here (the workers are closed below, once started)
                return
            if self._started is not None:
                self._join()
            batches = [todo[lo:hi] for lo, hi in rounds(len(todo), self.slots, self.shards, self.BATCH,
                                                        self.MIN_BATCH)]
            self.total = len(batches) * self.shards  # a task per round and shard
            # Enough tasks submitted to keep every worker thread busy and one more waiting on each worker
            # (a round: `shards` tasks).
            in_flight = max(self.IN_FLIGHT, -(-(self.slots + self.workers + 1) // self.shards))
            with ThreadPoolExecutor(max_workers=max(1, job.threads)) as pool:
                flying: deque = deque()
                first = True
                for k in range(len(batches)):
                    while len(flying) < in_flight and k + len(flying) < len(batches):
                        batch = batches[k + len(flying)]
                        flying.append(submit_shards(self.client, self.path, [q.codes for q in batch], job.scoring,
                                                    job.top, self.shards, backend=self.backend, align=job.align))
                    batch = batches[k]
                    found = gather_shards(self.client, flying.popleft(), len(batch), job.top)
                    self.done += self.shards
                    log.debug("search: round %d of %d gathered (%d queries)", k + 1, len(batches), len(batch))
                    if first:
                        db.verify()
                        first = False
                    collected = []
                    for q, (idx, sc, *aligned) in zip(batch, found):
                        if progress:
                            progress(len(q.codes) * db.total_length)
                        scores = dict(zip(idx.tolist(), sc.tolist()))
                        reported = _reported(q, scores, db, job.stats, job.top, job.max_evalue, job.min_score,
                                             idx.tolist())
                        if aligned:  # aligned by the worker (GPU workers, one shard)
                            paths = dict(zip(idx.tolist(), aligned[0]))
                            hits = [_hit_from_path(q, db, job._codes, k, scores[k], paths[k], job.scoring, ev, bits)
                                    for k, ev, bits in reported]
                            collected.append((q, lambda hits=hits: hits))
                            continue
                        collected.append((q, _collect(q, reported, scores, db, job._codes, job.scoring, job.align,
                                                      job._aligner, pool)))
                    for q, collect in collected:
                        yield q.record, collect()
                    log.debug("search: round %d written", k + 1)
        finally:
            self.close()



def search(queries, database, scoring: Scoring | None = None, **options) -> Search:
    """Search ``queries`` against ``database`` (see :class:`Search` for the arguments); iterate over the
    result for ``(query, hits)``.

    >>> from nwalign import search
    >>> db = ["MKTAYIAKQRQISFVKSHFSRQ", "GGGGSGGGGS", "MKTAYIAKQRQ"]
    >>> for query, hits in search("KTAYIAKQRQISF", db, top=2, backend="cpu"):
    ...     for hit in hits:
    ...         print(query.id, hit.aln.target_id, hit.aln.score, hit.aln.cigar())
    query1 seq1 63 13=
    query1 seq3 49 10=

    Raises:
        NwalignError: as :class:`Search`.
    """
    if not isinstance(database, Database) and not isinstance(database, (str, bytes)) and \
            not hasattr(database, "__fspath__"):
        database = Database.from_records(database, "database")
    elif isinstance(database, bytes):
        database = Database.from_records(database, "database")
    return Search(queries, database, scoring, **options)


def search_all(queries: list[Encoded], db: Database, codes: np.ndarray, scoring: Scoring,
               stats: KarlinAltschul | None, top: int = 10, max_evalue: float | None = None,
               min_score: int | None = None, threads: int = 1, gpu=None, progress=None, align: bool = True,
               aligner=None):
    """Search every query; yields (query, hits) in query order.

    With ``gpu``, the next query's scan is queued on the GPU before this query's scores are read back
    (a searcher with ``submit_query``), and the reported hits of one query are aligned while the GPU scans the next: on the
    GPU by ``aligner`` (a :class:`nwalign.cuda.batch.BatchAligner`, all hits of a query in one launch), else
    on the CPU engine by ``threads`` threads (the engine releases the GIL). ``align=False``: the hits carry
    score-only alignments (enough for :data:`SCORE_COLUMNS`). ``progress(cells)`` is called after
    each scan with its DP cells (query length x the database's residues).
    """
    from collections import deque

    if gpu is not None and hasattr(gpu, "submit_query"):  # queries in flight: the GPU scans the next ones
        submit, result, depth = gpu.submit_query, gpu.result, gpu.slots - 1  # while the host takes top hits
    elif gpu is not None:
        submit, result, depth = gpu.score_query, (lambda scores: scores), 0
    else:
        submit, result, depth = (lambda q: cpu_scan(q.codes, codes, db.offsets, scoring, threads)), \
            (lambda scores: scores), 0
    keep = 1 if gpu is not None else 0  # queries whose hits are still being aligned when the next one starts
    pending = iter(queries)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        scanning: deque = deque()
        aligning: deque = deque()

        def fill():  # queries in flight up to depth + 1
            while len(scanning) <= depth:
                q = next(pending, None)
                if q is None:
                    return
                scanning.append((q, submit(q)))

        fill()
        while scanning:
            q, ticket = scanning.popleft()
            scores = result(ticket)
            log.debug("search: scan of %s done", q.record.id)
            if depth:
                fill()  # the freed slot scans the next query while this one's hits are chosen (the queries
                # in flight share the GPU's streams: the other one is often nearly done by now)
            if progress:
                progress(len(q.codes) * db.total_length)
            reported = _reported(q, scores, db, stats, top, max_evalue, min_score)
            aligning.append((q, _collect(q, reported, scores, db, codes, scoring, align, aligner, pool)))
            if not depth:
                fill()
            while len(aligning) > keep:
                q0, collect = aligning.popleft()
                yield q0, collect()
        while aligning:
            q0, collect = aligning.popleft()
            yield q0, collect()


def _collect(q: Encoded, reported, scores, db: Database, codes: np.ndarray, scoring: Scoring, align: bool, aligner,
             pool):
    """Start the reported hits' alignments (one GPU batch, or CPU threads) and return a callable that
    waits for them and gives the hits in report order."""
    if not align:
        hits = [_score_hit(q, db, k, int(scores[k]), scoring, ev, bits) for k, ev, bits in reported]
        return lambda: hits
    if aligner is not None:
        batch = aligner.submit([(q.codes, codes[db.offsets[k]:db.offsets[k + 1]]) for k, _, _ in reported])
        return lambda: [_hit_from_path(q, db, codes, k, int(scores[k]), path, scoring, ev, bits)
                        for (k, ev, bits), path in zip(reported, batch.result())]
    futures = [pool.submit(_hit, q, db, codes, k, scoring, ev, bits) for k, ev, bits in reported]
    return lambda: [f.result() for f in futures]


def field(hit: Hit, column: str) -> str:
    """One BLAST tabular field of a hit (:data:`nwalign.formats.COLUMNS`: coordinates 1-based inclusive,
    pident a percentage)."""
    return column_field(hit.aln, column, hit)
