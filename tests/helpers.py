"""Shared test helpers: Biopython's aligner as the oracle, random sequences."""

from Bio import Align
from Bio.Align import substitution_matrices

DNA = "ACGT"
# DNA with IUPAC ambiguity codes (about one letter in three), for the BLAST ambiguity rule.
DNA_IUPAC = "ACGT" * 6 + "RYMKWSBDHVN"
PROTEIN = "ACDEFGHIKLMNPQRSTVWY"


def biopython_aligner(mode, alphabet, gap_open, gap_extend, match=5, mismatch=-4, matrix="BLOSUM62"):
    """PairwiseAligner with nwalign's conventions (gap of length L costs open + (L-1) * extend)."""
    aligner = Align.PairwiseAligner()
    aligner.mode = "local" if mode == "local" else "global"
    if alphabet == "protein":
        aligner.substitution_matrix = substitution_matrices.load(matrix)
    else:
        # nwalign's nucleotide table: match/mismatch on A, C, G, T; ambiguity codes as NCBI BLAST scores them
        # (its values are checked against BLAST's rule and parasail in test_scoring.py).
        from nwalign.scoring.schemes import NUCLEOTIDE_CODES, blast_nucleotide_matrix

        aligner.substitution_matrix = substitution_matrices.Array(
            alphabet=NUCLEOTIDE_CODES, dims=2, data=blast_nucleotide_matrix(match, mismatch).astype(float))
    aligner.open_gap_score = -gap_open
    aligner.extend_gap_score = -gap_extend
    if mode == "semiglobal":
        aligner.end_gap_score = 0
    return aligner


def random_seq(rng, letters, length):
    return "".join(rng.choice(list(letters), size=length))


def mutate(rng, seq, letters, rate=0.1):
    """Substitutions and short indels, so alignments have gaps worth finding."""
    out = []
    for ch in seq:
        r = rng.random()
        if r < rate / 3:
            out.append(rng.choice(list(letters)))
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out.append(ch + random_seq(rng, letters, int(rng.integers(1, 4))))
        else:
            out.append(ch)
    return "".join(out) or letters[0]
