"""One long pair's score pass over several GPUs: the bands of ``wave_score16.cu`` dealt to the GPUs in
chunks, the hand-off row passed from GPU to GPU over NVLink.

The wavefront kernel's parallelism is its row bands: a warp sweeps a band of 32 x R query rows across
every column, one band behind the other, each reading the previous band's last row as it is written
(tagged hand-off words). Spread over G GPUs, the bands are cut into chunks of C consecutive bands,
chunk k to GPU k % G; a band reads the previous band's words from a row buffer on its own GPU, and a
chunk's last band writes its words straight into the next GPU's buffer (peer access). Every GPU's buffer
thus receives its words in band order, as on one GPU, and a GPU starts as soon as the chunk before its
first has begun: the GPUs fill one after the other with a delay of about C bands' lag (C x 74 columns),
not a whole sweep. Checkpoint rows (the linear-space traceback's), H(m, n) and the range-check flag are
written to the first GPU, where the traceback runs. Column strips per GPU (CUDAlign 4.0's split, Sandes
et al., IEEE TPDS 2016, section 4) would make each GPU wait a whole band sweep of its left neighbour per
round of bands; dealing row bands keeps that wait to one chunk's lag.

Only the 16-bit pass (long global pairs) is spread; its 32-bit fallback and the traceback's recomputed
blocks run on the first GPU.
"""

from __future__ import annotations

import copy
import logging

import numpy as np

from nwalign.background import in_background
from nwalign.backends.cuda.structs import SCORE_ARGS, SPREAD16_ARGS
from nwalign.backends.cuda.device import device_ptr
from nwalign.backends.cuda.wavebase import SCORE_WARPS, WAVE_SCORE16_NAMES, handoff_row

log = logging.getLogger("nwalign")

MAX_TAG_BANDS = 30000  # G x C must stay below the hand-off tags' 2^15 (wave_common.cuh: wave_tag)


CHUNKS_PER_ROUND = 4  # chunks of each GPU in one round of its resident warps


