#!/usr/bin/env bash
# One call on a GPU machine for the search work: install the carried wheels, run the GPU tests, then the
# search benchmarks (20 queries x 570,000 proteins per query, DNA, end to end, streamed). Logs under $OUT.
# Usage: bash scripts/gpu-search.sh [tests|alltests|bench|e2e|all]
#   tests: the search GPU tests; alltests: every GPU test; bench: kernel, DNA and end-to-end benchmarks;
#   e2e: the end-to-end benchmark alone; all: tests and bench.
set -uo pipefail
WHAT=${1:-all}
OUT=${OUT:-gpu-search-out}
mkdir -p "$OUT"
source scripts/device-site.sh
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } 2>&1 | tee "$OUT/device.txt"
status=0
if [ "$WHAT" = tests ] || [ "$WHAT" = all ]; then
    gpu_pytest "$OUT/gpu-search-tests.log" -m gpu tests/jobs/test_search.py tests/backends/test_batch_gpu.py tests/backends/test_cuda.py \
        || status=1
fi
if [ "$WHAT" = alltests ]; then
    gpu_pytest "$OUT/gpu-tests.log" -m "gpu or multigpu" || status=1
fi
if [ "$WHAT" = bench ] || [ "$WHAT" = all ] || [ "$WHAT" = alltests ]; then
    python3 -m nwalign bench --workload search --kernels scan --input data/queries_20_sw_benchmark.fasta \
        --db-size 570000 --repeats 3 --warmup 1 --check 2000 --json "$OUT/scan_570k.json" > "$OUT/bench.log" 2>&1 \
        || status=1
    tail -n 3 "$OUT/bench.log"
    python3 benchmarks/gpu_search_dna.py 2>&1 | tee "$OUT/dna.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if [ "$WHAT" = e2e ] || [ "$WHAT" = bench ] || [ "$WHAT" = all ] || [ "$WHAT" = alltests ]; then
    bash benchmarks/gpu_search_e2e.sh "$OUT" > /dev/null 2>&1 || status=1
    grep -v "^nwalign: \(backend\|search: 20\)" "$OUT/e2e.txt"
fi
if [ "$WHAT" = bench ] || [ "$WHAT" = all ] || [ "$WHAT" = alltests ]; then
    bash benchmarks/gpu_search_streamed.sh "$OUT" > /dev/null 2>&1 || status=1
    tail -n 12 "$OUT/streamed.txt"
fi
exit $status
