"""Start-up work for the GPU done in a background thread while a command reads its input: CuPy's
import, the context, the shipped cubins of the kernels it will launch (:func:`warm_up`; for a search,
:func:`warm_up_search`)."""

from __future__ import annotations

import logging
import threading

from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import require


def warm_up(device: int = 0, sources: tuple[str, ...] = (), kernels=None, prepare=None):
    """Create ``device``'s CUDA context and load the shipped cubins of ``sources`` in a background thread,
    while the caller reads its input (context creation takes a few tenths of a second). ``kernels``: a
    function of the GPU's compute capability (an int, 90 for 9.0) giving {source: mangled kernel names}
    to load now (the driver otherwise loads each at its first launch); ``prepare(cupy)``: more to do
    there last. Returns the thread; errors are left for the caller's own first CUDA call to raise."""

    def run():
        log = logging.getLogger("nwalign")
        try:
            cupy = require(device)
            log.debug("cuda: CuPy imported (warm-up thread)")
            cupy.empty(1, dtype=cupy.uint8)  # the context exists once memory is allocated
            log.debug("cuda: GPU %d's context made", device)
            for name in sources:
                modules.prebuilt_module(name)
            capability = int(cupy.cuda.Device().compute_capability)
            for name, mangled_names in (kernels(capability) if kernels else {}).items():
                for mangled in mangled_names:
                    func = modules.prebuilt_function(name, mangled)
                    if func is not None:
                        func.max_threads_per_block  # an attribute query loads the kernel's code
            log.debug("cuda: cubins loaded")
            if prepare is not None:
                prepare(cupy)
        except Exception:  # the main thread's own call reports it in one line
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


_SEARCH_WARM_UPS: dict = {}
_SEARCH_WARM_UPS_LOCK = threading.Lock()


def warm_up_search(device: int = 0):
    """:func:`warm_up` for a search on ``device`` (the scan and batch-alignment kernels it may launch),
    started once per process: the command's entry point (:mod:`nwalign.launch`) and the search itself
    both ask for it."""
    with _SEARCH_WARM_UPS_LOCK:
        if device not in _SEARCH_WARM_UPS:
            def kernels(capability):
                # imported in this thread: the command's own start-up does not wait for them
                from nwalign.backends.cuda.batch import KERNEL_NAMES
                from nwalign.backends.cuda.scanplan import kernel_names, profile_kernel_names

                names = {"sw_search": kernel_names(capability >= 90), "batch_align": KERNEL_NAMES}
                if capability >= 90:
                    names["sw_profile"] = profile_kernel_names()
                return names

            _SEARCH_WARM_UPS[device] = warm_up(device, ("sw_search", "sw_profile", "batch_align"), kernels)
    return _SEARCH_WARM_UPS[device]
