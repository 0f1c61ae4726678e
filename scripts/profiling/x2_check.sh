#!/usr/bin/env bash
# One call on two GPUs (issue 19): the allpairs timeline (scripts/profiling/x2_allpairs_timeline.sh) and the
# search on one GPU then two (benchmarks/gpu_scaleout.sh without its kill run), RUNS times each.
#   [RUNS=2] bash scripts/profiling/x2_check.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-out}}
mkdir -p "$OUTDIR"
RUNS=${RUNS:-2} bash scripts/profiling/x2_allpairs_timeline.sh "$OUTDIR"
DB=/tmp/sp570k
HITS=/tmp/nwalign-scaleout-hits
mkdir -p $HITS
Q=$HITS/ecoli_2000.fasta
[ -f $DB.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb > /dev/null
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > $Q
python3 -m nwalign search data/queries_5_opal.fasta $DB.nwdb --devices 0,1 --top 1 -o /dev/null
for run in $(seq ${RUNS:-2}); do
    /usr/bin/time -f "%e s wall (one GPU)" python3 -m nwalign search $Q $DB.nwdb --top 10 --devices 0 -o $HITS/one.tsv
    NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e s wall (two GPUs)" python3 -m nwalign search $Q $DB.nwdb --top 10 \
        --devices 0,1 -v -o $HITS/two.tsv 2> "$OUTDIR/search_two$run.txt"
    grep "wall\|done in\|run here\|left\|closed" "$OUTDIR/search_two$run.txt"
done
cmp $HITS/one.tsv $HITS/two.tsv && echo "search identical"
sleep 1; echo "processes left: $(pgrep -f spawn_main | wc -l)"; ls /dev/shm | wc -l
