#!/usr/bin/env bash
# What --devices auto now avoids for a small search (under 10^13 DP cells as its files bound them): 5
# queries against the seeded 570,000-sequence .nwdb in one process (--devices 0) and on the devices path
# with one worker (GPU 0 named twice, as on a two-GPU host before the threshold). Wall times; logs in $OUT.
#   bash scripts/profiling/small_search_devices.sh
set -uo pipefail
OUT=${OUT:-small-search-out}
mkdir -p "$OUT"
source scripts/device-site.sh
[ -f /tmp/sp570k.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o /tmp/sp570k.nwdb > /dev/null
python3 -c "
from nwalign.dbsearch import _estimated_cells
import pathlib; print('estimated cells:', _estimated_cells(pathlib.Path('data/queries_5_opal.fasta'), '/tmp/sp570k.nwdb'))"
python3 -m nwalign search data/queries_5_opal.fasta /tmp/sp570k.nwdb --top 1 -o /dev/null
for i in 1 2; do
/usr/bin/time -f "%e s wall, --devices 0" python3 -m nwalign search data/queries_5_opal.fasta /tmp/sp570k.nwdb --top 10 --devices 0 -o /tmp/small_one.tsv
/usr/bin/time -f "%e s wall, devices path with one worker" python3 -c "
import sys; import nwalign.scaleout as s; s.resolve_devices = lambda *a, **k: [0, 0]
sys.argv = ['nwalign', 'search', 'data/queries_5_opal.fasta', '/tmp/sp570k.nwdb', '--top', '10', '-o', '/tmp/small_w.tsv']
from nwalign.launch import main; main()"
cmp /tmp/small_one.tsv /tmp/small_w.tsv && echo identical
done
