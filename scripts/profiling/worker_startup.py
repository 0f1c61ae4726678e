"""Where a GPU worker's start-up goes (issue 19): the client's imports, the Dask cluster of one Nanny
worker process on GPU 0, the first call on it, CuPy's import and context on the worker, the search
warm-up (kernels) and the whole .nwdb uploaded (preload_database).
Usage (GPU machine): python3 scripts/profiling/worker_startup.py DB.nwdb"""

import sys
import time


def imp():
    t = time.perf_counter()
    import cupy
    a = time.perf_counter() - t
    cupy.cuda.Device(0).use()
    cupy.zeros(1)
    return round(a, 2), round(time.perf_counter() - t - a, 2)


def main():
    t0 = time.perf_counter()
    import distributed
    from nwalign.scaleout import gpu_cluster
    from nwalign.shards import preload_database, warm_gpu_worker
    t1 = time.perf_counter()
    cluster = gpu_cluster([0])
    client = distributed.Client(cluster)
    t2 = time.perf_counter()
    client.run(lambda: None)
    t3 = time.perf_counter()
    r = client.run(imp)
    t4 = time.perf_counter()
    client.run(warm_gpu_worker)
    t5 = time.perf_counter()
    client.run(preload_database, sys.argv[1])
    t6 = time.perf_counter()
    print(f"client imports {t1 - t0:.2f} s, cluster + client {t2 - t1:.2f} s, first run {t3 - t2:.2f} s, "
          f"worker's CuPy import and context {list(r.values())[0]} s ({t4 - t3:.2f} s), warm-up {t5 - t4:.2f} s, "
          f"preload {t6 - t5:.2f} s", flush=True)
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
