#!/usr/bin/env bash
# Nsight Compute counters of scan launches (query of 1,000 residues, 100,000-sequence database): pipe
# utilisation, shared-memory wavefronts and bank conflicts, stall reasons.
#   bash scripts/profiling/search_ncu.sh [MANGLED-NAME-REGEX] [COUNT]
# (default: the first two launches of groups of 32, single- and multi-pass)
set -uo pipefail
K=${1:-ILb0ELi32ELi1[0-9]ELb[01]E}
N=${2:-2}
OUT=${OUT:-.}
cat > /tmp/search_one.py <<'PY'
import numpy as np
from nwalign.bench import synthetic_database
from nwalign.cuda.search import ScanSearcher
from nwalign.scoring import make_scoring
from nwalign.database import encode_database
scoring = make_scoring("protein", "local")
db = synthetic_database(100_000, 2)
s = ScanSearcher(encode_database(db, scoring), db.offsets, scoring, plan="single")
q = np.random.default_rng(1).integers(0, 20, size=1000).astype(np.uint8)
print([p for p in s.partitions(1000)])
s.scores(q)
PY
ncu --kernel-name-base mangled -k "regex:$K" --launch-count "$N" \
    --metrics "regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__cycles_elapsed.avg,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,smsp__cycles_active.avg,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors.sum" \
    python3 /tmp/search_one.py 2>&1 | tee "$OUT/ncu_search.txt" | grep -v "^==PROF==" | grep -E "_Part|sw_scan|pct|ratio|sum|avg|elapsed" | awk '$NF != "0" && $NF != "0.00"'
