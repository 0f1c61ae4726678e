"""The rules a user sees in every output, pinned by small hand-computed cases (docs/scoring.md,
"Coordinates and CIGAR"): CIGAR symbols (I = a query residue against a gap, D = a subject residue against
a gap, as SAM defines them with the subject as the reference), 1-based inclusive coordinates, identity,
the traceback's tie order (diagonal, then D, then I), the local end cell (the first best cell in row
order) and the order of tied hits (database order)."""

import json

import pytest

from nwalign.cli import main

# Query ACGTACGT against subject ACGACGT, DNA +5/-4, gaps 10/1, global: the only alignment with seven
# identities and one gap leaves the query's T at position 4 against a gap.
#     query   ACGTACGT
#     subject ACG-ACGT     score 7 x 5 - 10 = 25, CIGAR 3=1I4=, identity 7/8
INSERTION = ("ACGTACGT", "ACGACGT")


def _fasta(tmp_path, name, seq):
    path = tmp_path / f"{name}.fa"
    path.write_text(f">{name}\n{seq}\n")
    return str(path)


def _pair(capsys, tmp_path, query, subject, *options):
    code = main(["pair", _fasta(tmp_path, "q", query), _fasta(tmp_path, "s", subject), "--backend", "cpu",
                 *options])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _tsv(capsys, tmp_path, query, subject, columns, *options):
    out = _pair(capsys, tmp_path, query, subject, "--format", "tsv", "--columns", ",".join(columns), *options)
    return dict(zip(columns, out.rstrip("\n").split("\t")))


@pytest.mark.parametrize("query, subject, cigar, gapped", [
    (*INSERTION, "3=1I4=", ("ACGTACGT", "ACG-ACGT")),
    (INSERTION[1], INSERTION[0], "3=1D4=", ("ACG-ACGT", "ACGTACGT")),
    ("ACGTTCGT", "ACGACGT", "3=1I1X3=", ("ACGTTCGT", "ACG-ACGT")),
])
def test_cigar_symbols_in_every_format(capsys, tmp_path, query, subject, cigar, gapped):
    """The same hand-made alignment in TSV, SAM, JSON, FASTA and the pair report: I where the query has a
    residue against a gap, D where the subject has one, = and X for identical and different pairs."""
    row = _tsv(capsys, tmp_path, query, subject, ["cigar", "qstart", "qend", "sstart", "send", "length", "nident",
                                                  "pident", "gaps", "gapopen", "mismatch"])
    mismatches = cigar.count("X")
    assert row == {"cigar": cigar, "qstart": "1", "qend": str(len(query)), "sstart": "1", "send": str(len(subject)),
                   "length": "8", "nident": str(7 - mismatches), "pident": f"{100 * (7 - mismatches) / 8:.3f}",
                   "gaps": "1", "gapopen": "1", "mismatch": str(mismatches)}
    sam = [line.split("\t") for line in _pair(capsys, tmp_path, query, subject, "--format", "sam").splitlines()
           if not line.startswith("@")]
    assert [(f[0], f[1], f[2], f[3], f[5], f[9]) for f in sam] == [("q", "0", "s", "1", cigar, query)]
    record = json.loads(_pair(capsys, tmp_path, query, subject, "--format", "json"))
    assert record["cigar"] == cigar and record["gaps"] == 1
    fasta = _pair(capsys, tmp_path, query, subject, "--format", "fasta").splitlines()
    assert (fasta[1], fasta[3]) == gapped
    report = [line.split() for line in _pair(capsys, tmp_path, query, subject, "--format", "pair").splitlines()
              if line.startswith(("q ", "s "))]
    assert [(r[0], r[2]) for r in report] == [("q", gapped[0]), ("s", gapped[1])]


def test_sam_read_back_with_pysam(capsys, tmp_path):
    """pysam reads the SAM: an insertion (BAM_CINS) of the query's T at read position 3, every other read
    base on the reference base it matches, soft clips for a local alignment's unaligned query ends."""
    pysam = pytest.importorskip("pysam")  # in the test extras

    sam = tmp_path / "out.sam"
    sam.write_text(_pair(capsys, tmp_path, *INSERTION, "--format", "sam"))
    with pysam.AlignmentFile(str(sam), "r") as handle:
        (read,) = list(handle)
    assert read.cigartuples == [(pysam.CEQUAL, 3), (pysam.CINS, 1), (pysam.CEQUAL, 4)]
    assert read.get_aligned_pairs() == [(0, 0), (1, 1), (2, 2), (3, None), (4, 3), (5, 4), (6, 5), (7, 6)]
    assert read.reference_start == 0 and read.get_tag("AS") == 25 and read.get_tag("NM") == 1

    # local: query CCCACGTACGTCCC, subject TTACGACGTTT: the core aligns (25), the flanks are clipped
    sam.write_text(_pair(capsys, tmp_path, "CCC" + INSERTION[0] + "CCC", "TT" + INSERTION[1] + "TT",
                         "--format", "sam", "--mode", "local"))
    with pysam.AlignmentFile(str(sam), "r") as handle:
        (read,) = list(handle)
    assert read.cigarstring == "3S3=1I4=3S" and read.reference_start == 2  # POS 3
    assert read.query_alignment_sequence == INSERTION[0]


