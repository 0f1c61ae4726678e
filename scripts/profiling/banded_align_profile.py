"""Where BandedAligner.align spends its time on genome pairs: the optimal scores of all pairs of the first
COUNT genomes from bands (nwalign.bands.optimal_scores on the GPU), then align() of the survivors of the
99 % identity bound under cProfile (every thread's time lands in the main thread's waits: look at tottime).
    python3 scripts/profiling/banded_align_profile.py data/sars-cov-2_418_nextstrain.fasta.gz [COUNT]"""
import cProfile
import pstats
import sys
import time

import numpy as np

from nwalign.allvsall import identity_bound
from nwalign.bands import OutsideBound, optimal_scores, widest_band
from nwalign.cuda.banded import BandedAligner
from nwalign.engine import encode_all
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta

count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
s = make_scoring("dna", "global")
codes = [e.codes for e in encode_all(read_fasta(sys.argv[1])[:count], s, sys.argv[1])]
ij = np.array([(x, y) for x in range(count) for y in range(x + 1, count)], dtype=np.int64)
i, j = ij[:, 0], ij[:, 1]
L = np.array([len(c) for c in codes])
m, n = L[i], L[j]
bound = OutsideBound(s, np.stack([np.bincount(c, minlength=s.matrix.shape[0]) for c in codes]).astype(np.int64))
ba = BandedAligner(s, 0)
t = time.perf_counter()
opt, _ = optimal_scores(bound, i, j, m, n, lambda ks, w: ba.scores([(codes[i[k]], codes[j[k]]) for k in ks], w.tolist()))
print(f"{len(ij)} optimal scores from bands in {time.perf_counter() - t:.2f} s")
keep = [k for k in range(len(ij)) if opt[k] >= identity_bound(int(m[k]), int(n[k]), 0.99, s)]
pairs = [(codes[i[k]], codes[j[k]]) for k in keep]
w_max = [widest_band(int(m[k]), int(n[k]), 0.99) for k in keep]
k0, l0 = ba.kernel_seconds, ba.launches
prof = cProfile.Profile()
t = time.perf_counter()
prof.enable()
paths = ba.align(pairs, opt[keep].tolist(), w_max)
prof.disable()
print(f"{len(keep)} survivors aligned in {time.perf_counter() - t:.2f} s, kernel {ba.kernel_seconds - k0:.2f} s, "
      f"{ba.launches - l0} launches, {sum(p is None for p in paths)} without a path in the widest band")
pstats.Stats(prof).sort_stats("tottime").print_stats(25)
