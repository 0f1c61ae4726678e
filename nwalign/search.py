"""Database search: every query against every database sequence with Smith-Waterman, top hits per
query, then full alignments of the reported hits only, with Karlin-Altschul E-values.

The database is one block of residues plus offsets (from FASTA, or memory-mapped from a ``.nwdb``
file written by ``nwalign makedb``), encoded once for all queries.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import cpu
from .engine import Encoded, align_pair
from .errors import NwalignError
from .results import Alignment, finish
from .scoring import Scoring
from .sequences import Record, read_fasta_arrays
from .statistics import KarlinAltschul

log = logging.getLogger("nwalign")

MAGIC = b"NWDB\x01\x00\x00\x00"    # .nwdb version 1: residues as ASCII letters
MAGIC2 = b"NWDB\x02\x00\x00\x00"   # version 2: residues as letter indices (the search engines' codes)
BLAST_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send",
                 "evalue", "bitscore")
JSON_COLUMNS = BLAST_COLUMNS + ("score", "qlen", "slen", "nident", "gaps", "cigar")  # --format json's fields
COLUMNS = JSON_COLUMNS + ("qseq", "sseq", "ppos", "qcovs", "stitle", "btop")
#: Columns known from the scan alone: a search that writes only these aligns nothing.
SCORE_COLUMNS = ("qseqid", "sseqid", "evalue", "bitscore", "score", "qlen", "slen", "stitle")


@dataclass
class Database:
    """A sequence database: offsets (int64, shape (count + 1,)), ids and descriptions, and the residues
    either as ``residues`` (uint8 ASCII upper case, shape (total,): FASTA and version-1 .nwdb files) or as
    ``codes`` (uint8, shape (total,)) indexing the string ``letters`` (version-2 .nwdb files, written in the
    order of the default scoring alphabet, so that a search with that alphabet uses them as they are)."""

    residues: np.ndarray | None
    offsets: np.ndarray
    ids: list[str]
    descriptions: list[str]
    source: str
    codes: np.ndarray | None = None
    letters: str | None = None

    @property
    def count(self) -> int:
        return len(self.ids)

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
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        raw = self.residues[a:b] if self.residues is not None else self._letter_bytes()[self.codes[a:b]]
        return Record(self.ids[k], self.descriptions[k], raw.tobytes().decode())


def _take_chunked(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """table[index] for a uint8 index array, in cache-sized chunks (NumPy indexes through an intp copy of
    the index array, 8 bytes per element)."""
    out = np.empty(index.size, dtype=table.dtype)
    step = 1 << 18
    for k in range(0, index.size, step):
        np.take(table, index[k:k + step], out=out[k:k + step])
    return out


def database_from_records(records: list[Record], source: str) -> Database:
    lengths = np.array([len(r.seq) for r in records], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    residues = np.frombuffer("".join(r.seq for r in records).encode("ascii"), dtype=np.uint8)
    return Database(residues, offsets, [r.id for r in records], [r.description for r in records], source)


def database_from_fasta(path: str) -> Database:
    """A FASTA file read straight into arrays (:func:`nwalign.sequences.read_fasta_arrays`)."""
    ids, descriptions, residues, offsets = read_fasta_arrays(path)
    return Database(residues, offsets, ids, descriptions, path)


def makedb(fasta: str, path: str) -> Database:
    """Write ``fasta`` as a memory-mappable version-2 .nwdb (see :func:`write_database`); returns the
    database as read from the FASTA.

    Raises:
        NwalignError: an unreadable or empty FASTA file, or a record without residues.
    """
    db = database_from_fasta(fasta)
    write_database(db, path)
    return db


def database_letters(residues: np.ndarray) -> str:
    """The letter order of a version-2 file: the default scoring alphabet of the letters' kind (DNA, RNA
    or protein, as ``--alphabet auto`` decides), then any other letters present, sorted."""
    from .scoring import make_scoring
    from .sequences import detect_alphabet

    residues = np.asarray(residues)
    counts = np.zeros(256, dtype=np.int64)
    for k in range(0, residues.size, 1 << 18):  # chunks: bincount converts its input to intp
        counts += np.bincount(residues[k:k + (1 << 18)], minlength=256)
    present = "".join(chr(c) for c in np.flatnonzero(counts))
    alphabet = make_scoring(detect_alphabet([Record("letters", "", present)]), "local").alphabet
    return alphabet + "".join(c for c in present if c not in alphabet)


def write_database(db: Database, path: str, version: int = 2) -> None:
    """Write a database as a .nwdb file through a unique temporary file and an atomic rename.

    Version 2 layout: magic (8 bytes), header length (uint64), JSON header (count, total, letters, the
    byte length of the names section, CRC-32 of the names, offsets and residues sections), padding to 8
    bytes; the names section (JSON: ids, descriptions), padding; offsets (int64, count + 1); residues
    (uint8 indices into ``letters``, total). Version 1 (still read): JSON header with count, total, ids and
    descriptions, then offsets and ASCII residues, no checksums.

    Raises:
        NwalignError: the file cannot be written (the temporary file is removed).
    """
    offsets = np.ascontiguousarray(db.offsets, dtype=np.int64)
    if version == 2:
        ascii_ = db.ascii()
        letters = database_letters(ascii_)
        lut = np.zeros(256, dtype=np.uint8)
        lut[np.frombuffer(letters.encode("ascii"), dtype=np.uint8)] = np.arange(len(letters), dtype=np.uint8)
        body = _take_chunked(lut, ascii_)
        names = json.dumps({"ids": db.ids, "descriptions": db.descriptions}).encode()
        names += b" " * (-len(names) % 8)
        fields = {"count": db.count, "total": db.total_length, "letters": letters, "names_bytes": len(names),
                  "crc32": {"names": zlib.crc32(names), "offsets": zlib.crc32(offsets),
                            "residues": zlib.crc32(memoryview(np.ascontiguousarray(body)))}}
        magic = MAGIC2
    else:
        body = db.ascii()
        names = b""
        fields = {"count": db.count, "total": db.total_length, "ids": db.ids, "descriptions": db.descriptions}
        magic = MAGIC
    header = json.dumps(fields).encode()
    header += b" " * (-(len(magic) + 8 + len(header)) % 8)
    path = os.path.realpath(path)  # a symbolic link's target is replaced, not the link
    directory = os.path.dirname(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as out:
            out.write(magic + np.uint64(len(header)).tobytes() + header + names)
            out.write(offsets.tobytes())
            out.write(np.ascontiguousarray(body).tobytes())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp and os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise NwalignError(f"{path}: cannot write the database ({exc.strerror or exc})") from None
        raise


def load_database(path: str) -> Database:
    """A FASTA file (plain/gz/bz2/xz, '-') or a .nwdb (memory-mapped), recognised by its first bytes.

    A .nwdb is checked before use: version 2's CRC-32 of every section, and for both versions offsets
    that start at 0, rise and end at the residue count, and one id per sequence.

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
                return _open_nwdb(path, head)
            except (ValueError, KeyError, OSError, TypeError, IndexError) as exc:
                raise NwalignError(f"{path}: damaged .nwdb file ({exc}); rebuild it with 'nwalign makedb'") from None
    return database_from_fasta(path)


