"""Database search: every query against every database sequence with Smith-Waterman, top hits per
query, then full alignments of the reported hits only, with Karlin-Altschul E-values.

The database is one block of residues plus offsets (from FASTA, or memory-mapped from a ``.nwdb``
file written by ``nwalign makedb``), encoded once for all queries. The one-process pipeline is
:mod:`nwalign.jobs.search.pipeline`; over several GPUs or Dask workers, :mod:`nwalign.jobs.search.scaleout`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time

from nwalign import names
from nwalign.background import in_background
from nwalign.backends.cpu.streamed import ChunkedScan, streams as cpu_streams
from nwalign.io.database import Database, load_database
from nwalign.backends.engine import choose_backend, encode_all
from nwalign.errors import NwalignError
from nwalign.plan.prepare import ScoringRequest, check_spread, read_side
from nwalign.parallel.cluster import usable
from nwalign.scoring.schemes import Scoring
from nwalign.jobs.search.pipeline import search_all
from nwalign.jobs.search.scaleout import ScaleOut, count_devices, device_database, estimated_cells
from nwalign.io.sequences import unique_ids, unique_records
from nwalign.results.statistics import statistics_for
from nwalign.results.strands import merge_strands, searched_strands, stranded_queries

log = logging.getLogger("nwalign")

# BLAST's 12 columns, --format json's fields, every column, those known from the scan alone (nwalign.names).
BLAST_COLUMNS, JSON_COLUMNS = names.SEARCH_BLAST_COLUMNS, names.SEARCH_JSON_COLUMNS
COLUMNS, SCORE_COLUMNS = names.SEARCH_COLUMNS, names.SEARCH_SCORE_COLUMNS



class Search:
    """A database search, prepared and ready to run: iterate over it for ``(query, hits)`` in query order.

    Every query is scored against every database sequence with Smith-Waterman (Gotoh's affine gaps;
    on a GPU the ``scan`` kernel after CUDASW++4.0, Schmidt et al. 2024, or ``gsw`` after Akoglu and
    Striemer 2009); the best ``top`` per query (score descending, then database order) are aligned in
    full, with Karlin-Altschul E-values and bit scores from the whole database's length (Altschul et al.
    1997's published BLOSUM62 parameters; None for scoring without published ones).

    Arguments:
        queries: records, or anything :func:`nwalign.io.sequences.as_records` takes (str, bytes, Biopython
            ``Seq``/``SeqRecord``, or an iterable of them), or a FASTA file as a ``pathlib.Path``.
        database: a :class:`~nwalign.io.database.Database`, or the path of a FASTA or ``.nwdb`` file.
        scoring: a local-mode :class:`~nwalign.scoring.schemes.Scoring`; None builds one from ``alphabet``
            (``auto``: guessed from all letters of the queries and of the database, which must agree;
            :func:`nwalign.io.sequences.choose_alphabet`), ``matrix``,
            ``match``/``mismatch`` and ``gap_open``/``gap_extend`` with the command line's defaults.
        top: hits reported per query (>= 1).
        max_evalue, min_score: report only hits with E-value <= max_evalue, raw score >= min_score.
        align: False reports score-only hits (no columns, coordinates or identity; faster).
        backend: ``auto`` (the GPU when CuPy sees one), ``cuda`` or ``cpu``.
        kernel: GPU scan kernel, ``scan`` or ``gsw``.
        device: GPU number.
        threads: CPU threads (0: every core).
        query_source: a name for the queries in error messages (a file name).
        workers, scheduler, client, shards: spread the scan over Dask workers (:mod:`nwalign.jobs.search.shards`):
            a local cluster of ``workers`` CPU-engine processes, the running cluster at ``scheduler`` (an
            address or a scheduler file), or ``client`` (a ``distributed.Client``), whose workers run
            the CPU engine, or with ``backend="cuda"`` the scan kernel on the one GPU each sees; the
            database cut into ``shards`` (default: one per worker). The hits are those of a
            one-process search. A FASTA database is written once as a temporary ``.nwdb`` in
            ``shared_dir`` (default: the system's temporary directory); a running cluster needs a
            ``.nwdb`` path, or a ``shared_dir``, that every worker can read.
        gpu_memory: the GPU memory the scan may use (bytes, or a size such as ``"16G"``; CuPy's
            ``CUPY_GPU_MEMORY_LIMIT`` is respected too): a database that does not fit with the scan's
            working memory is streamed through the GPU in chunks (:mod:`nwalign.backends.cuda.streamed`), as one
            whose upload runs out of memory is; the hits are the same.
        devices: the GPUs to scan on (:func:`nwalign.parallel.cluster.resolve_devices`: ``auto``, ``all``, or
            numbers such as ``"0,1"``): over two or more, the database is uploaded to each and a thread
            per GPU scans the next query and aligns its hits there
            (:class:`nwalign.parallel.devicethreads.DeviceThreads`); a database that does not fit on one GPU is
            cut into shards, one per GPU, in a worker process each.

    Attributes: ``queries`` (list of Record), ``database``, ``scoring``, ``stats`` (the Karlin-Altschul
    parameters or None), ``gpu`` (the GPU searcher or None), ``leads`` (over several GPUs: a (searcher,
    aligner) on each).

    >>> db = Database.from_records(["MKTAYIAKQRQISFVKSHFSRQ", "GGGGSGGGGS"], "db")
    >>> for query, hits in Search("KTAYIAKQRQISF", db, top=1, backend="cpu"):
    ...     print(query.id, [(h.aln.target_id, h.aln.score, f"{h.evalue:.1e}") for h in hits])
    query1 [('seq1', 63, '5.8e-08')]

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
                 shards: int | None = None, devices=None, shared_dir: str | None = None, strand: str | None = None,
                 gpu_memory: int | str | None = None):
        started = time.perf_counter()
        if top < 1:
            raise NwalignError(f"top must be at least 1 (got {top})")
        if kernel not in ("scan", "gsw"):
            raise NwalignError(f"unknown search kernel {kernel!r} (choose from scan, gsw)")
        if max_evalue is not None and not max_evalue >= 0:  # NaN compares false: refused too
            raise NwalignError(f"max_evalue {max_evalue}: give an E-value >= 0",
                               cli=f"--max-evalue {max_evalue}: give an E-value >= 0")
        # An unknown name, or cuda without a GPU, is said before any input is read; auto is resolved after.
        self._spread = check_spread(workers, scheduler, client, devices, backend)
        chosen = choose_backend(backend) if backend != "auto" and not self._spread else None
        worker_backend = "cpu"
        if self._spread:  # CPU-engine workers, or (backend cuda) a running cluster's GPU workers
            worker_backend, backend = backend if backend == "cuda" else "cpu", "cpu"  # hits aligned here on the CPU
        self.top, self.max_evalue, self.min_score, self.align = top, max_evalue, min_score, align
        self.gpu_memory = _memory_cap(gpu_memory)
        self.threads = threads or os.cpu_count() or 1
        if backend != "cpu":  # CuPy is imported and the GPU's context made while the input is read
            from nwalign.backends.cuda.warmup import warm_up_search

            warm_up_search(device)
        resolved = None
        if not self._spread and kernel == "scan":  # GPUs counted meanwhile
            resolved = count_devices(devices, backend, device, estimated_cells(queries, database))
        request = ScoringRequest(alphabet, matrix, match, mismatch, gap_open, gap_extend)
        # an over-long record is refused while it streams
        self.queries, query_source = read_side(queries, query_source,
                                               request.limit() if scoring is None else None, "query")
        log.debug("search: %d queries read", len(self.queries))
        self.database = db = database if isinstance(database, Database) else \
            load_database(os.fspath(database), check_later=True)  # verified before the first hits: run()
        log.debug("search: database loaded")
        on_scan = backend != "cpu" and kernel == "scan" and db.codes is not None
        # (not where the memory is capped: a streamed database is sorted chunk by chunk)
        order = self._length_order() if on_scan and not self._spread and not self._capped() else None
        gpus = None
        if resolved is not None:
            device, gpus = self._settle_devices(resolved, devices, device)
            if gpus is not None:
                backend = "cuda"
        # A .nwdb's codes go to the GPU now, while the queries' alphabet is settled (used when it is the
        # file's); over several GPUs, to each of them at once.
        # (not where the GPU memory is capped: the scan may stream it instead, decided once CuPy runs)
        upload = self._upload(gpus or [device], order) if backend != "cpu" and on_scan and not self._capped() \
            else None
        self._prepare(scoring, request, query_source, strand)
        log.info("search: database read and encoded in %.2f s", time.perf_counter() - started)
        self.gpu = self._aligner = None
        self.leads: list = []
        if gpus is not None:
            self._lead_on(gpus, upload)
        elif (chosen or choose_backend(backend)) == "cuda":
            self._on_gpu(kernel, device, upload)
        elif not self._spread and cpu_streams(db.total_length):  # the CPU engine, chunk by chunk
            self.gpu = ChunkedScan(self._codes, db.offsets, self.scoring, self.threads)
        log.info("search: %d queries x %d database sequences (%d residues), %s, %d threads", len(self.queries),
                 db.count, db.total_length, self.scoring.matrix_name, self.threads)
        self._scaleout = None
        if self._spread:
            self._scaleout = ScaleOut(database, db, workers, scheduler, client, shards, shared_dir, worker_backend)

    def _length_order(self):
        """The scan's length order of the database, sorted in the background while CuPy is imported
        (NumPy's sort releases the GIL)."""
        from nwalign.backends.cuda.devicedb import length_order

        offsets = self.database.offsets
        return in_background(lambda: length_order(offsets))

    @staticmethod
    def _settle_devices(resolved, devices, device: int) -> tuple[int, list[int] | None]:
        """(device, gpus) once the GPUs counted in the background are known: two or more GPUs without a
        working CuPy give one GPU (or the CPU engine)."""
        gpus = resolved.result()
        if gpus is not None and len(gpus) > 1 and usable(gpus, devices) is None:  # no working CuPy
            gpus = None
        if gpus is not None and len(gpus) == 1:
            return gpus[0], None
        return device, gpus

    def _upload(self, gpus: list[int], order, codes=None) -> dict:
        """Futures of the database's codes (``codes``, default the .nwdb's) on each of ``gpus``
        (:class:`nwalign.backends.cuda.devicedb.DeviceDatabase`): uploaded to the first, copied from there to the
        others."""
        codes, offsets = self.database.codes if codes is None else codes, self.database.offsets
        first = in_background(lambda: device_database(codes, offsets, gpus[0], order))
        # the other GPUs copy the first one's (GPU to GPU) instead of each reading the host's memory
        return {g: first if g == gpus[0] else in_background(lambda g=g: first.result().replica(g)) for g in gpus}

    def _prepare(self, scoring: Scoring | None, request: ScoringRequest, query_source: str,
                 strand: str | None) -> None:
        """The scoring (from every letter of the queries and of the database), its statistics, distinct
        ids, the queries encoded (on each strand searched) and the database."""
        db = self.database
        if scoring is None:
            scoring = request.make("local", [(query_source, self.queries)], [(db.source, db.alphabet_counts())],
                                   search=True)
        elif scoring.mode != "local":
            raise NwalignError(f"search: scoring mode {scoring.mode}; a search is local (Smith-Waterman)")
        self.scoring = scoring
        self.stats = statistics_for(scoring, self.max_evalue)
        # Distinct names for every output (SAM needs one reference per sequence); warns, after the errors.
        self.queries = unique_records(self.queries, query_source)
        if not db.ids_unique:  # a .nwdb says so in its header: no pass over 570,000 ids
            ids = unique_ids(db.ids, db.source)
            self.database = db = db if ids is db.ids else dataclasses.replace(db, ids=ids)
        self._encoded = encode_all(self.queries, scoring, query_source)
        self.strands = searched_strands(strand, scoring.alphabet)
        if self.strands is not None:
            self._encoded = stranded_queries(self._encoded, scoring, self.strands, query_source)
            log.info("search: strands %s", " and ".join(self.strands))
        self._codes = db.encode(scoring)

    def _lead_on(self, gpus: list[int], upload) -> None:
        """Over several GPUs: a searcher and aligner on each (``leads``; a thread each scans the next
        queries, :meth:`_run_on_gpus`): the whole database on each GPU (uploaded to the first, copied to
        the others), or streamed through each in chunks where it does not fit the GPU memory the search
        may use there."""
        from nwalign.backends.cuda.batch import BatchAligner
        from nwalign.backends.cuda.device import require

        db, scoring = self.database, self.scoring
        if upload is not None and db.letters != scoring.alphabet:  # other codes than the scoring's: those
            for pending in upload.values():  # copies leave the GPUs before the scoring's come
                pending.exception()
            upload.clear()
            upload = None
        if upload is None and not self._capped():  # a FASTA database's codes, or re-encoded ones
            upload = self._upload(gpus, None, self._codes)

        def lead_on(g):
            searcher = self._streamed(g, None) if self._capped() else None
            return (searcher or self._resident("scan", g, upload),
                    BatchAligner(scoring, g) if self.align else None)
        made = [in_background(lambda g=g: lead_on(g)) for g in gpus]
        for m in made:
            if m.exception() is not None:
                raise m.exception()
        self.leads = [m.result() for m in made]
        self._aligner = self.leads[0][1]
        require(gpus[0])  # this thread's GPU again (each searcher selected its own)

    def _on_gpu(self, kernel: str, device: int, upload) -> None:
        """One GPU: the scan's searcher (over the uploaded .nwdb where its codes are the scoring's) and
        the aligner of the reported hits."""
        from nwalign.backends.cuda.batch import BatchAligner

        t0 = time.perf_counter()
        self.gpu = self._streamed(device, None) if kernel == "scan" and self._capped() else None
        if self.gpu is None:
            self.gpu = self._resident(kernel, device, upload)
        if self.align:  # the reported hits, one batch per query, while the GPU scans the next query
            self._aligner = BatchAligner(self.scoring, device)
        log.info("search: kernel %s on the GPU (database %s in %.2f s); hits aligned %s", kernel,
                 "planned" if self.streamed else "uploaded", time.perf_counter() - t0,
                 "on the GPU" if self.align else "(none: score columns only)")
        if hasattr(self.gpu, "describe") and self._encoded:  # as for the longest query
            log.info("search: %s", self.gpu.describe(max(int(q.codes.size) for q in self._encoded)))

    @property
    def streamed(self) -> bool:
        """Whether the database is scanned in chunks: streamed through the GPU (:mod:`nwalign.backends.cuda.streamed`)
        or held a chunk at a time by the CPU engine (:mod:`nwalign.backends.cpu.streamed`)."""
        if isinstance(self.gpu, ChunkedScan):
            return True
        from nwalign.backends.cuda.streamed import StreamedScan

        return isinstance(self.gpu, StreamedScan)

    def _capped(self) -> bool:
        from nwalign.backends.cuda.streamed import env_limit

        return self.gpu_memory is not None or env_limit()

    def _streamed(self, device: int, failed):
        """A :class:`nwalign.backends.cuda.streamed.StreamedScan` where the resident database would exceed the GPU
        memory the search may use (or its upload ``failed``, an error: out of memory), else None."""
        from nwalign.backends.cuda.device import require
        from nwalign.backends.cuda.streamed import StreamedScan, budget_of, long_queries, resident_bytes

        db = self.database
        budget, source = budget_of(require(device), self.gpu_memory)
        long = long_queries(len(q.codes) for q in self._encoded)
        need = resident_bytes(db.total_length, db.count, long)
        if failed is None and need <= budget:
            log.info("search: the database is resident on GPU %d (about %.2f of %.2f GiB, %s)", device, need / 2**30,
                     budget / 2**30, source)
            return None
        if failed is not None:
            log.info("search: the database does not fit on GPU %d (%s)", device, failed)
        return StreamedScan(self._codes, db.offsets, self.scoring, device, budget, long)

    def _resident(self, kernel: str, device: int, upload):
        """The GPU searcher over the whole database on ``device`` (the uploaded .nwdb where its codes are
        the scoring's); streamed after all where the upload runs out of memory."""
        import cupy

        from nwalign.backends.cuda.devicedb import DoesNotFit
        from nwalign.backends.cuda.search import GswSearcher, ScanSearcher

        db, scoring = self.database, self.scoring
        if kernel == "gsw":
            return GswSearcher(db, scoring, device)
        try:
            uploaded = None
            if upload and db.letters == scoring.alphabet:
                uploaded = upload[device].result()
            elif upload:  # other codes: wait for that copy, so that two are never on the GPU
                upload[device].exception()
                upload.clear()
            return ScanSearcher(self._codes, db.offsets, scoring, device, uploaded=uploaded)
        except (DoesNotFit, cupy.cuda.memory.OutOfMemoryError) as exc:
            return self._streamed(device, exc)

    def _run_streamed(self, progress):
        """The queries in batches, each batch scanned over the database chunk by chunk (each chunk crosses
        the bus once per batch), then each query's hits reported and aligned as on a resident database."""
        for lo in range(0, len(self._encoded), self.STREAM_BATCH):
            for q, hits in self._streamed_hits(self._encoded[lo:lo + self.STREAM_BATCH], self.gpu, self._aligner,
                                               progress):
                yield q.record, hits

    def _streamed_hits(self, batch, scan, aligner, progress=None):
        """(query, hits) of a batch of queries scanned by ``scan`` (a :class:`nwalign.backends.cuda.streamed.StreamedScan`),
        the hits aligned by ``aligner`` (or the CPU engine)."""
        from concurrent.futures import ThreadPoolExecutor

        from nwalign.results.hits import reported_hits
        from nwalign.jobs.search.pipeline import collect_hits

        db = self.database
        found = scan.best(batch, self.top, progress)
        db.verify()
        with ThreadPoolExecutor(max_workers=max(1, self.threads)) as pool:
            for q, (idx, sc) in zip(batch, found):
                scores = dict(zip(idx.tolist(), sc.tolist()))
                reported = reported_hits(q, scores, db, self.stats, self.top, self.max_evalue, self.min_score,
                                         idx.tolist())
                yield q, collect_hits(q, reported, scores, db, self._codes, self.scoring, self.align, aligner, pool)()

    STREAM_BATCH = 1024  # queries scanned over each chunk before the next chunk comes in

    def run(self, progress=None):
        """Yield ``(query, hits)`` per query, in query order: ``query`` a Record, ``hits`` a list of
        :class:`Hit` (score descending, then database order). ``progress(cells)`` is called after each
        query's scan with its DP cells (query length x the database's residues).

        Raises:
            nwalign.errors.WorkerLost: (spread over workers) a task kept killing its workers.
        """
        results = self._scaleout.run(self, progress) if self._scaleout is not None else \
            self._run_on_gpus(progress) if self.leads else \
            self._run_streamed(progress) if self.streamed else self._run_here(progress)
        if self.strands is None:
            yield from results
        else:
            yield from merge_strands(results, self.strands, self.queries, self.top)

    def _run_here(self, progress):
        for q, hits in search_all(self._encoded, self.database, self._codes, self.scoring, self.stats, self.top,
                                  self.max_evalue, self.min_score, self.threads, self.gpu, progress, self.align,
                                  self._aligner):
            self.database.verify()  # a checksum left running by the load (the first scans ran meanwhile)
            log.debug("search: query %s done", q.record.id)
            yield q.record, hits

    QUERIES_AHEAD_PER_GPU = 64  # scanned ahead of the query written, per GPU: bounded memory

    def _run_on_gpus(self, progress):
        """Every GPU of ``leads`` scanning in this process, a thread each taking the next query
        (:class:`nwalign.parallel.devicethreads.DeviceThreads`: a GPU that fails leaves its queries to the others);
        the one-GPU pipeline on each, or where a GPU streams the database, batches of queries; (query,
        hits) in query order."""
        from nwalign.parallel.devicethreads import DeviceThreads

        db, queries, gpus = self.database, self._encoded, len(self.leads)
        streamed = any(not hasattr(searcher, "submit_query") for searcher, _ in self.leads)

        def scan_on(tasks, lead):
            import cupy

            searcher, aligner = lead
            cupy.cuda.Device(searcher.device).use()
            if not streamed:
                yield from search_all(tasks, db, self._codes, self.scoring, self.stats, self.top, self.max_evalue,
                                      self.min_score, self.threads, searcher, None, self.align, aligner)
                return
            for batch in tasks:  # a streaming GPU scans a batch over each chunk; a resident one query by query
                yield list(self._streamed_hits(batch, searcher, aligner) if not hasattr(searcher, "submit_query")
                           else search_all(batch, db, self._codes, self.scoring, self.stats, self.top,
                                           self.max_evalue, self.min_score, self.threads, searcher, None, self.align,
                                           aligner))

        size = min(self.STREAM_BATCH, max(1, -(-len(queries) // (2 * gpus))))  # two batches a GPU at least
        tasks = iter(queries) if not streamed else (queries[lo:lo + size] for lo in range(0, len(queries), size))
        log.info("search: %d GPUs, a thread each in this process", gpus)
        threads = DeviceThreads(tasks, scan_on, self.leads, "search", "queries",
                                window=self.QUERIES_AHEAD_PER_GPU * gpus if not streamed else 2 * gpus)
        for result in threads.results():
            for q, hits in (result if streamed else [result]):
                db.verify()  # a checksum left running by the load (the first scans ran meanwhile)
                if progress:
                    progress(len(q.codes) * db.total_length)
                yield q.record, hits

    @property
    def tasks(self) -> tuple[int, int] | None:
        """(tasks done, tasks in all) of a search spread over Dask workers once its rounds are planned, else
        None."""
        out = getattr(self, "_scaleout", None)
        return (out.done, out.total) if out is not None and out.total else None

    def __iter__(self):
        return self.run()


def _memory_cap(gpu_memory) -> int | None:
    """Bytes of ``gpu_memory`` (a size such as ``"16G"``, or an int), or None."""
    from nwalign.backends.cuda.streamed import parse_size

    return None if gpu_memory is None else parse_size(str(gpu_memory))


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
