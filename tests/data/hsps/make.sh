#!/usr/bin/env bash
# Reference outputs of tests/results/test_hsps.py, made with NCBI BLAST+ 2.12.0 and FASTA 36 (Debian's
# ncbi-blast+ and fasta3 packages) from the repository root: bash tests/data/hsps/make.sh. The inputs are
# written here too; the tests read them and these outputs and need neither program.
set -euo pipefail
cd "$(dirname "$0")"
python3 - <<'PY'
import gzip, random
def seq(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">")).upper()
genome = seq("../../../data/ecoli_k12_mg1655_NC_000913.fasta.gz")
rnd = random.Random(56)
frag = genome[1_000_000:1_000_500]  # a 500-nt piece from far away, planted three times in 60 kb
rc = frag[::-1].translate(str.maketrans("ACGT", "TGCA"))
def mutated(s, rate):
    return "".join(rnd.choice([b for b in "ACGT" if b != c]) if rnd.random() < rate else c for c in s)
host = list(genome[:60_000])
for at, piece in ((8_000, mutated(frag, 0.02)), (30_000, mutated(frag, 0.06)), (47_000, mutated(rc, 0.04))):
    host[at:at + 500] = piece
with open("planted.fa", "w") as out:
    out.write(">planted E. coli K-12 1-60000 with a 500-nt piece of 1000001-1000500 at 8001 and 30001 "
              "(plus) and 47001 (minus), mutated\n" + "".join(host) + "\n")
with open("fragment.fa", "w") as out:
    out.write(">fragment E. coli K-12 1000001-1000500\n" + frag + "\n")
# proteins: a query and a subject holding it twice (once with every fifth residue changed), amid filler
opal = open("../../../data/queries_5_opal.fasta").read().split(">")[2]
query = "".join(opal.splitlines()[1:])[:120]
filler = "".join(rnd.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(200))
copy = "".join(rnd.choice("ACDEFGHIKLMNPQRSTVWY") if k % 5 == 0 else c for k, c in enumerate(query))
with open("repeat_query.fa", "w") as out:
    out.write(f">rq\n{query}\n")
with open("repeat_subject.fa", "w") as out:
    out.write(f">rs\n{filler[:50]}{query}{filler[50:150]}{copy}{filler[150:]}\n")
PY
tmp=$(mktemp -d)
makeblastdb -in planted.fa -dbtype nucl -out "$tmp/planted" > /dev/null
blastn -task blastn -query fragment.fa -db "$tmp/planted" -reward 2 -penalty -3 -gapopen 5 -gapextend 2 -dust no \
    -soft_masking false -evalue 1e-10 -outfmt "6 qseqid sseqid score evalue qstart qend sstart send sstrand" \
    > blastn_planted.tsv
# Waterman-Eggert alternatives: BLOSUM62, FASTA's -f 11 -g 1 (a gap of L costs 11 + L, nwalign's --gap-open 12)
ssearch36 -q -m 8 -s BL62 -f -11 -g -1 -E "10 10" repeat_query.fa repeat_subject.fa > ssearch_repeats.tsv
{ blastn -version | head -n 1; ssearch36 2>&1 | grep -m 1 version; } > VERSION
rm -rf "$tmp"
