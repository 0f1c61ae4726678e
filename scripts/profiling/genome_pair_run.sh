#!/usr/bin/env bash
# Issue 18, genome-scale pairs on the GPU: the linear-space tests, then E. coli's first 1 Mb and the whole
# 4.6 Mb genome against 1 %-mutated copies (nwalign mutate --rate 0.01 --seed 7), part by part
# (benchmarks/gpu_genome_pair.py) and through the command line. Usage: bash scripts/profiling/genome_pair_run.sh OUTDIR
set -uo pipefail
OUTDIR=${1:-${OUT:-genome-out}}
mkdir -p "$OUTDIR"
TMP=$(mktemp -d)
nw() { python3 -m nwalign "$@"; }
timed() {
    local label=$1; shift
    local t0=$EPOCHREALTIME
    "$@"
    awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$label" 'BEGIN { printf "%s\t%.2f s\n", l, b - a }' | tee -a "$OUTDIR/times.tsv"
}
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_cuda.py -k "linear_space or windowed or real_genomes" \
        2>&1 | tail -15 | tee "$OUTDIR/tests.txt"
fi
E=data/ecoli_k12_mg1655_NC_000913.fasta.gz
nw mutate $E --region 1-1M --rate 0 -o $TMP/e1M.fa && nw mutate $TMP/e1M.fa --rate 0.01 --seed 7 -o $TMP/e1M_mut.fa
nw mutate $E --rate 0 -o $TMP/eco.fa && nw mutate $TMP/eco.fa --rate 0.01 --seed 7 -o $TMP/eco_mut.fa
python3 benchmarks/gpu_genome_pair.py $TMP/e1M.fa $TMP/e1M_mut.fa --whole --json "$OUTDIR/ecoli_1M.json"
python3 benchmarks/gpu_genome_pair.py $TMP/eco.fa $TMP/eco_mut.fa ${WHOLE_4M:+--whole} --json "$OUTDIR/ecoli_4.6M.json"
timed "E. coli first 1 Mb x 1%-mutated copy, global alignment with CIGAR, GPU (command line)" \
    nw pair -v --backend cuda $TMP/e1M.fa $TMP/e1M_mut.fa --format tsv -o "$OUTDIR/ecoli_1M.tsv"
timed "E. coli 4.6 Mb x 1%-mutated copy, global alignment with CIGAR, GPU (command line)" \
    /usr/bin/time -v python3 -m nwalign pair -v --backend cuda $TMP/eco.fa $TMP/eco_mut.fa --format tsv \
    -o "$OUTDIR/ecoli_4.6M.tsv" 2> >(grep -E "Maximum resident|Elapsed|nwalign|wavefront" > "$OUTDIR/ecoli_4.6M.log")
cut -f1-12 "$OUTDIR"/ecoli_*.tsv
rm -rf "$TMP"
