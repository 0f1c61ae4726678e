#!/usr/bin/env bash
# One GPU, allpairs two ways (issue 19's proxy where no two-GPU machine is lent): the in-process path
# (--devices 0) and the path --devices 0,1 takes with one GPU worker (GPU 0 named twice: one worker, two
# threads running the first blocks here while it starts). N (default 5,000) seeded ~1.5 kb DNA sequences,
# score columns. Wall times, the timeline of the worker path, output checksums; logs under $OUT.
#   bash scripts/profiling/one_worker_allpairs.sh [N]
set -uo pipefail
OUT=${OUT:-one-worker-out}
N=${1:-5000}
mkdir -p "$OUT"
source scripts/device-site.sh
S=/tmp/dna_${N}.fasta
python3 benchmarks/allpairs_dna.py $N $S
COLS=qseqid,sseqid,score,qlen,slen
python3 -m nwalign allpairs <(head -n 200 $S) --devices 0 --columns $COLS -o /dev/null
for i in ${RUNS:-1 2}; do
/usr/bin/time -f "%e s wall allpairs --devices 0" python3 -m nwalign allpairs $S --devices 0 --columns $COLS -o /tmp/one.tsv
NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e s wall allpairs one-worker devices path" python3 -c "
import sys; import nwalign.scaleout as s; s.resolve_devices = lambda *a, **k: [0, 0]
sys.argv = ['nwalign', 'allpairs', '$S', '--columns', '$COLS', '-v', '-o', '/tmp/w.tsv']
from nwalign.launch import main; main()" 2> $OUT/allpairs_timeline$i.txt
tail -1 $OUT/allpairs_timeline$i.txt
grep -v "batch" $OUT/allpairs_timeline$i.txt | head -30
cmp /tmp/one.tsv /tmp/w.tsv && echo identical
done
