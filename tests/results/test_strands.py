"""Nucleotide searches on both strands (BLAST's -strand): the reverse complement of a query finds its
source on the minus strand, reported as BLAST reports it (query ascending, sstart > send, sstrand
minus), in SAM as flag 16 with the query reverse-complemented; --top counts hits over both strands;
ambiguity codes complement; the output parses as BLAST tabular."""

import io
import os

import pytest

from nwalign import search
from nwalign.cli import main
from nwalign.errors import NwalignError
from nwalign.io.sequences import read_fasta, reverse_complement

from helpers import DATA

LAMBDA = os.path.join(DATA, "phage_lambda_J02459.fasta")
OPAL = os.path.join(DATA, "queries_5_opal.fasta")
SP196 = os.path.join(DATA, "swissprot_first196.fasta")


@pytest.fixture(scope="module")
def lambda_seq():
    return read_fasta(LAMBDA)[0].seq


@pytest.fixture
def reverse_query(tmp_path, lambda_seq):
    path = tmp_path / "rev.fa"
    path.write_text(">rev\n" + reverse_complement(lambda_seq[10000:10500]) + "\n")
    return str(path)


def cli_rows(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return [line.split("\t") for line in out.splitlines()]


def test_a_reverse_complement_is_found_on_the_minus_strand(capsys, reverse_query):
    """The lambda case: its 10,001-10,500 reverse-complemented is found whole, as BLAST reports it
    (blastn 2.12, +2/-3 with gaps 5/2: rev J02459.1 100.000 500 0 0 1 500 10500 10001 0.0 902 minus)."""
    rows = cli_rows(capsys, "search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1", "--columns", "std,sstrand,score")
    assert rows[0] == ["rev", "J02459.1", "100.000", "500", "0", "0", "1", "500", "10500", "10001", "0.0", "902",
                       "minus", "1000"]
    plus = cli_rows(capsys, "search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1", "--strand", "plus", "--columns",
                 "score,sstrand")
    assert plus[0][1] == "plus" and int(plus[0][0]) < 200  # the forward strand alone: a chance hit
    minus = cli_rows(capsys, "search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1", "--strand", "minus", "--columns",
                  "score,sstrand,sstart,send")
    assert minus[0] == ["1000", "minus", "10500", "10001"]


def test_minus_strand_hits_in_sam_pair_json_and_fasta(capsys, tmp_path, reverse_query, lambda_seq):
    pysam = pytest.importorskip("pysam")

    sam = tmp_path / "hits.sam"
    sam.write_text("\n".join("\t".join(r) for r in cli_rows(capsys, "search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1",
                                                          "--format", "sam", "--top", "1")) + "\n")
    with pysam.AlignmentFile(str(sam), "r") as handle:
        (read,) = list(handle)
    assert read.is_reverse and read.reference_start == 10000 and read.cigarstring == "500="
    assert read.query_sequence == lambda_seq[10000:10500]  # SEQ: the query reverse-complemented
    import json

    code = main(["search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1", "--format", "json", "--top", "1"])
    record = json.loads(capsys.readouterr().out.splitlines()[0])
    assert code == 0 and record["sstrand"] == "minus" and (record["sstart"], record["send"]) == (10500, 10001)
    report = main(["search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1", "--format", "pair", "--top", "1"])
    text = capsys.readouterr().out
    first = [line.split() for line in text.splitlines() if line.startswith(("rev ", "J02459.1 "))][:2]
    assert report == 0 and first[0][1] == "1" and first[1][1] == "10500" and first[1][3] == "10451"
    from Bio import Align

    (alignment,) = Align.parse(io.StringIO(text), "emboss")  # the strand read from the subject's positions
    assert alignment.coordinates[1, 0] == 10500 and alignment.coordinates[1, -1] == 10000


def test_top_counts_hits_over_both_strands(tmp_path):
    """Three database sequences, one matching the query's plus strand, two its minus strand: --top 2
    keeps the two best whatever their strand; each sequence once, on its better strand."""
    query = "ACGTTGCAAGGCTTACCGATCGGATCCATGCAAGT"
    db = tmp_path / "db.fa"
    db.write_text(f">plus\nTTTT{query[:30]}TTTT\n>minus_long\nGG{reverse_complement(query)}GG\n"
                  f">minus_short\nCC{reverse_complement(query[5:25])}CC\n")
    (_, hits), = list(search(query, str(db), top=2, backend="cpu", max_hsps=1))
    assert [(h.aln.target_id, h.aln.strand) for h in hits] == [("minus_long", "minus"), ("plus", "plus")]
    (_, hits), = list(search(query, str(db), top=5, backend="cpu", max_hsps=1))
    assert [h.aln.target_id for h in hits] == ["minus_long", "plus", "minus_short"]


def test_ambiguity_codes_complement_on_the_minus_strand(tmp_path):
    """A query with IUPAC codes: its minus-strand hit equals the plus-strand hit of its reverse complement
    (R<->Y, K<->M, B<->V, D<->H; S, W, N unchanged), coordinates mirrored."""
    query = "ACGRTYKMACBVDHSWNACGTGGCA"
    db = tmp_path / "db.fa"
    db.write_text(">s\nTTTTACGATCGTACCGATGACCTAGCATCGACGTGGCATTTT\n")
    (_, minus), = list(search(query, str(db), strand="minus", backend="cpu", max_hsps=1))
    (_, plus), = list(search(reverse_complement(query), str(db), strand="plus", backend="cpu", max_hsps=1))
    a, b = minus[0].aln, plus[0].aln
    assert (a.score, a.cigar(), a.target_start, a.target_end) == (b.score, b.cigar(), b.target_start, b.target_end)
    assert a.query_seq == b.query_seq == reverse_complement(query) and a.strand == "minus" and b.strand == "plus"


def test_strand_is_for_nucleotides():
    with pytest.raises(NwalignError, match="strand applies to nucleotide searches"):
        list(search("MKTAYIAKQRQISF", SP196, strand="minus", backend="cpu", max_hsps=1))
    with pytest.raises(NwalignError, match="choose from both, plus, minus"):
        list(search("ACGT", LAMBDA, strand="reverse", backend="cpu", max_hsps=1))
    (_, hits), = list(search("MKTAYIAKQRQISFVKSHFSRQ", SP196, top=1, backend="cpu", max_hsps=1))
    assert hits[0].aln.strand is None


@pytest.mark.parametrize("columns", [None, "std", "qseqid sseqid pident length mismatch gapopen qstart qend sstart "
                                             "send evalue bitscore sstrand qcovhsp score"])
def test_blast_tabular_parses_with_biopython(capsys, reverse_query, columns):
    """The default output and --columns, protein and DNA, parse with Bio.SearchIO's blast-tab reader."""
    from Bio import SearchIO

    for query, db in ((reverse_query, LAMBDA), (OPAL, SP196)):
        argv = ["search", query, db, "--backend", "cpu", "--top", "3", "--max-hsps", "1"] + (["--columns", columns] if columns else [])
        assert main(argv) == 0
        out = capsys.readouterr().out
        fields = None if columns in (None, "std") else columns.split()
        if fields:
            fields = [{"score": "score"}.get(f, f) for f in fields]
        results = list(SearchIO.parse(io.StringIO(out), "blast-tab", **({"fields": fields} if fields else {})))
        assert results and all(len(r.hits) >= 1 for r in results)
        hsp = results[0].hsps[0]
        assert hsp.evalue >= 0 and hsp.bitscore > 0


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["tsv", "sam"])
def test_gpu_search_on_both_strands_equals_the_cpu(capsys, tmp_path, reverse_query, lambda_seq, fmt):
    """The GPU scan and aligner on both strands: the same hits as the CPU engine, byte for byte."""
    queries = tmp_path / "q.fa"
    queries.write_text(open(reverse_query).read() + f">fwd\n{lambda_seq[30000:30700]}\n>mix\n"
                       f"{lambda_seq[5000:5200]}{reverse_complement(lambda_seq[40000:40300])}\n")
    out = {}
    for backend in ("cpu", "cuda"):
        assert main(["search", str(queries), LAMBDA, "--max-hsps", "1", "--backend", backend, "--format", fmt, "--top", "3",
                     "--columns", "std,sstrand,score,cigar"]) == 0
        out[backend] = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("@PG")]
    assert out["cpu"] == out["cuda"] and any("minus" in line or "\t16\t" in line for line in out["cpu"])


