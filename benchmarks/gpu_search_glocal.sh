#!/usr/bin/env bash
# Glocal search on the GPU against local search, in one call: the scan kernel's GCUPS (nwalign bench,
# CUDA events, scores checked against the CPU engine) for the 20 standard queries (144-5,478 residues) over
# a synthetic 570,000-sequence database, and their total, then the whole process (20 standard queries x the 570k Swiss-Prot-like
# .nwdb, top 10, the -v line's scan GCUPS and the wall), RUNS times each, alternating.
#   [RUNS=3] [WORK=DIR] bash benchmarks/gpu_search_glocal.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-glocal-out}}
W=${WORK:-/tmp/nwalign-small}
mkdir -p "$OUTDIR" "$W"
Q=data/queries_20_sw_benchmark.fasta
[ -f $W/sp570k.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $W/sp570k.nwdb > /dev/null
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1); commit $(git rev-parse --short HEAD 2>/dev/null)"
for mode in local glocal; do
    python3 -m nwalign bench --workload search --db-size 570000 --input $Q --kernels scan \
        --repeats 3 --warmup 1 --mode $mode --tsv $OUTDIR/bench_$mode.tsv -q
    python3 - "$OUTDIR/bench_$mode.tsv" $mode <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cells = sum(int(r["query_length"]) * int(r["target_length"]) for r in rows)
seconds = sum(float(r["median_s"]) for r in rows)
bad = [r["query_length"] for r in rows if r["verified"] != "True"]
print(f"   kernel {sys.argv[2]}: {cells / seconds / 1e9:,.0f} GCUPS over {len(rows)} queries ({seconds:.3f} s)"
      + (f"; UNVERIFIED: {bad}" if bad else ""), "|", " ".join(f"{r['query_length']}:{float(r['gcups']):,.0f}" for r in rows))
PY
done
python3 -m nwalign search $Q $W/sp570k.nwdb --top 10 -o /dev/null 2> /dev/null  # warm-up
for run in $(seq ${RUNS:-3}); do
    for mode in local glocal; do
        start=$(date +%s.%N)
        line=$(python3 -m nwalign search $Q $W/sp570k.nwdb --top 10 --mode $mode -v -o $W/$mode.tsv 2>&1 | grep "search: done")
        echo "   run $run $mode: $(python3 -c "import time; print(f'{time.time() - $start:.2f}')") s; ${line#*: }"
    done
done
echo "   rows: local $(wc -l < $W/local.tsv), glocal $(wc -l < $W/glocal.tsv)"
} 2>&1 | tee "$OUTDIR/glocal.txt"
