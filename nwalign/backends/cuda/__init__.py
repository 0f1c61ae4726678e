"""The CUDA engine: CuPy RawModule kernels, one host module per job (``pair``, ``wavefront``, ``search``,
``batch``, ``banded``, ``allpairs``), the GPUs themselves (``device``), kernel loading (``modules``) and the
start-up warm-up (``warmup``).

Importing this package never fails and never imports CuPy; :func:`available` says whether CuPy and a GPU
are usable.
"""

from nwalign import names
from nwalign.backends.cuda.device import (available, copy_to_host_async, device_info, device_numbers, gpu_count, pinned_empty, require, retain_contexts, why_unavailable)

KERNELS = names.PAIR_KERNELS
BLOCK_SHAPES = ((8, 8), (16, 16), (32, 32), (8, 128), (16, 64))
DEFAULT_KERNEL = names.DEFAULT_KERNEL

__all__ = ["BLOCK_SHAPES", "DEFAULT_KERNEL", "KERNELS", "available", "copy_to_host_async", "device_info",
           "device_numbers", "gpu_count", "pinned_empty", "require", "retain_contexts", "why_unavailable"]
