"""One GPU, two ways of searching (issue 19's proxy where no two-GPU machine is lent): the in-process
path (`--devices 0`) and a Dask worker process holding the GPU (the path each GPU takes under
`--devices 0,1`): the worker's start-up (process, CuPy, context, kernels, the whole .nwdb uploaded) and
its search of the same queries, query batches against the whole database. The two-GPU wall is about the
start-up plus half the worker path's search, where the workers are the bottleneck.
Usage (GPU machine): python3 scripts/profiling/worker_path.py DB.nwdb QUERIES.fasta [N]"""

import sys
import time

import distributed

import nwalign
from nwalign.dbsearch import _start_gpu_workers
from nwalign.sequences import read_fasta


def run(job):
    hits = 0
    for _, found in job:
        hits += len(found)
    return hits


def main():
    db_path, query_path = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    queries = read_fasta(query_path)[:n]
    cells = sum(len(q.seq) for q in queries)
    t = time.perf_counter()
    client, cluster, fits = _start_gpu_workers([0], db_path)
    start = time.perf_counter() - t
    print(f"worker started, warmed up and the database uploaded in {start:.2f} s (fits: {fits})", flush=True)
    for label in ("in-process", "worker", "in-process", "worker"):
        t = time.perf_counter()
        if label == "worker":
            job = nwalign.search(queries, db_path, top=10, backend="cuda", client=client)
        else:
            job = nwalign.search(queries, db_path, top=10, backend="cuda", devices="0")
        ready = time.perf_counter() - t
        hits = run(job)
        wall = time.perf_counter() - t
        residues = job.database.total_length
        print(f"{label:10s}: {len(queries)} queries, {hits} hits, set-up {ready:.2f} s, wall {wall:.2f} s, "
              f"{cells * residues / wall / 1e9:.0f} GCUPS end to end", flush=True)
    client.close()
    cluster.close()
    assert isinstance(client, distributed.Client)


if __name__ == "__main__":
    main()
