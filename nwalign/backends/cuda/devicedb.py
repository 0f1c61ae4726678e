"""A database on the GPU in the scan's order (:class:`DeviceDatabase`): sorted by decreasing length,
uploaded once for every query through page-locked staging buffers."""

from __future__ import annotations

import logging

import numpy as np

from nwalign.errors import NwalignError
from nwalign.io.mapped import RangeReader, Recoded, copy_of, window
from nwalign.backends.cuda import modules
from nwalign.backends.cuda.device import pinned_empty, require

log = logging.getLogger("nwalign")


class DoesNotFit(NwalignError):
    """The database does not fit in the GPU's free memory (a search then streams it in chunks)."""


class DeviceDatabase:
    """A database on the GPU in the scan's order: sorted by decreasing length (the longest groups start
    first, and the two sequences of a group have close lengths), uploaded once for every query.

    Arguments:
        codes: residue codes (uint8, all sequences concatenated, in file order; or a
            :class:`nwalign.io.mapped.Recoded`).
        offsets: int64 (count + 1,) sequence boundaries in ``codes``.
        device: CUDA device index.
        order: :func:`length_order` of ``offsets`` when already computed (a search starts it while CuPy
            is imported).
        staged: the first ``staged.size`` residues of ``codes`` already read into page-locked memory (uint8;
            a streamed database reads the next chunk's while the current one is scanned).

    Attributes: ``order`` (int32 (count,): file index of each position in length order), ``rank`` (int32
    (count,): position of each file index; made on first use), ``sorted_lengths`` (int32), ``residues``,
    ``count``, and on the GPU
    ``d_res`` (uint8 residues in length order), ``d_off`` (int64 offsets into it), ``d_order`` (int32).

    Raises:
        NwalignError: no usable GPU, an empty database sequence, or a database larger than the GPU's free memory.
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, device: int = 0, order=None, staged=None):
        offsets = np.asarray(offsets, dtype=np.int64)
        self.order, self.sorted_lengths = order if order is not None else length_order(offsets)
        self._rank = None
        self.count, self.device = int(self.order.size), device
        self.residues = int(self.sorted_lengths.sum())
        log.debug("scan: database sorted by length")
        cp = require(device)
        try:
            # no host copies of the per-sequence arrays (50 M sequences: 400 MB each): converted on the GPU
            self.d_order = _to_gpu(cp, self.order)
            self.d_off = _offsets_on_gpu(cp, self.sorted_lengths)
            self.d_res = _sorted_residues(cp, codes, offsets, self.d_order, self.d_off, staged)
        except cp.cuda.memory.OutOfMemoryError:
            free, total = cp.cuda.runtime.memGetInfo()
            raise DoesNotFit(f"scan: the database ({self.residues:,} residues, {self.count:,} sequences) does not "
                             f"fit in GPU {device}'s memory ({free / 2**30:.1f} of {total / 2**30:.1f} GiB free; "
                               "the upload needs about twice its size): split it, or use --backend cpu") from None
        log.debug("scan: database uploaded")

    @property
    def rank(self) -> np.ndarray:
        """int32 (count,): the position in length order of each file index (made on first use: 200 MB
        for 50 M sequences, wanted only where scores are recomputed in 32-bit)."""
        if self._rank is None:
            rank = np.empty(self.count, dtype=np.int32)
            rank[self.order] = np.arange(self.count, dtype=np.int32)
            self._rank = rank
        return self._rank

    def replica(self, device: int) -> "DeviceDatabase":
        """The same database on GPU ``device``, copied from this GPU's copy (GPU to GPU, over NVLink or
        PCIe: a few milliseconds where the host's upload of each copy took tenths of a second, and four
        of them at once contended for the host's memory).

        Raises:
            NwalignError: no usable GPU, or the database does not fit in that GPU's free memory.
        """
        cp = require(device)
        out = object.__new__(DeviceDatabase)
        out.__dict__.update(self.__dict__)
        out.device = device
        try:
            with cp.cuda.Device(device):
                out.d_order, out.d_off, out.d_res = (_peer_copy(cp, a) for a in (self.d_order, self.d_off, self.d_res))
                cp.cuda.Device(device).synchronize()
        except cp.cuda.memory.OutOfMemoryError:
            free, total = cp.cuda.runtime.memGetInfo()
            raise DoesNotFit(f"scan: the database ({self.residues:,} residues, {self.count:,} sequences) does not "
                             f"fit in GPU {device}'s memory ({free / 2**30:.1f} of {total / 2**30:.1f} GiB free): "
                             "split it, or use --backend cpu") from None
        log.debug("scan: database copied from GPU %d to GPU %d", self.device, device)
        return out


def _peer_copy(cp, array):
    """``array`` (on another GPU) copied to the current one."""
    out = cp.empty(array.shape, dtype=array.dtype)
    out.data.copy_from_device(array.data, array.nbytes)
    return out


def length_order(offsets: np.ndarray):
    """(order, sorted_lengths) of a database in the scan's order, decreasing length (stable): order int32
    (count,) the file index at each position, sorted_lengths int32 (count,). Host work only (no CuPy);
    4-byte integers, as a database of 50 M sequences holds these while it is searched.

    Raises:
        NwalignError: an empty database, an empty sequence, or one of 2**31 residues or more.
    """
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    if lengths.size == 0 or lengths.min() < 1:
        raise NwalignError("scan: every database sequence needs at least one residue")
    longest = int(lengths.max())
    if longest >= 2**31 or lengths.size >= 2**31:
        raise NwalignError(f"scan: a database sequence of {longest:,} residues (the GPU scan takes up to 2**31 - 1)")
    lengths = lengths.astype(np.int32)
    # NumPy's stable sort of 16-bit keys is a radix sort: 50 M lengths 2.7x faster than as int64
    keys = (65535 - lengths).astype(np.uint16) if longest < 65536 else -lengths
    order = np.argsort(keys, kind="stable").astype(np.int32)
    del keys
    return order, lengths[order]


_CHUNK = 16 << 20  # bytes per staged copy of the database upload
_STAGES = 4        # pinned staging buffers, filled by as many threads


def _upload(cp, host: np.ndarray, staged=None):
    """``host`` (uint8, 1-D; a memory map is read from its file, a :class:`nwalign.io.mapped.Recoded`
    translated on the way: :mod:`nwalign.io.mapped`) on the GPU, its first ``staged.size`` bytes from
    ``staged`` (page-locked, already read), the rest copied through :data:`_STAGES` pinned buffers of
    :data:`_CHUNK` bytes, each filled by a thread of its own (reads and NumPy's copy release the GIL)
    while the GPU takes the ones filled before: the driver's own staging of pageable memory ran at
    ~1 GB/s, and one thread filling two buffers at ~2-3 GB/s. Returns once the copies are done."""
    out = cp.empty(host.size, dtype=cp.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    done = 0 if staged is None else int(staged.size)
    if done:
        out[:done].set(staged, stream=stream)
    rest = window(host, done, host.size)
    if rest.size <= _CHUNK:
        if rest.size:
            out[done:].set(copy_of(rest), stream=stream)
    else:
        _through_stages(out[done:], rest, stream)
    stream.synchronize()
    return out


def _through_stages(out, host, stream) -> None:
    """``host`` copied into ``out`` (on the GPU) on ``stream`` through the pinned stages of :func:`_upload`."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = -(-host.size // _CHUNK)
    stage = [pinned_empty((_CHUNK,), np.uint8) for _ in range(min(_STAGES, chunks))]

    def fill(k: int, buf: np.ndarray, emptied) -> int:
        if emptied is not None:
            emptied.synchronize()  # the buffer's previous copy to the GPU has left it
        a = k * _CHUNK
        b = min(a + _CHUNK, host.size)
        reader.read(a, b, buf)
        return b - a

    with RangeReader(host) as reader, ThreadPoolExecutor(max_workers=len(stage)) as pool:
        filling = {k: pool.submit(fill, k, stage[k], None) for k in range(len(stage))}
        for k in range(chunks):
            size = filling.pop(k).result()
            buf = stage[k % len(stage)]
            out[k * _CHUNK:k * _CHUNK + size].set(buf[:size], stream=stream)
            if k + len(stage) < chunks:
                filling[k + len(stage)] = pool.submit(fill, k + len(stage), buf, stream.record())
        stream.synchronize()


def _to_gpu(cp, host: np.ndarray):
    """``host`` copied to the GPU straight from its pageable memory: ``cupy.asarray`` stages a copy in
    page-locked memory that CuPy's pool then keeps (for 50 M sequences, 400 MB of offsets: host memory
    held for the rest of the search)."""
    out = cp.empty(host.shape, dtype=host.dtype)
    out.set(np.ascontiguousarray(host))
    return out


def _offsets_on_gpu(cp, lengths: np.ndarray, block: int = 1 << 22):
    """Offsets (int64, shape (count + 1,)) of sequences of ``lengths`` on the GPU: the prefix sums are taken
    on the host a block at a time (host memory stays bounded), not by CuPy's cumsum, whose kernel each process
    generates and loads at its first use (tens of ms of a small search's start)."""
    out = cp.empty(lengths.size + 1, dtype=cp.int64)
    out[:1].set(np.zeros(1, dtype=np.int64))
    buf, carry = np.empty(min(block, lengths.size), dtype=np.int64), 0
    for a in range(0, lengths.size, block):
        part = buf[:min(block, lengths.size - a)]
        np.cumsum(lengths[a:a + part.size], dtype=np.int64, out=part)
        part += carry
        out[a + 1:a + 1 + part.size].set(part)
        carry = int(part[-1])
    return out


def _sorted_residues(cp, codes: np.ndarray, offsets: np.ndarray, d_order, d_off, staged=None):
    """The residues uploaded once (the first ``staged.size`` from ``staged``: :func:`_upload`), then copied
    on the GPU into length order (no host-side copy); ``d_order``: the length order on the GPU (int32)."""
    d_codes = _upload(cp, codes if isinstance(codes, Recoded) else np.asarray(codes, dtype=np.uint8), staged)
    d_src = _to_gpu(cp, offsets)
    out = cp.empty(int(offsets[-1]), dtype=cp.uint8)
    count = d_order.size
    func = modules.kernel("sw_search", "sw_gather")
    func(((count + 7) // 8,), (256,), (d_codes, d_src, d_order, d_off, out, np.int64(count)))
    # Done before any scan reads it: the scans run on other (non-blocking) streams, perhaps of another thread.
    cp.cuda.get_current_stream().synchronize()
    return out
