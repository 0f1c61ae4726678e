"""Host side of kernels/banded_align.cu: global alignments of many pairs inside diagonal bands, on the GPU.

The all-pairs identity filter (:mod:`nwalign.jobs.allpairs.job`) aligns the pairs that pass its score bound inside
the band that every alignment reaching the identity lies in; :func:`nwalign.backends.cpu.banded.align_global_banded`
does it for one pair on the CPU, starting with a narrow band and doubling it until the banded optimum
equals the pair's optimal score. :class:`BandedAligner` runs the same rounds for many pairs at once: every
pair still open is aligned in its current band in one launch (one warp per pair), the pairs whose banded
score reaches their optimum are done, the others go on with a band twice as wide, up to their widest band
(then none of their optimal alignments can reach the identity). Same band sequence, same recurrence and
tie rules, hence the CPU engine's alignments.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.plan.bands import band_limits
from nwalign.errors import NwalignError
from nwalign.ops import OP_DEL, OP_INS
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import pinned_empty, require

ENABLED = True  # allpairs aligns its survivors here (False: on the CPU engine; the benchmarks compare both)
BAND = 256   # query rows per band of the kernel (32 lanes x 8 rows)
OUT = 6      # BANDED_OUT: ints per pair of results
THREADS = 128
from nwalign.backends.cuda.structs import BAND_ARGS as _ARGS, BAND_JOB as _JOB  # noqa: E402


def stored_columns(m: int, n: int, lo: int, hi: int) -> int:
    """W: the direction words per lane and band the kernel stores for a pair (columns a band sweeps)."""
    return min(n, BAND + hi - lo)


def row_bytes(m: int, n: int) -> int:
    """Device bytes of one pair scored without traceback: codes and row buffer."""
    return 2 * (n + 1) * 4 + m + n


def pair_bytes(m: int, n: int, lo: int, hi: int) -> int:
    """Device bytes of one pair's direction words, row buffer and columns."""
    return -(-m // BAND) * 32 * stored_columns(m, n, lo, hi) * 4 + 2 * (n + 1) * 4 + m + n


def _distinct(arrays: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct arrays of a list (the same object counts once) and where each list entry starts in
    their concatenation (int64, len(arrays))."""
    first: dict = {}
    seqs, at, size = [], np.zeros(len(arrays), dtype=np.int64), 0
    for k, x in enumerate(arrays):
        start = first.get(id(x))
        if start is None:
            start = first[id(x)] = size
            seqs.append(x)
            size += len(x)
        at[k] = start
    return seqs, at


def _stream(cp, urgent: bool):
    """A non-blocking stream; ``urgent``: of the device's highest priority (the value is clamped to its
    range), so that its kernels' blocks are scheduled before those of streams of default priority."""
    if urgent:
        try:
            return cp.cuda.Stream(non_blocking=True, priority=-(1 << 10))
        except TypeError:  # a CuPy without stream priorities
            pass
    return cp.cuda.Stream(non_blocking=True)


def _function(name: str):
    """A kernel of kernels/banded_align.cu: from the shipped cubin when it matches, else compiled."""
    return modules.kernel("banded_align", name)


def kernel_path(out_row, h_ops: np.ndarray, start: int, global_mode: bool) -> tuple:
    """A pair's path tuple (score, query_start, query_end, target_start, target_end, ops), as
    :func:`nwalign.backends.cpu.align_codes` returns it, from a traceback kernel's results: ``out_row`` its six ints
    (score, end row, end column, start row, start column, columns) and its columns walked backwards in
    ``h_ops`` from ``start``. Global paths go on along row 0 / column 0 to the origin. ``ops`` never shares
    memory with ``h_ops`` (a pinned buffer the next launch reuses)."""
    score, end_i, end_j, i, j, nops = out_row
    path = h_ops[start:start + nops][::-1]
    if global_mode and (i or j):
        path = np.concatenate((np.full(j, OP_DEL, np.uint8), np.full(i, OP_INS, np.uint8), path))
        i = j = 0
    return score, i, end_i, j, end_j, path.copy() if path.base is not None else path


class BandedAligner:
    """Global alignments inside doubling diagonal bands of many pairs at once on the GPU.

    Arguments:
        scoring: a :class:`nwalign.scoring.schemes.Scoring` in global mode, at most 32 letters.
        device: CUDA device index.
        threads: CPU threads checking the returned paths (0: every core).
        max_memory: device bytes per launch (default 16 GiB, so that a launch keeps every SM busy with
            genome pairs; capped by half the free memory).
        urgent: launch on a stream of the highest priority (allpairs' tracebacks, which the next batch's
            banded scores must not hold up).

    Raises:
        NwalignError: no usable GPU, a mode other than global, or a matrix of more than 32 letters.
    """

    def __init__(self, scoring, device: int = 0, max_memory: int = 16 << 30, threads: int = 0,
                 urgent: bool = False):
        from nwalign.backends.cuda.batch import device_matrix

        cp = require(device)
        self.cp, self.scoring, self.device = cp, scoring, device
        if scoring.mode != "global":
            raise NwalignError(f"banded GPU alignment: mode {scoring.mode}; the band is for global alignments")
        self.A, self.matrix, self.budget = device_matrix(cp, scoring, max_memory)
        self._max_abs = scoring.max_abs_score()
        self.func = _function("banded_align_global")
        self.blocks = modules.resident_blocks(self.func, THREADS)
        # The score pass (scores): banded_score_global, with a per-lane byte query profile and DPX cells,
        # where the substitution scores fit a signed byte; else banded_align_global without directions.
        fast = int(np.abs(scoring.matrix).max()) <= 127
        self.score_func = _function("banded_score_global") if fast else None
        self.score_shared = 4 * ((self.A * self.A + 1) & ~1) + (THREADS // 32) * self.A * 64 * 4
        self.stream = _stream(cp, urgent)
        self.threads = threads or os.cpu_count() or 1
        self.cells = 0  # band cells swept (the kernel's work), summed over calls
        self.launches, self.kernel_seconds = 0, 0.0  # summed over calls (kernel time by CUDA events)
        # One page-locked buffer for the paths of a launch, grown to a power of two and reused: a new one
        # per launch (hundreds of MB for 8,192 genome pairs) was a fresh cudaHostAlloc each time, since
        # CuPy's pool reuses only blocks of the same size.
        self._h_ops, self._ops_lock = None, threading.Lock()

    def align(self, pairs: list[tuple[np.ndarray, np.ndarray]], optima: list[int], w_max: list[int],
              w_start: int = 32) -> list:
        """Per pair, what :func:`nwalign.backends.cpu.banded.align_global_banded` returns for it: the path tuple
        (score, query_start, query_end, target_start, target_end, ops) of an optimal global alignment inside
        the narrowest doubling band that reaches ``optima[k]``, or None when even the band of half-width
        ``w_max[k]`` does not. Pairs whose band is the whole matrix, or whose scores could leave int32, or
        that alone exceed the memory budget, are aligned by the CPU engine.

        Raises:
            AssertionError: a banded score above the optimum (the optimum given was wrong).
        """
        from nwalign.backends.cpu.banded import align_global_banded

        s = self.scoring
        out: list = [None] * len(pairs)
        w = [max(0, min(w_start, wm)) for wm in w_max]
        cpu = []
        todo = []
        for k, (q, t) in enumerate(pairs):
            m, n = len(q), len(t)
            lo, hi = band_limits(m, n, w[k])
            if (m + n + 1) * self._max_abs >= (1 << 29) or pair_bytes(m, n, lo, hi) > self.budget:
                cpu.append(k)
            else:
                todo.append(k)
        while todo:
            later = []
            for k, path in zip(todo, self._run(pairs, todo, w)):
                m, n = len(pairs[k][0]), len(pairs[k][1])
                lo, hi = band_limits(m, n, w[k])
                if path is not None and path[0] == optima[k]:
                    out[k] = path
                elif path is not None and path[0] > optima[k]:
                    raise AssertionError(f"banded score {path[0]} exceeds the optimum {optima[k]}")
                elif w[k] < w_max[k]:
                    w[k] = min(max(1, 2 * w[k]), w_max[k])
                    lo, hi = band_limits(m, n, w[k])
                    (later if pair_bytes(m, n, lo, hi) <= self.budget else cpu).append(k)
            todo = later
        for k in cpu:  # the CPU engine from the band reached so far (the same doubling sequence on)
            q, t = pairs[k]
            out[k] = align_global_banded(q, t, s.matrix, s.gap_open, s.gap_extend, int(optima[k]), int(w_max[k]),
                                         w_start=w[k])
        return out

    def _run(self, pairs, ks: list[int], w: list[int]) -> list:
        """Each pair of ``ks`` aligned in its current band (where the band is the whole matrix: the CPU
        engine's full alignment, as align_global_banded does), in order of ``ks``."""
        from nwalign.backends.cpu import align_codes

        s = self.scoring
        got: dict = {}
        need = {}  # device bytes of the pairs aligned on the GPU
        for k in ks:
            m, n = len(pairs[k][0]), len(pairs[k][1])
            lo, hi = band_limits(m, n, w[k])
            if lo <= -m and hi >= n:  # the band is the whole matrix
                got[k] = align_codes(pairs[k][0], pairs[k][1], s.matrix, s.gap_open, s.gap_extend, 0)
            else:
                need[k] = pair_bytes(m, n, lo, hi)
        for launch in self._groups(pairs, list(need), need):
            got.update(self._launch(pairs, launch, w))
        return [got[k] for k in ks]

    def _groups(self, pairs, ks: list[int], need: dict) -> list[list[int]]:
        """``ks`` longest first (the longest pair starts at once), cut into launches of at most the memory
        budget (``need[k]``: a pair's device bytes; a pair alone may exceed it)."""
        launches, size, cur = [], 0, []
        for k in sorted(ks, key=lambda k: -len(pairs[k][0])):
            if cur and size + need[k] > self.budget:
                launches.append(cur)
                cur, size = [], 0
            cur.append(k)
            size += need[k]
        if cur:
            launches.append(cur)
        return launches

    def scores(self, pairs: list[tuple[np.ndarray, np.ndarray]], w: list[int]) -> np.ndarray:
        """The optimal global score of each pair inside its band of half-width ``w[k]`` (int64 (len(pairs),);
        the band always holds diagonals 0 .. n - m, so every pair has one): the same fill without its
        direction words or traceback. Pairs whose scores could leave int32 are scored by the CPU engine's
        banded fill.
        """
        from nwalign.backends.cpu.banded import banded_score

        s = self.scoring
        out = np.zeros(len(pairs), dtype=np.int64)
        gpu = []
        for k, (q, t) in enumerate(pairs):
            if (len(q) + len(t) + 1) * self._max_abs >= (1 << 29):
                out[k] = banded_score(q, t, s.matrix, s.gap_open, s.gap_extend, *band_limits(len(q), len(t), w[k]))
            else:
                gpu.append(k)
        need = {k: row_bytes(len(pairs[k][0]), len(pairs[k][1])) for k in gpu}
        for launch in self._groups(pairs, gpu, need):
            out[launch] = self._launch(pairs, launch, w, score_only=True)
        return out

    def _launch(self, pairs, ks: list[int], w: list[int], score_only: bool = False):
        """One launch over the pairs ``ks``: {k: path} (checked by :meth:`_check`), or with
        ``score_only`` the int64 array of their banded scores in order of ``ks``."""
        cp = self.cp
        jobs = np.zeros(len(ks), dtype=_JOB)
        m = np.array([len(pairs[k][0]) for k in ks], dtype=np.int64)
        n = np.array([len(pairs[k][1]) for k in ks], dtype=np.int64)
        half = np.array([w[k] for k in ks], dtype=np.int64)
        lo = np.minimum(0, n - m) - half
        hi = np.maximum(0, n - m) + half
        W = np.minimum(n, BAND + hi - lo)
        jobs["m"], jobs["n"], jobs["lo"], jobs["hi"], jobs["W"] = m, n, lo, hi, W
        sizes = {"dirs": -(-m // BAND) * 32 * W, "row": 2 * (n + 1), "ops": m + n}
        for field, size in sizes.items():
            jobs[field][1:] = np.cumsum(size)[:-1]
        # Each distinct sequence goes to the GPU once (all pairs of 418 genomes: 12 MB, not 2 GB a launch).
        seqs, at = _distinct([x for k in ks for x in pairs[k]])
        jobs["q"], jobs["t"] = at[0::2], at[1::2]
        d_off, r_off, o_off = (int(sizes[f].sum()) for f in ("dirs", "row", "ops"))
        self.cells += int((-(-m // BAND) * BAND * np.minimum(n, BAND + hi - lo)).sum())
        self.launches += 1
        seq = np.concatenate(seqs).astype(np.uint8, copy=False)
        with cp.cuda.Device(self.device), self.stream:  # its device, from whichever thread calls
            d_q = d_t = cp.asarray(seq)
            d_jobs = cp.asarray(jobs.view(np.uint8))
            dirs = None if score_only else cp.empty(max(1, d_off), dtype=cp.uint32)
            rows = cp.empty(max(1, r_off), dtype=cp.int32)
            ops = None if score_only else cp.empty(max(1, o_off), dtype=cp.uint8)
            out = cp.empty(OUT * len(ks), dtype=cp.int32)
            ptr = (lambda a: 0 if a is None else a.data.ptr)
            args = np.array([(d_jobs.data.ptr, len(ks), d_q.data.ptr, d_t.data.ptr, self.matrix.data.ptr, self.A,
                              self.scoring.gap_open, self.scoring.gap_extend, rows.data.ptr, ptr(dirs), ptr(ops),
                              out.data.ptr)], dtype=_ARGS)[0]
            # One warp a pair. Score-only launches get a block per four pairs rather than a grid of resident
            # blocks looping over them, so that an urgent aligner's launch gets SMs as those blocks retire.
            blocks = -(-len(ks) * 32 // THREADS) if score_only else min(-(-len(ks) * 32 // THREADS), self.blocks)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            if score_only and self.score_func is not None:
                self.score_func((blocks,), (THREADS,), (args,), shared_mem=self.score_shared)
            else:
                self.func((blocks,), (THREADS,), (args,))
            stop.record()
            h_out = out.get().reshape(-1, OUT)  # waits for the launch
            self.kernel_seconds += cp.cuda.get_elapsed_time(start, stop) / 1e3
            if score_only:
                return h_out[:, 0].astype(np.int64)
            h_out = h_out.tolist()
            with self._ops_lock:  # page-locked: ~1 GB/s -> ~20 GB/s for GBs of paths
                if self._h_ops is None or self._h_ops.size < o_off:
                    self._h_ops = pinned_empty((1 << max(20, (o_off - 1).bit_length()),), np.uint8)
                h_ops = self._h_ops[:max(1, o_off)]
                ops.get(out=h_ops)
                self._check(seq, jobs, h_out, h_ops, m, n)
                starts = jobs["ops"].tolist()
                # kernel_path copies each path out of the buffer before the next launch reuses it.
                return {k: kernel_path(h_out[x], h_ops, starts[x], True) for x, k in enumerate(ks)}

    def _check(self, seq, jobs, h_out, h_ops, m, n) -> None:
        """Every path of a launch rescored from its columns on the CPU (one compiled pass a pair, releasing
        the GIL, in pieces over ``threads`` threads) against the kernel's score.

        Raises:
            NwalignError: a path that does not consume both sequences or does not score what the kernel says.
        """
        from nwalign.backends.cpu.banded import kernel_paths_scores

        rows = np.asarray(h_out, dtype=np.int64).reshape(-1, OUT)
        count = rows.shape[0]
        score, ok = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=bool)
        S = np.ascontiguousarray(self.scoring.matrix, dtype=np.int64)
        args = (seq, jobs["q"].copy(), jobs["t"].copy(), m, n, h_ops, jobs["ops"].copy(), rows[:, 5].copy(),
                rows[:, 3].copy(), rows[:, 4].copy(), S, int(self.scoring.gap_open), int(self.scoring.gap_extend))
        step = max(64, -(-count // self.threads))
        pieces = [(lo, min(count, lo + step)) for lo in range(0, count, step)]
        if len(pieces) > 1:
            with ThreadPoolExecutor(max_workers=len(pieces)) as pool:
                list(pool.map(lambda p: kernel_paths_scores(*args, p[0], p[1], score, ok), pieces))
        else:
            kernel_paths_scores(*args, 0, count, score, ok)
        bad = np.flatnonzero(~ok | (score != rows[:, 0]))
        if bad.size:
            x = int(bad[0])
            raise NwalignError(f"internal error: a banded GPU alignment ({m[x]} x {n[x]}) does not score "
                               f"{rows[x, 0]}; please report this (use --backend cpu meanwhile)")
