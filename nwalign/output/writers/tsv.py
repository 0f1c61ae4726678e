"""Tab-separated rows of the column table, as every command writes them, through one header convention
(:class:`Table`: none, as BLAST's ``-outfmt 6``, or ``-outfmt 7``'s ``#`` comment lines); allpairs' blocks
of rows (:func:`format_results`; compiled: :mod:`nwalign.output.scorerows`)."""

from __future__ import annotations

import logging
from typing import TextIO

import numpy as np

from nwalign import __version__
from nwalign.names import ALIASES, TSV_COLUMNS, TSV_SCORE_COLUMNS
from nwalign.output.columns import FIELD_TITLES, field
from nwalign.output.writers.base import PairStatistics, Writer, program_line
from nwalign.records.alignment import Alignment, Block, PairResult


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

    def write(self, text: str | bytes) -> None:
        """Rows (whole lines) as one string, or as UTF-8 bytes: those go to the stream's binary buffer
        where it has one and no comment lines are asked for (the copy and the system call release the
        GIL; decoding and encoding a gigabyte of rows held it for seconds)."""
        if not isinstance(text, str):
            if not self.header and hasattr(self.out, "buffer"):
                self.out.flush()  # the text written before these bytes
                self.out.buffer.write(text)
                return
            text = bytes(text).decode("utf-8")
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

    DEFAULT_HEADER = False  # BLAST's -outfmt 6

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.columns = self.columns or (TSV_SCORE_COLUMNS if self.score_only else TSV_COLUMNS)
        self.table = Table(self.out, self.columns, self.header, program_line(self.command or f"nwalign {self.program}"))
        self.with_statistics = bool({ALIASES.get(c, c) for c in self.columns} & {"evalue", "bitscore"})
        if self.with_statistics and self.scoring.mode != "local" and self.program != "search":
            logging.getLogger("nwalign").warning("evalue and bitscore are for local alignments (--mode local): "
                                                 "their columns stay empty in %s mode", self.scoring.mode)
        # stitle: the target's whole FASTA header line, as a search hit's (records; not (id, length) pairs)
        self.titles = {t.id: t.description for t in self.targets if hasattr(t, "description")} \
            if "stitle" in self.columns else {}

    def write(self, aln: Alignment) -> None:
        hit = self.statistics(aln) if self.with_statistics else None
        if self.titles:
            hit = PairStatistics(hit and hit.evalue, hit and hit.bitscore, self.titles.get(aln.target_id, ""))
        self.table.write("\t".join(field(aln, c, hit) for c in self.columns) + "\n")

    def write_hits(self, hits, query: str | None = None, record=None) -> None:
        """One query's hits as rows (with ``header``, a query without hits still gets its comment lines)."""
        text = "".join("\t".join(field(hit.aln, c, hit) for c in self.columns) + "\n" for hit in hits)
        self.table.write_query(query if query is not None else hits[0].query.id if hits else "", text)

    def end(self) -> None:
        self.table.end()


def format_results(results: list[PairResult], columns: tuple[str, ...], distances: bool, start: int) -> Block:
    """One :class:`Block` of consecutive results (positions ``start``.. of the pair order)."""
    rows = ["\t".join([field(r.aln, c) for c in columns]) + "\n" for r in results if r.passes]
    dist = np.array([1.0 - r.aln.identity for r in results], dtype=np.float32) if distances else None
    return Block(start, start + len(results), "".join(rows), dist, len(rows))
