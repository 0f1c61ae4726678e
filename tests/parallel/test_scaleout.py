"""The search spread over Dask workers (nwalign.parallel.cluster, nwalign.jobs.search.shards, nwalign.parallel.spread): shards balanced by residues, an exact merge,
output byte-identical to a one-process search for any number of shards and workers, and after a worker
dies; a task that keeps killing workers ends the run with exit 1 and no output."""

import os
import pathlib
import time

import numpy as np
import pytest

from nwalign import search
from nwalign.cli import main
from nwalign.results.hits import top_hits
from nwalign.errors import WorkerLost
from nwalign.results.hits import merge
from nwalign.jobs.search.shards import shards

from helpers import DATA, search_rows

distributed = pytest.importorskip("distributed")  # in the test extras; absent only outside them

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
SP196 = os.path.join(DATA, "swissprot_first196.fasta")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _joins(c):
    """scaleout.client_for as --scheduler ADDRESS gives it: a new connection to ``c``'s scheduler, which
    the job closes (leaving ``c`` and its cluster running)."""
    return lambda workers=0, scheduler=None: (distributed.Client(c.scheduler.address), None)


@pytest.fixture(scope="module")
def tied_db(tmp_path_factory):
    """SP196 with every tenth record repeated at the end under another name: equal scores in other shards."""
    from nwalign.io.sequences import read_fasta

    recs = read_fasta(SP196)
    path = tmp_path_factory.mktemp("db") / "tied.fa"
    text = "".join(f">{r.id}\n{r.seq}\n" for r in recs)
    text += "".join(f">copy_{r.id}\n{r.seq}\n" for r in recs[::10])
    path.write_text(text)
    return str(path)



def test_shards_cover_the_database_once_balanced_by_residues():
    rng = np.random.default_rng(1)
    lengths = rng.integers(20, 3000, size=1001)
    for count in (1, 2, 3, 7):
        parts = shards(lengths, count)
        assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(lengths.size))
        assert all(np.all(np.diff(p) > 0) for p in parts)
        residues = [int(lengths[p].sum()) for p in parts]
        assert max(residues) - min(residues) <= lengths.max()


def test_merge_equals_the_top_of_all_scores():
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 30, size=500)  # many ties
    for count in (1, 2, 3, 5):
        parts = []
        for index in shards(rng.integers(1, 100, size=500), count):
            best = top_hits(scores[index], 12, None)
            parts.append((index[best], scores[index][best]))
        idx, sc = merge(parts, 12)
        want = top_hits(scores, 12, None)
        assert idx.tolist() == want.tolist() and sc.tolist() == scores[want].tolist()


@pytest.mark.parametrize("count", [1, 2, 3])
def test_sharded_search_equals_one_process(client, tied_db, count):
    want = search_rows(search(pathlib.Path(OPAL), tied_db, top=25, backend="cpu", threads=2))
    job = search(pathlib.Path(OPAL), tied_db, top=25, backend="cpu", threads=2, client=client, shards=count)
    cells: list = []
    got = search_rows(job.run(cells.append))
    assert got == want
    assert cells == [len(q.seq) * job.database.total_length for q in job.queries]  # progress across workers
    assert any(a[2] == b[2] for a, b in zip(want, want[1:]))  # ties are exercised


def test_sharded_glocal_search_equals_one_process(client, tied_db):
    """A glocal search over two shards: the same rows and E-values as one process (each query's fit comes
    from the same sample of subjects, scored here instead of by the scan)."""
    want = search_rows(search(pathlib.Path(OPAL), tied_db, top=8, backend="cpu", threads=2, mode="glocal",
                              max_evalue=float("inf")))
    got = search_rows(search(pathlib.Path(OPAL), tied_db, top=8, backend="cpu", threads=2, mode="glocal",
                             max_evalue=float("inf"),
                             client=client, shards=2))
    assert got == want and len(want) == 40


