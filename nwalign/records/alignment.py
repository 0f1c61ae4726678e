"""Alignment records and the statistics derived from an alignment's columns.

Definitions (BLAST's, see docs/scoring.md): ``length`` counts alignment columns including gap columns;
``identity = nident / length``; ``similarity`` counts columns whose substitution score is positive;
``gaps`` counts gap columns; ``gap_opens`` counts gap runs; ``mismatch = length - nident - gaps``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import os
import sys

import numpy as np

from nwalign.ops import OP_DEL, OP_INS, OP_MATCH, in_pieces
from nwalign.io.sequences import reverse_complement

_CIGAR_SYMBOL = {0: "=", 1: "X", 2: "I", 3: "D"}


@dataclass(frozen=True)
class Alignment:
    """One pairwise alignment (or score only); immutable: :func:`finish` returns a new record with the
    statistics.

    Coordinates are 0-based half-open in the API (``query[query_start:query_end]`` is aligned);
    writers print them 1-based inclusive. ``ops`` is None for score-only results, else uint8 column
    codes of shape (length,): 0 residue pair, 1 query residue against a gap (I), 2 target residue
    against a gap (D).
    """

    query_id: str
    target_id: str
    mode: str
    score: int
    query_length: int
    target_length: int
    query_start: int = 0
    query_end: int = 0
    target_start: int = 0
    target_end: int = 0
    ops: np.ndarray | None = None
    query_seq: str = field(default="", repr=False)
    target_seq: str = field(default="", repr=False)
    #: A nucleotide search's strand: None (not searched by strand, or protein), ``plus`` or ``minus``. A
    #: minus-strand alignment is of the query's reverse complement (``query_seq``, and the coordinates
    #: above, are on it) against the target's plus strand, as SAM has it; writers show it as BLAST does.
    strand: str | None = None
    # Derived statistics, filled by :func:`finish`.
    length: int = 0
    nident: int = 0
    npositive: int = 0
    gaps: int = 0
    gap_opens: int = 0
    columns: np.ndarray | None = field(default=None, repr=False)  # 0 '=', 1 'X', 2 'I', 3 'D'
    positive: np.ndarray | None = field(default=None, repr=False)  # bool: residue pair scoring > 0

    @property
    def score_only(self) -> bool:
        return self.ops is None

    @property
    def identity(self) -> float:
        return self.nident / self.length if self.length else 0.0

    @property
    def similarity(self) -> float:
        return self.npositive / self.length if self.length else 0.0

    @property
    def mismatch(self) -> int:
        return self.length - self.nident - self.gaps

    def cigar(self) -> str:
        """Extended CIGAR (``=``, ``X``, ``I``, ``D``) of the aligned region; ``""`` when empty."""
        if self.columns is None or self.columns.size == 0:
            return ""
        cols = self.columns
        change = np.flatnonzero(np.diff(cols)) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [cols.size]))
        # Python ints and strs (tolist), not NumPy scalars: a genome's 200,000 runs in 0.1 s, not 2 s.
        symbols = [_CIGAR_SYMBOL[c] for c in cols[starts].tolist()]
        return "".join([f"{n}{c}" for n, c in zip((ends - starts).tolist(), symbols)])

    def match_line(self) -> str:
        """EMBOSS symbols per column: '|' identical, ':' positive score, '.' other pair, ' ' gap."""
        sym = np.full(self.length, ord(" "), dtype=np.uint8)
        sym[self.columns == 1] = ord(".")
        sym[(self.columns == 1) & self.positive] = ord(":")
        sym[self.columns == 0] = ord("|")
        return sym.tobytes().decode()

    def gapped(self) -> tuple[str, str]:
        """The aligned region as two equal-length strings with ``-`` for gaps."""
        if self.ops is None:
            raise ValueError("a score-only result has no alignment")
        q = np.frombuffer(self.query_seq[self.query_start:self.query_end].encode(), dtype=np.uint8)
        t = np.frombuffer(self.target_seq[self.target_start:self.target_end].encode(), dtype=np.uint8)
        ops = self.ops
        qrow = np.full(ops.size, ord("-"), dtype=np.uint8)
        trow = np.full(ops.size, ord("-"), dtype=np.uint8)
        qmask = ops != OP_DEL
        tmask = ops != OP_INS
        qrow[qmask] = q
        trow[tmask] = t
        return qrow.tobytes().decode(), trow.tobytes().decode()

    def shown(self) -> tuple[str, str]:
        """The gapped rows as BLAST shows them: a minus-strand alignment as the query's plus strand
        against the target's minus strand (both rows reverse-complemented)."""
        qrow, trow = self.gapped()
        if self.strand == "minus":
            return reverse_complement(qrow), reverse_complement(trow)
        return qrow, trow

    def to_biopython(self):
        """The alignment as a Biopython ``Bio.Align.Alignment`` (sequences: the whole query, then the whole
        target, as ``SeqRecord``s named by their ids; ``coordinates`` of shape (2, runs + 1), 0-based;
        ``score`` set), so that Biopython's writers and tools take nwalign's results.

        >>> import nwalign
        >>> print(nwalign.align("GATTACA", "GATCACA").to_biopython())  # doctest: +NORMALIZE_WHITESPACE
        query             0 GATTACA 7
                          0 |||.||| 7
        target            0 GATCACA 7
        <BLANKLINE>

        Raises:
            ValueError: a score-only result (no columns).
        """
        from Bio.Align import Alignment as BioAlignment
        from Bio.Seq import Seq
        from Bio.SeqRecord import SeqRecord

        if self.ops is None:
            raise ValueError("a score-only result has no alignment")
        ops = self.ops
        change = np.flatnonzero(np.diff(ops)) + 1
        starts = np.concatenate(([0], change)).astype(np.int64)
        lengths = np.diff(np.concatenate((starts, [ops.size])))
        kinds = ops[starts] if ops.size else ops
        steps_q = np.where(kinds != OP_DEL, lengths, 0)
        steps_t = np.where(kinds != OP_INS, lengths, 0)
        coordinates = np.array([self.query_start + np.concatenate(([0], np.cumsum(steps_q))),
                                self.target_start + np.concatenate(([0], np.cumsum(steps_t)))], dtype=np.int64)
        records = [SeqRecord(Seq(self.query_seq), id=self.query_id, description=""),
                   SeqRecord(Seq(self.target_seq), id=self.target_id, description="")]
        out = BioAlignment(records, coordinates)
        out.score = self.score
        return out


