"""Host side of the wavefront kernel: score, full traceback on the GPU, and linear-space traceback.

Score passes: ``wave_score.cu`` (32-bit) or, for long global pairs, ``wave_score16.cu`` (two cells per
s16x2 DPX instruction, scores relative to a moving base, range-checked, recomputed in 32-bit when a check
fails); see docs/gpu-kernels.md.

Traceback memory: the packed directions take half a byte per cell. When they fit in the budget
(``max_memory`` and free GPU memory) one pass stores them and ``wave_trace`` walks them on the GPU; only
the alignment's columns come back. Otherwise the forward pass keeps the H/F rows at every K-th band
boundary (checkpoints), and the traceback recomputes blocks of K bands in reverse, each only up to the
column where the path leaves it, storing and walking that block's directions on the GPU (the
checkpoint-and-recompute scheme of CUDAlign). In global mode each block is recomputed only over a window
of columns around the path, checked by rescoring (see :meth:`Wavefront.align`): a small fraction of the
score pass's work instead of about as much again.
"""

from __future__ import annotations

import logging

import numpy as np

from nwalign.ops import GLOBAL, GLOCAL, LOCAL, NEG, columns_score, finish_path, format_bytes  # not nwalign.backends.cpu: no Numba here
from nwalign.errors import NwalignError
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.structs import SCORE16_ARGS as _SCORE16_ARGS, SCORE_ARGS as _SCORE_ARGS, WAVE_ARGS as _ARGS
from nwalign.backends.cuda.wavetrace import trace_ahead
from nwalign.backends.cuda.wavebase import (RING_BYTES, WAVE_SCORE16_NAMES, WAVE_SCORE_NAMES, WAVEFRONT_NAMES, WINDOW_NAME, DEFAULT_ROWS, LOOKAHEAD, PACKED_MIN_ROWS, PACKED_ROWS, SCORE_ROWS, SCORE_WARPS, STORE_R, WINDOW_MARGIN, WINDOW_ROWS, WINDOW_WIDEN, handoff_row, dirs_bytes)
from nwalign.backends.cuda.device import device_ptr

log = logging.getLogger("nwalign")

def packed_limit(go: int, smax: int) -> int:
    """wave_score16.cu's range check: the largest |H - base| accepted (<= 0: every check fails).

    Between two checks (LOOKAHEAD steps) a cell is at most LOOKAHEAD + 2 neighbours away from a checked
    one (lane 0's input row included), neighbours differ by at most go + smax, intermediate values (E - ge,
    H - go, H(i-1, j-1) + s) reach 3 go + smax beyond, and the base moves by at most the limit: twice the
    limit plus that margin (rounded up generously) must stay within int16.
    """
    margin = (LOOKAHEAD + 6) * (go + smax) + 256
    return (32767 - margin) // 2


def packed_spread(rows: int, go: int, smax: int) -> int:
    """Bound on |H - base| over the cells one warp of wave_score16.cu holds: 32 x rows rows, 64 + 2 x
    LOOKAHEAD columns, neighbours differing by at most go + smax."""
    return (32 * rows + 64 + 2 * LOOKAHEAD) * (go + smax)


def packed_rows(m: int) -> int:
    """Rows per lane of the 16-bit pass for a query of m rows (the measured best on the H100)."""
    return 12 if m < 400_000 else 16


def choose_packed(mode: int, fast: bool, rows: int, go: int, smax: int, m: int, capability: int) -> bool:
    """Whether a score pass runs 16-bit: global mode, byte scores (``fast``), a 16-bit band height, a range
    bound that keeps the check from failing, a query of at least PACKED_MIN_ROWS rows, sm_90 or newer."""
    return (fast and mode == GLOBAL and rows in PACKED_ROWS and packed_spread(rows, go, smax) <= packed_limit(go, smax)
            and m >= PACKED_MIN_ROWS and capability >= 90)