def chunk_bands(nbands: int, places: int, resident_warps: int) -> int:
    """Bands per chunk: a GPU's resident warps over ``CHUNKS_PER_ROUND`` x ``places``, so that each GPU's
    round of warps takes bands from all along the others' (a GPU whose chunk is a whole round of warps
    waits for the previous GPU's round: on 4 H200s, 6 Mb x 6 Mb, chunks of 1,465 bands ended 1.4 s apart
    and took 4.66 s, chunks of 512 ended together in 3.06 s); at most a place's share of the bands."""
    chunk = max(1, resident_warps // (CHUNKS_PER_ROUND * places))
    return max(1, min(chunk, -(-nbands // places), MAX_TAG_BANDS // places))


def local_bands(nbands: int, places: int, chunk: int, place: int) -> int:
    """How many of the ``nbands`` bands place ``place`` runs (chunk k goes to place k % places)."""
    chunks = -(-nbands // chunk)
    mine = range(place, chunks, places)
    return sum(min(chunk, nbands - k * chunk) for k in mine)


def peer_pairs(places) -> list[tuple[int, int]]:
    """(GPU, the peer GPU whose memory it writes) of a pass over ``places``: each place writes the next
    one's hand-off row, and every place writes the first's checkpoint rows, corner and traceback
    columns; distinct GPUs only."""
    wanted = {(places[g], places[(g + 1) % len(places)]) for g in range(len(places))}
    wanted |= {(d, places[0]) for d in places}
    return sorted((a, b) for a, b in wanted if a != b)


def enable_peers(places) -> bool:
    """Peer access for :func:`peer_pairs` of ``places`` (GPU numbers); False where some pair has none."""
    import cupy

    pairs = peer_pairs(list(places))
    if not all(cupy.cuda.runtime.deviceCanAccessPeer(a, b) for a, b in pairs):
        return False
    for a, b in pairs:
        with cupy.cuda.Device(a):
            try:
                cupy.cuda.runtime.deviceEnablePeerAccess(b)
            except cupy.cuda.runtime.CUDARuntimeError as exc:
                if "AlreadyEnabled" not in str(exc):
                    raise
    return True


class SpreadPass:
    """The 16-bit score pass of a :class:`nwalign.backends.cuda.wavefront.Wavefront` over the GPUs ``places``
    (GPU numbers; the first is the Wavefront's. A GPU named twice runs two chunks' streams side by side,
    each on its share of the GPU: what the tests do on one GPU).

    Raises:
        NwalignError: (from the kernel loader) a kernel that cannot be loaded.
    """

    def __init__(self, wf, places):
        import cupy

        self.wf, self.places = wf, list(places)
        self.share = {d: self.places.count(d) for d in self.places}  # places on each GPU
        self.chunk: int | None = None  # bands per chunk (None: chunk_bands; tests set a few)
        # Each GPU made ready in a thread of its own (a context not made at start-up: 0.1-0.2 s each).
        made = [in_background(lambda d=d: self._ready(d)) for d in self.places]
        self.on = [m.result() for m in made]  # per place: (q, t, S) on its GPU and a stream
        self.views: dict = {}  # the other GPUs: a copy of the Wavefront over their own q, t, S
        for d, (q, t, S, _) in zip(self.places, self.on):
            if d != self.places[0] and d not in self.views:  # the traceback's windows recomputed there
                with cupy.cuda.Device(d):
                    view = copy.copy(wf)
                    view.q, view.t, view.S, view.spread = q, t, S, None
                    view.corner = cupy.zeros(1, dtype=cupy.int32)
                    self.views[d] = view
        log.info("wavefront: the score pass spread over GPUs %s", ",".join(map(str, self.places)))

    def _ready(self, d: int) -> tuple:
        """GPU ``d``'s copy of the sequences and scoring, a stream, and the pass's kernel loaded there."""
        import cupy

        from nwalign.backends.cuda import modules

        wf = self.wf
        with cupy.cuda.Device(d):
            if d == self.places[0]:
                q, t, S = wf.q, wf.t, wf.S
            else:
                q, t, S = cupy.asarray(wf.q), cupy.asarray(wf.t), cupy.asarray(wf.S)
            modules.function("wave_score16", f"wave_score16_spread<{wf.rows_per_lane // 2}>",
                             name_expressions=WAVE_SCORE16_NAMES)
            cupy.cuda.Device(d).synchronize()  # the copies done before another thread's stream reads them
            return q, t, S, cupy.cuda.Stream(non_blocking=True)

    def launch(self, r0: int, r1: int, ncols: int, topH, topF, ck_every: int, ckH, ckF) -> bool:
        """Rows r0+1..r1 over columns 1..ncols from row r0 = (topH, topF) on the first GPU, as
        ``Wavefront._score_launch(..., packed=True)``: checkpoints into ``ckH``/``ckF`` (first GPU) every
        ``ck_every`` bands, H(m, n) into the Wavefront's corner. Returns whether a range check failed (the
        caller recomputes in 32-bit)."""
        import cupy

        from nwalign.backends.cuda import modules

        wf, places = self.wf, self.places
        rows = wf.rows_per_lane
        nbands = -(-(r1 - r0) // (32 * rows))
        words = 2 if rows <= 8 else 4
        shared = SCORE_WARPS * wf.A * 32 * words * 4
        threads = 32 * SCORE_WARPS
        name = f"wave_score16_spread<{rows // 2}>"
        funcs, blocks = [], []
        for d in places:
            with cupy.cuda.Device(d):
                func = modules.function("wave_score16", name, name_expressions=WAVE_SCORE16_NAMES)
                if shared > 48 << 10:
                    func.max_dynamic_shared_size_bytes = shared
                funcs.append(func)
                blocks.append(max(1, modules.resident_blocks(func, threads, shared) // self.share[d]))
        chunk = self.chunk or chunk_bands(nbands, len(places), min(blocks) * SCORE_WARPS)
        overflow = cupy.zeros(1, dtype=cupy.int32)  # on the first GPU, as the corner and checkpoints
        hand = [handoff_row(cupy)(topH[:ncols + 1], topF[:ncols + 1], wf.go, wf.ge)]
        for d in places[1:]:
            with cupy.cuda.Device(d):
                hand.append(cupy.zeros(ncols + 1, dtype=cupy.uint64))  # zeroed words carry no band's tag
        for d in set(places):  # every buffer ready before any GPU writes into another's
            cupy.cuda.Device(d).synchronize()
        marks = []  # per place: events at its kernel's start and end (the -v timeline)
        for g, d in enumerate(places):
            q, t, S, stream = self.on[g]
            count = local_bands(nbands, len(places), chunk, g)
            if count == 0:
                continue
            a = (device_ptr(q), device_ptr(t), device_ptr(S), wf.A, wf.m, wf.n, wf.go, wf.ge, r0, r1, ncols, nbands, device_ptr(hand[g]),
                 device_ptr(ckH), device_ptr(ckF), ck_every, device_ptr(wf.corner), 0, 0, ncols + 1)
            args = np.array([((np.array([a], dtype=SCORE_ARGS)[0], wf.limit16, device_ptr(overflow)),
                              device_ptr(hand[(g + 1) % len(places)]), g, len(places), chunk, count)],
                            dtype=SPREAD16_ARGS)[0]
            with cupy.cuda.Device(d), stream:
                marks.append((d, cupy.cuda.Event(), cupy.cuda.Event()))
                marks[-1][1].record()
                funcs[g]((min(blocks[g], -(-count // SCORE_WARPS)),), (threads,), (args,), shared_mem=shared)
                marks[-1][2].record()
        self._wait([self.on[g][3] for g in range(len(places))])
        log.debug("wavefront: %d bands in chunks of %d over %d GPUs: %s", nbands, chunk, len(places),
                  ", ".join(f"GPU {d} {cupy.cuda.get_elapsed_time(a, b) / 1e3:.3f} s" for d, a, b in marks))
        return bool(overflow.get()[0])

    def _wait(self, streams) -> None:
        """Wait for every place's kernel. Polled, not waited for in turn: a GPU that fails leaves the
        others spinning on hand-off words that never come, and waiting for one of those would never end;
        its error is raised at once instead (the process's exit takes the others' kernels down).

        Raises:
            DeviceLost: a GPU's kernel failed (its CUDA error named; exit status 1).
        """
        import time

        from nwalign.errors import DeviceLost

        pending = list(zip(self.places, streams))
        while pending:
            left = []
            for d, stream in pending:
                if not stream.done:
                    left.append((d, stream))
                    continue
                try:
                    stream.synchronize()
                except Exception as exc:  # a CUDA error: this GPU's part is lost, and the pass with it
                    raise DeviceLost(f"pair: GPU {d} failed during the score pass spread over GPUs "
                                       f"{','.join(map(str, self.places))} ({type(exc).__name__}: {exc}); "
                                       "run it on one GPU (--devices 0)") from None
            pending = left
            if pending:
                time.sleep(0.001)
