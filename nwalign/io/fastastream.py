"""A FASTA file read as a stream of blocks of whole records (plain, gzip, bzip2, xz or standard input),
so that a database of any size is built in bounded memory (:mod:`nwalign.io.makedb`), and each block
parsed with NumPy (:class:`Parsed`), several blocks at once on threads.

The records are those :func:`nwalign.io.sequences.read_fasta_arrays` (and Biopython's FASTA parser) gives:
a header is a line starting with '>'; its id is the first word of the line, its description the line
less trailing whitespace (Python's ``str.split`` / ``str.rstrip`` whitespace); the residues are the
other lines' bytes other than whitespace (any byte up to the space), upper-cased.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import stat
import sys
import zlib

import numpy as np

from nwalign.errors import NwalignError

#: Decompressed bytes per block (grown where one record is longer).
BLOCK_BYTES = 1 << 23
#: What Python's str.split() and str.rstrip() take for whitespace among ASCII bytes.
BLANK = np.zeros(256, dtype=np.bool_)
BLANK[np.frombuffer(b" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", dtype=np.uint8)] = True


_OPEN_ERRORS = {FileNotFoundError: "no such file", IsADirectoryError: "is a directory, not a FASTA file",
                PermissionError: "permission denied"}


def opening_error(path: str, exc: OSError) -> NwalignError:
    """The one-line error of a sequence file that cannot be opened (``exc``: one of ``OPENING``)."""
    return NwalignError(f"{path}: {_OPEN_ERRORS[type(exc)]}")


OPENING = tuple(_OPEN_ERRORS)  # the errors opening_error words


def compressed_error(name: str, exc: Exception) -> NwalignError | None:
    """The one-line error of a corrupt or truncated compressed file, where ``exc`` (raised while
    decompressing) says so (zlib, bz2, xz, ISA-L's own type, not imported up front); None for others."""
    if isinstance(exc, (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError)) or \
            type(exc).__name__ == "IsalError":
        return NwalignError(f"{name}: corrupt or truncated compressed file ({exc})")
    return None


def standard_input():
    """Standard input's binary stream.

    Raises:
        NwalignError: standard input is closed (``<&-``).
    """
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise NwalignError("standard input ('-') is closed: give a file, or a pipe into '-'")
    return stream


def _open(path: str):
    """A binary file object of ``path`` ('-': standard input)."""
    if path == "-":
        return standard_input()
    try:
        handle = open(path, "rb")
    except OPENING as exc:
        raise opening_error(path, exc) from None
    if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise NwalignError(f"{path}: is a directory, not a FASTA file")
    return handle


class _Peeked(io.RawIOBase):
    """A file object whose first bytes were read already (to recognise the compression)."""

    def __init__(self, head: bytes, handle):
        super().__init__()
        self.head, self.handle = head, handle

    def readinto(self, buffer) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
            return n
        return self.handle.readinto(buffer)

    def readable(self) -> bool:
        return True


def decompressed(handle):
    """A file object giving the bytes of ``handle`` (binary) decompressed where its first bytes say gzip
    (ISA-L's inflate where python-isal is installed: 2.4x zlib's speed), bzip2 or xz; concatenated
    members are read in turn."""
    head = handle.read(6)
    raw = io.BufferedReader(_Peeked(head, handle), 1 << 20)
    if head[:2] == b"\x1f\x8b":
        try:
            from isal import igzip
            return igzip.IGzipFile(fileobj=raw, mode="rb")
        except ImportError:
            import gzip
            return gzip.GzipFile(fileobj=raw, mode="rb")
    if head[:3] == b"BZh":
        return bz2.BZ2File(raw)
    if head == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw)
    return raw


def _read_into(stream, view: memoryview, name: str) -> int:
    """Fill ``view`` from ``stream`` as far as it goes (fewer bytes only at its end); returns the count."""
    got = 0
    try:
        while got < len(view):
            n = stream.readinto(view[got:])
            if not n:
                break
            got += n
    except Exception as exc:
        error = compressed_error(name, exc)
        if error is None:
            raise
        raise error from None
    return got


