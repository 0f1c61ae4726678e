"""The CPU engine's all-pairs scores: every pair of a set (or of A x B) scored by threads of the engine,
batch by batch in the pair order (the GPU's counterpart: :class:`nwalign.cuda.allpairs.AllPairsScorer`)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..pairorder import TILE, pair_batches


def cpu_scores(sequences: list[np.ndarray], others: list[np.ndarray] | None, scoring, threads: int = 1,
               stats: dict | None = None, span: tuple[int, int] | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Optimal scores of every pair (i, j), i < j, of ``sequences`` (uint8 code arrays), or of every (i, j)
    of ``sequences`` x ``others``, in row order (the positions ``span`` of that order when given):
    yields (pairs int32 (k, 2), scores int64 (k,)) for batches of :data:`nwalign.pairorder.TILE` pairs,
    ``threads`` pairs at a time (the engine releases the GIL). ``stats`` gets ``kernel`` (``cpu``) and
    ``cells`` (DP cells scored).
    """
    from .pair import score_codes  # Numba loads at the first score, not at import

    stats = stats if stats is not None else {}
    s, targets = scoring, sequences if others is None else others
    stats.update(kernel="cpu", cells=0)
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    mapper = pool.map if pool else map

    def one(pair):
        return score_codes(sequences[pair[0]], targets[pair[1]], s.matrix, s.gap_open, s.gap_extend, s.mode_code)

    try:
        for pairs in pair_batches(len(sequences), None if others is None else len(others), TILE, span):
            ij = pairs.tolist()
            stats["cells"] += sum(len(sequences[i]) * len(targets[j]) for i, j in ij)
            yield pairs, np.fromiter(mapper(one, ij), dtype=np.int64, count=len(ij))
    finally:
        if pool:
            pool.shutdown()
