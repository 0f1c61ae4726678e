"""Host side of the all-pairs score kernels (kernels/allpairs.cu, after Li, Sajjapongse, Truong, Conant and
Becchi's multiple pairwise Needleman-Wunsch on GPUs and CPU-GPU clusters, section 4).

The sequences are uploaded once. Pairs come in batches sized from free GPU memory; each batch is
sorted by (query length, target length) so the threads of a warp finish together, copied from pinned
host memory on one of two streams, scored, and copied back, so that one batch's transfers and the
host's work on the previous batch overlap the next batch's kernels (double buffering).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import numpy as np

from nwalign import names
from nwalign.errors import NwalignError, option_error
from nwalign.scoring.schemes import SCORE_LIMIT
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import copy_to_host_async, pinned_empty, require, uploads_done

log = logging.getLogger("nwalign")

KERNELS = names.ALLPAIRS_KERNELS
SLICES = names.ALLPAIRS_SLICES  # lazy-rscan slice heights (query rows per thread, in registers)
TILES = (8, 16, 32)             # tiled-dscan tile sizes
DEFAULT_SLICE = names.ALLPAIRS_DEFAULT_SLICE
DEFAULT_TILE = 16
DEFAULT_DSCAN_THREADS = 256
LAZY_THREADS = 128
MAX_BATCH = 1 << 20             # pairs per batch, whatever the memory
MAX_ALPHABET = 32
from nwalign.backends.cuda.structs import SETS as _SETS  # noqa: E402
# Every template instance, compiled in one NVRTC call (and cached on disk by CuPy).
_NAMES = tuple([f"lazy_rscan<{m}, {k}>" for m in range(4) for k in (1,) + SLICES] + [f"dscan<{m}>" for m in range(4)]
               + [f"tiled_dscan<{m}, {t}>" for m in range(4) for t in TILES])  # modes 0-3: global .. glocal


def _function(name: str):
    return modules.function("allpairs", name, name_expressions=_NAMES)


def load_kernels() -> None:
    """Load the all-pairs kernels' module on the current GPU (compiled once by NVRTC, then from CuPy's
    cache): the warm-up at the command's start (:mod:`nwalign.launch`)."""
    _function(_NAMES[0])


def choose_kernel(n_pairs: int, max_length: int, multiprocessors: int) -> str:
    """The ``auto`` rule: lazy-rscan (one thread per pair) unless there are too few pairs to give every
    multiprocessor a few warps, where dscan (one block per pair) keeps the GPU busier.

    On the H100 lazy-rscan already beats dscan at 19,900 pairs of 1.5 kb (473 against 340 GCUPS);
    docs/performance.md has the crossover measurements behind ``64 * multiprocessors`` pairs.
    """
    if n_pairs >= 64 * multiprocessors or max_length < 256:
        return "lazy-rscan"
    return "dscan"


def check_options(kernel: str = "auto", slice_k: int | None = None, tile: int | None = None) -> None:
    """Refuse a kernel, slice height or block size that the kernels do not take (no GPU needed, so that
    the command line checks them before reading its input).

    Raises:
        NwalignError: naming the option.
    """
    if kernel not in KERNELS + ("auto",):
        raise option_error("kernel", "--kernel", f"{kernel}: allpairs kernels are {', '.join(KERNELS)} (or auto)")
    if slice_k is not None and slice_k not in SLICES:
        raise option_error("slice_k", "--slice", f"{slice_k}: choose one of {', '.join(map(str, SLICES))}")
    if kernel == "tiled-dscan" and (tile or DEFAULT_TILE) not in TILES:
        raise option_error("block", "--block", f"{tile}: tiled-dscan tiles are {', '.join(map(str, TILES))}")
    if kernel == "dscan" and tile is not None and not (32 <= tile <= 1024 and tile % 32 == 0):
        raise option_error("block", "--block", f"{tile}: dscan threads per block must be a multiple of 32 up to 1024")
    if kernel in ("lazy-rscan", "rscan") and tile is not None and not (32 <= tile <= 256 and tile % 32 == 0):
        raise option_error("block", "--block", f"{tile}: {kernel} threads per block must be a multiple of 32 up to 256")


