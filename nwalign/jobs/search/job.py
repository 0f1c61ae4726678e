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

from nwalign import backends, names
from nwalign.io.database import Database, load_database
from nwalign.backends.engine import encode_all
from nwalign.errors import NwalignError
from nwalign.parallel.placement import check_spread, within_machine
from nwalign.plan.options import Placement, sort_keywords
from nwalign.plan.prepare import ScoringRequest, read_side
from nwalign.parallel.cluster import usable
from nwalign.scoring.schemes import SCORE_LIMIT, Scoring
from nwalign.jobs.search.options import SearchOptions
from nwalign.jobs.search.pipeline import search_all
from nwalign.jobs.search.scaleout import ScaleOut, count_devices, estimated_cells
from nwalign.io.sequences import unique_ids, unique_records
from nwalign.results.glocalstats import GlocalStatistics
from nwalign.results.statistics import statistics_for
from nwalign.results.strands import merge_strands, searched_strands, stranded_queries
from nwalign.sizes import gpu_memory_bytes

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
        request, placement, options: the scoring asked for (:class:`nwalign.plan.prepare.ScoringRequest`:
            ``alphabet``, ``matrix``, ``match``, ``mismatch``, ``gap_open``, ``gap_extend``), where the search
            runs (:class:`nwalign.plan.options.Placement`: ``backend``, ``device``, ``devices``, ``threads``,
            ``workers``, ``scheduler``, ``client``, ``shared_dir``) and the search's own options
            (:class:`SearchOptions`); every field may be given as a keyword of its name instead, as below.
        database: a :class:`~nwalign.io.database.Database`, or the path of a FASTA or ``.nwdb`` file.
        scoring: a local-mode :class:`~nwalign.scoring.schemes.Scoring`; None builds one from ``alphabet``
            (``auto``: guessed from all letters of the queries and of the database, which must agree;
            :func:`nwalign.io.sequences.choose_alphabet`), ``matrix``,
            ``match``/``mismatch`` and ``gap_open``/``gap_extend`` with the command line's defaults.
        top: subjects reported per query (>= 1; BLAST's max_target_seqs).
        max_evalue, min_score: report only alignments with E-value <= max_evalue (None: 10, as blastp
            and blastn, where the scoring has E-values; ``float("inf")`` for every one), raw score >=
            min_score (and >= 1: an empty alignment is never reported).
        max_hsps, min_identity, query_cover, subject_cover: the alignments reported of each subject
            (:mod:`nwalign.results.hsps`): at most ``max_hsps`` (None: every one that passes a finite
            E-value cut; the best only without one), with identity >= ``min_identity`` (a fraction)
            and query and subject coverage >= ``query_cover`` and ``subject_cover`` (percent).
        align: False reports score-only hits (no columns, coordinates or identity; faster).
        mode: ``local`` (Smith-Waterman, the default) or ``glocal`` (the whole query placed in each subject,
            its ends free: glsearch36's; one alignment a subject, E-values fitted per query to the
            database's own scores, :mod:`nwalign.results.glocalstats`).
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
    >>> for query, hits in Search("KTAYIAKQRQISF", db, top=1, max_hsps=1, backend="cpu"):
    ...     print(query.id, [(h.aln.target_id, h.aln.score, f"{h.evalue:.1e}") for h in hits])
    query1 [('seq1', 63, '5.8e-08')]

    Raises:
        NwalignError: bad sequences or letters, queries and database of different alphabets (unless
            ``alphabet`` is given), unknown matrix, a mode other than local or glocal, max_evalue without published
            statistics, or an unusable GPU; a glocal search with max_hsps above 1 or the gsw kernel.
    """

    def __init__(self, queries, database, scoring: Scoring | None = None, *, request: ScoringRequest | None = None,
                 placement: Placement | None = None, options: SearchOptions | None = None, **keywords):
        request, placement, options = sort_keywords("Search", keywords, request or ScoringRequest(),
                                                    placement or Placement(), options or SearchOptions())
        placement = within_machine(placement)
        options.check()
        started = time.perf_counter()
        backend, device, devices = placement.backend, placement.device, placement.devices
        kernel, query_source = options.kernel, options.query_source
        # An unknown name, or cuda without a GPU, is said before any input is read; auto is resolved after.
        self._spread = check_spread(placement.workers, placement.scheduler, placement.client, devices, backend)
        chosen = backends.choose(backend) if backend != "auto" and not self._spread else None
        worker_engine = backends.for_workers(backend)
        if self._spread:  # CPU-engine workers, or (backend cuda) a running cluster's GPU workers
            backend = "cpu"  # hits aligned here on the CPU
        self.options = options
        self.top, self.max_evalue, self.min_score, self.align = \
            options.top, options.max_evalue, options.least_score, options.align
        self.gpu_memory = None if options.gpu_memory is None else gpu_memory_bytes(options.gpu_memory)
        self.threads = placement.threads or os.cpu_count() or 1
        gpu = backends.may_use_gpu(backend)
        if gpu:  # CuPy is imported and the GPU's context made while the input is read
            backends.warm_up_search(device)
        resolved = None
        if not self._spread and kernel == "scan":  # GPUs counted meanwhile
            resolved = count_devices(devices, backend, device, estimated_cells(queries, database))
        # an over-long record is refused while it streams
        self.queries, query_source = read_side(queries, query_source,
                                               request.limit() if scoring is None else None, "query")
        log.debug("search: %d queries read", len(self.queries))
        self.database = db = database if isinstance(database, Database) else \
            load_database(os.fspath(database), check_later=True)  # verified before the first hits: run()
        log.debug("search: database loaded")
        # The GPU's place for the database: its length order sorted now, in the background (a one-process
        # search; a streamed database is sorted chunk by chunk), its upload started once the GPUs are known.
        on_gpus = backends.named("cuda").search_place(db, kernel, self.gpu_memory, self.threads,
                                                     sort=not self._spread) if gpu else None
        gpus = None
        if resolved is not None:
            device, gpus = self._settle_devices(resolved, devices, device)
        if on_gpus is not None:  # a .nwdb's codes go to the GPUs while the queries' alphabet is settled
            on_gpus.upload_to(gpus or [device])
        self._prepare(scoring, request, query_source, options.strand)
        self._settle_hsps(options)
        log.info("search: database read and encoded in %.2f s", time.perf_counter() - started)
        self.engine = backends.named("cuda") if gpus is not None else chosen or backends.choose(backend)
        self.leads: list = []
        if not self._spread:
            place = on_gpus if self.engine.on_gpu else self.engine.search_place(db, kernel, None, self.threads)
            self.leads = place.leads(gpus or [device], self._codes, self.scoring,
                                     [int(q.codes.size) for q in self._encoded], self.align)
        self.scanner, self._aligner = self.leads[0] if self.leads else (None, None)
        log.info("search: %d queries x %d database sequences (%d residues), %s, %d threads", len(self.queries),
                 db.count, db.total_length, self.scoring.matrix_name, self.threads)
        self._scaleout = None
        if self._spread:
            self._scaleout = ScaleOut(database, db, placement, options.shards, worker_engine)

    DEFAULT_MAX_EVALUE = 10.0  # blastp's and blastn's -evalue

    def _settle_hsps(self, options: SearchOptions) -> None:
        """The E-value cut in force (10 where E-values exist and none was given) and the rule for each
        subject's alignments; the hits are aligned where a filter needs their columns."""
        cut = options.max_evalue
        if cut is None and self.stats is not None:
            cut = self.DEFAULT_MAX_EVALUE
        rule = options.hsp_rule(cut)
        if rule.most is None and (self.stats is None or cut is None or cut == float("inf") or
                                  self.options.mode != "local"):
            rule = dataclasses.replace(rule, most=1)  # no E-value to stop at, or glocal: the best alignment only
        self.options = dataclasses.replace(options, max_evalue=cut, align=options.align or rule.filters)
        self.max_evalue, self.align, self.hsps = cut, self.options.align, rule
        log.info("search: E-value cut %s; %s of each subject", "none" if cut is None else f"{cut:g}",
                 "every alignment" if rule.most is None else f"at most {rule.most} alignment(s)")

    @property
    def _every_hsp(self) -> bool:
        return self.hsps.most != 1 or self.hsps.filters

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

    def _prepare(self, scoring: Scoring | None, request: ScoringRequest, query_source: str,
                 strand: str | None) -> None:
        """The scoring (from every letter of the queries and of the database), its statistics, distinct
        ids, the queries encoded (on each strand searched) and the database."""
        db = self.database
        if scoring is None:
            scoring = request.make(self.options.mode, [(query_source, self.queries)],
                                   [(db.source, db.alphabet_counts(), db.find_letter)], search=True)
        elif scoring.mode not in names.SEARCH_MODES:
            raise NwalignError(f"search: scoring mode {scoring.mode}; a search is local (Smith-Waterman) or glocal")
        else:
            self.options = dataclasses.replace(self.options, mode=scoring.mode)
            self.min_score = self.options.least_score
        self.scoring = scoring
        # glocal: E-values where the scoring has local statistics (not in the linear phase), fitted below
        self.stats = statistics_for(dataclasses.replace(scoring, mode="local"), self.max_evalue,
                                    say=scoring.mode == "local")
        # Distinct names for every output (SAM needs one reference per sequence); warns, after the errors.
        self.queries = unique_records(self.queries, query_source)
        if not db.ids_unique:  # a .nwdb says so in its header: no pass over 570,000 ids
            ids = unique_ids(db.ids, db.source)
            self.database = db = db if ids is db.ids else dataclasses.replace(db, ids=ids)
        self._encoded = encode_all(self.queries, scoring, query_source)
        longest = max((len(q.codes) for q in self._encoded), default=0)
        if longest and (longest + db.total_length + 1) * scoring.max_abs_score() >= SCORE_LIMIT:
            scoring.check_lengths(longest, db.longest())  # before any scan, as pair and allpairs check
        self.strands = searched_strands(strand, scoring.alphabet)
        if self.strands is not None:
            self._encoded = stranded_queries(self._encoded, scoring, self.strands, query_source)
            log.info("search: strands %s", " and ".join(self.strands))
        self._codes = db.encode(scoring)
        if scoring.mode == "glocal" and self.stats is not None:  # fitted per query to the database's scores
            self.stats = GlocalStatistics(db, self._codes, scoring, len(self.strands or (None,)), self.threads)

    @property
    def streamed(self) -> bool:
        """Whether the database is scanned in chunks (streamed through the GPU, or held a chunk at a time by
        the CPU engine)."""
        return self.scanner is not None and self.scanner.chunked

    @property
    def gpu(self):
        """The scanner on the first device (kept for callers of earlier versions: :attr:`scanner`)."""
        return self.scanner

    def _run_streamed(self, progress):
        """The queries in batches, each batch scanned over the database chunk by chunk (each chunk crosses
        the bus once per batch), then each query's hits reported and aligned as on a resident database."""
        for lo in range(0, len(self._encoded), self.STREAM_BATCH):
            for q, hits in self._streamed_hits(self._encoded[lo:lo + self.STREAM_BATCH], self.scanner, self._aligner,
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
            self._run_on_gpus(progress) if len(self.leads) > 1 else \
            self._run_streamed(progress) if self.streamed else self._run_here(progress)
        if self.strands is not None:
            results = merge_strands(results, self.strands, self.queries, self.top)
        if not self._every_hsp:
            yield from results
            return
        from nwalign.results.hsps import with_hsps

        per_strand = len(self.strands or (None,))
        encoded = {self._encoded[k].record.id: self._encoded[k:k + per_strand]
                   for k in range(0, len(self._encoded), per_strand)}
        yield from with_hsps(results, encoded, self.strands, self.database, self._codes, self.scoring, self.stats,
                             self.hsps, self.threads)

    def _run_here(self, progress):
        for q, hits in search_all(self._encoded, self.database, self._codes, self.scoring, self.stats, self.options,
                                  self.threads, self.scanner, progress, self._aligner):
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
        streamed = any(searcher.chunked for searcher, _ in self.leads)

        def scan_on(tasks, lead):
            searcher, aligner = lead
            self.engine.use(searcher.device)
            if not streamed:
                yield from search_all(tasks, db, self._codes, self.scoring, self.stats, self.options, self.threads,
                                      searcher, None, aligner)
                return
            for batch in tasks:  # a streaming GPU scans a batch over each chunk; a resident one query by query
                yield list(self._streamed_hits(batch, searcher, aligner) if searcher.chunked
                           else search_all(batch, db, self._codes, self.scoring, self.stats, self.options,
                                           self.threads, searcher, None, aligner))

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


def search(queries, database, scoring: Scoring | None = None, **options) -> Search:
    """Search ``queries`` against ``database`` (see :class:`Search` for the arguments); iterate over the
    result for ``(query, hits)``.

    >>> from nwalign import search
    >>> db = ["MKTAYIAKQRQISFVKSHFSRQ", "GGGGSGGGGS", "MKTAYIAKQRQ"]
    >>> for query, hits in search("KTAYIAKQRQISF", db, top=2, max_hsps=1, backend="cpu"):
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
