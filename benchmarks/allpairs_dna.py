"""Write the seeded all-pairs benchmark set: COUNT DNA variants of one random ~1.5 kb sequence (nwalign
bench's allpairs workload: 15 % substitutions and small indels each), as FASTA named s0, s1, ...

    python3 benchmarks/allpairs_dna.py 5000 /tmp/dna_5000.fasta
"""

import argparse

from nwalign.bench.workloads import allpairs_records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("count", type=int, help="how many sequences")
    ap.add_argument("path", help="the FASTA file to write")
    args = ap.parse_args()
    count, path = args.count, args.path
    records = allpairs_records(1500, count, 1, None, "dna")
    with open(path, "w") as out:
        out.write("".join(f">s{k}\n{r.seq}\n" for k, r in enumerate(records)))


if __name__ == "__main__":
    main()
