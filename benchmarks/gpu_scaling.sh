#!/usr/bin/env bash
# Every GPU of one host, warm caches: search (QUERIES, default 1,500, synthetic Swiss-Prot-like
# proteins x the seeded 570,000-sequence .nwdb, top 10, BLAST columns) and allpairs (4,000 and 8,000
# seeded ~1.5 kb DNA sequences, score columns) on 1, 2, 4 ... GPUs (--devices 0, 0,1, ...); a
# 20-query search on one GPU and on all (what --devices auto chooses for small work); one long pair
# (PAIR, default 10,000,000 x a 1 %-mutated copy, global, TSV with the CIGAR; its score pass spread over
# the GPUs); then a GPU lost mid-search (benchmarks/gpu_device_lost.py). Wall times and whether each
# output equals one GPU's. BASE=DIR: the same runs with the nwalign tree in DIR too (A/B on the same
# machine). ONLY="pair10M" (or any of small search1500 allpairs4000 allpairs8000 pair10M lost): those.
#   [BASE=DIR] [ONLY=...] bash benchmarks/gpu_scaling.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-scaling-out}}
W=${WORK:-/tmp/nwalign-scaling}
mkdir -p "$OUTDIR" "$W"
NQ=${QUERIES:-1500}
DB=$W/sp570k.nwdb
ONLY=${ONLY:-small search$NQ allpairs4000 allpairs8000 pair10M lost}
wanted() { [[ " $ONLY " == *" $1 "* ]]; }
if wanted small || wanted search$NQ || wanted lost; then
    [ -f $DB ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB > /dev/null
    [ -f $W/q$NQ.fa ] || python3 benchmarks/swissprot_like_db.py --count $NQ --seed 7 -o $W/q$NQ.nwdb --fasta $W/q$NQ.fa > /dev/null
    head -n 200 $W/q$NQ.fa | awk '/^>/{n++} n<=20' > $W/q20.fa
fi
for n in 4000 8000; do wanted allpairs$n && { [ -f $W/dna$n.fa ] || python3 benchmarks/allpairs_dna.py $n $W/dna$n.fa; }; done
GPUS=$(nvidia-smi -L | grep -c "^GPU ")
LISTS="0"; k=2
while [ $k -le $GPUS ]; do LISTS="$LISTS $(seq -s, 0 $((k - 1)))"; k=$((k * 2)); done
COLS=qseqid,sseqid,score,qlen,slen
TREES="$PWD"; [ -n "${BASE:-}" ] && TREES="$PWD $BASE"
# run TREE NAME ARGS...: the command from TREE, its wall time, and whether its output equals NAME's first
run() {
    local tree=$1 name=$2; shift 2
    local out=$W/$name.$(basename $tree).$(echo "$*" | md5sum | cut -c1-8).out
    local start=$(date +%s.%N)
    PYTHONPATH=$tree:${PYTHONPATH:-} timeout ${RUN_SECONDS:-150} python3 -m nwalign "$@" -o $out 2> $W/last.err
    local rc=$? wall=$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")
    [ -f $W/$name.ref ] || cp $out $W/$name.ref
    cmp -s $out $W/$name.ref && same=identical || same=DIFFERENT
    echo "$name [$(basename $tree)] ${*: -2:2} ... : exit $rc, $wall s, $same"
    [ $rc = 0 ] || tail -n 3 $W/last.err
}
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs); commit $(git rev-parse --short HEAD 2>/dev/null)"
for tree in $TREES; do  # warm-up: kernels, caches
    [ -f $W/q20.fa ] && PYTHONPATH=$tree:${PYTHONPATH:-} python3 -m nwalign search $W/q20.fa $DB --devices all -o /dev/null
    [ -f $W/dna4000.fa ] && PYTHONPATH=$tree:${PYTHONPATH:-} python3 -m nwalign allpairs <(head -n 400 $W/dna4000.fa) --devices all --columns $COLS -o /dev/null
    wanted pair10M && PYTHONPATH=$tree:${PYTHONPATH:-} python3 -m nwalign pair --random 300k --devices all -o /dev/null
done
wanted small && for tree in $TREES; do
    run $tree small search $W/q20.fa $DB --top 10 --devices 0
    run $tree small search $W/q20.fa $DB --top 10 --devices all
done
for spec in "search$NQ|search $W/q$NQ.fa $DB --top 10" "allpairs4000|allpairs $W/dna4000.fa --columns $COLS" \
        "allpairs8000|allpairs $W/dna8000.fa --columns $COLS" \
        "pair10M|pair --random ${PAIR:-10000000} --mutate 0.01 --seed 5 --format tsv --columns qseqid,sseqid,score,length,pident,cigar"; do
    name=${spec%%|*} work=${spec#*|}
    wanted $name || continue
    for tree in $TREES; do
        for list in $LISTS; do
            run $tree $name $work --devices $list
        done
    done
done
if wanted lost; then
    echo "== a GPU lost mid-search (its thread raises a CUDA error after ${LOSE_AFTER:-3} s)"
    python3 benchmarks/gpu_device_lost.py $W/q$NQ.fa $DB $W/lost.out ${LOSE_AFTER:-3} 2>&1 | tail -n 3
    cmp -s $W/lost.out $W/search$NQ.ref && echo "lost GPU: output identical" || echo "lost GPU: output DIFFERENT"
fi
} 2>&1 | tee "$OUTDIR/scaling.txt"
