import os

import pytest

from helpers import DATA  # noqa: F401  (fixtures read it)


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
    from nwalign.io.sequences import read_fasta

    recs = read_fasta(os.path.join(DATA, "16S_100_dada2.fasta.gz"))[:60]
    folder = tmp_path_factory.mktemp("genes")
    (folder / "60.fa").write_text("".join(f">g{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    (folder / "q20.fa").write_text("".join(f">q{k}\n{r.seq[50:]}\n" for k, r in enumerate(recs[:20])))
    (folder / "t20.fa").write_text("".join(f">t{k}\n{r.seq[:-40]}\n" for k, r in enumerate(recs[20:40])))
    return folder


#: NWALIGN_REQUIRE_GPU=N on a machine with N GPUs: a GPU test that cannot see its GPU fails instead of
#: being skipped (and with N >= 2, a two-GPU test too), so that a broken CuPy or driver cannot turn the
#: GPU suite into a run of skips that exits 0. The GPU scripts set it.
REQUIRE_GPUS = int(os.environ.get("NWALIGN_REQUIRE_GPU", "0") or 0)


def pytest_collection_modifyitems(config, items):
    """GPU tests run where CuPy sees a GPU (a GPU machine) and are skipped elsewhere, saying why; with
    NWALIGN_REQUIRE_GPU they fail instead."""
    from nwalign.backends import cuda

    gpus = len(cuda.device_numbers())
    if gpus < 2:
        mark = _missing(f"{gpus} GPU(s) here; the test needs two", REQUIRE_GPUS >= 2)
        for item in items:
            if "multigpu" in item.keywords:
                item.add_marker(mark)
    if cuda.available():
        return
    mark = _missing(f"no GPU here: {cuda.why_unavailable()}", REQUIRE_GPUS >= 1)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(mark)


def _missing(reason: str, required: bool):
    """A skip, or where the GPUs are ``required`` a failure (the test's setup fails)."""
    if not required:
        return pytest.mark.skip(reason=reason)
    return pytest.mark.usefixtures("_gpu_required")


@pytest.fixture
def _gpu_required():
    from nwalign.backends import cuda

    seen = len(cuda.device_numbers())
    pytest.fail(f"NWALIGN_REQUIRE_GPU={REQUIRE_GPUS} but {seen} GPU(s) are seen ({cuda.why_unavailable() or 'ok'})",
                pytrace=False)