def test_rounds_cover_the_queries_in_order_and_shrink_toward_the_end():
    from nwalign.jobs.search.scaleout import rounds

    for queries, workers, count in ((2000, 2, 1), (2000, 2, 2), (7, 3, 1), (0, 2, 1), (130, 1, 1), (500, 8, 3)):
        got = rounds(queries, workers, count)
        assert [lo for lo, _ in got] == [0] + [hi for _, hi in got[:-1]] if got else queries == 0
        assert (got[-1][1] if got else 0) == queries
        sizes = [hi - lo for lo, hi in got]
        assert all(0 < s <= 64 for s in sizes)
        if count >= workers:  # every round's tasks run side by side: full rounds
            assert all(s == 64 for s in sizes[:-1])
        else:  # rounds share the workers: no larger than a third of a worker's share of what is left
            left = [queries - lo for lo, _ in got]
            assert all(s <= max(8, -(-r // (3 * workers))) for s, r in zip(sizes, left))
            assert sizes == sorted(sizes, reverse=True)
    assert [hi - lo for lo, hi in rounds(2000, 2, 1)][-5:] == [8, 8, 8, 8, 3]


def test_query_batches_over_workers_in_many_rounds_equal_one_process(client, tied_db, monkeypatch):
    """The default on workers with the database whole on each (shards 1): queries dealt in rounds, several
    in flight on two workers, the rounds shrinking at the end; hits in query order as in one process."""
    from nwalign.jobs.search.scaleout import ScaleOut as _ScaleOut
    from nwalign.io.sequences import read_fasta

    queries = read_fasta(SP196)[:23]
    monkeypatch.setattr(_ScaleOut, "BATCH", 4)
    monkeypatch.setattr(_ScaleOut, "MIN_BATCH", 1)
    want = search_rows(search(queries, OPAL, top=3, backend="cpu", threads=2))
    job = search(queries, OPAL, top=3, backend="cpu", client=client)
    assert job._scaleout.shards == 1 and job._scaleout.workers == 2 and job.tasks is None  # nothing planned yet
    got = search_rows(job)
    assert got == want and len({r[:2] for r in want}) == 23 * 3  # each subject's alignments too
    assert job.tasks[0] == job.tasks[1] >= 6  # rounds of at most 4 queries, each one task, all gathered


def test_cli_workers_byte_identical(tmp_path, tied_db, capsys, monkeypatch):
    """--workers through the CLI (its own local cluster), then --format json and sam with the fixture's
    workers: the same bytes as one process."""
    outs = {}
    for label, extra in (("one", []), ("two", ["--workers", "2"])):
        out = tmp_path / f"{label}.tsv"
        assert main(["search", OPAL, tied_db, "--top", "7", "--backend", "cpu", "-o", str(out)] + extra) == 0
        outs[label] = out.read_bytes()
    assert outs["one"] == outs["two"] and outs["one"]


@pytest.mark.parametrize("fmt", ["json", "sam"])
def test_formats_byte_identical_with_workers(tmp_path, tied_db, client, monkeypatch, fmt):
    import nwalign.parallel.cluster

    monkeypatch.setattr(nwalign.parallel.cluster, "client_for", _joins(client))
    outs = []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"x{len(extra)}.{fmt}"
        assert main(["search", OPAL, tied_db, "--top", "5", "--backend", "cpu", "--format", fmt, "-o", str(out)]
                    + extra) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


class _KillOnTask(distributed.WorkerPlugin):
    """Test only: the worker process exits when a task of ``task`` starts on it (once, or every time)."""

    def __init__(self, marker: str, always: bool, task: str = "best_of_shard"):
        self.marker, self.always, self.task = marker, always, task

    def setup(self, worker):
        self.worker = worker

    def transition(self, key, start, finish, **kwargs):
        name = key[0] if isinstance(key, tuple) else str(key)
        if finish == "executing" and self.task in str(name):
            if self.always or not os.path.exists(self.marker):
                open(self.marker, "w").close()
                os._exit(1)


def _settle(cluster, client, n):
    """Wait until every worker a nanny restarted after a kill is up again: closing a cluster while a
    nanny is still starting its process fails inside Dask ("can only join a started process")."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        nannies = list(cluster.workers.values())
        if len(client.scheduler_info()["workers"]) == n and all(
                getattr(nanny.process, "pid", None) is not None for nanny in nannies):
            return
        time.sleep(0.2)
    raise AssertionError(f"the test cluster did not settle on {n} running workers in 60 s")


def test_a_worker_killed_mid_search_loses_nothing(tmp_path, tied_db):
    """One worker dies as a shard task starts: Dask runs the task again on a new worker; same hits."""
    want = search_rows(search(pathlib.Path(OPAL), tied_db, top=5, backend="cpu"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            distributed.Client(cl) as c:
        c.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=False))
        got = search_rows(search(pathlib.Path(OPAL), tied_db, top=5, backend="cpu", client=c, shards=2))
        _settle(cl, c, 2)
    assert (tmp_path / "killed").exists() and got == want


def test_a_task_that_kills_every_worker_ends_the_run(tmp_path, tied_db, monkeypatch, capsys):
    import nwalign.parallel.cluster

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            distributed.Client(cl) as c:
        c.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=True))
        with pytest.raises(WorkerLost):
            list(search(pathlib.Path(OPAL), tied_db, top=5, backend="cpu", client=c, shards=1))
        monkeypatch.setattr(nwalign.parallel.cluster, "client_for", _joins(c))
        out = tmp_path / "hits.tsv"
        assert main(["search", OPAL, tied_db, "--backend", "cpu", "--workers", "2", "-o", str(out)]) == 1
        assert not out.exists() and capsys.readouterr().err.count("\n") == 1
        _settle(cl, c, 1)


def test_workers_refuse_the_gpu_backend_and_a_fasta_for_a_running_cluster(capsys):
    assert main(["search", OPAL, SP196, "--backend", "cuda", "--workers", "2"]) == 2
    assert "--workers runs the CPU engine: for GPUs use --devices" in capsys.readouterr().err
    assert main(["search", OPAL, SP196, "--workers", "2", "--devices", "0,1"]) == 2
    assert "--devices and --workers/--scheduler: choose one" in capsys.readouterr().err
    assert main(["search", OPAL, SP196, "--backend", "cpu", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "--scheduler needs a .nwdb" in capsys.readouterr().err


def test_a_running_cluster_with_another_version_is_refused(client, tmp_path, monkeypatch, capsys):
    """--scheduler joins a running cluster (here the fixture's, by address); workers of another nwalign
    version are refused in one line; an address nothing listens on is a one-line error too."""
    import nwalign
    from nwalign.io.database import database_from_fasta, write_database
    from nwalign.parallel.cluster import check_versions

    check_versions(client)  # the same version everywhere
    db = tmp_path / "sp.nwdb"
    write_database(database_from_fasta(SP196), str(db))
    address = client.scheduler.address
    want = tmp_path / "one.tsv"
    got = tmp_path / "cluster.tsv"
    assert main(["search", OPAL, str(db), "--top", "3", "--backend", "cpu", "-o", str(want)]) == 0
    assert main(["search", OPAL, str(db), "--top", "3", "--backend", "cpu", "--scheduler", address, "-o",
                 str(got)]) == 0
    assert got.read_bytes() == want.read_bytes()
    monkeypatch.setattr(nwalign, "__version__", "0.0.0-other")  # the client now differs from its workers
    with pytest.raises(nwalign.NwalignError, match="runs nwalign"):
        check_versions(client)
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        assert main(["search", OPAL, str(db), "--backend", "cpu", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "connection refused: no Dask scheduler listens at 127.0.0.1:9" in capsys.readouterr().err  # not "Timed out"


def test_a_running_cluster_reads_a_fasta_database_through_shared_dir(client, tmp_path, capsys):
    """--scheduler with a FASTA database: written once as a .nwdb in --shared-dir (removed at the end);
    the same bytes as one process. Without --shared-dir: the one-line refusal; a missing one: too."""
    address = client.scheduler.address
    want, got = tmp_path / "one.tsv", tmp_path / "cluster.tsv"
    shared = tmp_path / "shared"
    shared.mkdir()
    assert main(["search", OPAL, SP196, "--top", "3", "--backend", "cpu", "-o", str(want)]) == 0
    assert main(["search", OPAL, SP196, "--top", "3", "--backend", "cpu", "--scheduler", address,
                 "--shared-dir", str(shared), "-o", str(got)]) == 0
    assert got.read_bytes() == want.read_bytes() and not list(shared.iterdir())
    for extra, message in (([], "--scheduler needs a .nwdb database that every worker can read"),
                           (["--shared-dir", str(tmp_path / "absent")], "no such directory")):
        assert main(["search", OPAL, SP196, "--backend", "cpu", "--scheduler", address] + extra) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_gpu_workers_start_without_dasks_malloc_trim_setting(monkeypatch):
    """A GPU worker process (here on a machine without a GPU: only its environment is looked at) sees its
    GPU alone and runs without Dask's MALLOC_TRIM_THRESHOLD_ (which fixes glibc's mmap threshold: each
    query's score array mapped and faulted in anew, ~1.5 % of a scan); the client's own setting is kept; the
    process ends with the cluster (QuickExit)."""
    import dask
    from distributed import Client

    from nwalign.parallel.cluster import gpu_cluster

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with gpu_cluster([0]) as cluster, Client(cluster) as client:
        seen = list(client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                        os.environ.get("CUDA_VISIBLE_DEVICES"))).values())
        plugins = list(client.run(lambda dask_worker: sorted(dask_worker.plugins)).values())
        pids = list(client.run(os.getpid).values())
    assert seen == [(None, "0")] and "nwalign-quick-exit" in plugins[0]
    for pid in pids:  # the worker's process ended with the cluster (QuickExit), nothing left behind
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_") == 65536


def test_devices_resolve_to_gpus_or_one_process(monkeypatch):
    """--devices: auto spreads over every GPU when there are two or more (and Dask is there), unless
    --device names another GPU; one GPU named runs in this process; bad lists are one-line errors."""
    import importlib.util

    from nwalign.backends import cuda
    from nwalign.errors import NwalignError
    from nwalign.parallel.cluster import resolve_devices, usable

    gpus = [0, 1, 2]
    monkeypatch.setattr(cuda, "gpu_count", lambda: len(gpus))
    assert resolve_devices(None) == resolve_devices("auto") == resolve_devices("all") == [0, 1, 2]
    assert resolve_devices("auto", "auto", device=1) is None and resolve_devices("all", "cuda", device=1) == [0, 1, 2]
    assert resolve_devices("0,2") == [0, 2] and resolve_devices([2, 1]) == [2, 1] and resolve_devices("1") == [1]
    assert resolve_devices("auto", "cpu") is None
    # allpairs and pair: auto keeps small jobs in one process; a named list spreads them anyway
    assert resolve_devices("auto", cells=10**11) is None and resolve_devices("auto", cells=10**13) == [0, 1, 2]
    assert resolve_devices("0,1", cells=10) == [0, 1]
    # a search: auto spreads from its own, larger, threshold (its cells estimated from its files' sizes)
    from nwalign.parallel.cluster import AUTO_MIN_SEARCH_CELLS as least
    assert resolve_devices("auto", cells=least - 1, min_cells=least) is None
    assert resolve_devices("auto", cells=least, min_cells=least) == [0, 1, 2]
    assert resolve_devices("0,2", cells=10, min_cells=least) == [0, 2]
    for spec, message in (("3", "GPU 3 is not one of the 3 visible"), ("0,0", "each GPU once"),
                          ("x", "give auto, all or GPU numbers"), ("", "give auto, all or GPU numbers")):
        with pytest.raises(NwalignError, match=message) as err:
            resolve_devices(spec)
        assert err.value.cli.startswith(f"--devices {spec}")
    with pytest.raises(NwalignError, match="GPUs with backend cpu") as err:
        resolve_devices("0,1", "cpu")
    assert err.value.cli == "--devices 0,1: GPUs with --backend cpu"
    # counted by the driver; a CuPy that cannot run here: auto stays in one process, GPUs named are refused
    monkeypatch.setattr(cuda, "available", lambda: False)
    monkeypatch.setattr(cuda, "why_unavailable", lambda: "CuPy is not installed")
    assert usable(resolve_devices("auto"), "auto") is None and usable([1], "1") == [1]
    with pytest.raises(NwalignError, match="devices 0,1: CuPy is not installed") as err:
        usable(resolve_devices("0,1"), "0,1")
    assert err.value.cli == "--devices 0,1: CuPy is not installed"
    monkeypatch.setattr(cuda, "available", lambda: True)
    assert usable(resolve_devices("all"), "all") == [0, 1, 2]
    gpus[:] = [0]
    assert resolve_devices("auto") is None and resolve_devices("all") is None and resolve_devices("0") == [0]
    gpus[:] = []
    assert resolve_devices("auto") is None
    gpus[:] = [0, 1]  # a thread per GPU: no Dask needed
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real(name, *a))
    assert resolve_devices("auto") == [0, 1] and resolve_devices("0,1") == [0, 1]


def test_a_search_estimates_its_cells_from_its_files(tmp_path, monkeypatch):
    """--devices auto and a search: its DP cells bounded from the files' sizes before they are read (a
    gzip file at its recorded size, or 4 x its own for several members; 8 x for bzip2/xz); a small
    search stays on one GPU, a large one spreads; standard input or records: unknown (spreads)."""
    import bz2
    import gzip

    from nwalign.backends import cuda
    from nwalign.jobs.search import scaleout as search_spread
    from nwalign.io.database import load_database
    from nwalign.io.makedb import makedb
    from nwalign.io.sequences import residues_bound

    plain = tmp_path / "q.fa"
    plain.write_text(">q\n" + "ACDEFGHIKL" * 100 + "\n")
    packed = tmp_path / "q.fa.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    squeezed = tmp_path / "q.fa.bz2"
    squeezed.write_bytes(bz2.compress(plain.read_bytes()))
    size = plain.stat().st_size
    assert residues_bound(str(plain)) == size >= 1000
    assert residues_bound(str(packed)) == size  # gzip's recorded size
    members = tmp_path / "q2.fa.gz"  # two members (as bgzip writes them), the last one empty
    members.write_bytes(packed.read_bytes() + gzip.compress(b""))
    assert residues_bound(str(members)) == 4 * members.stat().st_size
    assert residues_bound(str(squeezed)) == 8 * squeezed.stat().st_size
    assert residues_bound("-") is None and residues_bound(str(tmp_path / "none.fa")) is None
    nwdb = str(tmp_path / "db.nwdb")
    makedb(SP196, nwdb)
    cells = search_spread.estimated_cells(plain, nwdb)
    assert cells == size * os.path.getsize(nwdb) >= 1000 * load_database(nwdb).total_length
    assert search_spread.estimated_cells(plain, load_database(nwdb)) == size * load_database(nwdb).total_length
    assert search_spread.estimated_cells(["ACDE"], nwdb) is None
    assert search_spread.estimated_cells(pathlib.Path("-"), nwdb) is None

    monkeypatch.setattr(cuda, "gpu_count", lambda: 2)  # two GPUs as the driver counts them
    assert search_spread.count_devices("auto", "cuda", 0, cells).result() is None
    assert search_spread.count_devices("auto", "cuda", 0, 10**15).result() == [0, 1]


def test_gpu_scans_refuse_workers_without_a_gpu(client, tmp_path, capsys):
    """--backend cuda with a running cluster: every worker must see a GPU of its own (here none does)."""
    from nwalign.io.database import database_from_fasta, write_database
    from nwalign.errors import NwalignError
    from nwalign.parallel.cluster import check_gpus, worker_gpus

    with pytest.raises(NwalignError, match="sees no GPU"):
        check_gpus(worker_gpus(client))
    db = tmp_path / "sp.nwdb"
    write_database(database_from_fasta(SP196), str(db))
    out = tmp_path / "hits.tsv"
    assert main(["search", OPAL, str(db), "--backend", "cuda", "--scheduler", client.scheduler.address, "-o",
                 str(out)]) == 2
    err = capsys.readouterr().err
    assert "sees no GPU" in err and "--backend cpu" in err and err.count("\n") == 1 and not out.exists()


# -- allpairs over workers -------------------------------------------------------------------------

SIXTEEN_S = os.path.join(DATA, "16S_100_dada2.fasta.gz")


@pytest.fixture(scope="module")
def pair_sets(tmp_path_factory):
    """24 16S genes (with one repeated under another name: identity 1) and 30 Swiss-Prot proteins."""
    from nwalign.io.sequences import read_fasta

    root = tmp_path_factory.mktemp("sets")
    genes = read_fasta(SIXTEEN_S)[:23]
    (root / "16s.fa").write_text("".join(f">{r.id}\n{r.seq}\n" for r in genes) + f">again\n{genes[3].seq}\n")
    prots = read_fasta(SP196)
    (root / "prot.fa").write_text("".join(f">{r.id}\n{r.seq}\n" for r in prots[:30]))
    (root / "prot_b.fa").write_text("".join(f">{r.id}\n{r.seq}\n" for r in prots[30:37]))
    return root


def test_pair_spans_and_blocks_cover_the_pair_order_once():
    from nwalign.plan.pairorder import blocks, pair_batches, pair_count

    rng = np.random.default_rng(3)
    for n_a, n_b in ((2, None), (3, None), (9, None), (1, 7), (6, 1), (5, 4)):
        whole = np.concatenate(list(pair_batches(n_a, n_b, 5))).tolist()
        assert len(whole) == pair_count(n_a, n_b)
        for start in range(len(whole) + 1):
            for stop in range(start + 1, len(whole) + 1):
                got = np.concatenate(list(pair_batches(n_a, n_b, 3, (start, stop)))).tolist()
                assert got == whole[start:stop]
        la = rng.integers(1, 400, size=n_a)
        lb = None if n_b is None else rng.integers(1, 400, size=n_b)
        for count in (1, 2, 3, 8, 50):
            spans = blocks(la, lb, count)
            assert spans[0][0] == 0 and spans[-1][1] == len(whole) and len(spans) <= count
            assert all(a < b for a, b in spans) and all(x[1] == y[0] for x, y in zip(spans, spans[1:]))
    la = rng.integers(100, 3000, size=300)  # balanced by DP cells, to within one pair's cells
    cells = []
    for span in blocks(la, None, 8):
        ij = np.concatenate(list(pair_batches(300, None, 1 << 16, span)))
        cells.append(int((la[ij[:, 0]] * la[ij[:, 1]]).sum()))
    assert len(cells) == 8 and max(cells) - min(cells) <= 2 * 3000 * 3000
    for quantum in (7, 100, 10**6):  # a GPU worker's wave: every cut at a multiple of it
        spans = blocks(la, None, 8, quantum)
        assert spans[0][0] == 0 and spans[-1][1] == 300 * 299 // 2
        assert all(a < b for a, b in spans) and all(x[1] == y[0] for x, y in zip(spans, spans[1:]))
        assert all(a % quantum == 0 for a, _ in spans)
    for taper in (3, 6, 40):  # the last blocks get in thirds half, a quarter, then an eighth of the others' cells
        spans = blocks(la, None, 16, 1, taper)
        assert spans[0][0] == 0 and spans[-1][1] == 300 * 299 // 2 and len(spans) == 16
        assert all(x[1] == y[0] for x, y in zip(spans, spans[1:]))
        cells = [int((la[ij[:, 0]] * la[ij[:, 1]]).sum())
                 for ij in (np.concatenate(list(pair_batches(300, None, 1 << 16, s))) for s in spans)]
        k = min(taper, 8)
        full, half, quarter, eighth = cells[0], cells[16 - k], cells[16 - k + k // 3], cells[-1]
        for part, share in ((half, 2), (quarter, 4), (eighth, 8)):
            assert abs(part - full / share) <= 3000 * 3000 * 2
        assert max(cells[:16 - k]) - min(cells[:16 - k]) <= 2 * 3000 * 3000


def test_a_block_is_scored_in_several_batches_of_whole_waves():
    from nwalign.backends.aligner import BLOCK_BATCHES, block_batch

    wave = 1000
    assert BLOCK_BATCHES >= 2
    for pairs in (1, 999, 1000, 2500, 3000, 4000, 12_345, 10**6):
        size = block_batch(10**9, pairs, wave)
        assert size % wave == 0 and size >= wave  # whole waves, never less than one
        if pairs >= BLOCK_BATCHES * wave:
            assert -(-pairs // size) >= BLOCK_BATCHES  # several batches: the next runs while one is formatted
    assert block_batch(3000, 10**6, wave) == 3000  # never over the memory's batch size
    assert block_batch(3000, 3000 * BLOCK_BATCHES, wave) == 3000


@pytest.mark.parametrize("case", ["scores", "identity", "npy", "phy", "against", "local"])
def test_allpairs_on_workers_byte_identical(tmp_path, pair_sets, client, monkeypatch, case):
    """allpairs over the fixture's two workers (and once over 5 blocks per worker): the same TSV bytes,
    and the same distance matrix, as one process."""
    import nwalign.jobs.allpairs.job
    import nwalign.jobs.allpairs.run
    import nwalign.parallel.cluster

    monkeypatch.setattr(nwalign.parallel.cluster, "client_for", _joins(client))
    genes, prots = str(pair_sets / "16s.fa"), str(pair_sets / "prot.fa")
    args = {"scores": [genes, "--columns", "qseqid,sseqid,score,qlen,slen"],
            "identity": [genes, "--min-identity", "0.9", "--columns", "qseqid,sseqid,score,pident,length,nident,"
                         "mismatch,gaps,qlen,slen"],
            "npy": [prots, "--matrix-out", "{dir}/d.npy"],
            "phy": [genes, "--matrix-out", "{dir}/d.phy", "--min-identity", "0.95"],
            "against": [prots, "--against", str(pair_sets / "prot_b.fa"), "--matrix-out", "{dir}/d.npy"],
            "local": [prots, "--mode", "local", "--columns", "qseqid,sseqid,score,length"]}[case]
    outs = []
    for label, extra in (("one", []), ("two", ["--workers", "2"])):
        d = tmp_path / label
        d.mkdir()
        argv = ["allpairs"] + [a.format(dir=d) for a in args] + ["--backend", "cpu", "-o", str(d / "out.tsv")]
        assert main(argv + extra) == 0
        outs.append(sorted((p.name, p.read_bytes()) for p in d.iterdir()))
    assert outs[0] == outs[1] and len(outs[0][0][1]) > 100
    if case == "npy":
        monkeypatch.setattr(nwalign.jobs.allpairs.job.AllPairs, "PER_WORKER", 5)  # 10 blocks, some inside rows
        d = tmp_path / "ten"
        d.mkdir()
        argv = ["allpairs"] + [a.format(dir=d) for a in args] + ["--backend", "cpu", "-o", str(d / "out.tsv")]
        assert main(argv + ["--workers", "2"]) == 0
        assert sorted((p.name, p.read_bytes()) for p in d.iterdir()) == outs[0]


def test_allpairs_api_blocks_on_a_client(pair_sets, client):
    """The Python API: AllPairs(client=...).blocks() gives the one-process blocks' text; run() refuses."""
    from nwalign import NwalignError, allpairs

    genes = pathlib.Path(pair_sets / "16s.fa")
    one = allpairs(genes, backend="cpu", min_identity=0.9)
    want = "".join(b.rows for b in one.blocks())
    spread = allpairs(genes, backend="cpu", min_identity=0.9, client=client)
    with pytest.raises(NwalignError, match="blocks"):
        spread.run()
    got = "".join(b.rows for b in spread.blocks())
    assert got == want and got.count("\n") == one.stats["pairs"] - one.stats["filtered"] - one.stats["below"]
    assert spread.stats["pairs"] == one.stats["pairs"] == 276 and spread.stats["below"] == one.stats["below"]
    assert spread.stats["tasks"] >= 4 and "tasks" not in one.stats  # -v gives no GCUPS from overlapping tasks
    assert spread.tasks == (spread.stats["tasks"],) * 2 and one.tasks is None  # the progress bar's count


def test_allpairs_worker_killed_loses_nothing(tmp_path, pair_sets):
    """A worker dies as a block's task starts: Dask runs it again elsewhere; the same bytes."""
    genes = pathlib.Path(pair_sets / "16s.fa")
    want = "".join(b.rows for b in __import__("nwalign").allpairs(genes, backend="cpu", min_identity=0.9).blocks())
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            distributed.Client(cl) as c:
        c.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=False, task="pair_block"))
        job = __import__("nwalign").allpairs(genes, backend="cpu", min_identity=0.9, client=c)
        got = "".join(b.rows for b in job.blocks())
        _settle(cl, c, 2)
    assert (tmp_path / "killed").exists() and got == want


def test_allpairs_task_that_kills_every_worker_ends_the_run(tmp_path, pair_sets, monkeypatch, capsys):
    import nwalign.parallel.cluster

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            distributed.Client(cl) as c:
        c.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=True, task="pair_block"))
        monkeypatch.setattr(nwalign.parallel.cluster, "client_for", _joins(c))
        out = tmp_path / "pairs.tsv"
        assert main(["allpairs", str(pair_sets / "16s.fa"), "-q", "--backend", "cpu", "--workers", "2", "-o", str(out),
                     "--matrix-out", str(tmp_path / "d.npy")]) == 1
        assert not out.exists() and not (tmp_path / "d.npy").exists()
        assert capsys.readouterr().err.count("\n") == 1
        _settle(cl, c, 1)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nwalign")]


