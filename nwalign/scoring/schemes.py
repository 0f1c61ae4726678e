"""Scoring schemes: substitution matrix, affine gap penalties and alignment mode, plus encoding.

Gap model (Gotoh, affine): a gap of length L costs ``gap_open + (L - 1) * gap_extend``, both given as
non-negative integers, so the first gap position costs ``gap_open``. This is the convention of Biopython
(``open_gap_score=-gap_open``, ``extend_gap_score=-gap_extend``), parasail, EMBOSS and CUDASW++.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from nwalign import names
from nwalign.errors import NwalignError
from nwalign.scoring.cache import cache_dir, read_entry, write_entry
from nwalign.ops import FREE_ENDS, GLOBAL, GLOCAL, LOCAL, SEMIGLOBAL

MODES = names.MODES
MODE_CODES = {"global": GLOBAL, "local": LOCAL, "semiglobal": SEMIGLOBAL, "glocal": GLOCAL}

DEFAULTS = {
    "protein": {"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1},
    "dna": {"match": 5, "mismatch": -4, "gap_open": 10, "gap_extend": 1},
    # A nucleotide search's: blastn's +2/-3 with gaps 5 + 2k (7/2 here). With +5/-4 and gaps 10/1 the
    # local scores of unrelated sequences grow with their length (the linear phase: no E-values).
    "dna search": {"match": 2, "mismatch": -3, "gap_open": 7, "gap_extend": 2},
}
# Nucleotide codes in NCBI BLAST's order (blastna, without its gap code): the bases, then the IUPAC
# ambiguity codes, each standing for the bases listed.
NUCLEOTIDE_CODES = "ACGTRYMKWSBDHVN"
NUCLEOTIDE_BASES = {"A": "A", "C": "C", "G": "G", "T": "T", "R": "AG", "Y": "CT", "M": "AC", "K": "GT", "W": "AT",
                    "S": "CG", "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG", "N": "ACGT"}
# Rare amino acids that most matrices lack, scored as blastp scores them when the matrix has no row for
# them: U (selenocysteine) as C, O (pyrrolysine) and J (I or L) as X.
_RARE_ALIASES = {"U": "C", "O": "X", "J": "X"}
# Scores must stay far from int32 limits in every engine (the engines use -2**30 as minus infinity).
SCORE_LIMIT = 2**29
MAX_SCORE = 1_000_000  # a substitution score's magnitude, from --match/--mismatch or a matrix, stays below this


@dataclass(frozen=True)
class Scoring:
    """A complete scoring scheme.

    Attributes:
        mode: ``global`` (Needleman-Wunsch), ``local`` (Smith-Waterman) or ``semiglobal`` (end gaps free
            on both sequences, parasail's ``sg``).
        matrix: int32 array of shape (A, A), substitution scores indexed by residue code.
        alphabet: the A letters, in code order.
        gap_open, gap_extend: positive penalties; a gap of length L costs open + (L-1) * extend.
        matrix_name: a label for reports (``BLOSUM62``, ``match=5,mismatch=-4``, a file name).

    Made by :func:`make_scoring`, with each alphabet's defaults (DNA +5/-4, gaps 10/1, ambiguity codes
    scored by NCBI BLAST's rule; protein BLOSUM62, gaps 11/1):

    >>> dna = make_scoring("dna", "global")
    >>> dna.matrix_name, dna.gap_open, dna.gap_extend, dna.alphabet
    ('match=5,mismatch=-4', 10, 1, 'ACGTRYMKWSBDHVN')
    >>> int(dna.matrix[dna.alphabet.index("A"), dna.alphabet.index("N")])
    -2
    >>> protein = make_scoring("protein", "local", matrix="PAM250", gap_open=14, gap_extend=2)
    >>> protein.matrix_name, protein.mode
    ('PAM250', 'local')
    """

    mode: str
    matrix: np.ndarray
    alphabet: str
    gap_open: int
    gap_extend: int
    matrix_name: str
    _lut: np.ndarray = field(repr=False, compare=False)
    #: bool (A,): the codes whose identical pairs count as identities (nident, pident, CIGAR '='): A, C, G,
    #: T for nucleotides, every amino acid but X, B, Z, J (and U, O, scored as C and X) for protein; ambiguity
    #: codes never do (docs/scoring.md).
    identical: np.ndarray = field(repr=False, compare=False, default=None)

    @property
    def mode_code(self) -> int:
        """The engines' code of :attr:`mode` (nwalign.ops: GLOBAL .. GLOCAL, or FREE_ENDS + the ends' bits)."""
        mask = names.mode_mask(self.mode)
        return MODE_CODES[self.mode] if mask is None else FREE_ENDS + mask

    def encode(self, record, source: str = "") -> np.ndarray:
        """Encode a record's letters (anything with ``id`` and ``seq``: a
        :class:`nwalign.io.sequences.Record`) as uint8 residue codes (shape (len,), dtype uint8).

        Raises:
            NwalignError: a letter the scoring alphabet does not have (names file, record and position).
        """
        return self._encode(record.seq, record.id, source)

    def _encode(self, seq: str, name: str, source: str = "") -> np.ndarray:
        raw = np.frombuffer(seq.encode("ascii"), dtype=np.uint8)
        codes = self._lut[raw]
        bad = np.flatnonzero(codes == 255)
        if bad.size:
            pos = int(bad[0])
            where = f"{source}: " if source else ""
            raise NwalignError(
                f"{where}record {name}: letter {seq[pos]!r} at position {pos + 1} is not in "
                f"the alphabet of {self.matrix_name} ({self.alphabet})"
            )
        return codes

    def encode_bytes(self, raw: np.ndarray) -> np.ndarray:
        """Codes of upper-case ASCII letters (uint8 array); letters outside the alphabet become 255."""
        return self._lut[raw]

    def encode_str(self, seq: str) -> np.ndarray:
        """Encode a plain string (upper-cased) as residue codes; see :meth:`encode`."""
        return self._encode(seq.upper(), "sequence")

    def max_abs_score(self) -> int:
        return int(max(np.abs(self.matrix).max(), self.gap_open, self.gap_extend))

    def check_lengths(self, m: int, n: int) -> None:
        """Refuse sizes whose scores could leave the safe int32 range of the engines."""
        if (m + n + 1) * self.max_abs_score() >= SCORE_LIMIT:
            raise NwalignError(
                f"sequences of {m} and {n} residues with scores up to {self.max_abs_score()} could overflow "
                "32-bit scores; align shorter pieces"
            )


def blast_nucleotide_matrix(reward: int, penalty: int) -> np.ndarray:
    """Scores of the 15 nucleotide codes (:data:`NUCLEOTIDE_CODES` order) for match ``reward`` and
    mismatch ``penalty``, as NCBI BLAST makes them (``BlastScoreBlkNuclMatrixCreate``, blast_stat.c): for
    codes i <= j whose base sets overlap, round(((d_j - 1) * penalty + reward) / d_j), d_j the number of
    bases code j stands for, halves rounded away from zero; codes with no base in common score
    ``penalty``. With +5/-4: A/N -2, N/N -2, A/R +1, R/R +1, R/Y -4, C/B -1.

    Returns: int32 array, shape (15, 15), symmetric.
    """
    size = len(NUCLEOTIDE_CODES)
    out = np.empty((size, size), dtype=np.int32)
    for i, a in enumerate(NUCLEOTIDE_CODES):
        for j in range(i, size):
            b = NUCLEOTIDE_CODES[j]
            if set(NUCLEOTIDE_BASES[a]) & set(NUCLEOTIDE_BASES[b]):
                d = len(NUCLEOTIDE_BASES[b])
                value = ((d - 1) * penalty + reward) / d
                score = int(abs(value) + 0.5) * (1 if value >= 0 else -1)  # BLAST_Nint
            else:
                score = penalty
            out[i, j] = out[j, i] = score
    return out


#: Protein letters that stand for several amino acids or a rare one scored as X: never an identity.
AMBIGUOUS_AMINO_ACIDS = "XBZUOJ"


def _identical(alphabet: str, nucleotide: bool) -> np.ndarray:
    counted = set("ACGT") if nucleotide else set(alphabet) - set(AMBIGUOUS_AMINO_ACIDS)
    return np.array([c in counted for c in alphabet], dtype=bool)


def _lookup(alphabet: str, aliases: dict[str, str]) -> np.ndarray:
    lut = np.full(256, 255, dtype=np.uint8)
    for code, letter in enumerate(alphabet):
        lut[ord(letter)] = code
    for letter, target in aliases.items():
        if lut[ord(letter)] == 255 and target in alphabet:
            lut[ord(letter)] = alphabet.index(target)
    return lut


MATRIX_FILE_BYTES = 1 << 20  # a substitution matrix file of 30 letters is a few kB


def _check_matrix_file(path: str) -> dict[str, int]:
    """Check an NCBI-format matrix file's shape before Biopython reads it (Biopython fills a short row
    with zeros): a header of letters, then one row per letter with one score per header letter.
    Returns the line number of each row's letter.

    Raises:
        NwalignError: an unreadable or empty file, or a row with too few or too many scores (file and line).
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MATRIX_FILE_BYTES + 1)  # never more: --matrix /dev/zero grew to 11 GB
    except OSError as exc:
        raise NwalignError(f"{path}: cannot read the matrix file ({exc.strerror or exc})") from None
    if b"\x00" in raw:
        raise NwalignError(f"{path}: binary data, not a matrix file")
    if len(raw) > MATRIX_FILE_BYTES:
        raise NwalignError(f"{path}: larger than {MATRIX_FILE_BYTES >> 20} MB, not a matrix file")
    lines = [(k, line.split()) for k, line in enumerate(raw.decode("ascii", "replace").splitlines(), start=1)]
    lines = [(k, words) for k, words in lines if words and not words[0].startswith("#")]
    if not lines:
        raise NwalignError(f"{path}: empty matrix file (no header line of letters)")
    header = lines[0][1]
    rows = {}
    for k, words in lines[1:]:
        if len(words) != len(header) + 1:
            raise NwalignError(f"{path}: line {k}: row {words[0]!r} has {len(words) - 1} scores; the header names "
                               f"{len(header)} letters")
        letter = words[0].upper()
        if letter in rows:
            raise NwalignError(f"{path}: line {k}: a second row for {words[0]!r} (the first is on line {rows[letter]})")
        rows[letter] = k
    missing = [letter for letter in header if letter.upper() not in rows]
    if missing:
        raise NwalignError(f"{path}: no row for {', '.join(repr(m) for m in missing)} (the header names "
                           f"{len(header)} letters, the file has {len(rows)} rows)")
    return rows


