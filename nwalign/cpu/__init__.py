"""The CPU engine (Numba): score and traceback for single pairs in linear or bounded memory."""

from .pair import align_codes, score_codes

__all__ = ["align_codes", "score_codes"]
