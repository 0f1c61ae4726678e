"""Host side of the GPU search kernels: ``gsw`` (seed 004) and ``scan``; the database is uploaded once."""

from __future__ import annotations

import numpy as np

from ..errors import NwalignError
from . import modules, require

MAX_QUERY = 60000  # GSW_MAX_QUERY in gsw.cu (constant memory)
_TEMP_BYTES = 2 << 30  # cap on the temporary columns of one batch


class GswSearcher:
    """Scores of a query against every database sequence with the ``gsw`` kernel (one thread per
    sequence, length-sorted, query and matrix in constant memory)."""

    def __init__(self, db, scoring, device: int = 0):
        cp = require(device)
        self.cp = cp
        letters = np.asarray(db.residues, dtype=np.uint8)
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
    """Scores of a query against every database sequence with the ``scan`` kernel.

    Database sequences are partitioned by length. The short partition (nearly all of a protein
    database) is scored by the one-thread-per-pair slice kernel of :mod:`nwalign.cuda.allpairs`
    (``lazy_rscan`` in local mode: 32 query rows per thread in registers, DPX cell updates, the
    substitution matrix in shared memory, only each slice's last row through global memory), the
    sequences sorted once by decreasing length, so a warp's threads finish together and the longest
    start first, in batches on two streams. A sequence longer than ``long_threshold`` would keep one
    thread busy long after the others are done, so each of those is scored by the whole GPU with the
    wavefront kernel of ``nwalign pair``.

    Arguments:
        codes: the database residue codes (uint8, all sequences concatenated).
        offsets: int64 (count + 1,) sequence boundaries in ``codes``.
        scoring: a local-mode :class:`nwalign.scoring.Scoring`.
        device: CUDA device index.
        long_threshold: database sequences longer than this go to the wavefront kernel (default:
            :func:`default_long_threshold`).
        packed16: run the 16-bit pass first (False: 32-bit only).

    Raises:
        NwalignError: no usable GPU, or a matrix with more than 32 letters.
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, scoring, device: int = 0,
                 long_threshold: int | None = None, packed16: bool = True):
        from .allpairs import AllPairsScorer

        require(device)
        self.scoring, self.device = scoring, device
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.diff(offsets)
        if lengths.size == 0 or lengths.min() < 1:
            raise NwalignError("scan: every database sequence needs at least one residue")
        self.count = lengths.size
        self.threshold = long_threshold if long_threshold is not None else default_long_threshold(lengths)
        short = np.flatnonzero(lengths <= self.threshold)
        # Longest first: the longest threads start at once and the block scheduler fills in behind them.
        self.short = short[np.argsort(-lengths[short], kind="stable")].astype(np.int32)
        self.long = np.flatnonzero(lengths > self.threshold)
        self.long_codes = [codes[offsets[k]:offsets[k + 1]] for k in self.long.tolist()]
        parts = [codes[offsets[k]:offsets[k + 1]] for k in self.short.tolist()]
        self.scorer = AllPairsScorer(parts or [codes[:1]], scoring, "lazy-rscan", 32, device=device)
        # The pairs (query 0, database sequence k) are the same for every query: sent to the GPU once.
        pairs = np.zeros((self.short.size, 2), dtype=np.int32)
        pairs[:, 1] = np.arange(self.short.size, dtype=np.int32)
        self.d_pairs = self.scorer.cp.asarray(pairs)
        self.batch = self.scorer.batch_size("lazy-rscan", waves=False)  # one launch when it fits
        # Packed 16-bit pass first (two sequences per thread); a score at or above the limit may have
        # saturated and is recomputed in 32 bits.
        self.limit = 32767 - (int(scoring.matrix.max()) + scoring.gap_open)
        self.packed16 = packed16 and self.limit > 0 and scoring.gap_open + scoring.gap_extend < 2000
        self.recomputed = 0
        self.d_order = self.scorer.cp.arange(self.short.size, dtype=np.int32)  # targets are longest first

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Best local score of ``query`` (uint8 codes) against every sequence (int64, (count,))."""
        from .pair import Options, run_kernel

        best = np.zeros(self.count, dtype=np.int64)
        if self.short.size:
            self.scorer.set_queries([query])
            if self.packed16:
                got = self._scores16(len(query))
                again = np.flatnonzero(got >= self.limit)
                if again.size:  # may have saturated: exact 32-bit scores for these
                    self.recomputed += int(again.size)
                    redo = self.d_pairs[self.scorer.cp.asarray(again)]
                    got[again] = self.scorer.scores_resident(redo, "lazy-rscan", self.batch).get()
            else:
                got = self.scorer.scores_resident(self.d_pairs, "lazy-rscan", self.batch).get()
            best[self.short] = got
        opts = Options(kernel="wavefront", device=self.device)
        for k, t in zip(self.long.tolist(), self.long_codes):
            (score, *_), _ = run_kernel(query, t, self.scoring, False, opts)
            best[k] = score
        return best

    def _scores16(self, m: int) -> np.ndarray:
        """The packed 16-bit pass over the short partition (scores in its length order, int64)."""
        sc = self.scorer
        cp = sc.cp
        count = self.short.size
        names = ("scan16<16>", "scan16<32>")
        func = modules.function("scan", "scan16<32>", name_expressions=names)
        max_t = int(sc.t_lengths.max())
        slots = (count + 1) // 2
        per_slot = 8 * max_t + 16
        batch = max(1, min(slots, sc.budget // per_slot))
        order = self.d_order
        out = cp.empty(count, dtype=cp.int32)
        threads = 128
        i32 = np.int32
        for lo in range(0, slots, batch):
            n_slots = min(batch, slots - lo)
            n_seq = min(2 * n_slots, count - 2 * lo)
            scratch = cp.empty(2 * max_t * n_slots, dtype=cp.int32)
            blocks = (n_slots + threads - 1) // threads
            func((blocks,), (threads,), (sc.t_seqs, sc.t_offsets, order[2 * lo:], i32(n_seq), sc.q_seqs, i32(m),
                                         sc.matrix, i32(sc.A), i32(sc.go), i32(sc.ge), scratch, out[2 * lo:]),
                 shared_mem=4 * (sc.A + 1) * (sc.A + 1))
        return out.get().astype(np.int64)

    def score_query(self, query) -> np.ndarray:
        """Scores of an encoded query (:class:`nwalign.engine.Encoded`) against every sequence."""
        return self.scores(query.codes)


def default_long_threshold(lengths: np.ndarray) -> int:
    """Longest database sequence left to one thread. A thread sweeps about 25 M cells/s on an H100
    while the whole GPU sweeps about 1,400 G, so one sequence of n residues takes as long as the whole
    database of N residues when n ~ N / 56,000 (whatever the query length). At least 4,096, so that
    small databases stay on the batch kernel."""
    return max(4096, int(lengths.sum()) // 56_000)
