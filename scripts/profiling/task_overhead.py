"""Where a GPU worker's search time goes beyond the one-process path's (issue 19), on one GPU:
(1) the one-process loop (search_all: scan, top hits, alignments on the GPU), (2) the worker's task
function (best_of_shard with the alignments) called here round after round, (3) the same tasks through
a Dask worker process (one GPU worker, 3 tasks in flight), each over the same queries.
Usage (GPU machine): python3 scripts/profiling/task_overhead.py DB.nwdb QUERIES.fasta [N [ROUND [notrim]]]"""

import sys
import time

import numpy as np


def main():
    import distributed

    from nwalign.cuda.batch import BatchAligner
    from nwalign.cuda.search import ScanSearcher
    from nwalign.database import load_database
    from nwalign.dbsearch import search_all
    from nwalign.engine import encode_all
    from nwalign.scaleout import gpu_cluster
    from nwalign.shards import ShardTask, best_of_shard
    from nwalign.scoring import make_scoring
    from nwalign.sequences import read_fasta
    from nwalign.statistics import parameters

    db_path, query_path = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    scoring = make_scoring("protein", "local")
    encoded = encode_all(read_fasta(query_path)[:n], scoring, "queries")
    codes = [e.codes for e in encoded]
    db = load_database(db_path)
    rounds = [codes[lo:lo + size] for lo in range(0, n, size)]

    def tasks():
        return [ShardTask(db_path, 0, 1, tuple(np.asarray(q).tobytes() for q in r), scoring, 10, 1, "cuda", True)
                for r in rounds]

    searcher = ScanSearcher(db.codes, db.offsets, scoring, 0)
    aligner = BatchAligner(scoring, 0)
    stats = parameters(scoring.matrix_name, scoring.gap_open, scoring.gap_extend)
    client = cluster = None
    for label in ("one process", "task function here", "Dask worker") * 2:
        t = time.perf_counter()
        if label == "one process":
            for _ in search_all(encoded, db, db.codes, scoring, stats, 10, None, None, 16, searcher, None, True,
                                aligner):
                pass
        elif label == "task function here":
            for task in tasks():
                best_of_shard(task)
        else:
            flying = []
            for task in tasks():
                flying.append(client.submit(best_of_shard, task, pure=False))
                if len(flying) > 3:
                    flying.pop(0).result()
            for f in flying:
                f.result()
        wall = time.perf_counter() - t
        print(f"{label:20s}: {n} queries in rounds of {size}: {wall:.2f} s, {1e3 * wall / n:.2f} ms per query",
              flush=True)
        if label == "task function here" and client is None:
            import dask

            # "notrim": the worker without Dask's MALLOC_TRIM_THRESHOLD_=65536 (which also fixes glibc's mmap
            # threshold: every large array is then mapped and unmapped, its pages faulted in afresh)
            trim = {} if len(sys.argv) <= 5 or sys.argv[5] != "notrim" else \
                {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
            with dask.config.set(trim):
                cluster = gpu_cluster([0])
            client = distributed.Client(cluster)
            client.submit(best_of_shard, tasks()[0], pure=False).result()  # its searcher made
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
