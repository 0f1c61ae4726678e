#!/usr/bin/env bash
# Speed of this tree against another version of nwalign, on one GPU machine in one run, the two
# alternating: search end to end (the 20 standard queries against the seeded 570,000-protein .nwdb,
# warm) and pair (100 kb x 100 kb, and E. coli's first 1 Mb against a 1 %-mutated copy, both aligned
# with the wavefront kernel, SAM), whole processes; the outputs of the two versions compared.
# BASE holds the other version's nwalign/ package, for instance
#   mkdir -p .base && git archive REV nwalign | tar -x -C .base
# Usage: bash scripts/gpu-ab.sh BASE [OUTDIR] [ROUNDS]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || [ -z "${1:-}" ]; then
    sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
BASE=$(cd "$1" && pwd)
OUTDIR=${2:-${OUT:-gpu-ab-out}}
ROUNDS=${3:-3}
mkdir -p "$OUTDIR"
source scripts/device-site.sh
HERE=$PWD
WORK=/tmp/nwalign-ab
mkdir -p $WORK
Q=data/queries_20_sw_benchmark.fasta
DB=/tmp/sp570k
[ -f $DB.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb --fasta $DB.fa > /dev/null
python3 -m nwalign mutate data/ecoli_k12_mg1655_NC_000913.fasta.gz --region 1-1M --rate 0 -o $WORK/e1m.fa
python3 -m nwalign mutate $WORK/e1m.fa --rate 0.01 --seed 7 -o $WORK/e1m_mut.fa
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q "$BASE" > /dev/null 2>&1
timed() {  # LABEL TREE ARGS...: one whole process, its wall time on stdout as "LABEL TREE SECONDS"
    local label=$1 tree=$2; shift 2
    local start=$EPOCHREALTIME
    PYTHONPATH=$tree:${PYTHONPATH#$HERE:} python3 -m nwalign "$@" || echo "$label $tree FAILED" >&2
    echo "$label $([ "$tree" = "$HERE" ] && echo this || echo base) $start $EPOCHREALTIME" >> "$OUTDIR/times.txt"
}
: > "$OUTDIR/times.txt"
for tree in "$BASE" "$HERE"; do  # warm-up of each: caches, the database's pages
    PYTHONPATH=$tree:${PYTHONPATH#$HERE:} python3 -m nwalign search $Q $DB.nwdb --top 10 -o /dev/null
done
for round in $(seq "$ROUNDS"); do
    for tree in "$BASE" "$HERE"; do
        name=$([ "$tree" = "$HERE" ] && echo this || echo base)
        timed search "$tree" search $Q $DB.nwdb --top 10 -o $WORK/search_$name.tsv
        timed pair100k "$tree" pair --random 100k --mutate 0.1 --seed 3 --format sam -o $WORK/p100k_$name.sam
        timed pair1M "$tree" pair $WORK/e1m.fa $WORK/e1m_mut.fa --format sam -o $WORK/p1m_$name.sam
    done
done
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader) this: $(git rev-parse --short HEAD 2>/dev/null)"
cmp $WORK/search_base.tsv $WORK/search_this.tsv && echo "search: identical hits ($(wc -l < $WORK/search_this.tsv) rows)"
for p in p100k p1m; do
    cmp <(grep -v '^@' $WORK/${p}_base.sam) <(grep -v '^@' $WORK/${p}_this.sam) && echo "$p: identical alignments"
done
python3 - "$OUTDIR/times.txt" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for label in dict.fromkeys(r[0] for r in rows):
    got = {v: [float(r[3]) - float(r[2]) for r in rows if r[0] == label and r[1] == v] for v in ("base", "this")}
    print(f"{label:9s} base {' '.join(f'{t:.2f}' for t in got['base'])} (median {statistics.median(got['base']):.2f} s)"
          f" | this {' '.join(f'{t:.2f}' for t in got['this'])} (median {statistics.median(got['this']):.2f} s)")
PY
} 2>&1 | tee "$OUTDIR/ab.txt"
