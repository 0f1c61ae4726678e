"""nwalign search on the CPU: hits against a brute-force Biopython scan, statistics, makedb, errors."""

import dataclasses
import io
import json
import math
import re
import os

import numpy as np
import pytest

from nwalign.cli import main
from nwalign.backends.engine import encode_all
from nwalign.errors import NwalignError
from nwalign.scoring.schemes import make_scoring
from nwalign.io.database import database_from_records, encode_database, load_database
from nwalign.results.hits import top_hits
from nwalign.jobs.search.pipeline import search_query
from nwalign.io.sequences import Record, read_fasta
from nwalign.results.statistics import parameters, published

from helpers import DATA
from helpers import biopython_aligner

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
SP196 = os.path.join(DATA, "swissprot_first196.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")
BENCH20 = os.path.join(DATA, "queries_20_sw_benchmark.fasta")


def brute_force(queries, db_records, top):
    """Biopython local scores of every pair, ranked by score, then database order."""
    aligner = biopython_aligner("local", "protein", 11, 1)
    out = []
    for q in queries:
        # Biopython's BLOSUM62 has no U (selenocysteine): score it as X, as nwalign does.
        scores = np.array([int(aligner.score(q.seq.replace("U", "X"), r.seq.replace("U", "X"))) for r in db_records])
        order = sorted(range(len(scores)), key=lambda k: (-scores[k], k))[:top]
        out.append([(int(scores[k]), k) for k in order])
    return out


def nwalign_hits(queries, db_records, top, source="db"):
    scoring = make_scoring("protein", "local")
    db = database_from_records(db_records, source)
    codes = encode_database(db, scoring)
    stats = parameters(scoring)
    return [[(h.aln.score, h.db_index) for h in search_query(q, db, codes, scoring, stats, top, threads=2)]
            for q in encode_all(queries, scoring, "q")]


def test_opal_queries_against_swissprot_196_equal_biopython():
    queries, db = read_fasta(OPAL), read_fasta(SP196)
    assert nwalign_hits(queries, db, 10) == brute_force(queries, db, 10)


@pytest.mark.slow
def test_benchmark_queries_against_ecoli_proteome_equal_biopython():
    queries = [r for r in read_fasta(BENCH20) if len(r.seq) < 200][:2]
    db = read_fasta(ECOLI)
    assert len(db) == 4306 and len(queries) == 2
    assert nwalign_hits(queries, db, 5) == brute_force(queries, db, 5)


def test_evalue_and_bitscore_arithmetic():
    ka = published("BLOSUM62", 11, 1)  # BLAST 10/1: lambda 0.243, K 0.024
    assert math.isclose(ka.bit_score(100), (0.243 * 100 - math.log(0.024)) / math.log(2))
    assert math.isclose(ka.bit_score(100), 40.4383, rel_tol=1e-5)
    assert published("BLOSUM62", 12, 1).lam == 0.267 and published("PAM250", 11, 1) is None
    # the classic formula (no finite-size correction): K m' n' exp(-lambda S), lengths less BLAST's l
    plain = dataclasses.replace(ka, spouge=None)
    ell = plain.length_adjustment(300, 10**6, 1000)
    assert 0 < ell < 300
    assert math.isclose(plain.evalue(100, 300, 10**6, 1000),
                        0.024 * (300 - ell) * (10**6 - 1000 * ell) * math.exp(-24.3))
    # the length adjustment is BLAST's fixed point: l <= alpha/lambda ln(K (m - l)(n - N l)) + beta < l + 1
    f = lambda x: 2.5 / 0.243 * math.log(0.024 * (300 - x) * (10**6 - 1000 * x)) - 44  # noqa: E731
    assert ell <= f(ell) and ell + 1 > f(ell + 1)


def test_ties_keep_database_order():
    scores = np.array([5, 9, 9, 1, 9])
    assert top_hits(scores, 3, None).tolist() == [1, 2, 4]
    assert top_hits(scores, 10, 5).tolist() == [1, 2, 4, 0]


