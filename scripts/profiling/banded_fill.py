"""The CPU engine's banded alignment (allpairs' identity filter) on SARS-CoV-2 genome pairs: the
row-by-row int64 fill against the anti-diagonal float32 one (nwalign.cpu.banded), same results.

    python3 scripts/profiling/banded_fill.py [--genomes 7] [--min-identity 0.99]
"""

import argparse
import math
import time

import numpy as np

import nwalign.cpu.banded as banded
from nwalign.cpu import score_codes
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--genomes", type=int, default=7)
    ap.add_argument("--min-identity", type=float, default=0.99)
    args = ap.parse_args()
    scoring = make_scoring("dna", "global")
    s = scoring
    codes = [s.encode(r) for r in read_fasta("data/sars-cov-2_418_nextstrain.fasta.gz")[:args.genomes]]
    pairs = [(codes[i], codes[j]) for i in range(len(codes)) for j in range(i + 1, len(codes))]
    optima = [score_codes(q, t, s.matrix, s.gap_open, s.gap_extend, 0) for q, t in pairs]
    real = banded.fits_float32
    results, times = {}, {}
    for name, lanes in (("anti-diagonal float32", real), ("row-by-row int64", lambda m, n, a: False)) * 2:
        banded.fits_float32 = lanes
        start = time.perf_counter()
        out = []
        for (q, t), opt in zip(pairs, optima):
            m, n = len(q), len(t)
            w_max = max(0, math.floor(((1 - args.min_identity) * (m + n) - abs(m - n)) / 2))
            out.append(banded.align_global_banded(q, t, s.matrix, s.gap_open, s.gap_extend, opt, w_max))
        times[name] = min(times.get(name, math.inf), time.perf_counter() - start)
        results[name] = out
    banded.fits_float32 = real
    a, b = results.values()
    same = all((x is None and y is None) or (x is not None and y is not None and x[:5] == y[:5]
                                             and np.array_equal(x[5], y[5])) for x, y in zip(a, b))
    for name, seconds in times.items():
        print(f"{name}: {seconds:.3f} s for {len(pairs)} pairs ({1e3 * seconds / len(pairs):.1f} ms a pair)")
    print(f"identical alignments: {same}; aligned within the band: {sum(x is not None for x in a)}")


if __name__ == "__main__":
    main()
