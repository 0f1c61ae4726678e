"""Writers for alignment results: pair (EMBOSS needle-like), sam, json (JSON Lines), tsv, fasta.

Every writer prints coordinates 1-based and inclusive; an empty alignment (a local alignment of score 0)
prints start and end as 0.
"""

from __future__ import annotations

import json
from typing import TextIO

from . import __version__
from .results import Alignment
from .scoring import Scoring

# The formats' and columns' names live in nwalign.names (no NumPy: the command line's help loads them alone).
from .names import ALIASES, COLUMN_NEEDS_ALIGNMENT, TSV_COLUMNS, TSV_SCORE_COLUMNS  # noqa: E402


def _pct(x: float) -> str:
    return f"{100.0 * x:.2f}"


def btop(aln: Alignment) -> str:
    """BLAST's traceback operations: the length of each run of identical columns, and for every other
    column the query letter then the subject letter ('-' for a gap)."""
    q, t = aln.gapped()
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


#: The one column table of every command's TSV output: BLAST's tabular names (``-outfmt 6``; search and
#: allpairs use them) and the pair report's own (``mode``, ``identity`` and ``similarity`` as fractions,
#: and :data:`ALIASES`). Each entry: (the value from an alignment and, for search, its hit; whether the
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
    "evalue": lambda a, h: "" if h is None or h.evalue is None else f"{h.evalue:.2g}",
    "bitscore": lambda a, h: "" if h is None or h.bitscore is None else f"{h.bitscore:.1f}",
    "score": lambda a, h: a.score,
    "qlen": lambda a, h: a.query_length,
    "slen": lambda a, h: a.target_length,
    "nident": lambda a, h: a.nident,
    "gaps": lambda a, h: a.gaps,
    "cigar": lambda a, h: a.cigar(),
    "qseq": lambda a, h: a.gapped()[0],
    "sseq": lambda a, h: a.gapped()[1],
    "ppos": lambda a, h: _pct(a.similarity),
    "qcovs": lambda a, h: round(100.0 * (a.query_end - a.query_start) / a.query_length) if a.query_length else 0,
    "stitle": lambda a, h: (h.title if h is not None else "") or a.target_id,
    "btop": lambda a, h: btop(a),
    "mode": lambda a, h: a.mode,
    "identity": lambda a, h: f"{a.identity:.4f}",
    "similarity": lambda a, h: f"{a.similarity:.4f}",
}
assert _VALUES.keys() == COLUMN_NEEDS_ALIGNMENT.keys()
COLUMNS = {name: (value, COLUMN_NEEDS_ALIGNMENT[name]) for name, value in _VALUES.items()}
def field(aln: Alignment, column: str, hit=None) -> str:
    """One TSV field of :data:`COLUMNS` (or an alias) as text; ``hit``: a search hit (E-value, bit score,
    title), None elsewhere."""
    return str(COLUMNS[ALIASES.get(column, column)][0](aln, hit))


def coordinates(aln: Alignment) -> tuple[int, int, int, int]:
    """(query_start, query_end, target_start, target_end), 1-based inclusive; zeros when empty."""
    if aln.length == 0:
        return 0, 0, 0, 0
    return aln.query_start + 1, aln.query_end, aln.target_start + 1, aln.target_end


def to_dict(aln: Alignment) -> dict:
    """The JSON object of one result, keyed by :data:`COLUMNS`' names as search's JSON is (BLAST's:
    qseqid, qstart, ...; coordinates 1-based inclusive), with ``mode`` and ``identity``/``similarity``
    as fractions. Before version 0.2 the keys were the pair report's (query_id, query_start, ...: :data:`ALIASES`)."""
    out = {"qseqid": aln.query_id, "sseqid": aln.target_id, "mode": aln.mode, "score": aln.score,
           "qlen": aln.query_length, "slen": aln.target_length}
    if aln.score_only:
        return out
    qs, qe, ts, te = coordinates(aln)
    out.update(qstart=qs, qend=qe, sstart=ts, send=te, length=aln.length, nident=aln.nident, mismatch=aln.mismatch,
               identity=round(aln.identity, 6), similarity=round(aln.similarity, 6), gaps=aln.gaps,
               gapopen=aln.gap_opens, cigar=aln.cigar())
    return out


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

    def end(self) -> None:
        pass


class JsonWriter(Writer):
    def write(self, aln: Alignment) -> None:
        self.out.write(json.dumps(to_dict(aln)) + "\n")


class TsvWriter(Writer):
    """Tab-separated rows of :data:`COLUMNS` (default :data:`TSV_COLUMNS`, or :data:`TSV_SCORE_COLUMNS`
    for score-only results)."""

    def __init__(self, *args, score_only: bool = False, columns: tuple[str, ...] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.columns = columns or (TSV_SCORE_COLUMNS if score_only else TSV_COLUMNS)

    def begin(self) -> None:
        if self.header:
            self.out.write("\t".join(self.columns) + "\n")

    def write(self, aln: Alignment) -> None:
        self.out.write("\t".join(field(aln, c) for c in self.columns) + "\n")


class FastaWriter(Writer):
    WIDTH = 60

    def write(self, aln: Alignment) -> None:
        qrow, trow = aln.gapped()
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
        self.out.write(
            f"{aln.query_id}\t0\t{aln.target_id}\t{aln.target_start + 1}\t255\t{cigar}\t*\t0\t0\t"
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
        w(f"# Score: {aln.score}\n#\n#=======================================\n")
        if not aln.score_only:
            self._blocks(aln)

    def _blocks(self, aln: Alignment) -> None:
        qrow, trow = aln.gapped()
        match_line = aln.match_line()
        qi, ti = aln.query_start, aln.target_start
        qname = aln.query_id[: self.NAME]
        tname = aln.target_id[: self.NAME]
        for k in range(0, len(qrow), self.WIDTH):
            qb, tb, mb = qrow[k:k + self.WIDTH], trow[k:k + self.WIDTH], match_line[k:k + self.WIDTH]
            q_used = len(qb) - qb.count("-")
            t_used = len(tb) - tb.count("-")
            q_first = qi + 1 if q_used else qi
            t_first = ti + 1 if t_used else ti
            qi += q_used
            ti += t_used
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
                 json_columns: tuple[str, ...] = (), header: bool = False, targets=()):
        self.out, self.fmt, self.columns, self.json_columns = out, fmt, columns, json_columns
        self.writer = None
        if fmt == "tsv" and header:
            out.write("\t".join(columns) + "\n")
        elif fmt in ("pair", "sam"):
            self.writer = WRITERS[fmt](out, scoring, targets=list(targets), header=True)
            self.writer.begin()

    def write(self, hits) -> None:
        for hit in hits:
            if self.fmt == "tsv":
                self.out.write("\t".join(field(hit.aln, c, hit) for c in self.columns) + "\n")
            elif self.fmt == "json":
                row = {c: field(hit.aln, c, hit) for c in self.json_columns}
                for c in HIT_JSON_INTEGERS:
                    if c in row:
                        row[c] = int(row[c])
                row["pident"] = float(row["pident"])
                row["evalue"] = hit.evalue
                row["bitscore"] = None if hit.bitscore is None else round(hit.bitscore, 1)
                self.out.write(json.dumps(row) + "\n")
            else:
                self.writer.write(hit.aln)

    def end(self) -> None:
        if self.writer:
            self.writer.end()
