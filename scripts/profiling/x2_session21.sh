#!/usr/bin/env bash
# Session 21's call on two GPUs (issue 19's allpairs target): the scale-out GPU tests, then allpairs on
# one GPU and on two, alternating, four rounds, each output removed before its run (replacing the last
# run's 300 MB file costs an unlink of 0.23 s in either case), outputs compared; search once each way at
# the end, as time allows. (Its first call also timed a variant whose second GPU was not warmed up before
# the plan (python3 -c wrapping launch.main with launch._warm_up_after stubbed): now the default.)
#   [TESTS=1] [ROUNDS=4] [SEARCH=1] bash scripts/profiling/x2_session21.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-session21}}
LOG=$OUTDIR/targets.txt
source scripts/profiling/x2_lib.sh
say "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs) ($SECONDS s)"
if [ "${TESTS:-0}" = 1 ]; then
    timeout 240 python3 -m pytest -q -p no:cacheprovider -m "gpu or multigpu" tests/test_scaleout_gpu.py \
        tests/test_scaleout_one_gpu.py 2>&1 | tail -n 15 > "$OUTDIR/scaleout-tests.log"
    say "tests: $(tail -n 1 "$OUTDIR/scaleout-tests.log") ($SECONDS s)"
fi
DB=/tmp/sp570k; Q=/tmp/ecoli_2000.fasta
say "== warm-up ($SECONDS s)"
allpairs_set
allpairs() {  # $1: run, $2: devices, $3: name
    say "== allpairs run $1, --devices $2 ($SECONDS s)"
    rm -f /tmp/allpairs_$3.tsv
    NWALIGN_LOG_TIMES=1 timed python3 -m nwalign allpairs $W/dna.fasta --devices $2 --columns $COLS -v \
        -o /tmp/allpairs_$3.tsv 2> "$OUTDIR/allpairs_$3_$1.txt"
    tail -n 1 "$LOG"
}
same() { cmp /tmp/$1_one.tsv /tmp/$2.tsv && say "$1 $2 identical: $(md5sum < /tmp/$1_one.tsv) $(wc -l < /tmp/$1_one.tsv) lines"; }
for run in $(seq 1 ${ROUNDS:-4}); do
    allpairs $run 0 one; allpairs $run 0,1 two; same allpairs allpairs_two
done
[ "${SEARCH:-1}" = 1 ] || { say "== done ($SECONDS s)"; exit 0; }
python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb >> "$LOG"
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > $Q
python3 -m nwalign search data/queries_5_opal.fasta $DB.nwdb --devices 0,1 --top 1 -o /dev/null 2>> "$LOG"
for d in 0 0,1; do
    name=$([ $d = 0 ] && echo one || echo two)
    say "== search --devices $d ($SECONDS s)"
    rm -f /tmp/search_$name.tsv
    NWALIGN_LOG_TIMES=1 timed python3 -m nwalign search $Q $DB.nwdb --top 10 --devices $d -v -o /tmp/search_$name.tsv \
        2> "$OUTDIR/search_$name.txt"
    tail -n 1 "$LOG"
done
same search search_two
say "== done ($SECONDS s)"
