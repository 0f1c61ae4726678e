"""Search hits: the best scores of a scan (:func:`top_hits`), which of them to report with their
Karlin-Altschul statistics (:func:`reported_hits`), and each one as a :class:`Hit` (aligned, from an
alignment made elsewhere, or score only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nwalign.io.database import Database
from nwalign.backends.engine import Encoded, align_pair, alignment_from_path
from nwalign.errors import NwalignError
from nwalign.records.alignment import Alignment, column_stats_many
from nwalign.records.candidates import merge, top_hits  # noqa: F401  (the hits' order, shared with the engines)
from nwalign.scoring.schemes import Scoring
from nwalign.io.sequences import Record
from nwalign.results.statistics import KarlinAltschul



@dataclass
class Hit:
    query: Record
    db_index: int
    aln: Alignment
    evalue: float | None
    bitscore: float | None
    title: str = ""  # the database sequence's FASTA header line (BLAST's stitle)
    #: BLAST's qcovs: the percentage of the query inside any of this subject's reported alignments (None:
    #: this alignment's alone, one alignment a subject).
    query_cover: int | None = None


def aligned_hit(query: Encoded, db: Database, codes: np.ndarray, k: int, scoring: Scoring, evalue, bitscore) -> Hit:
    target = Encoded(db.record(k), db.codes_of(k, codes))
    return Hit(query.record, k, align_pair(query, target, scoring), evalue, bitscore, db.descriptions[k])


def hits_from_paths(query: Encoded, db: Database, codes: np.ndarray, reported, scores, paths,
                    scoring: Scoring) -> list[Hit]:
    """The hits of one query from alignments computed elsewhere (``reported``: (database index, E-value,
    bit score) as :func:`reported_hits` gives them; ``paths``: their :func:`nwalign.backends.cpu.align_codes`
    tuples, in that order), their statistics computed together (:func:`nwalign.records.alignment.column_stats_many`).

    Raises:
        NwalignError: an alignment's score is not the scan's (two engines disagree: never reported).
    """
    targets = []
    for (k, _, _), path in zip(reported, paths):
        if path[0] != int(scores[k]):
            raise NwalignError(f"internal error: query {query.record.id} against {db.ids[k]}: the alignment "
                               f"scores {path[0]}, the scan {int(scores[k])}; please report this (use --backend "
                               "cpu meanwhile)")
        targets.append(db.codes_of(k, codes))
    stats = column_stats_many(paths, query.codes, targets, scoring)
    return [Hit(query.record, k, alignment_from_path(query, Encoded(db.record(k), t), scoring, path, stats=st),
                ev, bits, db.descriptions[k])
            for (k, ev, bits), path, t, st in zip(reported, paths, targets, stats)]


def score_hit(query: Encoded, db: Database, k: int, score: int, scoring: Scoring, evalue, bitscore) -> Hit:
    aln = Alignment(query_id=query.record.id, target_id=db.ids[k], mode=scoring.mode, score=score,
                    query_length=len(query.codes), target_length=int(db.offsets[k + 1] - db.offsets[k]))
    return Hit(query.record, k, aln, evalue, bitscore, db.descriptions[k])


def reported_hits(query: Encoded, scores, db: Database, stats: KarlinAltschul | None, top: int,
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
    if stats is not None:  # glocal: the query's own fit (None: no E-values)
        stats = stats.fitted(query, scores if isinstance(scores, np.ndarray) else None)
    if not stats:
        return [(k, None, None) for k in ranked]
    index = np.asarray(ranked, dtype=np.int64)
    got = np.array([int(scores[k]) for k in ranked], dtype=np.int64)
    lengths = np.asarray(db.offsets[index + 1] - db.offsets[index], dtype=np.int64)
    evalues = stats.evalues(got, len(query.codes), db.total_length, db.count, lengths)
    bits = stats.bit_scores(got, lengths).tolist()
    return [(k, float(ev), bit) for k, ev, bit in zip(ranked, evalues.tolist(), bits)
            if max_evalue is None or ev <= max_evalue]