def test_pair_on_both_strands_reports_the_better_one(capsys, reverse_query):
    """pair --strand both: the query's reverse complement aligns whole to lambda's 10,001-10,500 (local,
    +5/-4: 2,500), reported on the minus strand; without --strand nothing changes (no strand column)."""
    rows = cli_rows(capsys, "pair", reverse_query, LAMBDA, "--mode", "local", "--strand", "both", "--format", "tsv",
                 "--columns", "score,qstart,qend,sstart,send,sstrand,cigar")
    assert rows == [["2500", "1", "500", "10500", "10001", "minus", "500="]]
    rows = cli_rows(capsys, "pair", reverse_query, LAMBDA, "--mode", "local", "--strand", "plus", "--format", "tsv",
                 "--columns", "score,sstrand")
    assert rows[0][1] == "plus" and int(rows[0][0]) < 2500
    assert cli_rows(capsys, "pair", reverse_query, LAMBDA, "--mode", "local", "--format", "tsv", "--columns",
                 "sstrand") == [["N/A"]]
    code = main(["pair", SP196, SP196, "--strand", "minus"])
    assert code == 2 and "applies to nucleotide" in capsys.readouterr().err


def test_the_strand_columns_parse_with_comments(capsys, reverse_query):
    """--header (BLAST's -outfmt 7) with sstrand and qcovhsp: Bio.SearchIO knows their titles."""
    from Bio import SearchIO

    assert main(["search", reverse_query, LAMBDA, "--backend", "cpu", "--max-hsps", "1", "--top", "2", "--header", "--columns",
                 "std,sstrand,qcovhsp"]) == 0
    (result,) = list(SearchIO.parse(io.StringIO(capsys.readouterr().out), "blast-tab", comments=True))
    assert result.hsps[0].bitscore == 902


