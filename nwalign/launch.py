"""The ``nwalign`` command's entry point: starts the GPU's warm-up before the CLI's imports.

A search, allpairs or pair run on the GPU waits first for CuPy's import and the CUDA context (~0.3-0.8 s).
Started here, from the command line's words alone, the driver's initialisation and the named GPUs'
contexts (through the driver API: :func:`nwalign.backends.cuda.device.retain_contexts`), CuPy's import and the kernels'
loading overlap the command's own imports and input reading; a guess that turns out wrong (no GPU, ``--backend
cpu`` given in an unusual spelling) costs only CuPy's import, and the command's own checks still decide
which backend runs.
"""

import sys

GPU_COMMANDS = ("search", "allpairs", "pair")


def wants_gpu(argv: list[str]) -> tuple[str, list[int]] | None:
    """(command, GPU devices) that a ``search``, ``allpairs`` or ``pair`` command line will most likely use
    in this process: ``--device`` (default 0), or the GPUs ``--devices`` names (numbers only; ``auto`` and
    ``all``: device 0, the one of a one-GPU host). None when it will not use one (another command,
    ``--backend cpu``, CPU workers or a running cluster, help or version, a device that is not a number)."""
    if not argv or argv[0] not in GPU_COMMANDS:
        return None
    devices = [0]
    words = iter(argv[1:])
    for word in words:
        name, _, value = word.partition("=")
        if name in ("-h", "--help", "--version", "--workers", "--scheduler"):
            return None
        if name in ("--backend", "--device", "--devices"):
            value = value or next(words, "")
            if name == "--backend" and value == "cpu":
                return None
            if name == "--device":
                if not value.isdigit():
                    return None
                devices = [int(value)]
            if name == "--devices" and value not in ("auto", "all"):
                named = value.split(",")
                if not all(n.strip().isdigit() for n in named):
                    return None
                devices = sorted({int(n) for n in named})
    return argv[0], devices


def _allpairs_kernels(cupy) -> None:
    from nwalign.backends.cuda.allpairs import load_kernels

    load_kernels()


def main() -> None:
    found = wants_gpu(sys.argv[1:])
    if found is not None:
        from nwalign.backends.cuda import device
        from nwalign.backends.cuda import warmup

        command, devices = found
        device.retain_contexts(devices)  # the driver and the contexts, while CuPy is imported below
        # Not waited for: the command reads its input meanwhile, so that a .nwdb is loaded and its
        # upload starts as soon as the context exists (waiting for CuPy's import first made the upload
        # contend with the command's imports: 0.05 -> 0.17 s on an H100).
        if command == "search":
            for gpu in devices:
                warmup.warm_up_search(gpu)
        else:  # the context; allpairs' kernels too (one module, from CuPy's compile cache)
            # The first GPU alone: the job plans on it; the others' contexts are made above, without CuPy
            # (through CuPy here, they held the first GPU's calls and the plan up).
            warmup.warm_up(devices[0], prepare=_allpairs_kernels if command == "allpairs" else None)
    from nwalign.cli import entry

    entry()
