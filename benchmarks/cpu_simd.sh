#!/usr/bin/env bash
# The CPU path against the SIMD libraries it builds on, whole processes, the same work and threads
# (THREADS, default 2), scores checked equal: a search (3 queries of 464, 1,000 and 2,005 aa against the
# 4,306 E. coli proteins, BLOSUM62 11/1, score columns) against pyopal's align; allpairs of the 100
# shipped 16S sequences (global +5/-4 10/1 with BLAST's ambiguity matrix, score columns) against a pyopal
# nw loop; a 60 kb x 60 kb DNA pair's global score against parasail's nw_striped_32 (one thread).
#   bash benchmarks/cpu_simd.sh [THREADS]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
THREADS=${1:-2}
W=/tmp/nwalign-cpu-simd
mkdir -p $W
python3 - $W <<'PY'
import sys
from nwalign.io.sequences import read_fasta
w = sys.argv[1]
sel = [r for r in read_fasta("data/queries_20_sw_benchmark.fasta") if len(r.seq) in (464, 1000, 2005)]
open(f"{w}/q3.fa", "w").write("".join(f">{r.id}\n{r.seq}\n" for r in sel))
PY
python3 -m nwalign pair --random 60k,60k --seed 5 --format fasta --score-only -o /dev/null 2>/dev/null
wall() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); python3 -c "print(f'{$e - $s:.2f}')"; }
for run in 1 2 3; do
    echo "search nwalign $(wall python3 -m nwalign search $W/q3.fa data/swissprot_ecoli_k12_4306.fasta.gz \
        --backend cpu --threads "$THREADS" --columns qseqid,sseqid,score --top 10 -o $W/nw.tsv) s"
    echo "search pyopal $(wall python3 - "$THREADS" $W <<'PY'
import sys, pyopal
from Bio import SeqIO
import gzip
threads, w = int(sys.argv[1]), sys.argv[2]
db = pyopal.Database([str(r.seq) for r in SeqIO.parse(gzip.open("data/swissprot_ecoli_k12_4306.fasta.gz", "rt"), "fasta")])
for q in SeqIO.parse(f"{w}/q3.fa", "fasta"):
    scores = [r.score for r in pyopal.align(str(q.seq), db, "BLOSUM62", gap_open=11, gap_extend=1, threads=threads, ordered=True)]
PY
) s"
    echo "allpairs nwalign $(wall python3 -m nwalign allpairs data/16S_100_dada2.fasta.gz --backend cpu --threads "$THREADS" \
        --columns qseqid,sseqid,score)"
    echo "allpairs pyopal $(wall python3 - "$THREADS" <<'PY'
import sys, gzip, pyopal, scoring_matrices
from Bio import SeqIO
from nwalign.scoring.schemes import make_scoring
threads = int(sys.argv[1])
s = make_scoring("dna", "global")
m = scoring_matrices.ScoringMatrix(s.matrix.tolist(), alphabet=s.alphabet)
seqs = [str(r.seq).upper() for r in SeqIO.parse(gzip.open("data/16S_100_dada2.fasta.gz", "rt"), "fasta")]
db = pyopal.Database(seqs, alphabet=pyopal.Alphabet(s.alphabet))
aligner = pyopal.Aligner(m, gap_open=10, gap_extend=1)
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(threads) as pool:
    list(pool.map(lambda i: aligner.align(seqs[i], db, algorithm="nw", start=i + 1), range(len(seqs))))
PY
)"
done
python3 - <<'PY'
import time, numpy as np
from nwalign.io.simulate import random_records
from nwalign.scoring.schemes import make_scoring
from nwalign.backends.engine import align_pair, Encoded
from nwalign.backends.cpu.striped import striped_score
import parasail
s = make_scoring("dna", "global")
a, b = random_records([60000, 60000], "dna", 5, None)
qa, qb = s.encode(a), s.encode(b)
align_pair(Encoded(a, qa), Encoded(b, qb), s, score_only=True)
t = time.perf_counter(); ours = align_pair(Encoded(a, qa), Encoded(b, qb), s, score_only=True).score; t1 = time.perf_counter() - t
m = parasail.matrix_create(s.alphabet, 0, 0)
for i, row in enumerate(s.matrix.tolist()):
    for j, v in enumerate(row):
        m.set_value(i, j, v)
t = time.perf_counter(); theirs = parasail.nw_striped_32(a.seq, b.seq, 10, 1, m).score; t2 = time.perf_counter() - t
print(f"pair 60k x 60k: nwalign {3.6e9 / t1 / 1e9:.2f} GCUPS ({t1:.2f} s), parasail nw_striped_32 "
      f"{3.6e9 / t2 / 1e9:.2f} GCUPS ({t2:.2f} s), scores equal: {ours == theirs}")
PY
