#!/usr/bin/env bash
# One GPU (issue 19's proxy where no two-GPU machine is lent): the one-GPU scale-out tests, then allpairs
# over one GPU worker with blocks scored in one batch or in several (allpairs_worker_path.py), then the
# CLI's devices path with one worker (one_worker_allpairs.sh, one run). 5,000 seeded ~1.5 kb DNA
# sequences, score columns. Logs under $OUT.
#   OUT=... bash scripts/profiling/allpairs_block_batches.sh
set -uo pipefail
OUT=${OUT:-block-batches-out}
mkdir -p "$OUT"
source scripts/device-site.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
python3 -m pytest -q -m gpu tests/test_scaleout_one_gpu.py 2>&1 | tail -n 15 | tee $OUT/one_gpu_tests.txt
S=/tmp/dna_5000.fasta
python3 benchmarks/allpairs_dna.py 5000 $S
python3 scripts/profiling/allpairs_worker_path.py $S 1 2>&1 | tee $OUT/allpairs_worker_path.txt
RUNS=1 bash scripts/profiling/one_worker_allpairs.sh 5000 2>&1 | tee $OUT/one_worker_allpairs.txt
