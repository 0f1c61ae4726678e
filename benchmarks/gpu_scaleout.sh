#!/usr/bin/env bash
# Search over every GPU of a host, on a machine with two or more GPUs and Dask installed:
# 2,000 real proteins (the first 2,000 of data/swissprot_ecoli_k12_4306.fasta.gz) against the seeded
# 570,000-sequence Swiss-Prot-like .nwdb (BLOSUM62 11/1, top 10, 12 BLAST columns), warm caches:
#   1. one GPU (--devices 0, the in-process path), 2. two GPUs (--devices 0,1: one worker process per
#   GPU holding the whole database, rounds of queries dealt to them; the command scans the first queries
#   on both GPUs while they start), 3. two GPUs with one worker SIGKILLed mid-search (the nanny restarts
#   it; Dask runs its task again). Wall times, peak RSS and output checksums; logs under OUTDIR.
#   [RUNS=2] bash benchmarks/gpu_scaleout.sh [OUTDIR]   (RUNS: how many times one GPU, then two)
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-scaleout-out}}
HITS=${HITS:-/tmp/nwalign-scaleout-hits}
mkdir -p "$OUTDIR" "$HITS"
DB=/tmp/sp570k
Q=$HITS/ecoli_2000.fasta
[ -f $DB.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb > /dev/null
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > $Q
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q nwalign ${PYTHONPATH//:/ } > /dev/null 2>&1
nw() { /usr/bin/time -f "%e s wall, %M KB peak RSS (client)" python3 -m nwalign "$@"; }
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
python3 -c "
from nwalign.sequences import read_fasta
r = read_fasta('$Q'); print(f'queries: {len(r)} proteins, {sum(len(x) for x in r)} residues')"
echo "== warm-up (caches)"
python3 -m nwalign search data/queries_5_opal.fasta $DB.nwdb --devices 0,1 --top 1 -o /dev/null
for run in $(seq ${RUNS:-2}); do
echo "== run $run: one GPU (--devices 0)"
nw search $Q $DB.nwdb --top 10 --devices 0 -v -o $HITS/one.tsv 2>&1 | grep -v "scan of\|query .* done"
echo "== run $run: two GPUs (--devices 0,1; the timeline in scaleout_timeline$run.txt)"
NWALIGN_LOG_TIMES=1 nw search $Q $DB.nwdb --top 10 --devices 0,1 -v -o $HITS/two.tsv 2> "$OUTDIR/scaleout_timeline$run.txt"
grep -v "query .* done\|round\|scan of\|pairs aligned" "$OUTDIR/scaleout_timeline$run.txt"
grep "round" "$OUTDIR/scaleout_timeline$run.txt" | sed -n '1,4p;$p'
done
echo "== two GPUs, one worker SIGKILLed after ${KILL_AFTER:-6} s"
start=$(date +%s.%N)
python3 -m nwalign search $Q $DB.nwdb --top 10 --devices 0,1 -o $HITS/killed.tsv &
main=$!
sleep "${KILL_AFTER:-6}"
victim=$(pgrep -P $main -f "spawn_main" | while read p; do
    grep -q "resource_tracker" /proc/$p/cmdline 2>/dev/null || echo $p; done | head -n 1)
echo "killing worker process $victim: $(tr '\0' ' ' < /proc/$victim/cmdline | cut -c1-80)"
kill -9 "$victim"
wait $main
echo "exit $? after $(python3 -c "import time; print(f'{time.time() - $start:.2f}')") s wall"
echo "== outputs"
md5sum $HITS/one.tsv $HITS/two.tsv $HITS/killed.tsv
wc -l < $HITS/one.tsv
cmp $HITS/one.tsv $HITS/two.tsv && cmp $HITS/one.tsv $HITS/killed.tsv && echo "identical"
} 2>&1 | tee "$OUTDIR/scaleout.txt"
