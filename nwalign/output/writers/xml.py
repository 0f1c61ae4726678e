"""BLAST XML (``blastp -outfmt 5``, NCBI's BlastOutput DTD) of a search: one ``Iteration`` a query, one
``Hit`` a subject, one ``Hsp`` an alignment, as ``Bio.Blast.parse``, ``Bio.Blast.NCBIXML``, Blast2GO and
SequenceServer read it. Coordinates, strands and the rows shown are the TSV's (a minus-strand alignment:
the query's plus strand, ``Hsp_hit-from`` > ``Hsp_hit-to``, hit frame -1); BLAST's gap existence cost is
nwalign's gap open minus its extension (a gap of L costs open + (L - 1) * extend here, existence + L *
extension in BLAST)."""

from __future__ import annotations

from xml.sax.saxutils import escape

from nwalign import __version__
from nwalign.output.columns import coordinates
from nwalign.output.writers.base import Writer
from nwalign.records.alignment import Alignment
from nwalign.scoring.schemes import NUCLEOTIDE_CODES


def _fields(indent: str, pairs) -> str:
    return "".join(f"{indent}<{name}>{escape(str(value))}</{name}>\n" for name, value in pairs)


def _parameters(scoring) -> list:
    """BLAST's Statistics fields of the scoring's Karlin-Altschul parameters (the search computed them
    already: published, or estimated and cached); -1 where the scoring has none (the linear phase)."""
    from nwalign.results.statistics import parameters

    try:
        found = parameters(scoring)
    except ValueError:
        found = None
    values = (found.K, found.lam, found.H) if found is not None else (-1, -1, -1)
    return [(f"Statistics_{name}", f"{v:.4g}") for name, v in zip(("kappa", "lambda", "entropy"), values)]


def _rest(title: str, ident: str) -> str:
    """A FASTA header line without its leading id (BLAST's Hit_def)."""
    return title[len(ident):].strip() if title.startswith(ident) else title