_COMPILED_FROM = 4096  # columns from which finish() uses nwalign.records.columns when Numba is loaded


def finish(aln: Alignment, q_codes: np.ndarray, t_codes: np.ndarray, scoring) -> Alignment:
    """The alignment with its derived statistics, from its columns, the encoded sequences and the
    :class:`~nwalign.scoring.schemes.Scoring` (its matrix, and which codes count as identities: a column of
    two equal ambiguity codes, such as N against N, or X against X, is not an identity, as in BLAST).
    Returns a new (complete) record; a score-only one is returned as it is."""
    if aln.ops is None:
        return aln
    return replace(aln, **column_stats(aln.ops, q_codes, t_codes, aln.query_start, aln.target_start, scoring))


_THREADED_FROM = 1 << 18  # columns from which column_stats cuts the alignment into pieces for threads
_PIECE = 1 << 16          # columns a piece at least


def column_stats(ops: np.ndarray, q_codes: np.ndarray, t_codes: np.ndarray, query_start: int, target_start: int,
                 scoring) -> dict:
    """What :func:`finish` adds to an alignment of columns ``ops`` starting at (query_start, target_start):
    ``columns``, ``length``, ``nident``, ``positive``, ``npositive``, ``gaps``, ``gap_opens`` (NumPy
    arrays). Genome-length alignments are cut into pieces computed by NumPy on threads (no compilation on a first
    run, unlike CuPy's generic kernels or Numba)."""
    n = ops.size
    if n >= _THREADED_FROM and (os.cpu_count() or 1) > 1:
        return _threaded_stats(ops, q_codes, t_codes, query_start, target_start, scoring)
    if n >= _COMPILED_FROM and "numba" in sys.modules:
        # Genome-length alignments, where Numba is loaded already (never imported for this alone: a GPU
        # search would pay its import): one compiled pass that releases the GIL instead of ~10 NumPy ones.
        from nwalign.records.columns import alignment_columns

        cols, positive, nident, npositive, gaps, opens = alignment_columns(
            np.ascontiguousarray(ops), q_codes, t_codes, query_start, target_start,
            np.ascontiguousarray(scoring.matrix), np.ascontiguousarray(scoring.identical))
        return dict(columns=cols, length=n, nident=int(nident), positive=positive, npositive=int(npositive),
                    gaps=int(gaps), gap_opens=int(opens))
    return _numpy_stats(ops, q_codes, t_codes, query_start, target_start, scoring)


