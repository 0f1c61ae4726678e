#!/usr/bin/env bash
# Every alignment of a subject on the GPU, whole process: the 20 standard queries against the 570,000-
# sequence Swiss-Prot-like database, top 10, with the default alignments (every one with E-value <= 10)
# and with one alignment a subject (--max-hsps 1, the report before alignments per subject), RUNS times
# each alternating after a warm-up; the rows of each.
#   [RUNS=3] [WORK=DIR] bash benchmarks/gpu_search_hsps.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-hsps-out}}
W=${WORK:-/tmp/nwalign-small}
mkdir -p "$OUTDIR" "$W"
Q=data/queries_20_sw_benchmark.fasta
[ -f $W/sp570k.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $W/sp570k.nwdb > /dev/null
wall() {  # seconds the command took (its output discarded)
    local start=$(date +%s.%N)
    "$@" > /dev/null 2>> $W/errors.log
    python3 -c "import time; print(f'{time.time() - $start:.2f}', end='')"
}
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1); commit $(git rev-parse --short HEAD 2>/dev/null)"
python3 -m nwalign search $Q $W/sp570k.nwdb --top 10 -o /dev/null 2> /dev/null  # warm-up
for run in $(seq ${RUNS:-3}); do
    echo "   run $run: every alignment $(wall python3 -m nwalign search $Q $W/sp570k.nwdb --top 10 -o $W/all.tsv) s," \
         "one a subject $(wall python3 -m nwalign search $Q $W/sp570k.nwdb --top 10 --max-hsps 1 -o $W/one.tsv) s"
done
echo "   rows: every alignment $(wc -l < $W/all.tsv), one a subject $(wc -l < $W/one.tsv)"
tail -n 3 $W/errors.log 2> /dev/null
} 2>&1 | tee "$OUTDIR/hsps.txt"
