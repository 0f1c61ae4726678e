"""nwalign's glocal scores against glsearch36's (FASTA 36: global in the query, local in the library): a
seeded sample of E. coli K-12 proteins as queries against another sample as the library, BLOSUM62 with
FASTA's -f 11 -g 1 (nwalign's --gap-open 12 --gap-extend 1). For every (query, library sequence) pair
glsearch36 reports, its "global/local score" must be nwalign's `pair --mode glocal` score. Prints the
pairs compared, how many scores and query/library coordinates are equal, and the first differences.

    python3 benchmarks/glocal_vs_glsearch.py [--queries 10] [--library 100] [--seed 3] [--work DIR]

Needs glsearch36 (FASTA 36) on PATH.
"""

import argparse
import os
import random
import re
import subprocess
import sys

from nwalign.io.sequences import read_fasta

DATABASE = "data/swissprot_ecoli_k12_4306.fasta.gz"
QUERY = re.compile(r"^\s*\d+>>>(\S+)")
SUBJECT = re.compile(r"^>>(\S+)")
SCORE = re.compile(r"global/local score: (-?\d+);.*\((\d+)-(\d+):(\d+)-(\d+)\)")


def glsearch(queries: str, library: str, count: int) -> dict:
    """{(query, subject): (score, qstart, qend, sstart, send)} from glsearch36's report."""
    out = subprocess.run(["glsearch36", "-q", "-s", "BL62", "-f", "-11", "-g", "-1", "-b", str(count), "-d",
                          str(count), "-E", "1e9", queries, library], check=True, capture_output=True, text=True).stdout
    found, query, subject = {}, None, None
    for line in out.splitlines():
        if (m := QUERY.match(line)):
            query = m.group(1)
        elif (m := SUBJECT.match(line)):
            subject = m.group(1)
        elif (m := SCORE.search(line)) and query and subject:
            found.setdefault((query, subject), tuple(int(x) for x in m.groups()))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--library", type=int, default=100)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--work", default="glocal-vs-glsearch")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    records = [(r.id, r.seq) for r in read_fasta(DATABASE)]
    rng = random.Random(args.seed)
    queries, library = rng.sample(records, args.queries), rng.sample(records, args.library)
    q_fa, l_fa = os.path.join(args.work, "queries.fa"), os.path.join(args.work, "library.fa")
    for path, recs in ((q_fa, queries), (l_fa, library)):
        with open(path, "w") as out:
            out.writelines(f">{n}\n{s}\n" for n, s in recs)
    theirs = glsearch(q_fa, l_fa, args.library)
    seqs = dict(records)
    pairs = sorted(theirs)
    pq, pt = os.path.join(args.work, "pair_q.fa"), os.path.join(args.work, "pair_t.fa")
    with open(pq, "w") as qo, open(pt, "w") as to:
        for k, (q, t) in enumerate(pairs):
            qo.write(f">{k}\n{seqs[q]}\n")
            to.write(f">{k}\n{seqs[t]}\n")
    ours = subprocess.run([sys.executable, "-m", "nwalign", "pair", pq, pt, "--mode", "glocal", "--gap-open", "12",
                           "--gap-extend", "1", "--format", "tsv", "--columns", "score,qstart,qend,sstart,send"],
                          check=True, capture_output=True, text=True).stdout.splitlines()
    same_score = same_place = 0
    differ = []
    for (q, t), row in zip(pairs, ours):
        mine = tuple(int(x) for x in row.split("\t"))
        same_score += mine[0] == theirs[q, t][0]
        same_place += mine == theirs[q, t]
        if mine[0] != theirs[q, t][0]:
            differ.append((q, t, theirs[q, t], mine))
    print(f"{args.queries} queries x {args.library} library proteins: {len(pairs)} pairs glsearch36 reports; "
          f"{same_score} scores equal, {same_place} with the same coordinates")
    for d in differ[:10]:
        print("   differ:", *d)


if __name__ == "__main__":
    main()
