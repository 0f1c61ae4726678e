"""A lane-by-lane Python emulation of kernels/banded_align.cu's sweep and traceback, to check its band
arithmetic (columns swept per band, borders, the row buffer between bands, the stored layout, the
look-ahead of the traceback) against the CPU engine's banded alignment without a GPU. Slow (pure
Python): small pairs only. It checks the emulation, not the compiled kernel: the GPU tests
(tests/test_banded_gpu.py) check that.

    python3 scripts/emulate_banded.py [--pairs 40] [--seed 1]
"""

import argparse
import math

import numpy as np

from nwalign.cpu import score_codes
from nwalign.cpu.banded import align_global_banded
from nwalign.ops import OP_DEL, OP_INS
from nwalign.scoring import make_scoring

NEG = -(1 << 30)
R, BAND_H = 8, 256


def nw_cell(hd, hu, fu, hl, el, s, go, ge):
    f_open, f_ext = hu - go, fu - ge
    flags = 0
    if f_ext > f_open:
        f, flags = f_ext, 8
    else:
        f = f_open
    e_open, e_ext = hl - go, el - ge
    if e_ext > e_open:
        e, flags = e_ext, flags | 4
    else:
        e = e_open
    h, src = hd + s, 0
    if e > h:
        h, src = e, 1
    if f > h:
        h, src = f, 2
    return src | flags, h, e, f


def border(k, inside, go, ge):
    return (-(go + (k - 1) * ge) if k > 0 else 0) if inside else NEG


