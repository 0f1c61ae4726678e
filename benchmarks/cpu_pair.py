#!/usr/bin/env python3
"""CPU engine GCUPS for one DNA pair, next to parasail and Biopython measured in the same run.

Usage: python benchmarks/cpu_pair.py --sizes 10000,30000 [--repeats 3] [--json results.json]

Inputs are seeded random DNA sequences (the papers' random ACGT input): query random, target the query
with about 10% substitutions and indels. Scoring: match 5, mismatch -4, gap open 10, extend 1, global.
Every timing is the median of --repeats runs after one warm-up; every peer's score is checked against
nwalign's. GCUPS = m * n / seconds / 1e9.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from nwalign.backends.cpu import align_codes, score_codes
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import Record
from nwalign.io.simulate import mutate


def timed(fn, repeats):
    fn()  # warm-up (JIT compilation, caches)
    times = []
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,30000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--skip-biopython-above", type=int, default=30000,
                    help="Biopython traceback is slow: skip it above this length")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    scoring = make_scoring("dna")
    rows = []
    try:
        import parasail
        pmatrix = parasail.matrix_create("ACGT", 5, -4)
    except ImportError:
        parasail = None
        print("parasail not installed: peer skipped (pip install parasail)", file=sys.stderr)
    try:
        from Bio import Align
        bio = Align.PairwiseAligner(mode="global", match_score=5, mismatch_score=-4, open_gap_score=-10,
                                    extend_gap_score=-1)
    except ImportError:
        bio = None
    for size in [int(s) for s in args.sizes.split(",")]:
        a = "".join(rng.choice(list("ACGT"), size=size))
        b = mutate(Record("q", "", a), 0.1, int(rng.integers(1 << 30))).seq
        q, t = scoring.encode_str(a), scoring.encode_str(b)
        cells = len(a) * len(b)
        cases = [
            ("nwalign cpu", "score", lambda: score_codes(q, t, scoring.matrix, 10, 1, 0)),
            ("nwalign cpu", "traceback", lambda: align_codes(q, t, scoring.matrix, 10, 1, 0)[0]),
        ]
        if parasail:
            cases += [
                # 16-bit kernels saturate on related genome-length pairs; *_sat retries in 32 bits.
                ("parasail nw_striped_sat", "score", lambda: parasail.nw_striped_sat(a, b, 10, 1, pmatrix).score),
                ("parasail nw_striped_32", "score", lambda: parasail.nw_striped_32(a, b, 10, 1, pmatrix).score),
                ("parasail nw_scan_32", "score", lambda: parasail.nw_scan_32(a, b, 10, 1, pmatrix).score),
                ("parasail nw_trace_striped_32", "traceback",
                 lambda: parasail.nw_trace_striped_32(a, b, 10, 1, pmatrix).score),
            ]
        if bio:
            cases.append(("biopython PairwiseAligner", "score", lambda: int(bio.score(a, b))))
            if size <= args.skip_biopython_above:
                cases.append(("biopython PairwiseAligner", "traceback",
                              lambda: int(bio.align(a, b)[0].score)))
        reference = None
        for name, kind, fn in cases:
            try:
                seconds, score = timed(fn, args.repeats)
            except MemoryError:
                print(f"{name} {kind} {size}: out of memory, skipped", file=sys.stderr)
                continue
            reference = score if reference is None else reference
            row = dict(engine=name, kind=kind, query_length=len(a), target_length=len(b), seconds=seconds,
                       gcups=cells / seconds / 1e9, score=int(score), verified=int(score) == reference)
            rows.append(row)
            print(f"{name:30s} {kind:9s} {len(a):>7} x {len(b):<7} {seconds:9.3f} s {row['gcups']:8.3f} GCUPS "
                  f"score {score} {'ok' if row['verified'] else 'MISMATCH'}", flush=True)
    meta = dict(machine=platform.processor() or platform.machine(), python=platform.python_version(),
                date=time.strftime("%Y-%m-%d"), command=" ".join(sys.argv))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(dict(meta=meta, rows=rows), fh, indent=1)
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
