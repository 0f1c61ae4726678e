"""The engines behind one seam: the CPU engine (``cpu/``: Numba, pyopal) and the CUDA kernels (``cuda/``:
CuPy RawKernels).

A job resolves its engine once (:func:`choose`: ``auto``, ``cpu`` or ``cuda`` -> an :class:`Engine`) and
from then on asks the engine for the roles it needs (:mod:`nwalign.backends.roles`: a database scanner, a
hit aligner, the search's placement of its database, a pair scorer, a banded aligner); it never imports
``cpu/`` or ``cuda/`` and never compares an engine's name. Whether a database is resident on a GPU or
streamed through it in chunks is the CUDA engine's own business.

Importing this package loads neither NumPy nor CuPy nor Numba: ``nwalign --help`` and the GPU warm-up at
start-up (:mod:`nwalign.launch`) go through it.

>>> from nwalign import backends
>>> engine = backends.named("cpu")
>>> engine.name, engine.on_gpu
('cpu', False)
"""

from __future__ import annotations

import logging

from nwalign import names
from nwalign.errors import option_error, NwalignError

log = logging.getLogger("nwalign")

NAMES = names.BACKENDS  # auto, cuda, cpu


def gpu_available() -> bool:
    """Whether CuPy imports and sees a GPU (the driver asked once; CuPy is not imported here)."""
    from nwalign.backends import cuda

    return cuda.available()


def why_no_gpu() -> str:
    """One line: why the CUDA engine is not usable here (or which GPU it found)."""
    from nwalign.backends import cuda

    return cuda.why_unavailable()


def gpu_count() -> int:
    """GPUs the CUDA driver sees (asked of the driver, without CuPy; 0 without one)."""
    from nwalign.backends import cuda

    return cuda.gpu_count()


def device_info() -> list[dict]:
    """One dict per GPU (index, name, compute capability, multiprocessors, memory, CuPy and CUDA versions);
    empty without a usable GPU."""
    from nwalign.backends import cuda

    return cuda.device_info()


def visible_gpu() -> tuple[str | None, str]:
    """(UUID, description) of the GPU this process scans on (its first visible one), or (None, ``"none"``):
    run on each Dask worker to check that no two share a GPU."""
    import os

    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        uuid = bytes(props.get("uuid", b"")).hex() or name
        return uuid, f"{name} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')})"
    except Exception:
        return None, "none"


def requires_gpu(request: str) -> bool:
    """Whether a ``--backend`` request insists on a GPU (``cuda``): an error where there is none."""
    return request == "cuda"


def may_use_gpu(request: str) -> bool:
    """Whether a ``--backend`` request (``auto``, ``cuda`` or ``cpu``) may end on a GPU: start its warm-up,
    its uploads, its GPU count while the input is read (all of them speculative for ``auto``)."""
    return request != "cpu"


def choose_name(request: str, announce: bool = True) -> str:
    """Resolve ``request`` (``auto``: CUDA when CuPy imports and sees a GPU, else the CPU engine) to an
    engine's name; ``-v`` says why, unless ``announce`` is False (a name its caller resolved already).

    Raises:
        NwalignError: unknown backend, or ``cuda`` requested without CuPy or a GPU.
    """
    if request not in NAMES:
        raise NwalignError(f"unknown backend {request!r} (choose from {', '.join(NAMES)})")
    say = log.info if announce else log.debug
    if request == "cpu":
        say("backend: cpu (requested)")
        return "cpu"
    if gpu_available():
        say("backend: cuda (%s; %s)", "requested" if request == "cuda" else "auto", why_no_gpu())
        return "cuda"
    if request == "cuda":
        raise option_error("backend", "--backend", f"cuda: {why_no_gpu()}")
    say("backend: cpu (auto: %s)", why_no_gpu())
    return "cpu"


def request_for_mode(request: str, mode: str) -> str:
    """The ``--backend`` request a scoring mode runs under: as asked for the modes the GPU's pair and
    all-pairs kernels have (:data:`nwalign.names.PAIR_GPU_MODES`); the CPU engine for the other sets of free
    ends, from ``auto``.

    Raises:
        NwalignError: ``cuda`` asked for such a mode.
    """
    from nwalign.names import PAIR_GPU_MODES as gpu_modes

    if mode in gpu_modes:
        return request
    if request == "cuda":
        raise NwalignError(f"mode {mode} runs on the CPU engine (the GPU kernels align {', '.join(gpu_modes)})",
                           cli=f"--mode {mode} runs on the CPU engine for now: use --backend cpu (or auto)")
    if request != "cpu":
        log.info("backend: cpu (--mode %s: the CPU engine's)", mode)
    return "cpu"


def choose(request: str, announce: bool = True):
    """The :class:`Engine` a ``--backend`` request resolves to (see :func:`choose_name`).

    Raises:
        NwalignError: as :func:`choose_name`.
    """
    return named(choose_name(request, announce))


def for_workers(request: str):
    """The engine a Dask cluster's workers run for a ``--backend`` request: CUDA where it is asked for (a
    running cluster's GPU workers; this host needs no GPU), else the CPU engine."""
    return named("cuda" if request == "cuda" else "cpu")


def named(name: str):
    """The engine called ``name`` (``cpu`` or ``cuda``, resolved already: a worker's task carries it), or
    an :class:`Engine` returned as it is. Nothing heavy is imported until a role is asked for.

    Raises:
        NwalignError: another name.
    """
    if not isinstance(name, str):
        return name
    if name == "cpu":
        from nwalign.backends.cpu.engine import ENGINE
    elif name == "cuda":
        from nwalign.backends.cuda.engine import ENGINE
    else:
        raise NwalignError(f"unknown engine {name!r} (cpu or cuda)")
    return ENGINE


def check_allpairs_options(kernel: str, slice_k, block) -> None:
    """Refuse an unknown all-pairs kernel or options it does not take, before any input is read (plain
    checks: CuPy loads only when a kernel runs).

    Raises:
        NwalignError: what is wrong, naming the option."""
    from nwalign.backends.cuda.allpairs import check_options

    check_options(kernel, slice_k, block)


def warm_up(command: str, devices: list[int], allpairs: bool = False) -> None:
    """Start a GPU command's warm-up from its command line alone, before the CLI's imports: the driver and
    every named GPU's context, CuPy's import, and the kernels the command launches first (the search's
    scan on each GPU; the first GPU's context and, for ``allpairs``, its score kernels). Nothing is waited
    for; the command's own checks still decide which engine runs."""
    from nwalign.backends.cuda import device, warmup

    device.retain_contexts(devices)  # the driver and the contexts, while CuPy is imported below
    if command == "search":
        for gpu in devices:
            warmup.warm_up_search(gpu)
        return

    def kernels(cupy) -> None:
        from nwalign.backends.cuda.allpairs import load_kernels

        load_kernels()
    warmup.warm_up(devices[0], prepare=kernels if allpairs else None)


def warm_up_search(device: int) -> None:
    """CuPy's import, the GPU's context and the scan's kernels, started in the background (a search that
    may run on ``device``)."""
    from nwalign.backends.cuda.warmup import warm_up_search as start

    start(device)