def test_allpairs_spread_options_refused(tmp_path, pair_sets, capsys):
    genes = str(pair_sets / "16s.fa")
    cases = [(["--workers", "2", "--backend", "cuda"], "--workers runs the CPU engine"),
             (["--workers", "2", "--devices", "0,1"], "--devices and --workers/--scheduler: choose one"),
             (["--devices", "0", "--backend", "cpu"], "--devices 0: GPUs with --backend cpu"),
             (["--shared-dir", str(tmp_path)], "--shared-dir is for --workers"),
             (["--workers", "2", "--shared-dir", str(tmp_path / "absent")], "no such directory")]
    for extra, message in cases:
        assert main(["allpairs", genes, "-q"] + extra) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (extra, err)


# -- pair over workers -----------------------------------------------------------------------------

def test_chunks_cover_the_plan_once_balanced_by_cells():
    from nwalign.plan.pairorder import chunks

    rng = np.random.default_rng(4)
    for n in (1, 2, 5, 40):
        cells = rng.integers(1, 10**6, size=n)
        for count in (1, 2, 3, 8, 100):
            parts = chunks(cells, count)
            assert parts[0][0] == 0 and parts[-1][1] == n and len(parts) <= count
            assert all(a < b for a, b in parts) and all(x[1] == y[0] for x, y in zip(parts, parts[1:]))
            sums = [int(cells[a:b].sum()) for a, b in parts]
            assert max(sums) <= cells.sum() / min(count, n) + cells.max()
    assert chunks(np.zeros(0), 4) == []


