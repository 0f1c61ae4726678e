"""One GPU, two ways of searching (issue 19's proxy where no two-GPU machine is lent): the in-process
path (`--devices 0`) and the path `--devices 0,1` takes, with one GPU worker process (GPU 0 named twice
makes one worker): the worker started in the background from the search's first step (process, CuPy,
context, kernels, the whole .nwdb uploaded) while this process scans the first queries on the GPU, then
query batches against the whole database on the worker. Prints each run's wall time and how many queries
this process scanned. Two GPUs take about (this path's wall + the worker's start-up) / 2.
Usage (GPU machine): python3 scripts/profiling/worker_path.py DB.nwdb QUERIES.fasta [N [REPEATS]]"""

import sys
import time

import nwalign
import nwalign.scaleout
from nwalign.sequences import read_fasta


def main():
    db_path, query_path = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    queries = read_fasta(query_path)[:n]
    cells = sum(len(q.seq) for q in queries)
    real = nwalign.scaleout.resolve_devices
    for label in ("in-process", "worker") * repeats:
        nwalign.scaleout.resolve_devices = real if label == "in-process" else (lambda *a, **k: [0, 0])
        t = time.perf_counter()
        job = nwalign.search(queries, db_path, top=10, backend="cuda", devices="0" if label == "in-process" else None)
        ready = time.perf_counter() - t
        hits = sum(len(found) for _, found in job)
        wall = time.perf_counter() - t
        led = f", {job._scaleout.led} queries scanned here first" if job._scaleout else ""
        print(f"{label:10s}: {len(queries)} queries, {hits} hits, set-up {ready:.2f} s, wall {wall:.2f} s, "
              f"{cells * job.database.total_length / wall / 1e9:.0f} GCUPS end to end{led}", flush=True)


if __name__ == "__main__":
    main()
