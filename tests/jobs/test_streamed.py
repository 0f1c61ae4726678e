"""A database streamed through the GPU in chunks (nwalign.backends.cuda.streamed): the chunk plan and the sizes
on the CPU; on a GPU, the hits of a streamed database equal a resident one's, whether the memory is
capped (--gpu-memory, CUPY_GPU_MEMORY_LIMIT) or the upload runs out of it."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from nwalign.errors import NwalignError

from helpers import DATA, search_rows, tied_ecoli_nwdb, whole_upload_fails

ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")
OPAL = os.path.join(DATA, "queries_5_opal.fasta")


@pytest.mark.parametrize("text, size", [("16G", 16 << 30), ("512M", 512 << 20), ("2.5GiB", int(2.5 * 2**30)),
                                        ("1000000", 10**6), (" 64k ", 64 << 10), ("1T", 1 << 40), ("300mb", 300 << 20)])
def test_sizes_are_read_in_powers_of_1024(text, size):
    from nwalign.sizes import gpu_memory_bytes as parse_size

    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "-1G", "0", "12X", "nanG", "infG", "1e99T"])
def test_a_size_that_is_none_is_refused_naming_the_option(text):
    from nwalign.sizes import gpu_memory_bytes as parse_size

    with pytest.raises(NwalignError) as err:
        parse_size(text)
    assert err.value.cli.startswith(f"--gpu-memory {text}: give a size")


def test_chunks_cover_the_database_in_order_and_fit_the_budget():
    """Consecutive ranges, every sequence once; each chunk fits the budget while it is uploaded (its
    residues twice) and while it is scanned (with boundary rows for long queries); a sequence larger
    than a chunk's room is a chunk of its own; a budget with no room for a chunk is refused in one
    sentence."""
    from nwalign.backends.cuda import streamed

    rng = np.random.default_rng(7)
    lengths = rng.integers(50, 2000, 5000)
    lengths[1234] = 3_000_000  # longer than a chunk's room
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    budget = streamed.RESERVE + 12_000_000
    for long in (True, False):
        parts = streamed.chunks(offsets, budget, long)
        assert parts[0][0] == 0 and parts[-1][1] == 5000 and all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        for a, b in parts:
            residues = int(offsets[b] - offsets[a])
            scanned = residues + (streamed.BOUNDARY_BYTES * streamed.PROFILE_LANES * (residues + 8192) if long else 0)
            need = max(scanned, 2 * residues) + streamed.BYTES_PER_SEQUENCE * (b - a)
            assert need == streamed.chunk_bytes(residues, b - a, long)
            assert need <= budget - streamed.RESERVE or b - a == 1
        plain = np.concatenate(([0], np.cumsum(np.delete(lengths, 1234))))  # without the long one
        sizes = np.diff(plain[np.array([a for a, _ in streamed.chunks(plain, budget, long)] + [5000 - 1])])
        assert sizes.size >= 2 and sizes.max() < 1.01 * sizes.min()  # even chunks, no small last one
        assert len(parts) >= 2 and ((1234, 1235) in parts or not long)  # too long for a chunk of others
    assert len(streamed.chunks(offsets, budget, True)) > len(streamed.chunks(offsets, budget, False))
    whole = streamed.chunks(offsets, streamed.resident_bytes(int(offsets[-1]), 5000) * 2)
    assert whole == [(0, 5000)]
    with pytest.raises(NwalignError, match="leave no room for a chunk"):
        streamed.chunks(offsets, streamed.RESERVE + 1000)


@pytest.mark.parametrize("seed", range(6))
def test_boundary_rows_of_pairs_do_not_overlap_and_fit_half_the_residues(seed):
    """sw_profile.cu keeps a pair's n0 boundary entries from (o0 + Lmax - n0) / 2 of its piece (lengths
    decreasing): the pairs' entries never overlap and end within scanplan.bound_words, half the residues."""
    from nwalign.backends.cuda.devicedb import length_order
    from nwalign.backends.cuda.scanplan import profile_chunks_of, bound_words

    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, [8, 60, 4096][seed % 3], size=int(rng.integers(1, 3000)))
    if seed == 5:
        lengths[:] = 7  # all equal
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    _, ordered = length_order(offsets)
    for first, count, start, residues in profile_chunks_of(ordered, 0, int(rng.integers(50, 20000))):
        part = ordered[first:first + count].astype(np.int64)
        o0 = np.concatenate(([0], np.cumsum(part)))[:-1:2]
        n0 = part[::2]
        slots = (o0 + part[0] - n0) >> 1
        assert slots[0] == 0 and np.all(slots[1:] >= slots[:-1] + n0[:-1])
        assert slots[-1] + n0[-1] <= bound_words(residues, int(part[0]))
        assert bound_words(residues, int(part[0])) <= residues // 2 + int(part[0]) // 2 + 2


