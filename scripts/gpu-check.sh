#!/usr/bin/env bash
# One call on the GPU machine: install the carried wheels, run the gpu tests, run a short benchmark.
# Logs go under $OUT (the output folder of a remote GPU run), or ./gpu-check-out elsewhere.
# Usage: bash scripts/gpu-check.sh [quick|full]
set -uo pipefail
MODE=${1:-quick}
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
source scripts/device-site.sh
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv; date -u;
  python3 -c 'import cupy, numba, numpy; print("cupy", cupy.__version__, "numba", numba.__version__, "numpy", numpy.__version__)';
  python3 -m nwalign devices; } 2>&1 | tee "$OUT/device.txt"
gpu_pytest "$OUT/gpu-tests.log" -m gpu -x tests/backends/test_cuda.py tests/jobs/test_search.py tests/backends/test_allpairs_gpu.py
status=$?
if [ "$MODE" = full ]; then
    python3 benchmarks/gpu_pair.py --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
else
    python3 benchmarks/gpu_pair.py --sizes 10000 --traceback-sizes 10000 --block-sweep-size 0 --repeats 2 \
        --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
fi
bench=${PIPESTATUS[0]}
echo "gpu tests exit $status, benchmark exit $bench"
[ "$status" -eq 0 ] && [ "$bench" -eq 0 ]
