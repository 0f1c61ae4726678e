"""The one column table of every command's output (:data:`COLUMNS`: BLAST's tabular names; what each
column needs in ``nwalign.names``), each value formatted as BLAST prints it (:func:`field`), and BLAST's long
names of the columns (:data:`FIELD_TITLES`). Coordinates are 1-based and inclusive, identity and similarity
percentages; an empty alignment (a local alignment of score 0) prints start and end as 0.
"""

from __future__ import annotations

from nwalign.names import ALIASES, COLUMN_NEEDS_ALIGNMENT
from nwalign.output.blastfmt import blast_bitscore, blast_evalue
from nwalign.records.alignment import Alignment


def _pct(x: float) -> str:
    return f"{100.0 * x:.3f}"  # BLAST's tabular pident: three decimals


def _query_cover(aln: Alignment) -> int:
    """Percent of the query in the alignment, rounded (BLAST's qcovs and qcovhsp)."""
    return round(100.0 * (aln.query_end - aln.query_start) / aln.query_length) if aln.query_length else 0


def btop(aln: Alignment) -> str:
    """BLAST's traceback operations, in the orientation of the rows shown (``qseq``/``sseq``: blastn's, the
    query's plus strand): the length of each run of identical columns, and for every other column the query
    letter then the subject letter ('-' for a gap).

    >>> from nwalign import align
    >>> btop(align("GATTACA", "GATCACA"))
    '3TC3'
    """
    q, t = aln.shown()
    columns = aln.columns.tolist()
    if aln.strand == "minus":  # the rows shown are reverse-complemented: their columns run backwards
        columns.reverse()
    out, run = [], 0
    for col, a, b in zip(columns, q, t):
        if col == 0:
            run += 1
            continue
        if run:
            out.append(str(run))
            run = 0
        out.append(a + b)
    if run:
        out.append(str(run))
    return "".join(out)


#: The one column table of every command's TSV output: BLAST's tabular names (``-outfmt 6``), ``mode``, and
#: the pair report's earlier names as :data:`ALIASES`. Each entry: (the value from an alignment and, for search, its hit; whether the
#: value needs the alignment's columns rather than the score alone: names.COLUMN_NEEDS_ALIGNMENT). Coordinates are 1-based inclusive
#: (0 for an empty alignment).
_VALUES = {
    "qseqid": lambda a, h: a.query_id,
    "sseqid": lambda a, h: a.target_id,
    "pident": lambda a, h: _pct(a.identity),
    "length": lambda a, h: a.length,
    "mismatch": lambda a, h: a.mismatch,
    "gapopen": lambda a, h: a.gap_opens,
    "qstart": lambda a, h: coordinates(a)[0],
    "qend": lambda a, h: coordinates(a)[1],
    "sstart": lambda a, h: coordinates(a)[2],
    "send": lambda a, h: coordinates(a)[3],
    "evalue": lambda a, h: "" if h is None or h.evalue is None else blast_evalue(h.evalue),
    "bitscore": lambda a, h: "" if h is None or h.bitscore is None else blast_bitscore(h.bitscore),
    "score": lambda a, h: a.score,
    "qlen": lambda a, h: a.query_length,
    "slen": lambda a, h: a.target_length,
    "nident": lambda a, h: a.nident,
    "gaps": lambda a, h: a.gaps,
    "cigar": lambda a, h: a.cigar(),
    "qseq": lambda a, h: a.shown()[0],
    "sseq": lambda a, h: a.shown()[1],
    "ppos": lambda a, h: f"{100.0 * a.similarity:.2f}",  # BLAST's: two decimals
    "qcovs": lambda a, h: h.query_cover if h is not None and h.query_cover is not None else _query_cover(a),
    "stitle": lambda a, h: ((h.title if h is not None else "") or a.target_id).replace("\t", " "),  # one TSV field
    "btop": lambda a, h: btop(a),
    "mode": lambda a, h: a.mode,
    "sstrand": lambda a, h: a.strand or "N/A",
    "qcovhsp": lambda a, h: _query_cover(a),
    "scovhsp": lambda a, h: round(100.0 * (a.target_end - a.target_start) / a.target_length) if a.target_length else 0,
    "positive": lambda a, h: a.npositive,
    "fident": lambda a, h: f"{a.identity:.3f}",
}
assert _VALUES.keys() == COLUMN_NEEDS_ALIGNMENT.keys()
COLUMNS = {name: (value, COLUMN_NEEDS_ALIGNMENT[name]) for name, value in _VALUES.items()}


