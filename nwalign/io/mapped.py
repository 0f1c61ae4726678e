"""Reading a memory-mapped array (a ``.nwdb``'s residues) through its file: ``os.preadv`` into the
caller's buffer instead of touching the mapping, so that a pass over a database of many gigabytes does not
make its pages part of this process's resident set (they stay in the page cache, shared), and runs
without a page fault per 4 KiB. Arrays that are no memory map are copied as they are."""

from __future__ import annotations

import mmap
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

BLOCK = 1 << 24  # bytes per read of a pass over an array
# Arrays up to this size are read piecemeal (a hit's residues or names) through their map: what they add to
# the resident set is bounded by their size, and a read of the file costs a system call.
PIECES_THROUGH_MAP = 64 << 20


def file_span(array: np.ndarray) -> tuple[str, int] | None:
    """(path, byte offset in the file) of element 0 of ``array`` where it is a contiguous view of a
    ``numpy.memmap`` (any slice of one, or a plain ndarray over one), else None."""
    mapped = array
    while isinstance(mapped, np.ndarray) and not isinstance(mapped, np.memmap):
        mapped = mapped.base  # (a view's base; an ndarray over bytes ends at the bytes)
    if not isinstance(mapped, np.memmap) or getattr(mapped, "filename", None) is None or not array.flags.c_contiguous:
        return None
    mm = getattr(mapped, "_mmap", None)
    if not isinstance(mm, mmap.mmap):
        return None
    base = np.frombuffer(mm, dtype=np.uint8).ctypes.data  # where the mapping starts in memory
    first = mapped.offset - mapped.offset % mmap.ALLOCATIONGRANULARITY  # and in the file
    return os.fspath(mapped.filename), array.ctypes.data - base + first


class RangeReader:
    """``read(lo, hi, out)``: ``array[lo:hi]`` into ``out[:hi - lo]`` (uint8 arrays, or a :class:`Recoded`:
    translated), from the file where ``array`` is memory-mapped (:func:`file_span`), else by a copy. Thread-safe (positioned reads);
    close it (or use it as a context manager) to close the file."""

    def __init__(self, array):
        self.table = array.table if isinstance(array, Recoded) else None
        self.array = array.base if isinstance(array, Recoded) else array
        if not isinstance(self.array, np.ndarray):  # bytes
            self.array = np.frombuffer(self.array, dtype=np.uint8)
        span = file_span(self.array)
        self.fd, self.at = (os.open(span[0], os.O_RDONLY), span[1]) if span else (None, 0)

    def read(self, lo: int, hi: int, out: np.ndarray) -> np.ndarray:
        """``out[:hi - lo]``, filled (``out`` must be C-contiguous uint8)."""
        view = out[:hi - lo]
        if self.fd is None:
            np.copyto(view, self.array[lo:hi])
        else:
            buf, pos = memoryview(view).cast("B"), self.at + lo
            while buf:
                done = os.preadv(self.fd, [buf], pos)
                if done <= 0:
                    raise OSError(f"the file ended {hi - lo - len(buf)} bytes into a read of {hi - lo}")
                buf, pos = buf[done:], pos + done
        if self.table is not None:
            translate(self.table, view)
        return view

    def close(self) -> None:
        if getattr(self, "fd", None) is not None:  # (None too where __init__ failed)
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:  # a reader kept by a database (its names) closes with it
        self.close()

    def __reduce__(self):  # another process opens the file itself (a descriptor means nothing there)
        return RangeReader, (self.array if self.table is None else Recoded(self.array, self.table),)

    def __enter__(self) -> "RangeReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def reads_through_file(array) -> bool:
    """Whether pieces of ``array`` (uint8, or a :class:`Recoded`) are best read through its file
    (:class:`RangeReader`): it is memory-mapped and over :data:`PIECES_THROUGH_MAP` bytes."""
    base = array.base if isinstance(array, Recoded) else array
    return isinstance(base, np.ndarray) and base.nbytes > PIECES_THROUGH_MAP and file_span(base) is not None


def copy_of(array, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """A new array (uint8) holding ``array[lo:hi]``, read as :class:`RangeReader` does."""
    hi = array.size if hi is None else hi
    out = np.empty(hi - lo, dtype=np.uint8)
    with RangeReader(array) as reader:
        reader.read(lo, hi, out)
    return out


def each_block(array, fn, threads: int = 1, block: int = BLOCK) -> list:
    """``fn(piece)`` of each consecutive piece of ``array`` (uint8; ``block`` bytes, the last shorter),
    read as :class:`RangeReader` does into a buffer of each thread; the results in order. With one
    thread the pieces come in order (a running checksum may be taken)."""
    size = array.size
    starts = range(0, size, block)
    with RangeReader(array) as reader:
        if threads <= 1 or len(starts) <= 1:
            buf = np.empty(min(block, size), dtype=np.uint8)
            return [fn(reader.read(a, min(a + block, size), buf)) for a in starts]
        import threading

        local = threading.local()

        def one(a: int):
            if not hasattr(local, "buf"):
                local.buf = np.empty(block, dtype=np.uint8)
            return fn(reader.read(a, min(a + block, size), local.buf))

        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(one, starts))


class Recoded:
    """A uint8 array seen through a 256-byte table, ``table[base]``, translated a piece at a time where it
    is read: by :class:`RangeReader` and :func:`copy_of` (from ``base``'s file where it is memory-mapped),
    and by indexing (a slice is a new array of the translated bytes). ``numpy.asarray`` gives the whole
    translation. A ``.nwdb`` whose letters extend the scoring's alphabet (UniProt's U and O, scored as X)
    is searched through one, instead of a translated copy of all its residues (17 GB for UniRef50).

    Arguments:
        base: uint8 array (a memory map is fine).
        table: uint8 (256,) code of each byte value.
    """

    dtype = np.dtype(np.uint8)
    ndim = 1

    def __init__(self, base: np.ndarray, table: np.ndarray):
        self.base, self.table = base, np.asarray(table, dtype=np.uint8)

    @property
    def size(self) -> int:
        return int(self.base.size)

    @property
    def shape(self) -> tuple[int]:
        return (self.size,)

    @property
    def nbytes(self) -> int:
        return self.size

    def __len__(self) -> int:
        return self.size

    def window(self, lo: int, hi: int) -> "Recoded":
        """Elements ``lo:hi``, still translated only where read."""
        return Recoded(self.base[lo:hi], self.table)

    def __getitem__(self, key):
        return self.table[self.base[key]]

    def __array__(self, dtype=None, copy=None):
        out = copy_of(self)
        return out if dtype is None else out.astype(dtype, copy=False)


def window(array, lo: int, hi: int):
    """``array[lo:hi]``, as a view (a :class:`Recoded` stays untranslated until read)."""
    return array.window(lo, hi) if isinstance(array, Recoded) else array[lo:hi]


def translate(table: np.ndarray, data: np.ndarray, out: np.ndarray | None = None) -> None:
    """``out[:] = table[data]`` (uint8; ``out`` defaults to ``data``: in place), a megabyte at a time
    (NumPy indexes through an intp copy of the index: 8 bytes an element)."""
    out = data if out is None else out
    step = 1 << 20
    for a in range(0, data.size, step):
        np.take(table, data[a:a + step], out=out[a:a + step])  # NumPy copies where out overlaps the index
