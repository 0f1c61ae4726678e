"""The scan alone, database resident against streamed, measured the same way: the queries' Smith-Waterman
scores over a .nwdb on one GPU, each query's best TOP candidates taken as they come (the host work of a
streamed scan), timed from the first query's submission to the last query's candidates.

- resident: the whole database uploaded before the clock starts (a search uploads it while it reads its
  queries), nwalign.backends.cuda.search.ScanSearcher as `nwalign search` makes it;
- streamed: nwalign.backends.cuda.streamed.StreamedScan with the GPU memory capped at 1/FRACTION of what the
  resident search needs, made just before the clock starts (it begins reading the first chunk ahead, as
  a search makes it while it prepares), every chunk's upload inside the clock (the first one too).

Prints each run's seconds and GCUPS, the streamed runs' share of the resident GCUPS (median against
median) and whether both found the same candidates.

    python3 benchmarks/gpu_scan_streamed.py DB.nwdb QUERIES.fasta [--fraction 4] [--runs 3] [--top 10]
"""

import argparse
import statistics
import time

import numpy as np

from nwalign.backends.cuda.search import ScanSearcher
from nwalign.backends.cuda.streamed import StreamedScan, long_queries, resident_bytes, scan_all
from nwalign.io.database import load_database
from nwalign.results.hits import merge, top_hits
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import read_fasta


def resident_best(searcher, queries, top):
    """Each query's best ``top`` candidates, as the streamed scan takes them on each chunk."""
    best = []
    for scores in scan_all(searcher, queries):
        found = top_hits(scores, top, None)
        best.append(merge([(found, scores[found])], top))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("database")
    ap.add_argument("queries")
    ap.add_argument("--fraction", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    db = load_database(args.database)
    sc = make_scoring("protein", "local", search=True)
    codes, offsets = db.encode(sc), np.asarray(db.offsets)
    queries = [sc.encode_bytes(np.frombuffer(r.seq.encode(), np.uint8)) for r in read_fasta(args.queries)]
    cells = sum(q.size for q in queries) * db.total_length
    long = long_queries(q.size for q in queries)
    budget = int(resident_bytes(db.total_length, db.count, long) / args.fraction)
    resident = ScanSearcher(codes, offsets, sc, 0)
    resident_best(resident, queries[:2], args.top)  # kernels loaded
    rates = {"resident": [], "streamed": []}
    found = {}
    for run in range(1, args.runs + 1):
        for how in rates:
            scan = StreamedScan(codes, offsets, sc, 0, budget, long) if how == "streamed" else None
            started = time.perf_counter()
            if how == "resident":
                best = resident_best(resident, queries, args.top)
                said = ""
            else:
                best = scan.best(queries, args.top)
                said = f", {len(scan.chunks)} chunks, {scan.upload_seconds * 1e3:.0f} ms of uploads between them"
            seconds = time.perf_counter() - started
            rates[how].append(cells / seconds / 1e9)
            found[how] = best
            print(f"run {run}, {how}: {seconds:.3f} s, {rates[how][-1]:,.0f} GCUPS{said}", flush=True)
    same = all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
               for a, b in zip(found["resident"], found["streamed"]))
    share = statistics.median(rates["streamed"]) / statistics.median(rates["resident"])
    print(f"streamed at 1/{args.fraction:g} of the memory ({budget:,} bytes): {100 * share:.1f} % of the resident "
          f"GCUPS (medians); candidates {'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
