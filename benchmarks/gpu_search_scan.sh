#!/usr/bin/env bash
# The search scan's benchmark on a GPU machine, from the repository root: the 20 standard queries against a
# seeded Swiss-Prot-sized database (570,000 sequences), BLOSUM62 11/1.
#   bash benchmarks/gpu_search_scan.sh [scan|gsw|e2e|all] [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
WHAT=${1:-all}
OUTDIR=${2:-${OUT:-search-out}}
mkdir -p "$OUTDIR"
nw() { python3 -m nwalign "$@"; }
Q=data/queries_20_sw_benchmark.fasta
status=0
if [ "$WHAT" = scan ] || [ "$WHAT" = all ]; then
    nw bench --workload search --kernels scan --input $Q --db-size 570000 --repeats 2 --warmup 1 --check 2000 \
        --json "$OUTDIR/scan_570k.json" -q || status=1
fi
if [ "$WHAT" = gsw ] || [ "$WHAT" = all ]; then
    nw bench --workload search --kernels gsw,scan --input $Q --db-size 570000 --repeats 1 --warmup 0 --check 500 \
        --json "$OUTDIR/gsw_570k.json" -q || status=1
fi
if [ "$WHAT" = e2e ] || [ "$WHAT" = all ]; then
    python3 benchmarks/swissprot_like_db.py --count 570000 -o /tmp/sp570k.nwdb
    /usr/bin/time -f "%e s wall, %M KB max RSS" python3 -m nwalign search $Q /tmp/sp570k.nwdb --top 10 --header -v \
        -o "$OUTDIR/hits_570k.tsv" 2>&1 | tail -n 4 || status=1
    wc -l "$OUTDIR/hits_570k.tsv"
fi
exit $status
