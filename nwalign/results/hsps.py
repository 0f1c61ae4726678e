"""Every local alignment of a reported subject (BLAST's HSPs, SSEARCH's alternatives) and the per-HSP
filters: identity, query and subject coverage.

A subject's alignments after its best are Waterman and Eggert's (:func:`nwalign.backends.engine.alternative_alignments`):
each the best that shares no aligned residue pair with those before it, on each strand searched, while
its E-value passes the cut (``max_evalue``) and its score ``least_score``, at most ``most`` a subject.
The best alignment of the subject's better strand is the hit the scan reported, unchanged. A subject's
rows come in score order (the strand searched first on equal scores, then the order found); subjects in
the order of their best row's score, then database order. The filters apply to each alignment; a subject
left without one is not reported.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from nwalign.backends.engine import Encoded, alternative_alignments, next_alternative_scores
from nwalign.errors import NwalignError
from nwalign.io.database import Database
from nwalign.results.hits import Hit
from nwalign.results.statistics import KarlinAltschul
from nwalign.scoring.schemes import Scoring


@dataclasses.dataclass(frozen=True)
class HspRule:
    """Which alignments of a subject are reported: at most ``most`` (None: every one that passes),
    score >= ``least_score``, E-value <= ``max_evalue`` (None: no cut), identity >= ``min_identity``
    (a fraction), query and subject coverage >= ``query_cover`` / ``subject_cover`` (percent)."""

    most: int | None = None
    least_score: int | None = 1
    max_evalue: float | None = None
    min_identity: float | None = None
    query_cover: float | None = None
    subject_cover: float | None = None

    def check(self) -> None:
        """Refuse values no filter takes.

        Raises:
            NwalignError: naming the option.
        """
        if self.most is not None and self.most < 1:
            raise NwalignError(f"max_hsps {self.most}: give at least 1", cli=f"--max-hsps {self.most}: give at least 1")
        if self.min_identity is not None and not 0.0 <= self.min_identity <= 1.0:
            raise NwalignError(f"min_identity {self.min_identity}: give a fraction between 0 and 1",
                               cli=f"--min-identity {self.min_identity}: give a fraction between 0 and 1 "
                                   "(BLAST's -perc_identity 90 is 0.9)")
        for name, value in (("query_cover", self.query_cover), ("subject_cover", self.subject_cover)):
            if value is not None and not 0.0 <= value <= 100.0:
                option = "--" + name.replace("_", "-")
                raise NwalignError(f"{name} {value}: give a percentage between 0 and 100",
                                   cli=f"{option} {value}: give a percentage between 0 and 100")

    @property
    def filters(self) -> bool:
        """Whether a filter of the alignment's columns is set (the hits must be aligned)."""
        return any(x is not None for x in (self.min_identity, self.query_cover, self.subject_cover))

    def passes(self, aln) -> bool:
        """Whether an alignment passes the identity and coverage filters (at equality too: the percentages
        are computed as ``100 * span / length``, as a user computes them)."""
        if self.min_identity is not None and aln.identity < self.min_identity:
            return False
        if self.query_cover is not None and _percent(aln.query_end - aln.query_start, aln.query_length) < \
                self.query_cover:
            return False
        return self.subject_cover is None or \
            _percent(aln.target_end - aln.target_start, aln.target_length) >= self.subject_cover


def _percent(span: int, length: int) -> float:
    return 100.0 * span / length if length else 0.0


def with_hsps(results, encoded: dict[str, list[Encoded]], strands, db: Database, codes, scoring: Scoring,
              stats: KarlinAltschul | None, rule: HspRule, threads: int = 1, ahead: int = 64):
    """(query, hits) per query from ``results`` ((query, hits): one hit a subject, its best alignment),
    each subject's alignments as :class:`Hit` rows by ``rule``. ``encoded``: each query id's encodings
    per strand (``strands``: their names, or None for protein). A query's subjects are handed to
    ``threads`` threads as soon as its hits come, and the next queries' hits are taken meanwhile (up to
    ``ahead`` queries): the alternatives are computed while the scan goes on (a GPU's, or other
    workers'); queries come out in their order."""
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        pending: deque = deque()
        for record, hits in results:
            pending.append(_QueryRows(pool, record, hits, encoded[record.id], strands, db, codes, scoring, stats,
                                      rule))
            for query in pending:
                query.spread()
            while pending and (len(pending) > ahead or pending[0].done()):
                yield pending.popleft().rows()
        while pending:
            yield pending.popleft().rows()


