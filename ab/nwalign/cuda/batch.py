"""Host side of kernels/batch_align.cu: full alignments (with traceback) of many pairs in one launch.

Used for a search's reported hits: the pairs of a query are sent as one batch on their own stream, so
that they run while the GPU scans the next query, and collected later. Alignments are identical to the
CPU engine's (same recurrence and tie rules; tested under the ``gpu`` marker).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ..errors import NwalignError
from ..ops import GLOBAL, OP_DEL, OP_INS
from . import modules, require

log = logging.getLogger("nwalign")
BAND = 256  # query rows per band of the kernel (32 lanes x 8 rows)
OUT = 6     # BATCH_OUT: ints per pair of results
from .structs import BATCH_ARGS as _ARGS, BATCH_JOB as _JOB  # noqa: E402

_KERNELS = {0: "batch_align_global", 1: "batch_align_local"}
KERNEL_NAMES = tuple(_KERNELS.values())
MODES = ("global", "local")  # the scoring modes the batch kernel aligns
THREADS = 128  # 4 warps per block, one pair per warp


def dirs_bytes(m: int, n: int) -> int:
    """Bytes of direction words the kernel stores for an m x n pair (half a byte per cell, bands of 256 rows)."""
    return -(-m // BAND) * 32 * (n + 1) * 4


def device_matrix(cp, scoring, max_memory: int) -> tuple[int, object, int]:
    """(letters, the int32 matrix on the GPU, device bytes per launch: ``max_memory`` capped by half the
    free memory) for the batched traceback kernels (this module's and :mod:`nwalign.cuda.banded`'s).

    Raises:
        NwalignError: a matrix of more than 32 letters.
    """
    A = int(scoring.matrix.shape[0])
    if A > 32:
        raise NwalignError(f"matrix {scoring.matrix_name}: {A} letters; the GPU kernels take at most 32")
    free, _ = cp.cuda.runtime.memGetInfo()
    return A, cp.asarray(np.ascontiguousarray(scoring.matrix, dtype=np.int32)), int(min(max_memory, free // 2))


def kernel_path(out_row, h_ops: np.ndarray, start: int, global_mode: bool) -> tuple:
    """A pair's path tuple (score, query_start, query_end, target_start, target_end, ops), as
    :func:`nwalign.cpu.align_codes` returns it, from a traceback kernel's results: ``out_row`` its six ints
    (score, end row, end column, start row, start column, columns) and its columns walked backwards in
    ``h_ops`` from ``start``. Global paths go on along row 0 / column 0 to the origin. ``ops`` never shares
    memory with ``h_ops`` (a pinned buffer the next launch reuses)."""
    score, end_i, end_j, i, j, nops = out_row
    path = h_ops[start:start + nops][::-1]
    if global_mode and (i or j):
        path = np.concatenate((np.full(j, OP_DEL, np.uint8), np.full(i, OP_INS, np.uint8), path))
        i = j = 0
    return score, i, end_i, j, end_j, path.copy() if path.base is not None else path


class BatchAligner:
    """Global or local alignments with traceback of many (query, target) pairs on the GPU.

    One warp per pair sweeps the DP matrix by bands of 256 query rows, storing every cell's 4-bit
    direction (Gotoh 1982's recurrence with the CPU engine's tie rules), then walks the path back on the
    GPU; only the alignment's columns come back. Pairs whose directions exceed ``max_memory`` bytes are
    aligned by the CPU engine instead, so no pair fails for lack of GPU memory.

    Arguments:
        scoring: a :class:`nwalign.scoring.Scoring` in global or local mode, at most 32 letters.
        device: CUDA device index.
        max_memory: bytes of direction words per launch (default 1 GiB; capped by half the free memory).

    Raises:
        NwalignError: no usable GPU, semiglobal mode, or a matrix of more than 32 letters.
    """

    def __init__(self, scoring, device: int = 0, max_memory: int = 1 << 30):
        cp = require(device)
        self.cp, self.scoring = cp, scoring
        if scoring.mode_code not in _KERNELS:
            raise NwalignError(f"batched GPU alignment: mode {scoring.mode} is not global or local")
        self.A, self.matrix, self.budget = device_matrix(cp, scoring, max_memory)
        self._max_abs = scoring.max_abs_score()  # asked per pair by fits()
        self.func = modules.prebuilt_function("batch_align", _KERNELS[scoring.mode_code]) or \
            modules.function("batch_align", _KERNELS[scoring.mode_code])
        self.blocks = modules.resident_blocks(self.func, THREADS)
        # Above the scans in priority, so that a batch's warps take SMs as the scan's blocks finish (CUDA
        # clamps the number to the device's highest priority).
        self.stream = cp.cuda.Stream(non_blocking=True, priority=-100)

    def fits(self, m: int, n: int) -> bool:
        """Whether an m x n pair is aligned on the GPU (directions within the budget, scores in int32)."""
        return dirs_bytes(m, n) <= self.budget and (m + n + 1) * self._max_abs < (1 << 29)

    def submit(self, pairs: list[tuple[np.ndarray, np.ndarray]]) -> "BatchResult":
        """Start aligning ``pairs`` (uint8 code arrays, lengths >= 1) and return at once; see
        :meth:`BatchResult.result`."""
        gpu = [k for k, (q, t) in enumerate(pairs) if self.fits(len(q), len(t))]
        # Largest first, so that the longest pair starts at once; launches of at most `budget` bytes.
        gpu.sort(key=lambda k: -len(pairs[k][0]) * len(pairs[k][1]))
        launches, size, cur = [], 0, []
        for k in gpu:
            need = dirs_bytes(len(pairs[k][0]), len(pairs[k][1]))
            if cur and size + need > self.budget:
                launches.append(cur)
                cur, size = [], 0
            cur.append(k)
            size += need
        if cur:
            launches.append(cur)
        return BatchResult(self, pairs, [self._launch(pairs, ks) for ks in launches])

    def _launch(self, pairs, ks: list[int]):
        cp = self.cp
        jobs = np.zeros(len(ks), dtype=_JOB)
        m = np.array([len(pairs[k][0]) for k in ks], dtype=np.int64)
        n = np.array([len(pairs[k][1]) for k in ks], dtype=np.int64)
        jobs["m"], jobs["n"] = m, n
        # Each pair's start in the concatenated queries, targets, direction words (dirs_bytes / 4), rows, ops.
        sizes = {"q": m, "t": n, "dirs": -(-m // BAND) * 32 * (n + 1), "row": 2 * (n + 1), "ops": m + n}
        for field, size in sizes.items():
            jobs[field][1:] = np.cumsum(size)[:-1]
        d_off, r_off, o_off = (int(sizes[f].sum()) for f in ("dirs", "row", "ops"))
        with self.stream:
            d_q = cp.asarray(np.concatenate([pairs[k][0] for k in ks]).astype(np.uint8, copy=False))
            d_t = cp.asarray(np.concatenate([pairs[k][1] for k in ks]).astype(np.uint8, copy=False))
            d_jobs = cp.asarray(jobs.view(np.uint8))
            dirs = cp.empty(max(1, d_off), dtype=cp.uint32)
            rows = cp.empty(max(1, r_off), dtype=cp.int32)
            ops = cp.empty(max(1, o_off), dtype=cp.uint8)
            out = cp.empty(OUT * len(ks), dtype=cp.int32)
            args = np.array([(d_jobs.data.ptr, len(ks), d_q.data.ptr, d_t.data.ptr, self.matrix.data.ptr, self.A,
                              self.scoring.gap_open, self.scoring.gap_extend, rows.data.ptr, dirs.data.ptr,
                              ops.data.ptr, out.data.ptr)], dtype=_ARGS)[0]
            blocks = min(-(-len(ks) * 32 // THREADS), self.blocks)
            self.func((blocks,), (THREADS,), (args,))
            done = self.stream.record()
        # The buffers stay referenced until the results are read (CuPy's pool reuses freed memory at once).
        return ks, jobs, (d_q, d_t, d_jobs, dirs, rows), ops, out, done


class BatchResult:
    """A submitted batch; :meth:`result` waits for it."""

    def __init__(self, aligner: BatchAligner, pairs, launches):
        self.aligner, self.pairs, self.launches = aligner, pairs, launches

    def result(self) -> list[tuple[int, int, int, int, int, np.ndarray]]:
        """Per pair, in input order: (score, query_start, query_end, target_start, target_end, ops), as
        :func:`nwalign.cpu.align_codes` returns them (0-based half-open coordinates; ops uint8 columns in
        alignment order: 0 residue pair, 1 query residue against a gap, 2 target residue against a gap)."""
        mode = self.aligner.scoring.mode_code
        got: list = [None] * len(self.pairs)
        t0 = time.perf_counter()
        for ks, jobs, _, ops, out, done in self.launches:
            while not done.done:  # poll and sleep: other threads keep the GIL meanwhile
                time.sleep(2e-4)
            h_out = out.get().reshape(-1, OUT).tolist()
            h_ops = ops.get()
            starts = jobs["ops"].tolist()
            for x, k in enumerate(ks):
                got[k] = kernel_path(h_out[x], h_ops, starts[x], mode == GLOBAL)
        log.debug("batch: %d pairs aligned on the GPU (%.1f ms waited)", len(self.pairs),
                  1e3 * (time.perf_counter() - t0))
        for k, value in enumerate(got):
            if value is None:  # too large for the GPU budget: the CPU engine (bounded memory)
                from ..cpu import align_codes

                s = self.aligner.scoring
                got[k] = align_codes(self.pairs[k][0], self.pairs[k][1], s.matrix, s.gap_open, s.gap_extend,
                                     s.mode_code)
        return got
