#!/usr/bin/env bash
# A UniRef50-sized search on one GPU: COUNT (default 50,000,000) seeded Swiss-Prot-like proteins (~18 G
# residues, benchmarks/uniref_like_fasta.py) made into a .nwdb by `nwalign makedb`, then the 20 standard
# queries (top 10, BLAST columns) with the database resident and with the GPU memory capped at CAP
# (default 8G: streamed in chunks). Prints the wall time and peak RSS of each command, the scans' GCUPS
# (-v's "done" line) and whether the two searches' outputs are identical. Needs ~45 GB of disk in WORK.
#   [COUNT=...] [CAP=8G] [WORK=DIR] bash benchmarks/gpu_search_large.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-large-out}}
W=${WORK:-/tmp/nwalign-large}
mkdir -p "$OUTDIR" "$W"
COUNT=${COUNT:-50000000}
Q=data/queries_20_sw_benchmark.fasta
timed() { /usr/bin/time -f "%e s wall, %M KB peak RSS" "$@"; }
{
echo "== $(date -u) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1); commit $(git rev-parse --short HEAD 2>/dev/null)"
df -h "$W" | tail -n 1
[ -f $W/db.fa ] || python3 benchmarks/uniref_like_fasta.py --count $COUNT -o $W/db.fa
echo "-- makedb"
[ -f $W/db.nwdb ] || timed python3 -m nwalign makedb $W/db.fa -o $W/db.nwdb
df -h "$W" | tail -n 1
for how in resident capped; do
    echo "-- search, $how"
    extra=""; [ $how = capped ] && extra="--gpu-memory ${CAP:-8G}"
    timed python3 -m nwalign search $Q $W/db.nwdb --top 10 --devices 0 $extra -v -o $W/$how.tsv 2> $W/$how.log
    grep -o "resident on GPU.*\|streamed through GPU.*\|done in.*" $W/$how.log
    tail -n 1 $W/$how.log
done
cmp -s $W/resident.tsv $W/capped.tsv && echo "outputs identical" || echo "outputs DIFFERENT"
} 2>&1 | tee "$OUTDIR/large.txt"
