"""The paths over several GPUs, on one GPU: --devices with GPU 0 named twice (a thread each in this
process, a GPU lost mid-run), and a search over a Dask worker process holding one GPU (the whole
database uploaded ahead of the first task, or cut in shards): the hits and rows of one process.
Runs where a GPU and Dask are (``-m gpu``)."""

import os
import pathlib

import pytest

from nwalign import search

from helpers import DATA, whole_upload_fails, search_rows

pytestmark = pytest.mark.gpu
distributed = pytest.importorskip("distributed")

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")


@pytest.fixture(scope="module")
def ecoli_nwdb(tmp_path_factory):
    from nwalign.io.makedb import makedb

    path = str(tmp_path_factory.mktemp("db") / "ecoli.nwdb")
    makedb(ECOLI, path)
    return path


@pytest.fixture(scope="module")
def plain_nwdb(tmp_path_factory):
    """The E. coli proteins without selenocysteine (U): the file's letter codes are the scoring's, so the
    .nwdb uploaded before the alphabet is settled is the one scanned."""
    from nwalign.io.makedb import makedb
    from nwalign.io.sequences import read_fasta

    folder = tmp_path_factory.mktemp("plain")
    (folder / "plain.fa").write_text("".join(f">{r.id}\n{r.seq}\n" for r in read_fasta(ECOLI) if "U" not in r.seq))
    makedb(str(folder / "plain.fa"), str(folder / "plain.nwdb"))
    return str(folder / "plain.nwdb")


@pytest.fixture(scope="module")
def gpu_client():
    from nwalign.parallel.cluster import gpu_cluster

    with gpu_cluster([0]) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.parametrize("shards", [None, 2])
def test_a_gpu_worker_equals_one_process(ecoli_nwdb, gpu_client, shards):
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(OPAL) + read_fasta(ECOLI)[:12]
    want = search_rows(search(queries, ecoli_nwdb, top=9, backend="cuda", max_evalue=float("inf"), devices="0"))
    job = search(queries, ecoli_nwdb, top=9, backend="cuda", max_evalue=float("inf"), client=gpu_client, shards=shards)
    assert job._scaleout.shards == (shards or 1)
    assert search_rows(job) == want and len(want) == 17 * 9


def _uploads_held() -> int:
    from nwalign.parallel.cluster import _CACHE

    return sum(1 for key in _CACHE if key[0] == "upload")


def test_a_preloaded_database_is_used_once_and_fits(plain_nwdb, gpu_client):
    """preload_database on the worker: the whole .nwdb on its GPU, taken by the next one-shard search's
    searcher (here with another matrix than the earlier tests' searchers), and then no longer held."""
    from nwalign.jobs.search.shards import preload_database

    assert gpu_client.run(preload_database, plain_nwdb) == {w: True for w in gpu_client.scheduler_info()["workers"]}
    assert list(gpu_client.run(_uploads_held).values()) == [1]
    want = search_rows(search(pathlib.Path(OPAL), plain_nwdb, top=4, backend="cuda", max_evalue=float("inf"), matrix="BLOSUM45", devices="0"))
    got = search_rows(search(pathlib.Path(OPAL), plain_nwdb, top=4, backend="cuda", max_evalue=float("inf"), matrix="BLOSUM45", client=gpu_client))
    assert got == want and len(want) == 20
    assert list(gpu_client.run(_uploads_held).values()) == [0]


def _two_places(monkeypatch):
    """--devices over "two GPUs" that are GPU 0 twice: two threads in this process, each with its own
    scanner or scorer on GPU 0."""
    import nwalign.parallel.cluster

    monkeypatch.setattr(nwalign.parallel.cluster, "resolve_devices", lambda *a, **k: [0, 0])


class _LoseSecond:
    """Wraps a job's function so that the second thread to run it raises a CUDA error (an illegal
    address: a GPU lost) at its result number ``after`` (None: never); ``seen`` counts each thread's
    results. :meth:`pipeline` wraps a generator of results, :meth:`call` a function of one task."""

    def __init__(self, after: int | None):
        self.after, self.seen, self.order = after, {}, []

    def _next(self):
        import threading

        import cupy

        me = threading.current_thread().name
        if me not in self.order:
            self.order.append(me)
        if self.order.index(me) == 1 and self.seen.get(me, 0) == self.after:
            raise cupy.cuda.runtime.CUDARuntimeError(700)
        self.seen[me] = self.seen.get(me, 0) + 1

    def pipeline(self, run):
        def wrapped(*args, **kwargs):
            for item in run(*args, **kwargs):
                self._next()
                yield item
        return wrapped

    def call(self, fn):
        def wrapped(*args, **kwargs):
            out = fn(*args, **kwargs)
            self._next()
            return out
        return wrapped


@pytest.mark.parametrize("form", ["nwdb", "fasta"])
def test_devices_threads_scan_like_one_gpu(plain_nwdb, monkeypatch, form):
    """--devices over two GPUs (GPU 0 twice): a thread each in this process, no worker process; both
    scan queries (each with SLOTS_SHARED queries in flight), and the hits and their order are those of
    one GPU, for a .nwdb and a FASTA database."""
    import nwalign.jobs.search.job
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(ECOLI)[:150]
    database = plain_nwdb if form == "nwdb" else ECOLI
    want = search_rows(search(queries, database, top=5, backend="cuda", devices="0"))
    _two_places(monkeypatch)
    lose = _LoseSecond(None)
    monkeypatch.setattr(nwalign.jobs.search.job, "search_all", lose.pipeline(nwalign.jobs.search.job.search_all))
    cells: list = []
    job = search(queries, database, top=5, backend="cuda")
    assert job._scaleout is None and len(job.leads) == 2
    from nwalign.backends.cuda.search import SLOTS_SHARED

    assert [s.slots for s, _ in job.leads] == [SLOTS_SHARED, SLOTS_SHARED] and SLOTS_SHARED > 2
    assert search_rows(job.run(cells.append)) == want and len(cells) == len(queries)
    assert len(lose.seen) == 2 and sum(lose.seen.values()) == len(queries)


