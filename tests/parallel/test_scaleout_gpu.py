"""search, allpairs and pair over two GPU worker processes (--devices, nwalign.parallel.cluster.gpu_cluster): the
same bytes as one GPU, after a worker dies too. Runs where two GPUs and Dask are (``-m multigpu``)."""

import os
import pathlib

import pytest

from nwalign import search
from nwalign.cli import main

from helpers import DATA, tied_ecoli_nwdb, search_rows

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]
distributed = pytest.importorskip("distributed")

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")


@pytest.fixture(scope="module")
def tied_nwdb(tmp_path_factory):
    return tied_ecoli_nwdb(tmp_path_factory.mktemp("db"), 10)


@pytest.mark.parametrize("shards", [None, 3])
def test_two_gpu_workers_equal_one_gpu(tied_nwdb, shards):
    from nwalign.parallel.cluster import gpu_cluster

    want = search_rows(search(pathlib.Path(OPAL), tied_nwdb, top=25, backend="cuda", max_evalue=float("inf"), devices="0"))
    with gpu_cluster([0, 1]) as cluster, distributed.Client(cluster) as client:
        got = search_rows(search(pathlib.Path(OPAL), tied_nwdb, top=25, backend="cuda", max_evalue=float("inf"), client=client, shards=shards))
    assert got == want and len(want) == 125
    assert any(a[2] == b[2] for a, b in zip(want, want[1:]))  # ties are exercised


@pytest.mark.parametrize("fmt", ["tsv", "json", "sam"])
def test_cli_devices_byte_identical(tmp_path, tied_nwdb, fmt):
    outs = []
    for devices in ("0", "0,1"):
        out = tmp_path / f"hits_{devices.replace(',', '')}.{fmt}"
        assert main(["search", OPAL, tied_nwdb, "--top", "7", "--format", fmt, "--devices", devices, "-o",
                     str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0]


@pytest.mark.parametrize("form", ["nwdb", "fasta"])
def test_cli_devices_many_queries_byte_identical(tmp_path, tied_nwdb, form):
    """400 queries over two GPUs: the first scanned by the command on both GPUs while the workers start
    (for a FASTA database, while its temporary .nwdb is written), the rest in rounds on the workers (which
    align their hits): the bytes of one GPU."""
    from nwalign.io.sequences import read_fasta

    queries = tmp_path / "q400.fa"
    queries.write_text("".join(f">{r.id}\n{r.seq}\n" for r in read_fasta(ECOLI)[:400]))
    database = tied_nwdb if form == "nwdb" else str(pathlib.Path(tied_nwdb).with_name("tied.fa"))
    outs = []
    for devices in ("0", "0,1"):
        out = tmp_path / f"hits_{devices.replace(',', '')}.tsv"
        assert main(["search", str(queries), database, "--top", "5", "--devices", devices, "-o", str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") >= 400


def test_a_gpu_worker_killed_mid_search_loses_nothing(tmp_path, tied_nwdb):
    """One GPU worker exits as a shard task starts: Dask runs the task on the other (or the restarted)
    worker; the hits are unchanged."""
    from nwalign.parallel.cluster import gpu_cluster
    from test_scaleout import _KillOnTask

    want = search_rows(search(pathlib.Path(OPAL), tied_nwdb, top=10, backend="cuda", devices="0"))
    with gpu_cluster([0, 1]) as cluster, distributed.Client(cluster) as client:
        client.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=False))
        got = search_rows(search(pathlib.Path(OPAL), tied_nwdb, top=10, backend="cuda", client=client))
    assert (tmp_path / "killed").exists() and got == want


@pytest.mark.parametrize("extra", [["--columns", "qseqid,sseqid,score,qlen,slen"],
                                   ["--min-identity", "0.9", "--matrix-out", "{dir}/d.npy"]])
def test_allpairs_two_gpus_byte_identical(tmp_path, genes, extra):
    outs = []
    for devices in ("0", "0,1"):
        d = tmp_path / devices.replace(",", "")
        d.mkdir()
        assert main(["allpairs", str(genes / "60.fa"), "--devices", devices, "-o", str(d / "out.tsv")]
                    + [e.format(dir=d) for e in extra]) == 0
        outs.append(sorted((p.name, p.read_bytes()) for p in d.iterdir()))
    assert outs[0] == outs[1] and outs[0][-1][1].count(b"\n") > 1


def test_allpairs_gpu_worker_killed_loses_nothing(tmp_path, genes):
    from nwalign import allpairs
    from nwalign.parallel.cluster import gpu_cluster
    from test_scaleout import _KillOnTask

    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    want = "".join(b.rows for b in allpairs(pathlib.Path(genes / "60.fa"), columns=cols, backend="cuda",
                                            devices="0").blocks())
    with gpu_cluster([0, 1]) as cluster, distributed.Client(cluster) as client:
        client.register_plugin(_KillOnTask(str(tmp_path / "killed"), always=False, task="pair_block"))
        got = "".join(b.rows for b in allpairs(pathlib.Path(genes / "60.fa"), columns=cols, backend="cuda",
                                               client=client).blocks())
    assert (tmp_path / "killed").exists() and got == want and want.count("\n") == 1770


@pytest.mark.parametrize("fmt", ["sam", "tsv"])
def test_pair_two_gpus_byte_identical(tmp_path, genes, fmt):
    outs = []
    for devices in ("0", "0,1"):
        out = tmp_path / f"{devices.replace(',', '')}.{fmt}"
        assert main(["pair", str(genes / "q20.fa"), str(genes / "t20.fa"), "--format", fmt, "--devices", devices,
                     "-o", str(out)]) == 0
        outs.append([line for line in out.read_text().splitlines() if not line.startswith("@PG")])
    assert outs[0] == outs[1] and len(outs[0]) >= 20
