"""Kernel time of wave_score.cu's score pass over rows per lane (CUDA events, median of 3).

Usage (device machine): python3 scripts/profiling/wave_sweep.py [--sizes 37000,100000] [--rows 4,8,12,16]
Each score is checked against wavefront.cu's score pass (the previous kernel) on the same pair.
"""
import argparse
import statistics

import cupy as cp

from nwalign.cuda.wavefront import Wavefront
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="37000,100000")
    ap.add_argument("--rows", default="4,6,8,12,16")
    ap.add_argument("--modes", default="global")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        sc = make_scoring("dna", mode)
        for size in map(int, args.sizes.split(",")):
            (a,) = random_records([size], "dna", 1)
            b = mutate(a, 0.1, 2)
            q, t = sc.encode(a), sc.encode(b)
            old = Wavefront(cp, q, t, sc, 8)
            old.fast = False
            t_old, ref = timed(old.score)
            cells = len(q) * len(t)
            print(f"{mode} {size}: previous kernel {t_old * 1e3:8.2f} ms {cells / t_old / 1e9:7.0f} GCUPS score {ref}",
                  flush=True)
            for rows in map(int, args.rows.split(",")):
                wf = Wavefront(cp, q, t, sc, rows)
                sec, score = timed(wf.score)
                print(f"  rows {rows:2d}: {sec * 1e3:8.2f} ms {cells / sec / 1e9:7.0f} GCUPS "
                      f"{'ok' if score == ref else f'MISMATCH {score} != {ref}'}", flush=True)


if __name__ == "__main__":
    main()
