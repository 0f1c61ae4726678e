#!/usr/bin/env bash
# Is the two-GPU allpairs run's ~11% slower rate per GPU (session 22: a full block takes 1.15 s per GPU
# against 1.03 s in the one-GPU run) the host's or the workers'? One-GPU runs alone (32 and 16 CPU
# threads), then two one-GPU runs at once (one per GPU, 16 threads each), then the two-GPU job.
#   [ROUNDS=2] bash scripts/profiling/x2_contention.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-contention}}
LOG=$OUTDIR/contention.txt
source scripts/profiling/x2_lib.sh
say "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
allpairs_set
one() {  # $1: name, $2: GPU, $3: threads
    rm -f /tmp/c_$1.tsv
    CUDA_VISIBLE_DEVICES=$2 NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e" -o /tmp/c_$1.time python3 -m nwalign allpairs \
        $W/dna.fasta --devices 0 --threads $3 --columns $COLS -v -o /tmp/c_$1.tsv 2> "$OUTDIR/$1.txt"
}
for r in $(seq 1 ${ROUNDS:-2}); do
    one alone32_$r 0 32; say "round $r alone, 32 threads: $(cat /tmp/c_alone32_$r.time) s"
    one alone16_$r 0 16; say "round $r alone, 16 threads: $(cat /tmp/c_alone16_$r.time) s"
    one both0_$r 0 16 & one both1_$r 1 16 & wait
    say "round $r both at once, 16 threads each: GPU 0 $(cat /tmp/c_both0_$r.time) s, GPU 1 $(cat /tmp/c_both1_$r.time) s"
    rm -f /tmp/c_two.tsv
    NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e" -o /tmp/c_two.time python3 -m nwalign allpairs $W/dna.fasta \
        --devices 0,1 --columns $COLS -v -o /tmp/c_two.tsv 2> "$OUTDIR/two_$r.txt"
    say "round $r two-GPU job: $(cat /tmp/c_two.time) s"
    for f in alone16_$r both0_$r both1_$r two; do cmp -s /tmp/c_alone32_$r.tsv /tmp/c_$f.tsv || say "$f DIFFERS"; done
    rm -f /tmp/c_*.tsv
done
