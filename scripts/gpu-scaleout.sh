#!/usr/bin/env bash
# One call on a machine with two or more GPUs: install the carried
# wheels (scripts/device-wheels.sh made them), the multigpu tests, then search and allpairs/pair on one
# GPU and on two (benchmarks/gpu_scaleout.sh, benchmarks/gpu_scaleout_allpairs.sh). Logs under $OUT.
#   bash scripts/gpu-scaleout.sh
set -uo pipefail
OUT=${OUT:-scaleout-out}
mkdir -p "$OUT"
source scripts/device-site.sh
python3 -c "import distributed" || { echo "no Dask here: run scripts/device-wheels.sh and carry .whl"; exit 2; }
{ nvidia-smi --query-gpu=name,memory.total --format=csv; date -u; } | tee "$OUT/device.txt"
gpu_pytest "$OUT/multigpu-tests.log" -m multigpu tests/test_scaleout_gpu.py > /dev/null
tail -n 5 "$OUT/multigpu-tests.log"
bash benchmarks/gpu_scaleout.sh "$OUT"
bash benchmarks/gpu_scaleout_allpairs.sh "$OUT"
