"""Karlin-Altschul statistics for local alignment scores: bit scores and E-values.

E = K m n exp(-lambda S) and bit score = (lambda S - ln K) / ln 2 (Karlin and Altschul 1990; Altschul
et al. 1997 for gapped alignments), with m the query length and n the total database length. Published
(lambda, K) exist only for tabulated matrix/gap combinations: the rows below are NCBI BLAST's
(``blast_stat.c``) for BLOSUM62. NCBI writes a gap of length k as a + b*k; nwalign's convention is
open + (k-1)*extend, so BLAST (a, b) is nwalign (open = a + b, extend = b). For any other combination
there are no statistics: the E-value and bit score are left empty rather than guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class KarlinAltschul:
    lam: float
    K: float
    H: float

    def bit_score(self, score: int) -> float:
        return (self.lam * score - math.log(self.K)) / math.log(2)

    def evalue(self, score: int, query_length: int, db_length: int) -> float:
        return self.K * query_length * db_length * math.exp(-self.lam * score)


# (matrix, gap_open, gap_extend) in nwalign's convention -> parameters (BLAST a/b = open-extend/extend).
PUBLISHED = {
    ("BLOSUM62", 12, 1): KarlinAltschul(0.267, 0.041, 0.14),   # BLAST 11/1
    ("BLOSUM62", 11, 1): KarlinAltschul(0.243, 0.024, 0.10),   # BLAST 10/1
    ("BLOSUM62", 13, 1): KarlinAltschul(0.283, 0.059, 0.19),   # BLAST 12/1
}


def parameters(matrix_name: str, gap_open: int, gap_extend: int) -> KarlinAltschul | None:
    """Published gapped (lambda, K, H) for this scoring, or None when none are tabulated."""
    return PUBLISHED.get((matrix_name.upper(), gap_open, gap_extend))
