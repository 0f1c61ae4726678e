#!/usr/bin/env bash
# Nsight Compute counters of one scan launch (a single-pass partition, query of 1,000 residues) on a
# 100,000-sequence database: pipe utilisation, shared-memory wavefronts and bank conflicts, stall reasons.
#   bash scripts/profiling/search_ncu.sh [MANGLED-NAME-FRAGMENT]  (default: G=16, R=16, single-pass)
set -uo pipefail
K=${1:-ILb0ELi16ELi16ELb0E}
OUT=${OUT:-.}
cat > /tmp/search_one.py <<'PY'
import numpy as np
from nwalign.bench import synthetic_database
from nwalign.cuda.search import ScanSearcher
from nwalign.scoring import make_scoring
from nwalign.search import encode_database
scoring = make_scoring("protein", "local")
db = synthetic_database(100_000, 2)
s = ScanSearcher(encode_database(db, scoring), db.offsets, scoring)
q = np.random.default_rng(1).integers(0, 20, size=1000).astype(np.uint8)
s.scores(q)
PY
ncu --kernel-name-base mangled -k "regex:$K" --launch-count 1 \
    --metrics "regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__cycles_elapsed.avg,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,smsp__cycles_active.avg" \
    python3 /tmp/search_one.py 2>&1 | tee "$OUT/ncu_search.txt" | grep -v "^==PROF==" | grep -E "sw_scan|pct|ratio|sum|avg|elapsed" | awk '$NF != "0" && $NF != "0.00"'
