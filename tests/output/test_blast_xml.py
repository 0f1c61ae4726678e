"""search --format xml: BLAST XML (-outfmt 5) that Biopython's two BLAST readers read, each hit, alignment,
E-value and coordinate equal to the TSV's, on proteins and on both DNA strands."""

import os

import pytest

from nwalign.cli import main
from nwalign.output.blastfmt import blast_evalue

from helpers import ROOT

OPAL = os.path.join(ROOT, "data", "queries_5_opal.fasta")
SP196 = os.path.join(ROOT, "data", "swissprot_first196.fasta")
HSPS = os.path.join(ROOT, "tests", "data", "hsps")
CASES = {"protein": [OPAL, SP196, "--top", "3"],
         "dna": [os.path.join(HSPS, "fragment.fa"), os.path.join(HSPS, "planted.fa"), "--max-evalue", "1e-5"]}
COLUMNS = "qseqid,sseqid,score,evalue,qstart,qend,sstart,send,nident,length,qseq,sseq"


def _tsv(capsys, argv):
    assert main(argv + ["--columns", COLUMNS]) == 0
    return [line.split("\t") for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bio_blast_reads_every_hit_and_alignment_as_the_tsv_has_them(capsys, tmp_path, case):
    from Bio import Blast

    argv = ["search", *CASES[case], "--backend", "cpu"]
    want = _tsv(capsys, argv)
    assert main(argv + ["--format", "xml", "-o", str(tmp_path / "hits.xml")]) == 0
    got = []
    with open(tmp_path / "hits.xml", "rb") as handle:
        records = list(Blast.parse(handle))
    for record in records:
        for hit in record:
            for hsp in hit:
                a = hsp.annotations
                got.append([record.query.id, hit.target.id, str(int(hsp.score)), a["evalue"], a["identity"],
                            hsp.shape[1], hsp[1], hsp[0]])  # Bio.Align: the target is row 0
    assert len(got) == len(want) and len(records) == len({r[0] for r in want})
    for g, w in zip(got, want):
        assert g[:3] == w[:3] and g[4] == int(w[8]) and g[5] == int(w[9])
        assert blast_evalue(g[3]) == w[3]  # as the TSV rounds it
        assert (g[6], g[7]) == (w[10], w[11])  # the rows shown, gaps included
    if case == "dna":
        assert any(int(w[6]) > int(w[7]) for w in want)  # a minus-strand alignment is among them


def test_ncbixml_reads_the_hsps_coordinates(capsys, tmp_path):
    from Bio.Blast import NCBIXML

    argv = ["search", *CASES["dna"], "--backend", "cpu"]
    want = _tsv(capsys, argv)
    assert main(argv + ["--format", "xml", "-o", str(tmp_path / "hits.xml")]) == 0
    with open(tmp_path / "hits.xml") as handle:
        got = [[str(h.score), h.query_start, h.query_end, h.sbjct_start, h.sbjct_end, h.query, h.sbjct]
               for record in NCBIXML.parse(handle) for alignment in record.alignments for h in alignment.hsps]
    assert [[g[0].split(".")[0]] + [str(x) for x in g[1:5]] + g[5:] for g in got] == \
        [[w[2], w[4], w[5], w[6], w[7], w[10], w[11]] for w in want]


def test_searchio_reads_header_output_of_the_columns_the_readme_names(capsys):
    """The README's list of columns Bio.SearchIO reads with comments=True, read back."""
    import io
    import re

    from Bio import SearchIO

    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    named = re.search(r"knows: `([a-z ]+)`", readme.replace("\n", " ")).group(1).split()
    assert main(["search", OPAL, SP196, "--top", "2", "--backend", "cpu", "--header", "--columns",
                 ",".join(named)]) == 0
    out = capsys.readouterr().out
    hits = sum(len(hsp) for record in SearchIO.parse(io.StringIO(out), "blast-tab", comments=True)
               for hsp in record)
    assert hits == len([line for line in out.splitlines() if not line.startswith("#")])
