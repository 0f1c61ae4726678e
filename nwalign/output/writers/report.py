"""The pair report: EMBOSS needle's srspair layout."""

from __future__ import annotations

from nwalign import __version__
from nwalign.output.columns import coordinates
from nwalign.output.writers.base import Writer
from nwalign.records.alignment import Alignment


class PairWriter(Writer):
    """EMBOSS needle-like report (srspair): a header of statistics, then 50-column blocks with a match line.
    Readable by Biopython's ``Bio.Align.parse(handle, "emboss")``: the keys of each alignment's header are
    EMBOSS's own (Biopython refuses any other); nwalign's alignment mode is in the file header, and a
    minus-strand alignment's subject positions count down, as EMBOSS prints a reversed sequence."""

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
