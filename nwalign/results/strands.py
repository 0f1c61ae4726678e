"""Both strands of a nucleotide search (BLAST's ``-strand``): each query is scanned as given (plus) and
as its reverse complement (minus) against the database's sequences as stored, one more query rather than
a second database, and each database sequence reports its better strand.

The merge is exact: a sequence among the best ``top`` over both strands is among the best ``top`` of the
strand it scores best on (with the same ties: score, then database order), so the two per-strand top
lists hold the combined one. On equal scores the plus strand is kept. E-values are per strand, as
blastn's (each strand's search space is the query's length times the database's).
"""

from __future__ import annotations

import dataclasses

from nwalign.backends.engine import Encoded
from nwalign.errors import NwalignError
from nwalign.scoring.schemes import NUCLEOTIDE_CODES
from nwalign.io.sequences import Record, reverse_complement

STRANDS = ("both", "plus", "minus")


def searched_strands(strand: str | None, alphabet: str) -> tuple[str, ...] | None:
    """The strands a search of ``alphabet`` (a scoring's letters) scans: ``both`` (the default for
    nucleotides) gives (plus, minus); None for protein.

    Raises:
        NwalignError: an unknown strand, or a strand named for a protein search.
    """
    nucleotide = set(alphabet.upper()) <= set(NUCLEOTIDE_CODES)
    if strand is not None and strand not in STRANDS:
        raise NwalignError(f"strand {strand!r}: choose from {', '.join(STRANDS)}",
                           cli=f"--strand {strand}: choose from {', '.join(STRANDS)}")
    if not nucleotide:
        if strand not in (None, "both", "plus"):
            raise NwalignError("strand applies to nucleotide searches; these sequences are protein",
                               cli=f"--strand {strand} applies to nucleotide searches; these sequences are protein")
        return None
    return ("plus", "minus") if strand in (None, "both") else (strand,)


def stranded_queries(encoded: list[Encoded], scoring, strands: tuple[str, ...], source: str) -> list[Encoded]:
    """Each query once per strand, in order (plus as given, minus its reverse complement, same id)."""
    out = []
    for query in encoded:
        for strand in strands:
            if strand == "plus":
                out.append(query)
            else:
                rec = query.record
                minus = Record(rec.id, rec.description, reverse_complement(rec.seq))
                out.append(Encoded(minus, scoring.encode(minus, source)))
    return out


def merge_strands(results, strands: tuple[str, ...], records: list[Record], top: int):
    """(query, hits) per query from ``results`` ((record, hits) per query and strand, in the order of
    :func:`stranded_queries`): each database sequence once, on its better strand (``aln.strand`` set),
    score descending then database order, the first ``top``."""
    results = iter(results)
    for record in records:
        best: dict = {}
        for strand in strands:
            _, hits = next(results)
            for hit in hits:
                kept = best.get(hit.db_index)
                if kept is None or hit.aln.score > kept.aln.score:
                    best[hit.db_index] = dataclasses.replace(hit, query=record,
                                                             aln=dataclasses.replace(hit.aln, strand=strand))
        yield record, sorted(best.values(), key=lambda h: (-h.aln.score, h.db_index))[:top]


def better_strands(alignments, strands: tuple[str, ...]):
    """Per pair, the better of its ``strands`` (consecutive in ``alignments``, in the order of
    :func:`stranded_queries`; the first on equal scores), its ``strand`` set."""
    alignments = iter(alignments)
    while True:
        group = []
        for strand in strands:
            try:
                group.append((next(alignments), strand))
            except StopIteration:
                if group:
                    raise RuntimeError("an alignment is missing for a strand") from None
                return
        best, strand = max(group, key=lambda pair: pair[0].score)  # the first of equal scores
        yield dataclasses.replace(best, strand=strand)
