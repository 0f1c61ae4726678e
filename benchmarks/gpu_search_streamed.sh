#!/usr/bin/env bash
# A database streamed through the GPU in chunks: the 20 standard queries against the seeded 570,000-
# sequence Swiss-Prot-like .nwdb on one GPU (--devices 0), top 10, resident (the GPU's free memory) and with the GPU memory
# capped at a quarter of what the resident search needs (CUPY_GPU_MEMORY_LIMIT, then --gpu-memory),
# RUNS times each, warm. Prints each run's wall time, the scans' GCUPS (-v's "done" line) and whether
# the output equals the resident run's; then the scan alone, resident against streamed on the same clock
# (benchmarks/gpu_scan_streamed.py: -v's figure for a resident search leaves out the GPU time spent while
# the host aligns and writes hits).
#   [RUNS=2] [FRACTION=4] bash benchmarks/gpu_search_streamed.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-streamed-out}}
W=${WORK:-/tmp/nwalign-scaling}
mkdir -p "$OUTDIR" "$W"
DB=$W/sp570k.nwdb
Q=data/queries_20_sw_benchmark.fasta
[ -f $DB ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB > /dev/null
NEED=$(python3 -c "
from nwalign.backends.cuda.streamed import long_queries, resident_bytes
from nwalign.io.database import load_database
from nwalign.io.sequences import read_fasta
db = load_database('$DB')
print(resident_bytes(db.total_length, db.count, long_queries(len(r) for r in read_fasta('$Q'))))")
CAP=$((NEED / ${FRACTION:-4}))
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1); commit $(git rev-parse --short HEAD 2>/dev/null)"
echo "resident search needs about $NEED bytes; capped at $CAP"
python3 -m nwalign search $Q $DB --top 10 -o /dev/null 2> /dev/null  # warm-up
for run in $(seq ${RUNS:-2}); do
    for how in resident limit option; do
        start=$(date +%s.%N)
        case $how in
            resident) python3 -m nwalign search $Q $DB --top 10 --devices 0 -v -o $W/$how.tsv 2> $W/$how.log ;;
            limit) CUPY_GPU_MEMORY_LIMIT=$CAP python3 -m nwalign search $Q $DB --top 10 --devices 0 -v -o $W/$how.tsv 2> $W/$how.log ;;
            option) python3 -m nwalign search $Q $DB --top 10 --devices 0 --gpu-memory $CAP -v -o $W/$how.tsv 2> $W/$how.log ;;
        esac
        rc=$?
        wall=$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")
        cmp -s $W/$how.tsv $W/resident.tsv && same=identical || same=DIFFERENT
        echo "run $run, $how: exit $rc, $wall s wall, $same; $(grep -o 'streamed through.*\|resident on.*' $W/$how.log | head -n 1)"
        grep -o "done in.*" $W/$how.log; [ $rc = 0 ] || tail -n 3 $W/$how.log
    done
done
echo "-- the scan alone"
python3 benchmarks/gpu_scan_streamed.py $DB $Q --fraction ${FRACTION:-4} --runs ${RUNS:-2}
} 2>&1 | tee "$OUTDIR/streamed.txt"
