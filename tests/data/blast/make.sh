#!/usr/bin/env bash
# The BLAST+ reference outputs of tests/test_blast_statistics.py, made with NCBI BLAST+ 2.12.0 (Debian's
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
blastp -version | head -n 1 > VERSION
rm -rf "$tmp"
