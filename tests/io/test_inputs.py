"""FASTA reading, alphabets, encoding and scoring schemes, including bad input."""

import bz2
import gzip
import io
import lzma
import sys

import numpy as np
import pytest

from nwalign.errors import NwalignError
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import Record, detect_alphabet, read_fasta
from nwalign.io.simulate import parse_lengths, random_records

FASTA = b">seq1 first record\nACGTAC\ngtac\n>seq2\nTTTT\n"


@pytest.mark.parametrize("pack", [lambda b: b, gzip.compress, bz2.compress, lzma.compress])
def test_read_plain_and_compressed(tmp_path, pack):
    path = tmp_path / "in.fa.anything"  # compression is detected from bytes, not the name
    path.write_bytes(pack(FASTA))
    recs = read_fasta(str(path))
    assert [(r.id, r.seq) for r in recs] == [("seq1", "ACGTACGTAC"), ("seq2", "TTTT")]
    assert recs[0].description == "seq1 first record"


def test_read_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(FASTA))))
    assert len(read_fasta("-")) == 2


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"   \n\n", "empty file"),
    (b"hello world\nthis is not fasta\n", "not a FASTA file"),
    (b">a\nACGT\n>b\n\n>c\nAC\n", "record 2 \\(b\\) has an empty sequence"),
    (b"\x00\x01\x02binary", "binary data"),
    ("\u00e9\u00e9".encode(), "non-ASCII"),
])
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.fa"
    path.write_bytes(content)
    with pytest.raises(NwalignError, match=message):
        read_fasta(str(path))


def test_truncated_gzip(tmp_path):
    path = tmp_path / "t.fa.gz"
    path.write_bytes(gzip.compress(FASTA * 100)[:-20])
    with pytest.raises(NwalignError, match="corrupt or truncated"):
        read_fasta(str(path))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(NwalignError, match="no such file"):
        read_fasta(str(tmp_path / "nope.fa"))
    with pytest.raises(NwalignError, match="is a directory"):
        read_fasta(str(tmp_path))


def test_detect_alphabet():
    assert detect_alphabet([Record("a", "", "ACGTNRY")]) == "dna"
    assert detect_alphabet([Record("a", "", "ACGU")]) == "rna"
    assert detect_alphabet([Record("a", "", "MKVLAT")]) == "protein"


def test_encoding_and_bad_letters():
    dna = make_scoring("dna")
    codes = dna.encode(Record("r", "", "ACGTU"))
    assert codes.dtype == np.uint8 and codes[3] == codes[4]  # U scores as T
    with pytest.raises(NwalignError, match=r"record r: letter 'Z' at position 3"):
        dna.encode(Record("r", "", "ACZ"), "file.fa")
    protein = make_scoring("protein")
    assert protein.encode(Record("p", "", "U"))[0] == protein.alphabet.index("C")  # selenocysteine as C (blastp)
    with pytest.raises(NwalignError, match="letter '-'"):
        protein.encode(Record("p", "", "AC-D"))


def test_scoring_defaults_and_errors(tmp_path):
    prot = make_scoring("protein")
    assert (prot.matrix_name, prot.gap_open, prot.gap_extend) == ("BLOSUM62", 11, 1)
    dna = make_scoring("dna")
    assert (dna.gap_open, dna.gap_extend, dna.matrix[0, 0], dna.matrix[0, 1]) == (10, 1, 5, -4)
    assert make_scoring("dna", matrix="NUC.4.4").matrix_name == "NUC.4.4"
    with pytest.raises(NwalignError, match="unknown matrix 'BLOSUM99'"):
        make_scoring("protein", matrix="BLOSUM99")
    with pytest.raises(NwalignError, match="non-negative"):
        make_scoring("protein", gap_open=-1)
    with pytest.raises(NwalignError, match="must not exceed"):
        make_scoring("protein", gap_open=1, gap_extend=2)
    with pytest.raises(NwalignError, match="unknown mode"):
        make_scoring("protein", mode="overlap")
    with pytest.raises(NwalignError, match="not both"):
        make_scoring("dna", matrix="NUC.4.4", match=1)
    with pytest.raises(NwalignError, match="use a matrix for protein"):
        make_scoring("protein", match=2)


def test_matrix_from_ncbi_file(tmp_path):
    path = tmp_path / "tiny.mat"
    path.write_text("# tiny\n   A  C  G  T\nA  2 -1 -1 -1\nC -1  2 -1 -1\nG -1 -1  2 -1\nT -1 -1 -1  2\n")
    sc = make_scoring("dna", matrix=str(path))
    assert sc.matrix_name == "tiny.mat" and sc.matrix[0, 0] == 2 and sc.alphabet == "ACGT"
    bad = tmp_path / "bad.mat"
    bad.write_text("   A  C\nA 1.5 0\nC 0 1\n")
    with pytest.raises(NwalignError, match="integers"):
        make_scoring("dna", matrix=str(bad))


