#!/usr/bin/env python3
"""The scan's plan ``profile`` (kernels/sw_profile.cu: query rows in registers, a query profile in shared
memory) against plan ``wider`` (kernels/sw_search.cu): the 20 benchmark queries against the Swiss-Prot-like
database, median of ``--repeats`` per query and plan (device synchronised, ``ScanSearcher.scores``),
alternated per query; every query's scores must be equal between the plans.

    python3 scripts/profiling/profile_plan.py [--plans wider,profile] [--db-size 570000] [--repeats 3]
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
    ap.add_argument("--plans", default="wider,profile")
    ap.add_argument("--db-size", type=int, default=570_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    plans = args.plans.split(",")
    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {' '.join(sys.argv)}", flush=True)
    scoring = make_scoring("protein", "local")
    db = synthetic_database(args.db_size, 2)
    codes = encode_database(db, scoring)
    queries = [scoring.encode(r) for r in read_fasta("data/queries_20_sw_benchmark.fasta")]
    searchers = {p: S.ScanSearcher(codes, db.offsets, scoring, plan=p) for p in plans}
    for s in searchers.values():  # compile and warm every kernel
        for q in queries:
            s.scores(q)
    if "profile" in searchers:
        s = searchers["profile"]
        print(f"profile: {s.count - s.profile_first} sequences up to {S.PROFILE_MAX_LEN} residues; "
              f"{s.profile_first} longer take plan wider", flush=True)
    total = {p: [0, 0.0] for p in plans}
    long = {p: [0, 0.0] for p in plans}
    ok = True
    print(f"{'m':>5} {'config':>12} " + " ".join(f"{p + ' ms':>12} {'GCUPS':>7}" for p in plans), flush=True)
    for q in queries:
        cells = q.size * db.total_length
        row, ref = [], None
        for p in plans:
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                got = searchers[p].scores(q)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            for acc in ([total[p]] + ([long[p]] if q.size >= 1000 else [])):
                acc[0] += cells
                acc[1] += med
            row.append(f"{1e3 * med:12.2f} {cells / med / 1e9:7.0f}")
            if ref is None:
                ref = got.copy()
            elif not np.array_equal(ref, got):
                ok = False
                bad = np.flatnonzero(ref != got)
                row.append(f"MISMATCH {bad.size} e.g. {bad[:3]} {ref[bad[:3]]} {got[bad[:3]]}")
        print(f"{q.size:5d} {str(S.profile_config(int(q.size))):>12} " + " ".join(row), flush=True)
    print("all 20: " + ", ".join(f"{p} {c / t / 1e9:.0f} GCUPS ({t:.3f} s)" for p, (c, t) in total.items()))
    print(">= 1000 aa: " + ", ".join(f"{p} {c / t / 1e9:.0f} GCUPS ({t:.3f} s)" for p, (c, t) in long.items()))
    print("scores equal" if ok else "SCORES DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
