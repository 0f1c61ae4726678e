"""The names of a .nwdb database: the ``indexed`` names section (where each id and description starts,
then the names in UTF-8) made from Python strings (nwalign.io.makedb makes it from FASTA blocks), and read back
lazily, one name at a time."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from nwalign.errors import NwalignError
from nwalign.io import mapped
from nwalign.io.mapped import RangeReader


def names_section(ids: list[str], descriptions: list[str]) -> bytes:
    """A version-2 names section of format ``indexed``, padded to 8 bytes."""
    text = [name.encode() for name in ids + descriptions]
    starts = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in text], out=starts[1:])
    names = starts.tobytes() + b"".join(text)
    return names + b" " * (-len(names) % 8)


class NamesSection:
    """The ids and descriptions of a version-2 .nwdb, read when first used. An ``indexed`` section starts
    with where each name starts, so a search that reports 200 hits decodes 200 names and parses nothing
    else; a ``json`` section (files written by nwalign 0.1 before 2026-11-23) is parsed whole (570,000 names: ~0.07-0.09 s
    holding the GIL, which a GPU search spent while its first hits waited). Thread-safe; :attr:`ids` and
    :attr:`descriptions` are read-only sequences of ``count`` strings.

    Raises (on first use):
        NwalignError: the section does not hold ``count`` ids and descriptions, or a name is not UTF-8.
    """

    def __init__(self, raw: bytes, count: int, source: str, kind: str = "json"):
        import threading

        if kind not in ("json", "indexed"):
            raise ValueError(f"unknown names format {kind!r}")
        self._raw, self._count, self._source, self._kind = raw, count, source, kind
        self._lists = None  # json: the two lists
        self._starts = None  # indexed: where each of the 2 * count names starts in self._text, and the end
        self._lock = threading.Lock()
        # A mapped section is read one name at a time through its file: touching the mapping made the
        # page cache's large folios around each hit's name part of the resident set (megabytes a hit).
        self._reader = RangeReader(raw) if kind == "indexed" and mapped.reads_through_file(raw) else None
        self.ids, self.descriptions = _LazyList(self, 0), _LazyList(self, 1)

    def _damaged(self, why) -> NwalignError:
        return NwalignError(f"{self._source}: damaged .nwdb file ({why}); rebuild it with 'nwalign makedb'")

    def _index(self) -> None:
        with self._lock:
            if self._kind == "json" and self._lists is None:
                try:
                    names = json.loads(bytes(self._raw))
                    lists = names["ids"], names["descriptions"]
                    if any(not isinstance(x, list) or len(x) != self._count for x in lists):
                        raise ValueError(f"names for {self._count} sequences expected")
                except (ValueError, KeyError, TypeError) as exc:
                    raise self._damaged(exc) from None
                self._lists, self._raw = lists, None
            elif self._kind == "indexed" and self._starts is None:
                size = 8 * (2 * self._count + 1)
                starts = np.frombuffer(self._raw, dtype=np.int64, count=min(len(self._raw), size) // 8)
                text = memoryview(self._raw)[size:]
                if (len(starts) != 2 * self._count + 1 or starts[0] != 0 or starts[-1] > len(text)
                        or bytes(text[starts[-1]:]).strip(b" ")):
                    raise self._damaged(f"names for {self._count} sequences expected")
                self._starts, self._text = starts, text  # that they rise is checked where they are read

    def get(self, which: int, k: int) -> str:
        self._index()
        if self._lists is not None:
            return self._lists[which][k]
        if not -self._count <= k < self._count:
            raise IndexError("sequence index out of range")
        at = which * self._count + k % self._count
        if self._reader is None:
            start, stop = int(self._starts[at]), int(self._starts[at + 1])
        else:
            start, stop = (int(x) for x in self._read(8 * at, 16).view(np.int64))
        if start > stop or stop > len(self._text):
            raise self._damaged(f"names for {self._count} sequences expected")
        if self._reader is None:
            return self._decode(start, stop)
        return self._decode_bytes(self._read(8 * (2 * self._count + 1) + start, stop - start).tobytes())

    def _read(self, at: int, size: int) -> np.ndarray:
        return self._reader.read(at, at + size, np.empty(size, dtype=np.uint8))

    def all(self, which: int) -> list[str]:
        self._index()
        if self._lists is not None:
            return self._lists[which]
        starts = self._starts[which * self._count:(which + 1) * self._count + 1]
        if np.any(np.diff(starts) < 0):
            raise self._damaged(f"names for {self._count} sequences expected")
        starts = starts.tolist()
        block = bytes(self._text[starts[0]:starts[-1]])
        if block.isascii():  # byte offsets are character offsets: one decode
            text, first = block.decode("ascii"), starts[0]
            return [text[a - first:b - first] for a, b in zip(starts[:-1], starts[1:])]
        return [self._decode(a, b) for a, b in zip(starts[:-1], starts[1:])]

    def _decode(self, start: int, stop: int) -> str:
        return self._decode_bytes(self._text[start:stop])

    def _decode_bytes(self, raw) -> str:
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise self._damaged(exc) from None


class _LazyList(Sequence):
    """One of :class:`NamesSection`' lists, read on first use."""

    def __init__(self, names: NamesSection, which: int):
        self._names, self._which = names, which

    def __len__(self) -> int:
        return self._names._count

    def __getitem__(self, k):
        if isinstance(k, slice):
            return self._names.all(self._which)[k]
        return self._names.get(self._which, int(k))

    def __iter__(self):
        return iter(self._names.all(self._which))

    def __eq__(self, other):
        return list(self) == list(other)