def record_blocks(path: str, size: int = BLOCK_BYTES):
    """The FASTA text of ``path`` as consecutive blocks (memoryviews) of whole records, each about
    ``size`` bytes (more where a record is longer), the first starting at the first record's '>': a
    UTF-8 byte-order mark and blank lines before it are dropped, and old Mac line ends (CR only,
    recognised in the first block) read as newlines. Each block is read once into a buffer of its own.

    Raises:
        NwalignError: an unreadable or missing file, corrupt compression, an empty file, or text that
            does not start with a '>' header.
    """
    name = "<stdin>" if path == "-" else path
    handle = _open(path)
    try:
        stream = decompressed(handle)
        carry, want, first, cr_only = b"", size, True, False
        while True:
            buf = bytearray(len(carry) + want)
            buf[:len(carry)] = carry
            end = len(carry) + _read_into(stream, memoryview(buf)[len(carry):], name)
            more = end == len(buf)
            start = 0
            if first:
                start = 3 if buf[:3] == b"\xef\xbb\xbf" else 0
                cr_only = b"\r" in buf[start:end] and b"\n" not in buf[start:end]
            if cr_only:
                buf[start:end] = buf[start:end].replace(b"\r", b"\n")
            if first:
                start = _start(buf, start, end, name, more)
                first = start == end  # blank so far
                if first:
                    carry = b""
                    continue
            if end == start:
                return
            cut = buf.rfind(b"\n>", start, end) + 1 if more else end  # the last record may go on
            if cut <= start:  # one record fills the buffer: read on, in a buffer twice as large
                carry, want = bytes(buf[start:end]), 2 * max(want, end - start)
                continue
            yield memoryview(buf)[start:cut]
            if not more:
                return
            carry, want = bytes(buf[cut:end]), size
    finally:
        if path != "-":
            handle.close()


def _start(buf: bytearray, start: int, end: int, name: str, more: bool) -> int:
    """Where the first record starts in ``buf[start:end]`` (``end`` while only blank bytes came and
    ``more`` may come)."""
    text = bytes(buf[start:end])
    stripped = text.lstrip(b" \t\n\r\v\f")  # white space only: NUL bytes are binary data (/dev/zero)
    if not stripped:
        if more:
            return end
        raise NwalignError(f"{name}: empty file, no FASTA records")
    if stripped[:1] != b">":
        line = stripped.split(b"\n", 1)[0][:40].decode("ascii", "replace")
        if b"\x00" in stripped[:1 << 16]:
            raise NwalignError(f"{name}: binary data, not a FASTA file")
        raise NwalignError(f"{name}: not a FASTA file (first line {line!r} does not start with '>')")
    return end - len(stripped)


