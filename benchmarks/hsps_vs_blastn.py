"""Every HSP blastn reports is one of nwalign's alignments: mutated copies of phage lambda and of an E. coli
K-12 region with repeats (rRNA operons) against the originals, both strands, blastn's scoring (+2/-3,
gaps 5/2, that is --gap-open 7 --gap-extend 2), E-value cut 1e-10 on both sides. Each blastn HSP must
meet an nwalign row on its strand whose query and subject ranges overlap it and whose score is at least
its score (a blastn HSP that stops at a gap X-drop can be part of a longer, higher-scoring alignment).
Prints, per pair, the HSPs, how many are met, nwalign's rows and both programs' wall times.

    python3 benchmarks/hsps_vs_blastn.py [--rate 0.03] [--backend cpu] [--work DIR]

Needs blastn (NCBI BLAST+) on PATH.
"""

import argparse
import os
import subprocess
import sys
import time

from nwalign.io.sequences import Record, read_fasta
from nwalign.io.simulate import mutate

COLUMNS = "qstart qend sstart send sstrand score evalue"
PAIRS = {  # name: (FASTA, 0-based region or None)
    "phage lambda": ("data/phage_lambda_J02459.fasta", None),
    "E. coli K-12 4,160,001-4,230,000 (rrnB, rrnE)": ("data/ecoli_k12_mg1655_NC_000913.fasta.gz", (4_160_000, 4_230_000)),
}


def write(path: str, record: Record) -> None:
    with open(path, "w") as out:
        out.write(f">{record.id}\n{record.seq}\n")


def rows(text: str) -> list[tuple]:
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        qs, qe, ss, se, strand, score, ev = line.split("\t")
        s_lo, s_hi = sorted((int(ss), int(se)))
        out.append((int(qs), int(qe), s_lo, s_hi, strand.strip(), float(score), float(ev)))
    return out


def met(hsp, found) -> bool:
    qs, qe, ss, se, strand, score, _ = hsp
    return any(r[4] == strand and r[0] <= qe and qs <= r[1] and r[2] <= se and ss <= r[3] and r[5] >= score
               for r in found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=0.03, help="mutations per position (80 %% substitutions)")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--work", default="hsps-vs-blastn")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for k, (name, (path, region)) in enumerate(PAIRS.items()):
        original = read_fasta(path)[0]
        if region is not None:
            original = Record(original.id, "", original.seq[region[0]:region[1]])
        copy = mutate(original, args.rate, seed=k + 1, letters="ACGT", name="mutated")
        subject, query = os.path.join(args.work, f"s{k}.fa"), os.path.join(args.work, f"q{k}.fa")
        write(subject, original)
        write(query, copy)
        start = time.perf_counter()
        blast = subprocess.run(["blastn", "-task", "blastn", "-query", query, "-subject", subject, "-reward", "2",
                                "-penalty", "-3", "-gapopen", "5", "-gapextend", "2", "-dust", "no",
                                "-soft_masking", "false", "-evalue", "1e-10", "-outfmt", "6 " + COLUMNS],
                               check=True, capture_output=True, text=True).stdout
        blast_s = time.perf_counter() - start
        start = time.perf_counter()
        ours = subprocess.run([sys.executable, "-m", "nwalign", "search", query, subject, "--gap-open", "7",
                               "--gap-extend", "2", "--max-evalue", "1e-10", "--backend", args.backend,
                               "--columns", COLUMNS.replace(" ", ",")],
                              check=True, capture_output=True, text=True).stdout
        ours_s = time.perf_counter() - start
        hsps, found = rows(blast), rows(ours)
        print(f"{name}: {len(original.seq):,} nt, mutated at {args.rate:g}: blastn {len(hsps)} HSPs "
              f"({blast_s:.1f} s), {sum(met(h, found) for h in hsps)} met by nwalign's {len(found)} rows "
              f"({ours_s:.1f} s)")
        for hsp in hsps:
            if not met(hsp, found):
                print("   not met:", hsp)


if __name__ == "__main__":
    main()
