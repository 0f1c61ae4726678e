#!/usr/bin/env bash
# A genome pair with a long insertion: E. coli's first 1 Mb against a 1 %-mutated copy with 30 kb of
# another part of the genome inserted at 500 kb (the windowed traceback's windows miss that row and are
# widened). Usage: bash scripts/profiling/long_insertion_pair.sh
set -euo pipefail
TMP=$(mktemp -d)
E=data/ecoli_k12_mg1655_NC_000913.fasta.gz
python3 -m nwalign mutate $E --region 1-1000000 --rate 0 -o $TMP/a.fa
python3 -m nwalign mutate $E --region 2000001-2030000 --rate 0 -o $TMP/ins.fa
python3 - $TMP <<'PY'
import sys
from nwalign import read_fasta
d = sys.argv[1]
a, ins = read_fasta(f"{d}/a.fa")[0].seq, read_fasta(f"{d}/ins.fa")[0].seq
open(f"{d}/b0.fa", "w").write(">ecoli_1M_ins30k\n" + a[:500000] + ins + a[500000:] + "\n")
PY
python3 -m nwalign mutate $TMP/b0.fa --rate 0.01 --seed 7 -o $TMP/b.fa
python3 benchmarks/gpu_genome_pair.py $TMP/a.fa $TMP/b.fa --whole
NWALIGN_LOG_TIMES=1 python3 -m nwalign pair -v --backend cuda $TMP/a.fa $TMP/b.fa --format tsv -o $TMP/x.tsv 2>&1 | grep wavefront
cut -f1-12 $TMP/x.tsv
rm -rf $TMP
