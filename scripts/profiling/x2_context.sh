#!/usr/bin/env bash
# Session 21: the two-GPU allpairs with the second GPU's context made three ways (the command's own
# thread for it, as shipped; through the driver API at once; through it after the first GPU's warm-up:
# scripts/profiling/x2_context.py), two runs each, and the one-GPU run twice, outputs removed before
# each run and compared.   bash scripts/profiling/x2_context.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-context}}
LOG=$OUTDIR/targets.txt
source scripts/profiling/x2_lib.sh
allpairs_set
run() {  # $1: name, $2: devices, then the command before "allpairs"
    local name=$1 devices=$2; shift 2
    say "== $name --devices $devices ($SECONDS s)"
    rm -f /tmp/ap_$name.tsv
    NWALIGN_LOG_TIMES=1 timed "$@" allpairs $W/dna.fasta --devices $devices --columns $COLS -v -o /tmp/ap_$name.tsv \
        2> "$OUTDIR/ap_${name}_$SECONDS.txt"
    tail -n 1 "$LOG"
    [ -f /tmp/ap_one.tsv ] && cmp -s /tmp/ap_one.tsv /tmp/ap_$name.tsv && say "   identical to one GPU's"
}
for round in 1 2; do
    run one 0 python3 -m nwalign
    run shipped 0,1 python3 -m nwalign
    run parallel 0,1 python3 scripts/profiling/x2_context.py parallel
    run after 0,1 python3 scripts/profiling/x2_context.py after
done
say "== done ($SECONDS s)"
