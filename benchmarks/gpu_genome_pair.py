"""One genome-scale global alignment on the GPU, part by part (linear-space traceback).

For a query and a target FASTA (first record of each): the score-only pass, then the alignment with CIGAR
in linear space with windowed blocks (what ``nwalign pair --backend cuda`` does when the directions of all
cells do not fit), and with ``--whole`` the same traceback over whole rows (the method before windows) for
comparison; every alignment is rescored from its columns and the two are compared column for column. Prints
wall times (a synchronised device around each call), GCUPS over the full matrix, peak device memory taken
from CuPy's pool and the process's peak RSS.

    python3 benchmarks/gpu_genome_pair.py ecoli.fa ecoli_mut.fa [--whole] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def main() -> int:

    from nwalign.backends.cuda.wavefront import Wavefront
    from nwalign.ops import columns_score
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import read_fasta

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("query")
    ap.add_argument("target")
    ap.add_argument("--whole", action="store_true", help="also trace over whole rows and compare")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    import cupy as cp  # after the options: --help needs no GPU

    scoring = make_scoring("dna")
    q = scoring.encode_str(read_fasta(args.query)[0].seq)
    t = scoring.encode_str(read_fasta(args.target)[0].seq)
    m, n = len(q), len(t)
    pool = cp.get_default_memory_pool()
    dev = cp.cuda.Device()
    out = {"device": cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(), "m": m, "n": n,
           "date": time.strftime("%Y-%m-%d")}

    def timed(label, fn):
        dev.synchronize()
        t0 = time.perf_counter()
        value = fn()
        dev.synchronize()
        out[label] = round(time.perf_counter() - t0, 3)
        return value

    from nwalign.backends.cuda import modules
    from nwalign.backends.cuda.wavefront import WAVE_SCORE_NAMES, WAVEFRONT_NAMES, WINDOW_NAME

    # Compile (or load from CuPy's cache) every kernel the alignment launches before anything is timed: on
    # a fresh machine NVRTC compiles wave_score.cu's instantiations once (tens of seconds).
    modules.function("wave_score", WINDOW_NAME, name_expressions=WAVE_SCORE_NAMES)
    modules.function("wavefront", "wave_trace", name_expressions=WAVEFRONT_NAMES)
    wf = Wavefront(cp, q, t, scoring)
    wf.score()  # compile and warm up
    score = timed("score_s", wf.score)
    free = cp.cuda.runtime.memGetInfo()[0] + pool.free_bytes()
    budget = int(free * 0.4)
    out["budget_bytes"] = budget
    pool.free_all_blocks()
    path = timed("align_windowed_s", lambda: wf.align(budget))
    out["peak_pool_bytes_windowed"] = pool.total_bytes()
    out["score"], out["align_score"] = score, path[0]
    out["rescored"] = columns_score(path[5], q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend)
    out["columns"] = int(path[5].size)
    out["gcups_score"] = round(m * n / out["score_s"] / 1e9, 1)
    out["gcups_align_windowed"] = round(m * n / out["align_windowed_s"] / 1e9, 1)
    ok = score == path[0] == out["rescored"]
    if args.whole:
        pool.free_all_blocks()
        whole = timed("align_whole_rows_s", lambda: wf.align(budget, windowed=False))
        out["identical_to_whole_rows"] = bool(np.array_equal(whole[5], path[5])) and whole[0] == path[0]
        ok &= whole[0] == score
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)
    out["ok"] = bool(ok)
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
