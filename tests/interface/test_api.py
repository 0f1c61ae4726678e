"""The public Python API at the package top: doctests, inputs of every accepted
kind, search results equal to the command line's, and errors that name parameters."""

import os
import pathlib

import numpy as np
import pytest

import nwalign
from nwalign import Database, NwalignError, make_scoring, search
from nwalign.cli import main

from helpers import DATA

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
SP196 = os.path.join(DATA, "swissprot_first196.fasta")


def test_public_names():
    """Every public name has a docstring (their examples run with every module's: test_structure.py)."""
    assert sorted(nwalign.__all__) == sorted(set(nwalign.__all__))
    for name in nwalign.__all__:
        assert getattr(nwalign, name).__doc__, name
    assert callable(nwalign.search) and nwalign.search.__module__ == "nwalign.jobs.search.job"


def hit_rows(results):
    return [(q.id, h.aln.target_id, h.aln.score, h.aln.query_start, h.aln.query_end, h.aln.target_start,
             h.aln.target_end, h.aln.cigar(), h.evalue) for q, hits in results for h in hits]


def test_search_inputs_of_every_kind_give_the_same_hits(tmp_path):
    from Bio import SeqIO

    want = hit_rows(search(pathlib.Path(OPAL), SP196, top=3, backend="cpu", threads=2))
    assert len(want) == 17 and len({(r[0], r[1]) for r in want}) == 15  # two subjects with a second alignment
    records = nwalign.read_fasta(OPAL)
    db_path = str(tmp_path / "sp.nwdb")
    Database.from_fasta(SP196).save(db_path)
    for queries, db in ((records, SP196), (list(SeqIO.parse(OPAL, "fasta")), Database.load(db_path)),
                        (SeqIO.parse(OPAL, "fasta"), pathlib.Path(db_path)),
                        (records, Database.from_records(SeqIO.parse(SP196, "fasta")))):
        assert hit_rows(search(queries, db, top=3, backend="cpu", threads=2)) == want
    # str and bytes sequences get generated names
    got = list(search([records[0].seq, records[1].seq.encode()], SP196, top=1, max_hsps=1, backend="cpu"))
    assert [q.id for q, _ in got] == ["query1", "query2"]
    firsts = [r for k, r in enumerate(want) if k == 0 or want[k - 1][0] != r[0]]
    assert [hits[0].aln.score for _, hits in got] == [firsts[0][2], firsts[1][2]]


def test_search_equals_the_command_line(capsys):
    assert main(["search", OPAL, SP196, "--top", "3", "--backend", "cpu", "--columns",
                 "qseqid,sseqid,score,qstart,qend,sstart,send,cigar"]) == 0
    lines = capsys.readouterr().out.splitlines()
    api = [f"{q}\t{t}\t{s}\t{qs + 1}\t{qe}\t{ts + 1}\t{te}\t{c}"
           for q, t, s, qs, qe, ts, te, c, _ in hit_rows(search(pathlib.Path(OPAL), SP196, top=3, backend="cpu"))]
    assert lines == api


