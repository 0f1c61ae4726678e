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


def pytest_collection_modifyitems(config, items):
    """GPU tests run where CuPy sees a GPU (the lent GPU machine) and are skipped elsewhere, saying why."""
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
