#!/usr/bin/env bash
# End to end: `nwalign search` of the 20 standard queries against the seeded 570,000-sequence
# Swiss-Prot-like database (BLOSUM62 11/1, top 10, the 12 default BLAST columns), from the repository
# root on a GPU machine: first run (empty CuPy and Numba caches), warm runs against the .nwdb and the
# FASTA, wall time and peak RSS of each, and a cProfile of a warm run. Logs under OUTDIR.
#   bash benchmarks/gpu_search_e2e.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-search-e2e-out}}
HITS=${HITS:-/tmp/nwalign-e2e-hits}  # hit tables (kept out of OUTDIR: the device returns few files)
mkdir -p "$OUTDIR" "$HITS"
Q=data/queries_20_sw_benchmark.fasta
DB=/tmp/sp570k
[ -f $DB.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb --fasta $DB.fa
# Byte-compile what the runs import (a pip install does it; the device's Python may be told not to).
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q nwalign ${PYTHONPATH//:/ } > /dev/null 2>&1
nw() { /usr/bin/time -f "%e s wall, %M KB peak RSS" python3 -m nwalign "$@"; }
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader)"
echo "== help";            /usr/bin/time -f "%e s wall" python3 -m nwalign --help > /dev/null
/usr/bin/time -f "%e s wall" python3 -m nwalign search --help > /dev/null
echo "== first run (empty caches)"
CUPY_CACHE_DIR=$(mktemp -d) NUMBA_CACHE_DIR=$(mktemp -d) nw search $Q $DB.nwdb --top 10 -o "$HITS/hits_first.tsv"
echo "== warm, .nwdb (3 runs; -v with NWALIGN_LOG_TIMES=1: ms since start-up on each line; SM clock sampled)"
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits -lms 50 > "$HITS/clocks.txt" 2>/dev/null &
CLOCKS=$!
for k in 1 2 3; do NWALIGN_LOG_TIMES=1 nw search $Q $DB.nwdb --top 10 -v -o "$HITS/hits_nwdb.tsv"; done
kill $CLOCKS 2>/dev/null
sort -n "$HITS/clocks.txt" | awk '{v[NR]=$1} END {if (NR) print "SM clock during the warm runs (MHz): min " v[1] ", median " v[int((NR+1)/2)] ", max " v[NR] " (" NR " samples)"}'
echo "== warm, FASTA (2 runs)"
for k in 1 2; do NWALIGN_LOG_TIMES=1 nw search $Q $DB.fa --top 10 -v -o "$HITS/hits_fasta.tsv"; done
echo "== identical outputs"
cmp "$HITS/hits_first.tsv" "$HITS/hits_nwdb.tsv" && cmp "$HITS/hits_nwdb.tsv" "$HITS/hits_fasta.tsv" && echo yes
wc -l < "$HITS/hits_nwdb.tsv"
echo "== top 10 of the two shortest queries: GPU against the CPU engine (whole database)"
python3 -c "
from nwalign.io.sequences import read_fasta
print(''.join(f'>{r.description}\\n{r.seq}\\n' for r in read_fasta('$Q')[:2]), end='')" > /tmp/q2.fa
python3 -m nwalign search /tmp/q2.fa $DB.nwdb --top 10 --backend cpu -o "$HITS/hits_cpu2.tsv"
head -n 20 "$HITS/hits_nwdb.tsv" | cmp - "$HITS/hits_cpu2.tsv" && echo "identical (20 hits)"
echo "== the 200 hits aligned on the GPU in one batch, and on the CPU engine"
python3 benchmarks/gpu_hits_align.py $Q $DB.nwdb "$HITS/hits_nwdb.tsv"
} 2>&1 | tee "$OUTDIR/e2e.txt"
python3 -m cProfile -s cumtime -m nwalign search $Q $DB.nwdb --top 10 -o /dev/null 2>&1 | head -45 > "$OUTDIR/profile.txt"
{ echo "== imports of a warm run, the 30 largest by cumulative time (us)"
  python3 -X importtime -m nwalign search $Q $DB.nwdb --top 10 -o /dev/null 2>&1 >/dev/null | grep "^import time:" \
      | sort -t'|' -k2 -n -r | head -30; } >> "$OUTDIR/profile.txt"