def test_search_options():
    scoring = make_scoring("protein", "local", "BLOSUM62", gap_open=11, gap_extend=1)
    run = search(pathlib.Path(OPAL), SP196, scoring, top=2, min_score=60, align=False, max_hsps=1, backend="cpu")
    assert run.scoring is scoring and run.stats is not None and len(run.queries) == 5
    results = list(run)
    for _, hits in results:
        assert all(h.aln.score >= 60 and h.aln.score_only for h in hits)
    every = sorted(h.evalue for _, hits in search(pathlib.Path(OPAL), SP196, top=5, backend="cpu") for h in hits)
    cut = every[len(every) // 2]
    strict = [h.evalue for _, hits in search(pathlib.Path(OPAL), SP196, top=5, max_evalue=cut, backend="cpu")
              for h in hits]
    assert strict and max(strict) <= cut and len(strict) < len(every)


@pytest.mark.parametrize("call, message", [
    (lambda: search("MKLEV", SP196, top=0), "top must be at least 1"),
    (lambda: search("MKLEV", SP196, kernel="fast"), "unknown search kernel"),
    (lambda: search("MKLEV", SP196, make_scoring("protein", "global")), "a search is local"),
    (lambda: search("MKLEV", SP196, gap_open=2, gap_extend=1, max_evalue=1.0, backend="cpu"), "no local statistics"),
    (lambda: search(["MKLEV", ""], SP196, backend="cpu"), "sequence 2 (query2) is empty"),
    (lambda: search([3], SP196, backend="cpu"), "a int, not a str"),
    (lambda: search("MKLEV", os.path.join(DATA, "missing.fa"), backend="cpu"), "no such file"),
    (lambda: search("MKLEV", SP196, backend="quantum"), "unknown backend"),
    (lambda: search("MK1", SP196, backend="cpu"), "letter"),
])
def test_search_errors_name_the_parameter(call, message):
    with pytest.raises(NwalignError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_database_api(tmp_path):
    db = Database.from_records(["ACGT", "GGA"])
    assert len(db) == 2 and db.ids == ["seq1", "seq2"] and db.record(1).seq == "GGA"
    scoring = make_scoring("dna", "local")
    assert np.array_equal(db.encode(scoring), scoring.encode_bytes(np.frombuffer(b"ACGTGGA", np.uint8)))
    path = str(tmp_path / "x.nwdb")
    db.save(path)
    back = Database.load(path)
    assert back.ids == db.ids and back.record(0).seq == "ACGT"


def test_nwdb_keeps_letter_counts(tmp_path):
    """makedb stores the letter counts, so a search guesses the database's alphabet without a pass over
    its residues; counts that do not add up make the file damaged."""
    db = Database.from_records(["ACGTN", "GGA"])
    path = tmp_path / "x.nwdb"
    db.save(str(path))
    back = Database.load(str(path))
    assert back.counts == {"A": 2, "C": 1, "G": 3, "N": 1, "T": 1} and back.ids_unique is True
    twice = tmp_path / "twice.nwdb"
    Database.from_records([nwalign.io.sequences.Record("x", "x", "ACGT"), nwalign.io.sequences.Record("x", "x", "ACGA")]).save(
        str(twice))
    assert Database.load(str(twice)).ids_unique is False
    hits = [h.aln.target_id for _, hs in search("ACGTACGA", pathlib.Path(twice), backend="cpu", top=2, max_hsps=1)
            for h in hs]
    assert sorted(hits) == ["x", "x_2"]
    assert np.array_equal(back.letter_counts(), db.letter_counts())
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"G": 3', b'"G": 4', 1))
    with pytest.raises(NwalignError, match="damaged .nwdb file .checksum of the header"):
        Database.load(str(path))
    # a file written before 0.2 has no checksum of its header: the counts themselves are checked
    import re

    old = re.sub(rb', "header": \d+\}', lambda m: b"}" + b" " * (len(m.group()) - 1), raw, count=1)
    old = old.replace(b'"checked_header": true, ', b" " * len(b'"checked_header": true, '), 1)
    path.write_bytes(old)
    assert old != raw and Database.load(str(path)).counts == back.counts
    path.write_bytes(old.replace(b'"G": 3', b'"G": 4', 1))
    with pytest.raises(NwalignError, match="damaged .nwdb file .letter counts"):
        Database.load(str(path))


@pytest.mark.parametrize("size", [0, 1, 2, 3, 1001, (1 << 23) + 5])
def test_byte_counts_equal_bincount(size):
    from nwalign.io.database import byte_counts

    data = np.random.default_rng(size).integers(0, 256, size=size).astype(np.uint8)
    assert np.array_equal(byte_counts(data), np.bincount(data, minlength=256))


def test_allpairs_api_equals_the_command_line(capsys):
    """nwalign.allpairs over a FASTA path, records and a second set gives the command's rows."""
    from nwalign import allpairs

    sixteen = os.path.join(DATA, "16S_100_dada2.fasta.gz")
    assert main(["allpairs", sixteen, "--backend", "cpu", "--min-identity", "0.9", "-q", "--no-header"]) == 0
    rows = capsys.readouterr().out.splitlines()
    job = allpairs(pathlib.Path(sixteen), backend="cpu", min_identity=0.9, threads=2)
    assert job.pairs == 4950 and job.backend == "cpu"
    got = [f"{r.aln.query_id}\t{r.aln.target_id}\t{r.aln.score}\t{100 * r.aln.identity:.3f}\t{r.aln.length}"
           for r in job if r.passes]
    assert got == rows and job.stats["pairs"] == 4950
    records = nwalign.read_fasta(sixteen)[:6]
    square = {(r.i, r.j): r.aln.score for r in allpairs(records, backend="cpu")}
    against = {(r.i, r.j): r.aln.score for r in allpairs(records[:2], records[2:], backend="cpu")}
    assert len(square) == 15 and len(against) == 8
    assert against[(0, 0)] == square[(0, 2)] and against[(1, 3)] == square[(1, 5)]


@pytest.mark.parametrize("call, message", [
    (lambda: nwalign.allpairs(["ACGT"], backend="cpu"), "at least two sequences"),
    (lambda: nwalign.allpairs(["ACGT", "ACGA"], min_identity=2), "^min_identity 2: give a fraction between 0 and 1"),
    (lambda: nwalign.allpairs(["ACGT", "ACGA"], columns=("qseqid", "bogus")), "unknown column 'bogus'"),
    (lambda: nwalign.allpairs(["MKVLEW", "MKVLEF"], ["ACGTAC"], backend="cpu"), "is protein but"),
    (lambda: nwalign.allpairs(["ACGT", "ACGA"], kernel="tiled-dscan", block=12), "^block 12"),
    (lambda: nwalign.Aligner(make_scoring("dna", "global"), backend="nope"), "unknown backend"),
])
def test_allpairs_api_errors(call, message):
    """Library errors name the Python parameter (the command line names its option instead)."""
    with pytest.raises(NwalignError, match=message) as err:
        call()
    assert "--" not in str(err.value)


def test_errors_name_the_option_on_the_command_line(capsys):
    assert main(["allpairs", OPAL, "--min-identity", "2", "--backend", "cpu"]) == 2
    assert "nwalign: error: --min-identity 2.0: give a fraction between 0 and 1" in capsys.readouterr().err
    assert main(["pair", "--random", "50", "--gap-open", "1", "--gap-extend", "3"]) == 2
    assert "--gap-extend (3) must not exceed --gap-open (1)" in capsys.readouterr().err


def test_aligner_one_interface_on_the_cpu():
    """Aligner: one pair, pairs one after another, pairs in batches, score pairs and score one query
    against a database give the CPU engine's results; inputs of every kind; bad letters and a
    non-local database scan are refused in one line."""
    from Bio.Seq import Seq

    from nwalign import Aligner, NwalignError, make_scoring
    from nwalign.backends.cpu import align_codes, score_codes
    from nwalign.backends.cpu.search import cpu_scan
    from nwalign.io.sequences import read_fasta

    recs = read_fasta(OPAL)
    scoring = make_scoring("protein", "local")
    aligner = Aligner(scoring, backend="cpu", threads=2)
    assert aligner.backend == "cpu" and aligner.batch_kernel == "cpu"
    pairs = [(recs[i], recs[j]) for i in range(len(recs)) for j in range(len(recs))]
    want = [align_codes(scoring.encode(q), scoring.encode(t), scoring.matrix, 11, 1, scoring.mode_code)
            for q, t in pairs]
    one = [aligner.align(q, t) for q, t in pairs]
    many = list(aligner.align_many(pairs))
    batch = list(aligner.align_batch(pairs))
    for got in (one, many, batch):
        assert [(a.score, a.query_start, a.query_end, a.target_start, a.target_end) for a in got] == \
            [w[:5] for w in want]
        assert all(np.array_equal(a.ops, w[5]) for a, w in zip(got, want))
    assert aligner.align(Seq(recs[0].seq), recs[0].seq.encode()).score == want[0][0]
    codes = [scoring.encode(r) for r in recs]
    stats: dict = {}
    got = [(p, s) for p, s in aligner.score_pairs(codes, stats=stats)]
    flat = np.concatenate([p for p, _ in got])
    assert flat.tolist() == [[i, j] for i in range(len(recs)) for j in range(i + 1, len(recs))]
    assert np.concatenate([s for _, s in got]).tolist() == \
        [score_codes(codes[i], codes[j], scoring.matrix, 11, 1, 1) for i, j in flat.tolist()]
    assert stats["kernel"] == "cpu" and stats["cells"] > 0
    against = list(aligner.score_pairs(codes[:2], codes[2:]))
    assert np.concatenate([p for p, _ in against]).tolist() == [[i, j] for i in range(2) for j in range(3)]
    offsets = np.concatenate(([0], np.cumsum([len(c) for c in codes])))
    db = np.concatenate(codes)
    assert aligner.score_against(codes[0], db, offsets).tolist() == cpu_scan(codes[0], db, offsets, scoring).tolist()
    with pytest.raises(NwalignError, match="letter"):
        aligner.align("MKV1", "MKV")
    with pytest.raises(NwalignError, match="local"):
        Aligner(make_scoring("protein", "global"), backend="cpu").score_against(codes[0], db, offsets)
    with pytest.raises(NwalignError, match="unknown backend"):
        Aligner(scoring, backend="tpu")


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
def test_alignment_to_biopython(mode):
    """Alignment.to_biopython(): Biopython's gapped rows, coordinates and identity count equal ours, on
    real proteins and on DNA with gaps at the ends; a score-only result refuses."""
    from nwalign import Pairs
    from nwalign.io.sequences import read_fasta

    recs = read_fasta(OPAL)
    pairs = [(recs[0], recs[k]) for k in range(len(recs))] + [("ACGTTTACGGA", "TTTACGGAACG"), ("A", "C")]
    for q, t in pairs:
        (aln,) = list(Pairs(q, t, mode=mode, backend="cpu"))
        bio = aln.to_biopython()
        assert (bio[0], bio[1]) == aln.gapped() and bio.score == aln.score
        assert [r.id for r in bio.sequences] == [aln.query_id, aln.target_id]
        assert bio.coordinates[:, 0].tolist() == [aln.query_start, aln.target_start]
        assert bio.coordinates[:, -1].tolist() == [aln.query_end, aln.target_end]
        assert bio.counts().identities == aln.nident
    (score_only,) = list(Pairs("ACGT", "ACGA", score_only=True, backend="cpu"))
    with pytest.raises(ValueError, match="score-only"):
        score_only.to_biopython()


def test_database_checksum_left_running_is_verified_before_use(tmp_path):
    """load_database(check_later=True) returns at once and verify() raises for a flipped residue; a good
    file verifies; a search over the damaged file reports nothing (its first hits wait for the check)."""
    from nwalign.io.database import database_from_fasta, load_database, write_database

    good = tmp_path / "x.nwdb"
    write_database(database_from_fasta(SP196), str(good))
    db = load_database(str(good), check_later=True)
    db.verify()
    db.verify()  # once done, again is a no-op
    data = bytearray(good.read_bytes())
    data[-100] ^= 1  # a residue near the end
    bad = tmp_path / "bad.nwdb"
    bad.write_bytes(bytes(data))
    db = load_database(str(bad), check_later=True)
    with pytest.raises(NwalignError, match="damaged .nwdb file .checksum of the residues"):
        db.verify()
    with pytest.raises(NwalignError, match="damaged"):
        list(search(pathlib.Path(OPAL), str(bad), backend="cpu", top=1))


def test_log_times_on_request(capsys, monkeypatch):
    """NWALIGN_LOG_TIMES=1 with -v: milliseconds (and on Linux the resident set size, now and at its peak)
    on every line, and the finer steps; without it, plain -v."""
    import re

    timed = re.compile(r"nwalign: +\d+ ms(, RSS \d+\.\d\d GiB \(peak \d+\.\d\d\))?: ")
    monkeypatch.setenv("NWALIGN_LOG_TIMES", "1")
    assert main(["search", OPAL, SP196, "--top", "1", "--backend", "cpu", "-v", "-o", os.devnull]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(timed.match(line) for line in lines if line.startswith("nwalign: "))
    assert any("search: database loaded" in line for line in lines)
    if os.path.exists("/proc/self/status"):
        assert all(", RSS " in line for line in lines if line.startswith("nwalign: "))
    monkeypatch.setenv("NWALIGN_LOG_TIMES", "0")
    assert main(["search", OPAL, SP196, "--top", "1", "--backend", "cpu", "-v", "-o", os.devnull]) == 0
    assert not any(timed.match(line) for line in capsys.readouterr().err.splitlines())


def test_nwdb_names_read_when_first_used(tmp_path, capsys):
    """A version-2 file's ids and descriptions are parsed on first use (start-up of a search does not wait
    for them); names that do not match the sequence count (a file with valid checksums written so) are a
    one-line 'damaged' error when read, through the API and the CLI (exit 2, no output)."""
    import dataclasses

    from nwalign.cli import main
    from nwalign.io.database import write_database

    db = Database.from_records([nwalign.io.sequences.Record("a", "a x", "ACGT"), nwalign.io.sequences.Record("b", "b", "GGA")])
    good = tmp_path / "good.nwdb"
    db.save(str(good))
    back = Database.load(str(good))
    assert len(back.ids) == 2 and back.ids == ["a", "b"] and list(back.descriptions) == ["a x", "b"]
    assert back.ids[-1] == "b" and back.ids[:1] == ["a"] and back.record(0).description == "a x"
    bad = tmp_path / "bad.nwdb"
    write_database(dataclasses.replace(db, ids=["a"]), str(bad))
    back = Database.load(str(bad))  # checksums agree: the names are only read later
    with pytest.raises(NwalignError, match="bad.nwdb: damaged .nwdb file .names for 2 sequences"):
        back.ids[0]
    query = tmp_path / "q.fa"
    query.write_text(">q\nACGTAC\n")
    assert main(["search", "--backend", "cpu", str(query), str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "damaged" in err


def test_nwdb_names_formats(tmp_path):
    """Names are written with an index (each one read without parsing the others); files whose header names
    no format hold JSON (nwalign 0.1 before 2026-11-23) and still read; an index that does not rise, ends past the names
    or holds too few entries, and bytes that are not UTF-8, are 'damaged' when read."""
    import json as js
    import zlib

    def header_of(path):
        data = path.read_bytes()
        size = int(np.frombuffer(data[8:16], dtype=np.uint64)[0])
        return data, size, js.loads(data[16:16 + size])

    recs = [nwalign.io.sequences.Record(f"s{k}", f"s{k} some protein {k} \u00e9\n", "ACGT" * (k + 1)) for k in range(5)]
    db = Database.from_records(recs)
    path = tmp_path / "indexed.nwdb"
    db.save(str(path))
    data, size, header = header_of(path)
    assert header["names_format"] == "indexed"
    back = Database.load(str(path))
    assert back.ids[3] == "s3" and back.descriptions[-1] == "s4 some protein 4 \u00e9\n"
    assert list(back.ids) == [r.id for r in recs] and back.descriptions[1:3] == [r.description for r in recs[1:3]]
    assert list(back.descriptions) == [r.description for r in recs]
    with pytest.raises(IndexError):
        back.ids[5]

    def rewrite(name, names, fmt):
        """The file with another names section (its checksum and length made to agree; no checksum of the
        header, as in files written before 0.2)."""
        names += b" " * (-len(names) % 8)
        head = dict(header, names_bytes=len(names), crc32=dict(header["crc32"], names=zlib.crc32(names)))
        head["crc32"].pop("header")
        head.pop("checked_header")
        if fmt is None:
            head.pop("names_format")
        else:
            head["names_format"] = fmt
        text = js.dumps(head).encode()
        text += b" " * (-(16 + len(text)) % 8)
        out = tmp_path / name
        out.write_bytes(data[:8] + np.uint64(len(text)).tobytes() + text + names
                        + data[16 + size + header["names_bytes"]:])
        return Database.load(str(out))

    legacy = rewrite("old.nwdb", js.dumps({"ids": back.ids[:], "descriptions": back.descriptions[:]}).encode(), None)
    assert legacy.ids[4] == "s4" and list(legacy.descriptions) == list(back.descriptions)
    names = [x.encode() for x in back.ids[:] + back.descriptions[:]]
    starts = np.concatenate(([0], np.cumsum([len(x) for x in names])))

    def section(starts, text=b"".join(names)):
        return np.asarray(starts, dtype=np.int64).tobytes() + text

    assert rewrite("same.nwdb", section(starts), "indexed").descriptions[2] == back.descriptions[2]
    falling = starts.copy()
    falling[3] = falling[4] + 1
    damaged = {"falling": section(falling), "past": section(starts + 1), "few": section(starts[:-1]),
               "utf8": section(starts, b"".join(names).replace(b"\xc3", b"\xff"))}
    for name, names in damaged.items():
        found = rewrite(f"{name}.nwdb", names, "indexed")
        with pytest.raises(NwalignError, match=f"{name}.nwdb: damaged .nwdb file"):
            list(found.ids) + list(found.descriptions)
    with pytest.raises(NwalignError, match="damaged .nwdb file"):
        rewrite("format.nwdb", section(starts), "yaml")


def test_alphabet_counts_of_a_sample_decide_protein():
    """A FASTA database whose first residues already hold a protein letter is protein: its alphabet is
    decided from those (no count of every residue); a nucleotide start counts everything (a protein letter
    further on still makes it protein); the choice equals the one from all counts."""
    from nwalign.io.database import database_from_records
    from nwalign.io.sequences import Record, kind_of

    cases = {"protein first": ["MKVLAAGIE" * 3, "ACGT" * 10], "dna": ["ACGT" * 8, "GGCATN" * 5],
             "protein later": ["ACGT" * 8, "ACGTL"]}
    for name, seqs in cases.items():
        db = database_from_records([Record(f"s{k}", f"s{k}", s) for k, s in enumerate(seqs)], name)
        sample = db.alphabet_counts(sample=16)
        assert kind_of(sample) == kind_of(db.letter_counts())
        if name == "protein first":
            assert sample.sum() == 16
        else:
            assert np.array_equal(sample, db.letter_counts())


def test_ahead_keeps_order_errors_and_stops():
    """background.ahead: items in order; the producer's exception where its item would have come; a
    consumer that stops early stops the producer."""
    import threading

    from nwalign.background import ahead

    assert list(ahead(iter(range(50)), depth=2)) == list(range(50))

    def failing():
        yield 1
        raise ValueError("broken item")

    got = []
    with pytest.raises(ValueError, match="broken item"):
        for x in ahead(failing()):
            got.append(x)
    assert got == [1]
    made = []
    done = threading.Event()

    def endless():
        try:
            k = 0
            while True:
                made.append(k)
                yield k
                k += 1
        finally:
            done.set()

    it = ahead(endless())
    assert next(it) == 0
    it.close()
    assert done.wait(5) and len(made) <= 4
