"""Host side of the GPU search's ``scan`` kernels (kernels/sw_search.cu, after CUDASW++4.0's layout, and
kernels/sw_profile.cu); the database is uploaded once and kept on the GPU for every query. The ``gsw``
kernel's host side: :mod:`nwalign.backends.cuda.gsw`."""

from __future__ import annotations

import logging
import time

import numpy as np

from nwalign.errors import NwalignError
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import copy_to_host_async, pinned_empty, require, uploads_done
from nwalign.backends.cuda.devicedb import DeviceDatabase
from nwalign.backends.cuda.structs import SP_ARGS as _SP_ARGS
from nwalign.backends.cuda.structs import SW_ARGS as _ARGS
from nwalign.backends.cuda.scanplan import (BLOCK_THREADS, CONFIGS, PLANS, PROFILE_CHUNK_RESIDUES, PROFILE_MAX_LEN, PROFILE_MIN_RESIDUES_PER_SM, QPAD, profile_chunks_of, scan_kernel, Part, length_partitions, profile_kernel, score_table, scores_plus_go, table_words, bound_words, profile_config, profile_shared_bytes)


log = logging.getLogger("nwalign")
SLOTS = 2  # queries in flight on the GPU at once by default (sets of score buffers)
# ... where the GPU's thread shares the interpreter with other GPUs' threads: each query's host work waits
# for the interpreter's lock behind theirs, and a deeper queue keeps the GPU scanning meanwhile.
SLOTS_SHARED = 4
PROFILE_LANES = 2  # streams, each with its region of boundary rows, taken in turn by successive queries


