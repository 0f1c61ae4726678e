"""The all-pairs score kernel alone over every pair of a FASTA file, in batches of 4 and 20 waves
(20: the one-process batch on an 80 GB GPU), in this process and then in a Dask worker process on the
same GPU (this process's pool emptied first): is a large batch slower in a worker?
Usage (GPU machine): python3 scripts/profiling/allpairs_batch_in_worker.py FASTA"""

import sys
import time


def kernel_alone(path: str, waves_list=(4, 20, 4)) -> list[str]:
    """The kernel alone over every pair of ``path`` in batches of each number of waves: a line each."""
    import pathlib

    import cupy

    from nwalign import allpairs
    from nwalign.allvsall import pair_batches
    from nwalign.cuda.allpairs import AllPairsScorer

    job = allpairs(pathlib.Path(path), columns=("qseqid", "sseqid", "score"), backend="cuda", devices="0")
    codes = [e.codes for e in job.a]
    scorer = AllPairsScorer(codes, job.scoring)
    n = len(codes)
    name = scorer.kernel_for(n * (n - 1) // 2)
    wave = scorer.wave(name)
    lines = [f"budget {scorer.budget / 2**30:.1f} GiB, largest batch {scorer.batch_size(name)} pairs"]
    for waves in waves_list:
        size = min(wave * waves, scorer.batch_size(name))
        scorer.gpu_seconds = 0.0
        t = time.perf_counter()
        count = sum(len(p) for p, _ in scorer.stream(pair_batches(n, None, size), name))
        lines.append(f"batches of {waves} wave(s) ({size} pairs): {time.perf_counter() - t:.2f} s wall, "
                     f"{scorer.gpu_seconds:.2f} s kernel, {count} pairs")
    del scorer
    cupy.get_default_memory_pool().free_all_blocks()
    return lines


def main():
    import distributed

    from nwalign.scaleout import gpu_cluster

    path = sys.argv[1]
    for line in kernel_alone(path):
        print("in-process:", line, flush=True)
    with gpu_cluster([0], 1) as cluster, distributed.Client(cluster) as client:
        for line in client.submit(kernel_alone, path, pure=False).result():
            print("worker:    ", line, flush=True)


if __name__ == "__main__":
    main()
