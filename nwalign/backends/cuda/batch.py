"""Host side of kernels/batch_align.cu: full alignments (with traceback) of many pairs, one warp each.

Used for a search's reported hits (one batch per query, aligned while the GPU scans the next query),
for allpairs when every pair needs its columns, and for `nwalign pair` with many small pairs. A batch is
cut into launches that fill the GPU once; each launch's input is built in page-locked memory and goes up
in one asynchronous copy, its results come back the same way, and two launches are in flight on two
streams. Alignments are identical to the CPU engine's (same recurrence and tie rules; tested under the
``gpu`` marker).
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from nwalign.errors import NwalignError
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import copy_to_host_async, pinned_empty, require, uploads_done

log = logging.getLogger("nwalign")
BAND = 256  # query rows per band of the kernel (32 lanes x 8 rows)
OUT = 6     # BATCH_OUT: ints per pair of results
WARPS = 4   # BATCH_WARPS: warps per block, one pair per warp
from nwalign.backends.cuda.structs import BATCH_ARGS as _ARGS, BATCH_JOB as _JOB  # noqa: E402

_KERNELS = {0: "batch_align_global", 1: "batch_align_local"}
KERNEL_NAMES = tuple(_KERNELS.values()) + tuple(f"{k}_int" for k in _KERNELS.values())
MODES = ("global", "local")  # the scoring modes the batch kernel aligns
THREADS = 32 * WARPS
STREAMS = 2  # launches alternate between streams, so that one starts while the other's last pairs finish


def dirs_bytes(m, n):
    """Bytes of direction words the kernel stores for an m x n pair (half a byte per cell, bands of 256
    rows, 31 steps of skew per band); ``m`` and ``n`` may be int64 arrays."""
    return -(-m // BAND) * (n + 31) * 128


def device_matrix(cp, scoring, max_memory: int) -> tuple[int, object, int]:
    """(letters, the int32 matrix on the GPU, device bytes per launch: ``max_memory`` capped by half the
    free memory) for the batched traceback kernels (this module's and :mod:`nwalign.backends.cuda.banded`'s).

    Raises:
        NwalignError: a matrix of more than 32 letters.
    """
    A = int(scoring.matrix.shape[0])
    if A > 32:
        raise NwalignError(f"matrix {scoring.matrix_name}: {A} letters; the GPU kernels take at most 32")
    free, _ = cp.cuda.runtime.memGetInfo()
    matrix = cp.asarray(np.ascontiguousarray(scoring.matrix, dtype=np.int32))
    uploads_done(cp)  # before the kernels' (non-blocking) streams read it
    return A, matrix, int(min(max_memory, free // 2))


class BatchAligner:
    """Global or local alignments with traceback of many (query, target) pairs on the GPU.

    One warp per pair sweeps the DP matrix by bands of 256 query rows (Gotoh 1982's recurrence, the CPU
    engine's tie rules; the cell update and direction bits of kernels/wave_score.cu), storing every cell's
    4-bit direction, then walks the path back on the GPU; only each alignment's columns come back, in
    alignment order. Pairs are launched largest first, at most ``max_memory`` bytes of directions and as
    many pairs as warps fit on the GPU per launch, on two streams. Pairs whose directions exceed the budget
    are aligned by the CPU engine instead, so no pair fails for lack of GPU memory.

    Arguments:
        scoring: a :class:`nwalign.scoring.schemes.Scoring` in global or local mode, at most 32 letters.
        device: CUDA device index.
        max_memory: bytes of direction words per launch (default 4 GiB; capped by a quarter of the free
            memory, two launches being in flight).

    Raises:
        NwalignError: no usable GPU, semiglobal mode, or a matrix of more than 32 letters.
    """

    def __init__(self, scoring, device: int = 0, max_memory: int = 4 << 30):
        cp = require(device)
        self.cp, self.scoring, self.device = cp, scoring, device
        if scoring.mode_code not in _KERNELS:
            raise NwalignError(f"batched GPU alignment: mode {scoring.mode} is not global or local")
        self.A, self.matrix, budget = device_matrix(cp, scoring, 2 * max_memory)
        self.budget = budget // 2
        self._max_abs = scoring.max_abs_score()  # asked per pair by fits()
        # Substitution scores that fit a signed byte go through the per-lane query profile; others are read
        # from the int32 matrix per cell (the _int kernels).
        fast = int(np.abs(scoring.matrix).max()) <= 127
        name = _KERNELS[scoring.mode_code] + ("" if fast else "_int")
        self.func = modules.kernel("batch_align", name)
        self.shared = 4 * ((self.A * self.A + 1) & ~1) + (WARPS * self.A * 64 * 4 if fast else 0)
        self.launch_pairs = modules.resident_blocks(self.func, THREADS, self.shared) * WARPS
        # Above the scans in priority, so that a batch's warps take SMs as the scan's blocks finish (CUDA
        # clamps the number to the device's highest priority).
        self.streams = [cp.cuda.Stream(non_blocking=True, priority=-100) for _ in range(STREAMS)]
        self._free: list = []  # page-locked host buffers not in use (see _pinned)
        self._lock = threading.Lock()

    def fits(self, m, n):
        """Whether an m x n pair is aligned on the GPU (directions within the budget, scores in int32);
        ``m`` and ``n`` may be int64 arrays (then a bool array)."""
        return (dirs_bytes(m, n) <= self.budget) & ((m + n + 1) * self._max_abs < (1 << 29))

    def submit(self, pairs: list[tuple[np.ndarray, np.ndarray]]) -> "BatchResult":
        """Start aligning ``pairs`` (uint8 code arrays, lengths >= 1) and return at once; see
        :meth:`BatchResult.result`."""
        qs, ts = [p[0] for p in pairs], [p[1] for p in pairs]
        m = np.fromiter(map(len, qs), np.int64, len(pairs))
        n = np.fromiter(map(len, ts), np.int64, len(pairs))
        need = dirs_bytes(m, n)
        gpu = np.flatnonzero(self.fits(m, n))
        # Largest first, so that the longest pair starts at once; launches of at most `budget` bytes and
        # `launch_pairs` pairs (one warp each: a launch is one round of the grid).
        order = gpu[np.argsort(-(m[gpu] * n[gpu]), kind="stable")]
        cum = np.cumsum(need[order])
        plans, start, base = [], 0, 0
        while start < len(order):
            end = int(np.searchsorted(cum, base + self.budget, side="right"))
            end = min(max(end, start + 1), start + self.launch_pairs)
            plans.append(order[start:end])
            base, start = int(cum[end - 1]), end
        result = BatchResult(self, pairs)
        for ks in plans:  # each launch's input made ready; the first STREAMS queued as soon as they are
            result.add(self._prepare(qs, ts, m, n, ks))
        return result

    def _pinned(self, size: int) -> np.ndarray:
        """A page-locked uint8 host buffer of at least ``size`` bytes, from the free list (see _release)."""

        with self._lock:  # a search submits from one thread and collects from another
            for k, buf in enumerate(self._free):
                if len(buf) >= size:
                    return self._free.pop(k)
            if self._free:  # none large enough: replace the largest
                self._free.remove(max(self._free, key=len))
        return pinned_empty((max(size, 1 << 20),), np.uint8)

    def _release(self, buf: np.ndarray) -> None:
        """Give back a buffer of :meth:`_pinned` once every copy to or from it is done."""
        with self._lock:
            self._free.append(buf)

    def _prepare(self, qs, ts, m, n, ks: np.ndarray):
        """One launch's input in a page-locked buffer: its job table, then its queries and targets."""
        count = len(ks)
        jobs = np.zeros(count, dtype=_JOB)
        mk, nk = m[ks], n[ks]
        jobs["m"], jobs["n"] = mk, nk
        # Each pair's start in the launch's queries, targets, direction words, hand-off rows, columns.
        sizes = {"q": mk, "t": nk, "dirs": dirs_bytes(mk, nk) // 4, "row": nk + 1, "ops": mk + nk}
        for field, size in sizes.items():
            jobs[field][1:] = np.cumsum(size)[:-1]
        lq, lt = int(mk.sum()), int(nk.sum())
        at = jobs.nbytes  # 8-byte aligned: the kernel reads the jobs where the buffer starts
        h_in = self._pinned(at + lq + lt)
        h_in[:at] = jobs.view(np.uint8)
        order = ks.tolist()
        np.concatenate([qs[k] for k in order], out=h_in[at:at + lq], casting="unsafe")
        np.concatenate([ts[k] for k in order], out=h_in[at + lq:at + lq + lt], casting="unsafe")
        sizes = {f: int(v.sum()) for f, v in sizes.items()}
        return ks, jobs, h_in, at, sizes

    def _launch(self, prepared, number: int):
        """Queue one prepared launch on its stream: the input up in one copy, the kernel, the pairs' scores,
        coordinates and columns back in one copy (page-locked buffers: all asynchronous)."""
        cp = self.cp
        ks, jobs, h_in, at, sizes = prepared
        count = len(ks)
        in_bytes = at + sizes["q"] + sizes["t"]
        out_bytes = 4 * OUT * count + sizes["ops"]
        # The results' buffer is not reused: the paths handed out are views of it (a power-of-two size, so
        # that CuPy's pool of page-locked memory takes it back for a later launch once they are gone).

        h_out = pinned_empty((1 << (out_bytes - 1).bit_length(),), np.uint8)
        stream = self.streams[number % len(self.streams)]
        with cp.cuda.Device(self.device), stream:  # its device, from whichever thread calls (result's)
            d_in = cp.empty(in_bytes, dtype=cp.uint8)
            d_in.set(h_in[:in_bytes], stream=stream)
            d_out = cp.empty(out_bytes, dtype=cp.uint8)
            dirs = cp.empty(max(1, sizes["dirs"]), dtype=cp.uint32)
            rows = cp.empty(max(1, sizes["row"]), dtype=cp.uint64)
            ptr, res = d_in.data.ptr, d_out.data.ptr
            args = np.array([(ptr, count, ptr + at, ptr + at + sizes["q"], self.matrix.data.ptr, self.A,
                              self.scoring.gap_open, self.scoring.gap_extend, rows.data.ptr, dirs.data.ptr,
                              res + 4 * OUT * count, res)], dtype=_ARGS)[0]
            self.func((-(-count // WARPS),), (THREADS,), (args,), shared_mem=self.shared)
            copy_to_host_async(d_out, h_out[:out_bytes], stream)
            done = stream.record()
        # The device buffers stay referenced until the results are read (CuPy's pool reuses freed memory at
        # once, and the kernel may still be running).
        return ks, jobs, h_in, (d_in, d_out, dirs, rows), h_out, done


class BatchResult:
    """A submitted batch; :meth:`result` waits for it. Every launch's input is prepared at submission, at
    most :data:`STREAMS` launches are in flight (the next one queued as one finishes): device memory stays
    within ``STREAMS`` budgets however many pairs."""

    def __init__(self, aligner: BatchAligner, pairs):
        self.aligner, self.pairs, self.prepared, self.launches = aligner, pairs, [], []

    def add(self, prepared) -> None:
        """Take one prepared launch; queue it at once while fewer than STREAMS are queued."""
        self.prepared.append(prepared)
        if len(self.launches) < STREAMS:
            self.launches.append(self.aligner._launch(prepared, len(self.launches)))

    def result(self) -> list[tuple[int, int, int, int, int, np.ndarray]]:
        """Per pair, in input order: (score, query_start, query_end, target_start, target_end, ops), as
        :func:`nwalign.backends.cpu.align_codes` returns them (0-based half-open coordinates; ops uint8 columns in
        alignment order: 0 residue pair, 1 query residue against a gap, 2 target residue against a gap).
        The ops of one launch's pairs are views of one page-locked host array."""
        aligner = self.aligner
        got: list = [None] * len(self.pairs)
        t0 = time.perf_counter()
        for number in range(len(self.prepared)):
            ks, jobs, h_in, _, h_res, done = self.launches[number]
            while not done.done:  # poll and sleep: other threads keep the GIL meanwhile
                time.sleep(2e-4)
            self.launches[number] = None  # its device memory back to the pool, for the next launch
            aligner._release(h_in)
            if len(self.launches) < len(self.prepared):
                self.launches.append(aligner._launch(self.prepared[len(self.launches)], len(self.launches)))
            at = 4 * OUT * len(ks)  # the columns follow the ints
            h_out = h_res[:at].view(np.int32).reshape(-1, OUT)
            cols = h_out.T.tolist()  # score, end row, end column, start row, start column, columns
            starts = jobs["ops"] + at
            paths = [h_res[a:b] for a, b in zip(starts.tolist(), (starts + h_out[:, 5]).tolist())]
            for k, value in zip(ks.tolist(), zip(cols[0], cols[3], cols[1], cols[4], cols[2], paths)):
                got[k] = value
        log.debug("batch: %d pairs aligned on the GPU in %d launches (%.1f ms waited)", len(self.pairs),
                  len(self.prepared), 1e3 * (time.perf_counter() - t0))
        for k, value in enumerate(got):
            if value is None:  # too large for the GPU budget: the CPU engine (bounded memory)
                from nwalign.backends.cpu import align_codes

                s = aligner.scoring
                got[k] = align_codes(self.pairs[k][0], self.pairs[k][1], s.matrix, s.gap_open, s.gap_extend,
                                     s.mode_code)
        return got
