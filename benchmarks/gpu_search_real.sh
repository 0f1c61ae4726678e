#!/usr/bin/env bash
# The 20 benchmark queries against the E. coli K-12 proteome on the GPU (scan, the default, and gsw) and the
# CPU: hits must be identical.
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -euo pipefail
OUTDIR=${1:-${OUT:-gpu-search-out}}
mkdir -p "$OUTDIR"
Q=data/queries_20_sw_benchmark.fasta
DB=data/swissprot_ecoli_k12_4306.fasta.gz
for run in "cuda --kernel scan" "cuda --kernel gsw" "cpu"; do
    name=${run// --kernel /_}
    t0=$EPOCHREALTIME
    python3 -m nwalign search "$Q" "$DB" --backend $run --header -o "$OUTDIR/ecoli_$name.tsv"
    awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$name" 'BEGIN { printf "search 20 queries x E. coli, %s: %.2f s\n", l, b - a }'
done
for gpu in cuda_scan cuda_gsw; do
    cmp "$OUTDIR/ecoli_$gpu.tsv" "$OUTDIR/ecoli_cpu.tsv" && echo "$gpu and CPU hits identical ($(($(wc -l < "$OUTDIR/ecoli_cpu.tsv") - 1)) hits)"
done
