"""Compile and cache the CUDA sources in kernels/ as CuPy RawModules (one per source and flavour).

Every source a command launches by default ships as cubins for sm_80 and sm_90 (sw_profile.cu: sm_90
only, the GPUs that run it), in kernels/cubins/ (built by scripts/build_cubins.py), used when they match
the sources and the GPU: a first run compiles nothing. Otherwise (another GPU generation, edited sources,
a cooperative kernel) CuPy compiles the source with NVRTC for the current device and caches the binary
on disk, so the cost (up to a minute for wave_score.cu) is paid once per machine.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from pathlib import Path

KERNEL_DIR = Path(__file__).parent / "kernels"
CUBIN_DIR = KERNEL_DIR / "cubins"
#: Sources shipped as cubins, and the architectures built (a cubin runs on GPUs of its major version).
PREBUILT = {"sw_search": (80, 90), "sw_profile": (90,), "batch_align": (80, 90), "banded_align": (80, 90),
            "wavefront": (80, 90), "wave_score": (80, 90), "wave_score16": (80, 90), "allpairs": (80, 90),
            "antidiagonal": (80, 90), "skewed_lockfree": (80, 90), "diagonal_block": (80, 90)}

log = logging.getLogger("nwalign")


def source_digest(name: str) -> str:
    """SHA-256 of kernels/<name>.cu and every header in kernels/ (what a cubin was built from)."""
    h = hashlib.sha256()
    for path in [KERNEL_DIR / f"{name}.cu"] + sorted(KERNEL_DIR.glob("*.cuh")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def kernel_key(expression: str) -> str:
    """A kernel's name as the host writes it, spaced one way: ``wave_score<0,4, false>`` -> ``wave_score<0, 4, false>``."""
    return re.sub(r"\s*,\s*", ", ", re.sub(r"\s+", " ", expression.strip()))


@functools.lru_cache(maxsize=None)
def _manifest() -> dict:
    try:
        return json.loads((CUBIN_DIR / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def shipped_symbol(name: str, kernel: str) -> str | None:
    """The symbol of kernel ``kernel`` (as the host names it: ``wavefront<0, true, 8>``) in the shipped
    cubins of kernels/<name>.cu, or None when they do not hold it."""
    return _manifest().get(name, {}).get("kernels", {}).get(kernel_key(kernel))


@functools.lru_cache(maxsize=None)
def _prebuilt_module(name: str, major: int):
    """The shipped cubin of kernels/<name>.cu for GPUs of compute capability ``major``.x, or None when there
    is none, it was built from other sources, or the driver cannot load it."""
    arch = {8: 80, 9: 90}.get(major)
    path = CUBIN_DIR / f"{name}.sm_{arch}.cubin"
    if arch not in PREBUILT.get(name, ()) or not path.is_file():
        return None
    try:
        if _manifest()[name]["sha256"] != source_digest(name):
            log.info("cuda: %s differs from its shipped cubin; compiling it", name)
            return None
        import cupy

        return cupy.RawModule(path=str(path))
    except Exception as exc:  # a missing manifest, or a driver too old for the cubin: compile instead
        log.info("cuda: shipped cubin %s not usable (%s); compiling the source", path.name, exc)
        return None


def prebuilt_module(name: str):
    """The shipped cubin module of kernels/<name>.cu for the current GPU, or None (loads it once)."""
    import cupy

    return _prebuilt_module(name, int(cupy.cuda.Device().compute_capability) // 10)


def prebuilt_function(name: str, mangled: str):
    """Kernel ``mangled`` (its C++ mangled name) from the shipped cubin of kernels/<name>.cu for the current
    GPU, or None (see :func:`_prebuilt_module`)."""
    import cupy

    key = (name, mangled, cupy.cuda.Device().id)
    if key not in _PREBUILT_FUNCS:
        module = prebuilt_module(name)
        func = None
        if module is not None:
            try:
                func = module.get_function(mangled)
            except Exception as exc:
                log.info("cuda: %s not in the shipped cubin (%s); compiling the source", mangled, exc)
        _PREBUILT_FUNCS[key] = func
    return _PREBUILT_FUNCS[key]


_PREBUILT_FUNCS: dict = {}


def source(name: str) -> str:
    return (KERNEL_DIR / f"{name}.cu").read_text()


@functools.lru_cache(maxsize=None)
def module(name: str, cooperative: bool = False, name_expressions: tuple[str, ...] = ()):
    """The RawModule for kernels/<name>.cu (``cooperative``: launched with cuLaunchCooperativeKernel)."""
    import cupy

    return cupy.RawModule(code=source(name), options=("-std=c++17", f"-I{KERNEL_DIR}"),
                          enable_cooperative_groups=cooperative,
                          name_expressions=list(name_expressions) or None)


def function(name: str, kernel: str, cooperative: bool = False, name_expressions: tuple[str, ...] = ()):
    """The kernel ``kernel`` of kernels/<name>.cu (``wavefront<0, true, 8>``, or an ``extern "C"`` name):
    from the shipped cubin for this GPU when it holds it and matches the source, else compiled by NVRTC
    with ``name_expressions`` (every template instance the host may ask for: one compilation per source).
    A cooperative kernel is always compiled (CuPy links it for cuLaunchCooperativeKernel)."""
    symbol = None if cooperative else shipped_symbol(name, kernel)
    return (symbol and prebuilt_function(name, symbol)) or _compiled(name, kernel, cooperative, name_expressions)


@functools.lru_cache(maxsize=None)
def _compiled(name: str, kernel: str, cooperative: bool, name_expressions: tuple[str, ...]):
    """The compiled kernel, one object per kernel: CuPy's ``get_function`` builds a new RawKernel on every
    call, which defeated ``resident_blocks``'s cache (an occupancy query and a read of every device
    attribute on each launch)."""
    return module(name, cooperative, name_expressions).get_function(kernel)


def kernel(name: str, mangled: str, kernel_name: str | None = None, name_expressions: tuple[str, ...] = ()):
    """The one way every host module loads a kernel of kernels/<name>.cu: from the shipped cubin for this
    GPU when it matches the source (``mangled``: its C++ mangled name), else compiled by NVRTC
    (``kernel_name``: its name in the source, default ``mangled``; ``name_expressions``: the template
    instances to compile with it)."""
    return prebuilt_function(name, mangled) or function(name, kernel_name or mangled,
                                                       name_expressions=name_expressions)


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