class Wavefront:
    """One pair on the GPU: encoded sequences and scoring uploaded once, launched as often as needed.

    Score passes run 16-bit packed (``wave_score16.cu``) where that is allowed and faster (``packed``: None
    chooses by :func:`choose_packed`), else 32-bit (``wave_score.cu``, or ``wavefront.cu`` for scores beyond
    a signed byte). A packed pass whose range check fails is recomputed in 32-bit at the same band height;
    ``overflows`` counts those. Direction-storing passes are always 32-bit.

    q, t: uint8 residue codes, shapes (m,) and (n,); rows_per_lane: query rows each lane keeps in registers
    (None: :func:`packed_rows` or DEFAULT_ROWS). Raises NwalignError for a height outside SCORE_ROWS, or
    ``packed=True`` where the 16-bit pass cannot run (local/semiglobal mode, wide scores, other heights).
    """

    def __init__(self, cp, q: np.ndarray, t: np.ndarray, scoring, rows_per_lane: int | None = None,
                 packed: bool | None = None, spread=()):
        if rows_per_lane is not None and rows_per_lane not in SCORE_ROWS:
            raise NwalignError(f"wavefront: rows per lane must be one of {', '.join(map(str, SCORE_ROWS))}, "
                               f"not {rows_per_lane}")
        self.cp = cp
        self.m, self.n = len(q), len(t)
        self.mode, self.go, self.ge = scoring.mode_code, scoring.gap_open, scoring.gap_extend
        # wave_score.cu packs scores in signed bytes and go in 16 bits; other scorings take wavefront.cu's pass.
        self.fast = int(np.abs(scoring.matrix).max()) <= 127 and self.go <= 0xFFFF
        smax = max(int(scoring.matrix.max()), 0)
        self.limit16 = packed_limit(self.go, smax)
        rows = rows_per_lane or packed_rows(self.m)
        possible = self.fast and self.mode == GLOBAL and rows in PACKED_ROWS
        if packed is None:
            packed = choose_packed(self.mode, self.fast, rows, self.go, smax, self.m,
                                   int(cp.cuda.Device().compute_capability))
        elif packed and not possible:
            raise NwalignError("wavefront: the 16-bit pass needs global mode, scores in [-128, 127] and "
                               f"{', '.join(map(str, PACKED_ROWS))} rows per lane")
        self.packed = packed
        self.overflows = 0
        if rows_per_lane is None:
            rows_per_lane = rows if packed else DEFAULT_ROWS
        self.rows_per_lane = rows_per_lane if self.fast or rows_per_lane in (4, 8, 16) else 8  # of score passes
        log.info("wavefront: score passes in %s arithmetic, %d query rows per lane",
                 "packed 16-bit" if packed else "32-bit", self.rows_per_lane)
        self.max_blocks = None  # tests: a smaller grid, so warps take several bands each
        self.q_host, self.t_host = q, t  # the windowed traceback's check reads them on the host
        self.matrix_host = np.ascontiguousarray(scoring.matrix, dtype=np.int32)
        self.q = cp.asarray(q)
        self.t = cp.asarray(np.concatenate([t, np.zeros(32, dtype=np.uint8)]))  # wave_score reads past n
        self.A = scoring.matrix.shape[0]
        self.S = cp.asarray(np.ascontiguousarray(scoring.matrix, dtype=np.int32))
        self.corner = cp.zeros(1, dtype=cp.int32)
        self.border_row = cp.asarray(self._border(self.n))
        self.neg_row = cp.full(self.n + 1, NEG, dtype=cp.int32)
        self.spread = None  # the 16-bit score passes over several GPUs (nwalign.backends.cuda.wavespread)
        if packed and len(spread) > 1:
            from nwalign.backends.cuda.wavespread import SpreadPass, enable_peers

            if enable_peers(spread):
                self.spread = SpreadPass(self, spread)
            else:
                log.info("wavefront: GPUs %s have no peer access to each other; one GPU", spread)

    def _border(self, n: int) -> np.ndarray:
        k = np.arange(n + 1, dtype=np.int64)
        out = np.zeros(n + 1, dtype=np.int32)
        if self.mode == GLOBAL:
            out[1:] = -(self.go + (k[1:] - 1) * self.ge)
        return out

    def _function(self, store: bool, rows: int):
        return modules.function("wavefront", f"wavefront<{self.mode}, {'true' if store else 'false'}, {rows}>",
                                name_expressions=WAVEFRONT_NAMES)

    def _score_launch(self, r0: int, r1: int, ncols: int, topH, topF, store: bool, track: bool, ck_every: int,
                      ckH, ckF, packed: bool = False, lo: int = 0):
        """A pass of wave_score.cu (or with ``packed`` wave_score16.cu): rows r0+1..r1 over columns 1..ncols
        (see ``launch``; ``lo``: the window's offset). Returns (dirs, band_best, overflowed)."""
        cp = self.cp
        rows = STORE_R if store else self.rows_per_lane
        nbands = -(-(r1 - r0) // (32 * rows))
        if packed:
            func = modules.function("wave_score16", f"wave_score16<{rows // 2}>", name_expressions=WAVE_SCORE16_NAMES)
            words = 2 if rows <= 8 else 4
            overflow = cp.zeros(1, dtype=cp.int32)
        else:
            name = WINDOW_NAME if lo else f"wave_score<{self.mode}, {rows}, {'true' if store else 'false'}, false>"
            func = modules.function("wave_score", name, name_expressions=WAVE_SCORE_NAMES)
            words = 1 if rows <= 4 else (2 if rows <= 8 else 4)
            overflow = None
        # One query profile per warp, and with directions a ring of 32 x 64 words per warp.
        shared = SCORE_WARPS * (self.A * 32 * words + (32 * 64 if store else 0)) * 4
        if shared > 48 << 10:
            func.max_dynamic_shared_size_bytes = shared
        threads = 32 * SCORE_WARPS
        groups = -(-nbands // SCORE_WARPS)
        blocks = min(modules.resident_blocks(func, threads, shared), groups, self.max_blocks or groups)
        # The hand-off row starts as row r0: H, and F of row r0 + 1 as H - F, tagged as band -1's.
        row = handoff_row(cp)(topH[:ncols + 1], topF[:ncols + 1], self.go, self.ge)
        track = track or self.mode != GLOBAL  # the kernel always reports local and semiglobal end cells
        band_best = cp.zeros(3 * nbands, dtype=cp.int32) if track else None
        ld = ncols + 1
        dirs = cp.empty(nbands * 32 * ld, dtype=cp.uint32) if store else None
        args = np.array([(device_ptr(self.q), device_ptr(self.t) + lo, device_ptr(self.S), self.A, self.m, self.n - lo, self.go, self.ge,
                          r0, r1, ncols, nbands, device_ptr(row), device_ptr(ckH), device_ptr(ckF), ck_every,
                          device_ptr(self.corner), device_ptr(band_best), device_ptr(dirs), ld)], dtype=_SCORE_ARGS)[0]
        if packed:
            args = np.array([(args, self.limit16, device_ptr(overflow))], dtype=_SCORE16_ARGS)[0]
        func((blocks,), (threads,), (args,), shared_mem=shared)
        overflowed = packed and bool(overflow.get()[0])
        return dirs, (band_best.get().reshape(-1, 3) if track else None), overflowed

    def launch(self, r0: int, r1: int, ncols: int, topH, topF, store: bool, track: bool, ck_every: int = 0,
               ckH=None, ckF=None, lo: int = 0):
        """Run rows r0+1..r1 over columns 1..ncols from row r0 = (topH, topF).

        ``lo`` > 0 (global mode, stored directions, byte scores): a window, the columns lo+1..lo+ncols of
        the matrix with -inf left of them below row r0 (topH/topF start at column lo): every cell then
        holds the best score of the paths that stay in the window, at most its true value.

        Returns (dirs or None, band_best host array of shape (nbands, 3) or None).
        """
        if lo:
            assert store and self.fast and self.mode == GLOBAL
            return self._score_launch(r0, r1, ncols, topH, topF, True, False, 0, None, None, lo=lo)[:2]
        if self.packed and not store and not track:
            if self.spread is not None:
                dirs, band_best = None, None
                overflowed = self.spread.launch(r0, r1, ncols, topH, topF, ck_every, ckH, ckF)
            else:
                dirs, band_best, overflowed = self._score_launch(r0, r1, ncols, topH, topF, False, False, ck_every,
                                                                 ckH, ckF, packed=True)
            if not overflowed:
                return dirs, band_best
            # The same rows per lane in 32-bit: the same bands, so checkpoints land on the same rows.
            log.info("wavefront: a 16-bit range check failed (go %d, limit %d); recomputing in 32-bit",
                     self.go, self.limit16)
            self.overflows += 1
            self.packed = False  # the rest of this pair's passes would fail the same way
        if self.fast:
            return self._score_launch(r0, r1, ncols, topH, topF, store, track, ck_every, ckH, ckF)[:2]
        cp = self.cp
        rows = STORE_R if store else self.rows_per_lane
        nbands = -(-(r1 - r0) // (32 * rows))
        ld = ncols + 1
        func = self._function(store, rows)
        shared = self.A * self.A * 4
        resident = modules.resident_blocks(func, 32, shared)  # one warp per block spreads bands over SMs
        warps = min(resident, nbands)
        slots = max(1, min(warps, RING_BYTES // (8 * ld)))
        ringH = cp.empty(slots * ld, dtype=cp.int32)
        ringF = cp.empty(slots * ld, dtype=cp.int32)
        progress = cp.zeros(nbands, dtype=cp.int32)
        dirs = cp.empty(nbands * 32 * ld, dtype=cp.uint32) if store else None
        band_best = cp.zeros(3 * nbands, dtype=cp.int32) if track else None
        args = np.array([(device_ptr(self.q), device_ptr(self.t), device_ptr(self.S), self.A, self.m, self.n, self.go, self.ge, r0,
                          r1, ncols, device_ptr(topH), device_ptr(topF), device_ptr(ringH), device_ptr(ringF), device_ptr(progress), slots,
                          nbands, device_ptr(dirs), device_ptr(ckH), device_ptr(ckF), ck_every, device_ptr(self.corner),
                          device_ptr(band_best), int(track))], dtype=_ARGS)[0]
        func((warps,), (32,), (args,), shared_mem=shared)
        return dirs, (band_best.get().reshape(-1, 3) if track else None)

    def trace(self, dirs, r0: int, ncols: int, io, ops) -> None:
        """Walk the directions of one launch (rows r0+1.., columns 1..ncols) on the GPU: ``wave_trace``.

        io: int32 device array {i, j, state, nops, stopped} (in: the first four); ops: uint8 device array
        receiving the columns in reverse order.
        """
        func = modules.function("wavefront", "wave_trace", name_expressions=WAVEFRONT_NAMES)
        planes = self.fast and self.mode != LOCAL  # wave_score.cu's bit planes, else nibbles
        func((1,), (32,), (dirs, np.int32(r0), np.int32(ncols), np.int32(self.mode == LOCAL), np.int32(planes), io,
                           ops))

    def end_cell(self, band_best) -> tuple[int, int, int]:
        """The optimal score and its end cell: (m, n) in global mode, else the best band's best cell."""
        if self.mode == GLOBAL:
            return int(self.corner.get()[0]), self.m, self.n
        # cells the kernel never visits: the empty local alignment; (0, n) with the query's end free
        # (semiglobal); (m, 0) with only the target's ends free (glocal: the query against gaps)
        best = (0, 0, 0) if self.mode == LOCAL else (-(self.go + (self.m - 1) * self.ge), self.m, 0) \
            if self.mode == GLOCAL else (0, 0, self.n)
        for s, i, j in band_best.tolist():
            if s > best[0] or (s == best[0] and (i, j) < best[1:]):
                best = (s, i, j)
        return best

    def score(self) -> int:
        _, band_best = self.launch(0, self.m, self.n, self.border_row, self.neg_row, False, self.mode != GLOBAL)
        return self.end_cell(band_best)[0]

    def align(self, budget: int, windowed: bool | None = None):
        """Alignment with traceback in about ``budget`` bytes of GPU memory for directions.

        When the directions of all cells do not fit, linear space: the forward pass keeps checkpoint rows
        and the traceback recomputes one block of rows at a time, bottom up, storing its directions. In
        global mode with byte scores (``windowed`` None or True) a block is recomputed only over a window
        of columns left of where the path leaves it (:data:`WINDOW_MARGIN`); the alignment is then rescored
        from its columns, and if it misses the optimum (the path left a window: a long indel) the traceback
        is done again with wider windows (:data:`WINDOW_WIDEN`), then over whole rows, so the result is
        always optimal. Along a path inside every window the recomputed cells hold their true values, so the
        tie rules pick the same alignment as whole rows.

        Returns the CPU engine's ``align_codes`` tuple.
        """
        cp = self.cp
        m, n = self.m, self.n
        ops = cp.empty(m + n, dtype=cp.uint8)
        io = cp.zeros(5, dtype=cp.int32)
        fwd_band = 32 * self.rows_per_lane  # checkpoints fall on the forward pass's band boundaries
        nbands = -(-m // fwd_band)
        per_band = fwd_band * (n + 1) // 2  # direction bytes to recompute one forward band
        if dirs_bytes(m, n) <= budget:
            dirs, band_best = self.launch(0, m, n, self.border_row, self.neg_row, True, self.mode != GLOBAL)
            score, end_i, end_j = self.end_cell(band_best)
            log.info("wavefront traceback: directions of all %d x %d cells on the GPU (%s)", m, n,
                     format_bytes(dirs_bytes(m, n)))
            i, j, nops = self._trace_blocks([(0, None, None)], dirs, end_i, end_j, io, ops)
        else:
            windowed = windowed is not False and self.fast and self.mode == GLOBAL  # what the window pass takes
            if windowed:
                # Checkpoint rows in half the budget, blocks of about WINDOW_ROWS rows.
                cap = max(1, (budget // 2) // (8 * (n + 1)))
                k = max(-(-WINDOW_ROWS // fwd_band), -(-nbands // cap))
                rows = k * fwd_band
                windowed = dirs_bytes(rows, self._reach(rows)) <= budget // 2
            if not windowed:
                k = budget // per_band
                if k < 1:
                    raise NwalignError(f"wavefront traceback of {m} x {n} needs at least {format_bytes(per_band)} "
                                       f"of GPU memory for one band of directions; raise --max-memory")
            count = nbands // k
            ckH = cp.empty((count + 1, n + 1), dtype=cp.int32)
            ckF = cp.empty((count + 1, n + 1), dtype=cp.int32)
            ckH[0] = self.border_row
            ckF[0] = self.neg_row
            _, band_best = self.launch(0, m, n, self.border_row, self.neg_row, False, self.mode != GLOBAL, k,
                                       ckH, ckF)
            score, end_i, end_j = self.end_cell(band_best)
            log.info("wavefront traceback: linear space, checkpoints every %d rows, %s", k * fwd_band,
                     "each block recomputed over a window of columns around the path" if windowed else
                     f"blocks of {format_bytes(k * per_band)} of directions")
            blocks = [(c * k * fwd_band, ckH[c], ckF[c]) for c in range(count + 1)]
            if not windowed:
                i, j, nops = self._trace_blocks(blocks, None, end_i, end_j, io, ops)
                return self._path(score, i, end_i, j, end_j, ops, nops)
            # Windows that miss (a path far off the block's slope: a long indel) are tried again wider from
            # the same checkpoints before whole rows; wider windows cost little beside the score pass.
            for widen in WINDOW_WIDEN:
                if dirs_bytes(rows, self._reach(rows, widen)) > budget // 2:
                    break
                got = trace_ahead(self, blocks, end_i, end_j, ops, widen, budget // 2)
                if got is not None:
                    path = self._path(score, got[0], end_i, got[1], end_j, ops, got[2])
                    if self._scores(path[5], score):
                        return path
                log.info("wavefront traceback: the path left a block's window (margin %d columns)",
                         self._margin(rows) * widen)
            del ckH, ckF, blocks
            log.info("wavefront traceback: again over whole rows")
            return self.align(budget, windowed=False)
        return self._path(score, i, end_i, j, end_j, ops, nops)

    def _scores(self, ops: np.ndarray, score: int) -> bool:
        """Whether the columns ``ops`` consume both sequences and score ``score`` (a windowed traceback's
        check, on the host's threads; a path that misses is traced again, never reported)."""
        ops = np.asarray(ops)
        try:
            return bool(int(np.count_nonzero(ops != 2)) == self.m and int(np.count_nonzero(ops != 1)) == self.n and
                        columns_score(ops, self.q_host, self.t_host, self.matrix_host, self.go, self.ge) == score)
        except ValueError:  # columns past the end of a sequence
            return False

    def _path(self, score: int, i: int, end_i: int, j: int, end_j: int, ops, nops: int):
        """The path tuple from the columns the traceback left on the GPU (``ops[:nops]``, reversed)."""
        host_ops = np.empty(self.m + self.n, dtype=np.uint8)
        host_ops[:nops] = ops[:nops].get()
        return finish_path(self.mode, score, i, end_i, j, end_j, host_ops, nops)

    @staticmethod
    def _margin(rows: int) -> int:
        """Columns a block's window reaches left of the path's expected entry (see WINDOW_MARGIN)."""
        return max(WINDOW_MARGIN, rows // 2)

    def _reach(self, rows: int, widen: int = 1) -> int:
        """Columns a window over ``rows`` rows reaches left of the path's exit column: the block's height
        scaled by n / m, and its margin ``widen`` times."""
        return -(-rows * self.n // self.m) + self._margin(rows) * widen

    def _trace_blocks(self, blocks, dirs, i: int, j: int, io, ops):
        """Walk the path up from (i, j) through ``blocks`` [(top row, its checkpoint H, F), each recomputed
        over whole rows up to the path's column, or (0, None, None) with ``dirs`` holding every cell's
        directions] (the windowed walk: :func:`nwalign.backends.cuda.wavetrace.trace_ahead`). Returns (i, j, columns
        written to ``ops``)."""
        cp = self.cp
        state, nops, stopped = 0, 0, 0
        for top, topH, topF in reversed(blocks):
            if i <= top:
                continue
            if j == 0 or stopped:
                break
            width = self.n
            if topH is not None:  # recompute this block's directions up to column j
                cp.get_default_memory_pool().free_all_blocks()  # whole rows: GBs a block
                width = j
                dirs, _ = self.launch(top, i, width, topH, topF, True, False)
            io.set(np.array([i, j, state, nops, 0], dtype=np.int32))
            self.trace(dirs, top, width, io, ops)
            i, j, state, nops, stopped = (int(v) for v in io.get())
            dirs = None
        return i, j, nops
