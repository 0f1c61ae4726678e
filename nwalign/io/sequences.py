"""Read, check and encode sequences: FASTA (plain, gzip, bzip2, xz, stdin) and seeded random input.

Reading goes through Bio.SeqIO; compression is detected from the magic bytes, not the file name.
"""

from __future__ import annotations

import bz2
import lzma
import os
import stat
import zlib
from dataclasses import dataclass

import numpy as np

from nwalign import names
from nwalign.errors import NwalignError
from nwalign.io.fastastream import OPENING, compressed_error, opening_error, standard_input

#: Nucleotide letters accepted: ACGT/U and the IUPAC ambiguity codes.
NUCLEOTIDE_LETTERS = "ACGTURYSWKMBDHVN"
ALPHABETS = names.ALPHABETS


@dataclass(frozen=True)
class Record:
    """One sequence: ``id`` is the first word of the FASTA header, ``seq`` upper-case letters."""

    id: str
    description: str
    seq: str

    def __len__(self) -> int:
        return len(self.seq)


def _read_bytes(path: str) -> bytes | bytearray:
    """The file's bytes; a regular file's in a bytearray read in place (no second copy, and writable: the
    FASTA reader compacts the residues into it)."""
    if path == "-":
        return standard_input().read()
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return handle.read()
            data = bytearray(info.st_size)
            got = handle.readinto(data)
            del data[got:]
            data += handle.read()  # a file that grew since fstat
            return data
    except OPENING as exc:
        raise opening_error(path, exc) from None


def residues_bound(path: str) -> int | None:
    """An upper estimate of the residues in a sequence file (FASTA or .nwdb) from its size, before it is
    read: the size itself; for a gzip file the uncompressed size it records (of its last member, modulo
    2^32), or 4 x the size where that is smaller than the file (several members, as bgzip writes); bzip2
    and xz: 8 x the size. None for standard input or a file that cannot be examined. For choices that
    only cost time when wrong (whether ``--devices auto`` spreads a search), never for a result."""
    if path == "-":
        return None
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            magic = handle.read(6)
            if magic[:2] == b"\x1f\x8b" and size >= 18:  # gzip's last 4 bytes: the size mod 2^32
                handle.seek(size - 4)
                recorded = int.from_bytes(handle.read(4), "little")
                return recorded if recorded >= size else 4 * size
    except OSError:
        return None
    if magic[:3] == b"BZh" or magic == b"\xfd7zXZ\x00":
        return 8 * size
    return size


#: A record may span this many bytes per residue it is allowed (line ends, CRLF, short lines, spaces).
_BYTES_PER_RESIDUE = 3


def _decompress(data: bytes, name: str, max_length: int | None = None) -> bytes:
    """Undo gzip/bzip2/xz compression recognised by magic bytes (a truncated stream is an error), then drop
    a UTF-8 byte-order mark and turn old Mac (CR-only) line endings into newlines.

    ``max_length``: the most residues a record may have. The stream is decompressed in pieces and given
    up as soon as one record spans more than ``3 x max_length`` bytes, so that a small file that expands
    to an unusable sequence is refused before it fills the memory; the exact length is checked later.
    """
    limit = None if max_length is None else _BYTES_PER_RESIDUE * max_length + (1 << 20)
    try:
        if data[:2] == b"\x1f\x8b":
            data = _inflate(data, _gzip_engine, name, limit)
        elif data[:3] == b"BZh":
            data = _inflate(data, bz2.BZ2Decompressor, name, limit)
        elif data[:6] == b"\xfd7zXZ\x00":
            data = _inflate(data, lzma.LZMADecompressor, name, limit)
        elif limit is not None and len(data):
            _check_spans(np.frombuffer(data, dtype=np.uint8), 0, True, name, limit)
    except Exception as exc:
        error = compressed_error(name, exc)
        if error is None:
            raise
        raise error from None
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    if b"\r" in data and b"\n" not in data:
        data = data.replace(b"\r", b"\n")
    return data


