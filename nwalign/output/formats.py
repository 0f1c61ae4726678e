"""Every command's output: the one column table (:data:`COLUMNS`, BLAST's tabular names), TSV rows with
one header convention (:class:`Table`: none, as BLAST's ``-outfmt 6``, or ``-outfmt 7``'s ``#`` comment
lines), and the writers: pair (EMBOSS needle-like), sam, json (JSON Lines), tsv, fasta
(:data:`WRITERS`), search hits (:class:`HitWriter`), allpairs rows (:func:`format_results`,
:class:`ScoreRows`). The distance matrix and output files: :mod:`nwalign.output.files`.

Every writer prints coordinates 1-based and inclusive, identity and similarity as percentages; an
empty alignment (a local alignment of score 0) prints start and end as 0.

A new format is a :class:`Writer` here and its name in ``WRITERS`` (and in ``nwalign.names.FORMATS``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from nwalign import __version__
# The formats' and columns' names live in nwalign.names (no NumPy: the command line's help loads them alone).
from nwalign.names import ALIASES, COLUMN_NEEDS_ALIGNMENT, TSV_COLUMNS, TSV_SCORE_COLUMNS
from nwalign.records.alignment import Alignment, Block, PairResult
from nwalign.scoring.schemes import Scoring
from nwalign.output.blastfmt import blast_bitscore, blast_evalue
from nwalign.results.statistics import statistics_for


def _pct(x: float) -> str:
    return f"{100.0 * x:.2f}"


def _query_cover(aln: Alignment) -> int:
    """Percent of the query in the alignment, rounded (BLAST's qcovs and qcovhsp)."""
    return round(100.0 * (aln.query_end - aln.query_start) / aln.query_length) if aln.query_length else 0


def btop(aln: Alignment) -> str:
    """BLAST's traceback operations: the length of each run of identical columns, and for every other
    column the query letter then the subject letter ('-' for a gap)."""
    q, t = aln.shown()
    out, run = [], 0
    for col, a, b in zip(aln.columns.tolist(), q, t):
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
    "ppos": lambda a, h: _pct(a.similarity),
    "qcovs": lambda a, h: _query_cover(a),
    "stitle": lambda a, h: (h.title if h is not None else "") or a.target_id,
    "btop": lambda a, h: btop(a),
    "mode": lambda a, h: a.mode,
    "sstrand": lambda a, h: a.strand or "N/A",
    "qcovhsp": lambda a, h: _query_cover(a),  # one hit per subject: the same as qcovs
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


@dataclass(frozen=True)
class PairStatistics:
    """What a search hit has beyond its alignment, for one local pair (the ``hit`` of :func:`field`)."""

    evalue: float
    bitscore: float
    title: str = ""


class Writer:
    """Base writer: ``begin`` once, ``write`` per result, ``end`` once."""

    def __init__(self, out: TextIO, scoring: Scoring, targets: list | None = None, header: bool = True,
                 command: str = ""):
        self.out = out
        self.scoring = scoring
        self.targets = targets or []
        self.header = header
        self.command = command

    def begin(self) -> None:
        pass

    def write(self, aln: Alignment) -> None:
        raise NotImplementedError

    def statistics(self, aln: Alignment) -> PairStatistics | None:
        """The E-value and bit score of a local pair (the target as a database of one sequence), or None
        (another mode, or a scoring without local statistics); the parameters once per writer."""
        if self.scoring.mode != "local":
            return None
        if not hasattr(self, "_karlin"):
            self._karlin = statistics_for(self.scoring)
        ka = self._karlin
        if ka is None:
            return None
        return PairStatistics(ka.evalue(aln.score, aln.query_length, aln.target_length), ka.bit_score(aln.score))

    def end(self) -> None:
        pass


class JsonWriter(Writer):
    def write(self, aln: Alignment) -> None:
        row = to_dict(aln)
        found = self.statistics(aln)
        if found is not None:  # local mode
            row.update(evalue=found.evalue, bitscore=round(found.bitscore, 1))
        self.out.write(json.dumps(row) + "\n")


#: BLAST's long names of the columns (``-outfmt 7``'s ``# Fields:`` line, as ``Bio.SearchIO`` reads them);
#: a column BLAST does not have keeps its own name.
FIELD_TITLES = {"qseqid": "query id", "sseqid": "subject id", "pident": "% identity", "length": "alignment length",
                "mismatch": "mismatches", "gapopen": "gap opens", "qstart": "q. start", "qend": "q. end",
                "sstart": "s. start", "send": "s. end", "evalue": "evalue", "bitscore": "bit score",
                "score": "score", "qlen": "query length", "slen": "subject length", "nident": "identical",
                "gaps": "gaps", "qseq": "query seq", "sseq": "subject seq", "ppos": "% positives",
                "qcovs": "% query coverage per subject", "stitle": "subject title", "btop": "BTOP",
                "sstrand": "subject strand", "qcovhsp": "% hsp coverage"}


class Table:
    r"""TSV rows of ``columns`` (names of :data:`COLUMNS`) as every command writes them: plain (BLAST's
    ``-outfmt 6``), or with ``header`` BLAST's ``-outfmt 7`` comment lines before each query's rows
    (program, ``# Query:``, ``# Fields:`` with BLAST's long names, ``# N hits found``) and a last line counting the queries, which ``Bio.SearchIO.parse(f,
    "blast-tab", comments=True)`` reads. A query's rows are those in a run of one ``qseqid`` (one
    block of comment lines for all rows without that column).

    >>> import io
    >>> out = io.StringIO()
    >>> table = Table(out, ("qseqid", "sseqid", "score"), header=True, program="nwalign 0.2.0 pair")
    >>> table.write("q1\ts1\t7\nq1\ts2\t5\n")
    >>> table.end()
    >>> print(out.getvalue().replace("\t", " "), end="")
    # nwalign 0.2.0 pair
    # Query: q1
    # Fields: query id, subject id, score
    # 2 hits found
    q1 s1 7
    q1 s2 5
    # nwalign processed 1 queries
    """

    def __init__(self, out: TextIO, columns: tuple[str, ...], header: bool = False, program: str = ""):
        self.out, self.columns, self.header = out, tuple(ALIASES.get(c, c) for c in columns), header
        self.program = program or f"nwalign {__version__}"
        self.key = self.columns.index("qseqid") if "qseqid" in self.columns else None
        self.query, self.rows, self.queries = None, [], 0

    def write(self, text: str) -> None:
        """Rows (whole lines) as one string."""
        if not self.header:
            self.out.write(text)
            return
        for line in text.splitlines(keepends=True):
            query = line.split("\t")[self.key].rstrip("\n") if self.key is not None else ""
            if query != self.query and self.rows:
                self._flush()
            self.query = query
            self.rows.append(line)

    def write_query(self, query: str, text: str) -> None:
        """One query's rows (none: a query without hits, still given its comment lines)."""
        if not self.header:
            self.out.write(text)
            return
        if self.rows:
            self._flush()
        self.query = query
        self.rows.append(text)
        self._flush()

    def _flush(self) -> None:
        lines = [f"# {self.program}"] + ([f"# Query: {self.query}"] if self.query else []) + \
            ["# Fields: " + ", ".join(FIELD_TITLES.get(c, c) for c in self.columns)]
        hits = sum(row.count("\n") for row in self.rows)
        self.out.write("\n".join(lines) + f"\n# {hits} hits found\n" + "".join(self.rows))
        self.rows, self.queries = [], self.queries + 1

    def end(self) -> None:
        if self.header:
            if self.rows:
                self._flush()
            self.out.write(f"# nwalign processed {self.queries} queries\n")


class TsvWriter(Writer):
    """Tab-separated rows of :data:`COLUMNS` (default :data:`TSV_COLUMNS`, or :data:`TSV_SCORE_COLUMNS`
    for score-only results), through :class:`Table` (``header``: ``-outfmt 7``'s comment lines)."""

    def __init__(self, *args, score_only: bool = False, columns: tuple[str, ...] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.columns = columns or (TSV_SCORE_COLUMNS if score_only else TSV_COLUMNS)
        self.table = Table(self.out, self.columns, self.header, program_line(self.command))
        self.with_statistics = bool({ALIASES.get(c, c) for c in self.columns} & {"evalue", "bitscore"})
        if self.with_statistics and self.scoring.mode != "local":
            logging.getLogger("nwalign").warning("evalue and bitscore are for local alignments (--mode local): "
                                                 "their columns stay empty in %s mode", self.scoring.mode)

    def write(self, aln: Alignment) -> None:
        hit = self.statistics(aln) if self.with_statistics else None
        self.table.write("\t".join(field(aln, c, hit) for c in self.columns) + "\n")

    def end(self) -> None:
        self.table.end()


def program_line(command: str = "") -> str:
    """The first comment line of a table: nwalign's version and the command (``nwalign pair ...``)."""
    words = command.split()
    return f"nwalign {__version__}" + (f" {words[1]}" if len(words) > 1 else "")


class FastaWriter(Writer):
    WIDTH = 60

    def write(self, aln: Alignment) -> None:
        qrow, trow = aln.shown()
        qs, qe, ts, te = coordinates(aln)
        for name, (s, e), row in ((aln.query_id, (qs, qe), qrow), (aln.target_id, (ts, te), trow)):
            self.out.write(f">{name} {s}-{e} score={aln.score} mode={aln.mode}\n")
            for k in range(0, len(row), self.WIDTH):
                self.out.write(row[k:k + self.WIDTH] + "\n")
            if not row:
                self.out.write("\n")


class SamWriter(Writer):
    """SAM 1.6: the target is the reference; query overhangs are soft-clipped; AS:i score, NM:i edits."""

    def begin(self) -> None:
        if not self.header:
            return
        self.out.write("@HD\tVN:1.6\tSO:unsorted\n")
        seen = set()
        for rec in self.targets:  # records, or (id, length) pairs
            name, length = (rec.id, len(rec.seq)) if hasattr(rec, "seq") else rec
            if name not in seen:
                seen.add(name)
                self.out.write(f"@SQ\tSN:{name}\tLN:{length}\n")
        cl = f"\tCL:{self.command}" if self.command else ""
        self.out.write(f"@PG\tID:nwalign\tPN:nwalign\tVN:{__version__}{cl}\n")

    def write(self, aln: Alignment) -> None:
        if aln.length == 0:
            self.out.write(f"{aln.query_id}\t4\t*\t0\t0\t*\t*\t0\t0\t{aln.query_seq}\t*\tAS:i:{aln.score}\n")
            return
        left = aln.query_start
        right = aln.query_length - aln.query_end
        cigar = (f"{left}S" if left else "") + aln.cigar() + (f"{right}S" if right else "")
        edits = aln.length - aln.nident
        flag = 16 if aln.strand == "minus" else 0  # SEQ is then the query's reverse complement, as SAM wants
        self.out.write(
            f"{aln.query_id}\t{flag}\t{aln.target_id}\t{aln.target_start + 1}\t255\t{cigar}\t*\t0\t0\t"
            f"{aln.query_seq}\t*\tAS:i:{aln.score}\tNM:i:{edits}\n"
        )


class PairWriter(Writer):
    """EMBOSS needle-like report (srspair): a header of statistics, then 50-column blocks with a match line.
    Readable by Biopython's ``Bio.Align.parse(handle, "emboss")``: the keys of each alignment's header are
    EMBOSS's own; nwalign's alignment mode is in the file header."""

    WIDTH = 50
    NAME = 13

    def begin(self) -> None:
        self.out.write("########################################\n")
        self.out.write(f"# Program: nwalign {__version__}\n")
        if self.command:
            self.out.write(f"# Commandline: {self.command}\n")
        self.out.write(f"# Align_format: srspair\n# Mode: {self.scoring.mode}\n")
        self.out.write("########################################\n")

    def write(self, aln: Alignment) -> None:
        sc = self.scoring
        w = self.out.write
        w("\n#=======================================\n#\n")
        w(f"# Aligned_sequences: 2\n# 1: {aln.query_id}\n# 2: {aln.target_id}\n")
        w(f"# Matrix: {sc.matrix_name}\n")
        w(f"# Gap_penalty: {float(sc.gap_open):.1f}\n# Extend_penalty: {float(sc.gap_extend):.1f}\n#\n")
        if not aln.score_only:
            n = aln.length
            pct = (lambda k: f"({100.0 * k / n:5.1f}%)") if n else (lambda k: "(  0.0%)")
            w(f"# Length: {n}\n")
            w(f"# Identity:   {aln.nident:>7}/{n} {pct(aln.nident)}\n")
            w(f"# Similarity: {aln.npositive:>7}/{n} {pct(aln.npositive)}\n")
            w(f"# Gaps:       {aln.gaps:>7}/{n} {pct(aln.gaps)}\n")
        if aln.strand is not None:  # a nucleotide search's hit: the subject's strand
            w(f"# Strand: {aln.strand}\n")
        w(f"# Score: {aln.score}\n#\n#=======================================\n")
        if not aln.score_only:
            self._blocks(aln)

    def _blocks(self, aln: Alignment) -> None:
        qrow, trow = aln.shown()
        match_line = aln.match_line()[::-1] if aln.strand == "minus" else aln.match_line()
        qs, _, ts, _ = coordinates(aln)
        qi, ti, step = qs - 1, ts - 1, 1
        if aln.strand == "minus":  # the target's minus strand: its positions count down
            ti, step = ts + 1, -1
        qname = aln.query_id[: self.NAME]
        tname = aln.target_id[: self.NAME]
        for k in range(0, len(qrow), self.WIDTH):
            qb, tb, mb = qrow[k:k + self.WIDTH], trow[k:k + self.WIDTH], match_line[k:k + self.WIDTH]
            q_used = len(qb) - qb.count("-")
            t_used = len(tb) - tb.count("-")
            q_first = qi + 1 if q_used else qi
            t_first = ti + step if t_used else ti
            qi += q_used
            ti += step * t_used
            self.out.write("\n")
            self.out.write(f"{qname:<{self.NAME}} {q_first:>7} {qb} {qi:>7}\n")
            self.out.write(f"{'':<{self.NAME}} {'':>7} {mb}\n")
            self.out.write(f"{tname:<{self.NAME}} {t_first:>7} {tb} {ti:>7}\n")

    def end(self) -> None:
        self.out.write("\n#---------------------------------------\n")


WRITERS = {"pair": PairWriter, "sam": SamWriter, "json": JsonWriter, "tsv": TsvWriter, "fasta": FastaWriter}

#: search --format json: BLAST's names, numbers as numbers.
HIT_JSON_INTEGERS = ("length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send", "score", "qlen", "slen",
                     "nident", "gaps")


class HitWriter:
    """Search hits as TSV rows of ``columns``, JSON Lines (``json_columns``, numbers as numbers, E-value
    and bit score null without statistics), or the pair/SAM writers (SAM's header names every database
    sequence: ``targets`` as (id, length) pairs)."""

    def __init__(self, out: TextIO, fmt: str, scoring: Scoring, columns: tuple[str, ...] = (),
                 json_columns: tuple[str, ...] = (), header: bool | None = None, targets=()):
        self.out, self.fmt, self.columns, self.json_columns = out, fmt, columns, json_columns
        self.writer = None
        self.table = Table(out, columns, bool(header), f"nwalign {__version__} search")
        if fmt in ("pair", "sam"):
            self.writer = WRITERS[fmt](out, scoring, targets=list(targets), header=header is not False)
            self.writer.begin()

    def write(self, hits, query: str | None = None) -> None:
        """One query's hits (``query``: its id, for the TSV's comment lines when it has none)."""
        if self.fmt == "tsv":
            text = "".join("\t".join(field(hit.aln, c, hit) for c in self.columns) + "\n" for hit in hits)
            self.table.write_query(query if query is not None else hits[0].query.id if hits else "", text)
            return
        for hit in hits:
            if self.fmt == "json":
                row = {c: field(hit.aln, c, hit) for c in self.json_columns}
                for c in HIT_JSON_INTEGERS:
                    if c in row:
                        row[c] = int(row[c])
                row["pident"] = float(row["pident"])
                row["evalue"] = hit.evalue
                row["bitscore"] = None if hit.bitscore is None else round(hit.bitscore, 1)
                if hit.aln.strand is not None:  # a nucleotide search's
                    row["sstrand"] = hit.aln.strand
                self.out.write(json.dumps(row) + "\n")
            else:
                self.writer.write(hit.aln)

    def end(self) -> None:
        if self.fmt == "tsv":
            self.table.end()
        if self.writer:
            self.writer.end()


# allpairs: rows of many pairs at once (formatted where they are computed: on the workers of a spread job)

def format_results(results: list[PairResult], columns: tuple[str, ...], distances: bool, start: int) -> Block:
    """One :class:`Block` of consecutive results (positions ``start``.. of the pair order)."""
    rows = ["\t".join([field(r.aln, c) for c in columns]) + "\n" for r in results if r.passes]
    dist = np.array([1.0 - r.aln.identity for r in results], dtype=np.float32) if distances else None
    return Block(start, start + len(results), "".join(rows), dist, len(rows))
