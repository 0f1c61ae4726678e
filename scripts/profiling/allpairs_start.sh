#!/usr/bin/env bash
# One GPU: allpairs' start with and without the entry point's GPU warm-up (nwalign.launch; bypassed by
# calling nwalign.cli.entry directly), 5,000 seeded ~1.5 kb DNA sequences, score columns, --devices 0.
# Wall times and the first lines of each timeline; logs under $OUT.
#   OUT=... bash scripts/profiling/allpairs_start.sh [N]
set -uo pipefail
OUT=${OUT:-allpairs-start-out}
N=${1:-5000}
mkdir -p "$OUT"
source scripts/device-site.sh
S=/tmp/dna_${N}.fasta
[ -s $S ] || python3 benchmarks/allpairs_dna.py $N $S
COLS=qseqid,sseqid,score,qlen,slen
python3 -m nwalign allpairs <(head -n 200 $S) --devices 0 --columns $COLS -o /dev/null
for i in 1 2; do
  NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e s wall, warm-up at the entry point" python3 -m nwalign allpairs $S \
      --devices 0 --columns $COLS -v -o /tmp/a.tsv 2> $OUT/launch$i.txt
  NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e s wall, no warm-up" python3 -c \
      "import sys; sys.argv[0] = 'nwalign'; from nwalign.cli import entry; entry()" allpairs $S \
      --devices 0 --columns $COLS -v -o /tmp/b.tsv 2> $OUT/plain$i.txt
  for f in launch$i plain$i; do echo "== $f"; grep -v "batch" $OUT/$f.txt | head -n 12; tail -n 1 $OUT/$f.txt; done
  cmp /tmp/a.tsv /tmp/b.tsv && echo identical
done
