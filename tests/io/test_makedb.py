"""nwalign makedb in blocks of whole records: the same file as the record-by-record path whatever the
block size, compression or line ends; standard input; bounded memory; every bad input one error."""

import bz2
import filecmp
import gzip
import io
import lzma
import os
import sys
import tracemalloc

import numpy as np
import pytest

from nwalign.cli import main
from nwalign.io.database import database_from_fasta, write_database
from nwalign.io.makedb import makedb
from nwalign.errors import NwalignError

CASES = {
    "names": ">a1 first desc  \nACGT\nac\n>b2\tx y\t\nGG\n>a1 again\nTTTT\n",
    "blank_headers": ">\nACGT\n>  lead  space \nGGA\n> \t\nC\n>x\x1cy z\nAA\n",
    "crlf": ">p1 one\r\nMKV*\r\nLL\r\n>p2\r\nW\r\n",
    "cr_only": ">p1 one\rMKV\rLL\r>p2\rW\r",
    "bom_and_blank_lines": "\ufeff\n\n  \n>s1\nmkvl\n\n>s2 d\n  ac gt  \n",
    "no_final_newline": ">s1\nACGU\n>s2\nUUAG",
    "many": "".join(f">s{k} d{k % 3}\n{'ACGT' * (1 + k % 5)}\n" for k in range(300)),
}


def _python_path(path, out):
    write_database(database_from_fasta(str(path)), str(out))


@pytest.mark.parametrize("block", [8, 50, 1 << 20])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_file_as_the_record_by_record_path(tmp_path, case, block):
    """Byte for byte (header, names, offsets, encoded residues, checksums) the file that
    write_database(database_from_fasta(...)) writes, with blocks small enough that records span them."""
    raw = CASES[case].encode("utf-8")
    for name, data in (("plain.fa", raw), ("z.fa.gz", gzip.compress(raw)), ("z.fa.bz2", bz2.compress(raw)),
                       ("z.fa.xz", lzma.compress(raw))):
        source = tmp_path / name
        source.write_bytes(data)
        db = makedb(str(source), str(tmp_path / "new.nwdb"), block_bytes=block)
        _python_path(source, tmp_path / "old.nwdb")
        assert filecmp.cmp(tmp_path / "new.nwdb", tmp_path / "old.nwdb", shallow=False), (case, name)
        assert list(db.ids) == database_from_fasta(str(source)).ids
    assert sorted(os.listdir(tmp_path)) == sorted(["plain.fa", "z.fa.gz", "z.fa.bz2", "z.fa.xz", "new.nwdb", "old.nwdb"])


def test_ids_repeated_across_blocks_are_found(tmp_path):
    text = "".join(f">id{k}\nACGT\n" for k in range(200)) + ">id3 again\nGG\n"
    (tmp_path / "a.fa").write_text(text)
    assert not makedb(str(tmp_path / "a.fa"), str(tmp_path / "a.nwdb"), block_bytes=64).ids_unique
    (tmp_path / "b.fa").write_text(text.replace("id3 again", "id200"))
    assert makedb(str(tmp_path / "b.fa"), str(tmp_path / "b.nwdb"), block_bytes=64).ids_unique


def test_standard_input(tmp_path, monkeypatch, capsys):
    text = CASES["names"].encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(text))))
    assert main(["makedb", "-", "-o", str(tmp_path / "in.nwdb")]) == 0
    assert "3 sequences, 12 residues" in capsys.readouterr().err
    (tmp_path / "f.fa").write_bytes(text)
    _python_path(tmp_path / "f.fa", tmp_path / "f.nwdb")
    assert filecmp.cmp(tmp_path / "in.nwdb", tmp_path / "f.nwdb", shallow=False)


def test_memory_stays_bounded(tmp_path):
    """A FASTA of 48 Mb is built with a few blocks of 256 kB in memory (NumPy's and Python's allocations
    traced), not the whole file: the residues and names go through scratch files."""
    rng = np.random.default_rng(5)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    with open(tmp_path / "big.fa", "wb") as out:
        for k in range(480):
            seq = letters[rng.integers(0, 20, 100_000)].tobytes()
            out.write(f">r{k} random\n".encode() + b"\n".join(seq[i:i + 60] for i in range(0, len(seq), 60)) + b"\n")
    tracemalloc.start()
    try:
        db = makedb(str(tmp_path / "big.fa"), str(tmp_path / "big.nwdb"), block_bytes=1 << 18, threads=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert db.total_length == 48_000_000 and db.count == 480
    assert peak < 24_000_000, peak  # half the residues
    assert db.record(479).seq == database_from_fasta(str(tmp_path / "big.fa")).record(479).seq


@pytest.mark.parametrize("data, words", [
    (b"", "empty file, no FASTA records"),
    (b"  \n\n \t\n", "empty file, no FASTA records"),
    (b"ACGT\n>x\nAC\n", "not a FASTA file (first line 'ACGT'"),
    (b">x\nAC\x00GT\n", "binary data, not a FASTA file"),
    (b">x caf\xc3\xa9\nACGT\n", "non-ASCII bytes, not a FASTA file"),
    (b">a\nAC\n>b second\n\n>c\nGG\n", "record 2 (b) has an empty sequence"),
    (gzip.compress(b">a\nACGT\n" * 1000)[:-30], "corrupt or truncated compressed file"),
])
def test_bad_input_is_one_error_and_leaves_nothing(tmp_path, capsys, data, words):
    (tmp_path / "in.fa").write_bytes(data)
    assert main(["makedb", str(tmp_path / "in.fa"), "-o", str(tmp_path / "out.nwdb")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert os.listdir(tmp_path) == ["in.fa"]  # no database, no scratch files


def test_an_empty_record_far_into_the_file_is_named(tmp_path):
    text = "".join(f">s{k}\nACGT\n" for k in range(500)) + ">gap here\n>s501\nAC\n"
    (tmp_path / "in.fa").write_text(text)
    with pytest.raises(NwalignError, match=r"record 501 \(gap\) has an empty sequence"):
        makedb(str(tmp_path / "in.fa"), str(tmp_path / "out.nwdb"), block_bytes=100)


def test_unreadable_input_and_unwritable_output(tmp_path, capsys):
    assert main(["makedb", str(tmp_path / "missing.fa"), "-o", str(tmp_path / "o.nwdb")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["makedb", str(tmp_path), "-o", str(tmp_path / "o.nwdb")]) == 2
    assert "is a directory" in capsys.readouterr().err
    (tmp_path / "in.fa").write_text(">a\nAC\n")
    assert main(["makedb", str(tmp_path / "in.fa"), "-o", str(tmp_path / "no" / "o.nwdb")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(NwalignError, match="cannot write the database"):
        makedb(str(tmp_path / "in.fa"), str(tmp_path / "no" / "o.nwdb"))
