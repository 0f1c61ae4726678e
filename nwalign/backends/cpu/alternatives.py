"""Every local alignment of a pair, best first: Waterman and Eggert's non-intersecting alternatives.

Waterman, M. S. and Eggert, M. (1987) "A new algorithm for best subsequence alignments with application
to tRNA-rRNA comparisons", J. Mol. Biol. 197, 723-728; as SSEARCH's alternative alignments and LALIGN
(Huang and Miller's SIM) report them. The k-th alignment is the best local alignment that aligns no pair
of residues (i, j) aligned by the alignments before it: the Smith-Waterman recurrence of
:mod:`nwalign.backends.cpu.dp` with the diagonal step into each such cell forbidden (a gap may still
cross it). The first alignment is the plain Smith-Waterman one, with the engine's tie rules.

Each alignment costs one vectorised score pass over the matrix with its forbidden pairs (its end cell:
the first best cell in row order) and the work of its own box (:mod:`nwalign.backends.cpu.anchored`):
most pairs above an E-value cut have one alignment, and the pass that shows no second one passes the cut
is the only work added to the pair's first alignment.
"""

from __future__ import annotations

from nwalign.backends.cpu.anchored import Barred, end_cell, trace_from_end


def alternative_paths(q, t, matrix, go: int, ge: int, first: list, keep, most: int, max_memory: int = 1 << 30) -> list:
    """The alignments after ``first`` (path tuples already reported, best first) in Waterman and Eggert's
    order: each the best that aligns no residue pair of those before it, while ``keep(score)`` holds and
    fewer than ``most`` paths are known in all (``first`` included). Returns the new paths, best first.

    Arguments:
        q, t: uint8 residue codes, shapes (m,) and (n,).
        matrix: int32 substitution scores (A, A); go, ge: the gap penalties (go >= ge >= 0).
        first: path tuples (score, query_start, query_end, target_start, target_end, ops), 0-based
            half-open, ops in alignment order (0 pair, 1 query residue only, 2 target residue only).
        keep: a callable of a score: whether an alignment of that score is reported (scores only fall).
        most: the most paths in all.

    Raises:
        NwalignError: a traceback cannot fit in ``max_memory``.
    """
    barred = Barred(len(q), len(t), first)
    found: list = []
    while len(first) + len(found) < most:
        end = end_cell(q, t, matrix, go, ge, barred.by_row())
        if end.score <= 0 or not keep(end.score):
            break
        path = trace_from_end(q, t, matrix, go, ge, barred, end, max_memory)
        barred.add(path)
        found.append(path)
    return found
