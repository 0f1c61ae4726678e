"""Session 21's experiment: the second GPU's context made through the driver API (ctypes, which lets go
of the interpreter's lock while the driver works) instead of by the command's thread for that GPU.

    python3 scripts/profiling/x2_context.py {parallel|after} allpairs ...   (the nwalign command line)

parallel: retained at once, while CuPy is imported for the first GPU; after: once the first GPU's
warm-up thread has ended. CuPy then finds the primary context made (the runtime uses it)."""

import ctypes
import logging
import sys
import threading
import time


def retain(device: int, after=None) -> None:
    if after is not None:
        after.join()
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuInit(0)
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    driver.cuDeviceGet(ctypes.byref(dev), device)
    began = time.time()
    status = driver.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    sys.stderr.write(f"nwalign: {(time.time() - logging._startTime) * 1000:6.0f} ms: ctypes: GPU {device}'s "
                     f"primary context retained in {time.time() - began:.3f} s (status {status})\n")


if __name__ == "__main__":
    how = sys.argv.pop(1)
    import nwalign.cuda
    from nwalign import launch

    if how == "parallel":
        threading.Thread(target=retain, args=(1,), daemon=True).start()
    else:
        first_warm_up = nwalign.cuda.warm_up

        def warm_up(*args, **kwargs):
            thread = first_warm_up(*args, **kwargs)
            threading.Thread(target=retain, args=(1, thread), daemon=True).start()
            return thread
        nwalign.cuda.warm_up = warm_up
    launch.main()
