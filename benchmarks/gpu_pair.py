#!/usr/bin/env python3
"""GCUPS of every CUDA pair kernel, each result checked against the CPU engine.

Usage: python benchmarks/gpu_pair.py [--sizes 10000,37000,100000] [--traceback-sizes 10000,37000]
                                     [--kernels all|NAME,...] [--repeats 3] [--json FILE]

Inputs: seeded random DNA, target = query with ~10 % substitutions and indels; global mode, +5/-4,
gaps 10/1 (the papers' random ACGT input). Time = host wall time of the kernel stage after the device is
synchronised (median of --repeats after a warm-up of at least 0.5 s, which also compiles); traceback runs include the
copy of the direction bytes to the host (or the GPU traceback) and the host traceback. GCUPS = m * n / seconds / 1e9.
The JSON also records call_median_s: the whole run_kernel call, with uploads and buffer set-up (printed as "call").
(Before 2026-11-22 the printed and stored time was the whole call.)
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

from nwalign.backends.cpu import score_codes
from nwalign.backends.cuda import BLOCK_SHAPES, KERNELS, device_info
from nwalign.backends.cuda.pair import Options, run_kernel
from nwalign.records.alignment import Alignment, rescore
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import Record
from nwalign.io.simulate import mutate

CPU_CHECK_CELLS = 2 * 10**10


def measure(q, t, scoring, traceback, opts, repeats):
    # Warm-up: compilation and allocation, then at least 0.5 s of runs so that the GPU is back at its
    # working clock after the CPU reference (an idle GPU measured ~8% slower on a 10 ms pass).
    t_end = time.perf_counter() + 0.5
    run_kernel(q, t, scoring, traceback, opts)
    while time.perf_counter() < t_end:
        run_kernel(q, t, scoring, traceback, opts)
    # Two host wall times per run: the kernel stage as run_kernel reports it (from a synchronised device
    # to the synchronised end of the pass, traceback included), and the whole call (uploads, buffers, set-up).
    times, calls, result = [], [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result, stage = run_kernel(q, t, scoring, traceback, opts)
        calls.append(time.perf_counter() - t0)
        times.append(stage)
    return statistics.median(times), min(times), max(times), result, statistics.median(calls)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,37000,100000")
    ap.add_argument("--traceback-sizes", default="10000,37000")
    ap.add_argument("--kernels", default="all")
    ap.add_argument("--block-sweep-size", type=int, default=37000,
                    help="size at which every diagonal-block shape is timed (0 = skip)")
    ap.add_argument("--rows16", default="", help="sizes timed for wavefront with 4, 8, 12 and 16 rows per lane (the default is 6)")
    ap.add_argument("--large", default="", help="sizes timed for the wavefront kernel only, e.g. 1000000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    kernels = list(KERNELS) if args.kernels == "all" else args.kernels.split(",")
    scoring = make_scoring("dna")
    rng = np.random.default_rng(37)
    info = device_info()
    device = info[0]["name"] if info else "none"
    print(f"device: {device}; date {time.strftime('%Y-%m-%d')}; command: {' '.join(sys.argv)}", flush=True)
    inputs = {}

    def pair(size):
        if size not in inputs:
            a = "".join(rng.choice(list("ACGT"), size=size))
            b = mutate(Record("q", "", a), 0.1, int(rng.integers(1 << 30))).seq
            q, t = scoring.encode_str(a), scoring.encode_str(b)
            # The CPU engine checks every result up to 2e10 cells; beyond, that would take hours, and the
            # check is consistency: the score-only kernel, the alignment's score and its rescored columns.
            ref = score_codes(q, t, scoring.matrix, 10, 1, 0) if size * size <= CPU_CHECK_CELLS else None
            inputs[size] = [q, t, ref]
        return inputs[size]

    jobs = []
    for size in [int(s) for s in args.sizes.split(",") if s]:
        jobs += [(k, (32, 32), True, size, False) for k in kernels]
    for size in [int(s) for s in args.rows16.split(",") if s]:
        jobs += [(f"wavefront-r{r}", (32, 32), True, size, False) for r in (4, 8, 12, 16)]
    if args.block_sweep_size and "diagonal-block" in kernels:
        jobs += [("diagonal-block", shape, shared, args.block_sweep_size, False)
                 for shape in BLOCK_SHAPES for shared in (True, False) if (shape, shared) != ((32, 32), True)]
    for size in [int(s) for s in args.traceback_sizes.split(",") if s]:
        jobs += [(k, (32, 32), True, size, True) for k in kernels]
    for size in [int(s) for s in args.large.split(",") if s]:
        jobs += [("wavefront", (32, 32), True, size, tb) for tb in (False, True)]
    rows = []
    ok_all = True
    for kernel, block, shared, size, traceback in jobs:
        entry = pair(size)
        q, t, expected = entry
        opts = Options(kernel=kernel, block=block, shared=shared)
        if kernel.startswith("wavefront-r"):  # rows per lane other than the default 6
            opts = Options(kernel="wavefront", rows_per_lane=int(kernel[len("wavefront-r"):]))
        median, low, high, result, call = measure(q, t, scoring, traceback, opts, args.repeats)
        if expected is None:  # first (score-only) run of a large size sets the reference
            entry[2] = expected = result[0]
        verified = result[0] == expected
        if traceback:  # the reported columns must give back the score
            aln = Alignment("q", "t", "global", result[0], len(q), len(t), result[1], result[2], result[3],
                            result[4], result[5])
            verified &= rescore(aln, q, t, scoring.matrix, 10, 1) == result[0]
        ok_all &= verified
        cells = len(q) * len(t)
        row = dict(workload="pair", kernel=kernel, block=f"{block[0]}x{block[1]}" if kernel == "diagonal-block" else "",
                   shared=shared if kernel == "diagonal-block" else None, query_length=len(q), target_length=len(t),
                   traceback=traceback, median_s=median, min_s=low, max_s=high, call_median_s=call,
                   gcups=cells / median / 1e9,
                   score=int(result[0]), verified=bool(verified), device=device, repeats=args.repeats)
        rows.append(row)
        print(f"{kernel:19s} {row['block']:7s} {'shared' if shared else 'global':6s} {len(q):>7}x{len(t):<7} "
              f"{'align' if traceback else 'score':5s} {median:9.4f} s {row['gcups']:9.3f} GCUPS (call {call:.4f} s) "
              f"{'ok' if verified else 'MISMATCH ' + str(result[0]) + ' != ' + str(expected)}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=info, date=time.strftime("%Y-%m-%d"), command=" ".join(sys.argv), rows=rows), fh,
                      indent=1)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
