#!/usr/bin/env bash
# Glocal against global on the GPU, whole process: a 1 kb query (a 3 %-mutated piece of the subject) placed
# in a 1 Mb random subject, `nwalign pair --mode glocal` and `--mode global`, RUNS times each alternating
# after a warm-up; the wall time and the row of each.
#   [RUNS=3] [WORK=DIR] bash benchmarks/gpu_pair_glocal.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-glocal-out}}
W=${WORK:-/tmp/nwalign-glocal}
mkdir -p "$OUTDIR" "$W"
python3 - "$W" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(5)
s = "".join(rng.choice(list("ACGT"), 1_000_000))
q = list(s[500_000:501_000])
for k in rng.choice(1000, 30, replace=False):
    q[k] = "ACGT"[("ACGT".index(q[k]) + 1) % 4]
open(f"{sys.argv[1]}/s.fa", "w").write(">subject\n" + s + "\n")
open(f"{sys.argv[1]}/q.fa", "w").write(">query\n" + "".join(q) + "\n")
PY
run() {  # mode: wall seconds and the row
    local start=$(date +%s.%N)
    python3 -m nwalign pair $W/q.fa $W/s.fa --mode $1 --format tsv --columns mode,score,qstart,qend,sstart,send \
        -o $W/$1.tsv 2>> $W/errors.log
    echo "   $1: $(python3 -c "import time; print(f'{time.time() - $start:.2f}')") s, $(cat $W/$1.tsv)"
}
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
run global > /dev/null; run glocal > /dev/null  # warm-up
for k in $(seq ${RUNS:-3}); do run global; run glocal; done
tail -n 3 $W/errors.log 2> /dev/null
} 2>&1 | tee "$OUTDIR/glocal.txt"