def test_random_records_are_seeded():
    a = random_records([50, 60], "dna", 3)
    b = random_records([50, 60], "dna", 3)
    assert [r.seq for r in a] == [r.seq for r in b] and [len(r) for r in a] == [50, 60]
    assert set("".join(r.seq for r in a)) <= set("ACGT")
    assert parse_lengths("10k,2") == [10000, 2]
    with pytest.raises(NwalignError):
        parse_lengths("1,2,3")
    with pytest.raises(NwalignError):
        random_records([0], "dna", 1)


def test_mutate_is_seeded_and_changes_about_rate():
    from nwalign.io.simulate import mutate

    rec = random_records([20000], "dna", 4)[0]
    a = mutate(rec, 0.05, 9)
    b = mutate(rec, 0.05, 9)
    assert a.seq == b.seq and a.seq != rec.seq and set(a.seq) <= set("ACGT")
    assert abs(len(a.seq) - len(rec.seq)) < 0.01 * len(rec.seq)
    assert mutate(rec, 0.0, 9).seq == rec.seq
    with pytest.raises(NwalignError, match="probability"):
        mutate(rec, 1.5, 1)
    pair = random_records([500, 999], "dna", 2, mutate_rate=0.1)
    assert pair[0].seq != pair[1].seq and pair[1].id.endswith("_mut0.1")


def test_read_fasta_matches_biopython(tmp_path):
    """Both readers give Biopython's FASTA records (ids, descriptions as Bio.SeqIO keeps them, upper-cased
    residues): CRLF, lower case, blank lines, tabs and spaces, leading blank lines, no final newline,
    headers with leading spaces or no words, '>' inside a header, gzip."""
    import gzip
    import io

    from Bio import SeqIO

    from nwalign.io.sequences import read_fasta_arrays

    text = ("\n\n>a first record\r\nacgT\r\n\r\nGG tt\n>b\tdesc with\ttabs\n  MKV\n>  c  lead \nN\n>\nWW\n"
            ">d>e\n*-x\n>   \nAA")
    for name, data in (("x.fa", text.encode()), ("x.fa.gz", gzip.compress(text.encode()))):
        path = tmp_path / name
        path.write_bytes(data)
        bio = list(SeqIO.parse(io.StringIO(text.lstrip()), "fasta"))  # blank lines before the first header: skipped
        recs = read_fasta(str(path))
        assert [r.description for r in recs] == [r.description for r in bio]
        assert [r.id for r in recs] == [r.id or f"record{k}" for k, r in enumerate(bio, start=1)] == \
            ["a", "b", "c", "record4", "d>e", "record6"]
        assert [r.seq for r in recs] == ["".join(str(r.seq).split()).upper() for r in bio]
        ids, desc, residues, offsets = read_fasta_arrays(str(path))
        assert ids == [r.id for r in recs] and desc == [r.description for r in recs]
        assert [residues[offsets[k]:offsets[k + 1]].tobytes().decode() for k in range(len(ids))] == \
            [r.seq for r in recs] == ["ACGTGGTT", "MKV", "N", "WW", "*-X", "AA"]


def test_read_fasta_arrays_in_pieces(tmp_path, monkeypatch):
    """The vectorised reader cut into pieces of a few bytes (headers, line ends and records across piece
    borders), on a plain file (residues compacted into the file's own buffer), gzip, and a read-only
    buffer (the separate array): Biopython's records every time, and the same arrays for all three."""
    import io

    from Bio import SeqIO

    from nwalign.io import sequences as seqs

    rng = np.random.default_rng(4)
    parts = []
    for k in range(60):
        seq = "".join(rng.choice(list("ACGTNacgt"), int(rng.integers(1, 90))))
        lines = [seq[x:x + int(rng.integers(3, 20))] for x in range(0, len(seq), 7)]
        parts.append(f">r{k} some description {k}\n" + ("\r\n" if k % 3 == 0 else "\n").join(lines) + "\n")
    text = "".join(parts)
    bio = list(SeqIO.parse(io.StringIO(text), "fasta"))
    want = [(r.id, r.description, "".join(str(r.seq).split()).upper()) for r in bio]
    plain, packed = tmp_path / "x.fa", tmp_path / "x.fa.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    for chunk in (5, 64, 1 << 21):
        monkeypatch.setattr(seqs, "_CHUNK", chunk)
        got = []
        for path in (plain, packed, "read-only"):
            if path == "read-only":  # bytes, as standard input gives them
                monkeypatch.setattr(seqs, "_read_bytes", lambda p: text.encode())
                path = plain
            ids, desc, residues, offsets = seqs.read_fasta_arrays(str(path))
            got.append((ids, desc, residues.tobytes(), offsets.tolist()))
            records = [(i, d, residues[offsets[k]:offsets[k + 1]].tobytes().decode())
                       for k, (i, d) in enumerate(zip(ids, desc))]
            assert records == want, (chunk, path)
        monkeypatch.undo()
        assert got[0] == got[1] == got[2]


