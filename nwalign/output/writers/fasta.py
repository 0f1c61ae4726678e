"""Both rows of each alignment as FASTA (gaps as ``-``), 60 columns a line."""

from __future__ import annotations

from nwalign.output.columns import coordinates
from nwalign.output.writers.base import Writer
from nwalign.records.alignment import Alignment


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
