"""Sequence databases: residues of many sequences in one array plus offsets, read from FASTA or from a
``.nwdb`` file (written by ``nwalign makedb``: memory-mapped, pre-encoded, checksummed), and encoded once
for a scoring alphabet."""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from nwalign.background import in_background
from nwalign.errors import NwalignError
from nwalign.io.writing import written_atomically
from nwalign.io.mapped import BLOCK, RangeReader, Recoded, each_block
from nwalign.scoring.schemes import Scoring, make_scoring
from nwalign.io import fastastream
from nwalign.io import mapped
from nwalign.io.nwdb_names import NamesSection, names_section
from nwalign.io.sequences import NUCLEOTIDE_LETTERS, Record, in_blocks, as_records, kind_of, read_fasta_arrays

MAGIC = b"NWDB\x01\x00\x00\x00"    # .nwdb version 1: residues as ASCII letters
MAGIC2 = b"NWDB\x02\x00\x00\x00"   # version 2: residues as letter indices (the search engines' codes)


@dataclass
class Database:
    """A sequence database: offsets (int64, shape (count + 1,)), ids and descriptions, and the residues
    either as ``residues`` (uint8 ASCII upper case, shape (total,): FASTA and version-1 .nwdb files) or as
    ``codes`` (uint8, shape (total,)) indexing the string ``letters`` (version-2 .nwdb files, written in the
    order of the default scoring alphabet, so that a search with that alphabet uses them as they are).

    Made by :meth:`from_records` (Python objects), :func:`load_database` (FASTA or ``.nwdb``, memory-mapped)
    or :func:`nwalign.io.makedb.makedb` (``nwalign makedb``); :func:`nwalign.search` takes any of them.

    >>> db = Database.from_records(["MKTAYIAKQR", "GGGGS"], "db")
    >>> db.count, db.total_length, list(db.ids), db.offsets.tolist()
    (2, 15, ['seq1', 'seq2'], [0, 10, 15])
    >>> db.record(1).seq
    'GGGGS'
    """

    residues: np.ndarray | None
    offsets: np.ndarray
    ids: Sequence[str]  # a list, or (version-2 .nwdb) a read-only sequence parsed on first use
    descriptions: Sequence[str]
    source: str
    codes: np.ndarray | None = None
    letters: str | None = None
    #: How often each letter occurs (from a version-2 header; None: counted on demand).
    counts: dict[str, int] | None = None
    #: True when no two sequences share an id (from a version-2 header; None: not known).
    ids_unique: bool | None = None
    #: The residues' checksum test still running (``load_database(..., check_later=True)``); see :meth:`verify`.
    pending_check: Future | None = field(default=None, repr=False, compare=False)
    _readers: dict = field(default_factory=dict, repr=False, compare=False)  # codes_of's, by array

    def verify(self) -> None:
        """Wait for a checksum test left running by ``load_database(..., check_later=True)``.

        Raises:
            NwalignError: the CRC-32 of the residues or the names differs from the one written by makedb.
        """
        check, self.pending_check = self.pending_check, None
        if check is not None:
            try:
                check.result()
            except ValueError as exc:
                raise NwalignError(f"{self.source}: damaged .nwdb file ({exc}); rebuild it with 'nwalign makedb'") \
                    from None

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def find_letter(self, letter: str, block: int = 1 << 24) -> tuple[str | None, int | None]:
        """(record id, 1-based position) of ``letter``'s first occurrence, a block of residues at a time, or
        (None, None) where there is none."""
        if self.residues is not None:
            data, wanted = self.residues, ord(letter)
        elif letter in (self.letters or ""):
            data, wanted = self.codes, self.letters.index(letter)
        else:
            return None, None
        for a in range(0, self.total_length, block):
            hits = np.flatnonzero(np.asarray(data[a:a + block]) == wanted)
            if hits.size:
                at = a + int(hits[0])
                k = int(np.searchsorted(self.offsets, at, side="right")) - 1
                return self.ids[k], at - int(self.offsets[k]) + 1
        return None, None

    def longest(self, block: int = 1 << 20) -> int:
        """The longest sequence's length (0 for an empty database), a block of offsets at a time (60 M
        offsets' differences would be 480 MB)."""
        offsets, out = self.offsets, 0
        for a in range(0, len(offsets) - 1, block):
            out = max(out, int(np.diff(offsets[a:a + block + 1]).max()))
        return out

    @property
    def total_length(self) -> int:
        return int(self.offsets[-1])

    def _letter_bytes(self) -> np.ndarray:
        return np.frombuffer(self.letters.encode("ascii"), dtype=np.uint8)

    def ascii(self) -> np.ndarray:
        """All residues as uint8 ASCII letters (decoded from the codes of a version-2 file)."""
        if self.residues is not None:
            return np.asarray(self.residues)
        return _take_chunked(self._letter_bytes(), np.asarray(self.codes))

    def record(self, k: int) -> Record:
        """Sequence ``k`` (0-based, in file order) as a :class:`~nwalign.io.sequences.Record`."""
        raw = self.codes_of(k, self.residues) if self.residues is not None else \
            self._letter_bytes()[self.codes_of(k)]
        return Record(self.ids[k], self.descriptions[k], raw.tobytes().decode())

    def codes_of(self, k: int, codes=None) -> np.ndarray:
        """Sequence ``k``'s part of ``codes`` (default :attr:`codes`; or the codes a search encoded from
        them, uint8 shape (total,), or a :class:`nwalign.io.mapped.Recoded`) as a new uint8 array. A large
        memory-mapped array is read through its file (:func:`nwalign.io.mapped.reads_through_file`): touching
        the mapping at each hit made the page cache's large folios around it part of the resident set,
        about 50 MB a query of UniRef50's."""
        codes = self.codes if codes is None else codes
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        if not mapped.reads_through_file(codes):
            return np.array(codes[a:b], dtype=np.uint8)  # (a Recoded's slice is translated)
        kept = self._readers.get(id(codes))
        if kept is None or kept[0] is not codes:
            kept = self._readers[id(codes)] = (codes, RangeReader(codes))
        return kept[1].read(a, b, np.empty(b - a, dtype=np.uint8))

    def __len__(self) -> int:
        return self.count

    def letter_counts(self) -> np.ndarray:
        """How often each letter (byte) occurs in all residues (int64, shape (256,)), as
        :func:`nwalign.io.sequences.letter_counts` gives it for records."""
        if self.counts is not None:  # written by makedb: no pass over the residues
            out = np.zeros(256, dtype=np.int64)
            for letter, n in self.counts.items():
                out[ord(letter)] = n
            return out
        counts = byte_counts(np.asarray(self.residues if self.residues is not None else self.codes))
        if self.residues is not None:
            return counts
        out = np.zeros(256, dtype=np.int64)
        np.add.at(out, self._letter_bytes(), counts[:len(self.letters)])
        return out

    @classmethod
    def from_records(cls, records, source: str = "<records>") -> "Database":
        """A database of :class:`~nwalign.io.sequences.Record` objects (or anything
        :func:`nwalign.io.sequences.as_records` takes), in their order."""
        return database_from_records(as_records(records), source)

    @classmethod
    def from_fasta(cls, path: str) -> "Database":
        """A FASTA file (plain or compressed), read straight into arrays."""
        return database_from_fasta(path)

    @classmethod
    def load(cls, path: str) -> "Database":
        """A ``.nwdb`` (checked, memory-mapped) or a FASTA file: :func:`load_database`."""
        return load_database(path)

    def save(self, path: str) -> None:
        """Write a version-2 ``.nwdb``: :func:`write_database`."""
        write_database(self, path)

    def alphabet_counts(self, sample: int = 1 << 24) -> np.ndarray:
        """Letter counts that decide the alphabet as :func:`nwalign.io.sequences.kind_of` does (int64, shape
        (256,)): those of the first ``sample`` residues when they already hold a letter that is no nucleotide
        code (the database is then protein whatever the rest holds; a 205 Mb FASTA file needs no count of
        every residue, ~0.4 s), else :meth:`letter_counts`."""
        if self.counts is None and self.residues is not None and self.total_length > sample:
            counts = byte_counts(np.asarray(self.residues[:sample]))
            if any(chr(c) not in NUCLEOTIDE_LETTERS for c in np.flatnonzero(counts)):
                return counts
        return self.letter_counts()

    def encode(self, scoring: Scoring) -> np.ndarray:
        """All residues as ``scoring``'s codes: :func:`encode_database`."""
        return encode_database(self, scoring)