def test_read_fasta_arrays_errors(tmp_path):
    from nwalign.io.sequences import read_fasta_arrays

    for content, message in ((">a\nACGT\n>b\n\n>c\nAC\n", "record 2 (b) has an empty sequence"),
                             ("", "empty file"), ("ACGT\n", "not a FASTA file")):
        path = tmp_path / "bad.fa"
        path.write_text(content)
        with pytest.raises(NwalignError, match=message.replace("(", r"\(").replace(")", r"\)")):
            read_fasta_arrays(str(path))


def test_bom_and_cr_only_line_endings(tmp_path):
    """A UTF-8 byte-order mark and old Mac (CR-only) line endings read like plain FASTA, by both readers."""
    from nwalign.io.sequences import read_fasta_arrays

    for name, data in (("bom.fa", b"\xef\xbb\xbf>a x\nACGT\n>b\nGG\n"), ("cr.fa", b">a x\rACGT\r>b\rGG\r"),
                       ("bomcr.fa.gz", gzip.compress(b"\xef\xbb\xbf>a x\rAC\rGT\r>b\rGG"))):
        path = tmp_path / name
        path.write_bytes(data)
        assert [(r.id, r.description, r.seq) for r in read_fasta(str(path))] == [("a", "a x", "ACGT"), ("b", "b", "GG")]
        ids, desc, residues, offsets = read_fasta_arrays(str(path))
        assert ids == ["a", "b"] and residues.tobytes() == b"ACGTGG" and offsets.tolist() == [0, 4, 6]


def _cli(capsys, *args):
    from nwalign.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_alphabet_mismatch_between_inputs_is_refused(tmp_path, capsys):
    """Protein queries against a DNA database (or the other way round) stop in one line unless --alphabet
    forces them; pair and allpairs --against likewise."""
    prot = tmp_path / "p.fa"
    prot.write_text(">p\nMKVLEWFIDQ\n")
    dna = tmp_path / "d.fa"
    dna.write_text(">d1\nACGTACGTTTGACCA\n>d2\nGGCATTACAGTTACA\n")
    for args in (["search", str(prot), str(dna)], ["pair", str(prot), str(dna)],
                 ["allpairs", str(dna), "--against", str(prot)]):
        code, out, err = _cli(capsys, *args)
        assert code == 2 and out == "" and err.count("\n") == 1, (args, err)
        assert "is protein but" in err and "is DNA" in err and "--alphabet" in err
    code, out, err = _cli(capsys, "search", str(prot), str(dna), "--alphabet", "protein", "-q")
    assert code == 0


def test_peptide_of_nucleotide_codes_warns_once(tmp_path, capsys):
    pep = tmp_path / "pep.fa"
    pep.write_text(">a\nMKVAGHWRYSD\n>b\nMKVAGHWRYTD\n")
    code, out, err = _cli(capsys, "pair", str(pep), str(pep), "--format", "tsv")
    assert code == 0 and err.count("warning") == 1 and "--alphabet protein" in err
    code, out, err = _cli(capsys, "pair", str(pep), str(pep), "--format", "tsv", "-q")
    assert code == 0 and err == ""
    code, out2, err = _cli(capsys, "pair", str(pep), str(pep), "--format", "tsv", "--alphabet", "protein", "-v")
    assert code == 0 and "warning" not in err and "alphabet: protein (as given)" in err and out2 != out
    # plain DNA, however short, and real data pass silently; -v says why
    from helpers import GENOME_A, GENOME_B

    code, out, err = _cli(capsys, "pair", GENOME_A, GENOME_B, "--score-only", "-v", "--backend", "cpu")
    assert code == 0 and "warning" not in err and "alphabet: dna (only nucleotide letters in" in err


