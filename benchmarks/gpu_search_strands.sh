#!/usr/bin/env bash
# A nucleotide search end to end on one GPU, one strand against both: QUERIES random queries of
# 1,400-1,600 nt against a seeded database of COUNT sequences of 1,350-1,650 nt (100 x 100,000: about
# 150 Mb), blastn's scoring (+2/-3, gaps 7/2, the search default), score columns. Prints each run's wall
# time and GCUPS (query letters x database letters x strands / wall), the first run of each warmed away.
#   bash benchmarks/gpu_search_strands.sh [OUTDIR] [QUERIES] [COUNT]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-strands-out}}
QUERIES=${2:-100}
COUNT=${3:-100000}
mkdir -p "$OUTDIR"
WORK=/tmp/nwalign-strands
mkdir -p $WORK
python3 - "$WORK" "$QUERIES" "$COUNT" <<'PY'
import sys
import numpy as np
work, nq, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(11)
letters = np.frombuffer(b"ACGT", dtype=np.uint8)
with open(f"{work}/db.fa", "w") as out:
    for k, n in enumerate(rng.integers(1350, 1651, size=count)):
        out.write(f">s{k}\n{letters[rng.integers(0, 4, n)].tobytes().decode()}\n")
with open(f"{work}/q.fa", "w") as out:
    for k, n in enumerate(rng.integers(1400, 1601, size=nq)):
        out.write(f">q{k}\n{letters[rng.integers(0, 4, n)].tobytes().decode()}\n")
PY
python3 -m nwalign makedb $WORK/db.fa -o $WORK/db.nwdb -q
cells=$(python3 -c "
from nwalign.io.sequences import read_fasta
from nwalign.io.database import load_database
q = sum(len(r.seq) for r in read_fasta('$WORK/q.fa')); print(q * load_database('$WORK/db.nwdb').total_length)")
for strand in plus both; do
    factor=1; [ $strand = both ] && factor=2
    python3 -m nwalign search $WORK/q.fa $WORK/db.nwdb --strand $strand --columns qseqid,sseqid,score -o /dev/null -q
    for run in 1 2; do
        start=$(date +%s.%N)
        python3 -m nwalign search $WORK/q.fa $WORK/db.nwdb --strand $strand --columns qseqid,sseqid,score \
            -o $WORK/$strand.tsv -q
        end=$(date +%s.%N)
        python3 -c "w = $end - $start; print(f'--strand $strand, run $run: {w:.2f} s, {$cells * $factor / w / 1e9:.0f} GCUPS')"
    done
done | tee "$OUTDIR/strands.txt"
