"""What every job (pair, search, allpairs) does before it runs, written once: its inputs read and checked
(:func:`read_side`) and its scoring chosen from the letters of every input (:class:`ScoringRequest`), with
the same checks and messages for every command. Where a job runs: :mod:`nwalign.parallel.placement`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from nwalign.scoring.schemes import Scoring, make_scoring, max_sequence_length
from nwalign.io.sequences import Record, as_records, choose_alphabet, letter_counts, read_fasta, RESIDUE_BYTES, not_a_residue


@dataclass(frozen=True)
class ScoringRequest:
    """The scoring options of a job, as its API and command line take them (None: the defaults of the
    chosen alphabet; ``alphabet`` ``auto``: guessed from every input's letters).

    >>> request = ScoringRequest(gap_open=5, gap_extend=2)
    >>> request.make("global", [("a", as_records("ACGT"))]).gap_open
    5
    """

    alphabet: str = "auto"
    matrix: str | None = None
    match: int | None = None
    mismatch: int | None = None
    gap_open: int | None = None
    gap_extend: int | None = None

    def limit(self) -> int | None:
        """The longest sequence the scoring these options make can align (None: no scoring can be made
        from them; its error comes when it is made): inputs are refused beyond it while they are read."""
        return max_sequence_length(self.alphabet, self.matrix, self.match, self.mismatch, self.gap_open,
                                   self.gap_extend)

    def make(self, mode: str, sides: list[tuple[str, list[Record]]], counts: list | None = None,
             search: bool = False) -> Scoring:
        """The :class:`~nwalign.scoring.schemes.Scoring` of ``mode`` for inputs ``sides`` ((name, records) each;
        ``counts``: (name, letter counts, where) where the letters are counted already, as a database's,
        ``where(letter)`` giving a letter's first (record id, 1-based position); ``search``: a database
        search's defaults).

        Raises:
            NwalignError: a character that is no residue letter (naming its record and position), the inputs'
                alphabets differ, an unknown matrix or mode, bad penalties.
        """
        inputs = [(name, letter_counts(records), records) for name, records in sides] + list(counts or [])
        for name, found, records in inputs:
            _check_letters(name, found, records)
        inputs = [(name, found) for name, found, _ in inputs]
        kind = choose_alphabet(inputs, self.alphabet)
        return make_scoring(kind, mode, self.matrix, self.match, self.mismatch, self.gap_open, self.gap_extend,
                            search=search)




def _check_letters(name: str, counts: np.ndarray, records) -> None:
    """Refuse a character that is no residue letter ('-', '.', digits: an aligned FASTA, say) where it is
    (``records``: the input's records, or a function giving a letter's first record and position), rather
    than guessing the input's alphabet from it ("protein, but the other file is DNA")."""
    bad = np.flatnonzero((counts > 0) & ~RESIDUE_BYTES)
    if not bad.size:
        return
    letter = chr(int(bad[0]))
    if callable(records):  # a database: it finds the letter itself
        raise not_a_residue(name, letter, *records(letter))
    where = next(((r.id, r.seq.index(letter) + 1) for r in records or () if letter in r.seq), (None, None))
    raise not_a_residue(name, letter, *where)


def read_side(items, source: str, limit: int | None, prefix: str = "seq") -> tuple[list[Record], str]:
    """One input of a job as records, and its name for messages: a FASTA file given as a
    ``pathlib.Path`` (or any ``os.PathLike``; named by its path; a record longer than ``limit`` is
    refused while it is read), or anything :func:`nwalign.io.sequences.as_records` takes (named ``source``,
    unnamed sequences ``prefix1``, ``prefix2``...).

    Raises:
        NwalignError: an unreadable file, a bad record, an empty input.
    """
    if isinstance(items, os.PathLike):
        source = os.fspath(items)
        items = read_fasta(source, limit)
    return as_records(items, prefix), source