#: The matrices blastp knows, read from NCBI's own tables (nwalign/scoring/ncbi: X, J and BLOSUM80's scale
#: as blastp scores them, which BLAST's statistics tables assume).
NCBI_MATRICES = ("BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90", "PAM30", "PAM70", "PAM250")


def _ncbi_matrix(name: str) -> tuple[np.ndarray, str, str]:
    """One of :data:`NCBI_MATRICES` from the package's copy of NCBI's table (a header of letters, then a row
    per letter; '#' lines are comments)."""
    path = os.path.join(os.path.dirname(__file__), "ncbi", name)
    with open(path) as handle:
        lines = [line.split() for line in handle if line.strip() and not line.startswith("#")]
    letters = "".join(lines[0])
    values = np.array([[int(x) for x in row[1:]] for row in lines[1:]], dtype=np.int32)
    assert "".join(row[0] for row in lines[1:]) == letters and values.shape == (len(letters),) * 2, path
    return values, letters, name


def _load_matrix(name: str) -> tuple[np.ndarray, str, str]:
    """Load a named matrix (BLAST's own tables for the names blastp knows, :data:`NCBI_MATRICES`; else
    Biopython's) or an NCBI-format file; return (int32 matrix, alphabet, label)."""
    named = not os.path.exists(name)
    if named and name.upper() in NCBI_MATRICES:
        return _ncbi_matrix(name.upper())
    if named:
        if name.upper() == "EDNAFULL":  # EMBOSS's name for NCBI's NUC.4.4
            name = "NUC.4.4"
        cached = _cached_matrix(name.upper())
        if cached is not None:
            return cached
    from Bio.Align import substitution_matrices  # here, so that commands that never score start fast

    if not named:
        rows = _check_matrix_file(name)
        try:
            mat = substitution_matrices.read(name)
        except Exception as exc:  # Biopython raises several types for malformed files
            raise NwalignError(f"{name}: not a readable substitution matrix ({exc})") from None
        label = os.path.basename(name)
        values = np.asarray(mat, dtype=np.float64)
        if values.ndim == 2 and values.shape[0] == values.shape[1] and not np.array_equal(values, values.T):
            i, j = (int(x[0]) for x in np.nonzero(values != values.T))
            a, b = mat.alphabet[i], mat.alphabet[j]
            raise NwalignError(f"{name}: line {rows.get(a, '?')}: the matrix is not symmetric: {a} against {b} scores "
                               f"{values[i, j]:g} but {b} against {a} {values[j, i]:g}")
    else:
        try:
            mat = substitution_matrices.load(name.upper())
        except (FileNotFoundError, ValueError, OSError):
            known = ", ".join(substitution_matrices.load())
            raise NwalignError(f"unknown matrix {name!r} (not a file; known names: {known})") from None
        label = name.upper()
    alphabet = "".join(mat.alphabet)
    values = np.asarray(mat, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise NwalignError(f"matrix {label}: not a square substitution matrix")
    if not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
        raise NwalignError(f"matrix {label}: scores must be integers")
    if values.size and np.abs(values).max() >= MAX_SCORE:  # as --match and --mismatch: no int32 wrap
        i, j = (int(x[0]) for x in np.nonzero(np.abs(values) >= MAX_SCORE))
        raise NwalignError(f"matrix {label}: {mat.alphabet[i]} against {mat.alphabet[j]} scores {values[i, j]:g}; "
                           f"give scores of magnitude below {MAX_SCORE}")
    if len(alphabet) != values.shape[0] or any(len(a) != 1 for a in mat.alphabet):
        raise NwalignError(f"matrix {label}: alphabet must be single letters")
    out = values.astype(np.int32), alphabet.upper(), label
    if named:  # a file of the user's is read afresh every time
        _cache_matrix(label, *out[:2])
    return out


def _matrix_cache_path(name: str) -> str | None:
    """Where Biopython's matrix ``name``, as read by :func:`_load_matrix`, is cached: the file is keyed by
    the size and modification time of Biopython's data file, so another Biopython is read afresh. None
    when Biopython has no data file of that name (Biopython itself then says what is wrong)."""
    import importlib.util

    spec = importlib.util.find_spec("Bio")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations or not name.replace(".", "").isalnum():
        return None
    source = os.path.join(list(spec.submodule_search_locations)[0], "Align", "substitution_matrices", "data", name)
    try:
        st = os.stat(source)
    except OSError:
        return None
    return os.path.join(cache_dir(), "matrices", f"{name}-{st.st_size}-{st.st_mtime_ns}.json")


def _cached_matrix(name: str) -> tuple[np.ndarray, str, str] | None:
    """Biopython's matrix ``name`` from the cache (importing Biopython takes ~0.1 s of a run's start-up),
    or None (not cached, or an entry that fails its checks: Biopython reads it again)."""
    path = _matrix_cache_path(name)
    if path is None:
        return None

    def valid(entry) -> bool:
        values = np.array(entry["values"])
        return isinstance(entry["alphabet"], str) and values.dtype.kind == "i" and \
            values.shape == (len(entry["alphabet"]), len(entry["alphabet"])) and bool((np.abs(values) < 1000).all())
    data = read_entry(path, valid)
    if data is None:
        return None
    return np.array(data["values"], dtype=np.int32), data["alphabet"], name


def _cache_matrix(name: str, values: np.ndarray, alphabet: str) -> None:
    """Keep what Biopython read for :func:`_cached_matrix`."""
    path = _matrix_cache_path(name)
    if path is not None:
        write_entry(path, {"alphabet": alphabet, "values": values.tolist()})


def max_sequence_length(alphabet: str = "auto", matrix: str | None = None, match: int | None = None,
                        mismatch: int | None = None, gap_open: int | None = None,
                        gap_extend: int | None = None) -> int | None:
    """The longest sequence that the scoring these options make (for either alphabet when ``auto``) can
    align at all (:meth:`Scoring.check_lengths` with a one-residue partner): inputs are refused beyond
    it while they are read. None when no scoring can be made (the options' own error comes later)."""
    best = None
    for kind in (("dna", "protein") if alphabet == "auto" else (alphabet,)):
        try:
            scoring = make_scoring(kind, "global", matrix, match, mismatch, gap_open, gap_extend)
        except NwalignError:
            continue
        longest = SCORE_LIMIT // max(1, scoring.max_abs_score()) - 2
        best = longest if best is None else max(best, longest)
    return best


def make_scoring(
    alphabet: str,
    mode: str = "global",
    matrix: str | None = None,
    match: int | None = None,
    mismatch: int | None = None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    search: bool = False,
) -> Scoring:
    """Build a scoring scheme with the project defaults filled in (``search``: a database search's, which
    for nucleotides are blastn's: +2/-3, gaps 7/2).

    Arguments:
        alphabet: ``dna``, ``rna`` or ``protein``.
        mode: ``global``, ``local`` or ``semiglobal``.
        matrix: a name known to ``Bio.Align.substitution_matrices.load`` or a path to an NCBI-format file;
            default BLOSUM62 for protein, and ``match``/``mismatch`` for nucleotides.
        match, mismatch: nucleotide scores for identical / different letters (default +5 / -4); only
            without ``matrix``.
        gap_open, gap_extend: non-negative penalties with gap_open >= gap_extend (defaults protein 11/1,
            nucleotides 10/1).

    Raises:
        NwalignError: unknown mode or matrix, negative penalties, extend > open, match/mismatch with a
            matrix or with protein.
    """
    if matrix is not None and not str(matrix).strip():
        raise NwalignError("matrix: give a name (BLOSUM62, PAM250, NUC.4.4, ...) or a file", cli="--matrix: give a "
                           "matrix name (BLOSUM62, PAM250, NUC.4.4, ...) or a file")
    try:
        free = names.mode_mask(mode)
    except ValueError as exc:
        raise NwalignError(f"mode {mode!r}: {exc}") from None
    if mode not in MODES and free is None:
        raise NwalignError(f"unknown mode {mode!r} (choose from {', '.join(MODES)}, or {names.FREE_ENDS_PREFIX}"
                           f"{','.join(names.FREE_ENDS)} or part of them)")
    nucleotide = alphabet in ("dna", "rna")
    defaults = DEFAULTS[("dna search" if search else "dna") if nucleotide else "protein"]
    gap_open = defaults["gap_open"] if gap_open is None else gap_open
    gap_extend = defaults["gap_extend"] if gap_extend is None else gap_extend
    for label, value in (("--gap-open", gap_open), ("--gap-extend", gap_extend)):
        if int(value) != value or value < 0:
            raise NwalignError(f"{label} must be a non-negative integer penalty, got {value}")
        if value >= 1_000_000:
            raise NwalignError(f"{label} {value} is unreasonably large (limit 999999)")
    if gap_extend > gap_open:
        # With extend > open, Gotoh's recurrence prices two adjacent gaps below one longer gap, which
        # no gap-run model describes; every engine here (and parasail, CUDASW++) assumes open >= extend.
        raise NwalignError(f"gap_extend ({gap_extend}) must not exceed gap_open ({gap_open})",
                           cli=f"--gap-extend ({gap_extend}) must not exceed --gap-open ({gap_open})")
    if matrix is not None and (match is not None or mismatch is not None):
        raise NwalignError("give either --matrix or --match/--mismatch, not both")
    if matrix is None and nucleotide:
        match = defaults["match"] if match is None else match
        mismatch = defaults["mismatch"] if mismatch is None else mismatch
        for label, value in (("--match", match), ("--mismatch", mismatch)):
            if int(value) != value or abs(value) >= MAX_SCORE:
                raise NwalignError(f"{label} {value}: give an integer score of magnitude below {MAX_SCORE}")
        # U and T share one code, so RNA aligns against DNA; X reads as N; reports print the letters as read.
        # Ambiguity codes score as NCBI BLAST scores them (blast_nucleotide_matrix).
        values = blast_nucleotide_matrix(int(match), int(mismatch))
        lut = _lookup(NUCLEOTIDE_CODES, {"U": "T", "X": "N"})
        return Scoring(mode, values, NUCLEOTIDE_CODES, int(gap_open), int(gap_extend),
                       f"match={match},mismatch={mismatch}", lut, _identical(NUCLEOTIDE_CODES, True))
    if match is not None or mismatch is not None:
        raise NwalignError("match/mismatch apply to DNA/RNA; use a matrix for protein",
                           cli="--match/--mismatch apply to DNA/RNA; use --matrix for protein")
    name = matrix or defaults["matrix"]
    values, letters, label = _load_matrix(name)
    if np.abs(values).max() >= 1_000_000:
        raise NwalignError(f"matrix {label}: scores are unreasonably large")
    aliases = dict(_RARE_ALIASES)
    if nucleotide:
        aliases = {"U": "T"}
    lut = _lookup(letters, aliases)
    # Lower-case letters in a matrix file map like upper-case ones (input is upper-cased on reading).
    return Scoring(mode, values, letters, int(gap_open), int(gap_extend), label, lut, _identical(letters, nucleotide))
