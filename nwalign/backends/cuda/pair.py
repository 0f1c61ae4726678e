"""Host orchestration of the CUDA pair kernels: upload, launch plan, result, direction bytes.

Every kernel computes Gotoh's recurrence with the CPU engine's direction byte per cell, so the
traceback is the CPU engine's walk over the bytes copied back (row-major, or anti-diagonal-major for
``adm-submatrix``). Score-only runs move no matrix to the host.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from nwalign.ops import GLOBAL, LOCAL, finish_path, format_bytes  # Numba (the CPU tracebacks below) only when used
from nwalign.errors import NwalignError, option_error
from nwalign.backends.cuda import modules
from nwalign.backends.cuda import BLOCK_SHAPES, KERNELS
from nwalign.backends.cuda.device import device_ptr, pinned_empty, require, uploads_done

log = logging.getLogger("nwalign")

_POS_BITS = 34
_BIAS = 1 << 29

from nwalign.backends.cuda.structs import ADIAG_ARGS as _ADIAG_ARGS, TILE_ARGS as _TILE_ARGS  # noqa: E402


@dataclass
class Options:
    """Kernel choice and its knobs: ``block`` (rows, cols) and ``shared`` for diagonal-block;
    ``submatrix_cells`` for adm-submatrix; ``max_memory`` for the wavefront traceback."""

    kernel: str = "wavefront"
    block: tuple[int, int] = (32, 32)
    shared: bool = True
    device: int = 0
    submatrix_cells: int = 1 << 26
    max_memory: int | None = None  # wavefront: GPU bytes for directions (None: 40% of free memory)
    rows_per_lane: int | None = None  # wavefront score passes: query rows each lane keeps in registers
    # (4, 6, 8, 12, 16; 8, 12, 16 for the 16-bit pass); None: the measured best (wavefront.DEFAULT_*ROWS)
    packed: bool | None = None  # wavefront: 16-bit packed score pass (None: where the scoring allows it)
    spread: tuple[int, ...] = ()  # wavefront: GPUs its 16-bit score passes spread over (the first: ``device``)


def _border(k: np.ndarray, mode: int, go: int, ge: int) -> np.ndarray:
    out = np.zeros(k.shape, dtype=np.int32)
    if mode == GLOBAL:
        pos = k > 0
        out[pos] = -(go + (k[pos] - 1) * ge)
    return out


def _initial_best(mode: int, n: int) -> int:
    """The key of the score-0 alignment the kernels never visit: empty (local) or all overhang (semiglobal)."""
    pos = 0 if mode == LOCAL else n
    return ((0 + _BIAS) << _POS_BITS) | ((1 << _POS_BITS) - 1 - pos)


class _Run:
    """Device buffers and result cells shared by every kernel family."""

    def __init__(self, cp, q, t, scoring, store: int, opts: Options):
        self.cp = cp
        self.m, self.n = len(q), len(t)
        self.mode, self.go, self.ge = scoring.mode_code, scoring.gap_open, scoring.gap_extend
        self.q = cp.asarray(q)
        self.t = cp.asarray(t)
        self.S = cp.asarray(np.ascontiguousarray(scoring.matrix, dtype=np.int32))
        self.A = scoring.matrix.shape[0]
        self.corner = cp.zeros(1, dtype=cp.int32)
        self.best = cp.full(1, _initial_best(self.mode, self.n), dtype=cp.uint64)
        self.pos_keys = int(self.m * (self.n + 1) < (1 << _POS_BITS))
        self.dirs = cp.empty(self.m * (self.n + 1), dtype=cp.uint8) if store == 1 else None
        self.store = store

    def result(self) -> tuple[int, int, int]:
        """(score, end_i, end_j) after the kernels have run."""
        if self.mode == GLOBAL:
            return int(self.corner.get()[0]), self.m, self.n
        key = int(self.best.get()[0])
        score = (key >> _POS_BITS) - _BIAS
        pos = (1 << _POS_BITS) - 1 - (key & ((1 << _POS_BITS) - 1))
        if not self.pos_keys:
            if self.store:
                raise NwalignError("traceback of local/semiglobal alignments this large needs --backend cpu")
            return score, 0, 0
        return score, pos // (self.n + 1), pos % (self.n + 1)


def _adiag_args(run: _Run, H, E, F, dirs=None, store=0, adm_off=None, adm_base=0):
    return np.array([(device_ptr(run.q), device_ptr(run.t), device_ptr(run.S), run.A, run.m, run.n, run.go, run.ge, run.mode,
                      device_ptr(H), device_ptr(E), device_ptr(F), device_ptr(dirs), store, device_ptr(adm_off), adm_base, device_ptr(run.corner),
                      device_ptr(run.best), run.pos_keys)], dtype=_ADIAG_ARGS)[0]


def _adiag_buffers(run: _Run):
    cp = run.cp
    size = run.m + 1
    return (cp.zeros(3 * size, dtype=cp.int32), cp.zeros(2 * size, dtype=cp.int32),
            cp.zeros(2 * size, dtype=cp.int32))


def _diag_len(d: int, m: int, n: int) -> int:
    return min(m, d) - max(0, d - n) + 1


def _run_antidiagonal(run: _Run, opts: Options) -> None:
    H, E, F = _adiag_buffers(run)
    args = _adiag_args(run, H, E, F, run.dirs, run.store)
    step = modules.function("antidiagonal", "adiag_step")
    sweep = modules.function("antidiagonal", "adiag_sweep")
    m, n = run.m, run.n
    sweep((1,), (32,), (args, np.int32(0), np.int32(1)))  # diagonal 0: the origin
    if opts.kernel == "antidiagonal":
        for d in range(1, m + n + 1):
            threads = 256
            blocks = (_diag_len(d, m, n) + threads - 1) // threads
            step((blocks,), (threads,), (args, np.int32(d)))
        return
    # antidiagonal-multi: consecutive short diagonals share one warp- or block-sized launch.
    d = 1
    while d <= m + n:
        length = _diag_len(d, m, n)
        if length > 1024:
            step(((length + 255) // 256,), (256,), (args, np.int32(d)))
            d += 1
            continue
        width = 32 if length <= 32 else 1024
        end = d
        while end <= m + n and (_diag_len(end, m, n) <= 32 if width == 32 else 32 < _diag_len(end, m, n) <= 1024):
            end += 1
        sweep((1,), (width,), (args, np.int32(d), np.int32(end)))
        d = end


def _coop_grid(threads: int):
    func = modules.function("antidiagonal", "adiag_coop", cooperative=True)
    return func, modules.resident_blocks(func, threads)


def _run_coop(run: _Run, opts: Options) -> None:
    H, E, F = _adiag_buffers(run)
    args = _adiag_args(run, H, E, F, run.dirs, run.store)
    func, blocks = _coop_grid(256)
    blocks = min(blocks, max(1, (min(run.m, run.n) + 1 + 255) // 256))
    log.info("antidiagonal-coop: %d blocks x 256 threads in one cooperative launch", blocks)
    func((blocks,), (256,), (args, np.int32(0), np.int32(run.m + run.n + 1)))


def adm_offsets(m: int, n: int) -> np.ndarray:
    """Start of each anti-diagonal's interior cells (i, j >= 1) in anti-diagonal-major order (int64, m+n+2)."""
    d = np.arange(m + n + 1, dtype=np.int64)
    lengths = np.clip(np.minimum(m, d - 1) - np.maximum(1, d - n) + 1, 0, None)
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)


