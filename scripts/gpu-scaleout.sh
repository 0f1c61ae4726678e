#!/usr/bin/env bash
# One call on a machine with two or more GPUs: install the carried wheels (scripts/device-wheels.sh made
# them), the tests of the paths over several GPUs, then benchmarks/gpu_scaling.sh (BASE=DIR: the same
# runs with the nwalign tree in DIR too). Logs under $OUT.
#   [BASE=DIR] bash scripts/gpu-scaleout.sh
set -uo pipefail
OUT=${OUT:-scaleout-out}
mkdir -p "$OUT"
source scripts/device-site.sh
{ nvidia-smi --query-gpu=name,memory.total --format=csv; date -u; } | tee "$OUT/device.txt"
timeout ${TEST_SECONDS:-200} bash -c "source scripts/device-site.sh; gpu_pytest '$OUT/scaleout-tests.log' -x \
    tests/parallel/test_scaleout_one_gpu.py tests/parallel/test_scaleout_gpu.py" > /dev/null
tail -n 5 "$OUT/scaleout-tests.log"
bash benchmarks/gpu_scaling.sh "$OUT"
