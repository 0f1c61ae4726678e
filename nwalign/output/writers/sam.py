"""SAM 1.6 (the target, or the search's subject, as the reference)."""

from __future__ import annotations

import logging
import re

from nwalign import __version__
from nwalign.output.writers.base import Writer
from nwalign.records.alignment import Alignment
from nwalign.scoring.schemes import NUCLEOTIDE_CODES


_NOT_IN_A_NAME = re.compile(r"[^!-~]")  # SAM's names are printable ASCII: a control character breaks a reader


class SamWriter(Writer):
    """SAM 1.6: the target is the reference; query overhangs are soft-clipped; AS:i score, NM:i edits. A
    search's first alignment of a query is its primary line, every later one secondary (flag 256), as
    aligners write several alignments of a read. A name with a character SAM does not allow in names (a
    control character, non-ASCII) has it written as ``_``, said once. SAM is a nucleotide format: protein
    alignments are written, with a warning (htslib reads residues as bases, and loses those it has no
    code for)."""

    _warned = False
    _secondary = 0

    def write_hits(self, hits, query: str | None = None, record=None) -> None:
        for k, hit in enumerate(hits):
            self._secondary = 256 if k else 0
            self.write(hit.aln)
        self._secondary = 0

    def _name(self, name: str) -> str:
        if not _NOT_IN_A_NAME.search(name):
            return name
        if not self._warned:
            self._warned = True
            logging.getLogger("nwalign").warning("warning: SAM: %r has characters SAM names cannot hold; written "
                                                 "with '_' in their place", name)
        return _NOT_IN_A_NAME.sub("_", name)

    def begin(self) -> None:
        if not set(self.scoring.alphabet.upper()) <= set(NUCLEOTIDE_CODES + "U"):
            logging.getLogger("nwalign").warning("warning: SAM is a nucleotide format: these protein alignments "
                                                 "are written, but htslib (samtools, pysam) reads their residues "
                                                 "as bases; use --format tsv or json for proteins")
        if not self.header:
            return
        self.out.write("@HD\tVN:1.6\tSO:unsorted\n")
        seen = set()
        for rec in self.targets:  # records, or (id, length) pairs
            name, length = (rec.id, len(rec.seq)) if hasattr(rec, "seq") else rec
            if name not in seen:
                seen.add(name)
                self.out.write(f"@SQ\tSN:{self._name(name)}\tLN:{length}\n")
        cl = f"\tCL:{self.command}" if self.command else ""
        self.out.write(f"@PG\tID:nwalign\tPN:nwalign\tVN:{__version__}{cl}\n")

    def write(self, aln: Alignment) -> None:
        if aln.length == 0:
            self.out.write(f"{self._name(aln.query_id)}\t4\t*\t0\t0\t*\t*\t0\t0\t{aln.query_seq}\t*\tAS:i:{aln.score}\n")
            return
        left = aln.query_start
        right = aln.query_length - aln.query_end
        cigar = (f"{left}S" if left else "") + aln.cigar() + (f"{right}S" if right else "")
        edits = aln.length - aln.nident
        flag = 16 if aln.strand == "minus" else 0  # SEQ is then the query's reverse complement, as SAM wants
        flag |= self._secondary
        self.out.write(
            f"{self._name(aln.query_id)}\t{flag}\t{self._name(aln.target_id)}\t{aln.target_start + 1}\t255\t{cigar}\t*\t0\t0\t"
            f"{aln.query_seq}\t*\tAS:i:{aln.score}\tNM:i:{edits}\n"
        )
