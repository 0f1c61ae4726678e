"""The windowed linear-space traceback of :class:`nwalign.backends.cuda.wavefront.Wavefront`, its blocks recomputed
ahead of the walk.

Walking the path up through the checkpointed blocks one at a time leaves the GPU idle: a block's window
(a few hundred row bands, tens of thousands of columns) is one sweep of those columns by a few hundred
warps, so a 10 Mb pair's 370 blocks take about 12 ms each, 4.7 s in all (H200), a sixth of its score
pass. Here the next blocks' windows are guessed before the walk reaches them, from where the path enters
the first (known exactly) and its slope so far, widened by the block's margin on both sides, and as many
as the direction budget holds are recomputed at once on separate streams; then the walk goes through
them in order. A block whose entry column falls outside its guessed window, or whose walk reaches the
window's left edge, is recomputed over its exact window, and the guesses start again from there. The
walk over a window that holds the path is the walk over the exact window (columns right of the entry
do not change the cells left of it), so the alignment is the one-block-at-a-time walk's, which the
caller rescores as before (Wavefront.align).
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("nwalign")

STREAMS = 16  # blocks recomputed side by side at most (a block's window fills about a sixth of an H100)


def _plan(wf, order, start: int, i: int, j: int, slope: float, widen: int, room: int, most: int) -> list:
    """The blocks order[start:] to recompute now: (index, top, bottom, lo, hi), the first over its exact
    window left of column ``j``, the next ones over guessed windows, as many as ``room`` bytes of directions
    hold (at least one, at most ``most``)."""
    from nwalign.backends.cuda.wavebase import dirs_bytes

    plans, used, bottom, guess = [], 0, i, float(j)
    for k in range(start, len(order)):
        top = order[k][0]
        rows = bottom - top
        if rows <= 0:
            continue
        slack = 0 if not plans else wf._margin(rows) * widen
        hi = min(wf.n, int(round(guess)) + slack)
        lo = max(0, int(round(guess)) - wf._reach(rows, widen) - slack)
        if hi <= lo:
            break
        need = dirs_bytes(rows, hi - lo)
        if plans and (used + need > room or len(plans) >= most):
            break
        plans.append((k, top, bottom, lo, hi))
        used += need
        guess -= rows * slope
        bottom = top
        if guess <= 0:
            break
    return plans


class _Helpers:
    """Where a batch's windows are recomputed and walked: the Wavefront's GPU, and where its score passes
    are spread, the others too (each with its own copy of the sequences, a walk's state and streams); the
    walk's columns all go to ``ops`` on the first GPU (peer access)."""

    def __init__(self, wf, blocks: int):
        cp = wf.cp
        first = cp.cuda.Device().id
        views = [(first, wf)] + sorted(getattr(wf.spread, "views", {}).items())
        self.cp, self.first, self.places = cp, first, []
        for d, view in views:
            with cp.cuda.Device(d):
                streams = [cp.cuda.Stream(non_blocking=True) for _ in range(max(1, min(STREAMS, blocks)))]
                self.places.append((d, view, cp.zeros(5, dtype=cp.int32), streams))

    def launch(self, n: int, top: int, bottom: int, lo: int, hi: int, H, F):
        """Recompute a block's window on helper ``n % len``; returns its directions."""
        cp = self.cp
        d, view, _, streams = self.places[n % len(self.places)]
        stream = streams[(n // len(self.places)) % len(streams)]
        with cp.cuda.Device(d), stream:
            if d != self.first:  # the window's part of the checkpoint row, copied GPU to GPU
                H, F = H[lo:hi + 1].copy(), F[lo:hi + 1].copy()
                lo_row = 0
            else:
                lo_row = lo
            return view.launch(top, bottom, hi - lo, H[lo_row:], F[lo_row:], True, False, lo=lo)[0]

    def synchronize(self) -> None:
        for _, _, _, streams in self.places:
            for s in streams:
                s.synchronize()

    def walk(self, n: int, dirs, top: int, width: int, start, ops) -> list:
        """Walk a block's directions from ``start`` (i, j, state, nops) on the helper that recomputed it;
        returns io (i, j, state, nops, stopped)."""
        cp = self.cp
        d, view, io, _ = self.places[n % len(self.places)]
        with cp.cuda.Device(d):
            io.set(np.array([*start, 0], dtype=np.int32))
            view.trace(dirs, top, width, io, ops if d == self.first else np.uint64(ops.data.ptr))
            return [int(v) for v in io.get()]


def trace_ahead(wf, blocks, i: int, j: int, ops, widen: int, room: int):
    """Walk the path up from (i, j) through ``blocks`` [(top row, its checkpoint H, F)], each recomputed
    over a window of columns (see the module's doc), on the Wavefront's GPU and those its score passes are
    spread over; ``room``: bytes of GPU memory (each GPU's) for the directions of the blocks recomputed at
    once. Returns (i, j, columns written to ``ops``), or None when the path reached the left edge of an
    exact window below its top row (the caller widens the windows)."""
    order = [b for b in reversed(blocks) if b[0] < i]
    helpers = _Helpers(wf, len(order))
    room *= len(helpers.places)
    state, nops, stopped, k = 0, 0, 0, 0
    slope = wf.n / wf.m
    batches = missed = 0
    while k < len(order) and j > 0 and not stopped:
        plans = _plan(wf, order, k, i, j, slope, widen, room, 4 * STREAMS * len(helpers.places))
        batches += 1
        dirs = []
        for n, (b, top, bottom, lo, hi) in enumerate(plans):
            dirs.append(helpers.launch(n, top, bottom, lo, hi, order[b][1], order[b][2]))
        helpers.synchronize()
        for n, (b, top, bottom, lo, hi) in enumerate(plans):
            if i != bottom or not lo < j <= hi:  # the path enters this block outside its guessed window
                missed += 1
                break
            got = helpers.walk(n, dirs[n], top, hi - lo, (i, j - lo, state, nops), ops)
            dirs[n] = None
            if lo and got[1] == 0 and got[0] > top:  # the walk reached the window's left edge
                if n == 0:
                    return None
                missed += 1
                break  # this block again over its exact window
            if i > got[0]:
                slope = min(4.0 * wf.n / wf.m, max(0.0, (j - (got[1] + lo)) / (i - got[0])))
            i, j, state, nops, stopped = got[0], got[1] + lo, got[2], got[3], got[4]
            k = b + 1
            if j == 0 or stopped:
                break
        while k < len(order) and order[k][0] >= i:
            k += 1
    log.info("wavefront traceback: %d blocks recomputed in %d batches, %d guessed windows missed", len(order),
             batches, missed)
    return i, j, nops
