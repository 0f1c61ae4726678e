"""Database search: every query against every database sequence with Smith-Waterman, top hits per
query, then full alignments of the reported hits only, with Karlin-Altschul E-values.

The database is one block of residues plus offsets (from FASTA, or memory-mapped from a ``.nwdb``
file written by ``nwalign makedb``), encoded once for all queries.
"""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import cpu
from .engine import Encoded, align_pair
from .errors import NwalignError
from .results import Alignment
from .scoring import Scoring
from .sequences import Record, read_fasta_arrays
from .statistics import KarlinAltschul

log = logging.getLogger("nwalign")

MAGIC = b"NWDB\x01\x00\x00\x00"
BLAST_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send",
                 "evalue", "bitscore")
COLUMNS = BLAST_COLUMNS + ("score", "qlen", "slen", "nident", "gaps", "cigar")


@dataclass
class Database:
    """Residues (uint8 ASCII, shape (total,)), offsets (int64, shape (count+1,)), ids and descriptions."""

    residues: np.ndarray
    offsets: np.ndarray
    ids: list[str]
    descriptions: list[str]
    source: str

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def total_length(self) -> int:
        return int(self.offsets[-1])

    def record(self, k: int) -> Record:
        seq = self.residues[self.offsets[k]:self.offsets[k + 1]].tobytes().decode()
        return Record(self.ids[k], self.descriptions[k], seq)


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
    """Write ``fasta`` as a memory-mappable .nwdb: magic, header length, JSON header (ids, descriptions,
    count), then offsets (int64) and residues (uint8 ASCII), 8-byte aligned. Returns the database."""
    db = database_from_fasta(fasta)
    write_database(db, path)
    return db


def write_database(db: Database, path: str) -> None:
    """Write a database in the .nwdb layout of :func:`makedb` (atomically: temporary file, then rename)."""
    header = json.dumps({"count": db.count, "total": db.total_length, "ids": db.ids,
                         "descriptions": db.descriptions}).encode()
    pad = (-(len(MAGIC) + 8 + len(header))) % 8
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp")
    with open(tmp, "wb") as out:
        out.write(MAGIC + np.uint64(len(header) + pad).tobytes() + header + b" " * pad)
        out.write(db.offsets.tobytes())
        out.write(db.residues.tobytes())
    os.replace(tmp, path)


def load_database(path: str) -> Database:
    """A FASTA file (plain/gz/bz2/xz, '-') or a .nwdb (memory-mapped), recognised by its first bytes.

    Raises:
        NwalignError: unreadable, empty, or a corrupt .nwdb.
    """
    if path != "-" and os.path.isfile(path):
        with open(path, "rb") as handle:
            head = handle.read(16)
        if head[:8] == MAGIC:
            try:
                size = int(np.frombuffer(head[8:16], dtype=np.uint64)[0])
                with open(path, "rb") as handle:
                    handle.seek(16)
                    header = json.loads(handle.read(size))
                start = 16 + size
                offsets = np.memmap(path, dtype=np.int64, mode="r", offset=start, shape=(header["count"] + 1,))
                residues = np.memmap(path, dtype=np.uint8, mode="r", offset=start + 8 * (header["count"] + 1),
                                     shape=(header["total"],))
            except (ValueError, KeyError, OSError) as exc:
                raise NwalignError(f"{path}: corrupt .nwdb file ({exc})") from None
            return Database(residues, np.asarray(offsets), header["ids"], header["descriptions"], path)
    return database_from_fasta(path)


def encode_database(db: Database, scoring: Scoring) -> np.ndarray:
    """All residues as codes (uint8, shape (total,)) in one vectorised pass, either case; a bad letter
    is reported with its record and position.

    Raises:
        NwalignError: a letter outside the scoring alphabet.
    """
    lut = scoring.encode_bytes(np.arange(256, dtype=np.uint8))
    lower = np.arange(ord("a"), ord("z") + 1)
    lut[lower] = lut[lower - 32]  # lower case reads as upper case
    residues = np.asarray(db.residues)
    codes = np.empty(residues.size, dtype=np.uint8)
    step = 1 << 18  # in chunks: NumPy indexes through an intp copy of the index array (cache-sized here)
    for k in range(0, residues.size, step):
        np.take(lut, residues[k:k + step], out=codes[k:k + step])
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        pos = int(bad[0])
        k = int(np.searchsorted(db.offsets, pos, side="right") - 1)
        letter = chr(db.residues[pos])
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
    return Hit(query.record, k, align_pair(query, target, scoring), evalue, bitscore)


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
                 threads: int = 1, gpu=None) -> list[Hit]:
    """Scan one query (on the CPU engine, or ``gpu``: a :class:`nwalign.cuda.search.ScanSearcher` or
    ``GswSearcher``), then align its reported hits on the CPU engine (exact columns; scores equal the
    scan's) with statistics."""
    for _, hits in search_all([query], db, codes, scoring, stats, top, max_evalue, min_score, threads, gpu):
        return hits
    return []


def warm_cpu_engine() -> None:
    """Load the CPU engine (Numba and its compiled functions) in a background thread, so that the first
    hit's alignment does not wait for it while the GPU scans."""
    import threading

    def run():
        from .cpu import align_codes

        one = np.zeros(1, dtype=np.uint8)
        align_codes(one, one, np.ones((1, 1), dtype=np.int32), 1, 1, 1)

    threading.Thread(target=run, daemon=True).start()


def search_all(queries: list[Encoded], db: Database, codes: np.ndarray, scoring: Scoring,
               stats: KarlinAltschul | None, top: int = 10, max_evalue: float | None = None,
               min_score: int | None = None, threads: int = 1, gpu=None, progress=None):
    """Search every query; yields (query, hits) in query order.

    With ``gpu``, the reported hits of one query are aligned on the CPU engine by ``threads`` threads
    (the engine releases the GIL) while the GPU scans the next query. ``progress(residues)`` is called
    after each scan.
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
            jobs = [pool.submit(_hit, q, db, codes, k, scoring, ev, bits)
                    for k, ev, bits in _reported(q, scores, db, stats, top, max_evalue, min_score)]
            pending.append((q, jobs))
            while len(pending) > (1 if gpu is not None else 0):
                q0, done = pending.popleft()
                yield q0, [j.result() for j in done]
        while pending:
            q0, done = pending.popleft()
            yield q0, [j.result() for j in done]


def field(hit: Hit, column: str) -> str:
    """One BLAST tabular field (coordinates 1-based inclusive, pident a percentage)."""
    a = hit.aln
    empty = a.length == 0
    values = {
        "qseqid": a.query_id, "sseqid": a.target_id, "pident": f"{100.0 * a.identity:.2f}", "length": a.length,
        "mismatch": a.mismatch, "gapopen": a.gap_opens, "qstart": 0 if empty else a.query_start + 1,
        "qend": a.query_end, "sstart": 0 if empty else a.target_start + 1, "send": a.target_end,
        "evalue": "" if hit.evalue is None else f"{hit.evalue:.2g}",
        "bitscore": "" if hit.bitscore is None else f"{hit.bitscore:.1f}", "score": a.score,
        "qlen": a.query_length, "slen": a.target_length, "nident": a.nident, "gaps": a.gaps, "cigar": a.cigar(),
    }
    return str(values[column])
