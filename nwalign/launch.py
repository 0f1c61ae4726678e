"""The ``nwalign`` command's entry point: starts the GPU's warm-up before the CLI's imports.

A search on the GPU waits first for CuPy's import and the CUDA context (~0.3 s). Started here, from the
command line's words alone, CuPy is imported before the command's own modules, and the context is made
and the kernels loaded while they import; a guess that turns out wrong (no GPU, ``--backend cpu`` given in
an unusual spelling) costs only CuPy's import, and the command's own checks still decide which backend
runs.
"""

import sys


def wants_gpu_search(argv: list[str]) -> int | None:
    """The GPU device a ``search`` command line will most likely use, or None when it will not use one
    (another command, ``--backend cpu``, workers, help or version)."""
    if not argv or argv[0] != "search":
        return None
    device = 0
    words = iter(argv[1:])
    for word in words:
        name, _, value = word.partition("=")
        if name in ("-h", "--help", "--version", "--workers", "--scheduler"):
            return None
        if name in ("--backend", "--device"):
            value = value or next(words, "")
            if name == "--backend" and value == "cpu":
                return None
            if name == "--device":
                if not value.isdigit():
                    return None
                device = int(value)
    return device


def main() -> None:
    device = wants_gpu_search(sys.argv[1:])
    if device is not None:
        from .cuda import warm_up_search

        # CuPy's import first, alone: the GIL-bound imports of both threads take as long in either order,
        # but this way the context and the database's upload (which release the GIL) overlap the
        # command's own imports and input reading instead of following them.
        warm_up_search(device).imported.wait(timeout=5.0)
    from .cli import entry

    entry()
