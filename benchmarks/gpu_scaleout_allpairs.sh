#!/usr/bin/env bash
# allpairs over every GPU of a host, on a machine with two or more GPUs and Dask installed:
# N (default 5,000) seeded DNA sequences of ~1.5 kb (nwalign bench's allpairs workload: variants with 15 %
# mutations), every pair i < j, score columns (qseqid,sseqid,score,qlen,slen), warm caches:
#   1. one GPU (--devices 0, the in-process path), 2. two GPUs (--devices 0,1: one worker process per GPU,
#   blocks of the pair matrix balanced by DP cells), then pair on 2 x 2,000 of them (i against i, SAM).
# Wall times, peak RSS and output checksums; logs under OUTDIR.
#   [RUNS=2] bash benchmarks/gpu_scaleout_allpairs.sh [OUTDIR] [N]   (RUNS: how many times one GPU, then two)
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-scaleout-out}}
N=${2:-5000}
WORK=${WORK:-/tmp/nwalign-scaleout-pairs}
mkdir -p "$OUTDIR" "$WORK"
S=$WORK/dna_${N}.fasta
python3 benchmarks/allpairs_dna.py $N $S
head -n 4000 $S > $WORK/q2000.fasta
tail -n 4000 $S > $WORK/t2000.fasta
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q nwalign ${PYTHONPATH//:/ } > /dev/null 2>&1
nw() { /usr/bin/time -f "%e s wall, %M KB peak RSS (client)" python3 -m nwalign "$@"; }
COLS=qseqid,sseqid,score,qlen,slen
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
python3 -c "
from nwalign.sequences import read_fasta
r = read_fasta('$S'); n = len(r); L = [len(x) for x in r]
print(f'sequences: {n}, {min(L)}-{max(L)} nt, {n * (n - 1) // 2} pairs')"
echo "== warm-up (caches)"
head -n 200 $S > $WORK/warm.fasta
python3 -m nwalign allpairs $WORK/warm.fasta --devices 0,1 --columns $COLS -o /dev/null
python3 -m nwalign allpairs $WORK/warm.fasta --devices 0 --columns $COLS -o /dev/null
for run in $(seq ${RUNS:-2}); do
echo "== run $run: allpairs, one GPU (--devices 0)"
nw allpairs $S --devices 0 --columns $COLS -v -o $WORK/one.tsv
echo "== run $run: allpairs, two GPUs (--devices 0,1; the timeline in allpairs_timeline$run.txt)"
NWALIGN_LOG_TIMES=1 nw allpairs $S --devices 0,1 --columns $COLS -v -o $WORK/two.tsv 2> "$OUTDIR/allpairs_timeline$run.txt"
cat "$OUTDIR/allpairs_timeline$run.txt"
done
echo "== pair, 2,000 x 2,000 (i against i), SAM, one GPU then two"
nw pair $WORK/q2000.fasta $WORK/t2000.fasta --format sam --devices 0 -v -o $WORK/pair_one.sam 2>&1 | tail -n 3
nw pair $WORK/q2000.fasta $WORK/t2000.fasta --format sam --devices 0,1 -v -o $WORK/pair_two.sam 2>&1 | tail -n 4
echo "== outputs"
md5sum $WORK/one.tsv $WORK/two.tsv
wc -l < $WORK/one.tsv
cmp $WORK/one.tsv $WORK/two.tsv && echo "allpairs identical"
cmp <(grep -v '^@PG' $WORK/pair_one.sam) <(grep -v '^@PG' $WORK/pair_two.sam) && echo "pair identical (but @PG)"
} 2>&1 | tee "$OUTDIR/scaleout_allpairs.txt"