def _gzip_engine():
    """A gzip decompressor: ISA-L's (python-isal: 214 MB in 0.78 s against zlib's 1.89 s on the 2-core
    machine) where it is installed, else zlib's; both give the same bytes."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.decompressobj(31)
    return isal_zlib.decompressobj(31)


def _inflate(data: bytes, make, name: str, limit: int | None) -> bytes:
    """Decompress every member of ``data`` (concatenated gzip, bzip2 or xz streams); with ``limit``, in
    16 MB pieces, checking record spans as they come (:func:`_check_spans`)."""
    out = bytearray()
    span, line_start = 0, True  # bytes of the current record so far; whether the next byte starts a line
    rest = data
    while rest:
        engine = make()
        feed = rest
        while not engine.eof:
            # In pieces only where records are checked as they come; whole, a stream inflates ~2x faster.
            piece = engine.decompress(feed, 1 << 24) if limit is not None else engine.decompress(feed)
            feed = getattr(engine, "unconsumed_tail", b"")  # zlib keeps unread input there, bz2/lzma inside
            if piece:
                if limit is not None:
                    span = _check_spans(np.frombuffer(piece, dtype=np.uint8), span, line_start, name, limit)
                    line_start = piece[-1:] == b"\n"
                out += piece
            elif not feed and getattr(engine, "needs_input", True):
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
        rest = engine.unused_data
        if not rest.strip(b"\x00"):
            break  # nothing or padding after the last member
    return out


def _check_spans(buf: np.ndarray, span: int, line_start: bool, name: str, limit: int) -> int:
    """Check the records in ``buf``, a piece of FASTA whose first bytes continue a record of ``span``
    bytes (``line_start``: the piece begins a line); return the bytes of its last record so far.

    Raises:
        NwalignError: a record spans more than ``limit`` bytes.
    """
    prev = np.empty(buf.size, dtype=np.uint8)
    prev[0] = 10 if line_start else 0
    prev[1:] = buf[:-1]
    starts = np.flatnonzero((buf == ord(">")) & (prev == 10))  # a '>' that starts a line: a header
    if starts.size:
        longest = max(span + int(starts[0]), int(np.diff(starts).max()) if starts.size > 1 else 0,
                      buf.size - int(starts[-1]))
        last = buf.size - int(starts[-1])
    else:
        longest = last = span + buf.size
    if longest > limit:
        raise NwalignError(f"{name}: a record is longer than {(limit - (1 << 20)) // _BYTES_PER_RESIDUE:,} residues, "
                           "the most these scores allow (refused while reading)")
    return last


def _fasta_text(data: bytes, name: str) -> str:
    """The file's text from its first non-blank character, checked to be ASCII FASTA."""
    if b"\x00" in data:
        raise NwalignError(f"{name}: binary data, not a FASTA file")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise NwalignError(f"{name}: non-ASCII bytes, not a FASTA file") from None
    stripped = text.lstrip()
    if not stripped:
        raise NwalignError(f"{name}: empty file, no FASTA records")
    if not stripped.startswith(">"):
        first = stripped.splitlines()[0][:40]
        raise NwalignError(f"{name}: not a FASTA file (first line {first!r} does not start with '>')")
    return stripped


_CHUNK = 1 << 21  # bytes of a FASTA file per step of read_fasta_arrays' passes


def in_blocks(n: int, fn=None, size: int | None = None):
    """The bounds (a, b) of consecutive pieces of ``range(n)`` of ``size`` (default :data:`_CHUNK`) bytes;
    with ``fn``, the list of ``fn(a, b)`` over them, on up to 8 threads (NumPy's comparisons, counts,
    compress and take release the GIL; piece by piece they also stay in cache: 205 Mb in 0.4 s instead of
    1.8 s on two cores; small pieces keep the threads' temporaries small)."""
    size = size or _CHUNK
    bounds = [(a, min(n, a + size)) for a in range(0, n, size)]
    if fn is None:
        return bounds
    threads = min(8, os.cpu_count() or 1, len(bounds))
    if threads < 2:
        return [fn(a, b) for a, b in bounds]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda ab: fn(*ab), bounds))


