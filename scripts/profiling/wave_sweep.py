"""Kernel time of the wavefront score passes over rows per lane (CUDA events, median of 3): wave_score.cu
(32-bit) at every height, wave_score16.cu (16-bit pairs) at 8, 12 and 16 rows in global mode.

Usage (device machine): python3 scripts/profiling/wave_sweep.py [--sizes 37000,100000] [--rows 4,8,12,16]
Each score is checked against wavefront.cu's score pass (the previous kernel) on the same pair.
"""
import argparse
import statistics

import cupy as cp

from nwalign.cuda.wavefront import PACKED_ROWS, Wavefront
from nwalign.scoring import make_scoring
from nwalign.sequences import mutate, random_records


def timed(fn, repeats=3):
    fn()
    times = []
    for _ in range(repeats):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        value = fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times), value


def random_pair(sc, size):
    """Seeded random DNA of ``size`` and a copy with ~10 % mutations, encoded for ``sc``: (q, t)."""
    (a,) = random_records([size], "dna", 1)
    return sc.encode(a), sc.encode(mutate(a, 0.1, 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="37000,100000")
    ap.add_argument("--rows", default="4,6,8,12,16")
    ap.add_argument("--modes", default="global")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        sc = make_scoring("dna", mode)
        for size in map(int, args.sizes.split(",")):
            q, t = random_pair(sc, size)
            old = Wavefront(cp, q, t, sc, 8, False)
            old.fast = False
            t_old, ref = timed(old.score)
            cells = len(q) * len(t)
            print(f"{mode} {size}: previous kernel {t_old * 1e3:8.2f} ms {cells / t_old / 1e9:7.0f} GCUPS score {ref}",
                  flush=True)
            for rows in map(int, args.rows.split(",")):
                for packed in (False, True) if mode == "global" and rows in PACKED_ROWS else (False,):
                    wf = Wavefront(cp, q, t, sc, rows, packed)
                    sec, score = timed(wf.score)
                    print(f"  rows {rows:2d} {'16-bit' if packed else '32-bit'}: {sec * 1e3:8.2f} ms "
                          f"{cells / sec / 1e9:7.0f} GCUPS {'ok' if score == ref else f'MISMATCH {score} != {ref}'}"
                          f"{' (overflowed)' if wf.overflows else ''}", flush=True)


if __name__ == "__main__":
    main()
