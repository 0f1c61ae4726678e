"""What every writer shares: ``begin`` once, ``write`` per alignment (``write_hits`` per query of a
search), ``end`` once; a local pair's E-value and bit score; the program line of a table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from nwalign import __version__
from nwalign.records.alignment import Alignment
from nwalign.results.statistics import statistics_for
from nwalign.scoring.schemes import Scoring


@dataclass(frozen=True)
class PairStatistics:
    """What a search hit has beyond its alignment, for one local pair (the ``hit`` of :func:`field`)."""

    evalue: float
    bitscore: float
    title: str = ""


class Writer:
    """Base writer: ``begin`` once, ``write`` per alignment (or ``write_hits`` per query of a search), ``end``
    once.

    Arguments:
        out: a text stream.
        scoring: the alignments' :class:`~nwalign.scoring.schemes.Scoring`.
        targets: the references a format names first (SAM's ``@SQ`` lines): records, or (id, length) pairs.
        header: the format's header or comment lines (None: the format's default, :attr:`DEFAULT_HEADER`).
        command: the command line, for the formats that record it.
        program: the command's name (``search``) for a table's first comment line where ``command`` is not
            recorded.
        columns, json_columns: the columns of a table, of a search's JSON objects (formats with columns).
        score_only: score-only results (a table's default columns are then the score columns).
    """

    DEFAULT_HEADER = True

    def __init__(self, out: TextIO, scoring: Scoring, targets: list | None = None, header: bool | None = None,
                 command: str = "", columns: tuple[str, ...] | None = None, json_columns: tuple[str, ...] = (),
                 score_only: bool = False, program: str = ""):
        self.out = out
        self.scoring = scoring
        self.targets = targets or []
        self.header = self.DEFAULT_HEADER if header is None else header
        self.command, self.program = command, program
        self.columns, self.json_columns, self.score_only = columns, json_columns, score_only

    def write_hits(self, hits, query: str | None = None, record=None) -> None:
        """One query's search hits (``query``: its id, for the formats that name a query without hits)."""
        for hit in hits:
            self.write(hit.aln)

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


def program_line(command: str = "") -> str:
    """The first comment line of a table: nwalign's version and the command (``nwalign pair ...``)."""
    words = command.split()
    return f"nwalign {__version__}" + (f" {words[1]}" if len(words) > 1 else "")
