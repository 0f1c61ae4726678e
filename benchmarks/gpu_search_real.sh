#!/usr/bin/env bash
# The 20 benchmark queries against the E. coli K-12 proteome on the GPU (gsw) and the CPU: hits must be identical.
set -euo pipefail
OUTDIR=${1:-${OUT:-gpu-search-out}}
mkdir -p "$OUTDIR"
Q=data/queries_20_sw_benchmark.fasta
DB=data/swissprot_ecoli_k12_4306.fasta.gz
for backend in cuda cpu; do
    t0=$EPOCHREALTIME
    python3 -m nwalign search "$Q" "$DB" --backend "$backend" --header -o "$OUTDIR/ecoli_$backend.tsv"
    awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$backend" 'BEGIN { printf "search 20 queries x E. coli, %s: %.2f s\n", l, b - a }'
done
cmp "$OUTDIR/ecoli_cuda.tsv" "$OUTDIR/ecoli_cpu.tsv" && echo "GPU and CPU hits identical ($(($(wc -l < "$OUTDIR/ecoli_cpu.tsv") - 1)) hits)"