@pytest.mark.parametrize("fmt,extra", [("sam", []), ("json", []), ("pair", []), ("tsv", ["--score-only"]),
                                       ("tsv", ["--mode", "local"])])
def test_pair_on_workers_byte_identical(tmp_path, pair_sets, client, monkeypatch, fmt, extra):
    """pair on multi-record FASTA (record i against record i: 30 proteins, then 7 others) over
    the fixture's workers: the same bytes as one process (the @PG line of SAM names the command)."""
    import nwalign.parallel.cluster

    monkeypatch.setattr(nwalign.parallel.cluster, "client_for", _joins(client))
    prots, few = str(pair_sets / "prot.fa"), str(pair_sets / "prot_b.fa")
    for query, target in ((prots, prots), (few, prots.replace("prot.fa", "prot_b.fa"))):
        outs = []
        for label, spread in (("one", []), ("two", ["--workers", "2"])):
            out = tmp_path / f"{label}.{fmt}"
            assert main(["pair", query, target, "--format", fmt, "--backend", "cpu", "-q", "-o", str(out)]
                        + extra + spread) == 0
            outs.append([line for line in out.read_text().splitlines() if not line.startswith("@PG")])
        assert outs[0] == outs[1] and len(outs[0]) >= 7


def test_pair_api_on_a_client_and_a_killed_worker(tmp_path, pair_sets):
    """Pairs(client=...) yields the one-process alignments; a worker killed as a chunk starts loses nothing."""
    from nwalign import Pairs

    prots = pathlib.Path(pair_sets / "prot.fa")
    want = [(a.query_id, a.target_id, a.score, a.cigar()) for a in Pairs(prots, prots, backend="cpu")]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            distributed.Client(cl) as c:
        c.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=False, task="align_chunk"))
        job = Pairs(prots, prots, backend="cpu", client=c)
        got = [(a.query_id, a.target_id, a.score, a.cigar()) for a in job]
        _settle(cl, c, 2)
    assert (tmp_path / "killed").exists() and got == want and len(want) == 30
    assert job.tasks[0] == job.tasks[1] >= 8  # every chunk's task counted once, the killed one too


