"""A GPU lost mid-search: ``nwalign search QUERIES DATABASE --top 10 --devices all -o OUT`` run here,
the thread of GPU 1 raising a CUDA error (an illegal address, as a GPU that falls off the bus gives)
once AFTER seconds have passed; its unfinished queries run on the other GPUs. Prints the exit status
and the wall time (compare OUT with a clean run's).

    python3 benchmarks/gpu_device_lost.py QUERIES DATABASE OUT AFTER
"""

import argparse
import time

import nwalign.jobs.search.job
from nwalign.cli import main


def failing_after(run, seconds: float, started: float):
    import cupy

    def scan(*args, **kwargs):
        searcher = args[7]  # search_all(queries, db, codes, scoring, stats, options, threads, scanner, ...)
        for item in run(*args, **kwargs):
            if searcher.device == 1 and time.perf_counter() - started > seconds:
                raise cupy.cuda.runtime.CUDARuntimeError(700)
            yield item
    return scan


def main_lost() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("queries", "database", "out"):
        ap.add_argument(name)
    ap.add_argument("after", type=float, help="seconds before GPU 1 fails")
    args = ap.parse_args()
    started = time.perf_counter()
    nwalign.jobs.search.job.search_all = failing_after(nwalign.jobs.search.job.search_all, args.after, started)
    status = main(["search", args.queries, args.database, "--top", "10", "--devices", "all", "-o", args.out])
    print(f"exit {status} after {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main_lost()
