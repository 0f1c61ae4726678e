import os

import pytest

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
GENOME_A = os.path.join(DATA, "sars-cov-2_wuhan-hu-1_MN908947.fasta")
GENOME_B = os.path.join(DATA, "batcov_RaTG13.fasta")


@pytest.fixture
def data_dir():
    return DATA
