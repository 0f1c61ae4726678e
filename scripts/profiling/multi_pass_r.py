#!/usr/bin/env python3
"""Columns per thread (R) of the scan's multi-pass form, which takes the database sequences longer than
the widest single pass (1,280 residues on sm_90): the 20 benchmark queries against the Swiss-Prot-like
database with R = 14 (the shipped form) and the other values given, alternated per query; median of
``--repeats`` per query and variant, device synchronised (``ScanSearcher.scores``); every variant's
scores must equal the first's.

    python3 scripts/profiling/multi_pass_r.py [--r 14,20,24,32] [--db-size 570000] [--repeats 3]
"""

import argparse
import statistics
import sys
import time

import numpy as np

import nwalign.cuda.search as S
from nwalign.bench import synthetic_database
from nwalign.cuda import device_info
from nwalign.database import encode_database
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--r", default="14,20,24,32")
    ap.add_argument("--db-size", type=int, default=570_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rs = [int(x) for x in args.r.split(",")]
    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {' '.join(sys.argv)}", flush=True)
    names = S._names
    S._names = lambda hopper: tuple(dict.fromkeys(names(hopper) + tuple(S._name(False, 32, r, True) for r in rs)))
    scoring = make_scoring("protein", "local")
    db = synthetic_database(args.db_size, 2)
    codes = encode_database(db, scoring)
    queries = [scoring.encode(r) for r in read_fasta("data/queries_20_sw_benchmark.fasta")]
    searchers = {}
    configs = S.CONFIGS[True]
    for r in rs:  # each searcher's plans made with its own multi-pass R
        S.CONFIGS[True] = (configs[0], r, configs[2])
        s = searchers[r] = S.ScanSearcher(codes, db.offsets, scoring)
        for q in queries:
            s.partitions(int(q.size))
    S.CONFIGS[True] = configs
    multi = [p for p in searchers[rs[0]].partitions(int(queries[0].size)) if p.multi]
    print(f"multi-pass range: {sum(p.count for p in multi)} sequences, "
          f"{int(sum(np.sum(searchers[rs[0]].sorted_lengths[p.first:p.first + p.count]) for p in multi))} residues",
          flush=True)
    for s in searchers.values():  # compile and warm every kernel
        for q in queries:
            s.scores(q)
    total = {r: [0, 0.0] for r in rs}
    long = {r: [0, 0.0] for r in rs}
    ok = True
    print(f"{'m':>5} " + " ".join(f"{'R=' + str(r) + ' ms':>10} {'GCUPS':>7}" for r in rs), flush=True)
    for q in queries:
        cells = q.size * db.total_length
        row, ref = [], None
        for r in rs:
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                got = searchers[r].scores(q)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            for acc in ([total[r]] + ([long[r]] if q.size >= 1000 else [])):
                acc[0] += cells
                acc[1] += med
            row.append(f"{1e3 * med:10.2f} {cells / med / 1e9:7.0f}")
            if ref is None:
                ref = got.copy()
            elif not np.array_equal(ref, got):
                ok = False
                row.append("MISMATCH")
        print(f"{q.size:5d} " + " ".join(row), flush=True)
    print("all 20: " + ", ".join(f"R={r} {c / t / 1e9:.0f} GCUPS ({t:.3f} s)" for r, (c, t) in total.items()))
    print(">= 1000 aa: " + ", ".join(f"R={r} {c / t / 1e9:.0f} GCUPS ({t:.3f} s)" for r, (c, t) in long.items()))
    print("scores identical:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
