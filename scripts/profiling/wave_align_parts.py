"""Where a wavefront alignment's time goes: score pass, direction-storing pass, GPU traceback (CUDA events).

Usage (device machine): python3 scripts/profiling/wave_align_parts.py [--sizes 37000,100000] [--modes global]
For each pair: the score-only pass, the direction-storing pass of wave_score.cu and of wavefront.cu (the
previous one), the traceback kernel alone over the stored directions, and the whole ``Wavefront.align``
(with all directions on the GPU) for both passes; the two alignments must be identical.
"""
import argparse

import cupy as cp
import numpy as np

from nwalign.cuda.wavefront import Wavefront
from nwalign.scoring import make_scoring
from wave_sweep import random_pair, timed  # shared with the score sweep (same folder)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="37000,100000")
    ap.add_argument("--modes", default="global")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        sc = make_scoring("dna", mode)
        for size in map(int, args.sizes.split(",")):
            q, t = random_pair(sc, size)
            m, n = len(q), len(t)
            cells = m * n
            line = f"{mode} {m} x {n}:"
            results, aligns = {}, {}
            for label, fast in (("wave_score", True), ("wavefront.cu", False)):
                wf = Wavefront(cp, q, t, sc, 6)
                wf.fast = fast
                sec, _ = timed(lambda: wf.launch(0, m, n, wf.border_row, wf.neg_row, True, False)[0] is not None)
                dirs, _ = wf.launch(0, m, n, wf.border_row, wf.neg_row, True, False)
                io = cp.zeros(5, dtype=cp.int32)
                ops = cp.empty(m + n, dtype=cp.uint8)

                def walk():
                    io.set(np.array([m, n, 0, 0, 0], dtype=np.int32))
                    wf.trace(dirs, 0, n, io, ops)

                t_trace, _ = timed(walk)
                dirs = None  # free the directions before align() stores its own
                cp.get_default_memory_pool().free_all_blocks()
                t_align, aln = timed(lambda: wf.align(1 << 40))
                results[label], aligns[label] = aln, t_align
                line += (f"\n  {label:12s}: directions {sec * 1e3:8.2f} ms ({cells / sec / 1e9:5.0f} GCUPS), "
                         f"traceback {t_trace * 1e3:7.2f} ms, align {t_align * 1e3:8.2f} ms")
            wf = Wavefront(cp, q, t, sc, 6)
            t_score, score = timed(wf.score)
            same = all(np.array_equal(np.asarray(x), np.asarray(y)) if isinstance(x, np.ndarray) else x == y
                       for x, y in zip(results["wave_score"], results["wavefront.cu"]))
            line += (f"\n  score only  : {t_score * 1e3:8.2f} ms ({cells / t_score / 1e9:5.0f} GCUPS); alignments "
                     f"{'identical' if same else 'DIFFER'}; score {score} vs {results['wave_score'][0]}; "
                     f"align / score {aligns['wave_score'] / t_score:.1f}x "
                     f"(previous pass {aligns['wavefront.cu'] / t_score:.1f}x)")
            print(line, flush=True)


if __name__ == "__main__":
    main()