class AllPairsScorer:
    """Optimal scores of many pairs of one sequence collection on the GPU.

    Arguments:
        codes: the residue codes of every sequence (uint8 arrays, each of length >= 1); pairs index them
            on both sides unless :meth:`set_queries` gives a separate query set.
        scoring: the scoring scheme (its matrix must have at most 32 letters).
        kernel: one of :data:`KERNELS`, or ``auto`` (see :func:`choose_kernel`).
        slice_k: lazy-rscan slice height (one of :data:`SLICES`).
        tile: tiled-dscan tile size (one of :data:`TILES`); threads per block for the other kernels.
        device: CUDA device index.
        max_memory: cap on the device bytes the batches may use (default: half the free memory).

    Raises:
        NwalignError: no usable GPU, an unknown kernel or slice, or a matrix with more than 32 letters.
    """

    def __init__(self, codes: list[np.ndarray], scoring, kernel: str = "auto", slice_k: int | None = None,
                 tile: int | None = None, device: int = 0, max_memory: int | None = None):
        check_options(kernel, slice_k, tile)
        cp = require(device)
        self.cp = cp
        self.slice_k = DEFAULT_SLICE if slice_k is None else slice_k
        A = scoring.matrix.shape[0]
        if A > MAX_ALPHABET:
            raise NwalignError(f"matrix {scoring.matrix_name}: {A} letters; the GPU kernels take at most "
                               f"{MAX_ALPHABET} (use --backend cpu)")
        self.kernel_request, self.tile = kernel, tile
        self.t_lengths, self.t_seqs, self.t_offsets = self._upload(codes)
        self.q_lengths, self.q_seqs, self.q_offsets = self.t_lengths, self.t_seqs, self.t_offsets
        self.max_length = int(self.t_lengths.max())  # bounds both sides (scratch sizes)
        self.matrix = cp.asarray(np.ascontiguousarray(scoring.matrix, dtype=np.int32))
        self.A = A
        self.go, self.ge = int(scoring.gap_open), int(scoring.gap_extend)
        self.mode = scoring.mode_code
        dev = cp.cuda.Device()
        self.sms = dev.attributes["MultiProcessorCount"]
        self.smem_optin = dev.attributes.get("MaxSharedMemoryPerBlockOptin", 48 << 10)
        free, _ = cp.cuda.runtime.memGetInfo()
        self.budget = int(max_memory if max_memory else free // 2)
        self.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
        uploads_done(cp)  # the sequences and matrix, before the kernels' streams read them
        self.cells = 0
        self.gpu_seconds = 0.0  # kernel time (CUDA events), summed over batches

    def _upload(self, codes):
        lengths = np.array([len(c) for c in codes], dtype=np.int64)
        if lengths.size == 0 or lengths.min() < 1:
            raise NwalignError("every sequence needs at least one residue")
        offsets = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return lengths, self.cp.asarray(np.concatenate(codes).astype(np.uint8)), self.cp.asarray(offsets)

    def set_queries(self, codes: list[np.ndarray]) -> None:
        """A separate query set (pairs then index it on the left, the constructor's set on the right)."""
        self.q_lengths, self.q_seqs, self.q_offsets = self._upload(codes)
        self.max_length = max(int(self.t_lengths.max()), int(self.q_lengths.max()))
        uploads_done(self.cp)

    def _sets(self):
        return np.array([(self.q_seqs.data.ptr, self.q_offsets.data.ptr, self.t_seqs.data.ptr,
                          self.t_offsets.data.ptr)], dtype=_SETS)[0]

    # -- planning ---------------------------------------------------------------------------------
    def kernel_for(self, n_pairs: int) -> str:
        if self.kernel_request != "auto":
            return self.kernel_request
        return choose_kernel(n_pairs, self.max_length, self.sms)

    def _dscan_shared(self) -> int:
        return 4 * (self.A * self.A + 7 * (self.max_length + 1))

    def bytes_per_pair(self, kernel: str) -> int:
        """Device bytes one pair of a batch needs (pair indices, score, and the kernel's scratch)."""
        L = self.max_length
        base = 8 + 4
        if kernel in ("lazy-rscan", "rscan"):  # one H and F per target column
            return base + 8 * int(self.t_lengths.max())
        if kernel == "dscan":
            return base + (0 if self._dscan_shared() <= self.smem_optin - 1024 else 4 * 7 * (L + 1))
        T = self.tile or DEFAULT_TILE
        return base + 2 * ((L + T - 1) // T) * (2 * T + 1) * 4

    def wave(self, kernel: str) -> int:
        """Pairs the GPU runs at once: the resident threads of a one-thread-per-pair kernel (lazy-rscan,
        rscan), else 1. A batch of a whole number of waves leaves no thread of the last wave idle."""
        if kernel not in ("lazy-rscan", "rscan"):
            return 1
        k = 1 if kernel == "rscan" else self.slice_k
        threads = self.tile or LAZY_THREADS
        return modules.resident_blocks(_function(f"lazy_rscan<{self.mode}, {k}>"), threads,
                                       4 * (self.A + 1) * self.A) * threads

    def batch_size(self, kernel: str, waves: bool = True) -> int:
        """Pairs per batch: two batches in flight must fit the memory budget. For the one-thread-per-pair
        kernels a batch is a whole number of waves of resident threads when it can be, so that with long
        sequences the GPU works on the next batch while the host aligns the previous one's survivors."""
        per = self.bytes_per_pair(kernel)
        size = min(MAX_BATCH, self.budget // (2 * per))
        if size < 1:
            raise NwalignError(f"GPU memory: one pair of {self.max_length} residues needs {per} bytes of "
                               f"scratch; only {self.budget} are available (use --backend cpu)")
        wave = self.wave(kernel)
        if waves and size > wave:
            size = size // wave * wave
        return int(size)

    # -- launching --------------------------------------------------------------------------------
    def _launch(self, kernel: str, d_pairs, n: int, d_scores, scratch, max_q: int, max_t: int):
        i32 = np.int32
        common = (self._sets(), d_pairs, i32(n), self.matrix, i32(self.A), i32(self.go), i32(self.ge))
        if kernel in ("lazy-rscan", "rscan"):
            k = 1 if kernel == "rscan" else self.slice_k
            name = f"lazy_rscan<{self.mode}, {k}>"
            func = _function(name)
            # scratch: 2 * (longest target) * n ints, read by the kernel as (G, F) int2 pairs

            threads = self.tile or LAZY_THREADS
            blocks = (n + threads - 1) // threads
            func((blocks,), (threads,), common + (scratch, d_scores),
                 shared_mem=4 * (self.A + 1) * self.A)
        elif kernel == "dscan":
            name = f"dscan<{self.mode}>"
            func = _function(name)
            threads = self.tile or DEFAULT_DSCAN_THREADS
            shared = self._dscan_shared()
            if shared <= self.smem_optin - 1024:
                if shared > 48 << 10:
                    func.max_dynamic_shared_size_bytes = shared
                func((n,), (threads,), common + (scratch, np.int64(0), d_scores), shared_mem=shared)
            else:
                ints = 7 * (self.max_length + 1)
                func((n,), (threads,), common + (scratch, np.int64(ints), d_scores), shared_mem=4 * self.A * self.A)
        else:
            T = self.tile or DEFAULT_TILE
            name = f"tiled_dscan<{self.mode}, {T}>"
            func = _function(name)
            slots = (self.max_length + T - 1) // T
            half = n * slots * (2 * T + 1)
            rowbuf, colbuf = scratch[:half], scratch[half: 2 * half]
            d_scores.fill(-(1 << 30) if self.mode in (0, 3) else 0)  # global and glocal: no free empty end
            # Tile diagonals of the batch's longest sequences; shorter pairs' blocks exit at once.
            tq, tt = (max_q + T - 1) // T, (max_t + T - 1) // T
            for D in range(tq + tt - 1):
                width = min(D + 1, tq, tt)
                func((n, width), (T,), common + (i32(D), rowbuf, colbuf, i32(slots), i32(slots), d_scores),
                     shared_mem=4 * self.A * self.A)

    def _scratch_ints(self, kernel: str, n: int) -> int:
        return max(1, (self.bytes_per_pair(kernel) - 12) * n // 4)

    def scores_resident(self, d_pairs, kernel: str, batch: int):
        """Scores of pairs already on the GPU (CuPy int32 (k, 2), in the order to run them), on the current
        stream, ``batch`` pairs per launch; returns a CuPy int32 (k,) array. For repeated runs over the
        same pairs (a database search), where re-sending the pairs would cost more than the kernel."""
        cp = self.cp
        total = d_pairs.shape[0]
        out = cp.empty(total, dtype=cp.int32)
        max_q, max_t = int(self.q_lengths.max()), int(self.t_lengths.max())
        for lo in range(0, total, batch):
            n = min(batch, total - lo)
            scratch = cp.empty(self._scratch_ints(kernel, n), dtype=cp.int32)
            self._launch(kernel, d_pairs[lo:lo + n], n, out[lo:lo + n], scratch, max_q, max_t)
        return out

    def scores(self, pairs: np.ndarray, kernel: str | None = None) -> np.ndarray:
        """Scores of one array of pairs (int32, shape (k, 2): indices into ``codes``) -> int64 (k,)."""
        pairs = np.asarray(pairs, dtype=np.int32).reshape(-1, 2)
        size = self.batch_size(kernel or self.kernel_for(len(pairs)))
        chunks = [pairs[k:k + size] for k in range(0, len(pairs), size)]
        return np.concatenate([s for _, s in self.stream(chunks, kernel)] +
                              [np.zeros(0, dtype=np.int64)])

    def stream(self, batches: Iterable[np.ndarray], kernel: str | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Score batches of pairs (int32 (k, 2) arrays, each at most :meth:`batch_size` long), yielding
        (pairs, int64 scores) in order; batch k+1 is queued on the GPU before batch k is returned."""
        cp = self.cp

        slots = [None, None]  # per stream: (pairs, order, pinned scores, event, device buffers)
        k = 0
        for pairs in batches:
            n = len(pairs)
            if n == 0:
                continue
            name = kernel or self.kernel_for(n)
            s = k % 2
            if slots[s] is not None:  # this stream's previous batch: finish and hand it out first
                yield self._collect(slots[s])
                slots[s] = None
            q_len = self.q_lengths[pairs[:, 0]]
            t_len = self.t_lengths[pairs[:, 1]]
            order = np.lexsort((t_len, q_len))
            self.cells += int((q_len * t_len).sum())
            pinned_pairs = pinned_empty((n, 2), dtype=np.int32)
            pinned_pairs[:] = pairs[order]
            pinned_scores = pinned_empty((n,), dtype=np.int32)
            stream = self.streams[s]
            with stream:
                d_pairs = cp.empty((n, 2), dtype=cp.int32)
                d_pairs.set(pinned_pairs, stream=stream)
                d_scores = cp.empty(n, dtype=cp.int32)
                scratch = cp.empty(self._scratch_ints(name, n), dtype=cp.int32)
                start = stream.record()
                self._launch(name, d_pairs, n, d_scores, scratch, int(q_len.max()), int(t_len.max()))
                event = stream.record()
                copy_to_host_async(d_scores, pinned_scores, stream)
                done = stream.record()
            slots[s] = (pairs, order, pinned_scores, (start, event, done), (d_pairs, d_scores, scratch, pinned_pairs))
            k += 1
        for s in (k % 2, (k + 1) % 2):
            if slots[s] is not None:
                yield self._collect(slots[s])

    def _collect(self, slot) -> tuple[np.ndarray, np.ndarray]:
        """A batch's (pairs, int64 scores), in the pairs' order.

        Raises:
            NwalignError: a score no alignment can have (beyond the range that Scoring.check_lengths keeps
                every score in): a kernel that left it unset is reported, never written.
        """
        pairs, order, pinned_scores, (start, end, done), _buffers = slot
        done.synchronize()
        self.gpu_seconds += self.cp.cuda.get_elapsed_time(start, end) / 1000.0
        scores = np.empty(len(pairs), dtype=np.int64)
        scores[order] = pinned_scores
        bad = np.flatnonzero(np.abs(scores) >= SCORE_LIMIT)
        if bad.size:
            raise NwalignError(f"internal error: the GPU's all-pairs kernel gave pair {pairs[bad[0]].tolist()} the "
                               f"score {int(scores[bad[0]])}, which no alignment has; please report this (use "
                               "--backend cpu meanwhile)")
        return pairs, scores