def emulate(q, t, S, go, ge, lo, hi):
    """(score, path ops in alignment order) as the kernel computes them."""
    m, n = len(q), len(t)
    W = min(n, BAND_H + hi - lo)
    nbands = -(-m // BAND_H)
    dirs = np.zeros((nbands, 32, W), dtype=np.uint32)
    rowH = np.zeros(n + 1, dtype=np.int64)
    rowF = np.zeros(n + 1, dtype=np.int64)
    jprev = 0
    corner = NEG
    for b in range(nbands):
        jmin, jmax = max(1, b * BAND_H + 1 + lo), min(n, min(m, (b + 1) * BAND_H) + hi)
        c0, width = jmin - 1, jmax - jmin + 1
        H = np.zeros((32, R), dtype=np.int64)
        E = np.full((32, R), NEG, dtype=np.int64)
        diag = np.zeros(32, dtype=np.int64)
        for lane in range(32):
            row0 = b * BAND_H + lane * R
            for r in range(R):
                i = row0 + r + 1
                H[lane, r] = border(i, i <= -lo, go, ge) if c0 == 0 else NEG
            diag[lane] = border(row0, row0 <= -lo, go, ge) if c0 == 0 else (rowH[c0] if lane == 0 and b > 0 else NEG)

        def fetch(jc):
            if b == 0:
                return border(jc, jc <= hi, go, ge), NEG
            if jc <= jprev:
                return rowH[jc], rowF[jc]
            return NEG, NEG

        up_h = np.zeros(32, dtype=np.int64)
        up_f = np.full(32, NEG, dtype=np.int64)
        last_row = {}  # lane 31's bottom row per column, for the next band
        for s in range(width + 31):
            # lane k takes lane k-1's values of the previous step (shfl_up); lane 0 the row above the band
            h_in = np.roll(up_h, 1)
            f_in = np.roll(up_f, 1)
            jc = c0 + s + 1
            if jc <= jmax:
                h_in[0], f_in[0] = fetch(jc)
            new_up_h, new_up_f = up_h.copy(), up_f.copy()
            for lane in range(32):
                j = c0 + s - lane + 1
                if not (c0 < j <= jmax):
                    continue
                row0 = b * BAND_H + lane * R
                hu, fu, hd = h_in[lane], f_in[lane], diag[lane]
                word = 0
                for r in range(R):
                    i = row0 + r + 1
                    sc = S[q[i - 1], t[j - 1]] if i <= m else 0
                    d, h, e, f = nw_cell(hd, hu, fu, H[lane, r], E[lane, r], sc, go, ge)
                    if j - i < lo or j - i > hi:
                        h, e, f, d = NEG, NEG, NEG, 0
                    word |= d << (4 * r)
                    hd = H[lane, r]
                    H[lane, r], E[lane, r] = h, e
                    hu, fu = h, f
                dirs[b, lane, j - c0 - 1] = word
                new_up_h[lane], new_up_f[lane] = hu, fu
                diag[lane] = h_in[lane]
                if lane == 31:
                    last_row[j] = (hu, fu)
            up_h, up_f = new_up_h, new_up_f
        for j, (h, f) in last_row.items():
            rowH[j], rowF[j] = h, f
        jprev = jmax
        if b + 1 == nbands:
            lane, r = divmod((m - 1) % BAND_H, R)
            corner = H[lane, r]

    def band_dir(i, j):
        li = i - 1
        bb = li // BAND_H
        col = j - max(1, bb * BAND_H + 1 + lo)
        if col < 0 or col >= W:
            return 0
        return int(dirs[bb, (li // R) % 32, col] >> (4 * (li % R))) & 15

    # the traceback, one cell at a time (the warp's look-ahead only speeds this walk up)
    i, j, state, ops = m, n, 0, []
    while i > 0 and j > 0:
        d = band_dir(i, j)
        if state == 0:
            src = d & 3
            if src == 0:
                ops.append(0)
                i, j = i - 1, j - 1
            else:
                state = 1 if src == 1 else 2
        elif state == 1:
            ops.append(OP_DEL)
            j -= 1
            state = 1 if d & 4 else 0
        else:
            ops.append(OP_INS)
            i -= 1
            state = 2 if d & 8 else 0
    ops += [OP_INS] * i + [OP_DEL] * j
    return int(corner), np.array(ops[::-1], dtype=np.uint8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    sc = make_scoring("dna", "global")
    checked = 0
    for k in range(args.pairs):
        m = int(rng.choice([1, 3, 40, 255, 256, 257, 300, 520]))
        a = rng.integers(0, 4, size=m).astype(np.uint8)
        b = a.copy()
        for _ in range(int(rng.integers(0, 12))):  # substitutions and indels
            p = int(rng.integers(0, len(b) + 1))
            kind = rng.integers(3)
            if kind == 0 and p < len(b):
                b[p] = rng.integers(4)
            elif kind == 1:
                b = np.insert(b, p, rng.integers(0, 4, size=int(rng.integers(1, 5))).astype(np.uint8))
            elif len(b) > 1 and p < len(b):
                b = np.delete(b, p)
        if k % 5 == 4:
            b = rng.integers(0, 4, size=int(rng.integers(1, 400))).astype(np.uint8)
        n = len(b)
        opt = score_codes(a, b, sc.matrix, sc.gap_open, sc.gap_extend, 0)
        mid = float(rng.choice([0.6, 0.9, 0.97]))
        w_max = max(0, math.floor(((1 - mid) * (m + n) - abs(m - n)) / 2))
        w = max(0, min(int(rng.choice([1, 4, 32])), w_max))
        want = align_global_banded(a, b, sc.matrix, sc.gap_open, sc.gap_extend, opt, w_max, w_start=w)
        got = None
        while True:  # the host's doubling, as nwalign.cuda.banded does it
            lo, hi = min(0, n - m) - w, max(0, n - m) + w
            if lo <= -m and hi >= n:
                got = "whole"
                break
            score, ops = emulate(a, b, sc.matrix, sc.gap_open, sc.gap_extend, lo, hi)
            if score == opt:
                got = ops
                break
            assert score < opt, (k, score, opt)
            if w >= w_max:
                break
            w = min(max(1, 2 * w), w_max)
        if isinstance(got, str):
            continue  # the whole matrix: the CPU engine's full alignment on both sides
        if want is None:
            assert got is None, k
        else:
            assert got is not None and np.array_equal(got, want[5]), (k, m, n, lo, hi)
            checked += 1
    print(f"{args.pairs} pairs: the emulated kernel equals the CPU banded engine ({checked} paths compared)")


if __name__ == "__main__":
    main()
