"""The GPUs as this process sees them: whether CuPy and a GPU are usable (:func:`available`), how many
(:func:`gpu_count`, asked of the driver), selecting one (:func:`require`), their contexts made early
(:func:`retain_contexts`), page-locked host arrays and asynchronous copies back. Importing this module
never fails and never imports CuPy."""

from __future__ import annotations

import functools
import threading

from nwalign.errors import option_error

@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CuPy build that cannot load its CUDA libraries
        return False, f"CuPy is not installed or cannot load ({type(exc).__name__}: {exc}); " \
                      "install nwalign[cuda13] or nwalign[cuda12]"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no usable CUDA driver/GPU ({exc})"
    if count == 0:
        return False, "CuPy sees no GPU"
    return True, f"{count} GPU(s) visible to CuPy"


def device_numbers() -> list[int]:
    """The visible GPUs' numbers (empty without CuPy or a GPU)."""
    if not available():
        return []
    import cupy

    return list(range(cupy.cuda.runtime.getDeviceCount()))


def gpu_count() -> int:
    """How many GPUs this process may use (``CUDA_VISIBLE_DEVICES`` applied), 0 without CuPy or a GPU.

    Asked of the CUDA driver library itself (ctypes: ``cuInit``, ``cuDeviceGetCount``: ~0.1-0.3 s) where
    CuPy is installed, rather than by importing CuPy (0.3-1 s), so that the worker processes of a job over
    several GPUs start sooner; through CuPy where the driver library cannot be loaded by name. Whether CuPy
    itself works is :func:`available`'s question."""
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        return 0
    import ctypes

    driver = _driver()
    if driver is None:
        return len(device_numbers())
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0  # no usable driver or GPU
    return int(count.value)


def available() -> bool:
    """True when CuPy imports and sees at least one GPU."""
    return _probe()[0]


def why_unavailable() -> str:
    return _probe()[1]


def require(device: int = 0):
    """Import CuPy and select ``device``; raise NwalignError with the reason when that is impossible."""
    ok, reason = _probe()
    if not ok:
        raise option_error("backend", "--backend", f"cuda: {reason}")
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= device < count:
        raise option_error("device", "--device", f"{device}: only {count} GPU(s) (numbered 0..{count - 1})")
    retaining = _RETAINING.get(device)
    if retaining is not None:
        # A context still being made by the driver: the runtime's first call on that GPU waits for it
        # while holding the GIL (up to ~1 s with four GPUs, the command's input reading stopped meanwhile).
        retaining.join()
    cupy.cuda.Device(device).use()
    return cupy


def uploads_done(cp) -> None:
    """Wait for the copies and fills queued on the current stream (CuPy's default: the legacy null stream)
    before kernels on this package's streams read them: those streams are non-blocking, which do not wait
    for the null stream, and a copy from pageable memory can still be in flight when ``cupy.asarray``
    returns (all-pairs scores came out wrong while other processes shared the GPU)."""
    cp.cuda.get_current_stream().synchronize()


def pinned_empty(shape, dtype):
    """A C-ordered NumPy array in page-locked host memory (for asynchronous copies from the GPU), made
    as ``cupyx.empty_pinned`` makes it, without importing cupyx and the modules it loads."""
    import cupy
    import numpy as np

    dtype = np.dtype(dtype)
    mem = cupy.cuda.alloc_pinned_memory(max(1, int(np.prod(shape)) * dtype.itemsize))
    return np.ndarray(shape, dtype=dtype, buffer=mem)


def copy_to_host_async(array, out, stream) -> None:
    """Queue the copy of a CuPy ``array`` into ``out`` (a page-locked NumPy array of its shape and dtype,
    :func:`pinned_empty`) on ``stream`` and return at once; record an event after it to know when it is
    done. (CuPy's ``get`` waits for the copy unless told not to: a search's next query was queued only
    once this one's scan had finished.)"""
    try:
        array.get(stream=stream, out=out, blocking=False)
    except TypeError:  # a CuPy before 13 has no `blocking`: its copy into pinned memory returns at once
        array.get(stream=stream, out=out)


def _driver():
    """The CUDA driver library (ctypes), or None where it cannot be loaded by name."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


_RETAINING: dict[int, threading.Thread] = {}  # a GPU's context being made (retain_contexts): require waits for it


def retain_contexts(devices: list[int]) -> threading.Thread:
    """Initialise the CUDA driver and make the primary contexts of ``devices`` (numbers as this process
    sees them) in background threads, one a GPU, through the driver API itself (ctypes): the driver's
    initialisation and each context (~0.1-0.2 s) then overlap CuPy's import instead of holding the
    interpreter's lock, as CuPy's own calls do. CuPy's runtime later finds the context made (the runtime
    uses the primary context); :func:`require` waits for the GPU's thread first. An allpairs run over two
    H100s launched its first blocks at 0.54-0.57 s after start-up instead of 0.94-1.0 s (the second GPU's
    context made by the job's thread for it held the first GPU's thread up). Errors are left for CuPy's
    own calls to raise; the contexts live as long as the process. Returns a thread that ends when every
    context is made."""

    def retain(device: int) -> None:
        import ctypes

        driver = _driver()
        if driver is None or driver.cuInit(0) != 0:  # the first call initialises; the others wait for it
            return
        handle, context = ctypes.c_int(), ctypes.c_void_p()
        if driver.cuDeviceGet(ctypes.byref(handle), int(device)) == 0:
            driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle)

    threads = []
    for device in devices:
        thread = threading.Thread(target=retain, args=(device,), daemon=True)
        _RETAINING[int(device)] = thread
        thread.start()
        threads.append(thread)
    waiter = threading.Thread(target=lambda: [t.join() for t in threads], daemon=True)
    waiter.start()
    return waiter


def device_info() -> list[dict]:
    """Name, memory, compute capability and versions of every visible GPU (empty without CuPy/GPU)."""
    if not available():
        return []
    import cupy

    out = []
    for k in range(cupy.cuda.runtime.getDeviceCount()):
        props = cupy.cuda.runtime.getDeviceProperties(k)
        with cupy.cuda.Device(k):
            free, total = cupy.cuda.runtime.memGetInfo()
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        out.append(dict(index=k, name=name, compute_capability=f"{props['major']}.{props['minor']}",
                        multiprocessors=props["multiProcessorCount"], memory_total=total, memory_free=free,
                        cupy=cupy.__version__, cuda_runtime=cupy.cuda.runtime.runtimeGetVersion(),
                        cuda_driver=cupy.cuda.runtime.driverGetVersion()))
    return out


def device_ptr(arr) -> int:
    """The device address of a CuPy array, as a kernel's argument struct holds it (0 for None)."""
    return 0 if arr is None else int(arr.data.ptr)
