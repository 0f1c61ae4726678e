#!/usr/bin/env python3
"""DNA search with the scan kernel: QUERIES random queries of ~1.5 kb against a seeded database of
COUNT sequences of 16S-rRNA length (~1,500 nt, +-10 %), match/mismatch +5/-4, gap open 10 / extend 1
(nwalign's DNA defaults), local.

    python3 benchmarks/gpu_search_dna.py [--queries 100] [--count 100000] [--check 300]

Prints per-query GCUPS quartiles and the total (query length x database residues / wall of each
ScanSearcher.scores call, scores copied back included); the first --check database sequences are
re-scored on the CPU engine for two queries.
"""

import argparse
import os
import sys
import time

import numpy as np

from nwalign.backends.cuda import device_info
from nwalign.backends.cuda.search import ScanSearcher
from nwalign.scoring.schemes import make_scoring
from nwalign.backends.cpu.search import cpu_scan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--check", type=int, default=300)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {' '.join(sys.argv)}", flush=True)
    rng = np.random.default_rng(args.seed)
    scoring = make_scoring("dna", "local")
    acgt = scoring.encode_str("ACGT")
    lengths = rng.integers(1350, 1651, size=args.count).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    codes = acgt[rng.integers(0, 4, size=int(offsets[-1]))]
    queries = [acgt[rng.integers(0, 4, size=int(n))] for n in rng.integers(1400, 1601, size=args.queries)]
    gpu = ScanSearcher(codes, offsets, scoring)
    gpu.scores(queries[0])  # compile, warm up
    rates, total_cells, total_s = [], 0, 0.0
    for q in queries:
        t0 = time.perf_counter()
        gpu.scores(q)
        seconds = time.perf_counter() - t0
        rates.append(q.size * offsets[-1] / seconds / 1e9)
        total_cells += q.size * int(offsets[-1])
        total_s += seconds
    ok = True
    sub = offsets[:args.check + 1]
    for q in queries[:2]:
        ok &= bool(np.array_equal(gpu.scores(q)[:args.check], cpu_scan(q, codes[:sub[-1]], sub, scoring, os.cpu_count() or 1)))
    print(f"database: {args.count} sequences, {offsets[-1]} nt; {args.queries} queries of 1,400-1,600 nt")
    print(f"GCUPS per query: min {min(rates):.0f}, median {np.median(rates):.0f}, max {max(rates):.0f}; "
          f"total {total_cells / total_s / 1e9:.0f} GCUPS ({total_s:.2f} s); CPU check {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