def _spans_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions of every byte of the spans [starts[k], starts[k] + lengths[k]), in order (int64)."""
    shift = np.zeros(starts.size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=shift[1:])
    return np.repeat(starts - shift, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


class Parsed:
    """One block's records (NumPy passes, which release the GIL: blocks are parsed on several threads).

    Attributes: ``residues`` (uint8 ASCII as in the file, either case), ``ids`` and ``descriptions``
    (the names' bytes, concatenated), ``id_len``, ``desc_len`` and ``seq_len`` (int64 per record),
    ``hashes`` (uint64 per id: equal ids, equal hashes), ``hist`` (int64 (256,) residue byte counts),
    ``bad`` (the first NUL or non-ASCII byte, -1: none).

    A blank header line's id is empty until :meth:`name_blank_ids`.
    """

    def __init__(self, block: bytes):
        buf = np.frombuffer(block, dtype=np.uint8)
        self.bad = -1
        if buf.max() >= 128 or not buf.all():
            self.bad = int(np.flatnonzero((buf >= 128) | (buf == 0))[0])
            return
        space = np.flatnonzero(buf <= 32)  # whitespace, newlines among it: one pass
        newlines = space[buf[space] == 10]
        line_starts = np.concatenate(([0], newlines + 1))
        line_starts = line_starts[line_starts < buf.size]
        starts = line_starts[buf[line_starts] == 62]  # header lines: their '>' ...
        ends = np.append(newlines, buf.size)[np.searchsorted(newlines, starts)]  # ... and newline
        names = _spans_index(starts + 1, ends - starts - 1)  # the header lines' bytes after '>'
        keep = buf > 32
        keep[starts] = False
        keep[names] = False
        self.residues = buf[keep]
        # residues of record k: the bytes from its header's newline to the next header, less whitespace
        nexts = np.append(starts[1:], buf.size)
        self.seq_len = (nexts - ends) - (np.searchsorted(space, nexts) - np.searchsorted(space, ends))
        self.hist = byte_counts(self.residues)
        self._names(buf[names], ends - starts - 1)

    def _names(self, text: np.ndarray, lengths: np.ndarray) -> None:
        """ids and descriptions of the header lines ``text`` (concatenated, ``lengths`` bytes each)."""
        bounds = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        found = _name_spans(text, bounds)
        if found is None:  # a blank line, or one that starts with a blank: named as Python has them
            lines = [text[a:b].tobytes() for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
            text_lines = [line.decode("ascii").rstrip() for line in lines]  # str's whitespace, not bytes'
            descs = [d.encode() for d in text_lines]
            ids = [d.split(None, 1)[0].encode() if d.strip() else b"" for d in text_lines]  # blank: name_blank_ids
            self.ids, self.descriptions = (np.frombuffer(b"".join(x), dtype=np.uint8) for x in (ids, descs))
            self.id_len = np.array([len(x) for x in ids], dtype=np.int64)
            self.desc_len = np.array([len(x) for x in descs], dtype=np.int64)
        else:
            id_ends, desc_ends = found
            self.id_len, self.desc_len = id_ends - bounds[:-1], desc_ends - bounds[:-1]
            self.ids = text[_spans_index(bounds[:-1], self.id_len)]
            self.descriptions = text[_spans_index(bounds[:-1], self.desc_len)]
        self.hashes = _hashes(self.ids, self.id_len)

    def name_blank_ids(self, first: int) -> None:
        """Ids of blank header lines as the Python path has them: ``record{k}`` (k from 1 over the
        file; ``first``: this block's first record's index)."""
        blank = np.flatnonzero(self.id_len == 0)
        if not blank.size:
            return
        ends = np.cumsum(self.id_len)
        pieces, at = [], 0
        for k in blank.tolist():
            pieces += [self.ids[at:ends[k]].tobytes(), f"record{first + k + 1}".encode()]
            self.id_len[k] = len(pieces[-1])
            at = int(ends[k])
        pieces.append(self.ids[at:].tobytes())
        self.ids = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        self.hashes = _hashes(self.ids, self.id_len)


def _name_spans(text: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Where each line's id and description end (int64 each) in ``text`` (lines from ``bounds[k]`` to
    ``bounds[k + 1]``, no newlines): the id at the line's first blank, the description after its last
    non-blank byte (Python's whitespace). None where a line is empty or starts with a blank."""
    starts, stops = bounds[:-1], bounds[1:]
    if np.any(stops == starts):
        return None
    blank = BLANK[text]
    if np.any(blank[starts]):
        return None
    positions = np.arange(text.size, dtype=np.int64)
    last = np.maximum.accumulate(np.where(blank, -1, positions))  # the last non-blank byte so far
    next_blank = np.where(blank, positions, text.size)
    first_blank = np.minimum.accumulate(next_blank[::-1])[::-1]
    return np.minimum(first_blank[starts], stops), last[stops - 1] + 1


def byte_counts(data: np.ndarray, piece: int = 1 << 18, each=None) -> np.ndarray:
    """How often each value occurs in a uint8 array (int64, shape (256,)). Counted two bytes at a time
    (a 65,536-bin count of the uint16 view, folded back): half the elements of a byte count, which
    converts every element to a 64-bit index; ``piece`` pairs at a time, so that memory stays small.
    ``each(size, count, piece)``: runs ``count(a, b)`` over the pieces and returns their results (a
    thread pool: :func:`nwalign.io.database.byte_counts`); by default one after the other (a parse thread
    starts no threads)."""
    even = data.size // 2 * 2
    pairs = np.ascontiguousarray(data[:even]).view(np.uint16)

    def count(a: int, b: int) -> np.ndarray:
        return np.bincount(pairs[a:b], minlength=65536)
    parts = each(pairs.size, count, piece) if each else [count(a, a + piece) for a in range(0, pairs.size, piece)]
    table = np.sum(parts + [np.zeros(65536, dtype=np.int64)], axis=0).reshape(256, 256)
    counts = table.sum(axis=0) + table.sum(axis=1)
    if data.size % 2:
        counts[data[-1]] += 1
    return counts


def _hashes(blob: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each of the strings of ``lengths`` bytes laid end to end in ``blob``
    (uint64; wraps mod 2**64): equal strings, equal hashes."""
    out = lengths.astype(np.uint64)  # an empty string's hash: 0
    some = np.flatnonzero(lengths)
    if not some.size:
        return out
    bounds = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    within = np.arange(blob.size, dtype=np.int64) - np.repeat(bounds[:-1], lengths)
    powers = np.cumprod(np.full(int(lengths.max()), 1099511628211, dtype=np.uint64))
    with np.errstate(over="ignore"):  # reduceat over the non-empty strings only (an empty one would take a byte)
        out[some] += np.add.reduceat((blob.astype(np.uint64) + 1) * powers[within], bounds[some])
    return out


def bad_byte_error(name: str, block: bytes, at: int) -> NwalignError:
    """The error for a NUL (binary) or non-ASCII byte at ``block[at]``."""
    if block[at] == 0:
        return NwalignError(f"{name}: binary data, not a FASTA file")
    return NwalignError(f"{name}: non-ASCII bytes, not a FASTA file")
