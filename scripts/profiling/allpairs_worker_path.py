"""allpairs on one GPU: the in-process path against one GPU worker process (the per-GPU part of
--devices 0,1, without the start-up: the worker is started first), score columns, the same blocks.
Usage (GPU machine): python3 scripts/profiling/allpairs_worker_path.py FASTA [REPEATS]"""

import pathlib
import sys
import time


def main():
    import distributed

    from nwalign import allpairs
    from nwalign.scaleout import gpu_cluster

    path = pathlib.Path(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    import dask

    for trim, tasks in ((65536, 1), (None, 1), (None, 2)):
        # Dask's default for worker processes: MALLOC_TRIM_THRESHOLD_=65536 (memory back to the system early)
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": trim}):
            cluster = gpu_cluster([0], tasks)
        client = distributed.Client(cluster)
        for _ in range(repeats):
            for label in ("in-process", f"worker ({tasks} tasks at a time, trim {trim})"):
                t = time.perf_counter()
                job = allpairs(path, columns=cols, backend="cuda", **({"devices": "0"} if label == "in-process"
                                                                      else {"client": client}))
                size = sum(len(b.text) for b in job.blocks())
                print(f"{label:40s}: {time.perf_counter() - t:.2f} s, {size} bytes of rows", flush=True)
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
