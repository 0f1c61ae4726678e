"""Host time of a search's per-query top-k (nwalign.dbsearch.top_hits) over N scores, against a partition
of every score (the method before session 10) and a full stable sort, on this machine's CPU.

    python3 scripts/profiling/top_hits.py [--count 570000] [--top 10]
"""

import argparse
import time

import numpy as np

from nwalign.dbsearch import top_hits


def partition_all(scores, top):
    kth = np.partition(scores, scores.size - top)[scores.size - top]
    cand = np.flatnonzero(scores >= kth)
    return cand[np.lexsort((cand, -scores[cand]))][:top]


def timed(fn, repeats=50):
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=570_000)
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    for dtype in (np.int32, np.int64):
        scores = rng.gamma(2.0, 20.0, size=args.count).astype(dtype)  # Smith-Waterman-like: many low, few high
        assert np.array_equal(top_hits(scores, args.top, None), partition_all(scores, args.top))
        ours = timed(lambda: top_hits(scores, args.top, None))
        print(f"{args.count} {dtype.__name__} scores, top {args.top}: top_hits {ours:.3f} ms, "
              f"partition of all {timed(lambda: partition_all(scores, args.top)):.3f} ms, "
              f"full sort {timed(lambda: np.argsort(-scores, kind='stable')[:args.top], 5):.3f} ms")


if __name__ == "__main__":
    main()
