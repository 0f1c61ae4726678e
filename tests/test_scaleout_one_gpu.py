"""A search over a Dask worker process holding one GPU (the path --devices takes with two or more): the
whole database uploaded ahead of the first task, or cut in shards, gives the hits of one process.
Runs where a GPU and Dask are (``-m gpu``)."""

import os
import pathlib

import pytest

from nwalign import search

from conftest import DATA

pytestmark = pytest.mark.gpu
distributed = pytest.importorskip("distributed")

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")


@pytest.fixture(scope="module")
def ecoli_nwdb(tmp_path_factory):
    from nwalign.database import makedb

    path = str(tmp_path_factory.mktemp("db") / "ecoli.nwdb")
    makedb(ECOLI, path)
    return path


@pytest.fixture(scope="module")
def plain_nwdb(tmp_path_factory):
    """The E. coli proteins without selenocysteine (U): the file's letter codes are the scoring's, so the
    .nwdb uploaded before the alphabet is settled is the one scanned."""
    from nwalign.database import makedb
    from nwalign.sequences import read_fasta

    folder = tmp_path_factory.mktemp("plain")
    (folder / "plain.fa").write_text("".join(f">{r.id}\n{r.seq}\n" for r in read_fasta(ECOLI) if "U" not in r.seq))
    makedb(str(folder / "plain.fa"), str(folder / "plain.nwdb"))
    return str(folder / "plain.nwdb")


@pytest.fixture(scope="module")
def gpu_client():
    from nwalign.scaleout import gpu_cluster

    with gpu_cluster([0]) as cluster, distributed.Client(cluster) as client:
        yield client


def _rows(results):
    return [(q.id, h.db_index, h.aln.score, h.aln.cigar(), h.evalue) for q, hits in results for h in hits]


@pytest.mark.parametrize("shards", [None, 2])
def test_a_gpu_worker_equals_one_process(ecoli_nwdb, gpu_client, shards):
    from nwalign.sequences import read_fasta

    queries = read_fasta(OPAL) + read_fasta(ECOLI)[:12]
    want = _rows(search(queries, ecoli_nwdb, top=9, backend="cuda", devices="0"))
    job = search(queries, ecoli_nwdb, top=9, backend="cuda", client=gpu_client, shards=shards)
    assert job._scaleout.shards == (shards or 1)
    assert _rows(job) == want and len(want) == 17 * 9


def _uploads_held() -> int:
    from nwalign.scaleout import _CACHE

    return sum(1 for key in _CACHE if key[0] == "upload")


def test_a_preloaded_database_is_used_once_and_fits(plain_nwdb, gpu_client):
    """preload_database on the worker: the whole .nwdb on its GPU, taken by the next one-shard search's
    searcher (here with another matrix than the earlier tests' searchers), and then no longer held."""
    from nwalign.shards import preload_database

    assert gpu_client.run(preload_database, plain_nwdb) == {w: True for w in gpu_client.scheduler_info()["workers"]}
    assert list(gpu_client.run(_uploads_held).values()) == [1]
    want = _rows(search(pathlib.Path(OPAL), plain_nwdb, top=4, backend="cuda", matrix="BLOSUM45", devices="0"))
    got = _rows(search(pathlib.Path(OPAL), plain_nwdb, top=4, backend="cuda", matrix="BLOSUM45", client=gpu_client))
    assert got == want and len(want) == 20
    assert list(gpu_client.run(_uploads_held).values()) == [0]


