"""The CPU engine's all-pairs scores: every pair of a set (or of A x B) scored by threads of the engine,
batch by batch in the pair order (the GPU's counterpart: :class:`nwalign.backends.cuda.allpairs.AllPairsScorer`)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.plan.pairorder import TILE, pair_batches


def cpu_scores(sequences: list[np.ndarray], others: list[np.ndarray] | None, scoring, threads: int = 1,
               stats: dict | None = None, span: tuple[int, int] | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Optimal scores of every pair (i, j), i < j, of ``sequences`` (uint8 code arrays), or of every (i, j)
    of ``sequences`` x ``others``, in row order (the positions ``span`` of that order when given):
    yields (pairs int32 (k, 2), scores int64 (k,)) for batches of :data:`nwalign.plan.pairorder.TILE` pairs,
    ``threads`` pairs at a time (the engine releases the GIL). ``stats`` gets ``kernel`` (``cpu``) and
    ``cells`` (DP cells scored).
    """
    from nwalign.backends.cpu.opal import OpalScorer, scorer

    stats = stats if stats is not None else {}
    targets = sequences if others is None else others
    offsets = np.concatenate(([0], np.cumsum([len(t) for t in targets]))).astype(np.int64)
    fast = scorer(np.concatenate(targets) if targets else np.zeros(0, np.uint8), offsets, scoring)
    stats.update(kernel="cpu", cells=0)  # the CPU engine, scoring through Opal where pyopal is
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    mapper = pool.map if pool else map
    try:
        for pairs in pair_batches(len(sequences), None if others is None else len(others), TILE, span):
            stats["cells"] += int(sum(len(sequences[i]) * len(targets[j]) for i, j in pairs.tolist()))
            if isinstance(fast, OpalScorer):  # one query against a run of targets per row of the batch
                rows = np.flatnonzero(np.diff(pairs[:, 0], prepend=-1)).tolist() + [len(pairs)]
                runs = [(int(pairs[a, 0]), int(pairs[a, 1]), int(pairs[b - 1, 1]) + 1) for a, b in zip(rows[:-1], rows[1:])]
                parts = list(mapper(lambda r: fast.scores_of(sequences[r[0]], r[1], r[2]), runs))
                yield pairs, np.concatenate(parts) if parts else np.zeros(0, np.int64)
            else:
                yield pairs, _numba_scores(pairs, sequences, targets, scoring, mapper)
    finally:
        if pool:
            pool.shutdown()


def _numba_scores(pairs, sequences, targets, s, mapper) -> np.ndarray:
    from nwalign.backends.cpu.pair import score_codes  # Numba loads at the first score, not at import

    def one(pair):
        return score_codes(sequences[pair[0]], targets[pair[1]], s.matrix, s.gap_open, s.gap_extend, s.mode_code)
    ij = pairs.tolist()
    return np.fromiter(mapper(one, ij), dtype=np.int64, count=len(ij))
