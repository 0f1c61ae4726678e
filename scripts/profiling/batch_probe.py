"""Where the time of a batched traceback goes (10,000 pairs of ~1.5 kb, global DNA, as
benchmarks/gpu_batch_align.py): each launch's kernel timed by CUDA events recorded around it, the host's
submit and result, for the launch budgets (MiB) given as arguments.

    python3 scripts/profiling/batch_probe.py [budget_mib ...]
"""
import sys
import time

import numpy as np

sys.path.insert(0, "benchmarks")
from gpu_batch_align import related  # noqa: E402
from nwalign.cuda.batch import BatchAligner  # noqa: E402
from nwalign.scoring import make_scoring  # noqa: E402
import cupy as cp  # noqa: E402

rng = np.random.default_rng(11)
scoring = make_scoring("dna", "global")
bases = [rng.integers(4, size=1500).astype(np.uint8) for _ in range(64)]
pairs = [(bases[k % 64], related(rng, bases[k % 64], 0.1)) for k in range(10000)]
cells = sum(len(q) * len(t) for q, t in pairs)


class Timed:
    """The kernel function with an event before and after each launch (on the launch's stream)."""

    def __init__(self, func):
        self.func, self.events = func, []

    def __call__(self, *args, **kw):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        self.func(*args, **kw)
        b.record()
        self.events.append((a, b, time.perf_counter()))


for budget in [int(x) << 20 for x in (sys.argv[1:] or [2048])]:
    al = BatchAligner(scoring, max_memory=budget)
    al.submit(pairs[:4]).result()
    timed = al.func = Timed(al.func)
    for rep in range(6):
        cp.cuda.Device().synchronize()
        timed.events.clear()
        t0 = time.perf_counter()
        batch = al.submit(pairs)
        t1 = time.perf_counter()
        batch.result()
        t2 = time.perf_counter()
        ks = [cp.cuda.get_elapsed_time(a, b) for a, b, _ in timed.events]
        span = cp.cuda.get_elapsed_time(timed.events[0][0], timed.events[-1][1])
        queued = [1e3 * (t - t0) for _, _, t in timed.events]
        print(f"budget {budget >> 20} MiB, {len(batch.prepared)} launches of <= {al.launch_pairs} pairs: submit "
              f"{1e3*(t1-t0):.1f} ms, result {1e3*(t2-t1):.1f} ms, total {1e3*(t2-t0):.1f} ms = "
              f"{cells/(t2-t0)/1e9:.0f} GCUPS-eq; kernels {', '.join(f'{k:.1f}' for k in ks)} ms "
              f"(first start to last end {span:.1f} ms = {cells/span/1e6:.0f} GCUPS); queued at "
              f"{', '.join(f'{q:.1f}' for q in queued)} ms")

# The host's share: each _launch call timed, then one run under cProfile (top functions by own time).
import cProfile  # noqa: E402
import pstats  # noqa: E402

al = BatchAligner(scoring)
al.submit(pairs).result()
spent = []
launch = al._launch


def timed_launch(*args):
    t = time.perf_counter()
    try:
        return launch(*args)
    finally:
        spent.append(1e3 * (time.perf_counter() - t))


al._launch = timed_launch
for rep in range(2):
    spent.clear()
    t0 = time.perf_counter()
    batch = al.submit(pairs)
    t1 = time.perf_counter()
    batch.result()
    t2 = time.perf_counter()
    print(f"_launch calls {', '.join(f'{x:.1f}' for x in spent)} ms; submit {1e3*(t1-t0):.1f}, result {1e3*(t2-t1):.1f} ms")
prof = cProfile.Profile()
prof.enable()
al.submit(pairs).result()
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(25)
