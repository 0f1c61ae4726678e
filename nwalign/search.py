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

from .cpu import score_codes
from .engine import Encoded, align_pair
from .errors import NwalignError
from .results import Alignment
from .scoring import Scoring
from .sequences import Record, read_fasta
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


def makedb(fasta: str, path: str) -> Database:
    """Write ``fasta`` as a memory-mappable .nwdb: magic, header length, JSON header (ids, descriptions,
    count), then offsets (int64) and residues (uint8 ASCII), 8-byte aligned. Returns the database."""
    db = database_from_records(read_fasta(fasta), fasta)
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
    return database_from_records(read_fasta(path), path)


def encode_database(db: Database, scoring: Scoring) -> np.ndarray:
    """All residues as codes in one pass; a bad letter is reported with its record and position."""
    codes = scoring.encode_bytes(np.frombuffer(db.residues.tobytes().upper(), dtype=np.uint8))
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
            out[k] = score_codes(q, codes[offsets[k]:offsets[k + 1]], scoring.matrix, go, ge, mode)

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
    """Indices of the best ``top`` scores: score descending, then database order (ties are stable)."""
    order = np.lexsort((np.arange(scores.size), -scores))
    if min_score is not None:
        order = order[scores[order] >= min_score]
    return order[:top]


def search_query(query: Encoded, db: Database, codes: np.ndarray, scoring: Scoring, stats: KarlinAltschul | None,
                 top: int = 10, max_evalue: float | None = None, min_score: int | None = None,
                 threads: int = 1, gpu=None) -> list[Hit]:
    """Scan one query (on the CPU engine, or ``gpu``: a :class:`nwalign.cuda.search.ScanSearcher` or
    ``GswSearcher``), then align its reported hits on the CPU engine (exact columns; scores equal the
    scan's) with statistics."""
    scores = gpu.score_query(query) if gpu is not None else scan(query.codes, codes, db.offsets, scoring, threads)
    hits = []
    for k in top_hits(scores, top, min_score).tolist():
        target = Encoded(db.record(k), codes[db.offsets[k]:db.offsets[k + 1]])
        aln = align_pair(query, target, scoring)
        evalue = stats.evalue(aln.score, len(query.codes), db.total_length) if stats else None
        if max_evalue is not None and evalue is not None and evalue > max_evalue:
            continue
        hits.append(Hit(query.record, k, aln, evalue, stats.bit_score(aln.score) if stats else None))
    return hits


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