def test_pair_spread_errors(tmp_path, pair_sets, client, monkeypatch, capsys):
    """A pair too large for a worker's share of --max-memory is refused before any task; --devices with
    --workers, --shared-dir alone: one-line errors."""
    import nwalign.parallel.cluster

    monkeypatch.setattr(nwalign.parallel.cluster, "client_for", _joins(client))
    prots = str(pair_sets / "prot.fa")
    out = tmp_path / "x.tsv"
    for extra, message in ((["--workers", "2", "--max-memory", "1k"], "memory"),
                           (["--workers", "2", "--devices", "0"], "--devices and --workers/--scheduler: choose one"),
                           (["--shared-dir", str(tmp_path)], "--shared-dir is for --workers")):
        assert main(["pair", prots, prots, "--backend", "cpu", "-q", "-o", str(out)] + extra) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (extra, err)
        assert not out.exists()


def test_allpairs_and_pair_join_a_running_cluster(client, tmp_path, pair_sets):
    """--scheduler ADDRESS with --shared-dir: allpairs and pair on a running cluster's workers write the
    one-process bytes; the temporary .nwdb files are gone afterwards."""
    address = client.scheduler.address
    shared = tmp_path / "shared"
    shared.mkdir()
    genes, prots = str(pair_sets / "16s.fa"), str(pair_sets / "prot.fa")
    for argv in (["allpairs", genes, "--min-identity", "0.9"], ["pair", prots, prots, "--format", "json"]):
        outs = []
        for extra in ([], ["--scheduler", address, "--shared-dir", str(shared)]):
            out = tmp_path / f"{argv[0]}{len(extra)}.out"
            assert main(argv + ["--backend", "cpu", "-q", "-o", str(out)] + extra) == 0
            outs.append(out.read_bytes())
        assert outs[0] == outs[1] and len(outs[0]) > 100
        assert not list(shared.iterdir())


