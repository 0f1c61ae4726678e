"""Bad inputs that once passed silently, hung or ended in a traceback: each now ends in one line on
stderr and exit status 2, before any output is written."""

import os
import stat
import time

import pytest

from nwalign.cli import main

from helpers import ROOT
OPAL = os.path.join(ROOT, "data", "queries_5_opal.fasta")
SP196 = os.path.join(ROOT, "data", "swissprot_first196.fasta")


def _one_line_error(capsys, argv, words):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    assert err.startswith("nwalign: error: ") and all(w in err for w in words), err
    return err


@pytest.fixture
def dna(tmp_path):
    path = tmp_path / "dna.fa"
    path.write_text(">a\nGATTACAGATTACA\n>b\nGATCACAGATTTCA\n>c\nGGTTACAGATTACA\n")
    return str(path)


@pytest.mark.parametrize("command", ["pair", "search", "allpairs"])
def test_a_matrix_value_beyond_the_score_range_is_refused(capsys, tmp_path, dna, command):
    """A matrix file's score at or beyond 2^31 wrapped silently in int32; now refused as --match is."""
    matrix = tmp_path / "big.mat"
    matrix.write_text("   A  C  G  T\nA  3000000000 -1 -1 -1\nC -1 1 -1 -1\nG -1 -1 1 -1\nT -1 -1 -1 1\n")
    inputs = {"pair": [dna, dna], "search": [dna, dna], "allpairs": [dna]}[command]
    _one_line_error(capsys, [command, *inputs, "--matrix", str(matrix)], ["big.mat", "A against A", "3e+09"])
    matrix.write_text(matrix.read_text().replace("3000000000", "999999"))  # the largest allowed
    assert main([command, *inputs, "--matrix", str(matrix)]) == 0


@pytest.mark.parametrize("body, words", [
    ("A  1 -1 -1 -1\nC -1  1 -1 -1\nG -1 -1  1 -1\n", ["no row for 'T'", "4 letters", "3 rows"]),
    ("A  1 -1 -1 -1\nC -1  1 -1 -1\nG -1 -1  1 -1\nT -1 -1 -1  1\nA  2 -1 -1 -1\n",
     ["line 6", "a second row for 'A'", "line 2"]),
])
def test_a_matrix_missing_or_repeating_a_row_is_named(capsys, tmp_path, dna, body, words):
    """A missing row was reported as 'not symmetric'; a second row for a letter was read silently."""
    matrix = tmp_path / "rows.mat"
    matrix.write_text("   A  C  G  T\n" + body)
    _one_line_error(capsys, ["pair", dna, dna, "--matrix", str(matrix)], ["rows.mat", *words])


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_matrix_name_is_refused(capsys, dna, value):
    _one_line_error(capsys, ["pair", dna, dna, "--matrix", value], ["--matrix", "give a matrix name"])


@pytest.mark.parametrize("value", ["nan", "-1", "-0.5"])
def test_max_evalue_must_be_a_number_at_least_zero(capsys, value):
    """NaN turned the filter off and a negative value returned nothing, both silently."""
    _one_line_error(capsys, ["search", OPAL, SP196, "--max-evalue", value], ["--max-evalue", ">= 0"])
    assert main(["search", OPAL, SP196, "--max-evalue", "0", "--top", "1"]) == 0  # zero: legal, nothing passes


def test_one_path_for_two_outputs_is_refused(capsys, tmp_path, dna):
    """allpairs -o X --matrix-out X wrote the matrix over the rows; a link to the same file likewise."""
    npy = tmp_path / "d.npy"
    link = tmp_path / "link.npy"
    link.symlink_to(npy)
    for out in (npy, link):
        _one_line_error(capsys, ["allpairs", dna, "-o", str(out), "--matrix-out", str(npy)], ["the same file"])
        assert not npy.exists()
    assert main(["allpairs", dna, "-o", str(tmp_path / "rows.tsv"), "--matrix-out", str(npy)]) == 0


