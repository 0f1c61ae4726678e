#!/usr/bin/env bash
# Real inputs on the GPU through the command line, timed.
# Usage (on a GPU machine, from the repository root): bash benchmarks/gpu_real.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -euo pipefail
OUTDIR=${1:-${OUT:-gpu-real-out}}
mkdir -p "$OUTDIR"
nw() { python3 -m nwalign "$@"; }
timed() {  # timed LABEL COMMAND...: wall time of the whole process, start-up and I/O included
    local label=$1; shift
    local t0=$EPOCHREALTIME
    "$@"
    awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$label" 'BEGIN { printf "%s\t%.2f s\n", l, b - a }' \
        | tee -a "$OUTDIR/times.tsv"
}
A=data/sars-cov-2_wuhan-hu-1_MN908947.fasta
B=data/batcov_RaTG13.fasta
timed "SARS-CoV-2 x RaTG13 global alignment, GPU (wavefront)" \
    nw pair -v --backend cuda "$A" "$B" --format json -o "$OUTDIR/sars_ratg13_gpu.json"
timed "SARS-CoV-2 x RaTG13 global alignment, CPU" \
    nw pair --backend cpu "$A" "$B" --format json -o "$OUTDIR/sars_ratg13_cpu.json"
nw mutate data/ecoli_k12_mg1655_NC_000913.fasta.gz --region 1-1M --rate 0 -o "$OUTDIR/ecoli_1M.fa"
nw mutate "$OUTDIR/ecoli_1M.fa" --rate 0.01 --seed 7 -o "$OUTDIR/ecoli_1M_mut.fa"
timed "E. coli first 1 Mb x 1%-mutated copy, global alignment with CIGAR, GPU" \
    nw pair -v --backend cuda "$OUTDIR/ecoli_1M.fa" "$OUTDIR/ecoli_1M_mut.fa" --format tsv -o "$OUTDIR/ecoli_1M.tsv"
cut -f1-12 "$OUTDIR/ecoli_1M.tsv"
python3 - "$OUTDIR" <<'PY'
import json, sys
d = sys.argv[1]
gpu, cpu = (json.load(open(f"{d}/sars_ratg13_{k}.json")) for k in ("gpu", "cpu"))
print("SARS-CoV-2 x RaTG13 score gpu", gpu["score"], "cpu", cpu["score"], "identity", gpu["identity"])
assert gpu["score"] == cpu["score"], "GPU and CPU scores differ"
PY