def test_a_joined_cluster_keeps_running_and_only_the_jobs_own_connection_is_closed(client, tmp_path, pair_sets):
    """A job that joined a running cluster by its address closes the connection it made (left open, it
    tried to reconnect once that cluster was gone, a traceback at the interpreter's exit) and leaves the
    cluster running; a client the caller gave stays open."""
    from nwalign import allpairs

    genes = pathlib.Path(pair_sets / "16s.fa")
    shared = tmp_path / "shared"
    shared.mkdir()
    joined = allpairs(genes, backend="cpu", scheduler=client.scheduler.address, shared_dir=str(shared))
    given = allpairs(genes, backend="cpu", client=client)
    texts = ["".join(b.rows for b in job.blocks()) for job in (joined, given)]
    joined.close()
    given.close()
    assert texts[0] == texts[1] and texts[0].count("\n") == 276
    assert joined._spread.client.status == "closed" and given._spread.client is client
    assert client.status == "running" and len(client.scheduler_info()["workers"]) == 2


def _ahead(fn, depth: int = 2):
    """A pipeline that draws ``depth`` tasks ahead of the one it answers (as a scan pipeline does)."""
    def run(tasks, place):
        pending = []
        for t in tasks:
            pending.append(t)
            if len(pending) > depth:
                yield fn(pending.pop(0), place)
        yield from (fn(t, place) for t in pending)
    return run


def test_device_threads_give_every_result_in_order_and_bound_what_runs_ahead():
    """devicethreads.DeviceThreads: a thread per place draws tasks from one iterator, each pipeline a
    few ahead; every result comes in task order, and with a window no more than window (plus a task per
    thread that still owns unfinished ones) are taken ahead of the one yielded."""
    import time

    from nwalign.parallel.devicethreads import DeviceThreads

    places = []

    def square(t, place):
        places.append(place)
        time.sleep(0.001 * (t % 3))
        return t * t

    threads = DeviceThreads(iter(range(300)), _ahead(square), [0, 1, 2], "test", window=9)
    got, ahead = [], []
    for r in threads.results():
        got.append(r)
        ahead.append(threads.taken - len(got))
        time.sleep(0.0005)
    assert got == [k * k for k in range(300)] and set(places) == {0, 1, 2}
    assert max(ahead) <= 9 + 3 * 2 and threads.running == 0


def test_device_threads_rerun_the_tasks_of_a_place_that_fails(caplog, monkeypatch):
    """A place whose pipeline raises (a GPU lost) is taken out: its unfinished tasks, those drawn ahead
    included, run on the others, also on a thread whose pipeline had already stopped drawing; the
    results are complete and in order, with one warning. An error of the input (NwalignError), or one
    that every place raises, ends the job."""
    import logging
    import time

    from nwalign.parallel.devicethreads import DeviceThreads
    from nwalign.errors import NwalignError

    monkeypatch.setattr(logging.getLogger("nwalign"), "propagate", True)  # a CLI test may have turned it off
    with caplog.at_level(logging.WARNING, logger="nwalign"):
        def lost_at(k):
            def fn(t, place):
                time.sleep(0.0005)  # the threads take turns
                if place == "b" and t >= k:
                    raise RuntimeError("device lost")
                return -t
            return fn

        for k, count in ((20, 200), (0, 200), (195, 200), (3, 4)):  # early, at once, the last tasks, a short job
            threads = DeviceThreads(iter(range(count)), _ahead(lost_at(k)), ["a", "b", "c"], "test")
            assert list(threads.results()) == [-t for t in range(count)]
            assert threads.lost == [1] or k in (195, 3)  # (b may have drawn none of those)
    assert "test: b failed (RuntimeError: device lost)" in caplog.text

    def bad_input(tasks, place):
        for t in tasks:
            if t == 7:
                raise NwalignError("task 7")
            yield t

    with pytest.raises(NwalignError, match="task 7"):
        list(DeviceThreads(iter(range(50)), bad_input, [0, 1], "test").results())

    def broken(tasks, place):
        for t in tasks:
            if t == 7:
                raise ValueError("task 7")
            yield t

    with pytest.raises(ValueError, match="task 7"):  # every place fails on it in turn
        list(DeviceThreads(iter(range(50)), broken, [0, 1], "test").results())


def test_spread_over_gpus_runs_every_task_here_and_writes_nothing():
    """Spread with this host's GPUs: nothing is written and no process started; map runs every task on a
    thread per GPU, results in task order."""
    from nwalign.backends.engine import encode_all
    from nwalign.parallel.spread import Spread
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import as_records

    encoded = encode_all(as_records(["ACGTAC", "ACGAAC", "TTGACA"], "s"), make_scoring("dna", "global"), "s")
    spread = Spread("allpairs", (encoded, None), "cuda", gpus=[0, 1])
    assert spread.tmp is None and spread.paths == (None, None) and spread.workers == 2 and spread.client is None
    got = list(spread.map(None, iter(range(12)), lambda tasks, gpu: ((t, gpu) for t in tasks), total=12))
    assert [t for t, _ in got] == list(range(12)) and {g for _, g in got} <= {0, 1}
    assert spread.tasks == (12, 12)
    spread.close()


