"""nwalign: exact pairwise sequence alignment (Needleman-Wunsch, Smith-Waterman, semi-global).

A CPU engine in Numba runs everywhere; CUDA kernels (CuPy) are used where a GPU is present. Numba,
CuPy and Biopython load only when first needed.

The public API:

- :func:`align`: one pair of sequences -> :class:`Alignment`.
- :func:`search`: queries against a database -> ``(query, hits)`` per query (:class:`Hit`).
- :func:`allpairs`: every pair of a set (or set against set) -> ``PairResult`` per pair.
- :class:`Pairs`: the pair command's job (queries against targets, paired one-to-many or i-to-i).
- :class:`Aligner`: a scoring scheme on a backend chosen once (align one pair, many pairs one after
  another or in batches, score pairs, score one query against a database).
- :class:`Database` (FASTA or ``.nwdb``), :class:`Scoring` (made by :func:`make_scoring`),
  :func:`read_fasta`, :class:`NwalignError` (every error nwalign raises about its inputs).

>>> import nwalign
>>> nwalign.align("GATTACA", "GATCACA").cigar()
'3=1X3='
"""

__version__ = "0.1.0"

from .aligner import Aligner, Pairs  # noqa: E402
from .allvsall import AllPairs, allpairs  # noqa: E402
from .database import Database  # noqa: E402
from .engine import align  # noqa: E402
from .errors import NwalignError  # noqa: E402
from .results import Alignment  # noqa: E402
from .scoring import Scoring, make_scoring  # noqa: E402
from .dbsearch import Hit, Search, search  # noqa: E402
from .sequences import read_fasta  # noqa: E402

__all__ = ["Aligner", "AllPairs", "Pairs", "Alignment", "Database", "Hit", "NwalignError", "Scoring", "Search", "align", "allpairs",
           "make_scoring", "read_fasta", "search"]
