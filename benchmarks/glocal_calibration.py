"""Calibration of glocal search E-values: shuffled queries (no relative in the database) searched with
``--mode glocal``; a calibrated E-value gives about one chance hit with E <= 1 per query (fewer where
part of the database is shorter than the query, since no chance hit comes from there).

Two workloads, each QUERIES seeded shuffled queries:
  protein: E. coli K-12 proteins, shuffled, against the 4,306 E. coli proteins, BLOSUM62 11/1;
  dna: 80-400 nt of the E. coli K-12 genome's second half, shuffled, against 2,500 pieces of 300-2,500 nt
       of its first half, +2/-3, gaps 7/2, both strands.
Prints, per workload, the hits with E <= 1 per query (mean, and how many queries have any). With
``--glsearch``, glsearch36's count on the protein workload too (FASTA's normal statistics).

    python3 benchmarks/glocal_calibration.py [--queries 50] [--seed 11] [--backend cpu] [--glsearch]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from nwalign import search
from nwalign.io.sequences import Record, read_fasta

PROTEINS = "data/swissprot_ecoli_k12_4306.fasta.gz"
GENOME = "data/ecoli_k12_mg1655_NC_000913.fasta.gz"


def shuffled(rng, seqs: list[str], prefix: str) -> list[Record]:
    out = []
    for k, seq in enumerate(seqs):
        letters = list(seq)
        rng.shuffle(letters)
        out.append(Record(f"{prefix}{k}", "", "".join(letters)))
    return out


def workloads(count: int, seed: int) -> dict:
    """{name: (queries, database records, scoring keywords)}."""
    rng = np.random.default_rng(seed)
    proteins = read_fasta(PROTEINS)
    picked = rng.choice(len(proteins), count, replace=False)
    protein_queries = shuffled(rng, [proteins[k].seq for k in picked], "shuffled")
    genome = read_fasta(GENOME)[0].seq
    pieces, pos = [], 0
    for k in range(2500):
        n = int(rng.integers(300, 2500))
        pieces.append(Record(f"piece{k}", "", genome[pos:pos + n]))
        pos += n
    starts = rng.integers(len(genome) // 2, len(genome) - 400, count)
    dna_queries = shuffled(rng, [genome[s:s + int(rng.integers(80, 400))] for s in starts], "shuffled")
    return {"protein": (protein_queries, proteins, {}),
            "dna": (dna_queries, pieces, dict(alphabet="dna", match=2, mismatch=-3, gap_open=7, gap_extend=2))}


def chance_hits(queries, database, keywords, backend: str) -> list[int]:
    """Hits with E <= 1 of each query."""
    job = search(queries, database, mode="glocal", top=1000, max_evalue=1.0, backend=backend, **keywords)
    return [len(hits) for _, hits in job]


def glsearch_hits(queries, database) -> list[int]:
    """glsearch36's hits with E <= 1 per query (BLOSUM62, FASTA's -f 11 -g 1: nwalign's 12/1; here
    nwalign's 11/1 is FASTA's -f 10 -g 1)."""
    with tempfile.TemporaryDirectory() as work:
        q, d = os.path.join(work, "q.fa"), os.path.join(work, "d.fa")
        for path, recs in ((q, queries), (d, database)):
            with open(path, "w") as out:
                out.writelines(f">{r.id}\n{r.seq}\n" for r in recs)
        rows = subprocess.run(["glsearch36", "-q", "-m", "8", "-s", "BL62", "-f", "-10", "-g", "-1", "-E", "1", q, d],
                              check=True, capture_output=True, text=True).stdout.splitlines()
    counts = {r.id: 0 for r in queries}
    for row in rows:
        counts[row.split("\t")[0]] += 1
    return list(counts.values())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--glsearch", action="store_true", help="glsearch36's count too (needs it on PATH)")
    args = parser.parse_args(argv)
    for name, (queries, database, keywords) in workloads(args.queries, args.seed).items():
        counts = chance_hits(queries, database, keywords, args.backend)
        print(f"{name}: {np.mean(counts):.2f} hits with E <= 1 per shuffled query ({len(counts)} queries, "
              f"{sum(c > 0 for c in counts)} with any, at most {max(counts)})")
        if args.glsearch and name == "protein" and shutil.which("glsearch36"):
            theirs = glsearch_hits(queries, database)
            print(f"{name}, glsearch36: {np.mean(theirs):.2f} per query ({sum(c > 0 for c in theirs)} with any, "
                  f"at most {max(theirs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
