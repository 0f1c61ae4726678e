"""JSON Lines: one object per alignment (every column, numbers as numbers) or per search hit (the
``json_columns``, BLAST's names; E-value and bit score null without statistics)."""

from __future__ import annotations

import json

from nwalign.output.columns import HIT_JSON_INTEGERS, field, to_dict
from nwalign.output.writers.base import Writer
from nwalign.records.alignment import Alignment


class JsonWriter(Writer):
    def write_hits(self, hits, query: str | None = None, record=None) -> None:
        """One query's hits: their ``json_columns`` with BLAST's names, E-value and bit score (null without
        statistics), a nucleotide hit's ``sstrand``."""
        for hit in hits:
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

    def write(self, aln: Alignment) -> None:
        row = to_dict(aln)
        found = self.statistics(aln)
        if found is not None:  # local mode
            row.update(evalue=found.evalue, bitscore=round(found.bitscore, 1))
        self.out.write(json.dumps(row) + "\n")
