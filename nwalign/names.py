"""The names the command line offers: modes, alphabets, backends, kernels, output formats and columns,
and defaults. Plain Python (no NumPy, no engine), so that ``nwalign --help`` loads nothing else; the
modules that implement these names import them from here."""

MODES = ("global", "local", "semiglobal", "glocal")
GPU_MODES = ("global", "local", "semiglobal")  # the modes every CUDA kernel has
PAIR_GPU_MODES = GPU_MODES + ("glocal",)  # the wavefront (pair) and all-pairs score kernels have glocal too
SEARCH_MODES = ("local", "glocal")  # search: Smith-Waterman, or the query whole in each subject
#: The ends whose residues an end-to-end alignment may leave out for free (``--free-ends``), bit by bit
#: (nwalign.ops.QUERY_START ..); a set's mode is named when it has a name (none: global, all: semiglobal,
#: the subject's two: glocal), else ``free-ends:`` and the ends, in this order.
FREE_ENDS = ("query-start", "query-end", "subject-start", "subject-end")
FREE_ENDS_PREFIX = "free-ends:"
NAMED_ENDS = {0: "global", 15: "semiglobal", 12: "glocal"}


def free_ends_mode(ends: str) -> str:
    """The mode of a comma-separated set of ``FREE_ENDS`` (``target-`` for ``subject-``; ``none``: global).

    Raises:
        ValueError: a name that is not an end.
    """
    mask = 0
    for name in (e.strip().lower() for e in ends.split(",") if e.strip()):
        name = name.replace("target-", "subject-")
        if name == "none":
            continue
        if name not in FREE_ENDS:
            raise ValueError(f"{name!r} is not an end (choose from {', '.join(FREE_ENDS)}, or none)")
        mask |= 1 << FREE_ENDS.index(name)
    return NAMED_ENDS.get(mask) or FREE_ENDS_PREFIX + ",".join(e for k, e in enumerate(FREE_ENDS) if mask >> k & 1)


def mode_mask(mode: str) -> int | None:
    """The free-ends bits of a ``free-ends:`` mode (None for another mode).

    Raises:
        ValueError: an end that is not one of ``FREE_ENDS``.
    """
    if not mode.startswith(FREE_ENDS_PREFIX):
        return None
    mask = 0
    for name in mode[len(FREE_ENDS_PREFIX):].split(","):
        if name not in FREE_ENDS:
            raise ValueError(f"{name!r} is not an end (choose from {', '.join(FREE_ENDS)})")
        mask |= 1 << FREE_ENDS.index(name)
    return mask
ALPHABETS = ("dna", "rna", "protein")
BACKENDS = ("auto", "cuda", "cpu")
DEFAULT_MAX_MEMORY = 4 << 30  # bytes of traceback memory per pair before the linear-space traceback

#: GPU pair kernels (nwalign.backends.cuda) and allpairs' batched score kernels (nwalign.backends.cuda.allpairs).
PAIR_KERNELS = ("wavefront", "diagonal-block", "antidiagonal", "antidiagonal-multi", "antidiagonal-coop",
                "adm-submatrix", "skewed-lockfree")
DEFAULT_KERNEL = "wavefront"
ALLPAIRS_KERNELS = ("lazy-rscan", "rscan", "dscan", "tiled-dscan")
ALLPAIRS_SLICES = (2, 4, 8, 16, 32)  # lazy-rscan slice heights (query rows per thread, in registers)
ALLPAIRS_DEFAULT_SLICE = 32

#: Output formats of ``pair``; those that need the alignment's columns, not only its score.
FORMATS = ("pair", "sam", "json", "tsv", "fasta")  # pair's; search writes xml too
NEEDS_ALIGNMENT = ("sam", "fasta", "xml")
#: pair's TSV columns (the default) and those known from the score alone: BLAST's names, as every command's.
TSV_COLUMNS = ("qseqid", "sseqid", "mode", "score", "qstart", "qend", "sstart", "send", "length", "pident", "ppos",
               "gaps", "cigar")
TSV_SCORE_COLUMNS = ("qseqid", "sseqid", "mode", "score")

#: Every TSV column (BLAST's tabular names, and ``mode``, the alignment mode)
#: and whether its value needs the alignment's columns rather than the score alone; nwalign.output.columns.COLUMNS
#: computes the values.
COLUMN_NEEDS_ALIGNMENT = {
    "qseqid": False, "sseqid": False, "pident": True, "length": True, "mismatch": True, "gapopen": True,
    "qstart": True, "qend": True, "sstart": True, "send": True, "evalue": False, "bitscore": False,
    "score": False, "qlen": False, "slen": False, "nident": True, "gaps": True, "cigar": True, "qseq": True,
    "sseq": True, "ppos": True, "qcovs": True, "stitle": False, "btop": True, "mode": False,
    "sstrand": False, "qcovhsp": True, "fident": True, "scovhsp": True, "positive": True,
}
#: The pair report's earlier names, accepted everywhere for the same values (``identity`` and ``similarity``
#: were fractions before version 0.2; they now give pident and ppos, percentages, as every command does).
ALIASES = {"query_id": "qseqid", "target_id": "sseqid", "query_start": "qstart", "query_end": "qend",
           "target_start": "sstart", "target_end": "send", "query_length": "qlen", "target_length": "slen",
           "identity": "pident", "similarity": "ppos"}


def needs_alignment(column: str) -> bool:
    """Whether a column of :data:`COLUMN_NEEDS_ALIGNMENT` (or an alias) needs the alignment, not only its
    score. Raises KeyError for an unknown column."""
    return COLUMN_NEEDS_ALIGNMENT[ALIASES.get(column, column)]


#: allpairs' columns and its default ones.
ALLPAIRS_COLUMNS = ("qseqid", "sseqid", "score", "pident", "length", "nident", "mismatch", "gaps", "qlen", "slen")
ALLPAIRS_DEFAULT_COLUMNS = ("qseqid", "sseqid", "score", "pident", "length")

#: search's columns: BLAST's 12 (the default), --format json's fields, every column it offers, and those
#: known from the scan alone (a search that writes only these aligns nothing).
SEARCH_BLAST_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart",
                        "send", "evalue", "bitscore")
SEARCH_JSON_COLUMNS = SEARCH_BLAST_COLUMNS + ("score", "qlen", "slen", "nident", "gaps", "cigar")
SEARCH_COLUMNS = SEARCH_JSON_COLUMNS + ("qseq", "sseq", "ppos", "qcovs", "stitle", "btop", "sstrand", "qcovhsp",
                                        "fident", "scovhsp", "positive")
SEARCH_SCORE_COLUMNS = tuple(c for c in SEARCH_COLUMNS if not needs_alignment(c))
