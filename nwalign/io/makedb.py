"""``nwalign makedb``: a FASTA file (plain, gzip, bzip2, xz or standard input) of any size written as a
version-2 ``.nwdb`` (:func:`nwalign.io.database.write_database` has the layout) in bounded memory.

The FASTA text comes in blocks of whole records (:func:`nwalign.io.fastastream.record_blocks`), parsed on
several threads by a compiled loop (:class:`nwalign.io.fastastream.Parsed`); the residues, ids and
descriptions go to scratch files beside the output as they come, and only a few numbers per record stay
in memory (24 bytes: lengths and an id hash). The letters' order depends on every residue (the default
alphabet of the kind they make up), so the residues are encoded when the scratch file is copied into the
database (on threads, last pieces first, the scratch file cut behind them: the disk holds them about once),
and their checksum taken after; the header's room is reserved before its checksums are known
(:func:`nwalign.io.database.v2_header`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nwalign.io.writing import check_database_path, written_atomically
from nwalign.io.database import (MAGIC2, Database, header_crc, crc32_function, database_letters, load_database, v2_header)
from nwalign.errors import NwalignError
from nwalign.io.sequences import RESIDUE_BYTES, not_a_residue
from nwalign.io.fastastream import BLOCK_BYTES, Parsed, bad_byte_error, record_blocks

COPY_BYTES = 1 << 22  # residues encoded and written per step
MAX_THREADS = 16  # threads parsing and encoding, at most
ENCODE_BYTES = 1 << 20  # residues encoded per step of a thread (NumPy's take holds 8 bytes an index pair)


class _Scratch:
    """The parsed blocks so far: residues, ids and descriptions in scratch files of ``folder``, the
    per-record lengths and id hashes in memory, the residue counts."""

    def __init__(self, folder: str, name: str):
        self.name = name
        self.paths = [os.path.join(folder, part) for part in ("residues", "ids", "descriptions")]
        self.files = [open(p, "wb") for p in self.paths]
        self.id_len, self.desc_len, self.seq_len, self.hashes = [], [], [], []
        self.hist = np.zeros(256, dtype=np.int64)
        self.count = 0

    def add(self, parsed: Parsed, block: bytes) -> None:
        if parsed.bad >= 0:
            raise bad_byte_error(self.name, block, parsed.bad)
        parsed.name_blank_ids(self.count)
        self._check_residues(parsed)
        empty = np.flatnonzero(parsed.seq_len == 0)
        if empty.size:
            k = int(empty[0])
            start = int(parsed.id_len[:k].sum())
            name = parsed.ids[start:start + parsed.id_len[k]].tobytes().decode("ascii")
            raise NwalignError(f"{self.name}: record {self.count + k + 1} ({name}) has an empty sequence")
        for out, data in zip(self.files, (parsed.residues, parsed.ids, parsed.descriptions)):
            out.write(memoryview(data))
        self.id_len.append(parsed.id_len.astype(np.int32))  # 8 bytes a record less: 50 M records, 400 MB
        self.desc_len.append(parsed.desc_len.astype(np.int32))
        self.seq_len.append(parsed.seq_len)
        self.hashes.append(parsed.hashes)
        self.hist += parsed.hist
        self.count += parsed.seq_len.size

    def _check_residues(self, parsed: Parsed) -> None:
        """Refuse a block's first byte that is no residue letter (a digit, '-', '.', a '>' inside a
        sequence), naming its record and position as pair and search do."""
        if not (parsed.hist[~RESIDUE_BYTES] > 0).any():
            return
        residues = np.frombuffer(memoryview(parsed.residues), dtype=np.uint8)
        at = int(np.flatnonzero(~RESIDUE_BYTES[residues])[0])
        ends = np.cumsum(parsed.seq_len)
        k = int(np.searchsorted(ends, at, side="right"))
        start = int(parsed.id_len[:k].sum())
        name = parsed.ids[start:start + parsed.id_len[k]].tobytes().decode("ascii", "replace")
        raise not_a_residue(self.name, chr(residues[at]), name, at - int(ends[k] - parsed.seq_len[k]) + 1)

    def close(self) -> None:
        for out in self.files:
            out.close()
        for name in ("id_len", "desc_len", "seq_len", "hashes"):
            setattr(self, name, np.concatenate(getattr(self, name)))
        self.hist[ord("A"):ord("Z") + 1] += self.hist[ord("a"):ord("z") + 1]  # residues read as upper case
        self.hist[ord("a"):ord("z") + 1] = 0


def _parse_all(fasta: str, scratch: _Scratch, block_bytes: int, threads: int) -> None:
    """Every block of ``fasta`` parsed (``threads`` at once, in order into ``scratch``)."""
    flying: deque = deque()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for block in record_blocks(fasta, block_bytes):
            flying.append((pool.submit(Parsed, block), block))
            while len(flying) > threads:
                future, done = flying.popleft()
                scratch.add(future.result(), done)
        while flying:
            future, done = flying.popleft()
            scratch.add(future.result(), done)
    scratch.close()


def _ids_unique(scratch: _Scratch) -> bool:
    """Whether no two ids are the same: their hashes compared (sorted), the bytes only where hashes meet."""
    hashes = np.sort(scratch.hashes)
    if not np.any(hashes[1:] == hashes[:-1]):
        return True
    del hashes
    order = np.argsort(scratch.hashes, kind="stable")
    same = np.flatnonzero(scratch.hashes[order][1:] == scratch.hashes[order][:-1])
    starts = np.zeros(scratch.count + 1, dtype=np.int64)
    np.cumsum(scratch.id_len, out=starts[1:])
    with open(scratch.paths[1], "rb") as handle:
        def name(k: int) -> bytes:
            return os.pread(handle.fileno(), int(starts[k + 1] - starts[k]), int(starts[k]))
        return not any(name(a) == name(b) for a, b in zip(order[same].tolist(), order[same + 1].tolist()))


def _copied(source: str, out, crc: int = 0) -> int:
    """Append file ``source`` to ``out``; returns the CRC-32 of what was written, continuing ``crc``."""
    checksum = crc32_function()
    with open(source, "rb") as handle:
        while True:
            piece = handle.read(COPY_BYTES)
            if not piece:
                return crc
            crc = checksum(piece, crc)
            out.write(piece)


def _encoded_into(source: str, out, at: int, lut: np.ndarray, threads: int) -> int:
    """The residues of scratch file ``source`` through the 256-byte table ``lut`` into file ``out`` from
    byte ``at``, on ``threads`` threads, the last pieces first, the scratch file cut behind them (the disk
    holds the residues about once, not twice: 17 GB for UniRef50); returns the CRC-32 of what was written
    (a pass over it once written: the page cache)."""
    size = os.path.getsize(source)
    out.flush()
    target = out.fileno()
    pairs = np.arange(1 << 16)
    lut2 = lut[pairs & 255].astype(np.uint16) | lut[pairs >> 8].astype(np.uint16) << 8  # two bytes at a time
    with open(source, "rb+") as scratch:
        def one(a: int) -> None:
            piece = np.frombuffer(os.pread(scratch.fileno(), min(ENCODE_BYTES, size - a), a), dtype=np.uint8)
            even = piece.size & ~1
            coded = np.empty(piece.size, dtype=np.uint8)
            np.take(lut2, piece[:even].view(np.uint16), out=coded[:even].view(np.uint16), mode="clip")  # releases the GIL
            coded[even:] = lut[piece[even:]]
            _written(target, coded, at + a)
        starts = list(range(0, size, ENCODE_BYTES))[::-1]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for k in range(0, len(starts), 16 * threads):
                wave = starts[k:k + 16 * threads]
                list(pool.map(one, wave))
                scratch.truncate(wave[-1])
    checksum, crc, a = crc32_function(), 0, 0
    while a < size:
        piece = os.pread(target, min(COPY_BYTES, size - a), at + a)
        if not piece:
            raise OSError("the database file ended before its residues")
        crc, a = checksum(piece, crc), a + len(piece)
    return crc


def _written(fd: int, data, at: int) -> None:
    """All of ``data`` written at byte ``at`` of ``fd``."""
    view = memoryview(data).cast("B")
    while view:
        done = os.pwrite(fd, view, at)
        view, at = view[done:], at + done


def _write(scratch: _Scratch, out, threads: int) -> None:
    """The .nwdb of ``scratch`` into the open file ``out``: the residues first, past the room of the
    header, names and offsets, whose checksums are known only then."""
    count, lengths = scratch.count, scratch.seq_len
    unique = _ids_unique(scratch)  # first: its sort's memory is back before the offsets are made
    scratch.hashes = None
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.zeros(2 * count + 1, dtype=np.int64)
    np.cumsum(scratch.id_len, out=index[1:count + 1])
    np.cumsum(scratch.desc_len, out=index[count + 1:])
    index[count + 1:] += index[count]
    names_bytes = index.nbytes + int(index[-1])
    pad = b" " * (-names_bytes % 8)
    letters = database_letters(scratch.hist)
    lut = np.zeros(256, dtype=np.uint8)
    lut[np.frombuffer(letters.encode("ascii"), dtype=np.uint8)] = np.arange(len(letters), dtype=np.uint8)
    fields = {"count": count, "total": int(offsets[-1]), "letters": letters,
              "names_bytes": names_bytes + len(pad), "names_format": "indexed",
              "counts": {chr(c): int(scratch.hist[c]) for c in np.flatnonzero(scratch.hist)},
              "ids_unique": unique, "checked_header": True,
              "crc32": {"names": 0, "offsets": 0, "residues": 0, "header": 0}}
    room = len(v2_header(fields))
    upper = np.arange(ord("A"), ord("Z") + 1)
    lut[upper + 32] = lut[upper]  # lower case reads as upper case
    residues_crc = _encoded_into(scratch.paths[0], out, len(MAGIC2) + 8 + room + names_bytes + len(pad) + offsets.nbytes,
                                 lut, threads)
    out.seek(len(MAGIC2) + 8 + room)
    out.write(index.tobytes())
    names_crc = _copied(scratch.paths[2], out, _copied(scratch.paths[1], out, zlib.crc32(index)))
    out.write(pad)
    out.write(offsets.tobytes())
    fields["crc32"] = {"names": zlib.crc32(pad, names_crc), "offsets": zlib.crc32(offsets), "residues": residues_crc}
    fields["crc32"]["header"] = header_crc(fields)
    header = v2_header(fields)
    assert len(header) == room
    out.seek(0)
    out.write(MAGIC2 + np.uint64(room).tobytes() + header)


def makedb(fasta: str, path: str, block_bytes: int = BLOCK_BYTES, threads: int | None = None) -> Database:
    """Write ``fasta`` (a file or '-': standard input; plain, gzip, bzip2 or xz) as a memory-mappable
    version-2 .nwdb at ``path`` (through a temporary file and an atomic rename); returns the database,
    memory-mapped from the file. Blocks of about ``block_bytes`` of FASTA are parsed on ``threads``
    threads (default: the cores, up to :data:`MAX_THREADS`). Memory: about 5 x ``block_bytes`` per thread, and 24 bytes a
    record; scratch files beside ``path`` hold the residues and names until they are copied in.

    Raises:
        NwalignError: an unreadable, empty or non-FASTA file, corrupt compression, a record without
            residues, or a path that cannot be written.
    """
    name = "<stdin>" if fasta == "-" else fasta
    check_database_path(path)  # before any input is read
    threads = threads or max(1, min(MAX_THREADS, os.cpu_count() or 1))
    folder = os.path.dirname(os.path.realpath(path))
    try:
        scratch_dir = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.", suffix=".parts", dir=folder)
    except OSError as exc:
        raise NwalignError(f"{path}: cannot write the database ({exc.strerror or exc})") from None
    try:
        scratch = _Scratch(scratch_dir, name)
        try:
            _parse_all(fasta, scratch, block_bytes, threads)
        finally:
            for out in scratch.files:
                out.close()
        written_atomically(path, lambda out: _write(scratch, out, threads))
    except OSError as exc:  # the scratch files (a full disk)
        raise NwalignError(f"{path}: cannot write the database ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)
    return load_database(path, written_here=True)
