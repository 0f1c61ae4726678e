"""nwalign's alternatives against SSEARCH36's (Waterman-Eggert, ``-E "10 10"``): a seeded sample of the
E. coli K-12 proteins searched against all 4,306, BLOSUM62 with FASTA's -f 11 -g 1 (nwalign's
--gap-open 12 --gap-extend 1). For every pair that SSEARCH36 reports more than one alignment of, each of
its rows must be one of nwalign's rows of the pair (the same query and subject coordinates), in the
same order. nwalign aligns those pairs with ``pair --mode local --max-hsps 10`` (no E-value cut: its
E-values are blastp's, SSEARCH's are fitted to the search's own scores), and so does LALIGN36 (``-K 10``,
FASTA's implementation of Waterman and Eggert's non-intersecting alignments, Huang and Miller's SIM).
Prints the pairs, the rows met, the first differences, and the search's wall times.

    python3 benchmarks/alternatives_vs_ssearch.py [--queries 100] [--seed 7] [--threads 2] [--work DIR]

Needs ssearch36 and lalign36 (FASTA 36) on PATH.
"""

import argparse
import os
import random
import subprocess
import sys
import time
from collections import defaultdict

from nwalign.io.sequences import read_fasta

DATABASE = "data/swissprot_ecoli_k12_4306.fasta.gz"


def by_pair(text: str) -> dict:
    pairs = defaultdict(list)
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            f = line.split("\t")
            pairs[f[0], f[1]].append(tuple(int(x) for x in f[6:10]))
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default="alternatives-vs-ssearch")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    records = [(r.id, r.seq) for r in read_fasta(DATABASE)]
    db, queries = os.path.join(args.work, "db.fa"), os.path.join(args.work, "queries.fa")
    with open(db, "w") as out:
        out.writelines(f">{n}\n{s}\n" for n, s in records)
    with open(queries, "w") as out:
        out.writelines(f">{n}\n{s}\n" for n, s in random.Random(args.seed).sample(records, args.queries))
    start = time.perf_counter()
    theirs = subprocess.run(["ssearch36", "-q", "-m", "8", "-s", "BL62", "-f", "-11", "-g", "-1", "-E", "10 10",
                             "-T", str(args.threads), "-b", "5000", "-d", "0", queries, db],
                            check=True, capture_output=True, text=True).stdout
    ssearch_s = time.perf_counter() - start
    theirs = by_pair(theirs)
    several = {pair: rows for pair, rows in theirs.items() if len(rows) > 1}
    seqs = dict(records)
    q_fa, s_fa = os.path.join(args.work, "pair_q.fa"), os.path.join(args.work, "pair_s.fa")
    with open(q_fa, "w") as qo, open(s_fa, "w") as so:
        for k, (q, t) in enumerate(several):  # ids of their own: a query may come in several pairs
            qo.write(f">{k}\n{seqs[q]}\n")
            so.write(f">{k}\n{seqs[t]}\n")
    start = time.perf_counter()
    ours = by_pair(subprocess.run([sys.executable, "-m", "nwalign", "pair", q_fa, s_fa, "--mode", "local", "--max-hsps",
                                   "10", "--gap-open", "12", "--gap-extend", "1", "--format", "tsv", "--columns",
                                   "qseqid,sseqid,score,score,score,score,qstart,qend,sstart,send"],
                                  check=True, capture_output=True, text=True).stdout)
    ours = {pair: ours.get((str(k), str(k)), []) for k, pair in enumerate(several)}
    ours_s = time.perf_counter() - start
    lalign = {}
    for k, (q, t) in enumerate(several):
        one_q, one_s = os.path.join(args.work, "one_q.fa"), os.path.join(args.work, "one_s.fa")
        with open(one_q, "w") as qo, open(one_s, "w") as so:
            qo.write(f">{q}\n{seqs[q]}\n")
            so.write(f">{t}\n{seqs[t]}\n")
        out = subprocess.run(["lalign36", "-q", "-m", "8", "-s", "BL62", "-f", "-11", "-g", "-1", "-K", "10", one_q,
                              one_s], check=True, capture_output=True, text=True).stdout
        lalign.update(by_pair(out))
    print(f"{args.queries} queries x {len(records)} E. coli proteins: SSEARCH36 ({ssearch_s:.1f} s) reports "
          f"{len(several)} pairs with alternatives ({sum(map(len, several.values()))} rows); nwalign aligns them "
          f"in {ours_s:.1f} s")
    for name, table in (("SSEARCH36", several), ("LALIGN36", lalign)):
        met, differ = 0, []
        for pair in several:
            rows, mine = table.get(pair, []), ours.get(pair, [])
            found = [mine.index(r) if r in mine else -1 for r in rows]
            if -1 not in found and found == sorted(found):
                met += 1
            else:
                differ.append((pair, rows, mine[:len(rows) + 2]))
        print(f"   {name}'s rows are nwalign's, in order, for {met} of {len(several)} pairs")
        for pair, rows, mine in differ[:6]:
            print("      differ:", pair, name, rows, "nwalign", mine)


if __name__ == "__main__":
    main()