def test_gpu_memory_is_checked_before_any_input_is_read(tmp_path):
    from nwalign import search

    with pytest.raises(NwalignError, match="gpu_memory '0.0G'"):
        search(pathlib.Path(tmp_path / "missing.fa"), tmp_path / "missing.nwdb", gpu_memory="0.0G")


@pytest.fixture(scope="module")
def tied_db(tmp_path_factory):
    return tied_ecoli_nwdb(tmp_path_factory.mktemp("tied"), 5)


@pytest.mark.gpu
def test_a_streamed_database_gives_the_hits_of_a_resident_one(tied_db, monkeypatch):
    """--gpu-memory small enough for several chunks (the reserve made small for a small database): the
    same hits, ties across chunks included, and progress over every chunk's cells."""
    from nwalign import search
    from nwalign.backends.cuda import streamed
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(OPAL) + read_fasta(ECOLI)[:20]
    want = search_rows(search(queries, tied_db, top=12, backend="cuda", max_evalue=float("inf"), devices="0"))
    monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
    monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 14)
    cells: list = []
    job = search(queries, tied_db, top=12, backend="cuda", max_evalue=float("inf"), gpu_memory="3M", devices="0")
    assert job.streamed and len(job.gpu.chunks) >= 4
    assert search_rows(job.run(cells.append)) == want and len(want) == 25 * 12
    assert sum(cells) == sum(len(q.seq) for q in queries) * job.database.total_length
    assert any(a[2] == b[2] for a, b in zip(want, want[1:]))  # ties are exercised


@pytest.mark.gpu
@pytest.mark.parametrize("ahead", [1, 5000, 1 << 28])
def test_chunks_read_ahead_whole_or_in_part_give_the_hits_of_a_resident_database(tied_db, monkeypatch, ahead):
    """The next chunk read ahead while one is scanned, whole or its first ``ahead`` residues (the rest
    through the upload's staged copies, made small here to take several), over batches of two queries
    (the first chunk read ahead for the first batch only): the resident database's hits."""
    from nwalign.jobs.search import job as dbsearch
    from nwalign import search
    from nwalign.backends.cuda import devicedb
    from nwalign.backends.cuda import streamed

    want = search_rows(search(pathlib.Path(OPAL), tied_db, top=6, backend="cuda", max_evalue=float("inf"), devices="0"))
    monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
    monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 14)
    monkeypatch.setattr(streamed, "READ_AHEAD_BYTES", ahead)
    monkeypatch.setattr(devicedb, "_CHUNK", 1 << 12)
    monkeypatch.setattr(dbsearch.Search, "STREAM_BATCH", 2)
    job = search(pathlib.Path(OPAL), tied_db, top=6, backend="cuda", max_evalue=float("inf"), gpu_memory="3M", devices="0")
    assert job.streamed and len(job.gpu.chunks) >= 4
    assert search_rows(job) == want and len(want) == 30
    assert 0 < job.gpu.upload_seconds < job.gpu.scan_seconds


@pytest.mark.gpu
def test_a_streamed_scans_reading_thread_ends_with_it(tied_db, monkeypatch):
    """The thread that reads chunks ahead ends once its scan is let go (a Dask worker makes a scan per
    shard), after the scan gave the hits of every chunk."""
    import gc
    import threading
    import time

    from nwalign.backends.cuda import streamed
    from nwalign.io.database import load_database
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import read_fasta

    monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
    monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 14)
    db, sc = load_database(tied_db), make_scoring("protein", "local", search=True)
    queries = [sc.encode(r) for r in read_fasta(OPAL)]
    before = set(threading.enumerate())
    scan = streamed.StreamedScan(db.encode(sc), db.offsets, sc, 0, 3 << 20)
    found = scan.best(queries, 4)
    assert len(scan.chunks) >= 4 and [f[0].size for f in found] == [4] * len(queries)
    assert len(set(threading.enumerate()) - before) == 1
    del scan
    gc.collect()
    deadline = time.monotonic() + 10
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(threading.enumerate()) - before


@pytest.mark.gpu
def test_an_upload_out_of_memory_streams_instead(tied_db, monkeypatch, caplog):
    """The whole database's upload runs out of GPU memory: the search streams it, with the same hits."""
    import logging

    from nwalign import search

    want = search_rows(search(pathlib.Path(OPAL), tied_db, top=5, backend="cuda", devices="0"))
    whole_upload_fails(monkeypatch, 8 << 20)
    monkeypatch.setattr(logging.getLogger("nwalign"), "propagate", True)
    with caplog.at_level(logging.INFO, logger="nwalign"):
        job = search(pathlib.Path(OPAL), tied_db, top=5, backend="cuda", devices="0")
        assert job.streamed and search_rows(job) == want
    assert "does not fit on GPU 0 (test: the database does not fit)" in caplog.text


