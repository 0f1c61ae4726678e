#!/usr/bin/env python3
"""Where a short query's ``ScanSearcher.scores`` call spends its time: wall per call against the GPU's
own time between the first and the last launch (events on the searcher's streams), for the 144- and
1,000-residue benchmark queries. ``python3 scripts/profiling/scan_overhead.py [--db-size 570000]``"""

import argparse
import statistics
import time

import cupy as cp

import nwalign.cuda.search as S
from nwalign.bench import synthetic_database
from nwalign.database import encode_database
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db-size", type=int, default=570_000)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    scoring = make_scoring("protein", "local")
    db = synthetic_database(args.db_size, 2)
    codes = encode_database(db, scoring)
    queries = {q.size: q for q in (scoring.encode(r) for r in read_fasta("data/queries_20_sw_benchmark.fasta"))}
    s = S.ScanSearcher(codes, db.offsets, scoring)
    for m in (144, 222, 1000):
        q = queries[m]
        for _ in range(3):
            s.scores(q)
        walls, gpu, submits, results = [], [], [], []
        for _ in range(args.repeats):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            start = cp.cuda.Event()
            start.record(s.upload)
            ticket = s.submit(q)
            t1 = time.perf_counter()
            end = cp.cuda.Event()
            end.record(ticket.main)
            s.result(ticket)
            t2 = time.perf_counter()
            end.synchronize()
            walls.append(t2 - t0)
            submits.append(t1 - t0)
            results.append(t2 - t1)
            gpu.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        med = statistics.median
        print(f"m={m}: wall {1e3 * med(walls):.2f} ms ({m * db.total_length / med(walls) / 1e9:.0f} GCUPS), "
              f"submit {1e3 * med(submits):.2f} ms, result {1e3 * med(results):.2f} ms, GPU from the upload "
              f"stream's start to the copy back {1e3 * med(gpu):.2f} ms ({m * db.total_length / med(gpu) / 1e9:.0f} "
              "GCUPS)", flush=True)


if __name__ == "__main__":
    main()