@pytest.mark.parametrize("form", ["nwdb", "fasta"])
def test_first_queries_scanned_here_while_the_workers_start(plain_nwdb, monkeypatch, form):
    """The --devices path with its workers started in the background, on one GPU (GPU 0 named twice makes
    one worker and two scanning threads here): this process scans the first queries on its GPUs until the
    worker is ready (each thread held after its first query until then), the worker the rest; the hits
    are those of one process, in query order. For a .nwdb and for a FASTA database (uploaded here on every
    GPU at once; the workers read it as a temporary .nwdb)."""
    import threading

    import nwalign.search_spread
    import nwalign.scaleout
    from nwalign.sequences import read_fasta

    queries = read_fasta(ECOLI)[:150]
    database = plain_nwdb if form == "nwdb" else ECOLI
    want = _rows(search(queries, database, top=5, backend="cuda", devices="0"))
    up = threading.Event()
    start, scan = nwalign.search_spread.start_gpu_workers, nwalign.search_spread.search_all

    def started(gpus, path):
        workers = start(gpus, path)
        up.set()
        return workers

    def held(*args, **kwargs):  # the scans here (only they, below) wait after each query for the worker
        for item in scan(*args, **kwargs):
            yield item
            assert up.wait(120)

    cells: list = []
    monkeypatch.setattr(nwalign.scaleout, "resolve_devices", lambda *a, **k: [0, 0])
    monkeypatch.setattr(nwalign.search_spread, "start_gpu_workers", started)
    monkeypatch.setattr(nwalign.search_spread, "search_all", held)
    job = search(queries, database, top=5, backend="cuda")
    assert job._scaleout is not None and len(job.leads) == 2  # GPU 0 twice: two threads scan here
    got = _rows(job.run(cells.append))
    assert 2 <= job._scaleout.led < 20 and job._scaleout.shards == 1 and not job.leads
    assert got == want and len(cells) == len(queries)


def test_a_small_search_on_the_devices_path_equals_one_process(plain_nwdb, monkeypatch):
    """Five queries on the devices path (GPU 0 named twice): most likely all scanned here before the worker
    is up (the search then ends without waiting to use it); the hits are those of one process."""
    import nwalign.scaleout

    want = _rows(search(pathlib.Path(OPAL), plain_nwdb, top=6, backend="cuda", devices="0"))
    monkeypatch.setattr(nwalign.scaleout, "resolve_devices", lambda *a, **k: [0, 0])
    job = search(pathlib.Path(OPAL), plain_nwdb, top=6, backend="cuda")
    assert job._scaleout is not None
    assert _rows(job) == want and len(want) == 30 and job._scaleout._started is None


def _devices_path_held(monkeypatch, local: str) -> dict:
    """allpairs and pair as --devices runs them over two GPUs, on GPU 0 twice (one worker process, two
    threads here): each thread here is held after its first task until the worker is up, so that both
    this process and the worker run tasks. ``local``: what runs a task here (block_of, chunk_of), or the
    pipeline of tasks here (scored_blocks_on). Returns a record of the tasks run here."""
    import threading

    import nwalign.allvsall
    import nwalign.pairjob
    import nwalign.scaleout

    job = nwalign.pairjob if local == "chunk_of" else nwalign.allvsall  # the job that runs it here
    up = threading.Event()
    start, run_here = nwalign.scaleout.client_for, getattr(job, local)
    seen = {"here": 0}

    def started(*args, **kwargs):
        workers = start(*args, **kwargs)
        up.set()
        return workers

    def held(*args, **kwargs):
        out = run_here(*args, **kwargs)
        seen["here"] += 1
        assert up.wait(120)
        return out

    def held_stream(*args, **kwargs):
        for out in run_here(*args, **kwargs):
            seen["here"] += 1
            assert up.wait(120)
            yield out

    monkeypatch.setattr(nwalign.scaleout, "resolve_devices", lambda *a, **k: [0, 0])
    monkeypatch.setattr(nwalign.scaleout, "client_for", started)
    monkeypatch.setattr(job, local, held_stream if local == "scored_blocks_on" else held)
    return seen


@pytest.mark.parametrize("extra", [["--columns", "qseqid,sseqid,score,qlen,slen"],
                                   ["--min-identity", "0.9", "--matrix-out", "{dir}/d.npy"]])
def test_allpairs_first_blocks_here_then_the_worker_byte_identical(tmp_path, genes, monkeypatch, extra):
    """Score columns: the blocks here through one stream of batches a GPU (spread.scored_blocks_on);
    the identity filter and a distance matrix: block by block (spread.block_of)."""
    from nwalign.cli import main

    outs = []
    for devices in ("0", None):
        d = tmp_path / ("one" if devices else "spread")
        d.mkdir()
        if devices is None:
            seen = _devices_path_held(monkeypatch, "block_of" if "--min-identity" in extra else "scored_blocks_on")
        args = ["allpairs", str(genes / "60.fa"), "-o", str(d / "out.tsv")] + [e.format(dir=d) for e in extra]
        assert main(args + (["--devices", devices] if devices else [])) == 0
        outs.append(sorted((p.name, p.read_bytes()) for p in d.iterdir()))
    assert outs[0] == outs[1] and outs[0][-1][1].count(b"\n") > 1
    assert 2 <= seen["here"] <= 6  # the other blocks (16 at least) ran on the worker