def field(aln: Alignment, column: str, hit=None) -> str:
    """One TSV field of :data:`COLUMNS` (or an alias) as text; ``hit``: a search hit (E-value, bit score,
    title), None elsewhere."""
    return str(COLUMNS[ALIASES.get(column, column)][0](aln, hit))


def hit_field(hit, column: str) -> str:
    """One BLAST tabular field of a search hit (:class:`nwalign.results.hits.Hit`: its alignment, E-value, bit
    score and title)."""
    return field(hit.aln, column, hit)


def coordinates(aln: Alignment) -> tuple[int, int, int, int]:
    """(query_start, query_end, target_start, target_end), 1-based inclusive; zeros when empty. A
    minus-strand hit as BLAST prints it: the query's plus-strand coordinates, ascending, and the target's
    descending (sstart > send)."""
    if aln.length == 0:
        return 0, 0, 0, 0
    if aln.strand == "minus":
        return aln.query_length - aln.query_end + 1, aln.query_length - aln.query_start, aln.target_end, \
            aln.target_start + 1
    return aln.query_start + 1, aln.query_end, aln.target_start + 1, aln.target_end


def to_dict(aln: Alignment) -> dict:
    """The JSON object of one result, keyed by :data:`COLUMNS`' names as search's JSON is (BLAST's:
    qseqid, qstart, ...; coordinates 1-based inclusive; pident and ppos percentages), with ``mode``.
    Before version 0.2 the keys were the pair report's (query_id, query_start, ...: :data:`ALIASES`)."""
    out = {"qseqid": aln.query_id, "sseqid": aln.target_id, "mode": aln.mode, "score": aln.score,
           "qlen": aln.query_length, "slen": aln.target_length}
    if aln.score_only:
        return out
    qs, qe, ts, te = coordinates(aln)
    out.update(qstart=qs, qend=qe, sstart=ts, send=te, length=aln.length, nident=aln.nident, mismatch=aln.mismatch,
               pident=round(100.0 * aln.identity, 4), ppos=round(100.0 * aln.similarity, 4), gaps=aln.gaps,
               gapopen=aln.gap_opens, cigar=aln.cigar())
    if aln.strand is not None:
        out["sstrand"] = aln.strand
    return out


#: BLAST's long names of the columns (``-outfmt 7``'s ``# Fields:`` line, as ``Bio.SearchIO`` reads them);
#: a column BLAST does not have keeps its own name.
FIELD_TITLES = {"qseqid": "query id", "sseqid": "subject id", "pident": "% identity", "length": "alignment length",
                "mismatch": "mismatches", "gapopen": "gap opens", "qstart": "q. start", "qend": "q. end",
                "sstart": "s. start", "send": "s. end", "evalue": "evalue", "bitscore": "bit score",
                "score": "score", "qlen": "query length", "slen": "subject length", "nident": "identical",
                "gaps": "gaps", "qseq": "query seq", "sseq": "subject seq", "ppos": "% positives",
                "qcovs": "% query coverage per subject", "stitle": "subject title", "btop": "BTOP",
                "sstrand": "subject strand", "qcovhsp": "% hsp coverage", "scovhsp": "% subject coverage per hsp",
                "positive": "positives"}

#: search --format json: BLAST's names, numbers as numbers.
HIT_JSON_INTEGERS = ("length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send", "score", "qlen", "slen",
                     "nident", "gaps")
