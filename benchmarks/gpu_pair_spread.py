#!/usr/bin/env python3
"""One long pair's 16-bit score pass on 1, 2, 4 ... GPUs in one process (no start-up, warm kernels):
seconds, GCUPS and each GPU's kernel time, the score checked equal on every count.

    python3 benchmarks/gpu_pair_spread.py [--length 6000000] [--chunks 64,256]

``--chunks``: bands per chunk to try besides the planned one (nwalign.backends.cuda.wavespread.chunk_bands).
"""

import argparse
import logging
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--length", type=int, default=6_000_000, help="query and target length (the target: the query with 1 %% of its positions redrawn)")
    parser.add_argument("--chunks", default="", help="bands per chunk to try too, comma-separated")
    args = parser.parse_args()
    import cupy

    from nwalign.backends.cuda.wavefront import Wavefront
    from nwalign.scoring.schemes import make_scoring

    logging.basicConfig(format="  %(message)s")
    logging.getLogger("nwalign").setLevel(logging.DEBUG)
    logging.getLogger("nwalign").addFilter(lambda r: "bands in chunks" in r.getMessage())
    rng = np.random.default_rng(5)
    scoring = make_scoring("dna")
    q = rng.integers(0, 4, args.length, dtype=np.uint8)
    t = q.copy()
    hit = rng.random(args.length) < 0.01  # about 1 % of the positions redrawn
    t[hit] = rng.integers(0, 4, int(hit.sum()), dtype=np.uint8)
    gpus = cupy.cuda.runtime.getDeviceCount()
    counts = [1] + [k for k in (2, 4, 8, 16) if k <= gpus]
    chunks = [None] + [int(c) for c in args.chunks.split(",") if c]
    scores = set()
    for count in counts:
        for chunk in (chunks if count > 1 else [None]):
            places = tuple(range(count)) if count > 1 else ()
            Wavefront(cupy, q[:300_000], t[:300_000], scoring, spread=places).score()  # warm: modules, peers
            wf = Wavefront(cupy, q, t, scoring, spread=places)
            if wf.spread is not None:
                wf.spread.chunk = chunk
            cupy.cuda.Device(0).synchronize()
            start = time.perf_counter()
            scores.add(wf.score())
            seconds = time.perf_counter() - start
            print(f"{args.length} x {args.length}, {count} GPU(s), chunk {chunk or 'planned'}: {seconds:.3f} s, "
                  f"{args.length ** 2 / seconds / 1e9:,.0f} GCUPS", flush=True)
    print("scores equal on every count" if len(scores) == 1 else f"SCORES DIFFER: {sorted(scores)}")


if __name__ == "__main__":
    main()
