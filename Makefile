PYTHON ?= python3
GENOME_A = data/sars-cov-2_wuhan-hu-1_MN908947.fasta
GENOME_B = data/batcov_RaTG13.fasta

.PHONY: install demo test mutants bench-cpu gpu-check gpu-bench gpu-search gpu-allpairs gpu-scaleout clean

install:
	$(PYTHON) -m pip install -q -e .

# The main job on shipped real data: SARS-CoV-2 against bat coronavirus RaTG13, full global alignment.
demo: install
	$(PYTHON) -m nwalign pair -v $(GENOME_A) $(GENOME_B) --format pair -o demo_alignment.txt
	head -n 40 demo_alignment.txt
	$(PYTHON) -m nwalign pair $(GENOME_A) $(GENOME_B) --format tsv --header | cut -f 1-12   # the CIGAR column is ~5 KB

test:
	$(PYTHON) -m pip install -q -e ".[test]"
	$(PYTHON) -m pytest -q

# One-line mutants of the rules a user sees, each against the tests that pin it; prints any survivor.
mutants:
	$(PYTHON) scripts/mutants.py

bench-cpu:
	$(PYTHON) -m pip install -q -e ".[test,bench]"
	$(PYTHON) benchmarks/cpu_pair.py --sizes 10000,30000

clean:
	rm -rf build *.egg-info .pytest_cache demo_alignment.txt
	find . -name __pycache__ -prune -exec rm -rf {} +

# On a machine with a GPU: gpu tests + a short benchmark, logs under $OUT.
gpu-check:
	bash scripts/gpu-check.sh quick

gpu-bench:
	bash scripts/gpu-check.sh full

# On a machine with a GPU: the search GPU tests and every search benchmark (570k proteins, DNA, end to end).
gpu-search:
	bash scripts/gpu-search.sh all

# On a machine with a GPU: the allpairs GPU tests (banded traceback included), then the 418 SARS-CoV-2 genomes.
gpu-allpairs:
	NWALIGN_REQUIRE_GPU=1 $(PYTHON) -m pytest -q -m gpu -p no:cacheprovider tests/backends/test_banded_gpu.py tests/backends/test_allpairs_gpu.py
	bash benchmarks/gpu_allpairs.sh genomes

# On a machine with two or more GPUs and Dask: the multigpu tests, then search and allpairs/pair on 1 and 2 GPUs.
gpu-scaleout:
	bash scripts/gpu-scaleout.sh
