#!/usr/bin/env bash
# Small searches, whole process: the 20 standard queries (top 10, BLAST columns) against the 4,306 E. coli
# proteins, a seeded 60,000- and the 570,000-sequence Swiss-Prot-like database, RUNS times each after a
# warm-up, and `nwalign makedb` of each FASTA. With PEER=DIR (a CUDASW++4.0 build: DIR/align and
# DIR/makedb), the peer's makedb and search run beside ours, alternating. Wall times include the
# interpreter's start and the CUDA context.
#   [RUNS=5] [PEER=DIR] [WORK=DIR] bash benchmarks/gpu_search_small.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-small-out}}
W=${WORK:-/tmp/nwalign-small}
mkdir -p "$OUTDIR" "$W"
Q=data/queries_20_sw_benchmark.fasta
gzip -dc data/swissprot_ecoli_k12_4306.fasta.gz > $W/ecoli.fa
[ -f $W/sp60k.fa ] || python3 benchmarks/swissprot_like_db.py --count 60000 -o $W/sp60k.nwdb --fasta $W/sp60k.fa > /dev/null
[ -f $W/sp570k.fa ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $W/sp570k.nwdb --fasta $W/sp570k.fa > /dev/null
wall() {  # seconds the command took (its output discarded)
    local start=$(date +%s.%N)
    "$@" > /dev/null 2>> $W/errors.log
    python3 -c "import time; print(f'{time.time() - $start:.2f}', end='')"
}
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1); commit $(git rev-parse --short HEAD 2>/dev/null)"
for db in ecoli sp60k sp570k; do
    rm -f $W/$db.o.nwdb; rm -rf $W/peer_$db; mkdir -p $W/peer_$db
    line="-- $db: makedb $(wall python3 -m nwalign makedb $W/$db.fa -o $W/$db.o.nwdb) s"
    [ -n "${PEER:-}" ] && line="$line, peer's makedb $(wall $PEER/makedb $W/$db.fa $W/peer_$db/db) s"
    echo "$line"
    python3 -m nwalign search $Q $W/$db.o.nwdb --top 10 -o /dev/null 2> /dev/null  # warm-up
    [ -n "${PEER:-}" ] && $PEER/align --query $Q --db $W/peer_$db/db --top 10 > /dev/null 2>&1
    for run in $(seq ${RUNS:-5}); do
        line="   run $run: nwalign search $(wall python3 -m nwalign search $Q $W/$db.o.nwdb --top 10 -o $W/hits.tsv) s"
        [ -n "${PEER:-}" ] && line="$line, peer $(wall $PEER/align --query $Q --db $W/peer_$db/db --top 10) s"
        echo "$line"
    done
done
tail -n 3 $W/errors.log 2> /dev/null
} 2>&1 | tee "$OUTDIR/small.txt"
