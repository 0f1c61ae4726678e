"""nwalign: exact pairwise sequence alignment (Needleman-Wunsch, Smith-Waterman, semi-global).

A CPU engine in Numba runs everywhere; CUDA kernels (CuPy) are used where a GPU is present.
"""

__version__ = "0.1.0"