@pytest.mark.parametrize("command", ["pair", "search", "allpairs"])
@pytest.mark.parametrize("scheduler, words", [("missing.json", ["no such scheduler file"]),
                                              ("", ["--scheduler", "give an address"])])
def test_a_missing_or_empty_scheduler_is_refused_at_once(capsys, dna, command, scheduler, words):
    """Dask waits for a scheduler file to appear (the command hung); an empty value ran a local cluster."""
    inputs = [dna] if command == "allpairs" else [dna, dna]
    started = time.monotonic()
    _one_line_error(capsys, [command, *inputs, "--scheduler", scheduler], words)
    assert time.monotonic() - started < 20


def test_a_database_file_follows_the_umask(tmp_path):
    """makedb's .nwdb was created 0600 whatever the umask: unreadable to a cluster's other users."""
    db = tmp_path / "sp.nwdb"
    old = os.umask(0o022)
    try:
        assert main(["makedb", SP196, "-o", str(db), "-q"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o644


def test_quiet_makedb_and_mutate_print_nothing_on_stderr(capsys, tmp_path, dna):
    assert main(["makedb", SP196, "-o", str(tmp_path / "db.fasta"), "-q"]) == 0  # a FASTA-like name warns
    assert main(["mutate", dna, "-q", "-o", str(tmp_path / "m.fa")]) == 0
    assert capsys.readouterr().err == ""
    assert main(["makedb", SP196, "-o", str(tmp_path / "db2.fasta")]) == 0
    assert "not FASTA" in capsys.readouterr().err


def test_align_takes_biopython_sequences():
    """nwalign.align(Seq(...), Seq(...)) raised AttributeError while search took Seq."""
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    import nwalign

    aln = nwalign.align(Seq("GATTACA"), Seq("GATCACA"))
    assert (aln.query_id, aln.target_id, aln.cigar()) == ("query", "target", "3=1X3=")
    aln = nwalign.align(SeqRecord(Seq("GATTACA"), id="q1"), "GATCACA")
    assert aln.query_id == "q1" and aln.score == 26
    with pytest.raises(nwalign.NwalignError, match="empty"):
        nwalign.align("", "ACGT")


@pytest.mark.parametrize("edit", ["letters", "ids_unique"])
def test_an_edited_database_header_is_refused(capsys, tmp_path, edit):
    """Two letters of a .nwdb's "letters" swapped gave other, wrong hits, and "ids_unique" set to true let
    duplicate ids out unrenamed, with exit 0: the header has its own checksum now."""
    import json

    import numpy as np

    db = tmp_path / "sp.nwdb"
    source = tmp_path / "dup.fa"  # duplicate ids: the header says so ("ids_unique": false)
    source.write_text(open(SP196).read() + ">sp|Q6GZX4|001R_FRG3G again\nMAFSAEDVLKEYDRRRRMEALLLSLYYPNDRKLLDYKEWSPPRVQVECPKAPVEWNNPPSEKGLIVGHFSGIKYKGEKAQASEVDVNKMCCWVSKFKDAMRRYQGIQTCKIPGKVLSDLDAKIKAYNLTVEGVEGFVRYSRVTKQHVAAFLKELRHSKQYENVNLIHYILTDKRVDIQHLEKDLVKDFKALVESAHRMRQGHMINVKYILYQLLKKHGHGPDGPDILTVKTGSKGVLYDDSFRKIYTDLGWKFTPL\n")
    assert main(["makedb", str(source), "-o", str(db), "-q"]) == 0
    raw = db.read_bytes()
    size = int(np.frombuffer(raw[8:16], dtype=np.uint64)[0])
    header = raw[16:16 + size]
    fields = json.loads(header)
    letters = fields["letters"]
    old, new = (f'"letters": "{letters}"', f'"letters": "{letters[1] + letters[0] + letters[2:]}"') \
        if edit == "letters" else ('"ids_unique": false', '"ids_unique": true ')  # the same length
    assert old.encode() in header
    db.write_bytes(raw[:16] + header.replace(old.encode(), new.encode()) + raw[16 + size:])
    _one_line_error(capsys, ["search", OPAL, str(db)], ["damaged .nwdb", "checksum of the header"])


def _header_edited(db, edit) -> None:
    """The .nwdb at ``db`` with its JSON header's fields changed by ``edit(fields)``, written back padded
    to the same length (as a hand edit would leave it)."""
    import json

    import numpy as np

    raw = db.read_bytes()
    size = int(np.frombuffer(raw[8:16], dtype=np.uint64)[0])
    fields = json.loads(raw[16:16 + size])
    edit(fields)
    header = json.dumps(fields).encode()
    assert len(header) <= size
    db.write_bytes(raw[:16] + header + b" " * (size - len(header)) + raw[16 + size:])


def test_a_database_header_without_its_checksum_is_refused_unless_it_predates_it(capsys, tmp_path):
    """The header's checksum deleted (then a changed letter order gave other hits, exit 0) is refused: a
    header that says it has one (checked_header) must; a file from before checksums (neither) still reads
    with the hits it always gave."""
    db = tmp_path / "sp.nwdb"
    assert main(["makedb", SP196, "-o", str(db), "-q"]) == 0
    assert main(["search", OPAL, str(db), "--backend", "cpu", "--top", "2"]) == 0
    want = capsys.readouterr().out

    def no_checksum(fields):
        del fields["crc32"]["header"]
    _header_edited(db, no_checksum)
    _one_line_error(capsys, ["search", OPAL, str(db)], ["damaged .nwdb", "checksum is missing"])

    def from_before(fields):
        del fields["checked_header"]
    _header_edited(db, from_before)
    assert main(["search", OPAL, str(db), "--backend", "cpu", "--top", "2"]) == 0
    assert capsys.readouterr().out == want


def test_messages_that_name_what_is_wrong(capsys, tmp_path, dna, monkeypatch):
    """Each names the real problem: both inputs on stdin, a 0 in a 1-based region, the option of the
    path (not -o), a missing plotting library before the benchmark runs, no GPU at all."""
    _one_line_error(capsys, ["search", "-", "-"], ["only one of QUERY and DATABASE", "stdin"])
    _one_line_error(capsys, ["mutate", dna, "--region", "0-5"], ["1-based", "at least 1"])
    _one_line_error(capsys, ["bench", "--kernels", "cpu", "--sizes", "50", "--json", str(tmp_path)],
                    ["--json", "is a directory"])
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    started = time.monotonic()
    _one_line_error(capsys, ["bench", "--kernels", "cpu", "--sizes", "20000", "--plot", str(tmp_path / "p.png")],
                    ["--plot needs matplotlib"])
    assert time.monotonic() - started < 10  # said before the benchmark, not after it
    monkeypatch.undo()
    from nwalign.backends import cuda

    if not cuda.gpu_count():
        _one_line_error(capsys, ["search", dna, dna, "--devices", "0,1"], ["--devices 0,1", "no GPU is visible"])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_is_one_line(capsys, tmp_path, dna):
    """Writing to a full device ended in an OSError traceback; now one line naming the output."""
    import subprocess
    import sys

    for argv in (["pair", dna, dna, "-o", "/dev/full"], ["mutate", dna, "-o", "/dev/full"],
                 ["search", OPAL, SP196, "-o", "/dev/full"],
                 ["bench", "--kernels", "cpu", "--sizes", "50", "--repeats", "1", "--warmup", "0", "-q",
                  "--json", "/dev/full"]):
        _one_line_error(capsys, argv, ["/dev/full", "cannot write", "No space left"])
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "nwalign", "pair", dna, dna], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr == "nwalign: error: stdout: cannot write (No space left on device)\n"


def test_a_matrix_that_cannot_be_reserved_is_one_line_and_leaves_nothing(capsys, tmp_path, dna, monkeypatch):
    """A .npy distance matrix is memory-mapped: on a full disk it ended in a bus error after all the work,
    leaving its temporary file; its space is now reserved first."""
    import errno

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full, raising=False)
    _one_line_error(capsys, ["allpairs", dna, "--matrix-out", str(tmp_path / "d.npy"), "-o", str(tmp_path / "r.tsv")],
                    ["--matrix-out", "cannot reserve", "No space left"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dna.fa"]


def test_gaps_and_digits_are_named_where_they_are(capsys, tmp_path, dna):
    """An aligned FASTA ('-', '.') or digits made the input 'protein' against a DNA one; now the character,
    the record and the position are named, whatever --alphabet says."""
    aligned = tmp_path / "aligned.fa"
    aligned.write_text(">x\nGATT-ACA\n>y\nGATT.ACA\n")
    for extra in ([], ["--alphabet", "dna"]):
        _one_line_error(capsys, ["pair", str(aligned), dna, *extra], ["aligned.fa", "record x, position 5", "'-'"])
    _one_line_error(capsys, ["allpairs", str(aligned)], ["record x, position 5"])


def test_a_duplicate_id_warning_is_given_once_for_one_file(capsys, tmp_path):
    twice = tmp_path / "dup.fa"
    twice.write_text(">a\nACGT\n>a\nACGA\n")
    assert main(["pair", str(twice), str(twice), "--format", "tsv"]) == 0
    assert capsys.readouterr().err.count("repeat an earlier record's id") == 1


def _bogus_frames(reply: bytes = b"\x00" * 7 + b"\x30" + b"\x01" * 8 + b"\xff" * 200) -> int:
    """A port where every connection is sent ``reply`` (by default a frame header announcing a huge
    message); returns the port."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)

    def serve():
        while True:
            conn, _ = server.accept()
            try:
                conn.sendall(reply)
            except OSError:
                pass
    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def test_no_dask_scheduler_at_the_address_or_in_the_file_is_one_line_in_seconds(capsys, tmp_path):
    """An HTTP server at the address kept the handshake waiting for ever; a refused port took 31 s; a
    garbage scheduler file ended in an AssertionError traceback."""
    pytest.importorskip("distributed")
    import http.server
    import threading

    from nwalign.io.database import database_from_fasta, write_database

    db = tmp_path / "sp.nwdb"
    write_database(database_from_fasta(SP196), str(db))
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bogus = _bogus_frames()  # Dask read a length of 3 EiB and ended in "out of memory"
    garbage = tmp_path / "scheduler.json"
    garbage.write_text("garbage")
    try:
        for scheduler, words in ((f"tcp://127.0.0.1:{server.server_port}", ["no Dask scheduler answered"]),
                                 ("tcp://127.0.0.1:9", ["connection refused", "127.0.0.1:9"]),
                                 (f"tcp://127.0.0.1:{bogus}", ["not a Dask scheduler", "protocol"]),
                                 (str(garbage), ["not a Dask scheduler"])):
            started = time.monotonic()
            _one_line_error(capsys, ["search", OPAL, str(db), "--backend", "cpu", "--scheduler", scheduler],
                            ["--scheduler", *words])
            assert time.monotonic() - started < 15, scheduler
    finally:
        server.shutdown()


def test_a_reply_that_msgpack_refuses_is_one_line(tmp_path):
    """Well-formed Dask frames around bytes msgpack cannot read: Dask's CRITICAL "Failed to deserialize"
    traceback came before nwalign's own line."""
    pytest.importorskip("distributed")
    import struct
    import subprocess
    import sys

    payload = b"\xc1" * 32  # 0xc1: the one byte msgpack never uses
    message = struct.pack("<QQ", 1, len(payload)) + payload
    port = _bogus_frames(struct.pack("<Q", len(message)) + message)
    db = tmp_path / "sp.nwdb"
    assert main(["makedb", SP196, "-o", str(db), "-q"]) == 0
    run = subprocess.run([sys.executable, "-m", "nwalign", "search", OPAL, str(db), "--backend", "cpu",
                          "--scheduler", f"tcp://127.0.0.1:{port}"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "not a Dask scheduler" in run.stderr and "protocol" in run.stderr


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_makedb_never_replaces_a_fifo_or_a_directory(capsys, tmp_path, kind):
    """`makedb -o` on a FIFO replaced it with a regular file (as root, -o /dev/null was destroyed): a path
    that is not a regular file is refused before any input is read, and left as it was."""
    target = tmp_path / "out"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    _one_line_error(capsys, ["makedb", SP196, "-o", str(target)], [str(target), "a FIFO" if kind == "fifo" else
                                                                    "a directory"])
    mode = os.stat(target).st_mode
    assert (stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISDIR(mode)) and os.listdir(tmp_path) == ["out"]


def test_bench_never_writes_over_its_input_or_one_output_over_another(capsys, tmp_path):
    """`bench --json in.fa --input in.fa` overwrote the input; `--json X --tsv X` kept only the TSV."""
    source = tmp_path / "in.fa"
    source.write_text(">a\nGATTACAGATTACA\n>b\nGATCACAGATTTCA\n")
    before = source.read_text()
    _one_line_error(capsys, ["bench", "--input", str(source), "--json", str(source), "--kernels", "cpu",
                             "--backend", "cpu", "-q"], ["--json", "is also an input"])
    assert source.read_text() == before
    same = tmp_path / "rows.out"
    _one_line_error(capsys, ["bench", "--sizes", "100", "--kernels", "cpu", "--backend", "cpu", "-q", "--json",
                             str(same), "--tsv", str(same)], ["--json", "--tsv", "the same file"])
    assert not same.exists()


def test_pipes_and_fifos_are_written_directly(tmp_path):
    """`-o /dev/stdout | cat` and `-o FIFO` (as `>(gzip > x.gz)` gives) failed with a temporary file's
    name under /proc; they are written directly now, the same rows as to a file."""
    import subprocess
    import sys
    import threading

    args = [sys.executable, "-m", "nwalign", "pair", OPAL, OPAL, "--backend", "cpu", "--score-only", "--format", "tsv"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    want = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT).stdout
    piped = subprocess.run(args + ["-o", "/dev/stdout"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert piped.returncode == 0 and piped.stdout == want and want.count("\n") == 5, piped.stderr
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    done = subprocess.run(args + ["-o", str(fifo)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    reader.join(30)
    assert done.returncode == 0 and got == [want] and os.listdir(tmp_path) == ["rows.fifo"], done.stderr


def test_a_too_long_output_name_is_named_as_given(capsys, tmp_path):
    path = str(tmp_path / ("a" * 300))
    err = _one_line_error(capsys, ["pair", OPAL, OPAL, "--backend", "cpu", "--score-only", "-o", path],
                          ["-o", "longer than"])
    assert path in err and ".nwalign-" not in err


def test_search_refuses_scores_that_could_overflow_before_any_scan(capsys, tmp_path):
    """`search --match 999999` on two 3 kb sequences ended in pyopal's OverflowError traceback: refused up
    front now, as pair and allpairs refuse it."""
    import random

    rng = random.Random(1)
    seq = "".join(rng.choice("ACGT") for _ in range(3000))
    (tmp_path / "q.fa").write_text(f">q\n{seq}\n")
    (tmp_path / "db.fa").write_text(f">s\n{seq[::-1]}\n>t\n{seq}\n")
    err = _one_line_error(capsys, ["search", str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "--match", "999999",
                                   "--backend", "cpu", "-q"], ["could overflow", "3000"])
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, closed, words", [
    (["pair", "-", OPAL, "--backend", "cpu"], "<&-", "standard input ('-') is closed"),
    (["makedb", "-", "-o", "{tmp}/x.nwdb"], "<&-", "standard input ('-') is closed"),
    (["pair", OPAL, OPAL, "--backend", "cpu", "--score-only"], ">&-", "standard output is closed"),
])
def test_closed_standard_streams_give_one_line(tmp_path, argv, closed, words):
    """`pair - a.fa <&-`, `makedb - <&-` and `pair a.fa b.fa >&-` ended in AttributeError tracebacks."""
    import shlex
    import subprocess
    import sys

    command = " ".join(shlex.quote(a.replace("{tmp}", str(tmp_path))) for a in [sys.executable, "-m", "nwalign"] + argv)
    done = subprocess.run(["sh", "-c", f"{command} {closed}"], stderr=subprocess.PIPE, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert not os.path.exists(tmp_path / "x.nwdb")


@pytest.mark.parametrize("argv, words", [
    (["makedb", "/dev/zero", "-o", "{tmp}/z.nwdb"], "/dev/zero: binary data, not a FASTA file"),
    (["makedb", "{tmp}/zeros.fa", "-o", "{tmp}/z.nwdb"], "zeros.fa: binary data, not a FASTA file"),
    (["search", OPAL, "{tmp}/zeros.fa", "--backend", "cpu"], "zeros.fa: binary data, not a FASTA file"),
    (["pair", OPAL, OPAL, "--matrix", "/dev/zero", "--backend", "cpu"], "/dev/zero: binary data, not a matrix file"),
])
def test_binary_input_is_refused_at_once_in_the_same_words(tmp_path, argv, words):
    """`makedb /dev/zero` read forever and `--matrix /dev/zero` grew to 11 GB in 10 s; 3 MB of NUL bytes
    was "empty" to makedb and "binary data" to search."""
    import subprocess
    import sys

    (tmp_path / "zeros.fa").write_bytes(bytes(3 << 20))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    done = subprocess.run([sys.executable, "-m", "nwalign"] + argv, capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert not os.path.exists(tmp_path / "z.nwdb")


@pytest.mark.parametrize("seq, letter, position", [("ACGT12ACGT", "1", 5), ("AC-GT", "-", 3), ("ACGT>ACGT", ">", 5)])
def test_makedb_and_search_name_a_non_residue_where_it_is(capsys, tmp_path, seq, letter, position):
    """makedb took digits, '-' and a '>' inside a sequence (a later search failed), and a FASTA database
    with one gave an error naming no record or position: both refuse it as pair does."""
    fasta = tmp_path / "db.fa"
    fasta.write_text(f">fine\nMKVLAAGG\n>odd one\n{seq}\n")
    words = [str(fasta), "record odd", f"position {position}", f"{letter!r} is not a residue letter"]
    _one_line_error(capsys, ["makedb", str(fasta), "-o", str(tmp_path / "db.nwdb")], words)
    assert not (tmp_path / "db.nwdb").exists()
    _one_line_error(capsys, ["search", OPAL, str(fasta), "--backend", "cpu"], words)


@pytest.mark.parametrize("argv, flags", [
    (["search", OPAL, SP196, "--gpu-memory", "1G", "--kernel", "gsw"], "--kernel/--gpu-memory"),
    (["search", OPAL, SP196, "--device", "1"], "--device"),
    (["allpairs", OPAL, "--slice", "2", "--block", "64"], "--slice/--block"),
    (["pair", OPAL, OPAL, "--kernel", "antidiagonal"], "--kernel"),
])
def test_gpu_options_on_the_cpu_engine_are_refused_by_every_command(capsys, argv, flags):
    """search's --gpu-memory/--kernel/--device and allpairs' --kernel/--slice/--block were silently ignored on
    the CPU while pair refused its own: one rule for all."""
    _one_line_error(capsys, argv + ["--backend", "cpu"], [flags, "options of the GPU kernels", "--backend cpu"])


def test_small_edges_each_said_in_one_line(capsys, tmp_path):
    """`--random 50,60 --mutate` ignored the 60; `-o ''` said "/cwd: Is a directory"; `bench --input` with
    three records used two in silence."""
    _one_line_error(capsys, ["pair", "--random", "50,60", "--mutate", "0.1"], ["--random 50,60", "one length"])
    _one_line_error(capsys, ["pair", OPAL, OPAL, "--backend", "cpu", "-o", ""], ["-o ''", "give a file name"])
    three = tmp_path / "three.fa"
    three.write_text(">a\nACGTACGT\n>b\nACGAACGT\n>c\nAGGTACGT\n")
    _one_line_error(capsys, ["bench", "--input", str(three), "--kernels", "cpu", "--backend", "cpu", "-q"],
                    ["--input", "3 records", "two sequences"])


def test_a_tab_in_a_description_stays_inside_its_field(capsys, tmp_path):
    """A tab in a FASTA description shifted the TSV's columns (stitle)."""
    db = tmp_path / "db.fa"
    db.write_text(">s1 first\tpart\tof the title\nMKTAYIAKQRQISFVKSHFSRQ\n")
    (tmp_path / "q.fa").write_text(">q\nKTAYIAKQRQISF\n")
    assert main(["search", str(tmp_path / "q.fa"), str(db), "--backend", "cpu", "--max-hsps", "1", "--columns",
                 "qseqid,stitle,score"]) == 0
    (row,) = capsys.readouterr().out.splitlines()
    assert row.split("\t") == ["q", "s1 first part of the title", "63"]


def test_workers_1_with_a_shared_dir_says_why(capsys, tmp_path):
    """`--workers 1` runs in this process; with --shared-dir the refusal said only "is for --workers"."""
    _one_line_error(capsys, ["search", OPAL, SP196, "--workers", "1", "--shared-dir", str(tmp_path)],
                    ["--shared-dir is for --workers 2 or more", "--workers 1 runs in this process"])


def test_pair_stitle_is_the_targets_header_line(capsys, tmp_path):
    """`pair --columns stitle` printed the target's id only, where search prints its whole header line."""
    (tmp_path / "q.fa").write_text(">q\nKTAYIAKQRQISF\n")
    (tmp_path / "t.fa").write_text(">t1 a first protein\nMKTAYIAKQRQISFVKSHFSRQ\n>t2\nGGGGSGGGGS\n")
    assert main(["pair", str(tmp_path / "q.fa"), str(tmp_path / "t.fa"), "--backend", "cpu", "--format", "tsv",
                 "--columns", "qseqid,sseqid,stitle"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert rows == [["q", "t1", "t1 a first protein"], ["q", "t2", "t2"]]


def test_a_control_character_never_reaches_a_sam_name(capsys, tmp_path):
    """SAM let a control character into QNAME (samtools and pysam refuse such a file)."""
    import pysam

    (tmp_path / "q.fa").write_text(">q\x01x\nKTAYIAKQRQISF\n")
    sam = tmp_path / "out.sam"
    assert main(["pair", str(tmp_path / "q.fa"), SP196, "--mode", "local", "--backend", "cpu", "--format", "sam",
                 "-o", str(sam)]) == 0
    assert capsys.readouterr().err.count("SAM names cannot hold") == 1
    with pysam.AlignmentFile(str(sam), "r", check_sq=False) as reader:
        names = {r.query_name for r in reader}
    assert names == {"q_x"}


def test_numba_threads_zero_is_one_line(capsys, monkeypatch):
    """NUMBA_NUM_THREADS=0 ended in Numba's ValueError traceback at its first import."""
    monkeypatch.setenv("NUMBA_NUM_THREADS", "0")
    _one_line_error(capsys, ["pair", OPAL, OPAL, "--backend", "cpu"], ["NUMBA_NUM_THREADS=0", "positive"])


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="a directory that takes no new file: Linux's /proc")
@pytest.mark.parametrize("argv", [["pair", OPAL, OPAL, "-o", "/proc/nwalign.tsv"],
                                  ["makedb", OPAL, "-o", "/proc/nwalign.nwdb"],
                                  ["allpairs", OPAL, "--matrix-out", "/proc/nwalign.phy"],
                                  ["allpairs", OPAL, "--matrix-out", "/proc/nwalign.npy"]])
def test_a_directory_that_takes_no_file_is_said_before_the_work_naming_the_users_path(capsys, argv):
    """`-o /proc/version` named the temporary file (/proc/.nwalign-XXXX); `--matrix-out /proc/x.phy`
    printed every row first and failed at the end."""
    err = _one_line_error(capsys, argv, [argv[-1], "cannot write"])
    assert ".nwalign-" not in err