def _btop_rows(btop: str) -> tuple[str, str] | None:
    """The (qseq, sseq) that a BTOP string spells, with the identical runs left as '=' (their letters are
    not in BTOP), or None when it holds a pair of identical letters (no BTOP operation is one)."""
    import re

    q, s = [], []
    for number, pair in re.findall(r"(\d+)|([A-Za-z-]{2})", btop):
        if number:
            q.append("=" * int(number))
            s.append("=" * int(number))
        elif pair[0] == pair[1]:
            return None
        else:
            q.append(pair[0])
            s.append(pair[1])
    return "".join(q), "".join(s)


@pytest.mark.parametrize("strand", ["plus", "minus"])
def test_btop_spells_the_rows_shown_on_either_strand(tmp_path, capsys, strand):
    """A 600-nt lambda fragment with one substitution and a 3-base insertion, searched as it is and as its
    reverse complement: BTOP spells exactly the qseq and sseq of its row (blastn's orientation: the query's
    plus strand), its identical runs where the letters agree; never a pair of identical letters."""
    lam = read_fasta(os.path.join(DATA, "phage_lambda_J02459.fasta"))[0].seq
    frag = lam[1000:1600]
    frag = frag[:100] + ("A" if frag[100] != "A" else "C") + frag[101:300] + "GGG" + frag[300:]
    query = frag if strand == "plus" else reverse_complement(frag)
    (tmp_path / "q.fa").write_text(f">q\n{query}\n")
    (row,) = cli_rows(capsys, "search", str(tmp_path / "q.fa"), os.path.join(DATA, "phage_lambda_J02459.fasta"),
                      "--top", "1", "--max-hsps", "1", "--backend", "cpu", "--columns", "sstrand,btop,qseq,sseq")
    got_strand, btop, qseq, sseq = row
    assert got_strand == strand
    spelled = _btop_rows(btop)
    assert spelled is not None, btop
    q, s = spelled
    assert len(q) == len(qseq) == len(sseq) and q.count("-") == 0 and s.count("-") == 3  # the insertion
    for a, b, x, y in zip(q, s, qseq, sseq):
        assert (a == b == "=" and x == y) or (a, b) == (x, y)
    assert sum(1 for a, b in zip(q, s) if a != "=" and "-" not in (a, b)) == 1  # the substitution
