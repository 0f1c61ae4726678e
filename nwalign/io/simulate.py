"""Seeded test input: random sequences (the papers' random ACGT input), mutated copies (substitutions,
deletions, short insertions), and the command line's lengths and regions (``10k``, ``1-1M``)."""

from __future__ import annotations

import math

import numpy as np

from nwalign.errors import NwalignError
from nwalign.io.sequences import Record, detect_alphabet


def random_records(lengths: list[int], alphabet: str, seed: int | None,
                   mutate_rate: float | None = None) -> list[Record]:
    """Seeded uniform random sequences (the papers' random ACGT input), one record per length.

    With ``mutate_rate``, only the first length is drawn and the second record is a mutated copy of the
    first (see :func:`mutate`), so the pair has a meaningful alignment.

    Raises:
        NwalignError: a length below 1.
    """
    if mutate_rate is not None:
        first = random_records(lengths[:1], alphabet, seed)[0]
        letters = {"dna": "ACGT", "rna": "ACGU", "protein": "ACDEFGHIKLMNPQRSTVWY"}[alphabet]
        return [first, mutate(first, mutate_rate, None if seed is None else seed + 1, letters,
                              f"{first.id}_mut{mutate_rate:g}")]
    letters = {"dna": "ACGT", "rna": "ACGU", "protein": "ACDEFGHIKLMNPQRSTVWY"}[alphabet]
    rng = np.random.default_rng(seed)
    pool = np.frombuffer(letters.encode(), dtype=np.uint8)
    out = []
    for k, length in enumerate(lengths, start=1):
        if length < 1:
            raise NwalignError(f"--random: length {length} must be at least 1")
        seq = pool[rng.integers(0, len(pool), size=length)].tobytes().decode()
        out.append(Record(f"random{k}_len{length}", f"random {alphabet} seed={seed}", seq))
    return out


def mutate(record: Record, rate: float, seed: int | None, letters: str | None = None,
           name: str | None = None) -> Record:
    """A seeded mutated copy of a sequence: substitutions, deletions and insertions.

    Each position mutates with probability ``rate``: 80% of events substitute a different letter, 10%
    delete the position, 10% insert 1-3 random letters after it. Letters come from ``letters`` (default:
    ACGT for nucleotides, the 20 amino acids otherwise).

    Raises:
        NwalignError: ``rate`` outside [0, 1].
    """
    if not 0.0 <= rate <= 1.0:
        raise NwalignError(f"rate {rate} is not a probability between 0 and 1",
                           cli=f"--mutate/--rate: {rate} is not a probability between 0 and 1")
    if letters is None:
        letters = "ACGT" if detect_alphabet([record]) in ("dna", "rna") else "ACDEFGHIKLMNPQRSTVWY"
    rng = np.random.default_rng(seed)
    pool = np.frombuffer(letters.encode(), dtype=np.uint8)
    seq = np.frombuffer(record.seq.encode(), dtype=np.uint8).copy()
    u = rng.random(seq.size)
    substitute = u < 0.8 * rate
    delete = (u >= 0.8 * rate) & (u < 0.9 * rate)
    insert = (u >= 0.9 * rate) & (u < rate)
    new = pool[rng.integers(0, len(pool), size=int(substitute.sum()))]
    same = new == seq[substitute]  # a substitution must change the letter: take the next one in the pool
    index = np.zeros(256, dtype=np.int64)
    index[pool] = np.arange(len(pool))
    new[same] = pool[(index[new[same]] + 1) % len(pool)]
    seq[substitute] = new
    pieces, start = [], 0
    for pos in np.flatnonzero(insert | delete).tolist():
        pieces.append(seq[start:pos + 1] if insert[pos] else seq[start:pos])
        if insert[pos]:
            pieces.append(pool[rng.integers(0, len(pool), size=int(rng.integers(1, 4)))])
        start = pos + 1
    pieces.append(seq[start:])
    out = np.concatenate(pieces).tobytes().decode()
    label = name or f"{record.id}_mut{rate:g}"
    return Record(label, f"mutated from {record.id} rate={rate:g} seed={seed}", out or letters[0])


def parse_region(text: str) -> tuple[int, int]:
    """'START-END' (1-based, inclusive, k/M suffixes allowed) -> (start0, end) half-open."""
    parts = text.split("-")
    if len(parts) == 2 and parts[0].strip() == "0":
        raise NwalignError(f"--region: {text!r}: coordinates are 1-based, START is at least 1")
    try:
        start, end = (parse_lengths(part, "--region")[0] for part in parts)
    except (ValueError, NwalignError):
        raise NwalignError(f"--region: {text!r} is not START-END such as 1-1000000") from None
    if start < 1 or end < start:
        raise NwalignError(f"--region: {text!r} must have 1 <= START <= END")
    return start - 1, end


MAX_LENGTH = 10**10  # no sequence length an option may ask for reaches this (10 Gb)


def parse_lengths(text: str, option: str = "--random") -> list[int]:
    """Parse ``LEN[,LEN]`` (with optional k/M suffixes) into positive integers below :data:`MAX_LENGTH`.

    Raises:
        NwalignError: not one or two numbers, not finite, below 1 or too large (naming ``option``).
    """
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        scale = 1
        if part.endswith("k"):
            scale, part = 1_000, part[:-1]
        elif part.endswith("m"):
            scale, part = 1_000_000, part[:-1]
        try:
            number = float(part) * scale
        except ValueError:
            raise NwalignError(f"{option}: {text!r} is not LEN or LEN,LEN") from None
        if not math.isfinite(number) or not 1 <= number < MAX_LENGTH:
            raise NwalignError(f"{option}: {text!r}: lengths must be between 1 and {MAX_LENGTH:.0e}")
        out.append(int(number))
    if not 1 <= len(out) <= 2:
        raise NwalignError(f"{option}: {text!r} is not LEN or LEN,LEN")
    return out

