"""Score-only all-pairs rows: :class:`ScoreRows` writes the TSV rows of score columns straight from
the ids, lengths and scores (no Alignment per pair), :class:`Scored` a block scored and formatted as
it is written."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nwalign.records.alignment import Block


class ScoreRows:
    """The TSV rows of score-only columns (:data:`SCORE_COLUMNS`) for pairs and their scores, built from
    the ids, lengths and scores without an Alignment per pair: ``rows(pairs, scores)`` with pairs int
    (k, 2) indices into ``a`` and ``b`` (or ``a``), scores int64 (k,), gives the k rows as one str. A
    large batch is written by :mod:`nwalign.output.tsvrows`' compiled loop, without the GIL (tens of
    nanoseconds a row), a small one by Python's joins (a few hundred, nothing to compile)."""

    COMPILED_FROM = 4096  # rows in a batch from which the compiled loop writes them

    def __init__(self, a: list, b: list | None, columns: tuple[str, ...]):
        targets = a if b is None else b
        self.columns, self._a, self._targets = columns, a, targets
        self.text = {"qseqid": np.array([e.record.id for e in a], dtype=object),
                     "sseqid": np.array([e.record.id for e in targets], dtype=object),
                     "qlen": np.array([str(len(e.codes)) for e in a], dtype=object),
                     "slen": np.array([str(len(e.codes)) for e in targets], dtype=object)}
        self._packed = None

    def warm_up(self, pairs: int):
        """For a job of ``pairs`` pairs that will use the compiled loop: Numba's import and the loop's
        cached machine code loaded in a background thread now (0.5-0.9 s in a fresh process), beside the
        GPUs' first blocks, not when the first block is formatted. Returns that thread's Future, or None."""
        if pairs < self.COMPILED_FROM:
            return None
        from nwalign.background import in_background

        return in_background(_load_compiled)

    def __call__(self, pairs: np.ndarray, scores: np.ndarray) -> str:
        if len(pairs) >= self.COMPILED_FROM:
            return self._compiled(pairs, scores).tobytes().decode("utf-8")
        return self._joined(pairs, scores)

    def utf8(self, pairs: np.ndarray, scores: np.ndarray):
        """The same rows as UTF-8 (bytes, or a large batch's uint8 array from the compiled loop, never
        decoded: written to a binary stream without holding the GIL)."""
        if len(pairs) >= self.COMPILED_FROM:
            return self._compiled(pairs, scores)
        return self._joined(pairs, scores).encode("utf-8")

    def _joined(self, pairs: np.ndarray, scores: np.ndarray) -> str:
        fields = []
        for c in self.columns:
            if c == "score":
                fields.append(map(str, scores.tolist()))
            else:
                fields.append(self.text[c][pairs[:, 0 if c in ("qseqid", "qlen") else 1]].tolist())
        return "".join([line + "\n" for line in map("\t".join, zip(*fields))])

    def _compiled(self, pairs: np.ndarray, scores: np.ndarray) -> np.ndarray:
        from nwalign.output import tsvrows

        if self._packed is None:
            a, t = self._a, self._targets
            self._packed = (np.array([tsvrows.CODES[c] for c in self.columns], dtype=np.int64),
                            tsvrows.tables([e.record.id for e in a], [e.record.id for e in t],
                                           [len(e.codes) for e in a], [len(e.codes) for e in t]))
        codes, packed = self._packed
        return tsvrows.rows_utf8(codes, pairs, scores, packed)


def _load_compiled() -> None:
    """Import :mod:`nwalign.output.tsvrows` and run its loop once on one row (loading its cached compilation)."""
    from nwalign.output import tsvrows

    packed = tsvrows.tables(["a"], ["b"], [1], [1])
    tsvrows.rows(np.array([tsvrows.SCORE], dtype=np.int64), np.zeros((1, 2), dtype=np.int64),
                 np.zeros(1, dtype=np.int64), packed)


@dataclass
class Scored:
    """A block of a score-only job scored but not yet formatted: its (pairs, scores) batches. The blocks
    scored on this host's GPUs come back so, and are formatted as they are written (:meth:`block`), so
    that the threads that drive the GPUs only score."""

    start: int
    stop: int
    batches: list

    def block(self, rows: ScoreRows) -> Block:
        """The block with its rows as UTF-8 bytes: a 32 M-row job's gigabyte of rows decoded, joined and
        encoded again held the interpreter for seconds while four GPUs' threads waited for it."""
        text = b"".join([rows.utf8(pairs, scores) for pairs, scores in self.batches])
        return Block(self.start, self.stop, text, None, self.stop - self.start)
