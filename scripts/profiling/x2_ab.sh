#!/usr/bin/env bash
# A/B of allpairs over two GPUs in one device call (issue 19's allpairs target): the shipped tree and
# variants of it (scripts/profiling/variants/NAME.patch applied to a copy under /tmp), alternating, with
# the one-GPU run of the shipped tree in every round; each output removed before its run and compared.
# Each round costs ~17 s + ~9.5 s per two-GPU tree.
#   [ROUNDS=3] [VARIANTS="no_lead_limit"] bash scripts/profiling/x2_ab.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-ab}}
LOG=$OUTDIR/ab.txt
source scripts/profiling/x2_lib.sh
SHIPPED=$PWD
VARIANTS=${VARIANTS:-"no_lead_limit"}  # earlier variants, measured, are in the history (d9f97f8, 3da1763)
trees="shipped"
for v in $VARIANTS; do
    rm -rf /tmp/variant_$v && mkdir -p /tmp/variant_$v
    tar -C "$SHIPPED" --exclude=./.whl --exclude=./.git -cf - . | tar -C /tmp/variant_$v -xf -
    if (cd /tmp/variant_$v && patch -p1 -s < "$SHIPPED/scripts/profiling/variants/$v.patch"); then
        python3 -m compileall -q -j 0 /tmp/variant_$v/nwalign > /dev/null 2>&1
        trees="$trees $v"
    else
        say "variant $v: the patch does not apply; skipped"
    fi
done
allpairs_set
for t in $trees; do  # Numba's cache is keyed by the source's path: each copy compiles once, here
    [ "$t" = shipped ] && continue
    (cd /tmp/variant_$t && PYTHONPATH=/tmp/variant_$t:${PYTHONPATH#$SHIPPED:} python3 -m nwalign allpairs \
        $W/warm.fasta --devices 0,1 --columns $COLS -o /dev/null 2>> "$LOG")
done
run() {  # $1: tree name, $2: devices, $3: round
    local tree=$1 dir=$SHIPPED
    [ "$tree" != shipped ] && dir=/tmp/variant_$tree
    local name=${tree}_$([ "$2" = 0 ] && echo one || echo two)
    rm -f /tmp/ab_$name.tsv
    (cd "$dir" && PYTHONPATH=$dir:${PYTHONPATH#$SHIPPED:} NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e" -o /tmp/ab_time \
        python3 -m nwalign allpairs $W/dna.fasta --devices $2 --columns $COLS -v -o /tmp/ab_$name.tsv \
        2> "$OUTDIR/ab_${name}_$3.txt")
    local same=""
    [ -f /tmp/ab_shipped_one.tsv ] && { cmp -s /tmp/ab_shipped_one.tsv /tmp/ab_$name.tsv && same=identical || same=DIFFERENT; }
    say "round $3 $name: $(cat /tmp/ab_time) s $same"
}
for round in $(seq 1 ${ROUNDS:-3}); do
    run shipped 0 $round
    for t in $trees; do run $t 0,1 $round; done
done
say "== means (s): $(awk '/^round/ {s[$3]+=$4; n[$3]++} END {for (k in s) printf "%s %.2f; ", k, s[k]/n[k]}' "$LOG")"