def _open_nwdb(path: str, head: bytes) -> Database:
    size = int(np.frombuffer(head[8:16], dtype=np.uint64)[0])
    if size > os.path.getsize(path):
        raise ValueError("header longer than the file")
    with open(path, "rb") as handle:
        handle.seek(16)
        header = json.loads(handle.read(size))
        names_raw = handle.read(int(header.get("names_bytes", 0)))
    count, total = int(header["count"]), int(header["total"])
    start = 16 + size + len(names_raw)
    if os.path.getsize(path) != start + 8 * (count + 1) + total:
        raise ValueError("file size does not match its header")
    offsets = np.asarray(np.memmap(path, dtype=np.int64, mode="r", offset=start, shape=(count + 1,)))
    body = np.memmap(path, dtype=np.uint8, mode="r", offset=start + 8 * (count + 1), shape=(total,))
    if head[:8] == MAGIC2:
        crc = header["crc32"]
        for section, data in (("names", names_raw), ("offsets", offsets), ("residues", memoryview(body))):
            if zlib.crc32(data) != crc[section]:
                raise ValueError(f"checksum of the {section} section differs")
        names = json.loads(names_raw)
        ids, descriptions = names["ids"], names["descriptions"]
        if total and int(body.max()) >= len(header["letters"]):
            raise ValueError("residue codes outside the letters")
    else:
        ids, descriptions = header["ids"], header["descriptions"]
    if offsets[0] != 0 or offsets[-1] != total or np.any(np.diff(offsets) < 1):
        raise ValueError("sequence offsets do not rise from 0 to the residue count")
    if len(ids) != count or len(descriptions) != count:
        raise ValueError(f"{len(ids)} ids for {count} sequences")
    if head[:8] == MAGIC:
        return Database(body, offsets, ids, descriptions, path)
    return Database(None, offsets, ids, descriptions, path, body, header["letters"])


