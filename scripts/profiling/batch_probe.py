"""Kernel time of the batch traceback on 10,000 pairs of ~1.5 kb (CUDA events), one launch vs the default launches."""
import sys, time
import numpy as np
sys.path.insert(0, "benchmarks")
from gpu_batch_align import related
from nwalign.cuda.batch import BatchAligner
from nwalign.scoring import make_scoring
import cupy as cp

rng = np.random.default_rng(11)
scoring = make_scoring("dna", "global")
bases = [rng.integers(4, size=1500).astype(np.uint8) for _ in range(64)]
pairs = [(bases[k % 64], related(rng, bases[k % 64], 0.1)) for k in range(10000)]
cells = sum(len(q) * len(t) for q, t in pairs)
for budget in (1 << 30, 16 << 30):
    al = BatchAligner(scoring, max_memory=budget)
    al.submit(pairs[:4]).result()
    for rep in range(3):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        ev0 = cp.cuda.Event(); ev0.record(al.stream)
        batch = al.submit(pairs)
        t1 = time.perf_counter()
        ev1 = cp.cuda.Event(); ev1.record(al.stream)
        ev1.synchronize()
        t2 = time.perf_counter()
        got = batch.result()
        t3 = time.perf_counter()
        k = cp.cuda.get_elapsed_time(ev0, ev1) / 1e3
        print(f"budget {budget >> 20} MiB, {len(batch.launches)} launches: GPU (events) {1e3*k:.1f} ms = {cells/k/1e9:.0f} GCUPS; "
              f"submit {1e3*(t1-t0):.1f} ms, wait {1e3*(t2-t1):.1f} ms, paths {1e3*(t3-t2):.1f} ms, total {1e3*(t3-t0):.1f} ms")
