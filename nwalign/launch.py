"""The ``nwalign`` command's entry point: starts the GPU's warm-up before the CLI's imports.

A search, allpairs or pair run on the GPU waits first for CuPy's import and the CUDA context (~0.3-0.8 s).
Started here, from the command line's words alone, the driver's initialisation and the named GPUs'
contexts (through the driver API: :func:`nwalign.backends.warm_up`), CuPy's import and the kernels'
loading overlap the command's own imports and input reading; a guess that turns out wrong (no GPU, ``--backend
cpu`` given in an unusual spelling) costs only CuPy's import, and the command's own checks still decide
which backend runs.
"""

import sys

from nwalign.backends import may_use_gpu

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
            if name == "--backend" and not may_use_gpu(value):
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


def main() -> None:
    found = wants_gpu(sys.argv[1:])
    if found is not None:
        from nwalign import backends

        command, devices = found
        # Not waited for: the command reads its input meanwhile, so that a .nwdb is loaded and its upload
        # starts as soon as the context exists (waiting for CuPy's import first made the upload contend with
        # the command's imports). For pair and allpairs, the first GPU's context through CuPy, the others'
        # through the driver (through CuPy here, they held the first GPU's calls and the plan up).
        backends.warm_up(command, devices, allpairs=command == "allpairs")
    from nwalign.cli import entry

    entry()