def timing(scan) -> str:
    """For ``-v``: the host's wait for ``scan``'s kernels, their GCUPS, the scores recomputed in 32-bit and
    (streamed) the part of the wait the chunks' uploads stood the scans still."""
    stalled = getattr(scan, "upload_seconds", 0.0)
    return (f" ({scan.scan_seconds:.2f} s waiting for GPU scans"
            f"{f', {stalled:.2f} s of it uploading chunks' if stalled else ''}: "
            f"{scan.cells / max(scan.scan_seconds, 1e-9) / 1e9:,.0f} GCUPS; {scan.recomputed} scores recomputed in "
            "32-bit)")


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
        scoring: a local- or glocal-mode :class:`nwalign.scoring.schemes.Scoring` (glocal: the query whole,
            the database sequence's ends free; the kernels' glocal instances, their headers say how).
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
            range, small multi-pass groups for short queries). Fastest first on an H100: ``profile``,
            ``wider``, ``wide``, ``single``, ``cost`` (the figures: docs/performance.md).
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
        db = uploaded if uploaded is not None else DeviceDatabase(codes, offsets, device)
        self.A = A
        self.go, self.ge = int(scoring.gap_open), int(scoring.gap_extend)
        self.glocal = scoring.mode == "glocal"
        if scoring.mode not in ("local", "glocal"):
            raise NwalignError(f"scan: mode {scoring.mode}; the scan kernels are local or glocal")
        gl_ge = self.ge if self.glocal else None  # the glocal tables' extra row and padding score
        dev = cp.cuda.Device()
        self.hopper = int(dev.compute_capability) >= 90  # "90", "100": compare as numbers
        need = 4 * table_words(A, False, self.glocal)
        smem = dev.attributes.get("MaxSharedMemoryPerBlockOptin", 48 << 10)
        if need > smem:
            raise NwalignError(f"scan: the score table needs {need} bytes of shared memory; this GPU has {smem}")
        self.limit = 32767 - int(scoring.matrix.max()) - self.go
        self.packed16 = packed16 and self.limit > 0 and self.go + self.ge < 8000 and \
            int(scoring.matrix.min()) > -8000
        self.tables = {wide: cp.asarray(score_table(scoring.matrix, self.go, wide, gl_ge)) for wide in (False, True)}
        # Glocal values reach -(2 go + (m + G) ge) and below: the 16-bit form takes queries up to this length.
        self.glocal_packed_max = (32000 - 3 * self.go - max(0, -int(scoring.matrix.min())) - 64) // max(self.ge, 1) - 64
        self.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(4)]  # the length ranges' launches
        # Successive queries' sw_profile launches alternate between two lanes (a stream and a region of
        # the boundary rows each): one query's launch fills the GPU while the other's drains (most felt on the
        # short launches of a streamed database's chunks: docs/performance.md).
        self.profile_streams = [cp.cuda.Stream(non_blocking=True) for _ in range(PROFILE_LANES)]
        # Host-to-GPU copies go on a stream with nothing queued, so that they never wait for scans in
        # flight; scores are scattered and copied back on `main`.
        self.upload, self.main = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)

        # Score buffers per query in flight: one query's scores are copied back while the next one scans.
        self.slots = slots or SLOTS
        self._buffers: list = []  # (scores, database order, pinned host copy) per slot: the largest database's size
        self._submitted = 0
        #: Threads per block of a configuration (G, R, multi) where not 256: see :data:`BLOCK_THREADS`.
        self.block_threads: dict = dict(BLOCK_THREADS)
        self.recomputed = 0
        self.cells = 0
        self.scan_seconds = 0.0  # wall time inside scores(), summed
        self.wide_part = Part(*CONFIGS[self.hopper][2], True, 0, 0)
        self._plans: dict = {}
        if plan not in PLANS:
            raise NwalignError(f"scan: plan {plan!r} is not one of {', '.join(PLANS)}")
        self.min_threads = min_threads
        # Plan "profile": the sequences up to PROFILE_MAX_LEN residues (a suffix of the length order) take
        # sw_profile.cu, the longer ones the plan "wider".
        if plan == "auto":
            plan = "profile" if db.residues >= PROFILE_MIN_RESIDUES_PER_SM * dev.attributes["MultiProcessorCount"] \
                else "wider"
        self.plan = plan
        self._bound = None  # sw_profile's boundary rows (multi-pass queries), made on first use
        self._profile_table = scores_plus_go(scoring.matrix, self.go, gl_ge) & 0xFFFF  # [query letter, db letter]
        self.swap(db)
        uploads_done(cp)  # the score tables, before the scan's streams read them

    def swap(self, db: DeviceDatabase) -> None:
        """Scan ``db`` (on this searcher's GPU) from now on, keeping the searcher's streams, tables and
        buffers (a database streamed in chunks, :mod:`nwalign.backends.cuda.streamed`, swaps chunk after chunk).

        Raises:
            RuntimeError: a query still in flight.
        """
        if any(slot.busy for slot in getattr(self, "_slots", ())):
            raise RuntimeError("scan: the database swapped while a query is in flight")
        # The database on the GPU in length order.
        self.db = db
        self.order, self.sorted_lengths, self.residues = db.order, db.sorted_lengths, db.residues
        self.d_order, self.d_off, self.d_res = db.d_order, db.d_off, db.d_res
        self.count = db.count
        self._plans = {}
        self.profile_first = int(np.count_nonzero(self.sorted_lengths > PROFILE_MAX_LEN)) \
            if self.plan == "profile" and self.packed16 and self.hopper else self.count
        #: (first, count, first residue, residues) of each piece of plan profile's sequences: a multi-pass
        #: query's boundary rows (4 bytes per residue of a piece) are kept for one piece at a time, in its lane.
        #: Pieces are as large as PROFILE_CHUNK_RESIDUES allows: each is a launch's fill and drain.
        profile_residues = int(self.sorted_lengths[self.profile_first:].sum())
        piece = min(PROFILE_CHUNK_RESIDUES, profile_residues)
        self.profile_chunks = profile_chunks_of(self.sorted_lengths, self.profile_first, max(piece, 1))
        #: uint64 words of the boundary rows: a region for each lane, as the largest piece needs (sw_profile.cu:
        #: half its residues and half its longest sequence)
        self.bound_words = PROFILE_LANES * max((bound_words(residues, int(self.sorted_lengths[first]))
                                                for first, _, _, residues in self.profile_chunks), default=0)
        if self._bound is not None and self._bound.size < self.bound_words:
            self._bound = None
        if not self._buffers or self._buffers[0][0].size < self.count:
            cp = self.cp
            self._slots = []  # the old buffers go back to the pool first
            self._buffers = [(cp.empty(self.count, dtype=cp.int32), cp.empty(self.count, dtype=cp.int32),
                              pinned_empty((self.count,), dtype=np.int32)) for _ in range(self.slots)]
        self._slots = [_Slot(d[:self.count], o[:self.count], h[:self.count]) for d, o, h in self._buffers]

    def release(self) -> None:
        """Let go of the database and the boundary rows (their GPU memory back to the pool) until the
        next :meth:`swap`."""
        self.db = self.d_order = self.d_off = self.d_res = self._bound = None

    def packed_for(self, m: int) -> bool:
        """Whether a query of ``m`` residues takes the packed 16-bit kernels (glocal: up to
        :attr:`glocal_packed_max` residues; longer ones every sequence in 32-bit)."""
        return self.packed16 and (not self.glocal or m <= self.glocal_packed_max)

    def _profiled(self, m: int) -> bool:
        """Whether sw_profile.cu scores the short sequences for a query of ``m`` residues."""
        return self.profile_first < self.count and self.packed_for(m)

    def partitions(self, m: int) -> list:
        """The sw_search.cu launches for a query of ``m`` residues (see :func:`length_partitions`; cached by
        length). Plan ``profile``: those of plan ``wider`` over the sequences longer than
        :data:`PROFILE_MAX_LEN` only (the rest take sw_profile.cu)."""
        if m not in self._plans and not self.packed_for(m):
            self._plans[m] = length_partitions(self.sorted_lengths, False, self.hopper, m)  # all in 32-bit
        if m not in self._plans:
            wider = self.plan in ("wider", "profile")
            parts = length_partitions(self.sorted_lengths[:self.profile_first], self.packed16, self.hopper, m,
                                self.plan != "cost", self.min_threads, self.plan in ("wide", "wider", "profile"), wider)
            self._plans[m] = parts
        return self._plans[m]

    def _profile_rows(self, query: np.ndarray):
        """The query profile of sw_profile.cu on the GPU (uint32 [pass][letter][row of the tile]:
        (S(q_i, b) + go) & 0xffff), copied on the current stream: call it on :attr:`upload`, whose queue is
        empty (a copy from pageable memory waits for its stream's work: on a lane it would hold the host
        until the last query's launches ended, one query in flight)."""
        m = int(query.size)
        G, R, passes = profile_config(m, self.glocal)
        q = np.full(passes * G * R, self.A, dtype=np.int64)
        if self.glocal:  # the padding rows before the query (its last row the last tile's)
            q[:q.size - m] = self.A + 1
            q[q.size - m:] = query
        else:
            q[:m] = query
        prof = self._profile_table[q].reshape(passes, G * R, self.A + 1).transpose(0, 2, 1)  # [pass, letter, row]
        return self.cp.asarray(np.ascontiguousarray(prof).astype(np.uint32))

    def _launch_profile(self, query: np.ndarray, lane: int, d_scores, counters, d_prof):
        """sw_profile.cu over the sequences from ``profile_first`` on, piece by piece
        (:attr:`profile_chunks`), one launch per tile of the query (:func:`profile_config`), on profile
        lane ``lane`` (its stream and region of the boundary rows); returns the scratch to keep alive.
        ``counters``: zeroed int32, one per launch; ``d_prof``: :meth:`_profile_rows`."""
        cp = self.cp
        m = int(query.size)
        if not self._profiled(m):
            return None
        G, R, passes = profile_config(m, self.glocal)
        tile = G * R
        A1 = self.A + 1
        stream = self.profile_streams[lane]
        with stream:
            d_scores[self.profile_first:].fill(np.iinfo(np.int32).min if self.glocal else 0)
        if passes > 1 and self._bound is None:
            try:
                self._bound = cp.empty(self.bound_words, dtype=cp.uint64)
            except cp.cuda.memory.OutOfMemoryError:
                raise NwalignError(f"scan: no GPU memory for the boundary rows of a query longer than {tile} "
                                   f"residues ({8 * self.bound_words / 2**30:.1f} GiB): split the database, or use "
                                   "--backend cpu") from None
        bound = self._bound[lane * (self._bound.size // PROFILE_LANES):] if passes > 1 else d_prof
        func = profile_kernel(G, R, self.glocal)
        pad_rows = passes * tile - m  # glocal: before the query
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
                                  d_scores.data.ptr, counters[launch:].data.ptr, p * tile - pad_rows)],
                                dtype=_SP_ARGS)[0]
                with stream:
                    func((blocks,), (threads,), (args,), shared_mem=shared)
                launch += 1
        return d_prof

    def profile_launches(self, m: int) -> int:
        """How many sw_profile.cu launches a query of ``m`` residues takes (0 without plan ``profile``)."""
        return len(self.profile_chunks) * profile_config(m, self.glocal)[2] if self._profiled(m) else 0

    def _qrow(self, query: np.ndarray, wide: bool):
        """Row offsets (bytes into the table) of the padded query, as the kernel reads them: SW_QPAD rows
        before it and enough after it for the longest pipeline (G = 32) and the loads 4 steps ahead."""
        A1 = self.A + 1
        stride = 4 * A1 * (1 if wide else 32)
        q = np.full(QPAD + query.size + 32 + 3 + 8, self.A, dtype=np.int64)
        if self.glocal:
            q[:QPAD] = self.A + 1  # rows before the query: H = 0 (sw_search.cu's header)
        q[QPAD:QPAD + query.size] = query
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
        func = scan_kernel(self.hopper, wide, G, R, multi, self.glocal)
        if shared > 48 << 10:
            func.max_dynamic_shared_size_bytes = shared
        blocks = min((groups * G + threads - 1) // threads, modules.resident_blocks(func, threads, shared))
        slots = blocks * (threads // G)  # group slots of the persistent grid
        bound = cp.empty(2 * (steps + QPAD + 40) * slots * 2 if multi else 1, dtype=cp.uint32)
        args = np.array([(self.d_res.data.ptr, self.d_off.data.ptr, 0 if d_list is None else d_list.data.ptr,
                          part.first, count, qrows[wide].data.ptr, m, steps, table.data.ptr, table.size,
                          self.A, self.go, self.ge, bound.data.ptr, d_scores.data.ptr, counter.data.ptr)],
                        dtype=_ARGS)[0]
        with stream:
            func((blocks,), (threads,), (args,), shared_mem=shared)
        return bound  # keep the scratch alive until the stream is done

    chunked = False      # the whole database resident (nwalign.backends.roles.Scanner)
    asynchronous = True  # the GPU scans while the host works

    def submit(self, query) -> "_Ticket":
        """Start scoring ``query`` (uint8 codes, length >= 1, or an encoded record) against every database sequence; returns a
        ticket for :meth:`result`. Successive queries' scans queue on the GPU back to back, so the host
        works on one query's scores while the next one scans. Take results in submission order, with at
        most ``slots`` queries in flight.

        Raises:
            NwalignError: an empty query.
        """
        query = getattr(query, "codes", query)
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
            d_prof = self._profile_rows(query) if self._profiled(int(query.size)) else None
            start = self.upload.record()
        if d_prof is not None:  # on streams of their own, beside the longer sequences' ranges
            lane = (self._submitted - 1) % len(self.profile_streams)
            self.profile_streams[lane].wait_event(start)
            ticket.keep.append(self._launch_profile(query, lane, slot.d_scores, ticket.counters[len(parts) + 1:],
                                                    d_prof))
            ticket.main.wait_event(self.profile_streams[lane].record())
        for k, part in enumerate(parts):  # longest first, over the streams
            stream = self.streams[k % len(self.streams)]
            stream.wait_event(start)
            ticket.keep.append(self._launch(part, query, ticket.qrows, stream, slot.d_scores,
                                            wide=not self.packed_for(int(query.size)), counter=ticket.counters[k:]))
        for stream in self.streams:
            ticket.main.wait_event(stream.record())
        ticket.done = self._copy_back(slot, ticket.main)
        self.scan_seconds += time.perf_counter() - started
        return ticket

    def result(self, ticket: "_Ticket") -> np.ndarray:
        """The scores of a submitted query (int32, shape (count,), database order: half the host memory of
        int64, 200 MB a query for 50 M sequences); those that may have left the int16 range are recomputed
        in 32-bit first."""
        started = time.perf_counter()
        slot, query = ticket.slot, ticket.query
        parts = self.partitions(int(query.size))
        got = self._wait(slot, ticket.done)
        if self.packed_for(int(query.size)) and got.size and got.max() >= self.limit:  # one pass; indices where needed
            again = np.flatnonzero(got >= self.limit)
            if again.size:  # may have wrapped: exact 32-bit scores for these
                self.recomputed += int(again.size)
                with self.upload:
                    d_list = self.cp.asarray(self.db.rank[again])
                    ticket.main.wait_event(self.upload.record())
                ticket.keep.append(self._launch(self.wide_part, query, ticket.qrows, ticket.main, slot.d_scores,
                                                True, d_list, int(again.size), ticket.counters[len(parts):]))
                got = self._wait(slot, self._copy_back(slot, ticket.main))
        out = got.copy()  # the slot's pinned buffer takes the next query
        if self.glocal:  # the last row's H(m, 0): the whole query in a gap (the kernels fold j >= 1)
            np.maximum(out, -(self.go + (int(query.size) - 1) * self.ge), out=out)
        slot.busy = False
        self.cells += int(query.size) * self.residues
        self.scan_seconds += time.perf_counter() - started
        return out

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Best local score of ``query`` (uint8 codes, length >= 1) against every database sequence
        (int32, shape (count,), database order): :meth:`submit`, then :meth:`result`."""
        return self.result(self.submit(query))

    def _copy_back(self, slot: "_Slot", stream):
        """Scatter a slot's scores into database order on the GPU, then one copy to its pinned buffer;
        returns the event that marks the copy done."""
        with stream:
            n = slot.d_scores.size
            scatter = modules.kernel("sw_search", "sw_scatter_scores")
            scatter(((n + 255) // 256,), (256,), (slot.d_scores, self.d_order, slot.d_out, np.int64(n)))
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
        """Scores of an encoded query (:class:`nwalign.backends.engine.Encoded`) against every sequence."""
        return self.scores(query.codes)

    def submit_query(self, query) -> "_Ticket":
        """:meth:`submit` for an encoded query (:class:`nwalign.backends.engine.Encoded`)."""
        return self.submit(query.codes)

    def timing(self) -> str:
        """For ``-v``: :func:`timing` of this scan."""
        return timing(self)

    def describe(self, m: int = 1000) -> str:
        """One line for ``-v``: how the database is cut (for a query of ``m`` residues) and which sequences
        take the slower paths."""
        parts = self.partitions(m)
        multi = [p for p in parts if p.multi]
        longer = sum(p.count for p in multi)
        said = []
        if self.profile_first < self.count:
            G, R, passes = profile_config(m, self.glocal)
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