@pytest.mark.parametrize("text, message", [
    ("   A  C  G  T\nA  5 -4 -4 -4\nC -4  5 -4\nG -4 -4  5 -4\nT -4 -4 -4  5\n",
     "line 3: row 'C' has 3 scores; the header names 4 letters"),
    ("# comment\n   A  C  G  T\nA  5 -4 -4 -4\nC -3  5 -4 -4\nG -4 -4  5 -4\nT -4 -4 -4  5\n",
     "line 3: the matrix is not symmetric: A against C scores -4 but C against A -3"),
    ("", "empty matrix file"),
    ("# only a comment\n\n", "empty matrix file"),
])
def test_bad_matrix_files_are_refused_with_file_and_line(tmp_path, capsys, text, message):
    """A short row (Biopython fills it with zeros), an asymmetric matrix and an empty file."""
    path = tmp_path / "m.mat"
    path.write_text(text)
    with pytest.raises(NwalignError, match=message):
        make_scoring("dna", "global", str(path))
    fasta = tmp_path / "q.fa"
    fasta.write_text(">a\nACGTAC\n")
    code, out, err = _cli(capsys, "pair", str(fasta), str(fasta), "--matrix", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and str(path) in err


def test_a_compressed_input_too_long_for_the_scores_is_refused_while_it_streams(tmp_path, capsys):
    """A small gzip that expands to a record no scoring of these options can align is refused while it is
    decompressed (after about 3 bytes per allowed residue), not after filling the memory."""
    import resource

    from nwalign.scoring.schemes import max_sequence_length

    opts = ["--match", "5000", "--mismatch", "-5000", "--gap-open", "5000", "--gap-extend", "1"]
    limit = max_sequence_length("auto", None, 5000, -5000, 5000, 1)
    assert limit == 2**29 // 5000 - 2
    bomb = tmp_path / "bomb.fa.gz"
    bomb.write_bytes(gzip.compress(b">a\n" + b"ACGT" * 10_000_000 + b"\n", 9))  # 40 Mb in ~40 kB
    small = tmp_path / "q.fa"
    small.write_text(">q\nACGTAC\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, out, err = _cli(capsys, "pair", str(small), str(bomb), *opts)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB on Linux
    assert code == 2 and out == "" and "a record is longer than" in err and "refused while reading" in err
    assert grown < 100_000  # the 40 Mb record was never held whole (nor copied four times)
    # the same file passes with scores that allow it
    assert read_fasta(str(bomb), 50_000_000)[0].seq[:8] == "ACGTACGT"


def test_makedb_names_from_the_header_bytes_equal_the_python_path(tmp_path):
    """makedb builds the names section from the FASTA's header bytes with NumPy; the file is byte for byte
    the one the record-by-record path writes (tabs, trailing blanks, repeated ids, gzip, stdin-like
    single records), and the ids' distinctness is found either way."""
    import filecmp
    import gzip

    from nwalign.io.database import database_from_fasta, load_database, write_database
    from nwalign.io.makedb import makedb

    cases = {"plain.fa": ">a1 first desc  \nACGT\nac\n>b2\tx y\t\nGG\n>a1 again\nTTTT\n",
             "one.fa": ">only\nMKV\n", "distinct.fa": "".join(f">s{k} d{k % 3}\nACG\n" for k in range(500))}
    for name, text in cases.items():
        for path in (tmp_path / name, tmp_path / (name + ".gz")):
            path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
            db = makedb(str(path), str(tmp_path / "new.nwdb"))
            write_database(database_from_fasta(str(path)), str(tmp_path / "old.nwdb"))
            assert filecmp.cmp(tmp_path / "new.nwdb", tmp_path / "old.nwdb", shallow=False), name
            assert db.ids_unique == (name != "plain.fa") and list(load_database(str(tmp_path / "new.nwdb")).ids) == \
                database_from_fasta(str(path)).ids


def test_gzip_by_isal_equals_zlib_and_refuses_a_truncated_stream(tmp_path):
    """ISA-L (python-isal) inflates gzip where it is installed: the same bytes as zlib for a two-member
    file, and a truncated file is still one error."""
    import gzip
    import zlib

    import pytest

    from nwalign.errors import NwalignError
    from nwalign.io.sequences import _decompress, _gzip_engine, _inflate

    text = b"".join(b">r%d\n%s\n" % (k, b"ACGT" * (k + 1)) for k in range(2000))
    data = gzip.compress(text[:5000]) + gzip.compress(text[5000:])
    assert _inflate(data, _gzip_engine, "x", None) == _inflate(data, lambda: zlib.decompressobj(31), "x", None) == text
    with pytest.raises(NwalignError, match="corrupt or truncated"):
        _decompress(data[:-40], "x.fa.gz")
