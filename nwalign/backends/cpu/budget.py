"""How a traceback fits a memory budget: the rows of direction bytes filled at once."""

from __future__ import annotations

import math

from nwalign.errors import NwalignError
from nwalign.ops import format_bytes


def plan_bands(m: int, n: int, max_memory: int) -> int:
    """Rows per band for the traceback: all m rows when the direction matrix fits ``max_memory`` bytes,
    else the band height that minimises direction bytes plus checkpoint rows (about sqrt(8 m)).

    Raises:
        NwalignError: even the checkpointed traceback would need more than ``max_memory``.
    """
    cols = n + 1
    if m * cols <= max_memory:
        return m
    height = max(1, int(math.sqrt(8 * m)))
    need = height * cols + (m // height + 2) * cols * 8 + 8 * cols
    if need > max_memory:
        raise NwalignError(
            f"a traceback of {m} x {n} needs at least {format_bytes(need)} even in linear space; "
            f"raise --max-memory (now {format_bytes(max_memory)})"
        )
    return height


FULL_MATRIX_BYTES = 64 << 20  # the largest direction matrix kept whole; a larger one is recomputed by bands


def rows_per_band(m: int, n: int, max_memory: int) -> int:
    """The band height of a global or semi-global traceback: the whole matrix (``m``) when its direction
    bytes fit :data:`FULL_MATRIX_BYTES` (and ``max_memory``), else checkpointed bands (about twice the
    work, memory O(n sqrt(m)): 30 MB for a 30 kb pair, not 900), within ``max_memory``.

    Raises:
        NwalignError: even the checkpointed traceback would need more than ``max_memory``.
    """
    try:
        return plan_bands(m, n, min(max_memory, FULL_MATRIX_BYTES))
    except NwalignError:
        return plan_bands(m, n, max_memory)
