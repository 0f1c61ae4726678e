#!/usr/bin/env bash
# The BLAST+ reference outputs of tests/results/test_blast_statistics.py, made with NCBI BLAST+ 2.12.0 (Debian's
# ncbi-blast+ package) from the repository root: bash tests/data/blast/make.sh. The tests compare
# nwalign's E-values and bit scores with these files and need no BLAST.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
zcat ../../../data/swissprot_ecoli_k12_4306.fasta.gz > "$tmp/ecoli.fa"
makeblastdb -in "$tmp/ecoli.fa" -dbtype prot -out "$tmp/ecoli" > /dev/null
Q=../../../data/queries_20_sw_benchmark.fasta
FIELDS="6 qseqid sseqid score evalue bitscore qstart qend sstart send"
# matrix, BLAST's gap existence and extension (nwalign's --gap-open is their sum)
for run in "BLOSUM62 10 1" "BLOSUM45 15 2" "PAM250 13 2" "PAM30 9 1"; do
    read -r matrix open extend <<< "$run"
    blastp -query $Q -db "$tmp/ecoli" -matrix "$matrix" -gapopen "$open" -gapextend "$extend" \
        -comp_based_stats 0 -seg no -evalue 10 -max_target_seqs 5 -outfmt "$FIELDS" \
        > "blastp_${matrix}_${open}_${extend}.tsv"
done
# DNA: 8 mutated lambda fragments (dna_queries.fa; odd ones reverse-complemented) against lambda and the
# first 100 kb of E. coli in 2 kb pieces, blastn's +2/-3 with gaps 5/2 (nwalign's search default 7/2)
python3 - "$tmp/dna.fa" <<'PY'
import gzip, sys
def seq(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">")).upper()
phage, genome = seq("../../../data/phage_lambda_J02459.fasta"), seq("../../../data/ecoli_k12_mg1655_NC_000913.fasta.gz")[:100000]
with open(sys.argv[1], "w") as out:
    out.writelines(f">lam{k}\n{phage[k:k + 2000]}\n" for k in range(0, len(phage), 2000))
    out.writelines(f">eco{k}\n{genome[k:k + 2000]}\n" for k in range(0, len(genome), 2000))
PY
makeblastdb -in "$tmp/dna.fa" -dbtype nucl -out "$tmp/dna" > /dev/null
blastn -task blastn -query dna_queries.fa -db "$tmp/dna" -reward 2 -penalty -3 -gapopen 5 -gapextend 2 -dust no \
    -soft_masking false -evalue 10 -max_target_seqs 5 -max_hsps 1 -outfmt "$FIELDS sstrand" > blastn_2_3_5_2.tsv
blastp -version | head -n 1 > VERSION
rm -rf "$tmp"