def encode_database(db: Database, scoring: Scoring) -> np.ndarray:
    """All residues as the scoring's codes (uint8, shape (total,)), either case; a bad letter is reported
    with its record and position. A version-2 .nwdb written in the scoring's alphabet order is used as it
    is (memory-mapped, no copy).

    Raises:
        NwalignError: a letter outside the scoring alphabet.
    """
    if db.codes is not None:
        if db.letters == scoring.alphabet:
            return np.asarray(db.codes)
        lut = np.full(256, 255, dtype=np.uint8)
        letters = db._letter_bytes()
        lut[:letters.size] = scoring.encode_bytes(letters)
        source = db.codes
    else:
        lut = scoring.encode_bytes(np.arange(256, dtype=np.uint8))
        lower = np.arange(ord("a"), ord("z") + 1)
        lut[lower] = lut[lower - 32]  # lower case reads as upper case
        source = db.residues
    codes = _take_chunked(lut, np.asarray(source))
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        pos = int(bad[0])
        k = int(np.searchsorted(db.offsets, pos, side="right") - 1)
        letter = chr(db.residues[pos]) if db.residues is not None else db.letters[int(db.codes[pos])]
        raise NwalignError(f"{db.source}: record {db.ids[k]}: letter {letter!r} at position "
                           f"{pos - int(db.offsets[k]) + 1} is not in the alphabet of {scoring.matrix_name}")
    return codes


def scan(q: np.ndarray, codes: np.ndarray, offsets: np.ndarray, scoring: Scoring, threads: int = 1) -> np.ndarray:
    """Optimal scores of query codes ``q`` against every database sequence (int64, shape (count,))."""
    count = len(offsets) - 1
    out = np.empty(count, dtype=np.int64)
    go, ge, mode = scoring.gap_open, scoring.gap_extend, scoring.mode_code

    def chunk(lo, hi):
        for k in range(lo, hi):
            out[k] = cpu.score_codes(q, codes[offsets[k]:offsets[k + 1]], scoring.matrix, go, ge, mode)

    # Chunks balanced by residues, not by sequence counts.
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], max(1, threads * 4) + 1)).tolist()
    cuts[0], cuts[-1] = 0, count
    spans = [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    if threads <= 1:
        for a, b in spans:
            chunk(a, b)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda s: chunk(*s), spans))
    return out


@dataclass
class Hit:
    query: Record
    db_index: int
    aln: Alignment
    evalue: float | None
    bitscore: float | None
    title: str = ""  # the database sequence's FASTA header line (BLAST's stitle)


def top_hits(scores: np.ndarray, top: int, min_score: int | None) -> np.ndarray:
    """Indices of the best ``top`` scores (int64): score descending, then database order (ties are stable).

    Only the candidates at or above the top-th best score are sorted (one partition of the array)."""
    scores = np.asarray(scores)
    if top <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    if top < scores.size:
        kth = np.partition(scores, scores.size - top)[scores.size - top]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(scores.size)
    order = cand[np.lexsort((cand, -scores[cand]))]
    if min_score is not None:
        order = order[scores[order] >= min_score]
    return order[:top]


