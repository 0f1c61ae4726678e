"""The one-process search pipeline: queries scanned one after another (two in flight on a GPU), the
reported hits of one query aligned while the next one scans."""

from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign import backends
from nwalign.jobs.search.options import SearchOptions
from nwalign.io.database import Database
from nwalign.backends.engine import Encoded
from nwalign.results.hits import Hit, aligned_hit, hits_from_paths, reported_hits, score_hit
from nwalign.scoring.schemes import Scoring
from nwalign.results.statistics import KarlinAltschul

log = logging.getLogger("nwalign")


def search_query(query: Encoded, db: Database, codes: np.ndarray, scoring: Scoring, stats: KarlinAltschul | None,
                 top: int = 10, max_evalue: float | None = None, min_score: int | None = None,
                 threads: int = 1, scanner=None, aligner=None) -> list[Hit]:
    """Scan one query (``scanner``: a :class:`nwalign.backends.roles.Scanner`; default the CPU engine's),
    then align its reported hits (on the CPU engine, or by ``aligner``: a
    :class:`nwalign.backends.roles.HitAligner`; the same alignments) with statistics."""
    if scanner is None:
        scanner = backends.named("cpu").shard_scanner(codes, db.offsets, scoring, threads)
    options = SearchOptions(top, max_evalue, min_score)
    for _, hits in search_all([query], db, codes, scoring, stats, options, threads, scanner, aligner=aligner):
        return hits
    return []


def search_all(queries: list[Encoded], db: Database, codes: np.ndarray, scoring: Scoring,
               stats: KarlinAltschul | None, options: SearchOptions, threads: int = 1, scanner=None, progress=None,
               aligner=None):
    """Search every query with ``scanner`` (a :class:`nwalign.backends.roles.Scanner`); yields (query, hits)
    in query order.

    Up to ``scanner.slots`` queries are in flight: the next query's scan is queued before this query's
    scores are read back, and where the scan runs beside the host (``scanner.asynchronous``: a GPU's) the
    reported hits of one query are aligned while the next scans: by ``aligner`` (a
    :class:`nwalign.backends.roles.HitAligner`: all hits of a query in one launch), else on the CPU engine by
    ``threads`` threads (the engine releases the GIL). ``options``: ``top``, ``max_evalue``, ``min_score``
    and ``align`` (:class:`nwalign.jobs.search.options.SearchOptions`); ``align=False``: the hits carry
    score-only alignments (enough for :data:`SCORE_COLUMNS`). ``progress(cells)`` is called after
    each scan with its DP cells (query length x the database's residues).
    """
    # queries in flight: the GPU scans the next ones while the host takes top hits
    submit, result, depth = scanner.submit, scanner.result, scanner.slots - 1
    keep = 1 if scanner.asynchronous else 0  # queries whose hits are still being aligned when the next one starts
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
            reported = reported_hits(q, scores, db, stats, options.top, options.max_evalue, options.least_score)
            picked = {k: int(scores[k]) for k, _, _ in reported}  # not every score: 50 M sequences, 200 MB a query
            del scores
            aligning.append((q, collect_hits(q, reported, picked, db, codes, scoring, options.align, aligner, pool)))
            if not depth:
                fill()
            while len(aligning) > keep:
                q0, collect = aligning.popleft()
                yield q0, collect()
        while aligning:
            q0, collect = aligning.popleft()
            yield q0, collect()


def collect_hits(q: Encoded, reported, scores, db: Database, codes: np.ndarray, scoring: Scoring, align: bool, aligner,
             pool):
    """Start the reported hits' alignments (one GPU batch, or CPU threads) and return a callable that
    waits for them and gives the hits in report order."""
    if not align:
        hits = [score_hit(q, db, k, int(scores[k]), scoring, ev, bits) for k, ev, bits in reported]
        return lambda: hits
    if aligner is not None:
        batch = aligner.submit([(q.codes, db.codes_of(k, codes)) for k, _, _ in reported])
        return lambda: hits_from_paths(q, db, codes, reported, scores, batch.result(), scoring)
    futures = [pool.submit(aligned_hit, q, db, codes, k, scoring, ev, bits) for k, ev, bits in reported]
    return lambda: [f.result() for f in futures]