@pytest.mark.gpu
def test_cupy_memory_limit_streams_from_the_command_line(tied_db, tmp_path):
    """CUPY_GPU_MEMORY_LIMIT below what the resident database needs: the command streams it (-v says in
    how many chunks), and its output is the resident run's, byte for byte."""
    from nwalign.backends.cuda import streamed
    from nwalign.io.database import load_database

    from nwalign.io.sequences import read_fasta

    db = load_database(tied_db)
    need = streamed.resident_bytes(db.total_length, db.count, streamed.long_queries(len(r) for r in read_fasta(OPAL)))
    outs = []
    for limit in (None, need - (need - streamed.RESERVE) // 8):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
        if limit:
            env["CUPY_GPU_MEMORY_LIMIT"] = str(limit)
        out = tmp_path / f"{limit}.tsv"
        done = subprocess.run([sys.executable, "-m", "nwalign", "search", OPAL, tied_db, "--top", "7", "-v", "--devices", "0",
                               "-o", str(out)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        outs.append((out.read_bytes(), done.stderr))
    assert outs[0][0] == outs[1][0] and outs[0][0].count(b"\n") == 35
    assert "resident on GPU 0" not in outs[1][1] and "streamed through GPU 0 in" in outs[1][1]


def test_cpu_chunks_cover_the_database_in_order():
    from nwalign.backends.cpu.streamed import chunk_bounds

    offsets = np.concatenate(([0], np.cumsum([5, 300, 7, 7, 7, 1000, 2, 2]))).astype(np.int64)
    for residues in (1, 10, 14, 21, 400, 10 ** 6):
        bounds = chunk_bounds(offsets, residues)
        assert bounds[0][0] == 0 and bounds[-1][1] == 8 and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        for first, stop in bounds:  # within the cap, or one sequence longer than it alone
            assert offsets[stop] - offsets[first] <= residues or stop == first + 1
    assert chunk_bounds(offsets, 21) == [(0, 1), (1, 2), (2, 5), (5, 6), (6, 8)]


def test_cpu_engine_scans_a_large_database_in_chunks(tied_db, monkeypatch):
    """On the CPU engine a database past CHUNK_RESIDUES is held a chunk at a time: the same hits as the
    whole database scanned at once (ties across chunks included) and progress over every chunk's cells."""
    from nwalign import search
    from nwalign.backends.cpu import streamed
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(OPAL)[:2] + read_fasta(ECOLI)[:3]
    want = search_rows(search(queries, tied_db, top=12, backend="cpu", max_evalue=float("inf"), threads=2))
    monkeypatch.setattr(streamed, "CHUNK_RESIDUES", 200_000)
    cells: list = []
    job = search(queries, tied_db, top=12, backend="cpu", max_evalue=float("inf"), threads=2)
    assert job.streamed and len(job.gpu.chunks) >= 5
    assert search_rows(job.run(cells.append)) == want and len(want) == 5 * 12
    assert sum(cells) == sum(len(q.seq) for q in queries) * job.database.total_length
    assert any(a[2] == b[2] for a, b in zip(want, want[1:]))  # ties are exercised


@pytest.mark.parametrize("longest", [35_000, 100_000])  # 16-bit radix keys, and the int64 sort beyond
def test_length_order_is_stable_decreasing_and_four_bytes(longest):
    from nwalign.backends.cuda.devicedb import length_order

    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 50, 20_000)
    lengths[[5, 700]] = longest
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    order, sorted_lengths = length_order(offsets)
    assert order.dtype == np.int32 and sorted_lengths.dtype == np.int32
    assert np.array_equal(order, np.argsort(-lengths, kind="stable"))
    assert np.array_equal(sorted_lengths, lengths[order]) and sorted_lengths[:2].tolist() == [longest] * 2
    with pytest.raises(NwalignError, match="at least one residue"):
        length_order(np.array([0, 3, 3, 5]))


@pytest.fixture(scope="module")
def extended_db(tmp_path_factory):
    """A .nwdb of E. coli proteins with UniProt's U and O among their letters (beyond BLOSUM62's
    alphabet: scored as X), so that its codes are not the scoring's."""
    from nwalign.io.makedb import makedb
    from nwalign.io.sequences import read_fasta

    folder = tmp_path_factory.mktemp("extended")
    with open(folder / "ext.fa", "w") as out:
        for k, r in enumerate(read_fasta(ECOLI)[:400]):
            seq = list(r.seq)
            for i in range(k % 7, len(seq), 37):
                seq[i] = "UO"[(i + k) % 2]
            out.write(f">{r.id}\n{''.join(seq)}\n")
    db = makedb(str(folder / "ext.fa"), str(folder / "ext.nwdb"))
    assert db.letters.endswith("OU")
    return str(folder / "ext.nwdb")


def _recoded_everywhere(monkeypatch):
    from nwalign.io import database

    monkeypatch.setattr(database, "RECODED_FROM", 0)


def test_letters_beyond_the_alphabet_are_encoded_where_read_on_the_cpu(extended_db, monkeypatch):
    """A .nwdb whose letters extend the scoring's alphabet, past RECODED_FROM residues: searched through
    codes translated where read (no copy of the database), in chunks on the CPU engine, with the hits
    of the translated copy."""
    from nwalign import search
    from nwalign.backends.cpu import streamed
    from nwalign.io.mapped import Recoded

    want = search_rows(search(pathlib.Path(OPAL), extended_db, top=9, backend="cpu", threads=2))
    _recoded_everywhere(monkeypatch)
    monkeypatch.setattr(streamed, "CHUNK_RESIDUES", 30_000)
    job = search(pathlib.Path(OPAL), extended_db, top=9, backend="cpu", threads=2)
    assert isinstance(job._codes, Recoded) and job.streamed and len(job.gpu.chunks) >= 4
    assert search_rows(job) == want and len({r[:2] for r in want}) == 5 * 9


def test_a_letter_the_scoring_cannot_score_is_found_in_recoded_codes(extended_db, monkeypatch):
    from nwalign.io.database import encode_database, load_database
    from nwalign.scoring.schemes import make_scoring

    db = load_database(extended_db)
    dna = make_scoring("dna", "local")
    with pytest.raises(NwalignError) as whole:
        encode_database(db, dna)
    _recoded_everywhere(monkeypatch)
    with pytest.raises(NwalignError) as lazy:
        encode_database(db, dna)
    assert str(lazy.value) == str(whole.value) and "is not in the alphabet" in str(lazy.value)


@pytest.mark.gpu
def test_letters_beyond_the_alphabet_on_the_gpu_resident_and_streamed(extended_db, monkeypatch):
    """The same database on the GPU through translated codes: uploaded whole and streamed in chunks,
    the CPU engine's hits."""
    from nwalign import search
    from nwalign.backends.cuda import streamed
    from nwalign.io.mapped import Recoded

    want = search_rows(search(pathlib.Path(OPAL), extended_db, top=9, backend="cpu", threads=2))
    _recoded_everywhere(monkeypatch)
    job = search(pathlib.Path(OPAL), extended_db, top=9, backend="cuda", devices="0")
    assert isinstance(job._codes, Recoded) and not job.streamed and search_rows(job) == want
    monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
    monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 14)
    db = job.database  # four fifths of what it needs resident: two chunks
    long = streamed.long_queries(q.codes.size for q in job._encoded)
    need = streamed.resident_bytes(db.total_length, db.count, long)
    job = search(pathlib.Path(OPAL), extended_db, top=9, backend="cuda", devices="0", gpu_memory=need * 4 // 5)
    assert job.streamed and len(job.gpu.chunks) >= 2 and search_rows(job) == want


@pytest.mark.gpu
def test_a_gpu_worker_streams_a_shard_larger_than_its_gpu(tied_db, monkeypatch):
    """A Dask GPU worker's shard whose upload runs out of GPU memory is streamed through the GPU in
    chunks: the same best hits and alignments as the shard resident (run in this process)."""
    from nwalign.parallel import cluster as scaleout
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import read_fasta
    from nwalign.jobs.search.shards import ShardTask, best_of_shard

    sc = make_scoring("protein", "local", search=True)
    queries = tuple(sc.encode_bytes(np.frombuffer(r.seq.encode(), np.uint8)).tobytes() for r in read_fasta(OPAL))
    task = ShardTask(tied_db, 0, 1, queries, sc, 8, backend="cuda", align=True)

    def fresh(monkeypatch):  # no database, searcher or aligner kept from an earlier task
        monkeypatch.setattr(scaleout, "_CACHE", {})
        monkeypatch.setattr(scaleout, "_THREAD", __import__("threading").local())

    fresh(monkeypatch)
    want = best_of_shard(task)
    fresh(monkeypatch)
    whole_upload_fails(monkeypatch, 8 << 20)
    got = best_of_shard(task)
    assert len(got) == len(want) == 5
    for (i, s, paths), (wi, ws, wpaths) in zip(got, want):
        assert np.array_equal(i, wi) and np.array_equal(s, ws) and i.size == 8
        assert [p[:5] for p in paths] == [p[:5] for p in wpaths]
        assert all(np.array_equal(p[5], w[5]) for p, w in zip(paths, wpaths))