def _numpy_stats(ops, q_codes, t_codes, query_start: int, target_start: int, scoring) -> dict:
    """:func:`column_stats` in NumPy's array operations."""
    n = ops.size
    qi = query_start + np.cumsum(ops != OP_DEL) - 1
    ti = target_start + np.cumsum(ops != OP_INS) - 1
    cols, same, positive, gap = _columns(ops, q_codes, qi, t_codes, ti, scoring)
    # A gap run starts where the column type changes to I or D.
    starts = gap & np.concatenate((np.ones(1, dtype=bool), ops[1:] != ops[:-1]))
    return dict(columns=cols, length=n, nident=int(same.sum()), positive=positive,
                npositive=int(positive.sum()), gaps=int(gap.sum()), gap_opens=int(starts.sum()))


def _threaded_stats(ops: np.ndarray, q_codes, t_codes, query_start: int, target_start: int, scoring) -> dict:
    """:func:`column_stats` of a long alignment: its pieces on threads (:func:`nwalign.ops.in_pieces`), each
    starting at the residues the columns before it used; a gap run that crosses into a piece is counted
    once."""
    parts, continued = in_pieces(np.ascontiguousarray(ops), _PIECE, lambda part, qb, tb: _numpy_stats(
        part, q_codes, t_codes, query_start + qb, target_start + tb, scoring))
    return dict(columns=np.concatenate([p["columns"] for p in parts]), length=int(ops.size),
                nident=sum(p["nident"] for p in parts), positive=np.concatenate([p["positive"] for p in parts]),
                npositive=sum(p["npositive"] for p in parts), gaps=sum(p["gaps"] for p in parts),
                gap_opens=sum(p["gap_opens"] for p in parts) - continued)


def _columns(ops, q_codes, qi, t_codes, ti, scoring) -> tuple:
    """Per column of ``ops`` (``qi``, ``ti``: the indices of its query and target residue in ``q_codes``,
    ``t_codes``, read where the column pairs two residues): the column codes (uint8: 0 identity, 1 other
    pair, 2 I, 3 D), whether it is an identity, whether it scores > 0, whether it is a gap."""
    pair = ops == OP_MATCH
    qa, ta = q_codes[qi[pair]], t_codes[ti[pair]]
    same = np.zeros(ops.size, dtype=bool)
    same[pair] = (qa == ta) & np.asarray(scoring.identical)[qa]
    cols = np.where(ops == OP_INS, 2, 3).astype(np.uint8)
    cols[pair] = np.where(same[pair], 0, 1).astype(np.uint8)
    positive = np.zeros(ops.size, dtype=bool)
    positive[pair] = np.asarray(scoring.matrix)[qa, ta] > 0
    return cols, same, positive, ~pair


