"""A database scanned through the GPU in chunks (:class:`StreamedScan`), where the whole of it (with
the scan's working memory) does not fit in the GPU memory a search may use: ``--gpu-memory``,
CuPy's ``CUPY_GPU_MEMORY_LIMIT``, or what the GPU has free.

The database is cut into consecutive chunks of sequences (file order), each as large as fits (one at a
time: see :func:`chunks`). A batch of queries is scanned over a chunk before the next chunk replaces it,
so each chunk crosses the bus once per batch, not per query (through page-locked staging,
:mod:`nwalign.backends.cuda.devicedb`); one searcher's streams and buffers serve every chunk. Each query keeps its best ``top`` candidates of every chunk and merges them
with the ones before (score descending, then database index: the order of a resident scan), so the
hits are exactly those of a resident database.
"""

from __future__ import annotations

import logging
import os
import time
import weakref

import numpy as np

from nwalign.errors import NwalignError
from nwalign.records.candidates import top_hits
from nwalign.io.mapped import window
from nwalign.backends.cuda.scanplan import PROFILE_CHUNK_RESIDUES, PROFILE_MAX_LEN
from nwalign.backends.cuda.search import PROFILE_LANES

log = logging.getLogger("nwalign")

# GPU memory of a database on the GPU (nwalign.backends.cuda.devicedb, nwalign.backends.cuda.search): its residues once,
# and once more while they are uploaded and sorted; offsets, order and two queries' score buffers per
# sequence; and where a query is longer than one profile pass, boundary rows of 4 bytes a residue (and
# half the longest sequence) in each lane, for at most PROFILE_CHUNK_RESIDUES residues (sw_profile's
# passes run over such pieces, two queries at once; scanplan.bound_words).
BYTES_PER_SEQUENCE = 44
BOUNDARY_BYTES = 4
RESERVE = 64 << 20  # kernels' scratch, the queries' rows and profiles, the hits' aligner, CuPy's pool slack
MIN_CHUNK_RESIDUES = 1 << 16
READ_AHEAD_BYTES = 256 << 20  # page-locked host memory for the next chunk's first residues (_ReadAhead)


def chunk_bytes(residues, count, long: bool = True):
    """GPU memory (bytes; :data:`RESERVE` aside) of ``residues`` residues of ``count`` sequences on the GPU
    at their peak: while uploaded (the residues twice) or while scanned (once, with the boundary rows of
    ``long`` queries); NumPy arrays give arrays."""
    # a region for each profile lane, as large as the largest piece (pieces are cut between pairs of sequences)
    bound = BOUNDARY_BYTES * PROFILE_LANES * np.minimum(residues + 2 * PROFILE_MAX_LEN,
                                                        PROFILE_CHUNK_RESIDUES + 2 * PROFILE_MAX_LEN) if long else 0
    return np.maximum(2 * residues, residues + bound) + BYTES_PER_SEQUENCE * count


def resident_bytes(residues: int, count: int, long_queries: bool = True) -> int:
    """GPU memory a search over a resident database of ``residues`` residues and ``count`` sequences
    needs at its peak (bytes, an estimate on the safe side); ``long_queries``: a query takes more than
    one profile pass (:func:`nwalign.backends.cuda.scanplan.profile_config`)."""
    return int(chunk_bytes(residues, count, long_queries)) + RESERVE


def long_queries(lengths) -> bool:
    """Whether a query of these lengths takes more than one profile pass (boundary rows in memory)."""
    from nwalign.backends.cuda.scanplan import profile_config

    return any(max(profile_config(int(m))[2], profile_config(int(m), True)[2]) > 1 for m in lengths)


