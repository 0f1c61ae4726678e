"""A GPU worker's first search task against its next ones (issue 19): one worker started and warmed up as
--devices does (the whole .nwdb uploaded), then the worker's set-up alone (the searcher over the uploaded
database, the aligner) timed on the worker, then rounds of 64 queries timed one by one.
Usage (GPU machine): python3 scripts/profiling/first_task.py DB.nwdb QUERIES.fasta"""

import sys
import time

import numpy as np


def setup_times(task):  # on the worker
    import nwalign.shards as s

    t = time.perf_counter()
    db = s._worker_database(task.database)
    t1 = time.perf_counter()
    db.encode(task.scoring)
    t2 = time.perf_counter()
    s._shard_searcher(task)
    t3 = time.perf_counter()
    s._worker_aligner(task.scoring)
    t4 = time.perf_counter()
    return f"database mapped {t1 - t:.3f} s, encoded {t2 - t1:.3f} s, searcher {t3 - t2:.3f} s, aligner {t4 - t3:.3f} s"


def main():
    import distributed

    from nwalign.engine import encode_all
    from nwalign.scaleout import gpu_cluster
    from nwalign.shards import ShardTask, best_of_shard, warm_gpu_worker
    from nwalign.scoring import make_scoring
    from nwalign.sequences import read_fasta

    db_path, query_path = sys.argv[1], sys.argv[2]
    scoring = make_scoring("protein", "local")
    codes = [e.codes for e in encode_all(read_fasta(query_path)[:64 * 6], scoring, "queries")]
    tasks = [ShardTask(db_path, 0, 1, tuple(np.asarray(q).tobytes() for q in codes[lo:lo + 64]), scoring, 10, 1,
                       "cuda", True) for lo in range(0, len(codes), 64)]
    for prepared in (False, True):
        with gpu_cluster([0]) as cluster, distributed.Client(cluster) as client:
            t = time.perf_counter()
            client.run(warm_gpu_worker, db_path)
            print(f"worker warmed up, database uploaded: {time.perf_counter() - t:.2f} s", flush=True)
            if prepared:
                print("set-up on the worker:", client.submit(setup_times, tasks[0], pure=False).result(), flush=True)
            for k, task in enumerate(tasks):
                t = time.perf_counter()
                client.submit(best_of_shard, task, pure=False).result()
                print(f"  round {k + 1} (64 queries): {time.perf_counter() - t:.3f} s", flush=True)


if __name__ == "__main__":
    main()