class _QueryRows:
    """A query's rows as they are computed on ``pool``: first the batched pass that settles the subjects
    with no alignment after their best (:func:`_settled`), then a task per other subject (:func:`_subject`),
    so that a query with many such subjects (repeats) spreads over the threads."""

    def __init__(self, pool, record, hits: list[Hit], queries: list[Encoded], strands, db: Database, codes,
                 scoring: Scoring, stats, rule):
        self.pool, self.record, self.hits = pool, record, hits
        self.args = (queries, strands, db, codes, scoring, stats, rule)
        self.settling = pool.submit(_settled, hits, *self.args)
        self.subjects: list | None = None

    def spread(self) -> None:
        """Once the batched pass is done (without waiting for it): a task for each subject it left."""
        if self.subjects is None and self.settling.done():
            alone = self.settling.result()
            self.subjects = [None if n in alone else self.pool.submit(_subject, hit, *self.args)
                             for n, hit in enumerate(self.hits)]

    def done(self) -> bool:
        self.spread()
        return self.subjects is not None and all(f is None or f.done() for f in self.subjects)

    def rows(self):
        """(query, its rows): its subjects in the order of their best row's score, then database order."""
        self.settling.result()
        self.spread()
        strands, rule = self.args[1], self.args[6]
        each = [_best_only(hit, strands, rule) if f is None else f.result() for hit, f in zip(self.hits, self.subjects)]
        kept = [rows for rows in each if rows]
        kept.sort(key=lambda rows: (-rows[0].aln.score, rows[0].db_index))
        return self.record, [hit for rows in kept for hit in rows]


def _settled(hits: list[Hit], queries: list[Encoded], strands, db: Database, codes, scoring: Scoring, stats,
             rule) -> set:
    """The positions of ``hits`` whose subject has no alignment after its best that ``rule`` keeps, on any
    strand: the first pass of every subject's alternatives, for all of the query's subjects in one call
    without the GIL (:func:`nwalign.backends.engine.next_alternative_scores`). Four GPUs' threads and the
    alternatives' threads contended for the GIL when each subject's pass was set up in Python: a
    1,500-query search took 21.7 s against 8.6 s with one alignment a subject."""
    if scoring.mode != "local" or not hits:  # a glocal subject has its one placement: _subject says so
        return set()
    most = rule.most or 1 << 30
    targets = [db.codes_of(hit.db_index, codes) for hit in hits]
    qlen = len(queries[0].codes)
    alone = set(range(len(hits)))
    for query, strand in zip(queries, strands or (None,)):
        firsts = [hit.aln if hit.aln.strand == strand and not hit.aln.score_only else None for hit in hits]
        scores = next_alternative_scores(query, targets, scoring, firsts)
        for n, (first, score) in enumerate(zip(firsts, scores.tolist())):
            if (first is not None) < most and score > 0 and _keep(score, qlen, len(targets[n]), db, stats, rule):
                alone.discard(n)
    return alone


def _best_only(hit: Hit, strands, rule) -> list[Hit]:
    """:func:`_subject`'s rows of a subject with no alignment after its best."""
    found = not hit.aln.score_only and hit.aln.strand in (strands or (None,)) and rule.passes(hit.aln)
    return _with_query_cover([hit] if found else [])


def _evalue(score: int, qlen: int, slen: int, db: Database, stats):
    return stats.evalue(score, qlen, db.total_length, db.count, slen) if stats is not None else None


def _keep(score: int, qlen: int, slen: int, db: Database, stats, rule) -> bool:
    """Whether an alignment of ``score`` is reported by ``rule`` (its score and E-value cuts)."""
    ev = _evalue(score, qlen, slen, db, stats)
    return (rule.least_score is None or score >= rule.least_score) and \
        (rule.max_evalue is None or ev is None or ev <= rule.max_evalue)


def _subject(hit: Hit, queries: list[Encoded], strands, db: Database, codes, scoring: Scoring, stats, rule) -> list[Hit]:
    """One subject's rows, best first."""
    k = hit.db_index
    target = Encoded(db.record(k), db.codes_of(k, codes))
    qlen, slen = len(queries[0].codes), len(target.codes)

    def evalue(score: int):
        return _evalue(score, qlen, slen, db, stats)

    def keep(score: int) -> bool:
        return _keep(score, qlen, slen, db, stats, rule)

    most = rule.most or 1 << 30
    found: list = []
    for query, strand in zip(queries, strands or (None,)):
        first = [hit.aln] if hit.aln.strand == strand and not hit.aln.score_only else []
        # Waterman-Eggert's alternatives are local; a glocal subject has its one placement
        more = alternative_alignments(query, target, scoring, first, keep, most) if scoring.mode == "local" else []
        found += [(a, strand) for a in first + more]
    found.sort(key=lambda pair: -pair[0].score)  # stable: the strand searched first, then the order found
    rows = []
    for aln, strand in found[:most]:
        if not rule.passes(aln):
            continue
        if aln is hit.aln:
            rows.append(hit)
            continue
        aln = dataclasses.replace(aln, strand=strand)
        rows.append(Hit(hit.query, k, aln, evalue(aln.score), stats.bit_score(aln.score) if stats else None,
                        hit.title))
    return _with_query_cover(rows)


def _with_query_cover(rows: list[Hit]) -> list[Hit]:
    """BLAST's qcovs on each row: the percentage of the query inside any of the subject's rows (the
    query's plus-strand coordinates)."""
    if not rows:
        return rows
    spans = []
    for h in rows:
        a = h.aln
        lo, hi = (a.query_length - a.query_end, a.query_length - a.query_start) if a.strand == "minus" else \
            (a.query_start, a.query_end)
        spans.append((lo, hi))
    spans.sort()
    covered, reach = 0, 0
    for lo, hi in spans:
        if hi > reach:
            covered += hi - max(lo, reach)
            reach = hi
    qlen = rows[0].aln.query_length
    cover = round(100.0 * covered / qlen) if qlen else 0
    return [dataclasses.replace(h, query_cover=cover) for h in rows]
