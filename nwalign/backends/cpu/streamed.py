"""The CPU engine's scan of a large database in chunks: never the whole database in memory at once.

Opal's scan holds its database as one Python ``bytes`` per sequence besides the residues it copies into
its own layout, about three times the residues in memory (UniRef50's 17 G residues: ~50 GB). Past
:data:`CHUNK_RESIDUES` residues the database is cut into chunks of consecutive sequences; each chunk is
made an Opal database once and scanned by a batch of queries before the next replaces it, and each
query's best candidates are merged exactly across chunks (score descending, then database index), as
the GPU's streamed scan does (:mod:`nwalign.backends.cuda.streamed`). The residues themselves are read from the
``.nwdb`` file a chunk at a time (:mod:`nwalign.io.mapped`: page cache, not this process's memory).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from nwalign.io.mapped import copy_of
from nwalign.backends.cpu.search import cpu_scan

log = logging.getLogger("nwalign")

CHUNK_RESIDUES = 1 << 28  # residues a chunk: about 0.8 GB of Opal's database and its inputs at once


def chunk_bounds(offsets: np.ndarray, residues: int) -> list[tuple[int, int]]:
    """(first, stop) sequence indices of consecutive chunks of at most ``residues`` residues each (a longer
    sequence is a chunk alone), covering every sequence of ``offsets`` (int64, (count + 1,))."""
    offsets = np.asarray(offsets, dtype=np.int64)
    count = offsets.size - 1
    out, first = [], 0
    while first < count:
        stop = int(np.searchsorted(offsets, offsets[first] + residues, side="right")) - 1
        stop = min(count, max(stop, first + 1))
        out.append((first, stop))
        first = stop
    return out


def streams(total: int, residues: int | None = None) -> bool:
    """Whether a database of ``total`` residues is scanned in chunks on the CPU (more than ``residues``,
    default :data:`CHUNK_RESIDUES`)."""
    return total > (residues or CHUNK_RESIDUES)


class ChunkedScan:
    """A database's scan on the CPU engine, chunk by chunk (see the module's doc): :meth:`best` gives each
    query of a batch its best candidates over the whole database, as :class:`nwalign.backends.cuda.streamed.StreamedScan`
    does on the GPU.

    Arguments:
        codes: uint8 residue codes of the scoring (shape (total,); a memory-mapped ``.nwdb`` body is read a
            chunk at a time).
        offsets: int64, (count + 1,).
        scoring: :class:`nwalign.scoring.schemes.Scoring`.
        threads: threads of each query's scan.
        residues: residues a chunk, at most (default :data:`CHUNK_RESIDUES`).
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, scoring, threads: int = 1,
                 residues: int | None = None):
        self.codes, self.offsets, self.scoring, self.threads = codes, np.asarray(offsets, dtype=np.int64), scoring, threads
        residues = residues or CHUNK_RESIDUES
        self.chunks = chunk_bounds(self.offsets, residues)
        log.info("search: the database scanned on the CPU in %d chunks of at most %d residues", len(self.chunks),
                 residues)

    chunked = True  # nwalign.backends.roles.ChunkedScanner

    @staticmethod
    def timing() -> str:
        return ""

    def describe(self, m: int = 0) -> str:
        """One line for ``-v``: the chunks (``m``: unused)."""
        return f"the database is scanned on the CPU in {len(self.chunks)} chunks, {self.threads} threads"

    def best(self, queries, top: int, progress=None) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query (:class:`nwalign.backends.engine.Encoded`, or its uint8 codes), its best ``top`` candidates over the whole
        database: (database indices int64, scores int64), score descending then index ascending.
        ``progress(cells)`` after each query's scan of a chunk."""
        from nwalign.records.candidates import merge, top_hits

        best = [(np.zeros(0, np.int64), np.zeros(0, np.int64)) for _ in queries]
        for k, (first, stop) in enumerate(self.chunks):
            started = time.perf_counter()
            lo, hi = int(self.offsets[first]), int(self.offsets[stop])
            codes = copy_of(self.codes, lo, hi)  # this chunk's residues in memory (read, not mapped), the others not
            offsets = self.offsets[first:stop + 1] - lo
            for j, q in enumerate(queries):
                q = getattr(q, "codes", q)
                scores = cpu_scan(q, codes, offsets, self.scoring, self.threads)
                found = top_hits(scores, top, None)
                best[j] = merge([best[j], (found + first, scores[found])], top)
                if progress:
                    progress(len(q) * (hi - lo))
            log.debug("search: chunk %d of %d (%d sequences) scanned by %d queries in %.2f s", k + 1,
                      len(self.chunks), stop - first, len(queries), time.perf_counter() - started)
            del codes
        return best
