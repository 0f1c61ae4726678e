#!/usr/bin/env bash
# Session 19's closing run on two GPUs (issue 19), within ~250 s: the two-GPU tests, then search
# (benchmarks/gpu_scaleout.sh, RUNS times, with its SIGKILL run) and allpairs (gpu_scaleout_allpairs.sh,
# APRUNS times). Logs under OUTDIR.
#   [RUNS=2] [APRUNS=1] bash scripts/profiling/x2_final.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-final}}
mkdir -p "$OUTDIR"
source scripts/device-site.sh
{ nvidia-smi --query-gpu=name,memory.total --format=csv; date -u; } > "$OUTDIR/device.txt"
timeout 110 python3 -m pytest -q -m multigpu -p no:cacheprovider tests/test_scaleout_gpu.py 2>&1 | tail -n 5 > "$OUTDIR/multigpu-tests.log"
tail -n 1 "$OUTDIR/multigpu-tests.log"
RUNS=${RUNS:-2} bash benchmarks/gpu_scaleout.sh "$OUTDIR" > /dev/null 2>&1
grep -v "^INFO" "$OUTDIR/scaleout.txt" | grep "==\|wall\|done in\|run here\|identical\|exit"
RUNS=${APRUNS:-1} bash benchmarks/gpu_scaleout_allpairs.sh "$OUTDIR" > /dev/null 2>&1
grep -v "^INFO" "$OUTDIR/scaleout_allpairs.txt" | grep "==\|wall\|identical"
