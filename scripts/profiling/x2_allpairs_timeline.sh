#!/usr/bin/env bash
# Where the two-GPU allpairs run (5,000 x ~1.5 kb DNA, score columns) spends its time (issue 19): the -v
# timeline with each block's process, GPU and run time (NWALIGN_LOG_TIMES=1), one GPU then two, then two
# GPUs writing to /dev/null (the client's writing taken out). Machine with two GPUs; logs under OUTDIR.
#   bash scripts/profiling/x2_allpairs_timeline.sh [OUTDIR] [N]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-out}}
N=${2:-5000}
WORK=/tmp/nwalign-scaleout-pairs
mkdir -p "$OUTDIR" "$WORK"
S=$WORK/dna_${N}.fasta
[ -f $S ] || python3 benchmarks/allpairs_dna.py $N $S
COLS=qseqid,sseqid,score,qlen,slen
nw() { /usr/bin/time -f "%e s wall" python3 -m nwalign "$@"; }
export NWALIGN_LOG_TIMES=1
head -n 200 $S > $WORK/warm.fasta
python3 -m nwalign allpairs $WORK/warm.fasta --devices 0,1 --columns $COLS -o /dev/null
python3 -m nwalign allpairs $WORK/warm.fasta --devices 0 --columns $COLS -o /dev/null
for run in $(seq ${RUNS:-1}); do
    nw allpairs $S --devices 0 --columns $COLS -v -o $WORK/one.tsv 2> "$OUTDIR/one_gpu$run.txt"
    nw allpairs $S --devices 0,1 --columns $COLS -v -o $WORK/two.tsv 2> "$OUTDIR/two_gpus$run.txt"
    nw allpairs $S --devices 0,1 --columns $COLS -v -o /dev/null 2> "$OUTDIR/two_gpus_devnull$run.txt"
done
for f in "$OUTDIR"/one_gpu*.txt "$OUTDIR"/two_gpus*.txt; do
    echo "== $f"; grep -v "^INFO\|distributed\." "$f" | grep "block\|written\|wall\|ready\|workers\|run here\|scored\|kernel time"
done
cmp $WORK/one.tsv $WORK/two.tsv && echo "identical"