def test_cli_tsv_json_and_makedb_round_trip(capsys, tmp_path):
    nwdb = tmp_path / "sp.nwdb"
    assert main(["makedb", SP196, "-o", str(nwdb)]) == 0
    db = load_database(str(nwdb))
    assert db.count == 196 and db.record(5).seq == read_fasta(SP196)[5].seq
    capsys.readouterr()
    assert main(["search", OPAL, SP196, "--top", "4", "--header"]) == 0
    fasta_out = capsys.readouterr().out
    assert main(["search", OPAL, str(nwdb), "--top", "4", "--header"]) == 0
    assert capsys.readouterr().out == fasta_out
    # BLAST's -outfmt 7: per query its comment lines, then its rows; Biopython reads them as BLAST's
    from Bio import SearchIO

    parsed = list(SearchIO.parse(io.StringIO(fasta_out), "blast-tab", comments=True))
    assert [len(q) for q in parsed] == [4] * 5 and [q.id for q in parsed] == [r.id for r in read_fasta(OPAL)]
    assert fasta_out.splitlines()[2] == "# Fields: query id, subject id, % identity, alignment length, mismatches, " \
        "gap opens, q. start, q. end, s. start, s. end, evalue, bit score"
    assert main(["search", OPAL, SP196, "--top", "4"]) == 0  # -outfmt 6: the rows alone
    plain = capsys.readouterr().out
    assert plain == "".join(line + "\n" for line in fasta_out.splitlines() if not line.startswith("#"))
    fields = "qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore".split()
    assert sum(len(q) for q in SearchIO.parse(io.StringIO(plain), "blast-tab", fields=fields)) == 20
    assert main(["search", OPAL, SP196, "--top", "2", "--format", "json", "--max-evalue", "1"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rows and all(r["evalue"] <= 1 for r in rows)
    for r in rows:
        assert r["length"] == r["nident"] + r["mismatch"] + r["gaps"] and r["qstart"] <= r["qend"]
    assert main(["search", OPAL, SP196, "--top", "1", "--format", "sam"]) == 0
    sam = capsys.readouterr().out
    records = [line.split("\t") for line in sam.splitlines() if not line.startswith("@")]
    assert sam.startswith("@HD") and sum(int(r[1]) & 256 == 0 for r in records) == 5  # one primary a query


def test_nwdb_versions_and_alphabets(tmp_path):
    """makedb writes version 2 (letter indices in the default scoring alphabet's order: encoding is then
    a no-op); version-1 files (ASCII) still load; every path gives the FASTA's records and codes; letters
    outside the default alphabet are kept exactly and mapped (RNA 'U' read as T) or refused by name."""
    from nwalign.io.database import MAGIC, MAGIC2, database_from_fasta, write_database

    fasta_db = database_from_fasta(SP196)
    scoring = make_scoring("protein", "local")
    want = encode_database(fasta_db, scoring)
    for version, magic in ((2, MAGIC2), (1, MAGIC)):
        path = tmp_path / f"v{version}.nwdb"
        write_database(fasta_db, str(path), version=version)
        assert path.read_bytes()[:8] == magic
        db = load_database(str(path))
        assert db.ids == fasta_db.ids and db.descriptions == fasta_db.descriptions
        assert [db.record(k).seq for k in (0, 77, 195)] == [fasta_db.record(k).seq for k in (0, 77, 195)]
        codes = encode_database(db, scoring)
        assert np.array_equal(codes, want)
        if version == 2:
            assert db.letters == scoring.alphabet and np.shares_memory(codes, db.codes)  # used as stored
    # DNA with an RNA letter: stored exactly, mapped to T's code for a DNA search.
    fa = tmp_path / "mixed.fa"
    fa.write_text(">a\nACGUN\n>b\nttga\n")
    path = tmp_path / "mixed.nwdb"
    assert main(["makedb", str(fa), "-o", str(path)]) == 0
    db = load_database(str(path))
    assert [db.record(k).seq for k in range(2)] == ["ACGUN", "TTGA"] and db.letters.endswith("U")
    dna = make_scoring("dna", "local")
    assert np.array_equal(encode_database(db, dna), encode_database(database_from_fasta(str(fa)), dna))
    # Selenocysteine is read as X (as from FASTA); a character no alphabet has is named with its record.
    fa.write_text(">p1\nMEEQLKV\n>p2\nMAUKPE\n")
    write_database(database_from_fasta(str(fa)), str(path))
    assert np.array_equal(encode_database(load_database(str(path)), scoring),
                          encode_database(database_from_fasta(str(fa)), scoring))
    fa.write_text(">p1\nMEEQLKV\n>p2\nMAK1PE\n")
    write_database(database_from_fasta(str(fa)), str(path))
    with pytest.raises(NwalignError, match=r"record p2: letter '1' at position 4"):
        encode_database(load_database(str(path)), scoring)


def test_damaged_nwdb_is_never_searched(tmp_path, capsys):
    """Every damaged version-2 file is refused in one line naming the file (a cut file, a flipped residue,
    id or offset byte, a header of the wrong shape, another version); the command exits 2 and prints no
    hit; a write leaves no temporary file."""
    import json as js

    from nwalign.io.database import database_from_fasta, write_database

    good = tmp_path / "x.nwdb"
    write_database(database_from_fasta(SP196), str(good))
    data = good.read_bytes()
    size = int(np.frombuffer(data[8:16], dtype=np.uint64)[0])
    header = js.loads(data[16:16 + size])
    names_at = 16 + size
    offsets_at = names_at + header["names_bytes"]
    residues_at = offsets_at + 8 * (header["count"] + 1)

    def flip(at):
        b = bytearray(data)
        b[at] ^= 0x01
        return bytes(b)

    cases = {
        "cut": data[:len(data) // 2],
        "magic only": data[:8],
        "residue": flip(residues_at + 1234),
        "id": flip(names_at + 20),
        "id text": flip(names_at + 8 * (2 * header["count"] + 1) + 3),  # checked beside the scans too
        "offset": flip(offsets_at + 8 * 50 + 1),
        "header": data[:16] + b"[" + data[17:],
        "version 3": data[:4] + b"\x03" + data[5:],
        # a header of the right length that is valid JSON but not an object
        "json list": data[:16] + (b"[" + b" " * (size - 2) + b"]") + data[16 + size:],
    }
    for name, damaged in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.nwdb"
        path.write_bytes(damaged)
        with pytest.raises(NwalignError) as err:
            load_database(str(path))
        assert str(path) in str(err.value) and ("damaged" in str(err.value) or "version 3" in str(err.value)), name
        # The residues' checksum runs beside the first scans: no header or SAM line gets out before it.
        for extra in ([], ["--header"], ["--format", "sam"]):
            assert main(["search", OPAL, str(path), "--top", "1"] + extra) == 2
            out, msg = capsys.readouterr()
            assert out == "" and msg.count("\n") == 1, (name, extra)
    assert load_database(str(good)).count == 196
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_cli_no_statistics_says_so_once(capsys):
    """Gaps of 2/1 with BLOSUM62: unrelated proteins score in proportion to their length (the linear
    phase), so there are no E-values; said once, the columns left empty."""
    assert main(["search", OPAL, SP196, "--top", "1", "--gap-open", "2", "--gap-extend", "1"]) == 0
    out, err = capsys.readouterr()
    assert err.count("no E-values") == 1 and "linear phase" in err
    assert all(line.split("\t")[10:] == ["", ""] for line in out.splitlines())


def test_every_other_scoring_gets_estimated_statistics(capsys):
    """PAM250 with gaps 14/2 (BLAST's 12/2, not in its tables): lambda and K estimated, -v says how."""
    assert main(["search", OPAL, SP196, "--top", "1", "--matrix", "PAM250", "--gap-open", "14", "--gap-extend",
                 "2", "-v"]) == 0
    out, err = capsys.readouterr()
    assert "statistics: estimated (1000 random pairs of 1000, Gumbel fit)" in err
    assert all(float(line.split("\t")[10]) > 0 and float(line.split("\t")[11]) > 0 for line in out.splitlines())


@pytest.mark.parametrize("setup, args, message", [
    ("", [], "empty file"),
    (">q\nMKV1L\n", [], "record q, position 4: '1' is not a residue letter"),
    (">q\nMKVL\n", ["--columns", "qseqid,nope"], "unknown column 'nope'"),
    (">q\nMKVL\n", ["--gap-open", "2", "--gap-extend", "1", "--max-evalue", "1"], "no local statistics"),
])
def test_cli_errors(capsys, tmp_path, setup, args, message):
    q = tmp_path / "q.fa"
    q.write_text(setup)
    code = main(["search", str(q), SP196, *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_cli_empty_database(capsys, tmp_path):
    empty = tmp_path / "db.fa"
    empty.write_text("")
    assert main(["search", OPAL, str(empty)]) == 2
    assert "empty file" in capsys.readouterr().err


def test_cli_backend_cuda_without_gpu_is_clear(capsys, tmp_path):
    from nwalign.backends import cuda

    if cuda.available():
        pytest.skip("a GPU is present here; the GPU path is covered by test_search_gpu_equals_cpu")
    q = tmp_path / "q.fa"
    q.write_text(">q\nMKVL\n")
    assert main(["search", str(q), SP196, "--backend", "cuda"]) == 2
    assert "--backend cuda" in capsys.readouterr().err


@pytest.mark.gpu
def test_search_gpu_equals_cpu():
    """gsw scores equal the CPU engine's for every database sequence; the reported hits are identical."""
    from nwalign.backends.cuda.gsw import GswSearcher
    from nwalign.backends.cpu.search import cpu_scan

    scoring = make_scoring("protein", "local")
    for queries, db_records in ((read_fasta(OPAL), read_fasta(SP196)),
                                ([r for r in read_fasta(BENCH20) if len(r.seq) < 400][:3], read_fasta(ECOLI))):
        db = database_from_records(db_records, "db")
        codes = encode_database(db, scoring)
        gpu = GswSearcher(db, scoring)
        stats = parameters(scoring)
        for q in encode_all(queries, scoring, "q"):
            assert np.array_equal(gpu.scores(q.record.seq), cpu_scan(q.codes, codes, db.offsets, scoring, 2))
            cpu_hits = [(h.aln.score, h.db_index, h.aln.cigar()) for h in search_query(q, db, codes, scoring, stats)]
            gpu_hits = [(h.aln.score, h.db_index, h.aln.cigar())
                        for h in search_query(q, db, codes, scoring, stats, scanner=gpu)]
            assert cpu_hits == gpu_hits


def _random_db(rng, letters, lengths, prefix="r"):
    return [Record(f"{prefix}{k}", "", "".join(rng.choice(list(letters), size=int(n)))) for k, n in enumerate(lengths)]


@pytest.mark.gpu
@pytest.mark.parametrize("packed16, plan", [(True, "auto"), (False, "auto"), (True, "profile")])
def test_scan_kernel_equals_cpu(packed16, plan):
    """scan scores equal the CPU engine's for every database sequence; the reported hits are identical."""
    from nwalign.backends.cuda.search import ScanSearcher
    from nwalign.backends.cpu.search import cpu_scan

    scoring = make_scoring("protein", "local")
    stats = parameters(scoring)
    for queries, db_records in ((read_fasta(OPAL), read_fasta(SP196)),
                                (read_fasta(BENCH20)[:4], read_fasta(ECOLI))):
        db = database_from_records(db_records, "db")
        codes = encode_database(db, scoring)
        gpu = ScanSearcher(codes, db.offsets, scoring, packed16=packed16, plan=plan)
        for q in encode_all(queries, scoring, "q"):
            assert np.array_equal(gpu.score_query(q), cpu_scan(q.codes, codes, db.offsets, scoring, 2))
            cpu_hits = [(h.aln.score, h.db_index, h.aln.cigar()) for h in search_query(q, db, codes, scoring, stats)]
            gpu_hits = [(h.aln.score, h.db_index, h.aln.cigar())
                        for h in search_query(q, db, codes, scoring, stats, scanner=gpu)]
            assert cpu_hits == gpu_hits


@pytest.mark.gpu
@pytest.mark.parametrize("alphabet, plan", [("protein", "single"), ("dna", "single"), ("protein", "cost"), ("protein", "wide"), ("protein", "wider"),
                                            ("dna-iupac", "single")])
def test_scan_every_partition_and_query_length(alphabet, plan):
    """Database lengths at and around every partition width (1 .. 2,600: single- and multi-pass, odd
    counts per partition), related sequences (high scores) and queries of 1 .. 1,500 residues (shorter
    and longer than a group's pipeline) all give the CPU engine's scores."""
    from nwalign.backends.cuda.search import CONFIGS, ScanSearcher
    from nwalign.backends.cpu.search import cpu_scan

    rng = np.random.default_rng(11 if alphabet == "dna" else 12)
    scoring = make_scoring(alphabet.replace("-iupac", ""), "local")
    letters = {"dna": "ACGT", "dna-iupac": "ACGT" * 6 + "RYMKWSBDHVN"}.get(alphabet, "ARNDCQEGHILKMFPSTWYV")
    widths = sorted({g * r for hopper in (True, False) for g, r in CONFIGS[hopper][0]})
    lengths = [1, 2, 3] + [w + d for w in widths for d in (-1, 0, 1)] + list(rng.integers(1, 2600, size=150))
    recs = _random_db(rng, letters, lengths)
    base = recs[-1].seq
    recs += [Record(f"v{k}", "", base[k * 7:] + base[:k * 7]) for k in range(5)]  # rotations: long local hits
    db = database_from_records(recs, "db")
    codes = encode_database(db, scoring)
    gpu = ScanSearcher(codes, db.offsets, scoring, plan=plan, min_threads=0)  # every configuration runs
    assert len({(p.G, p.R, p.multi) for p in gpu.partitions(600)}) >= 10
    for m in (1, 2, 7, 31, 32, 33, 144, 600, 1500):
        q = encode_all([Record("q", "", base[:m] if m <= len(base) else base)], scoring, "q")[0]
        assert np.array_equal(gpu.score_query(q), cpu_scan(q.codes, codes, db.offsets, scoring, 2)), m


@pytest.mark.gpu
@pytest.mark.parametrize("alphabet", ["protein", "dna", "dna-iupac"])
def test_scan_profile_plan_equals_cpu(alphabet, monkeypatch):
    """Plan ``profile`` (sw_profile.cu for the sequences up to PROFILE_MAX_LEN, here 1,500; plan wider
    beyond): database lengths 1 .. 2,600 (shorter than a group, odd count), related sequences and queries
    of 1 .. 2,100 residues (one to five passes) give the CPU engine's scores."""
    from nwalign.backends.cuda import search as S
    from nwalign.backends.cpu.search import cpu_scan

    monkeypatch.setattr(S, "PROFILE_MAX_LEN", 1500)
    monkeypatch.setattr(S, "PROFILE_CHUNK_RESIDUES", 10000)  # several chunks, one boundary buffer
    rng = np.random.default_rng(21)
    scoring = make_scoring(alphabet.replace("-iupac", ""), "local")
    letters = {"dna": "ACGT", "dna-iupac": "ACGT" * 6 + "RYMKWSBDHVN"}.get(alphabet, "ARNDCQEGHILKMFPSTWYV")
    lengths = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33] + list(rng.integers(1, 2600, size=120))
    recs = _random_db(rng, letters, lengths)
    base = recs[-1].seq
    recs += [Record(f"v{k}", "", base[k * 7:] + base[:k * 7]) for k in range(5)]
    db = database_from_records(recs, "db")
    codes = encode_database(db, scoring)
    gpu = S.ScanSearcher(codes, db.offsets, scoring, plan="profile", min_threads=0)
    assert 0 < gpu.profile_first < gpu.count and len(gpu.profile_chunks) > 2
    for m in (1, 2, 7, 31, 33, 144, 161, 600, 1500, 2100):
        q = encode_all([Record("q", "", base[:m] if m <= len(base) else base)], scoring, "q")[0]
        assert np.array_equal(gpu.score_query(q), cpu_scan(q.codes, codes, db.offsets, scoring, 2)), m


@pytest.mark.parametrize("first", [0, 1, 4])
@pytest.mark.parametrize("residues", [1, 10, 15, 1000])
def test_scan_profile_chunks_cover_the_range(first, residues):
    """Plan profile's chunks (no GPU needed): contiguous, covering sequences first.. once, each within the
    residue bound unless it is a single pair, every chunk but the last an even number of sequences."""
    from nwalign.backends.cuda.scanplan import profile_chunks_of

    lengths = np.array([9, 8, 7, 7, 5, 5, 4, 3, 3, 1, 1], dtype=np.int64)
    chunks = profile_chunks_of(lengths, first, residues)
    assert chunks[0][0] == first and sum(c[1] for c in chunks) == lengths.size - first
    for (a, n, base, size), nxt in zip(chunks, chunks[1:] + [(lengths.size,)]):
        assert a + n == nxt[0] and base == lengths[:a].sum() and size == lengths[a:a + n].sum()
        assert size <= residues or n <= 2
    assert all(c[1] % 2 == 0 for c in chunks[:-1])
    assert profile_chunks_of(lengths, lengths.size, residues) == []


@pytest.mark.gpu
def test_scan_auto_plan_takes_the_profile_kernel_on_large_databases(monkeypatch):
    """Plan auto: sw_search.cu alone on a database too small for the profile launches, sw_profile.cu on one
    of PROFILE_MIN_RESIDUES_PER_SM residues per multiprocessor; the same scores either way."""
    from nwalign.backends.cuda import search as S

    rng = np.random.default_rng(5)
    scoring = make_scoring("protein", "local")
    db = database_from_records(_random_db(rng, "ARNDCQEGHILKMFPSTWYV", rng.integers(1, 900, 60)), "db")
    codes = encode_database(db, scoring)
    q = encode_all([Record("q", "", db.record(3).seq[:300])], scoring, "q")[0]
    small = S.ScanSearcher(codes, db.offsets, scoring)
    assert small.plan == "wider" and small.profile_first == small.count
    monkeypatch.setattr(S, "PROFILE_MIN_RESIDUES_PER_SM", 1)
    large = S.ScanSearcher(codes, db.offsets, scoring)
    assert large.plan == "profile" and large.profile_first == 0
    assert np.array_equal(small.score_query(q), large.score_query(q))


@pytest.mark.gpu
@pytest.mark.parametrize("config", [(4, 16), (4, 20), (4, 24), (4, 28), (4, 32), (4, 36), (8, 16), (8, 20),
                                    (8, 24), (8, 28), (8, 32), (16, 16), (16, 20), (16, 24), (16, 28), (16, 32),
                                    (32, 16), (32, 20), (32, 24), (32, 28)])
def test_scan_profile_every_configuration(config, monkeypatch):
    """Every sw_profile.cu instantiation, one pass and three, gives the CPU engine's scores."""
    from nwalign.backends.cuda import search as S
    from nwalign.backends.cpu.search import cpu_scan
    from nwalign.backends.cuda.scanplan import PROFILE_CONFIGS

    assert config in PROFILE_CONFIGS and len(PROFILE_CONFIGS) == 20
    G, R = config
    monkeypatch.setattr(S, "profile_config", lambda m, glocal=False: (G, R, -(-m // (G * R))))
    rng = np.random.default_rng(G * 100 + R)
    scoring = make_scoring("protein", "local")
    recs = _random_db(rng, "ARNDCQEGHILKMFPSTWYV", [1, 4, G - 1, G, 2 * G + 1] + list(rng.integers(1, 700, 40)))
    base = recs[-1].seq * 4
    recs.append(Record("rel", "", base[5:900]))
    db = database_from_records(recs, "db")
    codes = encode_database(db, scoring)
    gpu = S.ScanSearcher(codes, db.offsets, scoring, plan="profile")
    for m in (7, G * R, 2 * G * R + 5):
        q = encode_all([Record("q", "", base[:m])], scoring, "q")[0]
        assert np.array_equal(gpu.score_query(q), cpu_scan(q.codes, codes, db.offsets, scoring, 2)), m


@pytest.mark.gpu
def test_scan_dna_and_stars_and_cli(tmp_path):
    """DNA search, a '*' in a protein database (gsw refuses it, scan does not), and the CLI default."""
    from nwalign.backends.cuda.search import ScanSearcher
    from nwalign.backends.cpu.search import cpu_scan

    rng = np.random.default_rng(4)
    scoring = make_scoring("dna", "local")
    recs = [Record(f"d{k}", "", "".join(rng.choice(list("ACGT"), size=int(rng.integers(1, 700)))))
            for k in range(300)]
    db = database_from_records(recs, "dna")
    codes = encode_database(db, scoring)
    q = encode_all([Record("q", "", recs[7].seq[10:400] or "ACGT")], scoring, "q")[0]
    assert np.array_equal(ScanSearcher(codes, db.offsets, scoring).score_query(q),
                          cpu_scan(q.codes, codes, db.offsets, scoring, 2))
    star = tmp_path / "star.fa"
    star.write_text(">s1\nMKVLAAGIVG*\n>s2\nMKV*LA\n")
    outs = []
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.tsv"
        assert main(["search", OPAL, str(star), "--backend", backend, "-o", str(out), "--columns",
                     "qseqid,sseqid,score,cigar"]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1] and outs[0]


@pytest.mark.gpu
@pytest.mark.parametrize("profile_max_len", [None, 9000])
def test_scan16_overflow_is_recomputed_in_32_bits(profile_max_len, monkeypatch):
    """Scores above the int16 range (identical 7-8 kb DNA: +5 per column) come out exact; odd counts. The
    default plan (the long sequences through sw_search.cu), and (9000) every sequence through sw_profile.cu."""
    from nwalign.backends.cuda import search as S
    from nwalign.backends.cpu.search import cpu_scan

    if profile_max_len:
        monkeypatch.setattr(S, "PROFILE_MAX_LEN", profile_max_len)
    rng = np.random.default_rng(8)
    scoring = make_scoring("dna", "local")
    query = "".join(rng.choice(list("ACGT"), size=7500))
    recs = [Record("same", "", query), Record("longer", "", query + query[:600])]
    recs += [Record(f"r{k}", "", "".join(rng.choice(list("ACGT"), size=int(rng.integers(1, 3000)))))
             for k in range(37)]
    recs.append(Record("half", "", query[:3000]))
    db = database_from_records(recs, "dna")
    codes = encode_database(db, scoring)
    q = encode_all([Record("q", "", query)], scoring, "q")[0]
    gpu = S.ScanSearcher(codes, db.offsets, scoring, plan="profile")
    if profile_max_len:
        assert gpu.profile_first == 0
    got = gpu.score_query(q)
    want = cpu_scan(q.codes, codes, db.offsets, scoring, 2)
    assert want.max() > 32767 and gpu.recomputed >= 2
    assert np.array_equal(got, want)


@pytest.mark.parametrize("hopper", [True, False])
@pytest.mark.parametrize("m", [1, 144, 1000, 5478])
def test_scan_partitions_cover_the_database(hopper, m):
    """The scan's launch plan (no GPU needed): contiguous ranges covering every sequence once, longest
    first; a single-pass configuration only for sequences that fit its G x R columns; every range large
    enough to fill a GPU, or merged into the next longer one."""
    from nwalign.backends.cuda.scanplan import CONFIGS, MIN_THREADS, length_partitions

    rng = np.random.default_rng(5)
    lengths = np.sort(np.clip(rng.lognormal(5.7, 0.6, size=60_000), 1, 9000).astype(np.int64))[::-1]
    widths = {g * r for g, r in CONFIGS[hopper][0]}
    for single in (False, True):
        parts = length_partitions(lengths, True, hopper, m, single)
        assert parts[0].first == 0 and sum(p.count for p in parts) == lengths.size
        for a, b in zip(parts, parts[1:]):
            assert a.first + a.count == b.first
        for p in parts:
            seqs = lengths[p.first:p.first + p.count]
            if not p.multi:
                assert seqs.max() <= p.G * p.R and p.G * p.R in widths
            assert p.G in (4, 8, 16, 32)
        for p in parts[1:]:
            assert (p.count + 1) // 2 * p.G >= MIN_THREADS
    wide = length_partitions(lengths, False, hopper, m)
    assert len(wide) == 1 and wide[0].multi and wide[0].count == lengths.size


def test_top_hits_ties_and_min_score():
    """Best scores first, ties in database order, --min-score applied, fewer candidates than --top."""
    scores = np.array([5, 9, 9, 1, 9, 7, 9])
    assert top_hits(scores, 3, None).tolist() == [1, 2, 4]
    assert top_hits(scores, 10, None).tolist() == [1, 2, 4, 6, 5, 0, 3]
    assert top_hits(scores, 10, 7).tolist() == [1, 2, 4, 6, 5]
    assert top_hits(scores, 0, None).tolist() == []


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_top_hits_equal_a_full_sort(dtype):
    """The grouped bound of large arrays (and the partition of small ones) picks exactly what a stable
    sort of every score does: sizes around the group boundaries, heavy ties, negative scores, a tail."""
    rng = np.random.default_rng(5)
    for n in (1, 63, 64, 65, 4095, 4096, 4097, 70001, 300_003):
        for high in (1, 3, 200, 30_000):
            scores = rng.integers(-3, high, size=n).astype(dtype)
            scores[rng.integers(0, n, size=max(1, n // 500))] = high + 2  # a few best ones, tied
            full = np.lexsort((np.arange(n), -scores.astype(np.int64)))
            for top in (1, 10, 64, 500, n + 1):
                assert np.array_equal(top_hits(scores, top, None), full[:top]), (n, high, top)
                floor = high // 2
                want = full[scores[full] >= floor][:top]
                assert np.array_equal(top_hits(scores, top, floor), want), (n, high, top, floor)


def test_score_columns_need_no_alignment(capsys, monkeypatch):
    """Columns the scan alone gives (ids, score, lengths, E-value, bit score) are written without
    aligning any hit, and equal the aligned run's."""
    from nwalign.results import hits as search

    cols = "qseqid,sseqid,score,evalue,bitscore,qlen,slen"
    cpu = ["--backend", "cpu"]  # the CPU's aligner is the one replaced (a GPU aligns hits in batches)
    assert main(["search", OPAL, SP196, "--top", "3", "--max-hsps", "1", "--columns", cols + ",pident", *cpu]) == 0
    aligned = "".join(line.rsplit("\t", 1)[0] + "\n" for line in capsys.readouterr().out.splitlines())

    def no_alignment(*args, **kwargs):
        raise AssertionError("a hit was aligned")

    monkeypatch.setattr(search, "align_pair", no_alignment)
    assert main(["search", OPAL, SP196, "--top", "3", "--max-hsps", "1", "--columns", cols, *cpu]) == 0
    assert capsys.readouterr().out == aligned and aligned.count("\n") == 15
    with pytest.raises(AssertionError, match="aligned"):
        main(["search", OPAL, SP196, "--top", "3", "--max-hsps", "1", "--columns", "qseqid,pident", *cpu])


def test_blast_habits_columns(capsys):
    """BLAST's space-separated --columns, and qseq/sseq/ppos/qcovs/stitle/btop: btop rebuilt into the
    gapped sequences gives qseq and sseq; qcovs is the aligned query span; stitle the header line."""
    cols = "qseqid sseqid qstart qend qlen length nident qseq sseq ppos qcovs stitle btop"
    assert main(["search", OPAL, SP196, "--top", "3", "--max-hsps", "1", "--columns", cols]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 15
    titles = {r.id: r.description for r in read_fasta(SP196)}
    for qid, sid, qs, qe, qlen, length, nident, qseq, sseq, ppos, qcovs, stitle, btop in rows:
        assert len(qseq) == len(sseq) == int(length) and stitle == titles[sid]
        assert int(qcovs) == round(100 * (int(qe) - int(qs) + 1) / int(qlen))
        q_rebuilt, s_rebuilt, k = [], [], 0
        for token in re.findall(r"\d+|\D\D", btop):
            if token.isdigit():
                q_rebuilt.append(qseq[k:k + int(token)])
                s_rebuilt.append(qseq[k:k + int(token)])
                k += int(token)
            else:
                q_rebuilt.append(token[0])
                s_rebuilt.append(token[1])
                k += 1
        assert "".join(q_rebuilt) == qseq and "".join(s_rebuilt) == sseq
        assert sum(int(t) for t in re.findall(r"\d+", btop)) == int(nident)
        assert float(ppos) >= 100 * int(nident) / int(length) - 0.01


def test_emboss_names_and_fractional_penalties(capsys):
    """EDNAFULL is EMBOSS's name for NUC.4.4; a fractional penalty (EMBOSS's 0.5) is refused in one line
    that says what to do."""
    a = make_scoring("dna", "global", matrix="EDNAFULL")
    b = make_scoring("dna", "global", matrix="NUC.4.4")
    assert np.array_equal(a.matrix, b.matrix) and a.alphabet == b.alphabet
    assert main(["pair", "--random", "20,20", "--gap-extend", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "integers" in err and "double every score" in err


def test_hits_from_a_batch_aligner_equal_the_cpu_hits():
    """The search path that takes the hits' alignments from a batch aligner (the GPU's BatchAligner on a
    GPU; here one with the same interface over the CPU engine) builds the same hits as the CPU path."""
    from nwalign.backends.cpu import align_codes
    from nwalign.output.columns import hit_field as field

    class CpuBatch:
        def __init__(self, scoring):
            self.scoring = scoring

        def submit(self, pairs):
            s = self.scoring
            done = [align_codes(q, t, s.matrix, s.gap_open, s.gap_extend, s.mode_code) for q, t in pairs]
            return type("Batch", (), {"result": lambda self: done})()

    scoring = make_scoring("protein", "local")
    stats = parameters(scoring)
    db = database_from_records(read_fasta(SP196), "db")
    codes = encode_database(db, scoring)
    cols = ("qseqid", "sseqid", "pident", "qstart", "qend", "sstart", "send", "evalue", "bitscore", "cigar", "btop")
    for q in encode_all(read_fasta(OPAL), scoring, "q"):
        want = [[field(h, c) for c in cols] for h in search_query(q, db, codes, scoring, stats, 5)]
        got = [[field(h, c) for c in cols] for h in search_query(q, db, codes, scoring, stats, 5,
                                                                   aligner=CpuBatch(scoring))]
        assert got == want and len(got) == 5


def test_progress_counts_dp_cells():
    """A search reports its progress in DP cells (query length x database residues) after each query:
    the progress bar's GCUPS."""
    import pathlib

    from nwalign import search

    job = search(pathlib.Path(OPAL), SP196, top=2, backend="cpu")
    seen: list = []
    assert len(list(job.run(seen.append))) == len(job.queries)
    assert seen == [len(q.seq) * job.database.total_length for q in job.queries]


@pytest.mark.gpu
@pytest.mark.parametrize("size", [1, 999, 1000, 1001, 4000, 10_500])
def test_database_upload_through_staging_buffers(monkeypatch, size):
    """The database upload in pieces through the pinned staging buffers (pieces of 1,000 bytes here):
    every byte arrives, whatever the number of pieces and the last one's size."""
    import cupy

    from nwalign.backends.cuda import devicedb

    monkeypatch.setattr(devicedb, "_CHUNK", 1000)
    host = np.random.default_rng(size).integers(0, 256, size=size, dtype=np.uint8)
    assert np.array_equal(devicedb._upload(cupy, host).get(), host)


def test_hits_from_alignments_made_elsewhere_equal_aligned_hits():
    """hits.hits_from_paths (a GPU batch's alignments turned into hits, their statistics computed together)
    gives the hits the CPU engine's aligned_hit gives, field by field; a path whose score is not the
    scan's is never reported."""
    from nwalign.backends.cpu import align_codes
    from nwalign.backends.engine import Encoded
    from nwalign.results.hits import aligned_hit, hits_from_paths

    scoring = make_scoring("protein", "local")
    db = load_database(SP196)
    codes = db.encode(scoring)
    query = encode_all(read_fasta(OPAL)[:1], scoring, "q")[0]
    ks = [3, 17, 40, 41, 100, 150]
    paths = [align_codes(query.codes, codes[db.offsets[k]:db.offsets[k + 1]], scoring.matrix, scoring.gap_open,
                         scoring.gap_extend, scoring.mode_code) for k in ks]
    scores = np.zeros(db.count, dtype=np.int64)
    scores[ks] = [p[0] for p in paths]
    reported = [(k, 1e-3 * n, 30.0 + n) for n, k in enumerate(ks)]
    got = hits_from_paths(query, db, codes, reported, scores, paths, scoring)
    want = [aligned_hit(query, db, codes, k, scoring, ev, bits) for k, ev, bits in reported]
    assert [h.db_index for h in got] == ks and isinstance(query, Encoded)
    for a, b in zip(got, want):
        assert (a.evalue, a.bitscore, a.title, a.query) == (b.evalue, b.bitscore, b.title, b.query)
        for f in dataclasses.fields(a.aln):
            x, y = getattr(a.aln, f.name), getattr(b.aln, f.name)
            assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, f.name
    scores[ks[2]] += 1
    with pytest.raises(NwalignError, match="internal error"):
        hits_from_paths(query, db, codes, reported, scores, paths, scoring)
