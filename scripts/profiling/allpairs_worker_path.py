"""allpairs on one GPU: the in-process path against one GPU worker process (the per-GPU part of
--devices 0,1, without the start-up: the worker is started first), score columns. The client's CuPy
pool is emptied after each in-process run so that the worker's scorers see the GPU's memory free.
Variants: tasks at a time per worker (1, 2) x batches per block at least (nwalign.aligner.BLOCK_BATCHES:
1 = a block of ~4 waves scored in one batch, as before session 17; 3 = the default).
Also the score kernel alone over every pair in batches of 1, 2 and 4 waves (the cost of smaller batches).
Usage (GPU machine): python3 scripts/profiling/allpairs_worker_path.py FASTA [REPEATS]"""

import pathlib
import sys
import time


def _set_batches(k: int) -> None:  # on the worker
    import nwalign.aligner

    nwalign.aligner.BLOCK_BATCHES = k


def _free_pool() -> None:
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()


def main():
    import distributed

    from allpairs_batch_in_worker import kernel_alone  # this folder (the script's own, on sys.path)

    from nwalign import allpairs
    from nwalign.scaleout import gpu_cluster

    path = pathlib.Path(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    cols = ("qseqid", "sseqid", "score", "qlen", "slen")
    for line in kernel_alone(path, (4, 2, 1, 4)):
        print("kernel alone:", line, flush=True)
    for tasks in (2, 1):
        cluster = gpu_cluster([0], tasks)
        client = distributed.Client(cluster)
        for _ in range(repeats):
            t = time.perf_counter()
            job = allpairs(path, columns=cols, backend="cuda", devices="0")
            size = sum(len(b.text) for b in job.blocks())
            print(f"{'in-process':44s}: {time.perf_counter() - t:.2f} s, {size} bytes of rows", flush=True)
            _free_pool()
            for batches in (3, 1):
                client.run(_set_batches, batches)
                t = time.perf_counter()
                job = allpairs(path, columns=cols, backend="cuda", client=client)
                size = sum(len(b.text) for b in job.blocks())
                label = f"worker ({tasks} tasks at a time, >= {batches} batches/block)"
                print(f"{label:44s}: {time.perf_counter() - t:.2f} s, {size} bytes of rows, "
                      f"{job.stats.get('gpu_seconds', 0):.2f} s kernel", flush=True)
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
