import os

import pytest

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
GENOME_A = os.path.join(DATA, "sars-cov-2_wuhan-hu-1_MN908947.fasta")
GENOME_B = os.path.join(DATA, "batcov_RaTG13.fasta")

# The tests' own cache (matrices read through Biopython): a user's cache is neither read nor written.
if "NWALIGN_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["NWALIGN_CACHE_DIR"] = tempfile.mkdtemp(prefix="nwalign-test-cache-")


@pytest.fixture
def data_dir():
    return DATA


@pytest.fixture(scope="session")
def genes(tmp_path_factory):
    """60 16S genes with distinct names (60.fa), and 20 of them cut each way (q20.fa, t20.fa: pair's
    i-against-i plan); the scale-out tests' small allpairs and pair jobs."""
    from nwalign.sequences import read_fasta

    recs = read_fasta(os.path.join(DATA, "16S_100_dada2.fasta.gz"))[:60]
    folder = tmp_path_factory.mktemp("genes")
    (folder / "60.fa").write_text("".join(f">g{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    (folder / "q20.fa").write_text("".join(f">q{k}\n{r.seq[50:]}\n" for k, r in enumerate(recs[:20])))
    (folder / "t20.fa").write_text("".join(f">t{k}\n{r.seq[:-40]}\n" for k, r in enumerate(recs[20:40])))
    return folder


def pytest_collection_modifyitems(config, items):
    """GPU tests run where CuPy sees a GPU (a GPU machine) and are skipped elsewhere, saying why."""
    from nwalign import cuda

    gpus = len(cuda.device_numbers())
    if gpus < 2:
        few = pytest.mark.skip(reason=f"{gpus} GPU(s) here; the test needs two")
        for item in items:
            if "multigpu" in item.keywords:
                item.add_marker(few)
    if cuda.available():
        return
    skip = pytest.mark.skip(reason=f"no GPU here: {cuda.why_unavailable()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
