"""The CPU engine (Numba): score and traceback for single pairs in linear or bounded memory."""

__all__ = ["align_codes", "score_codes"]


def __getattr__(name):
    # Numba (and its compilation cache) loads only when an engine function is first used, so that
    # commands and --help that do not align start fast.
    if name in __all__:
        from nwalign.backends.cpu import pair

        return getattr(pair, name)
    raise AttributeError(name)
