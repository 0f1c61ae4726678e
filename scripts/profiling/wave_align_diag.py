import sys, time, logging
import cupy as cp
from nwalign.cuda.wavefront import Wavefront
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta
logging.basicConfig(level=logging.INFO, format="%(relativeCreated)8.0f ms %(message)s")
scoring = make_scoring("dna")
q = scoring.encode_str(read_fasta(sys.argv[1])[0].seq)
t = scoring.encode_str(read_fasta(sys.argv[2])[0].seq)
pool = cp.get_default_memory_pool()
for label, warm in (("fresh, align only", False), ("score twice, free_all_blocks, align", True)):
    wf = Wavefront(cp, q, t, scoring)
    if warm:
        wf.score(); wf.score()
    free = cp.cuda.runtime.memGetInfo()[0] + pool.free_bytes()
    if warm:
        pool.free_all_blocks()
    cp.cuda.Device().synchronize(); t0 = time.perf_counter()
    path = wf.align(int(free * 0.4))
    cp.cuda.Device().synchronize()
    print(label, f"{time.perf_counter() - t0:.2f} s", path[0], flush=True)
    del wf, path
    pool.free_all_blocks()
