#!/usr/bin/env bash
# First run after install against a warm run, for the README's GPU examples: each command once with
# empty CuPy and Numba caches (as on a machine that just installed nwalign), then twice warm; wall
# seconds of each, from the repository root on a GPU machine. One line per example, a table at the end.
#   bash benchmarks/gpu_first_run.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-first-run-out}}
mkdir -p "$OUTDIR"
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q nwalign > /dev/null 2>&1
python3 -m nwalign mutate data/ecoli_k12_mg1655_NC_000913.fasta.gz --region 1-1M --rate 0 -o /tmp/nwalign-1M.fa -q
python3 -m nwalign mutate /tmp/nwalign-1M.fa --rate 0.01 --seed 7 -o /tmp/nwalign-1M-mut.fa -q
GA=data/sars-cov-2_wuhan-hu-1_MN908947.fasta
GB=data/batcov_RaTG13.fasta
EXAMPLES=(
    "pair $GA $GB --format tsv"
    "pair --random 100k,100k --seed 7 --score-only"
    "pair --random 100k --mutate 0.05 --seed 3 --format json"
    "pair /tmp/nwalign-1M.fa /tmp/nwalign-1M-mut.fa --format tsv"
    "pair --random 1M --mutate 0.01 --format tsv"
    "search data/queries_5_opal.fasta data/swissprot_ecoli_k12_4306.fasta.gz --mode glocal --top 2"
    "search data/queries_5_opal.fasta data/swissprot_first196.fasta --top 3"
    "allpairs data/16S_100_dada2.fasta.gz --min-identity 0.9"
    "allpairs data/sars-cov-2_418_nextstrain.fasta.gz --min-identity 0.99 --columns qseqid,sseqid,score"
)
seconds() {
    local start end
    start=$(date +%s.%N)
    python3 -m nwalign "$@" > /dev/null 2>> "$OUTDIR/first-run-stderr.log" || echo "failed: $*" >&2
    end=$(date +%s.%N)
    python3 -c "print(f'{$end - $start:.2f}')"
}
printf "| example | first run (s) | warm runs (s) |\n|---|---|---|\n" > "$OUTDIR/first-run.md"
for example in "${EXAMPLES[@]}"; do
    # shellcheck disable=SC2086
    read -r -a words <<< "$example"
    export CUPY_CACHE_DIR NUMBA_CACHE_DIR
    CUPY_CACHE_DIR=$(mktemp -d) NUMBA_CACHE_DIR=$(mktemp -d)
    first=$(seconds "${words[@]}")
    warm1=$(seconds "${words[@]}")
    warm2=$(seconds "${words[@]}")
    echo "nwalign $example: first $first s, warm $warm1 / $warm2 s"
    echo "| \`nwalign $example\` | $first | $warm1, $warm2 |" >> "$OUTDIR/first-run.md"
done
cat "$OUTDIR/first-run.md"