def _run_adm(run: _Run, opts: Options):
    """Sub-matrices of whole anti-diagonals, computed into one of two device buffers while the other is
    copied to pinned host memory on a second stream (Kurt et al., IV.B.3-4)."""

    cp = run.cp
    m, n = run.m, run.n
    offsets = adm_offsets(m, n)
    total = int(offsets[-1])
    host = pinned_empty((max(total, 1),), dtype=np.uint8)
    H, E, F = _adiag_buffers(run)
    dev_offsets = cp.asarray(offsets)
    chunk = max(1, min(opts.submatrix_cells, total))
    buffers = [cp.empty(chunk + max(m, n) + 1, dtype=cp.uint8) for _ in range(2)]
    func, blocks = _coop_grid(256)
    blocks = min(blocks, max(1, (min(m, n) + 1 + 255) // 256))
    compute, copy = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    uploads_done(cp)  # the sequences, borders and buffers, before the compute stream reads them
    copied = [None, None]
    d0, k = 0, 0
    with compute:
        while d0 <= m + n:
            d1 = d0 + 1  # take whole diagonals until the sub-matrix holds about `chunk` cells
            while d1 <= m + n and offsets[d1 + 1] - offsets[d0] <= chunk:
                d1 += 1
            buf = buffers[k % 2]
            if copied[k % 2] is not None:
                compute.wait_event(copied[k % 2])  # the buffer's previous copy must be finished
            args = _adiag_args(run, H, E, F, buf, 2, dev_offsets, int(offsets[d0]))
            func((blocks,), (256,), (args, np.int32(d0), np.int32(d1)))
            done = compute.record()
            lo, hi = int(offsets[d0]), int(offsets[min(d1, m + n + 1)])
            if hi > lo:
                copy.wait_event(done)
                cp.cuda.runtime.memcpyAsync(host[lo:hi].ctypes.data, buf.data.ptr, hi - lo,
                                            cp.cuda.runtime.memcpyDeviceToHost, copy.ptr)
                copied[k % 2] = copy.record()
            d0, k = d1, k + 1
    copy.synchronize()
    compute.synchronize()
    log.info("adm-submatrix: %d sub-matrices of up to %s, copied on a second stream", k, format_bytes(chunk))
    return host, offsets


def _run_tiles(run: _Run, opts: Options, persistent: bool) -> None:
    cp = run.cp
    m, n = run.m, run.n
    bh, bw = (32, 32) if persistent else opts.block
    if (bh, bw) not in BLOCK_SHAPES:
        raise option_error("block", "--block", f"{bh}x{bw}: choose one of " + ", ".join(f"{r}x{c}" for r, c in BLOCK_SHAPES))
    rowH = cp.asarray(_border(np.arange(n + 1), run.mode, run.go, run.ge))
    rowF = cp.full(n + 1, -(1 << 30), dtype=cp.int32)
    colH = cp.asarray(_border(np.arange(m + 1), run.mode, run.go, run.ge))
    colE = cp.full(m + 1, -(1 << 30), dtype=cp.int32)
    tiles_i, tiles_j = (m + bh - 1) // bh, (n + bw - 1) // bw
    corner_left = cp.zeros(tiles_i, dtype=cp.int32)
    args = np.array([(device_ptr(run.q), device_ptr(run.t), device_ptr(run.S), run.A, m, n, run.go, run.ge, run.mode, device_ptr(rowH),
                      device_ptr(rowF), device_ptr(colH), device_ptr(colE), device_ptr(corner_left), device_ptr(run.dirs), run.store,
                      device_ptr(run.corner), device_ptr(run.best), run.pos_keys)], dtype=_TILE_ARGS)[0]
    if persistent:
        func = modules.function("skewed_lockfree", "skewed_lockfree")
        blocks = min(modules.resident_blocks(func, 1024), min(tiles_i, tiles_j))
        arrive = cp.zeros(blocks, dtype=cp.int32)
        release = cp.zeros(blocks, dtype=cp.int32)
        log.info("skewed-lockfree: %d resident blocks of 32x32 threads, %d tile diagonals", blocks,
                 tiles_i + tiles_j - 1)
        func((blocks,), (32, 32), (args, np.int32(tiles_i), np.int32(tiles_j), arrive, release))
        return
    shared = "true" if opts.shared else "false"
    name = f"diagonal_block<{bh}, {bw}, {shared}>"
    func = modules.function("diagonal_block", name, name_expressions=(name,))
    for k in range(tiles_i + tiles_j - 1):
        count = min(tiles_i - 1, k) - max(0, k - (tiles_j - 1)) + 1
        func((count,), (bw, bh), (args, np.int32(k), np.int32(tiles_i), np.int32(tiles_j)))


def _run_wavefront(cp, q, t, scoring, traceback: bool, opts: Options):
    from nwalign.backends.cuda.wavefront import Wavefront

    try:
        wf = Wavefront(cp, q, t, scoring, opts.rows_per_lane, opts.packed, opts.spread)
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        if traceback:
            # Blocks cached by CuPy's pool count as free (a repeat alignment reuses them instead of a new
            # cudaMalloc of gigabytes; the pool frees its cache and retries by itself when an allocation fails).
            free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
            # Directions get 40% of free memory: a recompute block and the next one's allocation must fit.
            budget = int(free * 0.4) if opts.max_memory is None else min(opts.max_memory, int(free * 0.4))
            result = wf.align(budget)
        else:
            result = (wf.score(), 0, len(q), 0, len(t), None)
        cp.cuda.Device().synchronize()
        return result, time.perf_counter() - start
    except cp.cuda.memory.OutOfMemoryError as exc:
        raise NwalignError(f"GPU out of memory ({exc}); lower --max-memory (forces the linear-space traceback) "
                           "or use --backend cpu") from None


def _check_memory(cp, need: int, what: str) -> None:
    free, _ = cp.cuda.runtime.memGetInfo()
    if need > free * 0.9:
        raise NwalignError(
            f"GPU memory: {what} needs {format_bytes(need)}, {format_bytes(free)} free; use --score-only, "
            "--kernel adm-submatrix (streams the matrix to host memory) or --backend cpu")


def run_kernel(q: np.ndarray, t: np.ndarray, scoring, traceback: bool, opts: Options):
    """Run one kernel on one pair.

    Arguments:
        q, t: uint8 residue codes, shapes (m,) and (n,).
        scoring: :class:`nwalign.scoring.schemes.Scoring`.
        traceback: also produce direction bytes and walk them back.
        opts: kernel choice and knobs.

    Returns:
        (score, query_start, query_end, target_start, target_end, ops) like the CPU engine's
        ``align_codes`` (ops None when ``traceback`` is false), and the kernel time in seconds.

    Raises:
        NwalignError: no CuPy/GPU, unknown kernel, GPU memory too small.
    """
    if opts.kernel not in KERNELS:
        raise NwalignError(f"unknown kernel {opts.kernel!r} (choose from {', '.join(KERNELS)})")
    if scoring.mode not in ("global", "local", "semiglobal") and opts.kernel != "wavefront":
        raise NwalignError(f"kernel {opts.kernel}: mode {scoring.mode} runs on the wavefront kernel",
                           cli=f"--kernel {opts.kernel}: --mode {scoring.mode} runs on the wavefront kernel (the default)")
    cp = require(opts.device)
    m, n = len(q), len(t)
    if opts.kernel == "wavefront":
        return _run_wavefront(cp, q, t, scoring, traceback, opts)
    adm = opts.kernel == "adm-submatrix" and traceback
    store = 1 if traceback and not adm else 0
    if store:
        _check_memory(cp, m * (n + 1) + 16 * (m + n), "the direction matrix")
    try:
        run = _Run(cp, q, t, scoring, store, opts)
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        host_adm = None
        if opts.kernel in ("antidiagonal", "antidiagonal-multi"):
            _run_antidiagonal(run, opts)
        elif opts.kernel == "antidiagonal-coop" or (opts.kernel == "adm-submatrix" and not traceback):
            _run_coop(run, opts)
        elif adm:
            host_adm = _run_adm(run, opts)
        else:
            _run_tiles(run, opts, persistent=opts.kernel == "skewed-lockfree")
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - start
        score, end_i, end_j = run.result()
        if not traceback:
            return (score, 0, end_i, 0, end_j, None), seconds
        from nwalign.backends.cpu.dp import trace_antidiagonal_major, trace_band  # the papers' kernels: traceback on the CPU

        ops = np.empty(m + n, dtype=np.uint8)
        if host_adm is not None:
            adm_bytes, offsets = host_adm
            i, j, state, nops, _ = trace_antidiagonal_major(adm_bytes, offsets, n, end_i, end_j, 0, ops, 0)
        else:
            dirs = run.dirs.get().reshape(m, n + 1)
            i, j, state, nops, _ = trace_band(dirs, 0, end_i, end_j, 0, ops, 0)
        return finish_path(run.mode, score, i, end_i, j, end_j, ops, nops), seconds
    except cp.cuda.memory.OutOfMemoryError as exc:
        raise NwalignError(f"GPU out of memory ({exc}); use --score-only, --kernel adm-submatrix or "
                           "--backend cpu") from None