def byte_counts(data: np.ndarray) -> np.ndarray:
    """How often each value occurs in a uint8 array (int64, shape (256,)): :func:`nwalign.io.fastastream.byte_counts`
    in pieces of 4 M pairs on up to 8 threads."""
    return fastastream.byte_counts(data, 1 << 22, in_blocks)


def _take_chunked(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """table[index] for a uint8 index array, in cache-sized chunks (NumPy indexes through an intp copy of
    the index array, 8 bytes per element), on up to 8 threads (205 Mb: 0.45 -> 0.25 s on two cores)."""
    out = np.empty(index.size, dtype=table.dtype)
    in_blocks(index.size, lambda a, b: np.take(table, index[a:b], out=out[a:b]), 1 << 18)
    return out


def database_from_records(records: list[Record], source: str) -> Database:
    lengths = np.array([len(r.seq) for r in records], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    residues = np.frombuffer("".join(r.seq for r in records).encode("ascii"), dtype=np.uint8)
    return Database(residues, offsets, [r.id for r in records], [r.description for r in records], source)


def database_from_fasta(path: str) -> Database:
    """A FASTA file read straight into arrays (:func:`nwalign.io.sequences.read_fasta_arrays`)."""
    ids, descriptions, residues, offsets = read_fasta_arrays(path)
    return Database(residues, offsets, ids, descriptions, path)


def database_letters(counts: np.ndarray) -> str:
    """The letter order of a version-2 file, from the letter counts (:meth:`Database.letter_counts`): the
    default scoring alphabet of the letters' kind (DNA, RNA or protein, as ``--alphabet auto`` decides),
    then any other letters present, sorted."""
    present = "".join(chr(c) for c in np.flatnonzero(counts))
    alphabet = make_scoring(kind_of(counts), "local").alphabet
    return alphabet + "".join(c for c in present if c not in alphabet)


def write_database(db: Database, path: str, version: int = 2) -> None:
    """Write a database as a .nwdb file through a unique temporary file and an atomic rename.

    Version 2 layout: magic (8 bytes), header length (uint64), JSON header (count, total, letters, the
    count of each letter, whether the ids are distinct, the byte length and format of the names section,
    CRC-32 of the names, offsets and residues sections and of the header's own fields), padding to 8 bytes; the names section, padding;
    offsets (int64, count + 1); residues (uint8 indices into ``letters``, total). The names section
    (header ``names_format``) is ``indexed``: where each id and then each description starts (int64, 2 *
    count + 1, the last one the end), then the names in UTF-8, so that one name is read without parsing the
    others; or ``json`` (an object with lists ``ids`` and ``descriptions``; files written before
    ``names_format`` existed). Version 1 (still read): JSON header with count, total, ids and descriptions,
    then offsets and ASCII residues, no checksums.

    Raises:
        NwalignError: the file cannot be written (the temporary file is removed).
    """
    offsets = np.ascontiguousarray(db.offsets, dtype=np.int64)
    if version == 2:
        names = names_section(list(db.ids), list(db.descriptions))
        _write_v2(db.ascii(), offsets, names, len(set(db.ids)) == db.count, path, db.letter_counts())
        return
    fields = {"count": db.count, "total": db.total_length, "ids": list(db.ids), "descriptions": list(db.descriptions)}
    header = json.dumps(fields).encode()
    _write_file(MAGIC, header + b" " * (-(len(MAGIC) + 8 + len(header)) % 8), b"", offsets, db.ascii(), path)


def _write_v2(ascii_: np.ndarray, offsets: np.ndarray, names: bytes, ids_unique: bool, path: str,
              present: np.ndarray | None = None) -> None:
    """A version-2 file from the residues (ASCII), offsets and the names section (see :func:`write_database`)."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    present = byte_counts(ascii_) if present is None else present
    letters = database_letters(present)
    lut = np.zeros(256, dtype=np.uint8)
    lut[np.frombuffer(letters.encode("ascii"), dtype=np.uint8)] = np.arange(len(letters), dtype=np.uint8)
    body = _take_chunked(lut, ascii_)
    fields = {"count": int(offsets.size - 1), "total": int(offsets[-1]), "letters": letters,
              "names_bytes": len(names), "names_format": "indexed",
              "counts": {chr(c): int(present[c]) for c in np.flatnonzero(present)}, "ids_unique": bool(ids_unique),
              "checked_header": True, "crc32": {"names": zlib.crc32(names), "offsets": zlib.crc32(offsets),
                        "residues": zlib.crc32(memoryview(np.ascontiguousarray(body)))}}
    fields["crc32"]["header"] = header_crc(fields)
    _write_file(MAGIC2, v2_header(fields), names, offsets, body, path)


def v2_header(fields: dict) -> bytes:
    """A version-2 header's JSON, padded with spaces to the length it has with every CRC-32 at its widest
    (so that a writer may reserve its room before the checksums are known, :mod:`nwalign.io.makedb`), then
    to 8 bytes past the magic and the length field."""
    widest = dict(fields, crc32={k: 0xFFFFFFFF for k in fields["crc32"]})
    header = json.dumps(fields).encode()
    header += b" " * (len(json.dumps(widest).encode()) - len(header))
    return header + b" " * (-(len(MAGIC2) + 8 + len(header)) % 8)


def _write_file(magic: bytes, header: bytes, names: bytes, offsets: np.ndarray, body: np.ndarray, path: str) -> None:
    """The file through a unique temporary file and an atomic rename (:func:`written_atomically`)."""
    def write(out):
        out.write(magic + np.uint64(len(header)).tobytes() + header + names)
        out.write(offsets.tobytes())
        out.write(np.ascontiguousarray(body).tobytes())

    written_atomically(path, write)


def load_database(path: str, check_later: bool = False, written_here: bool = False) -> Database:
    """A FASTA file (plain/gz/bz2/xz, '-') or a .nwdb (memory-mapped), recognised by its first bytes.

    A .nwdb is checked before use: version 2's CRC-32 of every section, and for both versions offsets
    that start at 0, rise and end at the residue count, and one id per sequence. ``check_later``: the
    residues' CRC-32 (a pass over the whole file) runs in a background thread while the caller goes on;
    the caller must call :meth:`Database.verify` before it reports anything (every other test is done).
    ``written_here``: the file was just written by this process (makedb): its residues are not re-read.

    Raises:
        NwalignError: unreadable, empty, a .nwdb of another version, or a damaged .nwdb.
    """
    if path != "-" and os.path.isfile(path):
        with open(path, "rb") as handle:
            head = handle.read(16)
        if head[:4] == MAGIC[:4]:
            if head[:8] not in (MAGIC, MAGIC2):
                raise NwalignError(f"{path}: .nwdb version {head[4]} (this nwalign reads versions 1 and 2); "
                                   "rebuild it with 'nwalign makedb'")
            try:
                return _open_nwdb(path, head, check_later, written_here)
            except (ValueError, KeyError, OSError, TypeError, IndexError, AttributeError) as exc:
                raise NwalignError(f"{path}: damaged .nwdb file ({exc}); rebuild it with 'nwalign makedb'") from None
    return database_from_fasta(path)


def _open_nwdb(path: str, head: bytes, check_later: bool = False, written_here: bool = False) -> Database:
    size = int(np.frombuffer(head[8:16], dtype=np.uint64)[0])
    if size > os.path.getsize(path):
        raise ValueError("header longer than the file")
    with open(path, "rb") as handle:
        handle.seek(16)
        header = json.loads(handle.read(size))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    count, total, names_bytes = int(header["count"]), int(header["total"]), int(header.get("names_bytes", 0))
    start = 16 + size + names_bytes
    if names_bytes < 0 or os.path.getsize(path) != start + 8 * (count + 1) + total:
        raise ValueError("file size does not match its header")
    # Memory-mapped, not read: the names of 60 million sequences are gigabytes, and a search decodes only
    # its hits' (dbnames.NamesSection); the pages it touches are page cache.
    names_raw = np.memmap(path, dtype=np.uint8, mode="r", offset=16 + size, shape=(names_bytes,)) \
        if names_bytes else b""
    offsets = np.asarray(np.memmap(path, dtype=np.int64, mode="r", offset=start, shape=(count + 1,)))
    body = np.memmap(path, dtype=np.uint8, mode="r", offset=start + 8 * (count + 1), shape=(total,))
    pending = None
    if head[:8] == MAGIC2:
        crc = header["crc32"]
        # Files written before 0.2 have no header checksum; every later one says it has one
        # (checked_header), so that the checksum cannot simply be deleted.
        if "header" not in crc and header.get("checked_header") is not None:
            raise ValueError("the header's checksum is missing")
        if "header" in crc and header_crc(header) != crc["header"]:
            raise ValueError("checksum of the header differs")
        sections = [("names", names_raw), ("offsets", offsets), ("residues", body)]
        if check_later and not written_here:  # names and residues checked while the search starts
            later = sections[::2]
            pending = in_background(lambda: _check_crc(later, crc))
            sections = sections[1:2]
        elif written_here:
            sections = sections[:2]
        _check_crc(sections, crc)
        names = NamesSection(names_raw, count, path, header.get("names_format", "json"))  # read when first used
        ids, descriptions = names.ids, names.descriptions
        if total and not written_here and _max_code(body) >= len(header["letters"]):
            raise ValueError("residue codes outside the letters")
    else:
        ids, descriptions = header["ids"], header["descriptions"]
    if offsets[0] != 0 or offsets[-1] != total or not _rising(offsets):
        raise ValueError("sequence offsets do not rise from 0 to the residue count")
    if len(ids) != count or len(descriptions) != count:
        raise ValueError(f"{len(ids)} ids for {count} sequences")
    if head[:8] == MAGIC:
        return Database(body, offsets, ids, descriptions, path)
    counts = header.get("counts")  # files written before it existed are counted on demand
    if counts is not None and sum(counts.values()) != total:
        raise ValueError("letter counts do not add up to the residue count")
    return Database(None, offsets, ids, descriptions, path, body, header["letters"], counts,
                    header.get("ids_unique"), pending)


def _rising(offsets: np.ndarray, block: int = 1 << 20) -> bool:
    """Whether ``offsets`` rise strictly; a block at a time (the differences of 60 M offsets are 480 MB)."""
    return not any(np.any(np.diff(offsets[a:a + block + 1]) < 1) for a in range(0, len(offsets) - 1, block))


def header_crc(fields: dict) -> int:
    """CRC-32 of a version-2 header's fields (its own checksum left out), in one canonical JSON form: an
    edited letter order or ``ids_unique`` gave wrong hits without a word before it was checked."""
    crc = {k: v for k, v in fields["crc32"].items() if k != "header"}
    canonical = json.dumps(dict(fields, crc32=crc), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return zlib.crc32(canonical.encode())


def _check_crc(sections, crc: dict) -> None:
    for section, data in sections:
        if crc32_of(data) != crc[section]:
            raise ValueError(f"checksum of the {section} section differs")


def crc32_function():
    """CRC-32 of bytes, continuing a running value: ISA-L's where python-isal is installed (several
    times zlib's speed), else zlib's; the same values."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.crc32
    return isal_zlib.crc32


def crc32_of(data) -> int:
    """CRC-32 of bytes or of a uint8 array (a memory map read from its file a block at a time,
    :func:`nwalign.io.mapped.each_block`: a database's pages do not join this process's memory)."""
    checksum = crc32_function()
    if not isinstance(data, np.ndarray):
        return checksum(data)
    running = [0]
    each_block(data.reshape(-1).view(np.uint8), lambda piece: running.__setitem__(0, checksum(piece, running[0])))
    return running[0]


def _max_code(body: np.ndarray) -> int:
    """The largest byte of a .nwdb's residues (read from the file on up to 8 threads)."""
    return max(each_block(body, lambda piece: int(piece.max()), min(8, os.cpu_count() or 1)))


#: A .nwdb of more residues than this whose letters are not the scoring's alphabet is encoded where read
#: (:class:`nwalign.io.mapped.Recoded`), not copied whole.
RECODED_FROM = 1 << 28


def encode_database(db: Database, scoring: Scoring):
    """All residues as the scoring's codes (uint8, shape (total,)), either case; a bad letter is reported
    with its record and position. A version-2 .nwdb written in the scoring's alphabet order is used as it
    is (memory-mapped, no copy); one of more than :data:`RECODED_FROM` residues in another order (letters
    beyond the alphabet, such as UniProt's U and O) as a :class:`nwalign.io.mapped.Recoded` over its codes.

    Raises:
        NwalignError: a letter outside the scoring alphabet.
    """
    if db.codes is not None:
        if db.letters == scoring.alphabet:
            return np.asarray(db.codes)
        lut = np.full(256, 255, dtype=np.uint8)
        letters = db._letter_bytes()
        lut[:letters.size] = scoring.encode_bytes(letters)
        if db.total_length > RECODED_FROM and not _bad_letter(db, lut):
            return Recoded(db.codes, lut)  # translated where read: no copy of every residue
        source = db.codes
    else:
        lut = scoring.encode_bytes(np.arange(256, dtype=np.uint8))
        lower = np.arange(ord("a"), ord("z") + 1)
        lut[lower] = lut[lower - 32]  # lower case reads as upper case
        source = db.residues
    codes = Recoded(source, lut) if db.total_length > RECODED_FROM else _take_chunked(lut, np.asarray(source))
    pos = _first_unscored(codes)
    if pos >= 0:
        k = int(np.searchsorted(db.offsets, pos, side="right") - 1)
        letter = chr(db.residues[pos]) if db.residues is not None else db.letters[int(db.codes[pos])]
        raise NwalignError(f"{db.source}: record {db.ids[k]}: letter {letter!r} at position "
                           f"{pos - int(db.offsets[k]) + 1} is not in the alphabet of {scoring.matrix_name}")
    return codes


def _bad_letter(db: Database, lut: np.ndarray) -> bool:
    """Whether a version-2 database holds a letter ``lut`` cannot score (from its letter counts)."""
    counts = db.letter_counts()
    present = [db.letters.index(chr(c)) for c in np.flatnonzero(counts) if chr(c) in db.letters]
    return any(lut[code] == 255 for code in present)


def _first_unscored(codes) -> int:
    """Where the first code 255 (a letter outside the alphabet) is, -1: none (a pass in blocks)."""
    if isinstance(codes, np.ndarray):
        return int(np.argmax(codes == 255)) if codes.size and int(codes.max()) == 255 else -1
    hits = each_block(codes, lambda piece: int(np.argmax(piece == 255)) if int(piece.max()) == 255 else -1)
    found = [k for k, at in enumerate(hits) if at >= 0]
    return found[0] * BLOCK + hits[found[0]] if found else -1