def read_fasta_arrays(path: str, max_length: int | None = None) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Read a whole FASTA file as arrays: the records Biopython's FASTA parser gives (ids, descriptions,
    upper-cased residues without whitespace) found with vectorised NumPy rather than a parser loop over
    the letters (a 570,000-record, 205 Mb file in about a second). ``max_length``: as :func:`read_fasta`.

    Returns:
        (ids, descriptions, residues: uint8 ASCII of all sequences concatenated, offsets: int64 of shape
        (count + 1,)).

    Raises:
        NwalignError: as :func:`read_fasta`.
    """
    text, residues, offsets = read_fasta_raw(path, max_length)
    descriptions = [line.rstrip() for line in text.tobytes().decode("ascii").split("\n")[:-1]]  # as Biopython
    ids = [line.split(None, 1)[0] if line.strip() else f"record{k}" for k, line in enumerate(descriptions, start=1)]
    return ids, descriptions, residues, offsets


def read_fasta_raw(path: str, max_length: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`read_fasta_arrays` without the names as Python strings: (the header lines without their
    '>', each ended by a newline, uint8 ASCII; residues; offsets)."""
    name = "<stdin>" if path == "-" else path
    data = _decompress(_read_bytes(path), name, max_length)
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size and (buf.max() >= 128 or not buf.all()):
        _fasta_text(data, name)  # raises the binary / non-ASCII error
    # One pass finds every whitespace byte (the newlines are among them: no second pass over the file).
    space = np.concatenate([np.flatnonzero(buf[a:b] <= 32) + a for a, b in in_blocks(buf.size)] +
                           [np.zeros(0, dtype=np.intp)])
    gaps = np.flatnonzero(space != np.arange(space.size))  # the first byte that is not whitespace
    first = int(gaps[0]) if gaps.size else int(space.size)
    if first >= buf.size or buf[first] != ord(">"):
        _fasta_text(data, name)  # raises the empty / not-FASTA error
    buf, space = buf[first:], space[first:] - first
    newlines = space[buf[space] == 10]
    line_starts = np.concatenate(([0], newlines + 1))
    line_starts = line_starts[line_starts < buf.size]
    starts = line_starts[buf[line_starts] == ord(">")]                        # header lines
    ends = np.append(newlines, buf.size)[np.searchsorted(newlines, starts)]  # their newline (or EOF)
    lengths = ends - starts
    in_header = np.repeat(starts - np.cumsum(np.concatenate(([0], lengths[:-1]))), lengths) + \
        np.arange(int(lengths.sum()))

    def keep(a, b):  # which bytes of buf[a:b] are residues: not whitespace, not in a header line (a mask per
        k = buf[a:b] > 32  # piece: one of the whole file would take as many bytes as the file)
        k[in_header[np.searchsorted(in_header, a):np.searchsorted(in_header, b)] - a] = False
        return k

    # Residues of record k: the bytes between its header's newline and the next header, less whitespace.
    nexts = np.append(starts[1:], buf.size)
    counts = (nexts - ends) - (np.searchsorted(space, nexts) - np.searchsorted(space, ends))
    # The header lines without their '>', gathered before the residues may overwrite them: each line's
    # bytes and then a newline, decoded at once below.
    text = buf[np.minimum(in_header + 1, buf.size - 1)]
    text[np.cumsum(lengths) - 1] = 10
    kept = np.cumsum([0] + in_blocks(buf.size, lambda a, b: np.count_nonzero(keep(a, b))))
    if buf.flags.writeable:  # compacted into the file's own buffer: no second array of the file's size
        def pack(a, b):  # a piece's residues to its own start (only its own bytes are touched)
            got = buf[a:b][keep(a, b)]
            buf[a:a + got.size] = got

        in_blocks(buf.size, pack)
        for k, (a, _) in enumerate(in_blocks(buf.size)):  # then left, in order: each lands before the next
            buf[kept[k]:kept[k + 1]] = buf[a:a + kept[k + 1] - kept[k]]  # piece's bytes (overlaps copy safely)
        residues = buf[:int(kept[-1])]
    else:
        residues = np.empty(int(kept[-1]), dtype=np.uint8)
        in_blocks(buf.size, lambda a, b: np.compress(keep(a, b), buf[a:b],
                                                   out=residues[kept[a // _CHUNK]:kept[a // _CHUNK + 1]]))
    if residues.size and residues.max() >= ord("a"):  # lower case is rare: test first (a masked subtract of
        lower = (residues >= ord("a")) & (residues <= ord("z"))  # every byte took 1.6 s for 205 Mb)
        residues[lower] -= 32
    offsets = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        k = int(empty[0])
        line = text[int(np.sum(lengths[:k])):int(np.sum(lengths[:k + 1])) - 1].tobytes().decode("ascii")
        raise NwalignError(f"{name}: record {k + 1} ({line.split(None, 1)[0] if line.strip() else f'record{k + 1}'}) "
                           "has an empty sequence")
    return text, residues, offsets


def as_records(items, prefix: str = "seq") -> list[Record]:
    """Records from what a caller of the Python API may hold: a sequence as ``str`` or ``bytes``, a
    Biopython ``Seq`` or ``SeqRecord``, a :class:`Record`, or an iterable of any of these. Letters are
    upper-cased and whitespace removed; sequences without a name are called ``seq1``, ``seq2``, ...

    >>> [(r.id, r.seq) for r in as_records(["acgt", "GGA"])]
    [('seq1', 'ACGT'), ('seq2', 'GGA')]

    Raises:
        NwalignError: an empty sequence, no sequence at all, or an object of another type.
    """
    def is_seq(x):  # Biopython's Seq and MutableSeq (a SeqRecord has an id)
        return type(x).__name__ in ("Seq", "MutableSeq") and type(x).__module__.startswith("Bio.")

    single = isinstance(items, (str, bytes, Record)) or hasattr(items, "id") or is_seq(items)
    out = []
    for number, item in enumerate([items] if single else items, start=1):
        if isinstance(item, Record):
            rec = item
        elif hasattr(item, "seq") and hasattr(item, "id"):  # a Biopython SeqRecord
            rec = Record(str(item.id), str(getattr(item, "description", "") or item.id), str(item.seq))
        elif isinstance(item, (str, bytes)) or is_seq(item):
            text = item.decode("ascii") if isinstance(item, bytes) else str(item)
            rec = Record(f"{prefix}{number}", f"{prefix}{number}", text)
        else:
            raise NwalignError(f"sequence {number}: a {type(item).__name__}, not a str, bytes, Seq or SeqRecord")
        seq = "".join(rec.seq.split()).upper()
        if not seq:
            raise NwalignError(f"sequence {number} ({rec.id}) is empty")
        out.append(rec if seq == rec.seq else Record(rec.id, rec.description, seq))
    if not out:
        raise NwalignError("no sequences given")
    return out


def read_fasta(path: str, max_length: int | None = None) -> list[Record]:
    """Read every record of a FASTA file.

    The records are Biopython's (``Bio.SeqIO.parse(..., "fasta")``: id the header's first word,
    description the header without ``>`` and trailing whitespace), found by :func:`read_fasta_arrays`'
    vectorised reader (tests hold the two to the same records); Biopython's parser and its imports cost
    a tenth of a second of start-up that a search on the GPU waits for.

    Arguments:
        path: a file name, or ``-`` for standard input. gzip, bzip2 and xz are detected from the bytes.
        max_length: refuse (while decompressing) a record far longer than this many residues
            (:func:`nwalign.scoring.schemes.max_sequence_length` gives the most the scoring options allow).

    Returns:
        The records in file order, sequences upper-cased, whitespace removed.

    Raises:
        NwalignError: missing/unreadable file, corrupt compression, binary or non-FASTA content,
            no records, a record with an empty sequence, or one over ``max_length``.
    """
    ids, descriptions, residues, offsets = read_fasta_arrays(path, max_length)
    text = residues.tobytes().decode("ascii")
    bounds = offsets.tolist()
    return [Record(i, d, text[a:b]) for i, d, a, b in zip(ids, descriptions, bounds[:-1], bounds[1:])]


def detect_alphabet(records: list[Record]) -> str:
    """Guess ``dna``, ``rna`` or ``protein`` from the letters of all records together.

    Only nucleotide letters (ACGTU and IUPAC codes) means nucleotide: ``rna`` when U occurs and T does not.
    Anything else is protein. ``--alphabet`` overrides the guess.
    """
    return kind_of(letter_counts(records))


def unique_ids(ids: list[str], source: str) -> list[str]:
    """Ids made distinct (``ids`` itself when they already are) for the outputs that name sequences (SAM references, distance-matrix rows): the
    second, third... record of an id are called ``ID_2``, ``ID_3``... (a suffix already taken is skipped).
    One warning on the ``nwalign`` logger names the first duplicate."""
    seen: set[str] = set(ids)
    if len(seen) == len(ids):
        return ids  # the same list: nothing to rename
    import logging

    count: dict[str, int] = {}
    out, renamed = [], []
    for name in ids:
        count[name] = count.get(name, 0) + 1
        if count[name] == 1:
            out.append(name)
            continue
        k = count[name]
        while f"{name}_{k}" in seen:
            k += 1
        count[name] = k
        seen.add(f"{name}_{k}")
        out.append(f"{name}_{k}")
        renamed.append(name)
    said = (source, len(renamed), renamed[0])
    if said not in _SAID:  # one file read twice (pair X X) is one warning, not two
        _SAID.add(said)
        logging.getLogger("nwalign").warning(
            "warning: %s: %d records repeat an earlier record's id (first: %r); they are named ID_2, ID_3, ... in "
            "the output", *said)
    return out


_SAID: set = set()  # duplicate-id warnings given in this process


def unique_records(records: list[Record], source: str) -> list[Record]:
    """The records with distinct ids (:func:`unique_ids`)."""
    ids = unique_ids([r.id for r in records], source)
    return [r if r.id == i else Record(i, r.description, r.seq) for r, i in zip(records, ids)]


def letter_counts(records: list[Record]) -> np.ndarray:
    """How often each byte occurs in the records' sequences (int64, shape (256,))."""
    counts = np.zeros(256, dtype=np.int64)
    for rec in records:
        counts += np.bincount(np.frombuffer(rec.seq.encode("ascii", "replace"), dtype=np.uint8), minlength=256)
    return counts


def kind_of(counts: np.ndarray) -> str:
    """``dna``, ``rna`` or ``protein`` from letter counts, by :func:`detect_alphabet`'s rule."""
    letters = {chr(c) for c in np.flatnonzero(counts)}
    if letters <= set(NUCLEOTIDE_LETTERS):
        return "rna" if "U" in letters and "T" not in letters else "dna"
    return "protein"


def choose_alphabet(inputs: list[tuple[str, np.ndarray]], alphabet: str = "auto") -> str:
    """The alphabet of a run over several inputs, each given as (name, :func:`letter_counts`).

    ``alphabet`` other than ``auto`` is used as given. Otherwise each input is guessed on its own, from
    all its letters (:func:`kind_of`): nucleotide when every letter is a nucleotide code. Inputs guessed
    differently (one protein, one nucleotide) are refused. Inputs guessed nucleotide that could be
    peptides (ambiguity codes in under 50 residues, or as a quarter of the letters: "MKVAGHW" is all
    nucleotide codes) get one warning on the ``nwalign`` logger. ``-v`` (INFO) says what was chosen and why.

    Raises:
        NwalignError: the inputs' alphabets differ.
    """
    import logging

    log = logging.getLogger("nwalign")
    if alphabet != "auto":
        log.info("alphabet: %s (as given)", alphabet)
        return alphabet
    kinds = [(name, kind_of(counts), counts) for name, counts in inputs]
    protein = [x for x in kinds if x[1] == "protein"]
    nucleotide = [x for x in kinds if x[1] != "protein"]
    if protein and nucleotide:
        (pn, pk, _), (nn, nk, _) = protein[0], nucleotide[0]
        text = f"{pn} is {pk} but {nn} is {nk.upper()} (only nucleotide letters): set the alphabet "
        raise NwalignError(text + "(alphabet='protein' or 'dna') to align them anyway",
                           cli=text + "(--alphabet protein|dna) to align them anyway")
    if not nucleotide:
        counts = sum(c for _, _, c in kinds)
        other = "".join(chr(c) for c in np.flatnonzero(counts) if chr(c) not in NUCLEOTIDE_LETTERS)
        log.info("alphabet: protein (letters that are no nucleotide code: %s)", other[:20])
        return "protein"
    plain = np.frombuffer(b"ACGTUN", dtype=np.uint8)
    suspects = []
    for name, _, counts in kinds:
        total, other = int(counts.sum()), int(counts.sum() - counts[plain].sum())
        if other and (total < 50 or other >= 0.25 * total):  # ambiguity codes in a short or code-rich input
            suspects.append(f"{name} ({total} residues, {100.0 * other / total:.0f} % ambiguity codes)")
    if suspects:
        log.warning("warning: %s: only nucleotide codes, so aligned as DNA/RNA; if protein, set --alphabet protein",
                    "; ".join(suspects))
    kind = "rna" if all(k == "rna" for _, k, _ in kinds) else "dna"
    log.info("alphabet: %s (only nucleotide letters in %s)", kind, " and ".join(n for n, _, _ in kinds))
    return kind


# IUPAC complements (Cornish-Bowden 1985): R<->Y, K<->M, B<->V, D<->H; S, W, N (and X, gaps) unchanged.
_COMPLEMENT = str.maketrans("ACGTURYKMBVDHSWNXacgturykmbvdhswnx-", "TGCAAYRMKVBHDSWNXtgcaayrmkvbhdswnx-")


def reverse_complement(seq: str) -> str:
    """The reverse complement of a nucleotide sequence (IUPAC codes complemented, U as T's partner A).

    >>> reverse_complement("AACGTRYKMBVDHSWN-")
    '-NWSDHBVKMRYACGTT'
    """
    return seq.translate(_COMPLEMENT)[::-1]


#: The bytes a sequence may hold: residue letters (either case) and '*', the stop codon.
RESIDUE_BYTES = np.zeros(256, dtype=bool)
RESIDUE_BYTES[[ord(c) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz*"]] = True


def not_a_residue(name: str, letter: str, record: str | None = None, position: int | None = None) -> NwalignError:
    """The one error for a character that is no residue letter ('-', '.', digits, '>' inside a sequence:
    an aligned FASTA, say), naming the input and, where known, the record and the 1-based position.

    >>> print(not_a_residue("a.fa", "-", "seq2", 3))
    a.fa: record seq2, position 3: '-' is not a residue letter (gaps, '.' and digits are not accepted; give unaligned sequences)
    """
    place = f"record {record}, position {position}: " if record is not None else ""
    return NwalignError(f"{name}: {place}{letter!r} is not a residue letter (gaps, '.' and digits are not "
                        "accepted; give unaligned sequences)")
