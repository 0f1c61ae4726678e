"""Where a search's database lives on the GPUs: resident (uploaded once, in the scan's length order, while
the queries are read; copied GPU to GPU to the others) or streamed through each GPU in chunks where it does
not fit the memory the search may use there (:mod:`nwalign.backends.cuda.streamed`); the hits of each GPU
aligned there by the batch kernel (:class:`nwalign.backends.cuda.batch.BatchAligner`).
"""

from __future__ import annotations

import logging

from nwalign.background import in_background

log = logging.getLogger("nwalign")


class GpuSearch:
    """A search's database on one or more GPUs (:class:`nwalign.backends.roles.SearchPlace`).

    Arguments:
        database: the :class:`~nwalign.io.database.Database`.
        kernel: ``scan`` (the default kernel after CUDASW++4.0) or ``gsw``.
        gpu_memory: bytes the scan may use on each GPU (None: what is free; CuPy's
            ``CUPY_GPU_MEMORY_LIMIT`` is respected too).
        sort: sort the database's length order now, in the background (a one-process search on a
            resident database; a streamed one is sorted chunk by chunk).
    """

    def __init__(self, database, kernel: str, gpu_memory: int | None, sort: bool = True):
        from nwalign.backends.cuda.streamed import env_limit

        self.database, self.kernel, self.gpu_memory = database, kernel, gpu_memory
        self.capped = gpu_memory is not None or env_limit()
        self.on_scan = kernel == "scan" and database.codes is not None
        self._order = self._length_order() if self.on_scan and sort and not self.capped else None
        self._upload: dict | None = None
        self.streamed = False

    def _length_order(self):
        """The scan's length order of the database, sorted in the background while CuPy is imported
        (NumPy's sort releases the GIL)."""
        from nwalign.backends.cuda.devicedb import length_order

        offsets = self.database.offsets
        return in_background(lambda: length_order(offsets))

    def upload_to(self, devices: list[int]) -> None:
        """A ``.nwdb``'s codes to ``devices`` now, while the queries' alphabet is settled (used where it is
        the file's); not where the memory is capped (the scan may stream it instead, decided once CuPy
        runs)."""
        if self.on_scan and not self.capped:
            self._upload = self._uploads(devices, self._order)

    def _uploads(self, gpus: list[int], order, codes=None) -> dict:
        """Futures of the database's codes (``codes``, default the .nwdb's) on each of ``gpus``
        (:class:`nwalign.backends.cuda.devicedb.DeviceDatabase`): uploaded to the first, copied from there
        to the others."""
        from nwalign.backends.cuda.devicedb import DeviceDatabase

        codes, offsets = self.database.codes if codes is None else codes, self.database.offsets

        def first_copy():
            return DeviceDatabase(codes, offsets, gpus[0], None if order is None else order.result())
        first = in_background(first_copy)
        # the other GPUs copy the first one's (GPU to GPU) instead of each reading the host's memory
        return {g: first if g == gpus[0] else in_background(lambda g=g: first.result().replica(g)) for g in gpus}

    def leads(self, devices: list[int], codes, scoring, query_lengths: list[int], align: bool) -> list[tuple]:
        """(scanner, hit aligner or None) on each of ``devices``: the whole database on each (uploaded to the
        first, copied to the others), or streamed through each in chunks where it does not fit."""
        import time

        from nwalign.backends.cuda.batch import MODES, BatchAligner
        from nwalign.backends.cuda.device import require

        self._codes, self._scoring, self._long = codes, scoring, query_lengths
        align = align and scoring.mode in MODES  # the batch kernel's modes; glocal hits align on the CPU
        t0 = time.perf_counter()
        if len(devices) == 1:
            lead = (self._scanner(devices[0]), BatchAligner(scoring, devices[0]) if align else None)
            self._log_one(lead[0], time.perf_counter() - t0, align, query_lengths)
            return [lead]
        upload = self._upload
        if upload is not None and self.database.letters != scoring.alphabet:  # other codes than the scoring's:
            for pending in upload.values():  # those copies leave the GPUs before the scoring's come
                pending.exception()
            upload.clear()
            upload = None
        if upload is None and not self.capped:  # a FASTA database's codes, or re-encoded ones
            self._upload = self._uploads(devices, None, codes)

        def lead_on(g):
            return self._scanner(g, shared=True), BatchAligner(scoring, g) if align else None
        made = [in_background(lambda g=g: lead_on(g)) for g in devices]
        for m in made:
            if m.exception() is not None:
                raise m.exception()
        require(devices[0])  # this thread's GPU again (each searcher selected its own)
        return [m.result() for m in made]

    def _log_one(self, scanner, seconds: float, align: bool, query_lengths: list[int]) -> None:
        log.info("search: kernel %s on the GPU (database %s in %.2f s); hits aligned %s", self.kernel,
                 "planned" if self.streamed else "uploaded", seconds,
                 "on the GPU" if align else "on the CPU" if self._scoring.mode != "local" else
                 "(none: score columns only)")
        if query_lengths:  # as for the longest query
            log.info("search: %s", scanner.describe(max(query_lengths)))

    def _scanner(self, device: int, shared: bool = False):
        """The scan on ``device``: streamed where the memory is capped and the database does not fit, else
        resident (streamed after all where its upload runs out of memory); ``shared``: one of several GPUs
        driven by this process's threads (more queries in flight: :data:`nwalign.backends.cuda.search.SLOTS_SHARED`)."""
        found = self._streamed(device, None) if self.kernel == "scan" and self.capped else None
        return found if found is not None else self._resident(device, shared)

    def _streamed(self, device: int, failed):
        """A :class:`nwalign.backends.cuda.streamed.StreamedScan` where the resident database would exceed the
        GPU memory the search may use (or its upload ``failed``, an error: out of memory), else None."""
        from nwalign.backends.cuda.device import require
        from nwalign.backends.cuda.streamed import StreamedScan, budget_of, long_queries, resident_bytes

        db = self.database
        budget, source = budget_of(require(device), self.gpu_memory)
        long = long_queries(self._long)
        need = resident_bytes(db.total_length, db.count, long)
        if failed is None and need <= budget:
            log.info("search: the database is resident on GPU %d (about %.2f of %.2f GiB, %s)", device, need / 2**30,
                     budget / 2**30, source)
            return None
        if failed is not None:
            log.info("search: the database does not fit on GPU %d (%s)", device, failed)
        self.streamed = True
        return StreamedScan(self._codes, db.offsets, self._scoring, device, budget, long)

    def _resident(self, device: int, shared: bool = False):
        """The GPU searcher over the whole database on ``device`` (the uploaded .nwdb where its codes are
        the scoring's); streamed after all where the upload runs out of memory."""
        import cupy

        from nwalign.backends.cuda.devicedb import DoesNotFit
        from nwalign.backends.cuda.gsw import GswSearcher
        from nwalign.backends.cuda.search import SLOTS_SHARED, ScanSearcher

        db, scoring, upload = self.database, self._scoring, self._upload
        if self.kernel == "gsw":
            return GswSearcher(db, scoring, device)
        try:
            uploaded = None
            if upload and db.letters == scoring.alphabet:
                uploaded = upload[device].result()
            elif upload:  # other codes: wait for that copy, so that two are never on the GPU
                upload[device].exception()
                upload.clear()
            return ScanSearcher(self._codes, db.offsets, scoring, device, uploaded=uploaded,
                                slots=SLOTS_SHARED if shared else None)
        except (DoesNotFit, cupy.cuda.memory.OutOfMemoryError) as exc:
            return self._streamed(device, exc)
