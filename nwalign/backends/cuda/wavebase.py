"""What the wavefront kernel's host modules share: band geometry, the kernels' instance names, the
direction budget and the first hand-off row (:mod:`nwalign.backends.cuda.wavefront`, :mod:`nwalign.backends.cuda.wavespread`,
:mod:`nwalign.backends.cuda.wavetrace`)."""

from __future__ import annotations

import functools

STORE_R = 8  # rows per lane when directions are stored (8 nibbles in a 32-bit word)
SCORE_ROWS = (4, 6, 8, 12, 16)  # rows per lane of wave_score.cu's score passes
PACKED_ROWS = (8, 12, 16)  # rows per lane of wave_score16.cu (16-bit pairs; also 32-bit heights: its fallback)
DEFAULT_ROWS = 6  # 32-bit: measured fastest at 100k x 100k on the H100
# 16-bit: from PACKED_MIN_ROWS query rows; 12 rows per lane below 400k, 16 from there. H100 (performance.md):
# 16-bit ties 32-bit at 150k-200k and wins from 300k (1.2x), 500k (1.3x), 1M (1.5x); at 100k 32-bit is 13 % faster.
PACKED_MIN_ROWS = 250_000
LOOKAHEAD = 12  # wave_common.cuh's steps between a range check and the next
SCORE_WARPS = 4  # wave_score.cu: WAVE_WARPS, bands (warps) per block
BAND = 32 * STORE_R  # rows per band of a direction-storing launch
# Every instantiation of the two sources, named in one module each: one NVRTC compilation per source
# (a module per name compiled the whole source once per name on a fresh machine).
WINDOW_NAME = f"wave_score<0, {STORE_R}, true, true>"  # the direction-storing pass over a window of columns
# (WINDOW, the last template parameter, written out: the shipped cubins name it so.)
WAVE_SCORE_NAMES = tuple(f"wave_score<{mode}, {rows}, {store}, false>" for mode in range(4)
                          for rows, store in [(r, "false") for r in SCORE_ROWS] + [(STORE_R, "true")]) + (WINDOW_NAME,)
WAVEFRONT_NAMES = tuple(f"wavefront<{mode}, {store}, {rows}>" for mode in range(4)
                         for store, rows in (("false", 4), ("false", 8), ("false", 16), ("true", STORE_R)))
RING_BYTES = 2 << 30  # cap on the band hand-off ring
# Linear space, global mode: each block of checkpointed rows is recomputed only over a window of columns
# around where the path can cross it: from its exit column back by the block's height (scaled by n / m)
# and a margin, at least WINDOW_MARGIN or half the block's height. Blocks of about WINDOW_ROWS rows.
WINDOW_ROWS = 16384
WINDOW_MARGIN = 4096
WINDOW_WIDEN = (1, 8, 64)  # the margin's factor when a window missed the path, before whole rows
WAVE_SCORE16_NAMES = tuple(f"{kernel}<{rows // 2}>" for kernel in ("wave_score16", "wave_score16_spread")
                            for rows in PACKED_ROWS)


def dirs_bytes(rows: int, ncols: int) -> int:
    """Bytes of packed directions for ``rows`` x ``ncols`` cells (whole bands, 4 bits a cell)."""
    return -(-rows // BAND) * BAND * (ncols + 1) // 2


@functools.lru_cache(maxsize=None)
def handoff_row(cp):
    """Elementwise (H, F, go, ge) -> wave_score.cu's hand-off word of band -1 (one launch, not six)."""
    return cp.ElementwiseKernel(
        "int32 h, int32 f, int32 go, int32 ge", "uint64 w",
        "long long d = (long long)h - max((long long)h - go, (long long)f - ge);"
        "w = (unsigned long long)(unsigned)h | ((unsigned long long)(d | 0x80000000LL) << 32)",
        "nwalign_handoff_row")
