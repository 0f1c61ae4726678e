"""`nwalign pair` with one query and many targets on the GPU: the small pairs aligned together by the
batch kernel (the default), against the same job pair by pair on the pair kernel (batching off), and
the CPU engine on every core. Query: the first 16S rRNA gene of data/16S_100_dada2.fasta.gz; targets:
N seeded relatives of it (10 % substitutions and short indels). Wall time of the job's alignments
(Alignment objects built, nothing written; second of two runs); the three must be identical.

    python3 benchmarks/gpu_pair_many.py [--targets 2000]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from nwalign.jobs.pair import Pairs
from nwalign.backends.cuda import device_info
from nwalign.io.sequences import read_fasta


def relative(rng, seq: str) -> str:
    """``seq`` with 1 % deletions, 1 % insertions and 8 % substitutions (seeded by ``rng``)."""
    x, letters = rng.random(len(seq)), rng.choice(list("ACGT"), len(seq))
    out = []
    for c, r, new in zip(seq, x, letters):
        if r < 0.01:
            continue
        out.append(c + new if r < 0.02 else new if r < 0.1 else c)
    return "".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(5)
    query = read_fasta("data/16S_100_dada2.fasta.gz")[0].seq
    with tempfile.TemporaryDirectory() as tmp:
        qf, tf = Path(tmp) / "q.fa", Path(tmp) / "t.fa"  # paths (a str is taken as a sequence)
        with open(qf, "w") as f:
            f.write(f">q\n{query}\n")
        with open(tf, "w") as f:
            for k in range(args.targets):
                f.write(f">t{k}\n{relative(rng, query)}\n")
        rows, times = {}, {}
        for name, backend, batch_min in (("gpu batch kernel", "cuda", Pairs.BATCH_MIN), ("gpu pair by pair", "cuda", 1 << 40),
                                         ("cpu engine", "cpu", Pairs.BATCH_MIN)):
            job = Pairs(qf, tf, backend=backend, threads=os.cpu_count() or 1)
            job.BATCH_MIN = batch_min
            for _ in range(2):  # the second run timed: the first loads (or compiles) the kernels
                t0 = time.perf_counter()
                alns = list(job.run())
                times[name] = time.perf_counter() - t0
            rows[name] = [(a.score, a.cigar(), a.query_start, a.target_start) for a in alns]
        cells = sum(job.cells(k) for k in range(len(job.plan)))
        same = all(r == rows["cpu engine"] for r in rows.values())
        print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; 1 x {args.targets} pairs of "
              f"~{len(query)} nt, {cells / 1e9:.2f} G cells")
        for name, t in times.items():
            print(f"{name}: {t:.3f} s ({cells / t / 1e9:.1f} GCUPS-equivalent)")
        print(f"identical alignments: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
