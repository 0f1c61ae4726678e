"""Batched GPU alignment with traceback (kernels/batch_align.cu) of many pairs at once: N pairs of
~L-residue related DNA sequences (10 % substitutions and short indels, seeded), global mode, +5/-4, gaps
10/1; cells of the full matrices per second ("GCUPS-equivalent"), and a sample checked against the CPU
engine (identical alignments). Then `nwalign allpairs` of the 100 16S rRNA genes with a distance matrix
(every pair aligned) on the GPU and on the CPU engine.

    python3 benchmarks/gpu_batch_align.py [--pairs 10000] [--length 1500] [--check 100]
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from nwalign.backends.cpu import align_codes
from nwalign.backends.cuda import device_info
from nwalign.backends.cuda.batch import BatchAligner
from nwalign.scoring.schemes import make_scoring


def related(rng, base: np.ndarray, rate: float) -> np.ndarray:
    out = []
    for c in base.tolist():
        r = rng.random()
        if r < rate * 0.8:
            out.append(int(rng.integers(4)))
        elif r < rate * 0.9:
            continue  # deletion
        elif r < rate:
            out += [c, int(rng.integers(4))]  # insertion
        else:
            out.append(c)
    return np.asarray(out, dtype=np.uint8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10000)
    ap.add_argument("--length", type=int, default=1500)
    ap.add_argument("--check", type=int, default=100, help="pairs compared with the CPU engine")
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    scoring = make_scoring("dna", "global")
    bases = [rng.integers(4, size=args.length).astype(np.uint8) for _ in range(64)]
    pairs = [(bases[k % 64], related(rng, bases[k % 64], 0.1)) for k in range(args.pairs)]
    cells = sum(len(q) * len(t) for q, t in pairs)
    aligner = BatchAligner(scoring)
    aligner.submit(pairs).result()  # module load, and the pools of device and page-locked memory grown
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        got = aligner.submit(pairs).result()
        times.append(time.perf_counter() - t0)
    # Where the time goes: the host's submit (sizes, order, the first launches queued), then result (each
    # launch waited for, copied back, turned into paths, the next launch queued).
    t0 = time.perf_counter()
    batch = aligner.submit(pairs)
    t1 = time.perf_counter()
    batch.result()
    t2 = time.perf_counter()
    print(f"split: submit {1e3 * (t1 - t0):.0f} ms, result {1e3 * (t2 - t1):.0f} ms ({len(batch.prepared)} launches "
          f"of at most {aligner.launch_pairs} pairs)")
    want = [align_codes(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend, scoring.mode_code)
            for q, t in pairs[:args.check]]
    same = all(g[:5] == w[:5] and np.array_equal(g[5], w[5]) for g, w in zip(got, want))
    best, median = min(times), sorted(times)[len(times) // 2]
    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {args.pairs} pairs of ~{args.length} "
          f"nt, {cells / 1e9:.2f} G cells")
    print(f"GPU batch (submit + result, alignments on the host), after one warm-up run: median {median * 1e3:.0f} ms "
          f"= {cells / median / 1e9:.0f} GCUPS-equivalent, best {best * 1e3:.0f} ms = {cells / best / 1e9:.0f} (runs "
          f"{', '.join(f'{t * 1e3:.0f}' for t in times)}); first {args.check} identical to the CPU engine: "
          f"{'yes' if same else 'NO'}")
    fasta = "data/16S_100_dada2.fasta.gz"
    if os.path.exists(fasta):
        for backend in ("cuda", "cpu"):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "nwalign", "allpairs", fasta, "--backend", backend,
                            "--columns", "qseqid,sseqid,score,pident,length", "--matrix-out",
                            f"/tmp/16S_{backend}.npy", "-o", f"/tmp/16S_{backend}.tsv"], check=True)
            print(f"nwalign allpairs {fasta} --matrix-out (4,950 pairs, all aligned), --backend {backend}: "
                  f"{time.perf_counter() - t0:.2f} s wall")
        same = open("/tmp/16S_cuda.tsv").read() == open("/tmp/16S_cpu.tsv").read() and \
            np.array_equal(np.load("/tmp/16S_cuda.npy"), np.load("/tmp/16S_cpu.npy"))
        print(f"identical rows and matrices: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