class BlastXmlWriter(Writer):
    """BLAST XML of a search's hits (``write_hits``); ``targets`` ((id, length) pairs) give the database's
    count and length in each iteration's statistics."""

    def _nucleotide(self) -> bool:
        return set(self.scoring.alphabet.upper()) <= set(NUCLEOTIDE_CODES + "U")

    def begin(self) -> None:
        program = "blastn" if self._nucleotide() else "blastp"
        self._program = program
        self._iteration = 0
        self._db_len = sum(length for _, length in self.targets)
        self._stats = _parameters(self.scoring)
        s = self.scoring
        params = [("Parameters_matrix", s.matrix_name)] if not self._nucleotide() else []
        params += [("Parameters_expect", 10), ("Parameters_gap-open", s.gap_open - s.gap_extend),
                   ("Parameters_gap-extend", s.gap_extend), ("Parameters_filter", "F")]
        self.out.write('<?xml version="1.0"?>\n<!DOCTYPE BlastOutput PUBLIC "-//NCBI//NCBI BlastOutput/EN" '
                       '"http://www.ncbi.nlm.nih.gov/dtd/NCBI_BlastOutput.dtd">\n<BlastOutput>\n')
        self.out.write(_fields("  ", [("BlastOutput_program", program),
                                      ("BlastOutput_version", f"nwalign {__version__} (Smith-Waterman)"),
                                      ("BlastOutput_reference", "nwalign: exact pairwise alignment on GPUs"),
                                      ("BlastOutput_db", self.command or "database"),
                                      ("BlastOutput_query-ID", "Query_1"), ("BlastOutput_query-def", ""),
                                      ("BlastOutput_query-len", 0)]))
        self.out.write("  <BlastOutput_param>\n    <Parameters>\n" + _fields("      ", params) +
                       "    </Parameters>\n  </BlastOutput_param>\n<BlastOutput_iterations>\n")

    def write_hits(self, hits, query: str | None = None, record=None) -> None:
        self._iteration += 1
        qid = record.id if record is not None else query
        qdef = _rest(record.description, record.id) if record is not None else ""
        qlen = len(record.seq) if record is not None else (hits[0].aln.query_length if hits else 0)
        self.out.write("<Iteration>\n" + _fields("  ", [("Iteration_iter-num", self._iteration),
                                                        ("Iteration_query-ID", qid), ("Iteration_query-def", qdef),
                                                        ("Iteration_query-len", qlen)]) + "<Iteration_hits>\n")
        groups: list[list] = []
        for hit in hits:  # a subject's alignments come together
            if groups and groups[-1][0].db_index == hit.db_index:
                groups[-1].append(hit)
            else:
                groups.append([hit])
        for number, group in enumerate(groups, 1):
            self._hit(number, group)
        self.out.write("</Iteration_hits>\n  <Iteration_stat>\n    <Statistics>\n" + _fields("      ", [
            ("Statistics_db-num", len(self.targets)), ("Statistics_db-len", self._db_len),
            ("Statistics_hsp-len", 0), ("Statistics_eff-space", 0), *self._stats]) + "    </Statistics>\n  </Iteration_stat>\n")
        if not hits:
            self.out.write("  <Iteration_message>No hits found</Iteration_message>\n")
        self.out.write("</Iteration>\n")

    def _hit(self, number: int, group: list) -> None:
        first = group[0].aln
        self.out.write("<Hit>\n" + _fields("  ", [("Hit_num", number), ("Hit_id", first.target_id),
                                                  ("Hit_def", _rest(group[0].title, first.target_id) or "No definition line"),
                                                  ("Hit_accession", first.target_id),
                                                  ("Hit_len", first.target_length)]) + "  <Hit_hsps>\n")
        for k, hit in enumerate(group, 1):
            self.out.write("    <Hsp>\n" + _fields("      ", self._hsp(k, hit)) + "    </Hsp>\n")
        self.out.write("  </Hit_hsps>\n</Hit>\n")

    def _hsp(self, number: int, hit) -> list:
        aln: Alignment = hit.aln
        qs, qe, ss, se = coordinates(aln)
        qrow, srow = aln.shown()
        if self._nucleotide():
            midline, frames = _pipes(qrow, srow), [("Hsp_query-frame", 1),
                                                   ("Hsp_hit-frame", -1 if aln.strand == "minus" else 1)]
        else:
            positive = aln.positive.tolist() if aln.positive is not None else [False] * len(qrow)
            midline = "".join(a if a == b else "+" if plus else " " for a, b, plus in zip(qrow, srow, positive))
            frames = [("Hsp_query-frame", 0), ("Hsp_hit-frame", 0)]
        return [("Hsp_num", number), ("Hsp_bit-score", "" if hit.bitscore is None else f"{hit.bitscore:.4f}"),
                ("Hsp_score", aln.score), ("Hsp_evalue", "" if hit.evalue is None else f"{hit.evalue:.6g}"),
                ("Hsp_query-from", qs), ("Hsp_query-to", qe), ("Hsp_hit-from", ss), ("Hsp_hit-to", se),
                *frames, ("Hsp_identity", aln.nident), ("Hsp_positive", aln.npositive), ("Hsp_gaps", aln.gaps),
                ("Hsp_align-len", aln.length), ("Hsp_qseq", qrow), ("Hsp_hseq", srow), ("Hsp_midline", midline)]

    def write(self, aln: Alignment) -> None:
        raise NotImplementedError("BLAST XML is written per query (write_hits)")

    def end(self) -> None:
        self.out.write("</BlastOutput_iterations>\n</BlastOutput>\n")


def _pipes(qrow: str, srow: str) -> str:
    """blastn's midline: '|' where the letters agree, ' ' elsewhere."""
    return "".join("|" if a == b and a != "-" else " " for a, b in zip(qrow, srow))
