"""The CUDA engine's roles (:class:`nwalign.backends.roles.Engine`): the ``scan`` and ``gsw`` search kernels,
the database resident or streamed (:mod:`nwalign.backends.cuda.searchplace`), the batch aligner of hits,
the pair kernels' options, all-pairs waves."""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("nwalign")


class CudaEngine:
    """The CUDA engine (see :class:`nwalign.backends.roles.Engine` for the roles). A worker's GPU is its
    device 0."""

    name, on_gpu = "cuda", True

    def search_place(self, database, kernel: str = "scan", gpu_memory=None, threads: int = 1, sort: bool = True):
        from nwalign.backends.cuda.searchplace import GpuSearch

        return GpuSearch(database, kernel, gpu_memory, sort)

    def hold_shard(self, sub: np.ndarray, offsets: np.ndarray, preloaded=None):
        """A shard's sequences on the worker's GPU (``preloaded``: the whole database uploaded before), or
        None where they do not fit (the shard is then streamed through the GPU)."""
        from nwalign.backends.cuda.devicedb import DeviceDatabase, DoesNotFit

        if preloaded is not None:
            return preloaded
        try:
            return DeviceDatabase(sub, offsets, 0)
        except (DoesNotFit, MemoryError) as exc:  # streamed through the GPU in chunks instead
            log.info("search: a shard does not fit on this worker's GPU (%s)", exc)
            return None

    def shard_scanner(self, sub: np.ndarray, offsets: np.ndarray, scoring, threads: int, held=None):
        """The scan over a shard held on the worker's GPU (:meth:`hold_shard`), or streamed through it with
        half the GPU's free memory where it is not held (a GPU worker runs two tasks at a time)."""
        from nwalign.backends.cuda import streamed
        from nwalign.backends.cuda.device import require
        from nwalign.backends.cuda.search import ScanSearcher

        if held is None:  # a shard larger than the GPU's memory
            return streamed.StreamedScan(sub, offsets, scoring, 0, streamed.budget_of(require(0), None)[0] // 2)
        return ScanSearcher(sub, offsets, scoring, 0, uploaded=held)

    def use(self, device: int) -> None:
        """Make ``device`` this thread's current GPU (every launch and allocation of the thread goes there)."""
        from nwalign.backends.cuda.device import require

        require(device)

    def hit_aligner(self, scoring, device: int = 0):
        """The batch kernel on ``device`` (:class:`nwalign.backends.cuda.batch.BatchAligner`); None for a
        glocal search (its hits align on the CPU)."""
        from nwalign.backends.cuda.batch import MODES, BatchAligner

        return BatchAligner(scoring, device) if scoring.mode in MODES else None

    def preload_database(self, codes, offsets):
        """The whole database on the worker's GPU in the scan's order.

        Raises:
            NwalignError: it does not fit."""
        from nwalign.backends.cuda.devicedb import DeviceDatabase

        return DeviceDatabase(codes, offsets, 0)

    def pair_options(self, kernel: str, block, shared: bool, device: int, max_memory, spread: tuple):
        """The pair kernel and its knobs (:class:`nwalign.backends.cuda.pair.Options`)."""
        from nwalign.backends.cuda.pair import Options

        return Options(kernel=kernel, block=block, shared=shared, device=device, max_memory=max_memory,
                       spread=spread)

    def check_traceback(self, m: int, n: int, budget: int) -> None:
        """Nothing: the GPU's tracebacks are planned in its own memory, pair by pair."""

    def one_query_scorer(self, codes, offsets, scoring):
        """None: the GPU aligns pairs with its pair kernels."""
        return None

    def pair_wave(self, codes: list, scoring, kernel: str, slice_k, block, device: int, total: int) -> int:
        """How many pairs the all-pairs score kernel for ``total`` pairs runs at once
        (:meth:`nwalign.backends.cuda.allpairs.AllPairsScorer.wave`; 1 for the one-block-per-pair kernels)."""
        from nwalign.backends.cuda.allpairs import AllPairsScorer

        scorer = AllPairsScorer(codes, scoring, kernel, slice_k, block, device)
        return scorer.wave(scorer.kernel_for(total))


CUDA = ENGINE = CudaEngine()