def chunks(offsets: np.ndarray, budget: int, long: bool = True) -> list[tuple[int, int]]:
    """Consecutive (first, stop) sequence ranges covering the database, each small enough to fit in
    ``budget`` bytes (:func:`chunk_bytes`; a sequence longer than that is a chunk of its own), as few as
    that allows and of even sizes (a small last chunk would be scanned by launches too short to fill the
    GPU). One chunk is on the GPU at a time: an upload takes a few percent of the chunk's scans, and a
    second chunk in memory would cost a fifth of the chunk's size.

    Raises:
        NwalignError: a budget that does not leave room for a chunk of :data:`MIN_CHUNK_RESIDUES`.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    room = budget * 15 // 16 - RESERVE  # a sixteenth for the pool's rounding and what is not counted
    if room < chunk_bytes(MIN_CHUNK_RESIDUES, 1, long):
        least = (RESERVE + chunk_bytes(MIN_CHUNK_RESIDUES, 1, long)) * 16 / 15
        raise NwalignError(f"scan: {budget / 2**20:.0f} MiB of GPU memory leave no room for a chunk of the "
                           f"database (at least {least / 2**20:.0f} MiB): allow more, or use --backend cpu")
    def fits(first: int, stop: int) -> bool:
        return chunk_bytes(int(offsets[stop] - offsets[first]), stop - first, long) <= room

    greedy, first, count = [], 0, offsets.size - 1
    while first < count:
        lo, hi = first + 1, count  # the furthest stop that fits (the need grows with it), at least one sequence
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(first, mid) else (lo, mid - 1)
        greedy.append((first, lo))
        first = lo
    k = len(greedy)
    cuts = np.searchsorted(offsets, offsets[-1] * np.arange(1, k) // k)  # as many chunks, of even residues
    even = list(zip([0, *cuts.tolist()], [*cuts.tolist(), count]))
    if all(a < b and fits(a, b) for a, b in even):
        return even
    return greedy


def budget_of(cupy, limit: int | None) -> tuple[int, str]:
    """(bytes, where from) of the GPU memory a search may use on the current GPU: ``limit``
    (``--gpu-memory``), CuPy's pool limit (``CUPY_GPU_MEMORY_LIMIT``) and what the GPU has free (with
    what the pool already holds), the least of them."""
    pool = cupy.get_default_memory_pool()
    free, _ = cupy.cuda.runtime.memGetInfo()
    found = [(int(free + pool.free_bytes()), "free on the GPU")]
    if pool.get_limit():
        found.append((int(pool.get_limit()), "CUPY_GPU_MEMORY_LIMIT"))
    if limit:
        found.append((int(limit), "--gpu-memory"))
    return min(found)


class StreamedScan:
    """Smith-Waterman scores of queries against a database streamed through GPU ``device`` in chunks
    (see the module's docstring): :meth:`best` gives each query's best ``top`` candidates over the
    whole database.

    Arguments:
        codes: the database's residue codes (uint8, all sequences; a memory map is read chunk by chunk).
        offsets: int64 (count + 1,) sequence boundaries in ``codes``.
        scoring: a local-mode :class:`nwalign.scoring.schemes.Scoring`.
        device: CUDA device index.
        budget: GPU memory the scan may use (bytes).
        long: a query may take more than one profile pass (:func:`long_queries`).

    Attributes: ``chunks`` ((first, stop) sequence ranges), ``cells`` and ``scan_seconds`` (summed over
    the scans: :meth:`best`), ``upload_seconds`` (the part of it the scans stood still for uploads), ``residues``.

    Raises:
        NwalignError: a budget too small for any chunk.
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, scoring, device: int, budget: int,
                 long: bool = True):
        self.codes, self.offsets = codes, np.asarray(offsets, dtype=np.int64)
        self.scoring, self.device, self.budget = scoring, device, budget
        self.chunks = chunks(self.offsets, budget, long)
        self.residues = int(self.offsets[-1])
        self.largest = max(int(self.offsets[b] - self.offsets[a]) for a, b in self.chunks)  # residues of a chunk
        self.cells = self.recomputed = 0
        self.scan_seconds = self.upload_seconds = 0.0
        self._ahead = _ReadAhead(self)
        self._ahead.start(0)  # the first chunk read while the search prepares (as a resident database uploads)

    chunked = True  # nwalign.backends.roles.ChunkedScanner

    def timing(self) -> str:
        """For ``-v``: the time waited for the chunks' scans and uploads
        (:func:`nwalign.backends.cuda.search.timing`)."""
        from nwalign.backends.cuda.search import timing

        return timing(self)

    def describe(self, m: int = 0) -> str:
        """One line for ``-v``: the chunks and the memory they fit in (``m``: unused, as the resident
        searcher's)."""
        return (f"the database is streamed through GPU {self.device} in {len(self.chunks)} chunks of up to "
                f"{self.largest:,} residues ({self.budget / 2**30:.2f} GiB of GPU memory)")

    def _upload(self, k: int):
        """Chunk ``k`` on the GPU (:class:`nwalign.backends.cuda.devicedb.DeviceDatabase`), from what was read of it
        ahead where it was."""
        from nwalign.backends.cuda.devicedb import DeviceDatabase

        _free_cached()
        a, b = self.chunks[k]
        lo, hi = int(self.offsets[a]), int(self.offsets[b])
        order, staged = self._ahead.take(k)
        return DeviceDatabase(window(self.codes, lo, hi), self.offsets[a:b + 1] - lo, self.device, order=order,
                              staged=staged)

    SLOTS = 4  # queries in flight on a chunk: its scans are shorter than a resident database's

    def best(self, queries, top: int, progress=None) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query (:class:`nwalign.backends.engine.Encoded`, or its uint8 codes), its best ``top`` candidates over the
        whole database: (database indices int64, scores int64), score descending then index ascending.
        ``progress(cells)`` after each query's scan of a chunk.

        :attr:`scan_seconds` gains the time the host waited for the scans and the uploads of the chunks
        after the first (the scans stand still meanwhile), not the first chunk's upload: a resident
        database's upload is not counted either."""
        from nwalign.records.candidates import merge
        from nwalign.backends.cuda.search import ScanSearcher

        queries = [getattr(q, "codes", q) for q in queries]
        best = [(np.zeros(0, np.int64), np.zeros(0, np.int64)) for _ in queries]
        searcher = None
        begun, stalled = time.perf_counter(), 0.0
        for k, (first, _) in enumerate(self.chunks):
            started = time.perf_counter()
            if searcher is None:  # one searcher for every chunk: its buffers and streams are made once
                # plan profile whatever the chunk's size: chunks are cut from the memory, not to fill the GPU
                searcher = ScanSearcher(None, None, self.scoring, self.device, plan="profile", slots=self.SLOTS,
                                        uploaded=self._upload(k))
            else:
                searcher.release()  # the last chunk and its boundary rows go back to the pool first
                searcher.swap(self._upload(k))
                stalled += time.perf_counter() - started
            _free_cached()
            if k + 1 < len(self.chunks):
                self._ahead.start(k + 1)  # read while this chunk is scanned
            uploaded = time.perf_counter()
            for j, scores in enumerate(scan_all(searcher, queries)):
                found = top_hits(scores, top, None)
                best[j] = merge([best[j], (found + first, scores[found])], top)
                if progress:
                    progress(len(queries[j]) * searcher.residues)
            log.debug("scan: chunk %d of %d (%d sequences) uploaded in %.1f ms, scanned by %d queries in %.2f s",
                      k + 1, len(self.chunks), searcher.count, 1e3 * (uploaded - started), len(queries),
                      time.perf_counter() - uploaded)
        if searcher is not None:
            self.cells += searcher.cells
            self.recomputed += searcher.recomputed
            self.scan_seconds += searcher.scan_seconds + stalled
        self.upload_seconds += stalled
        log.debug("scan: %d chunks in %.2f s, %.0f ms of it uploading the chunks after the first", len(self.chunks),
                  time.perf_counter() - begun, 1e3 * stalled)
        return best


