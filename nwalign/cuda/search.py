"""Host side of the GPU search kernels: ``gsw`` (after Akoglu and Striemer's GSW, "Scalable and highly
parallel implementation of Smith-Waterman on GPU using CUDA") and ``scan`` (kernels/sw_search.cu, after
CUDASW++4.0's layout); the database is uploaded once and kept on the GPU for every query."""

from __future__ import annotations

import logging
import time

import numpy as np

from ..errors import NwalignError
from . import copy_to_host_async, modules, require

log = logging.getLogger("nwalign")
MAX_QUERY = 60000  # GSW_MAX_QUERY in gsw.cu (constant memory)
_TEMP_BYTES = 2 << 30  # cap on the temporary columns of one batch
SLOTS = 2  # queries in flight on the GPU at once by default (sets of score buffers)


class GswSearcher:
    """Scores of a query against every database sequence with the ``gsw`` kernel (one thread per
    sequence, length-sorted, query and matrix in constant memory)."""

    def __init__(self, db, scoring, device: int = 0):
        cp = require(device)
        self.cp = cp
        letters = np.asarray(db.ascii(), dtype=np.uint8)
        if letters.size and (letters.min() < ord("A") or letters.max() > ord("Z")):
            raise NwalignError("gsw: the database has characters outside A-Z (such as '*'); use --backend cpu")
        self.count = db.count
        self.db = cp.asarray(letters - ord("A"))
        self.offsets = cp.asarray(np.asarray(db.offsets, dtype=np.int64))
        lengths = np.diff(np.asarray(db.offsets))
        self.order = cp.asarray(np.argsort(lengths, kind="stable").astype(np.int32))
        # The paper's alphabetical 26 x 26 layout: entry [a][b] scores letters 'A'+a and 'A'+b.
        az = np.arange(ord("A"), ord("Z") + 1, dtype=np.uint8)
        codes = scoring.encode_bytes(az).astype(np.int64)
        valid = codes != 255
        table = np.zeros((26, 26), dtype=np.int32)
        sub = scoring.matrix[np.ix_(codes[valid], codes[valid])]
        table[np.ix_(np.flatnonzero(valid), np.flatnonzero(valid))] = sub
        self.go, self.ge = scoring.gap_open, scoring.gap_extend
        self.module = modules.module("gsw")
        self.func = self.module.get_function("gsw")
        cp.ndarray((26 * 26,), cp.int32, self.module.get_global("c_matrix"))[:] = cp.asarray(table.ravel())
        self.c_query = cp.ndarray((MAX_QUERY,), cp.uint8, self.module.get_global("c_query"))

    def scores(self, query_seq: str) -> np.ndarray:
        """Best local score of ``query_seq`` (upper-case letters) against every sequence (int64, (count,))."""
        cp = self.cp
        m = len(query_seq)
        if m > MAX_QUERY:
            raise NwalignError(f"gsw: query of {m} residues exceeds {MAX_QUERY}; use --backend cpu")
        q = np.frombuffer(query_seq.encode(), dtype=np.uint8)
        if q.min() < ord("A") or q.max() > ord("Z"):
            raise NwalignError("gsw: the query has characters outside A-Z; use --backend cpu")
        self.c_query[:m] = cp.asarray(q - ord("A"))
        best = cp.zeros(self.count, dtype=cp.int32)
        batch = max(1, min(self.count, _TEMP_BYTES // (8 * m)))
        threads = 128
        for lo in range(0, self.count, batch):
            n = min(batch, self.count - lo)
            blocks = (n + threads - 1) // threads
            temp = cp.empty(2 * m * blocks * threads, dtype=cp.int32)
            self.func((blocks,), (threads,), (self.db, self.offsets, self.order[lo:lo + n], np.int32(n), np.int32(m),
                                              np.int32(self.go), np.int32(self.ge), temp, best))
        return best.get().astype(np.int64)

    def score_query(self, query) -> np.ndarray:
        """Scores of an encoded query (:class:`nwalign.engine.Encoded`) against every sequence."""
        return self.scores(query.record.seq.upper())


class ScanSearcher:
    """Smith-Waterman scores of queries against every database sequence with the ``scan`` kernel
    (kernels/sw_search.cu; the intra-sequence layout of CUDASW++4.0, Schmidt et al. 2024).

    The database is uploaded once, sorted by decreasing length and cut into length partitions: a
    group of G threads (4-32) scores two sequences of one partition at once in packed 16-bit
    arithmetic, each thread holding R columns of both in registers while the query streams through
    the group; sequences longer than the group's G x R columns take several passes (the boundary
    column goes through memory). Each range of lengths takes the smallest configuration that holds it
    (see ``plan``). A score that may have left the int16 range is recomputed by the 32-bit form of the
    kernel. Ranges run on several streams, the longest first, each as a persistent grid.

    Arguments:
        codes: the database residue codes (uint8, all sequences concatenated).
        offsets: int64 (count + 1,) sequence boundaries in ``codes``.
        scoring: a local-mode :class:`nwalign.scoring.Scoring`.
        device: CUDA device index.
        packed16: run the 16-bit form first (False: every sequence in 32-bit, for tests).
        plan: ``auto`` (the default: ``profile`` on GPUs with DPX instructions, sm_90 and later, when the
            database holds at least :data:`PROFILE_MIN_RESIDUES_PER_SM` residues per multiprocessor, else
            ``wider``), ``profile`` (the sequences up to :data:`PROFILE_MAX_LEN` residues take
            kernels/sw_profile.cu, where a group holds a tile of the query in registers and the database
            streams through it, scored from a query profile in shared memory; the longer ones take plan
            ``wider``; on older GPUs all of them), ``wider`` (the
            smallest single-pass configuration that holds each length range, up to 1,280 residues with
            :data:`WIDE_SINGLE`'s and :data:`WIDER_SINGLE`'s groups of 168-228 registers, one block per
            SM; multi-pass groups of 32 beyond), ``wide`` (single passes up to 896 residues), ``single``
            (up to 640, 128 registers) or ``cost`` (the configuration with the fewest cell slots per
            range, small multi-pass groups for short queries). On an H100 over the 20 benchmark queries:
            ``profile`` 4,793 GCUPS, ``wider`` 4,134-4,158, ``wide`` 4,069-4,099, ``single`` 3,955;
            ``cost`` slower still (docs/performance.md).
        min_threads: merge length ranges smaller than this into the next longer one (default
            :data:`MIN_THREADS`; tests use 0 to run every configuration on a small database).
        slots: queries in flight at once (:meth:`submit`), each with its own score buffers (default
            :data:`SLOTS`).

    Raises:
        NwalignError: no usable GPU, an empty database sequence, or a matrix with more than 32 letters.
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, scoring, device: int = 0, packed16: bool = True,
                 plan: str = "auto", min_threads: int | None = None, uploaded: "DeviceDatabase | None" = None,
                 slots: int | None = None):
        cp = require(device)
        self.cp, self.scoring, self.device = cp, scoring, device
        A = int(scoring.matrix.shape[0])
        if A > 32:
            raise NwalignError(f"matrix {scoring.matrix_name}: {A} letters; the GPU kernels take at most 32 "
                               "(use --backend cpu)")
        # The database on the GPU in length order (made here, or beforehand from the same codes).
        self.db = db = uploaded if uploaded is not None else DeviceDatabase(codes, offsets, device)
        self.order, self.rank, self.sorted_lengths, self.residues = db.order, db.rank, db.sorted_lengths, db.residues
        self.d_order, self.d_off, self.d_res = db.d_order, db.d_off, db.d_res
        self.count, self.A = db.count, A
        self.go, self.ge = int(scoring.gap_open), int(scoring.gap_extend)
        dev = cp.cuda.Device()
        self.hopper = int(dev.compute_capability) >= 90  # "90", "100": compare as numbers
        need = 4 * _table_words(A, False)
        smem = dev.attributes.get("MaxSharedMemoryPerBlockOptin", 48 << 10)
        if need > smem:
            raise NwalignError(f"scan: the score table needs {need} bytes of shared memory; this GPU has {smem}")
        self.limit = 32767 - int(scoring.matrix.max()) - self.go
        self.packed16 = packed16 and self.limit > 0 and self.go + self.ge < 8000 and \
            int(scoring.matrix.min()) > -8000
        self.tables = {wide: cp.asarray(_score_table(scoring.matrix, self.go, wide)) for wide in (False, True)}
        self.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(4)]  # the length ranges' launches
        self.profile_stream = cp.cuda.Stream(non_blocking=True)
        # Host-to-GPU copies go on a stream with nothing queued, so that they never wait for scans in
        # flight; scores are scattered and copied back on `main`.
        self.upload, self.main = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
        from . import pinned_empty

        # Score buffers per query in flight: one query's scores are copied back while the next one scans.
        slots = slots or SLOTS
        self._slots = [_Slot(cp.empty(self.count, dtype=cp.int32), cp.empty(self.count, dtype=cp.int32),
                             pinned_empty((self.count,), dtype=np.int32)) for _ in range(slots)]
        self._submitted = 0
        self.slots = slots
        #: Threads per block of a configuration (G, R, multi) where not 256: see :data:`BLOCK_THREADS`.
        self.block_threads: dict = dict(BLOCK_THREADS)
        self.recomputed = 0
        self.cells = 0
        self.scan_seconds = 0.0  # wall time inside scores(), summed
        self.wide_part = _Part(*CONFIGS[self.hopper][2], True, 0, 0)
        self._plans: dict = {}
        if plan not in PLANS:
            raise NwalignError(f"scan: plan {plan!r} is not one of {', '.join(PLANS)}")
        self.min_threads = min_threads
        # Plan "profile": the sequences up to PROFILE_MAX_LEN residues (a suffix of the length order) take
        # sw_profile.cu, the longer ones the plan "wider".
        if plan == "auto":
            plan = "profile" if self.residues >= PROFILE_MIN_RESIDUES_PER_SM * dev.attributes["MultiProcessorCount"] \
                else "wider"
        self.plan = plan
        self.profile_first = int(np.searchsorted(-self.sorted_lengths, -PROFILE_MAX_LEN, side="left")) \
            if plan == "profile" and self.packed16 and self.hopper else self.count
        #: (first, count, first residue, residues) of each chunk of plan profile's sequences: a multi-pass
        #: query's boundary rows (8 bytes per residue of a chunk) are kept for one chunk at a time.
        self.profile_chunks = _chunks(self.sorted_lengths, self.profile_first, PROFILE_CHUNK_RESIDUES)
        self._bound = None  # sw_profile's boundary rows (multi-pass queries), made on first use
        self._profile_table = _scores_plus_go(scoring.matrix, self.go) & 0xFFFF  # [query letter, db letter]

    def partitions(self, m: int) -> list:
        """The sw_search.cu launches for a query of ``m`` residues (see :func:`_partitions`; cached by
        length). Plan ``profile``: those of plan ``wider`` over the sequences longer than
        :data:`PROFILE_MAX_LEN` only (the rest take sw_profile.cu)."""
        if m not in self._plans:
            wider = self.plan in ("wider", "profile")
            parts = _partitions(self.sorted_lengths[:self.profile_first], self.packed16, self.hopper, m,
                                self.plan != "cost", self.min_threads, self.plan in ("wide", "wider", "profile"), wider)
            self._plans[m] = parts
        return self._plans[m]

    def _launch_profile(self, query: np.ndarray, stream, d_scores, counters):
        """sw_profile.cu over the sequences from ``profile_first`` on, chunk by chunk
        (:attr:`profile_chunks`), one launch per tile of the query (:func:`profile_config`) on ``stream``;
        returns the scratch to keep alive. ``counters``: zeroed int32, one per launch."""
        cp = self.cp
        if self.profile_first == self.count:
            return None
        m = int(query.size)
        G, R, passes = profile_config(m)
        tile = G * R
        A1 = self.A + 1
        q = np.full(passes * tile, self.A, dtype=np.int64)
        q[:m] = query
        # [pass][letter][row of the tile]: (S(q_i, b) + go) & 0xffff
        prof = self._profile_table[q].reshape(passes, tile, A1).transpose(0, 2, 1)
        with stream:
            d_prof = cp.asarray(np.ascontiguousarray(prof).astype(np.uint32))
            d_scores[self.profile_first:].fill(0)
        if passes > 1 and self._bound is None:
            words = max(residues for _, _, _, residues in self.profile_chunks)
            try:
                self._bound = cp.empty(words, dtype=cp.uint64)
            except cp.cuda.memory.OutOfMemoryError:
                raise NwalignError(f"scan: no GPU memory for the boundary rows of a query longer than {tile} "
                                   f"residues ({8 * words / 2**30:.1f} GiB): split the database, or use "
                                   "--backend cpu") from None
        bound = self._bound if passes > 1 else d_prof
        func = _profile_kernel(G, R)
        threads = 256
        shared = profile_shared_bytes(G, R, A1, threads)
        if shared > 48 << 10:
            func.max_dynamic_shared_size_bytes = shared
        resident = modules.resident_blocks(func, threads, shared)
        launch = 0
        for first, count, base, _ in self.profile_chunks:
            pairs = (count + 1) // 2
            blocks = min((pairs * G + threads - 1) // threads, resident)
            res = self.d_res[base:]
            for p in range(passes):
                args = np.array([(res.data.ptr, self.d_off.data.ptr, first, count, d_prof[p].data.ptr, A1, self.A,
                                  self.go, self.ge, int(p > 0), int(p < passes - 1), bound.data.ptr,
                                  d_scores.data.ptr, counters[launch:].data.ptr)], dtype=_SP_ARGS)[0]
                with stream:
                    func((blocks,), (threads,), (args,), shared_mem=shared)
                launch += 1
        return d_prof

    def profile_launches(self, m: int) -> int:
        """How many sw_profile.cu launches a query of ``m`` residues takes (0 without plan ``profile``)."""
        return len(self.profile_chunks) * profile_config(m)[2] if self.profile_first < self.count else 0

    def _qrow(self, query: np.ndarray, wide: bool):
        """Row offsets (bytes into the table) of the padded query, as the kernel reads them: SW_QPAD rows
        before it and enough after it for the longest pipeline (G = 32) and the loads 4 steps ahead."""
        A1 = self.A + 1
        stride = 4 * A1 * (1 if wide else 32)
        q = np.full(_QPAD + query.size + 32 + 3 + 8, self.A, dtype=np.int64)
        q[_QPAD:_QPAD + query.size] = query
        return self.cp.asarray((q * stride).astype(np.int32))

    def _launch(self, part, query: np.ndarray, qrows: dict, stream, d_scores, wide: bool = False, d_list=None,
                count: int | None = None, counter=None):
        cp = self.cp
        G, R, multi = part.G, part.R, part.multi
        m = int(query.size)
        steps = (m + G - 1 + 3) // 4 * 4
        per = 1 if wide else 2
        count = part.count if count is None else count
        groups = (count + per - 1) // per
        threads = self.block_threads.get((G, R, multi), 256)
        table = self.tables[wide]
        shared = 4 * int(table.size)
        func = _kernel(self.hopper, wide, G, R, multi)
        if shared > 48 << 10:
            func.max_dynamic_shared_size_bytes = shared
        blocks = min((groups * G + threads - 1) // threads, modules.resident_blocks(func, threads, shared))
        slots = blocks * (threads // G)  # group slots of the persistent grid
        bound = cp.empty(2 * (steps + _QPAD + 40) * slots * 2 if multi else 1, dtype=cp.uint32)
        args = np.array([(self.d_res.data.ptr, self.d_off.data.ptr, 0 if d_list is None else d_list.data.ptr,
                          part.first, count, qrows[wide].data.ptr, m, steps, table.data.ptr, table.size,
                          self.A, self.go, self.ge, bound.data.ptr, d_scores.data.ptr, counter.data.ptr)],
                        dtype=_ARGS)[0]
        with stream:
            func((blocks,), (threads,), (args,), shared_mem=shared)
        return bound  # keep the scratch alive until the stream is done

    def submit(self, query: np.ndarray) -> "_Ticket":
        """Start scoring ``query`` (uint8 codes, length >= 1) against every database sequence; returns a
        ticket for :meth:`result`. Successive queries' scans queue on the GPU back to back, so the host
        works on one query's scores while the next one scans. Take results in submission order, with at
        most ``slots`` queries in flight.

        Raises:
            NwalignError: an empty query.
        """
        cp = self.cp
        started = time.perf_counter()
        query = np.asarray(query, dtype=np.uint8)
        if query.size == 0:
            raise NwalignError("scan: empty query")
        slot = self._slots[self._submitted % self.slots]
        if slot.busy:
            raise RuntimeError(f"scan: more than {self.slots} queries in flight")
        slot.busy = True
        self._submitted += 1
        ticket = _Ticket(query, slot, self.main)
        parts = self.partitions(int(query.size))
        with self.upload:
            ticket.qrows = {wide: self._qrow(query, wide) for wide in (False, True)}
            # one work counter per launch (the last: recomputation), then sw_profile's, one per pass
            ticket.counters = cp.zeros(len(parts) + 1 + self.profile_launches(int(query.size)), dtype=cp.int32)
            start = self.upload.record()
        if self.profile_first < self.count:  # on a stream of its own, beside the longer sequences' ranges
            self.profile_stream.wait_event(start)
            ticket.keep.append(self._launch_profile(query, self.profile_stream, slot.d_scores,
                                                    ticket.counters[len(parts) + 1:]))
            ticket.main.wait_event(self.profile_stream.record())
        for k, part in enumerate(parts):  # longest first, over the streams
            stream = self.streams[k % len(self.streams)]
            stream.wait_event(start)
            ticket.keep.append(self._launch(part, query, ticket.qrows, stream, slot.d_scores,
                                            wide=not self.packed16, counter=ticket.counters[k:]))
        for stream in self.streams:
            ticket.main.wait_event(stream.record())
        ticket.done = self._copy_back(slot, ticket.main)
        self.scan_seconds += time.perf_counter() - started
        return ticket

    def result(self, ticket: "_Ticket") -> np.ndarray:
        """The scores of a submitted query (int64, shape (count,), database order); those that may have
        left the int16 range are recomputed in 32-bit first."""
        started = time.perf_counter()
        slot, query = ticket.slot, ticket.query
        parts = self.partitions(int(query.size))
        got = self._wait(slot, ticket.done)
        if self.packed16 and got.size and got.max() >= self.limit:  # one pass; indices only where needed
            again = np.flatnonzero(got >= self.limit)
            if again.size:  # may have wrapped: exact 32-bit scores for these
                self.recomputed += int(again.size)
                with self.upload:
                    d_list = self.cp.asarray(self.rank[again])
                    ticket.main.wait_event(self.upload.record())
                ticket.keep.append(self._launch(self.wide_part, query, ticket.qrows, ticket.main, slot.d_scores,
                                                True, d_list, int(again.size), ticket.counters[len(parts):]))
                got = self._wait(slot, self._copy_back(slot, ticket.main))
        out = got.astype(np.int64)
        slot.busy = False
        self.cells += int(query.size) * self.residues
        self.scan_seconds += time.perf_counter() - started
        return out

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Best local score of ``query`` (uint8 codes, length >= 1) against every database sequence
        (int64, shape (count,), database order): :meth:`submit`, then :meth:`result`."""
        return self.result(self.submit(query))

    def _copy_back(self, slot: "_Slot", stream):
        """Scatter a slot's scores into database order on the GPU, then one copy to its pinned buffer;
        returns the event that marks the copy done."""
        with stream:
            slot.d_out[self.d_order] = slot.d_scores
            copy_to_host_async(slot.d_out, slot.h_out, stream)
            return stream.record()

    @staticmethod
    def _wait(slot: "_Slot", done) -> np.ndarray:
        """A slot's scores once its copy is done. Polls the event and sleeps, so that other threads
        (aligning the previous query's hits) hold the GIL meanwhile."""
        while not done.done:
            time.sleep(2e-4)
        return slot.h_out

    def score_query(self, query) -> np.ndarray:
        """Scores of an encoded query (:class:`nwalign.engine.Encoded`) against every sequence."""
        return self.scores(query.codes)

    def submit_query(self, query) -> "_Ticket":
        """:meth:`submit` for an encoded query (:class:`nwalign.engine.Encoded`)."""
        return self.submit(query.codes)

    def describe(self, m: int = 1000) -> str:
        """One line for ``-v``: how the database is cut (for a query of ``m`` residues) and which sequences
        take the slower paths."""
        parts = self.partitions(m)
        multi = [p for p in parts if p.multi]
        longer = sum(p.count for p in multi)
        said = []
        if self.profile_first < self.count:
            G, R, passes = profile_config(m)
            said.append(f"{self.count - self.profile_first:,} sequences up to {PROFILE_MAX_LEN:,} residues with a "
                        f"query profile (a {m:,}-residue query: groups of {G} threads, {G * R} rows a pass, "
                        f"{passes} pass{'es' if passes > 1 else ''})")
        if parts:
            groups = sorted({p.G for p in parts})
            sizes = f"{groups[0]}-{groups[-1]}" if len(groups) > 1 else str(groups[0])
            which = f"the {self.profile_first:,} longer" if said else "the database"
            said.append(f"{which} in {len(parts)} length range{'s' if len(parts) > 1 else ''} (groups of {sizes} "
                        "threads)")
        said.append(f"{'packed 16-bit' if self.packed16 else '32-bit'} scores")
        if longer:
            said.append(f"{longer:,} sequences longer than one pass take passes of "
                        f"{max(p.G * p.R for p in multi)} columns")
        if self.packed16:
            said.append(f"scores >= {self.limit} are recomputed in 32-bit")
        return "scan: " + "; ".join(said)

_QPAD = 32  # SW_QPAD in sw_search.cu
from .structs import SP_ARGS as _SP_ARGS  # noqa: E402
from .structs import SW_ARGS as _ARGS  # noqa: E402
PLANS = ("auto", "wider", "wide", "single", "cost", "profile")
#: Plan ``profile``: database sequences up to this length take sw_profile.cu (longer ones would hold one
#: group of the persistent grid for longer than the average group's whole share of the launch).
PROFILE_MAX_LEN = 4096
#: Residues per chunk of plan profile's sequences (bounds the boundary rows at 8 bytes a residue: 2 GiB).
PROFILE_CHUNK_RESIDUES = 1 << 28


def _chunks(sorted_lengths: np.ndarray, first: int, residues: int) -> list[tuple[int, int, int, int]]:
    """Cut sequences ``first``.. (length order) into contiguous chunks of at most ``residues`` residues
    (or one sequence pair, if longer) that start at an even distance from ``first``; each as (first,
    count, first residue, residues)."""
    ends = np.cumsum(sorted_lengths, dtype=np.int64)
    start = int(ends[first - 1]) if first else 0
    out = []
    while first < sorted_lengths.size:
        k = int(np.searchsorted(ends, start + residues, side="right"))  # sequences first..k-1 fit
        k = max(k - (k - first) % 2, first + 2) if k < sorted_lengths.size else k
        k = min(k, sorted_lengths.size)
        out.append((first, k - first, start, int(ends[k - 1]) - start))
        first, start = k, int(ends[k - 1])
    return out


#: Plan ``auto`` takes plan ``profile`` for databases of at least this many residues per multiprocessor
#: (50.7 M on an H100): below it the profile launches are too short for their fill and tail, and plan
#: ``wider`` is faster (H100, the 20 benchmark queries: 36 M residues 3,611 against 3,872 GCUPS, 72 M 4,320
#: against 3,974; docs/performance.md).
PROFILE_MIN_RESIDUES_PER_SM = 384_000
#: sw_profile.cu's instantiations (threads per group G, query rows per thread R), sm_90 only.
PROFILE_CONFIGS = [(4, r) for r in (16, 20, 24, 28, 32, 36)] + [(g, r) for g in (8, 16) for r in (16, 20, 24, 28, 32)] \
    + [(32, r) for r in (16, 20, 24, 28)]


def profile_shared_bytes(G: int, R: int, A1: int, threads: int = 256) -> int:
    """Dynamic shared memory of sw_profile<G, R> for A1 letters (its layout: the profile tile, padded and,
    for groups of 4, twice; then a ring of 4 pairs per group)."""
    seg = ((R // 4) | 1) * 4
    row = G * seg + (16 if G == 4 else 0)
    copies = 2 if G == 4 else 1
    return 4 * copies * (A1 * row + (16 if copies > 1 else 0)) + (threads // G) * 16 * 4


def profile_config(m: int) -> tuple[int, int, int]:
    """(G, R, passes) of sw_profile.cu for a query of ``m`` residues: the fewest row slots (passes x G x R),
    each thread's per-column work besides its R cells counted as 3 more, groups of 32 threads 5 % more (fewer
    pairs in flight: measured slower at 729-5,147 residues) and each pass as 16 (the launch's tail), then the
    fewest passes (``scripts/profiling/profile_configs.py``)."""
    def cost(c):
        g, r = c
        p = -(-m // (g * r))
        return (p * g * r * (1 + 3 / r) * (1.05 if g == 32 else 1) + 16 * p, p)
    g, r = min(PROFILE_CONFIGS, key=cost)
    return g, r, -(-m // (g * r))


def _profile_mangled(G: int, R: int) -> str:
    """The mangled name of ``sw_profile<G, R>(SpArgs)`` in a cubin."""
    return f"_Z10sw_profileILi{G}ELi{R}EEv6SpArgs"


def profile_kernel_names() -> list[str]:
    """Mangled names of every sw_profile.cu kernel plan ``profile`` may launch (for ``warm_up``)."""
    return [_profile_mangled(g, r) for g, r in PROFILE_CONFIGS]


def _profile_kernel(G: int, R: int):
    """sw_profile<G, R> from the shipped cubin when it fits this GPU and the sources, else compiled by NVRTC."""
    names = tuple(f"sw_profile<{g}, {r}>" for g, r in PROFILE_CONFIGS)
    return modules.prebuilt_function("sw_profile", _profile_mangled(G, R)) or \
        modules.function("sw_profile", f"sw_profile<{G}, {R}>", name_expressions=names)

_PAD_SCORE = -16384  # substitution score of the padding letter (rows and columns outside the sequences)
# Per architecture (sm_90's DPX instructions, or their emulation, which needs more registers): the
# single-pass configurations (threads per group G, columns per thread R), the columns per thread of the
# multi-pass form (any G of 4, 8, 16, 32), and the 32-bit multi-pass form (recomputation).
# sw_search.cu instantiates exactly these.
CONFIGS = {
    True: ([(4, r) for r in (4, 8, 12, 16)] + [(g, r) for g in (8, 16) for r in (10, 12, 14, 16, 18)]
           + [(32, r) for r in (10, 12, 14, 16, 18, 20)], 14, (32, 14)),
    False: ([(4, r) for r in (4, 8, 12)] + [(g, r) for g in (8, 16, 32) for r in (8, 10, 12)], 6, (32, 14)),
}
#: Single-pass configurations beyond 128 registers (one block of 256 threads per SM), used by the ``wide``
#: plan: sequences up to 896 residues without a second pass.
WIDE_SINGLE = {True: [(32, 24), (32, 28)], False: []}
#: Wider still (213-228 registers; plan ``wider``: up to 1,280 residues in one pass).
WIDER_SINGLE = {True: [(32, 32), (32, 40)], False: []}
GROUPS = (4, 8, 16, 32)
#: Threads per block where not 256, by configuration (G, R, multi). Empty: blocks of 192 for G=32, R=24
#: (168 registers: two blocks, 12 warps per SM instead of 8) measured within the run-to-run noise on the
#: H100 (4,170 and 4,190 GCUPS against 4,136 and 4,202; docs/performance.md), so the simpler rule stays.
BLOCK_THREADS: dict = {}
MIN_THREADS = 16384  # a launch with fewer threads than this is merged into the next longer range




class _Slot:
    """The score buffers of one query in flight: length order and database order on the GPU, and the
    pinned host copy."""

    def __init__(self, d_scores, d_out, h_out):
        self.d_scores, self.d_out, self.h_out, self.busy = d_scores, d_out, h_out, False


class _Ticket:
    """A submitted query: its slot, uploaded query rows, scratch kept alive until the scan is done, work
    counters, the stream that copies its scores back and the event that marks the copy done."""

    def __init__(self, query, slot, main):
        self.query, self.slot, self.main = query, slot, main
        self.qrows: dict = {}  # wide (bool) -> the query's rows on the GPU
        self.keep: list = []
        self.counters = self.done = None


class _Part:
    def __init__(self, G, R, multi, first, count):
        self.G, self.R, self.multi, self.first, self.count = G, R, multi, first, count

    def __repr__(self):
        return f"_Part(G={self.G}, R={self.R}, multi={self.multi}, first={self.first}, count={self.count})"


def _name(wide: bool, G: int, R: int, multi: bool) -> str:
    return f"sw_scan<{'true' if wide else 'false'}, {G}, {R}, {'true' if multi else 'false'}>"


def _configs(hopper: bool) -> list[tuple[bool, int, int, bool]]:
    """Every (wide, G, R, multi) instantiation of ``sw_scan`` a GPU with (or without) DPX instructions uses."""
    single, r_multi, wide = CONFIGS[hopper]
    return [(False, g, r, False) for g, r in single + WIDE_SINGLE[hopper] + WIDER_SINGLE[hopper]] + \
        [(False, g, r_multi, True) for g in GROUPS] + [(True, *wide, True)]


def _names(hopper: bool) -> tuple[str, ...]:
    return tuple(_name(*c) for c in _configs(hopper))


def _mangled(wide: bool, G: int, R: int, multi: bool) -> str:
    """The C++ (Itanium) mangled name of ``sw_scan<wide, G, R, multi>(SwArgs)``, as it stands in a cubin."""
    return f"_Z7sw_scanILb{int(wide)}ELi{G}ELi{R}ELb{int(multi)}EEv6SwArgs"


def kernel_names(hopper: bool = True) -> list[str]:
    """Mangled names of the scan kernels the default plan may launch on a GPU with (``hopper``) or
    without DPX instructions, and the gather kernel: for :func:`nwalign.cuda.warm_up`."""
    return [_mangled(*c) for c in _configs(hopper)] + ["sw_gather"]


def _kernel(hopper: bool, wide: bool, G: int, R: int, multi: bool):
    """The kernel from the shipped cubin when it fits this GPU and the sources, else compiled by NVRTC."""
    return modules.prebuilt_function("sw_search", _mangled(wide, G, R, multi)) or \
        modules.function("sw_search", _name(wide, G, R, multi), name_expressions=_names(hopper))


def _partitions(sorted_lengths: np.ndarray, packed16: bool, hopper: bool, m: int, single_pass: bool = False,
                min_threads: int = None, wide: bool = False, wider: bool = False) -> list:
    """Contiguous ranges of the length-sorted (longest first) database, each with its kernel
    configuration, for a query of ``m`` residues.

    The database is cut at the widths G x R of the single-pass configurations (and above the largest).
    For each range the configuration with the fewest cell slots is chosen: a pass of a group costs
    (m + G - 1 + 4) steps of G x R columns (the pipeline's fill and drain, a little set-up), over
    ceil(L / (G x R)) passes for a sequence of L residues; single-pass configurations that hold the
    range and the multi-pass form at every group size compete. Neighbouring ranges with the same
    configuration are merged. ``single_pass``: the smallest single-pass configuration that holds each
    range, multi-pass with groups of 32 only beyond. A range of fewer than ``min_threads`` threads
    (default :data:`MIN_THREADS`) is merged into the next longer one. Without packed16 everything takes the 32-bit
    multi-pass form."""
    n = sorted_lengths.size
    single, r_multi, wide32 = CONFIGS[hopper]
    if wide:
        single = single + WIDE_SINGLE[hopper] + (WIDER_SINGLE[hopper] if wider else [])
    if not packed16:
        return [_Part(*wide32, True, 0, n)]
    asc = -sorted_lengths  # ascending, for searchsorted
    widths = sorted({g * r: (g, r) for g, r in reversed(single)}.items())  # smallest G for each width
    cuts = [0] + [w for w, _ in widths] + [None]
    parts: list = []
    for lo_len, hi_len in reversed(list(zip(cuts[:-1], cuts[1:]))):  # longest first
        a = 0 if hi_len is None else int(np.searchsorted(asc, -hi_len, side="left"))  # first with length <= hi
        b = int(np.searchsorted(asc, -lo_len, side="left"))                          # first with length <= lo
        if b <= a:
            continue
        lengths = sorted_lengths[a:b]
        holding = [(g, r, False) for g, r in single if hi_len is not None and g * r >= hi_len]
        if single_pass or not holding:
            # Beyond the largest width: groups of 32, so that the longest sequence (one group for all its
            # passes) does not outlast the rest of the scan.
            options = [min(holding, key=lambda o: (o[0] * o[1], o[0]))] if holding else [(GROUPS[-1], r_multi, True)]
        else:
            options = holding + [(g, r_multi, True) for g in GROUPS]
        cost = [int(np.sum(-(-lengths // (g * r)))) * g * r * (m + g - 1 + 4) for g, r, _ in options]
        cfg = options[int(np.argmin(cost))]
        if parts and (parts[-1].G, parts[-1].R, parts[-1].multi) == cfg and parts[-1].first + parts[-1].count == a:
            parts[-1].count += b - a
        else:
            parts.append(_Part(*cfg, a, b - a))
    # A range too small to fill the GPU would run as a latency-bound launch of its own: the next longer
    # range's configuration holds it as well.
    min_threads = MIN_THREADS if min_threads is None else min_threads
    k = len(parts) - 1
    while k > 0:
        if (parts[k].count + 1) // 2 * parts[k].G < min_threads:
            parts[k - 1].count += parts[k].count
            del parts[k]
        k -= 1
    return parts


def _table_words(A: int, wide: bool) -> int:
    return (A + 1) * (A + 1) * (1 if wide else 32)


def _scores_plus_go(matrix: np.ndarray, go: int) -> np.ndarray:
    """S + go (int64, (A + 1, A + 1)) with the padding letter A, which scores _PAD_SCORE against everything."""
    A = matrix.shape[0]
    s = np.full((A + 1, A + 1), _PAD_SCORE, dtype=np.int64)
    s[:A, :A] = matrix
    return s + go


def _score_table(matrix: np.ndarray, go: int, wide: bool) -> np.ndarray:
    """The kernel's shared-memory score table (uint32 words), S + go with a padding letter A.

    wide: word [a][b] = S(a, b) + go. Packed: word [(a * (A + 1) + b) * 32 + l] = (S(a, b) + go) & 0xffff
    for every lane l (32 interleaved copies, so that lane l's loads stay in bank l).
    """
    s = _scores_plus_go(matrix, go).ravel()
    if wide:
        return s.astype(np.int32).view(np.uint32)
    return np.repeat((s & 0xFFFF).astype(np.uint32), 32)


class DeviceDatabase:
    """A database on the GPU in the scan's order: sorted by decreasing length (the longest groups start
    first, and the two sequences of a group have close lengths), uploaded once for every query.

    Arguments:
        codes: residue codes (uint8, all sequences concatenated, in file order).
        offsets: int64 (count + 1,) sequence boundaries in ``codes``.
        device: CUDA device index.
        order: :func:`length_order` of ``offsets`` when already computed (a search starts it while CuPy
            is imported).

    Attributes: ``order`` (int64 (count,): file index of each position in length order), ``rank`` (int32
    (count,): position of each file index), ``sorted_lengths``, ``residues``, ``count``, and on the GPU
    ``d_res`` (uint8 residues in length order), ``d_off`` (int64 offsets into it), ``d_order`` (int32).

    Raises:
        NwalignError: no usable GPU, an empty database sequence, or a database larger than the GPU's free memory.
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, device: int = 0, order=None):
        offsets = np.asarray(offsets, dtype=np.int64)
        self.order, self.rank, self.sorted_lengths = order if order is not None else length_order(offsets)
        self.count, self.device = int(self.order.size), device
        self.residues = int(self.sorted_lengths.sum())
        log.debug("scan: database sorted by length")
        cp = require(device)
        try:
            self.d_order = cp.asarray(self.order.astype(np.int32))
            self.d_off = cp.asarray(np.concatenate(([0], np.cumsum(self.sorted_lengths))).astype(np.int64))
            self.d_res = _sorted_residues(cp, codes, offsets, self.order, self.d_off)
        except cp.cuda.memory.OutOfMemoryError:
            free, total = cp.cuda.runtime.memGetInfo()
            raise NwalignError(f"scan: the database ({self.residues:,} residues, {self.count:,} sequences) does not "
                               f"fit in GPU {device}'s memory ({free / 2**30:.1f} of {total / 2**30:.1f} GiB free; "
                               "the upload needs about twice its size): split it, or use --backend cpu") from None
        log.debug("scan: database uploaded")


def length_order(offsets: np.ndarray):
    """(order, rank, sorted_lengths) of a database in the scan's order, decreasing length (stable): order
    int64 (count,) the file index at each position, rank int32 (count,) the position of each file index,
    sorted_lengths int64 (count,). Host work only (no CuPy).

    Raises:
        NwalignError: an empty database or an empty sequence.
    """
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    if lengths.size == 0 or lengths.min() < 1:
        raise NwalignError("scan: every database sequence needs at least one residue")
    order = np.argsort(-lengths, kind="stable")
    rank = np.empty(order.size, dtype=np.int32)
    rank[order] = np.arange(order.size, dtype=np.int32)
    return order, rank, lengths[order]


_CHUNK = 16 << 20  # bytes per staged copy of the database upload
_STAGES = 4        # pinned staging buffers, filled by as many threads


def _upload(cp, host: np.ndarray):
    """``host`` (uint8, 1-D; a memory map is fine) on the GPU, copied through :data:`_STAGES` pinned
    buffers of :data:`_CHUNK` bytes, each filled by a thread of its own (NumPy's copy releases the GIL)
    while the GPU takes the ones filled before: the driver's own staging of pageable memory ran at ~1 GB/s,
    and one thread filling two buffers at ~2-3 GB/s."""
    from concurrent.futures import ThreadPoolExecutor

    from . import pinned_empty

    out = cp.empty(host.size, dtype=cp.uint8)
    if host.size <= _CHUNK:
        out.set(np.ascontiguousarray(host))
        return out
    stream = cp.cuda.Stream(non_blocking=True)
    chunks = -(-host.size // _CHUNK)
    stage = [pinned_empty((_CHUNK,), np.uint8) for _ in range(min(_STAGES, chunks))]

    def fill(k: int, buf: np.ndarray, emptied) -> int:
        if emptied is not None:
            emptied.synchronize()  # the buffer's previous copy to the GPU has left it
        a = k * _CHUNK
        b = min(a + _CHUNK, host.size)
        np.copyto(buf[:b - a], host[a:b])
        return b - a

    with ThreadPoolExecutor(max_workers=len(stage)) as pool:
        filling = {k: pool.submit(fill, k, stage[k], None) for k in range(len(stage))}
        for k in range(chunks):
            size = filling.pop(k).result()
            buf = stage[k % len(stage)]
            out[k * _CHUNK:k * _CHUNK + size].set(buf[:size], stream=stream)
            if k + len(stage) < chunks:
                filling[k + len(stage)] = pool.submit(fill, k + len(stage), buf, stream.record())
        stream.synchronize()
    return out


def _sorted_residues(cp, codes: np.ndarray, offsets: np.ndarray, order: np.ndarray, d_off):
    """The residues uploaded once, then copied on the GPU into length order (no host-side copy)."""
    d_codes = _upload(cp, np.asarray(codes, dtype=np.uint8))
    d_src = cp.asarray(offsets)
    d_order = cp.asarray(order.astype(np.int64))
    out = cp.empty(int(offsets[-1]), dtype=cp.uint8)
    count = order.size
    func = modules.prebuilt_function("sw_search", "sw_gather") or modules.function("sw_search", "sw_gather")
    func(((count + 7) // 8,), (256,), (d_codes, d_src, d_order, d_off, out, np.int64(count)))
    # Done before any scan reads it: the scans run on other (non-blocking) streams, perhaps of another thread.
    cp.cuda.get_current_stream().synchronize()
    return out
