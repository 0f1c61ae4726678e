"""Host side of the ``gsw`` search kernel (kernels/gsw.cu, after Akoglu and Striemer's GSW, "Scalable and
highly parallel implementation of Smith-Waterman on GPU using CUDA"): one thread per database sequence,
query and matrix in constant memory."""

from __future__ import annotations

import numpy as np

from nwalign.errors import NwalignError
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import require

MAX_QUERY = 60000  # GSW_MAX_QUERY in gsw.cu (constant memory)
_TEMP_BYTES = 2 << 30  # cap on the temporary columns of one batch


class GswSearcher:
    """Scores of a query against every database sequence with the ``gsw`` kernel (one thread per
    sequence, length-sorted, query and matrix in constant memory)."""

    def __init__(self, db, scoring, device: int = 0):
        if scoring.mode != "local":
            raise NwalignError(f"gsw: the kernel is local only (mode {scoring.mode}); use --kernel scan")
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
        """Scores of an encoded query (:class:`nwalign.backends.engine.Encoded`) against every sequence."""
        return self.scores(query.record.seq.upper())

    # nwalign.backends.roles.Scanner: one query at a time, its scores at submit
    slots, chunked, asynchronous = 1, False, True

    def submit(self, query) -> np.ndarray:
        """:meth:`score_query` (an encoded query: the kernel reads its letters)."""
        return self.score_query(query)

    @staticmethod
    def result(scores: np.ndarray) -> np.ndarray:
        return scores

    def describe(self, m: int = 0) -> str:
        return f"the gsw kernel over {self.count} sequences, one thread each"

    @staticmethod
    def timing() -> str:
        return ""