def _hit(query: Encoded, db: Database, codes: np.ndarray, k: int, scoring: Scoring, evalue, bitscore) -> Hit:
    target = Encoded(db.record(k), codes[db.offsets[k]:db.offsets[k + 1]])
    return Hit(query.record, k, align_pair(query, target, scoring), evalue, bitscore, db.descriptions[k])


def _hit_from_path(query: Encoded, db: Database, codes: np.ndarray, k: int, scan_score: int, path, scoring: Scoring,
                   evalue, bitscore) -> Hit:
    """A hit from an alignment computed elsewhere (``path``: :func:`nwalign.cpu.align_codes`'s tuple)."""
    score, qs, qe, ts, te, ops = path
    if score != scan_score:  # two engines disagree: never report either
        raise NwalignError(f"internal error: query {query.record.id} against {db.ids[k]}: the alignment scores "
                           f"{score}, the scan {scan_score}; please report this (use --backend cpu meanwhile)")
    t = codes[db.offsets[k]:db.offsets[k + 1]]
    target = db.record(k)
    aln = Alignment(query_id=query.record.id, target_id=target.id, mode=scoring.mode, score=score,
                    query_length=len(query.codes), target_length=len(t), query_start=qs, query_end=qe,
                    target_start=ts, target_end=te, ops=ops, query_seq=query.record.seq, target_seq=target.seq)
    return Hit(query.record, k, finish(aln, query.codes, t, scoring.matrix), evalue, bitscore, db.descriptions[k])


def _score_hit(query: Encoded, db: Database, k: int, score: int, scoring: Scoring, evalue, bitscore) -> Hit:
    aln = Alignment(query_id=query.record.id, target_id=db.ids[k], mode=scoring.mode, score=score,
                    query_length=len(query.codes), target_length=int(db.offsets[k + 1] - db.offsets[k]))
    return Hit(query.record, k, aln, evalue, bitscore, db.descriptions[k])


def _reported(query: Encoded, scores: np.ndarray, db: Database, stats: KarlinAltschul | None, top: int,
              max_evalue: float | None, min_score: int | None) -> list[tuple[int, float | None, float | None]]:
    """(database index, E-value, bit score) of the hits to report, from the scan's scores alone (they are
    the alignments' scores): the E-value uses the whole database's length."""
    out = []
    for k in top_hits(scores, top, min_score).tolist():
        score = int(scores[k])
        evalue = stats.evalue(score, len(query.codes), db.total_length) if stats else None
        if max_evalue is not None and evalue is not None and evalue > max_evalue:
            continue
        out.append((k, evalue, stats.bit_score(score) if stats else None))
    return out


def search_query(query: Encoded, db: Database, codes: np.ndarray, scoring: Scoring, stats: KarlinAltschul | None,
                 top: int = 10, max_evalue: float | None = None, min_score: int | None = None,
                 threads: int = 1, gpu=None, aligner=None) -> list[Hit]:
    """Scan one query (on the CPU engine, or ``gpu``: a :class:`nwalign.cuda.search.ScanSearcher` or
    ``GswSearcher``), then align its reported hits (on the CPU engine, or the GPU with ``aligner``: a
    :class:`nwalign.cuda.batch.BatchAligner`; the same alignments) with statistics."""
    for _, hits in search_all([query], db, codes, scoring, stats, top, max_evalue, min_score, threads, gpu,
                              aligner=aligner):
        return hits
    return []


