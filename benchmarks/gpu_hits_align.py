"""Time the batched GPU alignment of a search's reported hits (kernels/batch_align.cu) against the CPU
engine, on the hits of a finished search, and check that both give identical alignments.

    python3 benchmarks/gpu_hits_align.py QUERIES.fasta DB.nwdb HITS.tsv [--threads 16]

HITS.tsv: `nwalign search` output whose first two columns are qseqid and sseqid.
"""

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.backends.cuda import device_info
from nwalign.backends.cuda.batch import BatchAligner
from nwalign.backends.engine import encode_all
from nwalign.scoring.schemes import make_scoring
from nwalign.io.database import encode_database, load_database
from nwalign.io.sequences import read_fasta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("queries")
    ap.add_argument("database")
    ap.add_argument("hits")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    scoring = make_scoring("protein", "local")
    queries = {q.record.id: q.codes for q in encode_all(read_fasta(args.queries), scoring, args.queries)}
    db = load_database(args.database)
    codes = encode_database(db, scoring)
    index = {name: k for k, name in enumerate(db.ids)}
    pairs = []
    for line in open(args.hits):
        qid, sid = line.split("\t")[:2]
        k = index[sid]
        pairs.append((queries[qid], codes[db.offsets[k]:db.offsets[k + 1]]))
    cells = sum(len(q) * len(t) for q, t in pairs)
    aligner = BatchAligner(scoring)
    aligner.submit(pairs[:2]).result()  # warm-up: module load
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        got = aligner.submit(pairs).result()
        times.append(time.perf_counter() - t0)
    from nwalign.backends.cpu import align_codes

    def cpu(pair):
        return align_codes(pair[0], pair[1], scoring.matrix, scoring.gap_open, scoring.gap_extend, scoring.mode_code)

    cpu(pairs[0])  # Numba's compilation
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.threads) as pool:
        want = list(pool.map(cpu, pairs))
    cpu_s = time.perf_counter() - t0
    same = all(g[:5] == w[:5] and np.array_equal(g[5], w[5]) for g, w in zip(got, want))
    gpu_s = float(np.median(times))
    print(f"device: {device_info()[0]['name']}; {time.strftime('%Y-%m-%d %H:%M')}; {len(pairs)} hits, "
          f"{cells / 1e9:.3f} G cells (largest {max(len(q) * len(t) for q, t in pairs) / 1e6:.1f} M)")
    print(f"GPU batch: {gpu_s * 1e3:.1f} ms (runs {', '.join(f'{t * 1e3:.1f}' for t in times)}), "
          f"{cells / gpu_s / 1e9:.1f} GCUPS-equivalent; CPU engine on {args.threads} threads: {cpu_s * 1e3:.1f} ms; "
          f"identical alignments: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
