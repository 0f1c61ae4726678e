"""Write the seeded Swiss-Prot-sized benchmark database: COUNT random proteins with Swiss-Prot's length
distribution (log-normal, mean ~360 residues; nwalign.bench.synthetic_database), as a .nwdb.

    python3 benchmarks/swissprot_like_db.py --count 570000 --seed 2 -o sp570k.nwdb [--fasta sp570k.fa]
"""

import argparse
import time

from nwalign.bench import synthetic_database
from nwalign.io.database import write_database


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=570_000)
    ap.add_argument("--seed", type=int, default=2, help="nwalign bench --seed 1 uses seed + 1 = 2 for the database")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--fasta", help="also write the database as FASTA here (60 residues per line)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    db = synthetic_database(args.count, args.seed)
    write_database(db, args.output)
    if args.fasta:
        with open(args.fasta, "w") as out:
            for k in range(db.count):
                seq = db.record(k).seq
                out.write(f">{db.ids[k]}\n" + "\n".join(seq[i:i + 60] for i in range(0, len(seq), 60)) + "\n")
    print(f"{args.output}: {db.count} sequences, {db.total_length} residues, mean {db.total_length / db.count:.1f}, "
          f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
