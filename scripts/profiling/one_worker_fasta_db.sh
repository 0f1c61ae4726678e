#!/usr/bin/env bash
# One GPU, search against a FASTA database two ways (issue 19's proxy): --devices 0 (one process) and the
# path --devices 0,1 takes with one GPU worker (GPU 0 named twice), where this process now scans the first
# queries on its GPUs while the worker starts (before: only for a .nwdb). N (500) E. coli proteins
# against the seeded 570,000-sequence Swiss-Prot-like database written as FASTA. Wall times, how many
# queries were scanned here, output checksums; logs under $OUT.
#   [N=500] [FORMS="fa nwdb"] [RUNS="1 2"] bash scripts/profiling/one_worker_fasta_db.sh
set -uo pipefail
OUT=${OUT:-one-worker-fasta-out}
N=${N:-500}
mkdir -p "$OUT"
source scripts/device-site.sh
[ -f /tmp/sp570k.fa ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o /tmp/sp570k_fa.nwdb --fasta /tmp/sp570k.fa > /dev/null
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:$N]), end='')" > /tmp/q$N.fa
python3 -m nwalign search data/queries_5_opal.fasta /tmp/sp570k_fa.nwdb --top 1 -o /dev/null
for form in ${FORMS:-fa}; do  # fa: the FASTA database; nwdb: the same as a .nwdb (for comparison)
DB=/tmp/sp570k.fa; [ $form = nwdb ] && DB=/tmp/sp570k_fa.nwdb
for i in ${RUNS:-1 2}; do
/usr/bin/time -f "%e s wall CLI --devices 0 ($form)" python3 -m nwalign search /tmp/q$N.fa $DB --top 10 --devices 0 -o /tmp/one_fa.tsv
NWALIGN_LOG_TIMES=1 /usr/bin/time -f "%e s wall CLI one-worker devices path ($form)" python3 -c "
import sys; import nwalign.scaleout as s; s.resolve_devices = lambda *a, **k: [0, 0]
sys.argv = ['nwalign', 'search', '/tmp/q$N.fa', '$DB', '--top', '10', '-v', '-o', '/tmp/w_fa.tsv']
from nwalign.launch import main; main()" 2> $OUT/${form}_timeline$i.txt; tail -1 $OUT/${form}_timeline$i.txt
grep -v "query .* done\|round\|scan of\|pairs aligned" $OUT/${form}_timeline$i.txt | head -30
grep "round .* gathered" $OUT/${form}_timeline$i.txt
cmp /tmp/one_fa.tsv /tmp/w_fa.tsv && echo identical
done
done