def test_worker_cache_made_once_for_threads_and_thread_cache_per_thread():
    """A GPU worker's two threads (two search rounds at a time): what the process keeps
    (scaleout.worker_cached: the database on the GPU) is made once when both ask together; what a
    thread keeps (scaleout.thread_cached: its searcher, its aligner) is made once per thread."""
    import threading
    import time

    from nwalign.parallel import cluster as scaleout

    made = []

    def slow():
        made.append(threading.get_ident())
        time.sleep(0.2)  # both threads ask while the first is still making it
        return object()

    key = ("test-shared", time.time())
    got = []
    threads = [threading.Thread(target=lambda: got.append(scaleout.worker_cached(key, slow))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and got[0] is got[1]
    scaleout.worker_uncache(key)

    own = {}
    together = threading.Barrier(2)  # both threads alive at once

    def per_thread(name):
        first = scaleout.thread_cached("test-own", object)
        assert scaleout.thread_cached("test-own", object) is first  # kept between a thread's tasks
        own[name] = first
        together.wait(10)

    threads = [threading.Thread(target=per_thread, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(own) == 2 and len({id(v) for v in own.values()}) == 2


def _spawned_workers(pid: int) -> list:
    import psutil

    try:
        return [p for p in psutil.Process(pid).children(recursive=True) if "spawn_main" in " ".join(p.cmdline())]
    except psutil.Error:
        return []


@pytest.mark.slow
@pytest.mark.parametrize("signame, status, message", [("SIGINT", 130, "nwalign: interrupted\n"), ("SIGTERM", 143, "")])
def test_a_signal_stops_a_run_on_workers_at_once_leaving_nothing(tmp_path, signame, status, message):
    """Ctrl-C or SIGTERM during `search --workers 2`: the command ends within seconds (a fraction of one on
    an idle machine), with its status and at most one line, no Dask warning or asyncio traceback, no
    worker process alive, no scratch directory and no output left."""
    import signal
    import subprocess
    import sys

    import psutil

    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=os.path.dirname(DATA))
    out = tmp_path / "hits.tsv"
    proc = subprocess.Popen([sys.executable, "-m", "nwalign", "search", os.path.join(DATA, "queries_20_sw_benchmark.fasta"),
                             os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz"), "--workers", "2",
                             "--backend", "cpu", "-o", str(out)], env=env, cwd=tmp_path, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(_spawned_workers(proc.pid)) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    workers = _spawned_workers(proc.pid)
    assert len(workers) == 2, "the workers did not start"
    time.sleep(1)  # the scan is running on them
    proc.send_signal(getattr(signal, signame))
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"{signame} did not stop the run")
    assert proc.returncode == status and err.decode().lstrip("\n") == message  # Click ends the ^C line first
    time.sleep(0.5)
    assert not [w.pid for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert os.listdir(tmp_path) == []


def test_a_restarted_worker_is_reported_once_in_nwaligns_words(caplog):
    """Dask's nanny warns 'Restarting worker' each time; nwalign says it once, at -v (INFO) level."""
    import logging

    from nwalign.parallel import cluster as scaleout

    nanny, ours = logging.getLogger("distributed.nanny"), logging.getLogger("nwalign")
    for old in [f for f in nanny.filters if isinstance(f, scaleout._RestartsSaidOnce)]:
        nanny.removeFilter(old)  # an earlier test's cluster may have had its say already
    scaleout._say_restarts_once()
    level = ours.level
    ours.setLevel(logging.INFO)
    ours.addHandler(caplog.handler)  # the CLI's logging set-up in earlier tests may stop propagation
    nanny.addHandler(caplog.handler)
    try:
        for _ in range(3):
            nanny.warning("Restarting worker (status=Status.running)")
        nanny.warning("something else")
    finally:
        ours.removeHandler(caplog.handler)
        nanny.removeHandler(caplog.handler)
        ours.setLevel(level)
    lines = [r.getMessage() for r in caplog.records]
    assert lines.count("a worker process died; Dask started another and its tasks run again (nothing is lost)") == 1
    assert not any("Restarting worker" in line for line in lines) and "something else" in lines


def test_a_task_that_keeps_losing_workers_is_not_blamed():
    from nwalign.errors import workers_lost

    text = str(workers_lost("allpairs", distributed.KilledWorker("pair_block-1", None, 3)))
    assert text.startswith("allpairs: 4 worker processes died") and "no output written" in text
    assert "killed every worker" not in text and "\n" not in text


def test_a_nucleotide_search_on_both_strands_over_workers_equals_one_process(client, tmp_path):
    """Both strands spread over Dask workers (queries and their reverse complements in the rounds): the
    hits, strands and coordinates of one process."""
    from nwalign.io.sequences import reverse_complement

    phage = read_fasta_seq(os.path.join(DATA, "phage_lambda_J02459.fasta"))
    db = tmp_path / "db.fa"
    db.write_text("".join(f">c{k}\n{phage[k:k + 2000]}\n" for k in range(0, 40000, 2000)))
    queries = [phage[1500:1800], reverse_complement(phage[9000:9400]), phage[30000:30100]]
    want = [[(h.db_index, h.aln.score, h.aln.strand, h.aln.cigar()) for h in hits]
            for _, hits in search(queries, str(db), top=3, backend="cpu")]
    got = [[(h.db_index, h.aln.score, h.aln.strand, h.aln.cigar()) for h in hits]
           for _, hits in search(queries, str(db), top=3, backend="cpu", client=client, shards=3)]
    assert got == want and any(strand == "minus" for hits in want for _, _, strand, _ in hits)


def read_fasta_seq(path: str) -> str:
    from nwalign.io.sequences import read_fasta

    return read_fasta(path)[0].seq


@pytest.mark.parametrize("count", [1, 3])
def test_a_large_shard_is_scanned_a_chunk_at_a_time(tmp_path, monkeypatch, count):
    """A CPU worker's shard past cpu.streamed.CHUNK_RESIDUES is held a chunk at a time: the shard's best
    hits (ties included) are those of the shard scanned at once."""
    from nwalign.backends.cpu import streamed
    from nwalign.io.makedb import makedb
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import read_fasta
    from nwalign.jobs.search.shards import ShardTask, best_of_shard

    recs = read_fasta(SP196)
    (tmp_path / "t.fa").write_text("".join(f">{r.id}\n{r.seq}\n" for r in recs) +
                                   "".join(f">copy_{r.id}\n{r.seq}\n" for r in recs[::5]))
    makedb(str(tmp_path / "t.fa"), str(tmp_path / "t.nwdb"))
    scoring = make_scoring("protein", "local")
    queries = tuple(scoring.encode_str(r.seq).tobytes() for r in read_fasta(OPAL))
    for shard in range(count):
        task = ShardTask(str(tmp_path / "t.nwdb"), shard, count, queries, scoring, 15, 2)
        want = best_of_shard(task)
        monkeypatch.setattr(streamed, "CHUNK_RESIDUES", 3000)
        got = best_of_shard(task)
        monkeypatch.setattr(streamed, "CHUNK_RESIDUES", 1 << 28)
        assert [(i.tolist(), s.tolist()) for i, s in got] == [(i.tolist(), s.tolist()) for i, s in want]
        assert any(len(set(s.tolist())) < len(s) for _, s in want)  # ties are exercised


def test_a_shard_is_read_a_block_of_sequences_at_a_time(tmp_path):
    """A shard's residues gathered a block of sequences at a time from the file equal the mask over every
    residue (the old way, a mask as large as the database)."""
    from nwalign.jobs.search.shards import _members

    rng = np.random.default_rng(4)
    lengths = rng.integers(1, 60, 5000)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    data = rng.integers(0, 25, int(offsets[-1]), dtype=np.uint8)
    (tmp_path / "codes").write_bytes(data.tobytes())
    mapped = np.memmap(tmp_path / "codes", dtype=np.uint8, mode="r")
    for index in shards(lengths, 3) + [np.zeros(0, dtype=np.int64)]:
        member = np.zeros(lengths.size, dtype=bool)
        member[index] = True
        want = data[np.repeat(member, lengths)]
        for block in (7, 1000, 1 << 20):
            assert np.array_equal(_members(mapped, offsets, member, want.size, block), want)


@pytest.mark.slow
def test_more_workers_than_cores_are_capped_with_a_note(capsys):
    """`--workers 99999999999999999999` once grew to 24 GB before the kernel killed it: capped at the
    machine's cores, said once, and the hits are those of one process."""
    argv = ["search", os.path.join(DATA, "queries_5_opal.fasta"), os.path.join(DATA, "swissprot_first196.fasta"),
            "--top", "2", "--backend", "cpu"]
    assert main(argv) == 0
    want = capsys.readouterr().out
    assert main(argv + ["--workers", "99999999999999999999"]) == 0
    out, err = capsys.readouterr()
    assert out == want and err.count("this machine has") == 1 and "Traceback" not in err


@pytest.mark.slow
def test_a_scheduler_without_workers_is_waited_for_a_stated_time(capsys, tmp_path, monkeypatch):
    """A live scheduler with no workers kept a search waiting in silence for ever: it says that it waits,
    and gives up after NWALIGN_WORKERS_WAIT seconds with one line."""
    from distributed import LocalCluster

    db = tmp_path / "sp.nwdb"
    assert main(["makedb", os.path.join(DATA, "swissprot_first196.fasta"), "-o", str(db), "-q"]) == 0
    monkeypatch.setenv("NWALIGN_WORKERS_WAIT", "2")
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster:
        started = time.time()
        code = main(["search", os.path.join(DATA, "queries_5_opal.fasta"), str(db), "--scheduler",
                     cluster.scheduler_address, "--backend", "cpu"])
        took = time.time() - started
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and took < 30
    assert "has no workers yet; waiting up to 2 s" in err and "no worker joined in 2 s" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_reader_leaving_a_spread_allpairs_gets_no_dask_warnings():
    """`allpairs --workers 2 | head -1` printed Dask's "Async instruction for <Task cancelled ...> ended with
    CancelledError" warnings from the workers every time: the run ends with 141 and nothing on stderr."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "nwalign", "allpairs", os.path.join(DATA, "16S_100_dada2.fasta.gz"),
                             "--backend", "cpu", "--workers", "2", "--columns", "qseqid,sseqid,score"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=os.path.dirname(DATA)))
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and first.startswith(b"16S_001\t") and err == b"", err.decode()[-2000:]


def test_a_dask_setting_dask_cannot_read_is_one_line(capsys, monkeypatch):
    """A garbage DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT ended in Dask's KeyError traceback."""
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "garbage"}):
        code = main(["search", os.path.join(DATA, "queries_5_opal.fasta"), os.path.join(DATA, "swissprot_first196.fasta"),
                     "--workers", "2", "--backend", "cpu"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT" in err and "garbage" in err


def test_a_scheduler_lost_mid_run_is_one_line():
    """The scheduler killed mid-run printed a 60-line FutureCancelledError traceback (Dask cancels every
    future when the client loses its scheduler): one WorkerLost line now, no output written."""
    import asyncio

    from nwalign.errors import WorkerLost
    from nwalign.jobs.search.shards import gather_shards

    class LostClient:
        def gather(self, futures):
            raise asyncio.CancelledError()

    with pytest.raises(WorkerLost, match="scheduler went away mid-run.*no output written"):
        gather_shards(LostClient(), [], 1, 10)


@pytest.mark.slow
def test_ctrl_c_with_a_running_cluster_says_interrupted_only(tmp_path):
    """Ctrl-C during `search --scheduler ...` printed asyncio's "Task exception was never retrieved ...
    AllExit" block before "interrupted"."""
    import signal
    import socket
    import subprocess
    import sys

    from nwalign.io.sequences import read_fasta

    recs = read_fasta(os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz"))
    (tmp_path / "db.fa").write_text("".join(f">{r.id}_{k}\n{r.seq}\n" for k in range(4) for r in recs))
    assert main(["makedb", str(tmp_path / "db.fa"), "-o", str(tmp_path / "db.nwdb"), "-q"]) == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.path.dirname(DATA))
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(port),
                                  "--dashboard-address", ":0"], **quiet)
    worker = None
    try:
        time.sleep(3)
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                                   "--nthreads", "1"], **quiet)
        time.sleep(4)
        run = subprocess.Popen([sys.executable, "-m", "nwalign", "search", os.path.join(DATA, "queries_20_sw_benchmark.fasta"),
                                str(tmp_path / "db.nwdb"), "--scheduler", f"tcp://127.0.0.1:{port}", "--backend", "cpu",
                                "-o", str(tmp_path / "hits.tsv")], stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(3)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.kill()
    assert run.returncode == 130 and err.lstrip("\n") == "nwalign: interrupted\n", err
    assert not (tmp_path / "hits.tsv").exists()


def test_a_cluster_left_registered_at_exit_is_closed_quietly_and_its_directory_removed(tmp_path):
    """A local cluster object that lived on into the interpreter's teardown printed ``Exception ignored in:
    Cluster.__del__ ... AttributeError`` at exit (the GPU test run's last lines), and its scratch directory
    stayed where nothing released it."""
    import subprocess
    import sys

    script = tmp_path / "left.py"
    script.write_text("from nwalign.parallel.cluster import client_for\n"
                      "if __name__ == '__main__':\n"
                      "    client, cluster = client_for(1)\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(DATA), TMPDIR=str(scratch)))
    assert run.returncode == 0, run.stderr
    assert not [p for p in os.listdir(scratch) if p.startswith("nwalign-dask-")]
    assert "Exception ignored" not in run.stderr and "Traceback" not in run.stderr, run.stderr