def test_a_tie_between_a_pair_and_two_gaps_takes_the_pair(capsys, tmp_path):
    """A against C with mismatch -4 and linear gaps of 2: a mismatch (-4) ties with a gap on each side
    (-2 - 2); the diagonal step comes first."""
    row = _tsv(capsys, tmp_path, "A", "C", ["score", "cigar"], "--mismatch=-4", "--gap-open", "2", "--gap-extend", "2")
    assert row == {"score": "-4", "cigar": "1X"}


def test_a_tie_between_the_two_gaps_takes_the_subjects_gap_last(capsys, tmp_path):
    """With mismatch -5 the two gaps win (-4), in either order; the traceback, from the end cell, takes
    the subject's residue against a gap (D) first, so the alignment ends with D: 1I1D."""
    row = _tsv(capsys, tmp_path, "A", "C", ["score", "cigar"], "--mismatch=-5", "--gap-open", "2", "--gap-extend", "2")
    assert row == {"score": "-4", "cigar": "1I1D"}


@pytest.mark.parametrize("query, subject, where", [
    ("ACGT", "ACGTTTACGT", ("1", "4", "1", "4")),  # the same row: the first column
    ("ACGTGGGGGACGT", "ACGT", ("1", "4", "1", "4")),  # the same column: the first row
    ("ACGTGGGGGACGT", "TTTACGT", ("1", "4", "4", "7")),
])
def test_local_ties_end_at_the_first_best_cell_in_row_order(capsys, tmp_path, query, subject, where):
    """Two equally good local alignments (ACGT, 20): the one ending at the first best cell in row order
    (query row, then subject column) is reported, 1-based inclusive."""
    row = _tsv(capsys, tmp_path, query, subject, ["score", "qstart", "qend", "sstart", "send"], "--mode", "local")
    assert row == {"score": "20", "qstart": where[0], "qend": where[1], "sstart": where[2], "send": where[3]}


def test_tied_hits_come_in_database_order(capsys, tmp_path):
    """Hits with equal scores are ranked by their place in the database (not by name); --top keeps the
    first of them."""
    query = _fasta(tmp_path, "query", "MKTAYIAKQRQISFVKSHFSRQ")
    db = tmp_path / "db.fa"
    db.write_text(">zeta\nMKTAYIAKQRQISFVKSHFSRQ\n>other\nMKTAYIAKQ\n>alpha\nMKTAYIAKQRQISFVKSHFSRQ\n")
    code = main(["search", query, str(db), "--backend", "cpu", "--max-hsps", "1", "--columns", "sseqid,score"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert [r[0] for r in rows] == ["zeta", "alpha", "other"] and rows[0][1] == rows[1][1]
    assert main(["search", query, str(db), "--backend", "cpu", "--max-hsps", "1", "--columns", "sseqid", "--top",
                 "1"]) == 0
    assert capsys.readouterr().out == "zeta\n"


@pytest.mark.parametrize("header", [False, True])
def test_table_rows_as_bytes_come_out_as_rows_as_str(header):
    """writers.tsv.Table: a block's rows as UTF-8 bytes (what the compiled loop writes) go to the stream's
    binary buffer, in order with the text around them; with comment lines, or on a stream without a
    buffer, they are decoded: the output is the same as for str rows."""
    import io

    from nwalign.output.writers.tsv import Table

    blocks = ["q1\ts1\t7\n", "q1\ts2\t5\n", "q2\ts\u00e91\t3\n"]
    outputs = []
    for kind in ("str", "bytes", "bytes-no-buffer"):
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n") if kind != "bytes-no-buffer" else io.StringIO()
        table = Table(out, ("qseqid", "sseqid", "score"), header, "nwalign test")
        for k, text in enumerate(blocks):
            table.write(text if kind == "str" or k == 1 else text.encode("utf-8"))
        table.end()
        out.flush()
        outputs.append(out.getvalue() if kind == "bytes-no-buffer" else raw.getvalue().decode("utf-8"))
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count("\n") == (3 if not header else 3 + 2 * 4 + 1)
