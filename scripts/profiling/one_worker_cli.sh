#!/usr/bin/env bash
# One GPU, search two ways (issue 19's proxy where no two-GPU machine is lent): the in-process path
# (--devices 0) and the path --devices 0,1 takes with one GPU worker (GPU 0 named twice: one worker, two
# threads scanning the first queries here while it starts). First the one-GPU scale-out tests; then
# 2,000 E. coli proteins against the seeded 570,000-sequence .nwdb, top 10. Wall times, the timeline of
# the worker path, output checksums; logs under $OUT.
#   [RUNS="1 2"] bash scripts/profiling/one_worker_cli.sh
set -uo pipefail
OUT=${OUT:-one-worker-out}
mkdir -p "$OUT"
source scripts/device-site.sh
python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_scaleout_one_gpu.py > $OUT/tests.txt 2>&1; grep -E "^E |passed|failed" $OUT/tests.txt | head -30
[ -f /tmp/sp570k.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o /tmp/sp570k.nwdb > /dev/null
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > /tmp/q2000.fa
python3 -m nwalign search data/queries_5_opal.fasta /tmp/sp570k.nwdb --top 1 -o /dev/null
for i in ${RUNS:-1 2}; do
/usr/bin/time -f "%e s wall CLI --devices 0" python3 -m nwalign search /tmp/q2000.fa /tmp/sp570k.nwdb --top 10 --devices 0 -o /tmp/one.tsv
NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e s wall CLI one-worker devices path" python3 -c "
import sys; import nwalign.scaleout as s; s.resolve_devices = lambda *a, **k: [0, 0]
sys.argv = ['nwalign', 'search', '/tmp/q2000.fa', '/tmp/sp570k.nwdb', '--top', '10', '-v', '-o', '/tmp/w.tsv']
from nwalign.launch import main; main()" 2> $OUT/timeline$i.txt; tail -1 $OUT/timeline$i.txt
grep -v "query .* done\|round\|scan of" $OUT/timeline$i.txt | head -30
cmp /tmp/one.tsv /tmp/w.tsv && echo identical
done
