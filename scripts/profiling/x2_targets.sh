#!/usr/bin/env bash
# Session 20's one short call on two GPUs (issue 19's targets, ~5 min of device time left): search and
# allpairs once each on one GPU, then two, outputs compared; second runs after, as far as time allows
# (everything is logged under OUTDIR as it goes, so a run cut off by the call's limit still reports).
# The same commands as benchmarks/gpu_scaleout.sh and gpu_scaleout_allpairs.sh, without the SIGKILL run,
# the pair run and the two-GPU tests (session 19's x2_final.sh has them).
# TESTS=1 first runs the two-GPU tests and the one-GPU scale-out tests (~3 min) on the code as it stands.
#   [TESTS=1] bash scripts/profiling/x2_targets.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-x2-targets}}
mkdir -p "$OUTDIR"
LOG=$OUTDIR/targets.txt
source scripts/device-site.sh
unset PYTHONDONTWRITEBYTECODE
say() { echo "$@" | tee -a "$LOG"; }
nw() { /usr/bin/time -a -o "$LOG" -f "%e s wall, %M KB peak RSS (client)" python3 -m nwalign "$@"; }
say "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs) ($SECONDS s)"
if [ "${TESTS:-0}" = 1 ]; then
    timeout 240 python3 -m pytest -q -p no:cacheprovider -m "gpu or multigpu" tests/test_scaleout_gpu.py \
        tests/test_scaleout_one_gpu.py 2>&1 | tail -n 15 > "$OUTDIR/scaleout-tests.log"
    say "tests: $(tail -n 1 "$OUTDIR/scaleout-tests.log") ($SECONDS s)"
fi
DB=/tmp/sp570k; Q=/tmp/ecoli_2000.fasta; W=/tmp/pairs; mkdir -p $W
python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb >> "$LOG"
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > $Q
python3 benchmarks/allpairs_dna.py 5000 $W/dna.fasta >> "$LOG"
head -n 200 $W/dna.fasta > $W/warm.fasta
COLS=qseqid,sseqid,score,qlen,slen
say "== warm-up ($SECONDS s)"
python3 -m nwalign search data/queries_5_opal.fasta $DB.nwdb --devices 0,1 --top 1 -o /dev/null 2>> "$LOG"
python3 -m nwalign allpairs $W/warm.fasta --devices 0,1 --columns $COLS -o /dev/null 2>> "$LOG"
python3 -m nwalign allpairs $W/warm.fasta --devices 0 --columns $COLS -o /dev/null 2>> "$LOG"
search() {  # $1: run, $2: devices, $3: name
    say "== search run $1, --devices $2 ($SECONDS s)"
    NWALIGN_LOG_TIMES=1 nw search $Q $DB.nwdb --top 10 --devices $2 -v -o /tmp/search_$3.tsv \
        2> "$OUTDIR/search_$3_$1.txt"
    tail -n 1 "$LOG"
}
allpairs() {
    say "== allpairs run $1, --devices $2 ($SECONDS s)"
    NWALIGN_LOG_TIMES=1 nw allpairs $W/dna.fasta --devices $2 --columns $COLS -v -o /tmp/allpairs_$3.tsv \
        2> "$OUTDIR/allpairs_$3_$1.txt"
    tail -n 1 "$LOG"
}
same() { cmp /tmp/$1_one.tsv /tmp/$1_two.tsv && say "$1 identical: $(md5sum < /tmp/$1_one.tsv) $(wc -l < /tmp/$1_one.tsv) lines"; }
search 1 0 one; search 1 0,1 two; same search
allpairs 1 0 one; allpairs 1 0,1 two; same allpairs
search 2 0,1 two; allpairs 2 0,1 two; allpairs 2 0 one; search 2 0 one
same search; same allpairs
say "== done ($SECONDS s)"
