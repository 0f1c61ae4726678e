"""The timing-and-verification harness of ``nwalign bench``: result rows, timers, the one warm-up and
repeat loop every workload uses, and the rule for when GPU kernels can run.

Timing: GPU kernels with CUDA events around each run after the warm-up runs; CPU engines and peers
with a wall clock. GCUPS = query length x target length / seconds / 1e9.
"""

from __future__ import annotations

import logging
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from nwalign import __version__, backends
from nwalign.errors import NwalignError

log = logging.getLogger("nwalign")


@dataclass
class Row:
    """One measured configuration (the JSON/TSV record)."""

    workload: str
    kernel: str
    query_length: int
    target_length: int
    mode: str
    traceback: bool
    repeats: int
    median_s: float
    min_s: float
    max_s: float
    gcups: float
    score: int
    verified: bool
    reference: str
    device: str
    speedup_cpu: float | None = None
    speedup_serial: float | None = None
    db_sequences: int | None = None  # search workload: database size (target_length = its residues)
    pairs: int | None = None  # allpairs workload: pairs scored per run
    pairs_per_s: float | None = None
    config: str = ""  # allpairs: slice height and threads per block (or tile size)
    versions: dict = field(default_factory=dict)


def versions() -> dict:
    out = {"nwalign": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for name in ("numba", "cupy", "parasail", "Bio"):
        try:
            out[name] = __import__(name).__version__
        except Exception:
            pass
    return out


def wall_timer(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def timed(fn, repeats: int, warmup: int, timer=wall_timer) -> tuple[list[float], object]:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times timed by ``timer`` (:func:`wall_timer`
    or :func:`nwalign.backends.kernels.gpu_timer`'s); returns (seconds of each timed run, the last result)."""
    for _ in range(warmup):
        fn()
    times, result = [], None
    for _ in range(repeats):
        seconds, result = timer(fn)
        times.append(seconds)
    return times, result


def spread(times: list[float]) -> tuple[int, float, float, float]:
    """(runs, median, min, max) of the timed runs, as a :class:`Row` takes them."""
    return len(times), statistics.median(times), min(times), max(times)


def mismatch(text: str) -> None:
    """Say on stderr that a kernel's results differ from its reference (the row says verified=False)."""
    print(f"nwalign bench: MISMATCH {text}", file=sys.stderr)


def gpu_allowed(backend: str) -> bool:
    """Whether GPU kernels can run under ``--backend`` (``auto``: when CuPy sees a GPU).

    Raises:
        NwalignError: ``--backend cuda`` without a usable GPU.
    """
    ok = backends.may_use_gpu(backend) and backends.gpu_available()
    if backends.requires_gpu(backend) and not ok:
        raise NwalignError(f"--backend cuda: {backends.why_no_gpu()}")
    return ok


def without_gpu(names: list[str], gpu_kernels, gpu_ok: bool, backend: str, kernels: str) -> list[str]:
    """``names`` less the GPU kernels when no GPU can be used (a warning names them); only GPU kernels
    asked for and no GPU is an error.

    Raises:
        NwalignError: every requested kernel needs the GPU.
    """
    gpu = [k for k in names if k in gpu_kernels]
    if not gpu or gpu_ok:
        return names
    why = backends.why_no_gpu() if backends.may_use_gpu(backend) else "--backend cpu"
    names = [k for k in names if k not in gpu_kernels]
    if not names:
        raise NwalignError(f"--kernels {kernels}: GPU kernels only, and no GPU can be used ({why})")
    log.warning("GPU kernels skipped (%s): %s", ", ".join(gpu), why)
    return names


def workload_kernels(kernels: str, known: tuple[str, ...], what: str) -> list[str]:
    """--kernels for the search and allpairs workloads: ``all`` or names from ``known``."""
    names = list(known) if kernels == "all" else [k.strip() for k in kernels.split(",") if k.strip()]
    for name in names:
        if name not in known:
            raise NwalignError(f"--kernels: {name!r} is not {what} kernel (choose from {', '.join(known)})")
    return names


class Rows(list):
    """The result rows of a benchmark; ``progress(row)`` (the ``progress`` argument of the run_*
    functions) hears of each as it is measured."""

    def __init__(self, progress=None):
        super().__init__()
        self.progress = progress

    def append(self, row) -> None:
        super().append(row)
        if self.progress:
            self.progress(row)
