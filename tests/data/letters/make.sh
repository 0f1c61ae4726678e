#!/usr/bin/env bash
# blastp's scores of queries holding X, B, Z, J, U, O and * (eight of each), recorded with NCBI BLAST+ 2.12.0
# (Debian's ncbi-blast+) from the repository root: bash tests/data/letters/make.sh. tests/scoring/test_scoring.py
# compares nwalign's scores with them and needs no BLAST.
set -euo pipefail
cd "$(dirname "$0")"
python3 - <<'PY'
import random
rnd = random.Random(3)
aa = "ACDEFGHIKLMNPQRSTVWY"
base = "".join(rnd.choice(aa) for _ in range(80))
with open("odd_letters.fa", "w") as out:
    for letter in "XBZJUO*":
        q = list(base)
        for p in range(5, 75, 9):
            q[p] = letter
        out.write(f">q{letter if letter != '*' else 'stop'}\n{''.join(q)}\n")
with open("subject.fa", "w") as out:
    out.write(f">s\n{base}\n")
PY
blastp -query odd_letters.fa -subject subject.fa -gapopen 11 -gapextend 1 -comp_based_stats 0 -seg no \
    -outfmt "6 qseqid score qstart qend sstart send" 2> /dev/null > blastp_scores.tsv
blastp -version | head -n 1 > VERSION