def test_a_block_in_several_batches_equals_one_process(genes, monkeypatch):
    """A spread all-pairs block is scored in several batches of whole waves (the next one runs while one
    is formatted): its rows are those of the one-process run at its positions."""
    from nwalign import allpairs
    from nwalign.cuda.allpairs import AllPairsScorer
    from nwalign.allvsall_tasks import PairsTask, block_of

    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    job = allpairs(genes / "60.fa", columns=cols, backend="cuda", devices="0")
    whole = "".join(b.text for b in job.blocks()).splitlines(keepends=True)
    assert len(whole) == 60 * 59 // 2
    sizes = []
    stream = AllPairsScorer.stream

    def counted(self, batches, kernel=None):
        for pairs, scores in stream(self, batches, kernel):
            sizes.append(len(pairs))
            yield pairs, scores

    monkeypatch.setattr(AllPairsScorer, "wave", lambda self, kernel: 64)  # small waves: a 1,400-pair block
    monkeypatch.setattr(AllPairsScorer, "stream", counted)
    task = PairsTask((None, None), job.scoring, cols, None, False, "cuda", "auto", None, None, 1, (100, 1500))
    block, stats = block_of(job.a, None, task, 0)
    assert block.text == "".join(whole[100:1500]) and stats["pairs"] == 1400
    assert sizes == [448, 448, 448, 56]


def test_pair_first_chunks_here_then_the_worker_byte_identical(tmp_path, genes, monkeypatch):
    from nwalign.cli import main

    outs = []
    for devices in ("0", None):
        out = tmp_path / f"{devices}.sam"
        if devices is None:
            seen = _devices_path_held(monkeypatch, "chunk_of")
        args = ["pair", str(genes / "q20.fa"), str(genes / "t20.fa"), "--format", "sam", "-o", str(out)]
        assert main(args + (["--devices", devices] if devices else [])) == 0
        outs.append([line for line in out.read_text().splitlines() if not line.startswith("@PG")])
    assert outs[0] == outs[1] and len(outs[0]) >= 20
    assert 2 <= seen["here"] <= 6


def test_workers_that_fail_to_start_leave_every_task_here(plain_nwdb, genes, monkeypatch, caplog):
    """The devices path when the GPU workers cannot start: the search's queries, and allpairs' blocks, all
    run in this process on its GPUs; the same hits and rows, and a warning that says why."""
    import logging

    import nwalign.search_spread
    import nwalign.scaleout
    from nwalign import allpairs
    from nwalign.sequences import read_fasta

    queries = read_fasta(ECOLI)[:40]
    want = _rows(search(queries, plain_nwdb, top=3, backend="cuda", devices="0"))
    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    rows = "".join(b.text for b in allpairs(pathlib.Path(genes / "60.fa"), columns=cols, backend="cuda",
                                            devices="0").blocks())

    def fail(*args, **kwargs):
        raise RuntimeError("test: no worker processes here")

    monkeypatch.setattr(logging.getLogger("nwalign"), "propagate", True)  # a CLI test may have turned it off
    monkeypatch.setattr(nwalign.scaleout, "resolve_devices", lambda *a, **k: [0, 0])
    monkeypatch.setattr(nwalign.search_spread, "start_gpu_workers", fail)
    monkeypatch.setattr(nwalign.scaleout, "client_for", fail)
    with caplog.at_level(logging.WARNING, logger="nwalign"):
        got = _rows(search(queries, plain_nwdb, top=3, backend="cuda"))
        job = allpairs(pathlib.Path(genes / "60.fa"), columns=cols, backend="cuda")
        text = "".join(b.text for b in job.blocks())
    assert got == want and text == rows and rows.count("\n") == 1770
    warned = [r.getMessage() for r in caplog.records if "did not start" in r.getMessage()]
    # one warning per job (after other tests of this module pytest's handlers may list a record twice)
    assert {w.split(":")[0] for w in warned} == {"search", "allpairs"}
    assert all("no worker processes here" in w for w in warned)
