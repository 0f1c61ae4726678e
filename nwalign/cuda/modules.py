"""Compile and cache the CUDA sources in kernels/ as CuPy RawModules (one per source and flavour).

CuPy compiles with NVRTC for the current device's architecture and caches the binary on disk, so the
cost is paid once per machine.
"""

from __future__ import annotations

import functools
from pathlib import Path

KERNEL_DIR = Path(__file__).parent / "kernels"


def source(name: str) -> str:
    return (KERNEL_DIR / f"{name}.cu").read_text()


@functools.lru_cache(maxsize=None)
def module(name: str, cooperative: bool = False, name_expressions: tuple[str, ...] = ()):
    """The RawModule for kernels/<name>.cu (``cooperative``: launched with cuLaunchCooperativeKernel)."""
    import cupy

    return cupy.RawModule(code=source(name), options=("-std=c++17", f"-I{KERNEL_DIR}"),
                          enable_cooperative_groups=cooperative,
                          name_expressions=list(name_expressions) or None)


@functools.lru_cache(maxsize=None)
def function(name: str, kernel: str, cooperative: bool = False, name_expressions: tuple[str, ...] = ()):
    """The kernel ``kernel`` of kernels/<name>.cu, one object per kernel: CuPy's ``get_function`` builds a
    new RawKernel on every call, which defeated ``resident_blocks``'s cache (an occupancy query and a read
    of every device attribute on each launch)."""
    return module(name, cooperative, name_expressions).get_function(kernel)


_RESIDENT: dict = {}


def resident_blocks(func, threads: int, shared_bytes: int = 0) -> int:
    """How many blocks of ``func`` fit on the whole GPU at once (occupancy API x multiprocessors).

    Cached per kernel and launch shape: ``Device.attributes`` queries every attribute (a fraction of a
    millisecond, which shows in a 10 ms score pass).
    """
    import cupy

    dev = cupy.cuda.Device()
    key = (dev.id, id(func), threads, shared_bytes)
    if key not in _RESIDENT:  # the entry holds func, so its id is not reused
        _RESIDENT[key] = (func, _resident_blocks(dev, func, threads, shared_bytes))
    return _RESIDENT[key][1]


def _resident_blocks(dev, func, threads: int, shared_bytes: int) -> int:
    import cupy

    sms = dev.attributes["MultiProcessorCount"]
    try:
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function_ptr(func), threads,
                                                                           shared_bytes)
    except Exception:  # no driver handle: estimate from the kernel's registers and shared memory
        attrs = dev.attributes
        per_sm = min(attrs["MaxThreadsPerMultiProcessor"] // threads,
                     attrs["MaxRegistersPerMultiprocessor"] // max(1, func.num_regs * threads),
                     attrs["MaxSharedMemoryPerMultiprocessor"] // max(1, func.shared_size_bytes + shared_bytes))
    return max(1, int(per_sm)) * sms


def function_ptr(func) -> int:
    """The CUfunction handle of a RawKernel (CuPy 14 keeps it on ``func.kernel``; older CuPy on ``func``)."""
    for obj in (func, getattr(func, "kernel", None)):
        ptr = getattr(obj, "ptr", None)
        if ptr:
            return int(ptr)
    raise AttributeError("no CUfunction handle on this kernel object")
