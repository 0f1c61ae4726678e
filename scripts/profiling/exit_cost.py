"""What ending a process that used the GPU costs (issue 19: the two-GPU command's last 0.4 s, after its
"done" line, are its exit): a child process makes a context on each GPU named, holds memory as a search
lead leaves it (CuPy's pool, page-locked host buffers), then ends with os._exit, (a) as it is, (b) after
emptying CuPy's pools, (c) after resetting each device (cudaDeviceReset). Wall times of the child, from
its end of work to the parent seeing it gone.
Usage (GPU machine): python3 scripts/profiling/exit_cost.py [trials] [gpus, e.g. 0,1]"""

import subprocess
import sys
import time

CHILD = r"""
import os, sys, time
import cupy
how, gpus = sys.argv[1], [int(g) for g in sys.argv[2].split(",")]
held = []
for g in gpus:
    with cupy.cuda.Device(g):
        held.append(cupy.zeros(600 << 20, dtype=cupy.uint8))  # a database and scores, as a lead holds them
        held[-1] += 1
        cupy.cuda.Device().synchronize()
pinned = cupy.cuda.alloc_pinned_memory(64 << 20)
if how in ("freed", "reset"):
    t = time.perf_counter()
    del held[:]
    del pinned
    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()
    if how == "reset":
        for g in gpus:
            with cupy.cuda.Device(g):
                cupy.cuda.runtime.deviceReset()
    print(f"{how}: {time.perf_counter() - t:.3f} s in the process", file=sys.stderr)
sys.stderr.write("END\n")
sys.stderr.flush()
os._exit(0)
"""


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    gpus = sys.argv[2] if len(sys.argv) > 2 else "0"
    for _ in range(trials):
        for how in ("as-is", "freed", "reset"):
            child = subprocess.Popen([sys.executable, "-c", CHILD, how, gpus], stderr=subprocess.PIPE, text=True)
            lines = []
            for line in child.stderr:
                if line.strip() == "END":
                    t = time.perf_counter()
                    break
                lines.append(line.strip())
            child.wait()
            print(f"{how:6s} gpus {gpus}: exit {time.perf_counter() - t:.3f} s {' '.join(lines)}", flush=True)


if __name__ == "__main__":
    main()
