"""How long closing a GPU worker takes at the end of a spread job (issue 19: 0.27-0.39 s on the one-GPU
proxies, on the critical path), and what shortens it. A one-worker GPU cluster as --devices starts it
(scaleout.gpu_cluster), warmed as after a search (CuPy, context, 200 MB held in CuPy's pool), then closed:
  orderly:  client.close(); cluster.close() (what Owned.close does)
  killed:   the worker process SIGKILLed first, then the same close
  freed:    CuPy's pools emptied on the worker first, then the orderly close
  exit:     a worker plugin whose teardown ends the process at once (os._exit), then the orderly close
Usage (GPU machine): python3 scripts/profiling/worker_close.py [trials]"""

import os
import signal
import sys
import time

import distributed


def hold():  # on the worker: CuPy, the context and 200 MB in the pool, as after a search
    import cupy

    held = cupy.zeros(200 << 20, dtype=cupy.uint8)
    held += 1
    cupy.cuda.Device().synchronize()
    globals()["_held"] = held
    return os.getpid()


def free():
    import cupy

    globals().pop("_held", None)
    cupy.get_default_memory_pool().free_all_blocks()


class QuickExit(distributed.WorkerPlugin):
    """Ends the worker process as soon as the worker closes (its nanny is closing it already)."""

    name = "quick-exit"

    def teardown(self, worker):
        os._exit(0)


def main():
    from nwalign.scaleout import gpu_cluster

    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    for _ in range(trials):
        for how in ("orderly", "killed", "freed", "exit"):
            cluster = gpu_cluster([0])
            client = distributed.Client(cluster)
            pids = list(client.run(hold).values())
            if how == "freed":
                client.run(free)
            if how == "exit":
                client.register_plugin(QuickExit())
            t0 = time.perf_counter()
            if how == "killed":
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
            client.close()
            t1 = time.perf_counter()
            cluster.close()
            t2 = time.perf_counter()
            print(f"{how:8s} client.close {t1 - t0:.3f} s, cluster.close {t2 - t1:.3f} s, total {t2 - t0:.3f} s",
                  flush=True)


if __name__ == "__main__":
    main()
