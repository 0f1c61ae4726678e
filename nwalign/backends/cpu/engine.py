"""The CPU engine's roles (:class:`nwalign.backends.roles.Engine`): Opal's SIMD scans (pyopal) or the Numba
engine, threads instead of GPUs, a database larger than :data:`nwalign.backends.cpu.streamed.CHUNK_RESIDUES`
held a chunk at a time."""

from __future__ import annotations

import numpy as np


class CpuSearch:
    """A search's database on the CPU engine (:class:`nwalign.backends.roles.SearchPlace`): scanned whole
    (:class:`nwalign.backends.cpu.search.CpuScanner`) or a chunk at a time
    (:class:`nwalign.backends.cpu.streamed.ChunkedScan`); hits aligned by the search's CPU threads."""

    def __init__(self, database, threads: int):
        self.database, self.threads = database, threads

    def upload_to(self, devices: list[int]) -> None:
        """Nothing to place ahead: the CPU reads the database where it lies."""

    def leads(self, devices: list[int], codes, scoring, query_lengths: list[int], align: bool) -> list[tuple]:
        return [(CPU.shard_scanner(codes, self.database.offsets, scoring, self.threads), None)]


class CpuEngine:
    """The CPU engine (see :class:`nwalign.backends.roles.Engine` for the roles)."""

    name, on_gpu = "cpu", False

    def search_place(self, database, kernel: str = "scan", gpu_memory=None, threads: int = 1,
                     sort: bool = True) -> CpuSearch:
        return CpuSearch(database, threads)

    def shard_scanner(self, sub: np.ndarray, offsets: np.ndarray, scoring, threads: int, held=None):
        """A scanner over ``sub`` (codes) and ``offsets``: chunked past
        :data:`nwalign.backends.cpu.streamed.CHUNK_RESIDUES` residues, else whole."""
        from nwalign.backends.cpu.search import CpuScanner
        from nwalign.backends.cpu.streamed import ChunkedScan, streams

        if streams(int(offsets[-1])):  # Opal's copy of a large database, a chunk at a time
            return ChunkedScan(sub, offsets, scoring, threads)
        return CpuScanner(sub, offsets, scoring, threads)

    def hold_shard(self, sub, offsets, preloaded=None):
        """Nothing held: the CPU scans the shard where it lies."""
        return None

    def use(self, device: int) -> None:
        """Nothing: the CPU has no current device."""

    def hit_aligner(self, scoring, device: int = 0):
        """None: the search's CPU threads align the hits, a pair each."""
        return None

    def preload_database(self, codes, offsets):
        return None

    def pair_options(self, kernel: str, block, shared: bool, device: int, max_memory, spread: tuple):
        """None: the CPU engine has no pair kernels to choose."""
        return None

    def check_traceback(self, m: int, n: int, budget: int) -> None:
        """Refuse a pair whose traceback cannot fit ``budget`` bytes, before any work starts.

        Raises:
            NwalignError: it cannot.
        """
        from nwalign.backends.cpu.pair import plan_bands  # Numba: only where the CPU engine runs

        plan_bands(m, n, budget)

    def one_query_scorer(self, codes: np.ndarray, offsets: np.ndarray, scoring):
        """Opal's SIMD scores of one query against many sequences (``.scores(query, threads)``), or None
        without pyopal."""
        from nwalign.backends.cpu.opal import scorer

        return scorer(codes, offsets, scoring)

    def pair_wave(self, codes: list, scoring, kernel: str, slice_k, block, device: int, total: int) -> int:
        """1: the CPU's all-pairs scores come pair by pair."""
        return 1

    @staticmethod
    def local_score(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, gap_open: int, gap_extend: int) -> int:
        """One pair's optimal local score (the Numba engine; releases the GIL): for the statistics'
        simulations, which need no Scoring."""
        from nwalign.backends.cpu.pair import score_codes
        from nwalign.ops import LOCAL

        return score_codes(q, t, matrix, gap_open, gap_extend, LOCAL)


CPU = ENGINE = CpuEngine()
