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

__version__ = "0.2.0"

# The API is imported on first use (PEP 562): ``python -m nwalign`` starts its GPU warm-up
# (nwalign.launch) before NumPy and the engines load.
_API = {"Aligner": "backends.aligner", "Pairs": "jobs.pair", "AllPairs": "jobs.allpairs.job",
        "allpairs": "jobs.allpairs.job", "Database": "io.database", "align": "backends.engine",
        "NwalignError": "errors", "Alignment": "records.alignment", "Scoring": "scoring.schemes",
        "make_scoring": "scoring.schemes", "Hit": "results.hits", "Search": "jobs.search.job",
        "search": "jobs.search.job", "read_fasta": "io.sequences"}

__all__ = ["Aligner", "AllPairs", "Pairs", "Alignment", "Database", "Hit", "NwalignError", "Scoring", "Search", "align", "allpairs",
           "make_scoring", "read_fasta", "search"]


def __getattr__(name: str):
    if name in _API:
        import importlib

        value = getattr(importlib.import_module(f".{_API[name]}", __name__), name)
        globals()[name] = value  # later reads find it directly
        return value
    raise AttributeError(f"module 'nwalign' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