class _ReadAhead:
    """The next chunk's length order and first residues (page-locked memory, up to :data:`READ_AHEAD_BYTES`),
    read by a thread while the current chunk is scanned (the first chunk while the search prepares): its
    upload, while every scan stands still, then takes a copy to the GPU and the sort there, not a read of
    the file."""

    def __init__(self, scan: StreamedScan):
        from concurrent.futures import ThreadPoolExecutor

        from nwalign.backends.cuda.device import pinned_empty

        self.scan = scan
        self.buf = pinned_empty((min(READ_AHEAD_BYTES, scan.largest),), np.uint8)
        self.pool = ThreadPoolExecutor(max_workers=1)
        weakref.finalize(self, self.pool.shutdown, False)  # its thread ends with the scan (a worker makes many)
        self.pending = None

    def start(self, k: int) -> None:
        """Begin reading chunk ``k`` (the buffer's last contents must be on the GPU already)."""
        self.pending = (k, self.pool.submit(self._read, k))

    def _read(self, k: int):
        from nwalign.io.mapped import RangeReader
        from nwalign.backends.cuda.devicedb import length_order

        a, b = self.scan.chunks[k]
        lo, hi = int(self.scan.offsets[a]), int(self.scan.offsets[b])
        order = length_order(self.scan.offsets[a:b + 1] - lo)
        n = min(hi - lo, self.buf.size)
        with RangeReader(window(self.scan.codes, lo, hi)) as reader:
            reader.read(0, n, self.buf)
        return order, self.buf[:n]

    def take(self, k: int):
        """(length order, staged residues) of chunk ``k``, or (None, None) where it was not read ahead."""
        if self.pending is None or self.pending[0] != k:
            return None, None
        k, future = self.pending
        self.pending = None
        return future.result()


def _free_cached() -> None:
    """Give the blocks CuPy's pool keeps for reuse back to the GPU: they count against
    ``CUPY_GPU_MEMORY_LIMIT``, and a chunk's upload leaves its staging copy there (on another stream)."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()


def scan_all(searcher, queries):
    """Each query's scores (``queries``: uint8 codes) over the sequences of ``searcher`` (a
    :class:`nwalign.backends.cuda.search.ScanSearcher`), in order, ``searcher.slots`` queries in flight."""
    from collections import deque

    flying: deque = deque()
    todo = iter(queries)
    while True:
        while len(flying) < searcher.slots:
            q = next(todo, None)
            if q is None:
                break
            flying.append(searcher.submit(q))
        if not flying:
            return
        yield searcher.result(flying.popleft())


def env_limit() -> bool:
    """Whether CuPy's ``CUPY_GPU_MEMORY_LIMIT`` is set (the budget is then known only once CuPy runs)."""
    return bool(os.environ.get("CUPY_GPU_MEMORY_LIMIT"))
