"""A search's own options (beside the scoring asked for and where it runs: :mod:`nwalign.plan.options`)."""

from __future__ import annotations

from dataclasses import dataclass

from nwalign.errors import NwalignError
from nwalign.names import SEARCH_MODES


@dataclass(frozen=True)
class SearchOptions:
    """A search's own options (see :class:`Search`): ``top``, ``max_evalue``, ``min_score``, ``align``,
    ``kernel``, ``strand``, ``query_source``, ``shards``, ``gpu_memory``, the alignments reported of
    each subject: ``max_hsps`` and the filters ``min_identity``, ``query_cover``, ``subject_cover``
    (:class:`nwalign.results.hsps.HspRule`), and ``mode``: ``local`` (Smith-Waterman) or ``glocal`` (the
    query whole, the subject's ends free: glsearch36's)."""

    top: int = 10
    max_evalue: float | None = None
    min_score: int | None = None
    align: bool = True
    kernel: str = "scan"
    strand: str | None = None
    query_source: str = "queries"
    shards: int | None = None
    gpu_memory: int | str | None = None
    max_hsps: int | None = None
    min_identity: float | None = None
    query_cover: float | None = None
    subject_cover: float | None = None
    mode: str = "local"

    @property
    def least_score(self) -> int:
        """The lowest raw score reported: ``min_score``, and in local mode never below 1: a local score of 0
        is no alignment (an empty one, coordinates 0), which BLAST and SSEARCH do not report either. A
        glocal alignment holds the whole query whatever its score: None (no bound) without ``min_score``."""
        if self.mode != "local":
            return None if self.min_score is None else int(self.min_score)
        return 1 if self.min_score is None else max(int(self.min_score), 1)

    def check(self) -> None:
        """Refuse what no search takes, before any input is read.

        Raises:
            NwalignError: ``top`` < 1, an unknown kernel, a negative or NaN ``max_evalue``.
        """
        if self.top < 1:
            raise NwalignError(f"top must be at least 1 (got {self.top})")
        if self.kernel not in ("scan", "gsw"):
            raise NwalignError(f"unknown search kernel {self.kernel!r} (choose from scan, gsw)")
        if self.mode not in SEARCH_MODES:
            raise NwalignError(f"search mode {self.mode!r}: choose from {', '.join(SEARCH_MODES)}",
                               cli=f"--mode {self.mode}: choose from {', '.join(SEARCH_MODES)}")
        if self.mode == "glocal" and self.kernel == "gsw":
            raise NwalignError("the gsw kernel is local only; glocal searches take the scan kernel",
                               cli="--kernel gsw is local only; glocal searches take --kernel scan")
        if self.mode == "glocal" and self.max_hsps not in (None, 1):
            raise NwalignError(f"max_hsps {self.max_hsps}: a glocal search reports one alignment a subject "
                               "(the whole query, placed once)",
                               cli=f"--max-hsps {self.max_hsps}: a glocal search reports one alignment a "
                                   "subject (the whole query, placed once)")
        self.hsp_rule(None).check()
        if self.max_evalue is not None and not self.max_evalue >= 0:  # NaN compares false: refused too
            raise NwalignError(f"max_evalue {self.max_evalue}: give an E-value >= 0",
                               cli=f"--max-evalue {self.max_evalue}: give an E-value >= 0")

    def hsp_rule(self, max_evalue: float | None):
        """The :class:`nwalign.results.hsps.HspRule` of these options with the E-value cut in force."""
        from nwalign.results.hsps import HspRule

        return HspRule(self.max_hsps, self.least_score, max_evalue, self.min_identity, self.query_cover,
                       self.subject_cover)