def column_stats_many(paths, q_codes: np.ndarray, targets, scoring) -> list[dict]:
    """:func:`column_stats` of several alignments of one query at once (a search's hits: one NumPy pass
    over all their columns instead of ten small ones each, which held the interpreter's lock for ~60 us a
    hit). ``paths``: the alignments' tuples (score, query_start, query_end, target_start, target_end, ops);
    ``targets``: each one's target codes. Returns one dict per alignment, as :func:`column_stats` gives.
    """
    lengths = np.array([p[5].size for p in paths], dtype=np.int64)
    if lengths.size == 0 or not lengths.all():  # an empty alignment: one at a time
        return [column_stats(p[5], q_codes, t, p[1], p[3], scoring) for p, t in zip(paths, targets)]
    first = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=first[1:])
    ops = np.concatenate([p[5] for p in paths])
    t_all = np.concatenate(list(targets))
    t_first = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum([len(t) for t in targets][:-1], out=t_first[1:])
    # Residue indices per column, each alignment counted from its own start (cumsum restarted there).
    qi = np.cumsum(ops != OP_DEL)
    ti = np.cumsum(ops != OP_INS)
    before_q = np.repeat(qi[first] - (ops[first] != OP_DEL), lengths)
    before_t = np.repeat(ti[first] - (ops[first] != OP_INS), lengths)
    qi = qi - before_q - 1 + np.repeat(np.array([p[1] for p in paths], dtype=np.int64), lengths)
    ti = ti - before_t - 1 + np.repeat(np.array([p[3] for p in paths], dtype=np.int64) + t_first, lengths)
    cols, same, positive, gap = _columns(ops, q_codes, qi, t_all, ti, scoring)
    change = np.concatenate(([True], ops[1:] != ops[:-1]))
    change[first] = True  # a gap run never continues into the next alignment
    sums = [np.add.reduceat(x.astype(np.int64), first).tolist() for x in (same, positive, gap, gap & change)]
    spans = list(zip(first.tolist(), (first + lengths).tolist()))  # slices, not np.split (its overhead: 15 us)
    return [dict(columns=cols[a:b], length=b - a, nident=i, positive=positive[a:b], npositive=npos, gaps=g,
                 gap_opens=o)
            for (a, b), i, npos, g, o in zip(spans, *sums)]


def rescore(aln: Alignment, q_codes: np.ndarray, t_codes: np.ndarray, matrix: np.ndarray,
            gap_open: int, gap_extend: int) -> int:
    """Score of the reported columns with every gap penalised (the test oracle for tracebacks)."""
    i, j, total, prev = aln.query_start, aln.target_start, 0, -1
    for op in aln.ops.tolist():
        if op == OP_MATCH:
            total += int(matrix[q_codes[i], t_codes[j]])
            i += 1
            j += 1
        elif op == OP_INS:
            total -= gap_extend if prev == OP_INS else gap_open
            i += 1
        else:
            total -= gap_extend if prev == OP_DEL else gap_open
            j += 1
        prev = op
    return total


@dataclass
class PairResult:
    """One aligned pair: indices into the query and target sets, the alignment (or score only), and
    whether it passes --min-identity (always true without it)."""

    i: int
    j: int
    aln: Alignment
    passes: bool


@dataclass
class Block:
    """The results of the pairs at positions [start, stop) of the pair order, formatted: what a worker
    sends back, and what the command line writes in order."""

    start: int
    stop: int
    text: str | bytes                  # TSV rows of the pairs that pass (columns as asked), in pair order: UTF-8
    # bytes where a compiled loop wrote them (score-only blocks over several GPUs), else str; see ``rows``
    distances: np.ndarray | None       # float32 (stop - start,): 1 - identity of each pair, or None
    reported: int                      # rows in ``text``

    @property
    def rows(self) -> str:
        """``text`` as a str."""
        return self.text if isinstance(self.text, str) else bytes(self.text).decode("utf-8")
