#!/usr/bin/env bash
# Are a search's first queries slower than the rest in one process (issue 19: the command's own scans
# while GPU workers start ran at 74-80 % of the one-process average rate on two H200s)? The one-process
# search of 2,000 E. coli proteins x the 570k .nwdb with the -v timeline, then each stretch of queries'
# time per residue against the whole run's. Logs under OUTDIR.
#   bash scripts/profiling/search_first_queries.sh [OUTDIR]
set -uo pipefail
OUTDIR=${1:-${OUT:-first-queries-out}}
mkdir -p "$OUTDIR"
DB=/tmp/sp570k
Q=/tmp/ecoli_2000.fasta
[ -f $DB.nwdb ] || python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb > /dev/null
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > $Q
python3 -m nwalign search data/queries_5_opal.fasta $DB.nwdb --devices 0 --top 1 -o /dev/null
NWALIGN_LOG_TIMES=1 python3 -m nwalign search $Q $DB.nwdb --top 10 --devices 0 -v -o /dev/null 2> "$OUTDIR/one_process_timeline.txt"
python3 - "$Q" "$OUTDIR/one_process_timeline.txt" <<'PY'
import re, sys
from nwalign.sequences import read_fasta
length = {r.id: len(r.seq) for r in read_fasta(sys.argv[1])}
done = [(int(m.group(1)), m.group(2)) for m in
        (re.match(r"nwalign:\s+(\d+) ms: search: scan of (\S+) done", line) for line in open(sys.argv[2])) if m]
start = next(int(m.group(1)) for m in (re.match(r"nwalign:\s+(\d+) ms: search: \d+ queries x", l)
                                        for l in open(sys.argv[2])) if m)
total = sum(length[q] for _, q in done)
rate = (done[-1][0] - start) / total
print(f"{len(done)} queries, {total} residues, {rate * 1000:.1f} us per residue from {start} ms to {done[-1][0]} ms")
previous, first = start, 0
for stop in (50, 100, 171, 240, 400, 800, 1200, 1600, 2000):
    res = sum(length[q] for _, q in done[first:stop])
    t = done[stop - 1][0] - previous
    print(f"queries {first + 1}-{stop}: {t} ms for {res} residues: {t / res * 1000:.1f} us per residue, "
          f"{rate * res / t * 100:.0f} % of the run's average rate")
    previous, first = done[stop - 1][0], stop
PY
