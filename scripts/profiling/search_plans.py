#!/usr/bin/env python3
"""Compare the scan's launch plans (``ScanSearcher``'s ``plan``: ``profile``, ``wider``, ``wide``, ``single``,
``cost``) on the 20 benchmark queries against the Swiss-Prot-like database, alternated per query, and
time each sw_search.cu launch of one query on one stream.

    python3 scripts/profiling/search_plans.py [--plans single,cost] [--db-size 570000] [--repeats 3]
        [--detail 144,5478]
    python3 scripts/profiling/search_plans.py --plans wider,profile --detail ""   # the two scan kernels

Per query and plan: median wall of ``ScanSearcher.scores`` (device synchronised; the GPU scatter and
the copy of all scores to the host included) and GCUPS; both plans' scores must be identical.
"""

import argparse
import statistics
import sys
import time

import numpy as np

from nwalign.bench import synthetic_database
from nwalign.cuda import device_info
from nwalign.cuda.search import ScanSearcher
from nwalign.scoring import make_scoring
from nwalign.database import encode_database
from nwalign.sequences import read_fasta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db-size", type=int, default=570_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--plans", default="single,cost")
    ap.add_argument("--detail", default="144,5478", help="query lengths whose launches are timed one by one")
    args = ap.parse_args()
    import cupy as cp

    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {' '.join(sys.argv)}", flush=True)
    scoring = make_scoring("protein", "local")
    db = synthetic_database(args.db_size, 2)
    codes = encode_database(db, scoring)
    queries = [scoring.encode(r) for r in read_fasta("data/queries_20_sw_benchmark.fasta")]
    plans = args.plans.split(",")
    # "PLAN+T": the plan with blocks of T threads for the single-pass configuration G=32, R=24 (default 256).
    searchers = {p: ScanSearcher(codes, db.offsets, scoring, plan=p.split("+")[0]) for p in plans}
    for p, s in searchers.items():
        if "+" in p:
            s.block_threads[(32, 24, False)] = int(p.split("+")[1])
    for s in searchers.values():  # compile every kernel the queries need
        for q in queries:
            s.scores(q)
    total = {p: [0, 0.0] for p in plans}
    long = {p: [0, 0.0] for p in plans}  # the queries of 1,000 residues or more
    ok = True
    print(f"{'m':>5} " + " ".join(f"{p + ' ms':>10} {p + ' GCUPS':>12}" for p in plans), flush=True)
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
            for acc in [total[p]] + ([long[p]] if q.size >= 1000 else []):
                acc[0] += cells
                acc[1] += med
            row.append(f"{1e3 * med:10.2f} {cells / med / 1e9:12.0f}")
            if ref is None:
                ref = got.copy()
            elif not np.array_equal(ref, got):
                ok = False
                row.append("MISMATCH")
        print(f"{q.size:5d} " + " ".join(row), flush=True)
    print("overall: " + ", ".join(f"{p} {c / t / 1e9:.0f} GCUPS ({t:.3f} s)" for p, (c, t) in total.items()))
    print(">= 1000 aa: " + ", ".join(f"{p} {c / t / 1e9:.0f} GCUPS ({t:.3f} s)" for p, (c, t) in long.items() if t))
    print("scores equal" if ok else "SCORES DIFFER", flush=True)
    # Each launch of the auto plan on one stream, timed with events.
    s = searchers[plans[0]]
    for m in (int(x) for x in args.detail.split(",") if x):
        q = next((x for x in queries if x.size == m), queries[0])
        qrows = {w: s._qrow(q, w) for w in (False, True)}
        main_stream = cp.cuda.get_current_stream()
        print(f"launches for m = {q.size} ({plans[0]}):")
        for part in s.partitions(int(q.size)):
            e0 = main_stream.record()
            s._launch(part, q, qrows, main_stream, s._slots[0].d_scores, counter=cp.zeros(1, dtype=cp.int32))
            e1 = main_stream.record()
            e1.synchronize()
            ms = cp.cuda.get_elapsed_time(e0, e1)
            res = int(s.sorted_lengths[part.first:part.first + part.count].sum())
            print(f"  G={part.G:2d} R={part.R:2d} multi={int(part.multi)} seqs={part.count:7d} residues={res:10d} "
                  f"{ms:8.3f} ms {q.size * res / ms / 1e6:8.0f} GCUPS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
