"""Every engine's kernels by name, one call each: what ``nwalign bench`` times kernel by kernel (the jobs
use the engines' roles instead). Names: the CPU engine's ``cpu`` (the Numba engine, or Opal's SIMD scan)
and ``cpu-serial`` (one thread, the scalar row kernel: the papers' baseline), and the CUDA kernels of
:data:`GPU_PAIR_KERNELS`, :data:`GPU_SEARCH_KERNELS` and :data:`GPU_ALLPAIRS_KERNELS`.

Codes are uint8 arrays; a pair call returns the score (int) or the path (score, qs, qe, ts, te, ops); a
scan returns int64 scores (count,).
"""

from __future__ import annotations

import numpy as np

from nwalign import names

GPU_PAIR_KERNELS = names.PAIR_KERNELS
GPU_ALLPAIRS_KERNELS = names.ALLPAIRS_KERNELS
GPU_SEARCH_KERNELS = ("scan", "gsw")


def pair_call(name: str, qc: np.ndarray, tc: np.ndarray, scoring, traceback: bool, block=None,
              shared: bool = True):
    """A callable running pair kernel ``name`` once on ``qc`` x ``tc``: the path with ``traceback``, else
    the score (the GPU's kernels: their first result, a path or a score).

    Raises:
        NwalignError: an unknown kernel, or a GPU kernel without a GPU (at the call)."""
    m, go, ge, mode = scoring.matrix, scoring.gap_open, scoring.gap_extend, scoring.mode_code
    if name in ("cpu", "cpu-serial"):
        from nwalign.backends.cpu.pair import align_codes, score_codes, score_rows

        if traceback:
            return lambda: align_codes(qc, tc, m, go, ge, mode)
        if name == "cpu":
            return lambda: score_codes(qc, tc, m, go, ge, mode)
        return lambda: score_rows(qc, tc, m, go, ge, mode)[0]
    from nwalign.backends.cuda.pair import Options, run_kernel

    opts = Options(kernel=name, block=block or (32, 32), shared=shared)
    return lambda: run_kernel(qc, tc, scoring, traceback, opts)[0]


def cpu_score(qc: np.ndarray, tc: np.ndarray, scoring) -> int:
    """One pair's optimal score on the CPU engine (the Numba engine)."""
    return int(pair_call("cpu", qc, tc, scoring, False)())


def serial_score(qc: np.ndarray, tc: np.ndarray, scoring) -> int:
    """One pair's optimal score by the scalar row kernel (one thread): the CPU engine's own reference."""
    return int(pair_call("cpu-serial", qc, tc, scoring, False)())


def cpu_scan(qc: np.ndarray, codes: np.ndarray, offsets: np.ndarray, scoring, threads: int) -> np.ndarray:
    """The CPU engine's scan of one query against a database (:func:`nwalign.backends.cpu.search.cpu_scan`)."""
    from nwalign.backends.cpu.search import cpu_scan as scan

    return scan(qc, codes, offsets, scoring, threads)


def gpu_scanner(name: str, db, codes: np.ndarray, scoring):
    """A GPU search kernel's scanner over ``db`` (``scan``: its codes; ``gsw``: its letters) on GPU 0:
    ``score_query(encoded)`` -> int64 scores."""
    from nwalign.backends.cuda.gsw import GswSearcher
    from nwalign.backends.cuda.search import ScanSearcher

    return GswSearcher(db, scoring) if name == "gsw" else ScanSearcher(codes, db.offsets, scoring)


def allpairs_scorer(codes: list, scoring, name: str, k_slice, block):
    """An all-pairs score kernel over ``codes`` on GPU 0 (``scores(pairs, name)`` -> int64 scores)."""
    from nwalign.backends.cuda.allpairs import AllPairsScorer

    return AllPairsScorer(codes, scoring, name, k_slice, block)


def allpairs_block_fits(kernel: str, block: int | None) -> bool:
    """Whether all-pairs kernel ``kernel`` takes a block (tile or threads) of ``block``."""
    from nwalign.backends.cuda.allpairs import TILES

    if block is None:
        return True
    if kernel == "tiled-dscan":
        return block in TILES
    if kernel == "dscan":
        return 32 <= block <= 1024 and block % 32 == 0
    return 32 <= block <= 256 and block % 32 == 0


def allpairs_config(kernel: str, k_slice: int | None, block: int | None) -> str:
    """How an all-pairs kernel runs, in words (its tile, threads and slice)."""
    from nwalign.backends.cuda.allpairs import DEFAULT_DSCAN_THREADS, DEFAULT_TILE, LAZY_THREADS

    if kernel == "tiled-dscan":
        return f"tile {block or DEFAULT_TILE}"
    if kernel == "dscan":
        return f"{block or DEFAULT_DSCAN_THREADS} threads"
    if kernel == "rscan":
        return f"k=1, {block or LAZY_THREADS} threads"
    return f"k={k_slice}, {block or LAZY_THREADS} threads"


def gpu_timer():
    """A timer of one call by CUDA events on the current stream: ``run(fn)`` -> (seconds, result)."""
    import cupy as cp

    def run(fn):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        result = fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1000.0, result
    return run