def search_all(queries: list[Encoded], db: Database, codes: np.ndarray, scoring: Scoring,
               stats: KarlinAltschul | None, top: int = 10, max_evalue: float | None = None,
               min_score: int | None = None, threads: int = 1, gpu=None, progress=None, align: bool = True,
               aligner=None):
    """Search every query; yields (query, hits) in query order.

    With ``gpu``, the reported hits of one query are aligned while the GPU scans the next query: on the
    GPU by ``aligner`` (a :class:`nwalign.cuda.batch.BatchAligner`, all hits of a query in one launch), else
    on the CPU engine by ``threads`` threads (the engine releases the GIL). ``align=False``: the hits carry
    score-only alignments (enough for :data:`SCORE_COLUMNS`). ``progress(residues)`` is called after
    each scan.
    """
    from collections import deque

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        pending: deque = deque()
        for q in queries:
            if gpu is not None:
                scores = gpu.score_query(q)
            else:
                scores = scan(q.codes, codes, db.offsets, scoring, threads)
            if progress:
                progress(db.total_length)
            reported = _reported(q, scores, db, stats, top, max_evalue, min_score)
            if align and aligner is not None:
                batch = aligner.submit([(q.codes, codes[db.offsets[k]:db.offsets[k + 1]]) for k, _, _ in reported])
                jobs = [_BatchHits(batch, q, db, codes, [(k, int(scores[k]), ev, bits) for k, ev, bits in reported],
                                   scoring)]
            elif align:
                jobs = [pool.submit(_hit, q, db, codes, k, scoring, ev, bits) for k, ev, bits in reported]
            else:
                jobs = [_Done(_score_hit(q, db, k, int(scores[k]), scoring, ev, bits)) for k, ev, bits in reported]
            pending.append((q, jobs))
            while len(pending) > (1 if gpu is not None else 0):
                q0, done = pending.popleft()
                yield q0, _results(done)
        while pending:
            q0, done = pending.popleft()
            yield q0, _results(done)


def _results(jobs) -> list[Hit]:
    out = []
    for job in jobs:
        got = job.result()
        out.extend(got if isinstance(job, _BatchHits) else [got])
    return out


class _BatchHits:
    """The hits of one query aligned as one GPU batch; ``result()`` waits and builds them."""

    def __init__(self, batch, query, db, codes, hits, scoring):
        self.batch, self.query, self.db, self.codes, self.hits, self.scoring = batch, query, db, codes, hits, scoring

    def result(self) -> list[Hit]:
        return [_hit_from_path(self.query, self.db, self.codes, k, score, path, self.scoring, ev, bits)
                for (k, score, ev, bits), path in zip(self.hits, self.batch.result())]


class _Done:
    """A finished result in the place of a future."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


_FIELDS = {
    "qseqid": lambda h, a: a.query_id, "sseqid": lambda h, a: a.target_id,
    "pident": lambda h, a: f"{100.0 * a.identity:.2f}", "length": lambda h, a: a.length,
    "mismatch": lambda h, a: a.mismatch, "gapopen": lambda h, a: a.gap_opens,
    "qstart": lambda h, a: 0 if a.length == 0 else a.query_start + 1, "qend": lambda h, a: a.query_end,
    "sstart": lambda h, a: 0 if a.length == 0 else a.target_start + 1, "send": lambda h, a: a.target_end,
    "evalue": lambda h, a: "" if h.evalue is None else f"{h.evalue:.2g}",
    "bitscore": lambda h, a: "" if h.bitscore is None else f"{h.bitscore:.1f}", "score": lambda h, a: a.score,
    "qlen": lambda h, a: a.query_length, "slen": lambda h, a: a.target_length, "nident": lambda h, a: a.nident,
    "gaps": lambda h, a: a.gaps, "cigar": lambda h, a: a.cigar(),
    "qseq": lambda h, a: a.gapped()[0], "sseq": lambda h, a: a.gapped()[1],
    "ppos": lambda h, a: f"{100.0 * a.similarity:.2f}",
    "qcovs": lambda h, a: round(100.0 * (a.query_end - a.query_start) / a.query_length) if a.query_length else 0,
    "stitle": lambda h, a: h.title or a.target_id, "btop": lambda h, a: btop(a),
}


def btop(aln: Alignment) -> str:
    """BLAST's traceback operations: the length of each run of identical columns, and for every other
    column the query letter then the subject letter ('-' for a gap)."""
    q, t = aln.gapped()
    out, run = [], 0
    for col, a, b in zip(aln.columns.tolist(), q, t):
        if col == 0:
            run += 1
            continue
        if run:
            out.append(str(run))
            run = 0
        out.append(a + b)
    if run:
        out.append(str(run))
    return "".join(out)


def field(hit: Hit, column: str) -> str:
    """One BLAST tabular field (coordinates 1-based inclusive, pident a percentage)."""
    return str(_FIELDS[column](hit, hit.aln))
