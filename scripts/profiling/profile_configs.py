#!/usr/bin/env python3
"""sw_profile.cu's configurations per query length: each (G, R) of ``PROFILE_CONFIGS`` (with its number of
passes) timed on a prefix of the longest benchmark query against the Swiss-Prot-like database, median of
``--repeats``, scores checked against the first configuration's; the row's best is marked and
``profile_config``'s choice named. For tuning ``profile_config``.

    python3 scripts/profiling/profile_configs.py [--lengths 144,222,567,729,4743,5147] [--db-size 570000]
        [--configs 8x32,16x32] [--repeats 2]

The configurations of a length are run in turn within each repeat (so that slow drifts of the machine
touch them alike).
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
    ap.add_argument("--lengths", default="144,222,375,567,729,850,4743,5147")
    ap.add_argument("--db-size", type=int, default=570_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--configs", help="GxR,... (default: every one of PROFILE_CONFIGS)")
    args = ap.parse_args()
    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {' '.join(sys.argv)}", flush=True)
    scoring = make_scoring("protein", "local")
    db = synthetic_database(args.db_size, 2)
    codes = encode_database(db, scoring)
    longest = max((scoring.encode(r) for r in read_fasta("data/queries_20_sw_benchmark.fasta")), key=len)
    searcher = S.ScanSearcher(codes, db.offsets, scoring, plan="profile")
    chosen = S.profile_config
    ok = True
    for m in (int(x) for x in args.lengths.split(",")):
        q = longest[:m]
        cells = m * db.total_length
        configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")] if args.configs \
            else S.PROFILE_CONFIGS
        times = {c: [] for c in configs}
        ref = None
        for rep in range(args.repeats + 1):  # the first round warms every configuration
            for g, r in configs:
                passes = -(-m // (g * r))
                S.profile_config = lambda n, g=g, r=r, p=passes: (g, r, p)
                t0 = time.perf_counter()
                got = searcher.scores(q)
                if rep:
                    times[(g, r)].append(time.perf_counter() - t0)
                if ref is None:
                    ref = got.copy()
                elif not np.array_equal(ref, got):
                    ok = False
        row = [(cells / statistics.median(times[(g, r)]) / 1e9, g, r, -(-m // (g * r))) for g, r in configs]
        best = max(row)
        S.profile_config = chosen
        g0, r0, p0 = chosen(m)
        print(f"m={m}: chosen {g0}x{r0} ({p0} passes); best {best[1]}x{best[2]} ({best[3]}) {best[0]:.0f} GCUPS; "
              + ", ".join(f"{g}x{r}/{p} {x:.0f}{'*' if (g, r) == (g0, r0) else ''}" for x, g, r, p in row), flush=True)
    print("scores equal" if ok else "SCORES DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
