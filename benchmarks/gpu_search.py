#!/usr/bin/env python3
"""GCUPS of the gsw search kernel: the 20 benchmark queries against a seeded synthetic protein database
with Swiss-Prot's length distribution (log-normal, mean ~360), BLOSUM62 11/1.

Usage: python benchmarks/gpu_search.py [--db-size 570000] [--seed 1] [--json FILE]

Per query: kernel wall time (device synchronised) and GCUPS = query length x database residues / time.
Check: the GPU scores of the first --check sequences equal the CPU engine's for every query.
End to end: the whole search (scan + top-10 alignments on the CPU engine + statistics) in hits/s.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from nwalign.bench import synthetic_database
from nwalign.backends.cuda import device_info
from nwalign.backends.cuda.gsw import GswSearcher
from nwalign.backends.engine import encode_all
from nwalign.io.database import database_from_records, encode_database
from nwalign.scoring.schemes import make_scoring
from nwalign.backends.cpu.search import cpu_scan as scan
from nwalign.jobs.search.pipeline import search_query
from nwalign.io.sequences import read_fasta
from nwalign.results.statistics import parameters


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db-size", type=int, default=570000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", type=int, default=300)
    ap.add_argument("--queries", default=os.path.join(os.path.dirname(__file__), "..", "data",
                                                      "queries_20_sw_benchmark.fasta"))
    ap.add_argument("--json")
    args = ap.parse_args()
    scoring = make_scoring("protein", "local")
    t0 = time.perf_counter()
    db = synthetic_database(args.db_size, args.seed)
    print(f"device: {device_info()[0]['name']}; date {time.strftime('%Y-%m-%d')}; command: {' '.join(sys.argv)}")
    print(f"database: {db.count} sequences, {db.total_length} residues (mean {db.total_length / db.count:.0f}), "
          f"built in {time.perf_counter() - t0:.1f} s", flush=True)
    codes = encode_database(db, scoring)
    gpu = GswSearcher(db, scoring)
    queries = encode_all(read_fasta(args.queries), scoring, args.queries)
    gpu.scores(queries[0].record.seq[:50])  # warm-up: compilation, constant memory
    check = database_from_records([db.record(k) for k in range(args.check)], "check")
    check_codes = encode_database(check, scoring)
    rows, ok = [], True
    total_cells, total_s = 0, 0.0
    for q in queries:
        t1 = time.perf_counter()
        scores = gpu.scores(q.record.seq)
        seconds = time.perf_counter() - t1
        cells = len(q.codes) * db.total_length
        cpu = scan(q.codes, check_codes, check.offsets, scoring, os.cpu_count() or 1)
        verified = bool(np.array_equal(scores[:args.check], cpu))
        ok &= verified
        total_cells += cells
        total_s += seconds
        rows.append(dict(query=q.record.id, length=len(q.codes), seconds=seconds, gcups=cells / seconds / 1e9,
                         verified=verified))
        print(f"{q.record.id[:34]:34s} {len(q.codes):5d} aa {seconds:8.3f} s {cells / seconds / 1e9:8.1f} GCUPS "
              f"{'ok' if verified else 'MISMATCH'}", flush=True)
    print(f"overall: {total_cells / total_s / 1e9:.1f} GCUPS over {len(queries)} queries ({total_s:.2f} s of scans)")
    stats = parameters(scoring.matrix_name, scoring.gap_open, scoring.gap_extend)
    t2 = time.perf_counter()
    hits = sum(len(search_query(q, db, codes, scoring, stats, 10, scanner=gpu)) for q in queries)
    end = time.perf_counter() - t2
    print(f"end to end: {hits} hits in {end:.2f} s = {hits / end:.1f} hits/s (scan on the GPU, alignments on the CPU)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=device_info(), db_size=db.count, db_residues=db.total_length, rows=rows,
                           overall_gcups=total_cells / total_s / 1e9, end_to_end_s=end, hits=hits), fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
