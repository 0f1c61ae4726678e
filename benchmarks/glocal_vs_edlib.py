"""nwalign's glocal alignment under unit costs against edlib's infix (HW) edit distance: seeded random DNA
reads (20-300 nt, 0-15 % edits) placed in random references (1-3 kb) and unrelated ones. With match 0,
mismatch -1 and every gap position costing 1 (--match 0 --mismatch -1 --gap-open 1 --gap-extend 1), the
optimal glocal score is minus the least number of edits that place the whole read in the reference:
edlib's HW distance. Prints the pairs compared and how many agree, and the first differences.

    python3 benchmarks/glocal_vs_edlib.py [--pairs 2000] [--seed 5]

Needs edlib (pip install edlib).
"""

import argparse

import edlib
import numpy as np

import nwalign


def mutated(rng, seq: str, rate: float) -> str:
    out = []
    for c in seq:
        u = rng.random()
        if u < rate / 3:
            out.append("ACGT"[(("ACGT".index(c)) + int(rng.integers(1, 4))) % 4])
        elif u < 2 * rate / 3:
            continue
        elif u < rate:
            out.append(c + "ACGT"[int(rng.integers(0, 4))])
        else:
            out.append(c)
    return "".join(out) or "A"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    agree, differ = 0, []
    for k in range(args.pairs):
        ref = "".join(rng.choice(list("ACGT"), int(rng.integers(1000, 3000))))
        length = int(rng.integers(20, 300))
        at = int(rng.integers(0, len(ref) - length))
        read = mutated(rng, ref[at:at + length], float(rng.uniform(0, 0.15))) if k % 4 else \
            "".join(rng.choice(list("ACGT"), length))
        distance = edlib.align(read, ref, mode="HW", task="distance")["editDistance"]
        score = nwalign.align(read, ref, mode="glocal", alphabet="dna", match=0, mismatch=-1, gap_open=1,
                              gap_extend=1, score_only=True).score
        if score == -distance:
            agree += 1
        else:
            differ.append((k, len(read), len(ref), distance, score))
    print(f"{args.pairs} reads in references: nwalign's glocal score is minus edlib's HW distance for {agree}")
    for d in differ[:10]:
        print("   differ (pair, read, reference, edlib, nwalign):", *d)


if __name__ == "__main__":
    main()
