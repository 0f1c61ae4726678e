"""The GPU's banded kernel (nwalign/backends/cuda/kernels/banded_align.cu) on genome pairs, against the CPU engine.

For the first ``--count`` sequences of a FASTA (default: 100 of the 418 SARS-CoV-2 genomes, 4,950 pairs):
1. the optimal global scores of every pair on the GPU (the all-pairs score kernels);
2. banded scores alone at half-widths 32, 64, 128, 256 and each pair's widest band (MID ``--min-identity``):
   kernel time, band cells per second, how many equal the optimum, how many reach the bound of
   :mod:`nwalign.plan.bands` (and that every one of those equals the optimum: the bound is checked here on
   real data);
3. the survivors of the identity bound aligned in their doubling bands on the GPU
   (:class:`nwalign.backends.cuda.banded.BandedAligner`: wall and kernel time) and, for ``--cpu`` of them, on the CPU
   engine (:func:`nwalign.backends.cpu.banded.align_global_banded`, every core), compared path for path.

    python3 benchmarks/gpu_banded.py data/sars-cov-2_418_nextstrain.fasta.gz --count 100 --cpu 2000
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def main() -> int:
    from nwalign.backends.aligner import Aligner
    from nwalign.backends.engine import encode_all
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import read_fasta

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fasta")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--min-identity", type=float, default=0.99)
    ap.add_argument("--cpu", type=int, default=1000, help="survivors also aligned on the CPU engine (-1: all)")
    args = ap.parse_args()

    import cupy as cp

    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; {time.strftime('%Y-%m-%d %H:%M')}")
    recs = read_fasta(args.fasta)[:args.count]
    s = make_scoring("dna", "global", None, None, None, None, None)
    enc = encode_all(recs, s, args.fasta)
    codes = [e.codes for e in enc]
    threads = os.cpu_count() or 1

    t0 = time.perf_counter()
    stats: dict = {}
    ij, opt = [], []
    for pairs, scores in Aligner(s, "cuda", 0, threads, announce=False).score_pairs(codes, None, "auto", None, None,
                                                                                      stats, None):
        ij.append(pairs)
        opt.append(scores)
    ij, opt = np.concatenate(ij).astype(np.int64), np.concatenate(opt)
    wall = time.perf_counter() - t0
    print(f"{len(ij)} pairs, full scores ({stats['kernel']}): {wall:.2f} s wall, {stats['gpu_seconds']:.2f} s kernel, "
          f"{stats['cells'] / stats['gpu_seconds'] / 1e9:.0f} GCUPS")

    ba, pairs, wmax, bound, ok = _band_sweep(s, codes, ij, opt, args.min_identity)
    ok &= _survivors(ba, pairs, opt, wmax, bound, args.cpu, threads)
    print("all checks passed" if ok else "CHECKS FAILED")
    return 0 if ok else 1


def _band_sweep(s, codes, ij, opt, min_identity):
    """Banded scores alone at several half-widths: time, and how many equal or are proved the optimum."""
    from nwalign.jobs.allpairs.run import identity_bound
    from nwalign.plan.bands import OutsideBound, widest_band
    from nwalign.backends.cuda.banded import BandedAligner

    L = np.array([len(c) for c in codes], dtype=np.int64)
    i, j = ij[:, 0], ij[:, 1]
    m, n = L[i], L[j]
    wmax = np.array([widest_band(a, b, min_identity) for a, b in zip(m.tolist(), n.tolist())])
    bound = np.array([identity_bound(a, b, min_identity, s) for a, b in zip(m.tolist(), n.tolist())])
    counts = np.zeros((len(codes), s.matrix.shape[0]), dtype=np.int64)
    for k, c in enumerate(codes):
        counts[k] = np.bincount(c, minlength=s.matrix.shape[0])
    outside = OutsideBound(s, counts)
    ba = BandedAligner(s, 0)
    pairs = [(codes[a], codes[b]) for a, b in ij.tolist()]
    ok = True
    for label in ("32", "64", "128", "256", "widest"):
        w = wmax if label == "widest" else np.minimum(int(label), wmax)
        k0, c0 = ba.kernel_seconds, ba.cells
        t0 = time.perf_counter()
        B = ba.scores(pairs, w.tolist())
        wall = time.perf_counter() - t0
        kt, cells = ba.kernel_seconds - k0, ba.cells - c0
        ub = outside(i, j, m, n, w)
        proved = B >= ub
        bad_above = int((B > opt).sum())
        bad_proof = int((proved & (B != opt)).sum())
        ok &= bad_above == 0 and bad_proof == 0
        print(f"band {label:>6}: {wall:.2f} s wall, {kt:.2f} s kernel, {cells / kt / 1e9:.0f} G band cells/s; "
              f"= optimum {int((B == opt).sum())}, proved by the bound {int(proved.sum())} "
              f"(of which wrong: {bad_proof}), above the optimum: {bad_above}")

    return ba, pairs, wmax, bound, ok


def _survivors(ba, pairs, opt, wmax, bound, cpu_count, threads) -> bool:
    """The survivors of the identity bound aligned in doubling bands on the GPU, and some on the CPU engine."""
    from nwalign.backends.cpu.banded import align_global_banded

    s = ba.scoring
    keep = opt >= bound
    ks = np.flatnonzero(keep)
    print(f"survivors of the identity bound: {ks.size}")
    k0 = ba.kernel_seconds
    import cProfile
    import pstats

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    got = ba.align([pairs[k] for k in ks], opt[ks].tolist(), wmax[ks].tolist())
    prof.disable()
    wall = time.perf_counter() - t0
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    print(f"GPU doubling bands: {wall:.2f} s wall, {ba.kernel_seconds - k0:.2f} s kernel, "
          f"{ba.launches} launches so far; None (no optimal path within the widest band): "
          f"{sum(p is None for p in got)}")
    sample = ks if cpu_count < 0 else ks[:cpu_count]

    def cpu(k):
        return align_global_banded(pairs[k][0], pairs[k][1], s.matrix, s.gap_open, s.gap_extend, int(opt[k]),
                                   int(wmax[k]))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        ref = list(pool.map(cpu, sample.tolist()))
    wall = time.perf_counter() - t0
    same = 0
    for x, r in zip(range(sample.size), ref):
        g = got[x]
        if (g is None and r is None) or (g is not None and r is not None and g[:5] == r[:5]
                                         and np.array_equal(g[5], r[5])):
            same += 1
    print(f"CPU engine ({threads} threads) on {sample.size}: {wall:.2f} s; identical paths: {same} of {sample.size}")
    return same == sample.size


if __name__ == "__main__":
    raise SystemExit(main())