def test_a_gpu_lost_mid_search_loses_nothing(plain_nwdb, monkeypatch, caplog):
    """One of the GPUs raises a CUDA error after three queries: its unfinished queries run on the other;
    the same hits in the same order, and a warning naming the GPU."""
    import logging

    import nwalign.jobs.search.job
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(ECOLI)[:80]
    want = search_rows(search(queries, plain_nwdb, top=5, backend="cuda", devices="0"))
    _two_places(monkeypatch)
    lose = _LoseSecond(3)
    monkeypatch.setattr(nwalign.jobs.search.job, "search_all", lose.pipeline(nwalign.jobs.search.job.search_all))
    monkeypatch.setattr(logging.getLogger("nwalign"), "propagate", True)  # a CLI test may have turned it off
    with caplog.at_level(logging.WARNING, logger="nwalign"):
        got = search_rows(search(queries, plain_nwdb, top=5, backend="cuda"))
    assert got == want and lose.seen[lose.order[1]] == 3 and sum(lose.seen.values()) == len(queries)
    assert "search: GPU 0 failed (CUDARuntimeError" in caplog.text


def test_a_database_too_large_for_each_gpu_is_streamed_through_each(plain_nwdb, monkeypatch):
    """Where the database's upload runs out of memory on the GPUs, each GPU's thread streams it in chunks
    and takes batches of queries (GPU 0 twice: two threads); the hits are those of one resident GPU."""
    from nwalign.backends.cuda.streamed import StreamedScan
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(ECOLI)[:30]
    want = search_rows(search(queries, plain_nwdb, top=6, backend="cuda", max_evalue=float("inf"), devices="0"))
    _two_places(monkeypatch)
    whole_upload_fails(monkeypatch, 2 << 20)  # chunks of < 4,000 sequences
    job = search(queries, plain_nwdb, top=6, backend="cuda", max_evalue=float("inf"))
    assert len(job.leads) == 2 and all(isinstance(s, StreamedScan) for s, _ in job.leads)
    assert search_rows(job) == want and len(want) == 30 * 6


@pytest.mark.parametrize("extra", [["--columns", "qseqid,sseqid,score,qlen,slen"],
                                   ["--min-identity", "0.9", "--matrix-out", "{dir}/d.npy"]])
@pytest.mark.parametrize("lose", [False, True])
def test_allpairs_devices_threads_byte_identical(tmp_path, genes, monkeypatch, extra, lose):
    """Score columns: blocks through one stream of batches a GPU (allvsall_tasks.scored_blocks_on); the
    identity filter and a distance matrix: block by block (block_of). With ``lose``, the second thread's
    GPU fails at its second block: the other runs its blocks, the files are the same."""
    import nwalign.jobs.allpairs.job
    from nwalign.cli import main

    outs = []
    for devices in ("0", None):
        d = tmp_path / ("one" if devices else "two")
        d.mkdir()
        if devices is None:
            _two_places(monkeypatch)
            faults = _LoseSecond(1 if lose else None)
            if "--min-identity" in extra:
                monkeypatch.setattr(nwalign.jobs.allpairs.job, "block_of", faults.call(nwalign.jobs.allpairs.job.block_of))
            else:
                monkeypatch.setattr(nwalign.jobs.allpairs.job, "scored_blocks_on",
                                    faults.pipeline(nwalign.jobs.allpairs.job.scored_blocks_on))
        args = ["allpairs", str(genes / "60.fa"), "-o", str(d / "out.tsv")] + [e.format(dir=d) for e in extra]
        assert main(args + (["--devices", devices] if devices else [])) == 0
        outs.append(sorted((p.name, p.read_bytes()) for p in d.iterdir()))
    assert outs[0] == outs[1] and outs[0][-1][1].count(b"\n") > 1


def test_a_block_in_several_batches_equals_one_process(genes, monkeypatch):
    """A spread all-pairs block is scored in several batches of whole waves (the next one runs while one
    is formatted): its rows are those of the one-process run at its positions."""
    from nwalign import allpairs
    from nwalign.backends.cuda.allpairs import AllPairsScorer
    from nwalign.jobs.allpairs.tasks import PairsTask, block_of

    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    job = allpairs(genes / "60.fa", columns=cols, backend="cuda", devices="0")
    whole = "".join(b.rows for b in job.blocks()).splitlines(keepends=True)
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


@pytest.mark.parametrize("lose", [False, True])
def test_pair_devices_threads_byte_identical(tmp_path, genes, monkeypatch, lose):
    """pair over two GPUs (GPU 0 twice), a thread each; with ``lose`` the second fails at its third chunk."""
    import nwalign.jobs.pair
    from nwalign.cli import main

    outs = []
    for devices in ("0", None):
        out = tmp_path / f"{devices}.sam"
        if devices is None:
            _two_places(monkeypatch)
            monkeypatch.setattr(nwalign.jobs.pair, "chunk_of", _LoseSecond(2 if lose else None).call(nwalign.jobs.pair.chunk_of))
        args = ["pair", str(genes / "q20.fa"), str(genes / "t20.fa"), "--format", "sam", "-o", str(out)]
        assert main(args + (["--devices", devices] if devices else [])) == 0
        outs.append([line for line in out.read_text().splitlines() if not line.startswith("@PG")])
    assert outs[0] == outs[1] and len(outs[0]) >= 20
