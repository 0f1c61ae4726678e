"""nwalign.plan.bands: the bound on alignments that leave a band (against every alignment of tiny pairs), the
banded score-only fill, and the proof it gives on larger pairs (a proved banded score is the optimum)."""

from types import SimpleNamespace

import numpy as np
import pytest

from nwalign.plan.bands import OutsideBound, band_limits, covers, widest_band
from nwalign.backends.cpu.banded import banded_score
from nwalign.ops import columns_score
from nwalign.backends.cpu.pair import score_codes
from nwalign.scoring.schemes import make_scoring


def _alignments(m, n):
    """Every global alignment of an m x n pair as a column list (0 pair, 1 query residue, 2 target residue)."""
    if m == 0 and n == 0:
        yield []
        return
    if m and n:
        for rest in _alignments(m - 1, n - 1):
            yield [0] + rest
    if m:
        for rest in _alignments(m - 1, n):
            yield [1] + rest
    if n:
        for rest in _alignments(m, n - 1):
            yield [2] + rest


def _offsets(ops):
    i = j = 0
    out = [0]
    for op in ops:
        i += op != 2
        j += op != 1
        out.append(j - i)
    return out


def _schemes():
    dna = make_scoring("dna", "global", None, None, None, None, None)
    prot = make_scoring("protein", "global", "BLOSUM62", None, None, None, None)
    yield "dna", dna.matrix, [(10, 1), (5, 2), (3, 3)]
    yield "protein", prot.matrix, [(11, 1), (4, 4), (1, 0)]


@pytest.mark.parametrize("name,matrix,gaps", list(_schemes()), ids=lambda x: x if isinstance(x, str) else "")
def test_no_alignment_leaving_a_band_scores_above_the_bound(name, matrix, gaps):
    rng = np.random.default_rng(7)
    S = np.ascontiguousarray(matrix, dtype=np.int64)
    A = S.shape[0]
    checked = 0
    for go, ge in gaps:
        scoring = SimpleNamespace(matrix=S, gap_open=go, gap_extend=ge)
        for _ in range(40):
            m, n = (int(x) for x in rng.integers(1, 6, 2))
            q = rng.integers(0, A, m).astype(np.uint8)
            t = rng.integers(0, A, n).astype(np.uint8)
            counts = np.stack([np.bincount(q, minlength=A), np.bincount(t, minlength=A)])
            bound = OutsideBound(scoring, counts[:1], counts[1:])
            alns = [np.array(a, dtype=np.uint8) for a in _alignments(m, n)]
            scores = [columns_score(a, q, t, S, go, ge) for a in alns]
            for w in range(0, 4):
                lo, hi = band_limits(m, n, w)
                out = [s for s, a in zip(scores, alns) if any(d < lo or d > hi for d in _offsets(a))]
                inside = [s for s, a in zip(scores, alns) if all(lo <= d <= hi for d in _offsets(a))]
                ub = int(bound(np.array([0]), np.array([0]), np.array([m]), np.array([n]), np.array([w]))[0])
                assert covers(m, n, w) == (not out)
                if out:
                    assert max(out) <= ub, (name, go, ge, m, n, w)
                    checked += 1
                assert banded_score(q, t, S, go, ge, lo, hi) == max(inside)
    assert checked > 100


def _mutant(rng, q, A, rate):
    out = []
    for c in q.tolist():
        r = rng.random()
        if r < rate / 3:
            continue  # deletion
        if r < 2 * rate / 3:
            out += [c, int(rng.integers(0, A))]  # insertion after it
        elif r < rate:
            out.append(int(rng.integers(0, A)))  # substitution
        else:
            out.append(c)
    return np.array(out or [0], dtype=np.uint8)


def test_a_banded_score_at_the_bound_is_the_optimum():
    """Near-identical pairs: where the banded score reaches the bound it equals the full optimum, and the
    bound proves most pairs within a few doublings (the point of it)."""
    rng = np.random.default_rng(11)
    s = make_scoring("dna", "global", None, None, None, None, None)
    S = np.ascontiguousarray(s.matrix, dtype=np.int64)
    proved = total = 0
    for _ in range(60):
        q = rng.integers(0, 4, int(rng.integers(50, 400))).astype(np.uint8)
        q[rng.random(q.size) < 0.02] = 14  # a few ambiguity codes
        t = _mutant(rng, q, 4, float(rng.choice([0.005, 0.02, 0.1])))
        m, n = q.size, t.size
        counts = np.stack([np.bincount(q, minlength=S.shape[0]), np.bincount(t, minlength=S.shape[0])])
        bound = OutsideBound(s, counts[:1], counts[1:])
        opt = score_codes(q, t, S, s.gap_open, s.gap_extend, 0)
        for w in (4, 8, 16, 32, 64):
            lo, hi = band_limits(m, n, w)
            B = banded_score(q, t, S, s.gap_open, s.gap_extend, lo, hi)
            assert B <= opt
            ub = bound(np.array([0]), np.array([0]), np.array([m]), np.array([n]), np.array([w]))[0]
            total += 1
            if B >= ub:
                assert B == opt
                proved += 1
    assert proved > total // 4


def test_widest_band():
    assert widest_band(100, 100, 0.5) == 50
    assert widest_band(100, 110, 0.5) == 47
    assert widest_band(100, 400, 0.5) == 0
    assert covers(5, 9, 5) and not covers(5, 9, 4)


def test_compiled_columns_equal_numpy(monkeypatch):
    """results.finish: the compiled pass for long alignments gives the NumPy path's columns and counts
    (DNA with ambiguity codes, where N against N is no identity)."""
    from nwalign.records import alignment as results
    from nwalign.backends.cpu.pair import align_codes
    from nwalign.backends.engine import alignment_from_path
    from nwalign.io.sequences import Record
    from nwalign.backends.engine import Encoded

    rng = np.random.default_rng(3)
    s = make_scoring("dna", "global", None, None, None, None, None)
    for length in (50, 700, 3000):
        q = rng.integers(0, 4, length).astype(np.uint8)
        q[rng.random(length) < 0.05] = 14
        t = _mutant(rng, q, 15, 0.1)
        path = align_codes(q, t, s.matrix, s.gap_open, s.gap_extend, 0)
        enc = [Encoded(Record(f"s{k}", "", "A" * len(c)), c) for k, c in enumerate((q, t))]
        got = []
        for threshold in (0, 10**9):
            monkeypatch.setattr(results, "_COMPILED_FROM", threshold)
            got.append(alignment_from_path(enc[0], enc[1], s, path))
        a, b = got
        assert np.array_equal(a.columns, b.columns) and np.array_equal(a.positive, b.positive)
        assert (a.length, a.nident, a.npositive, a.gaps, a.gap_opens) == (b.length, b.nident, b.npositive, b.gaps,
                                                                          b.gap_opens)


def test_banded_launch_groups_within_the_budget():
    """BandedAligner's launches (host arithmetic, no GPU): longest pairs first, every pair once, no launch
    over the budget unless one pair alone exceeds it."""
    from nwalign.backends.cuda.banded import BandedAligner

    rng = np.random.default_rng(2)
    pairs = [(np.zeros(int(rng.integers(1, 500)), np.uint8), np.zeros(3, np.uint8)) for _ in range(200)]
    need = {k: int(rng.integers(1, 40)) for k in range(0, 200, 2)}
    need[10] = 500  # alone over the budget
    groups = BandedAligner._groups(SimpleNamespace(budget=100), pairs, list(need), need)
    flat = [k for g in groups for k in g]
    assert sorted(flat) == sorted(need)
    assert [len(pairs[k][0]) for k in flat] == sorted((len(pairs[k][0]) for k in need), reverse=True)
    assert all(sum(need[k] for k in g) <= 100 or len(g) == 1 for g in groups)


def test_banded_launch_sends_each_sequence_once():
    """cuda.banded._distinct (no GPU): a launch's pairs point into one concatenation of their distinct
    sequences, each stored once, at the right offsets."""
    from nwalign.backends.cuda.banded import _distinct

    a, b, c = (np.arange(k, dtype=np.uint8) for k in (3, 5, 2))
    listed = [a, b, a, c, b, b, np.arange(3, dtype=np.uint8)]  # the last equals a but is another array
    seqs, at = _distinct(listed)
    assert len(seqs) == 4 and at.tolist() == [0, 3, 0, 8, 3, 3, 10]
    joined = np.concatenate(seqs)
    assert all(np.array_equal(joined[s:s + len(x)], x) for s, x in zip(at, listed))


def test_kernel_path_from_traceback_results():
    """cuda.banded.kernel_path (host arithmetic, no GPU): columns reversed, a global path carried on to the
    origin along row 0 / column 0, and never a view of the kernel's buffer (the next launch reuses it)."""
    from nwalign.backends.cuda.banded import kernel_path

    h_ops = np.array([9, 0, 1, 2, 0, 9], dtype=np.uint8)  # walked backwards from (end_i, end_j)
    got = kernel_path([5, 4, 3, 1, 0, 4], h_ops, 1, True)
    assert got[:5] == (5, 0, 4, 0, 3) and got[5].tolist() == [1, 0, 2, 1, 0]
    got = kernel_path([5, 4, 3, 1, 0, 4], h_ops, 1, False)  # local: starts where the kernel stopped
    assert got[:5] == (5, 1, 4, 0, 3) and got[5].tolist() == [0, 2, 1, 0]
    one = kernel_path([5, 1, 1, 0, 0, 1], h_ops, 1, True)[5]
    h_ops[1] = 7
    assert one.tolist() == [0] and not np.shares_memory(one, h_ops)


def _runs_of_n(rng, codes, n_code, runs):
    """A copy of ``codes`` with ``runs`` runs of the code ``n_code`` (N), each 5-150 long."""
    out = codes.copy()
    for _ in range(runs):
        at, size = int(rng.integers(0, out.size)), int(rng.integers(5, 150))
        out[at:at + size] = n_code
    return out


@pytest.mark.parametrize("kind", ["dna", "protein"])
def test_optimal_scores_from_bands_equal_the_full_optimum(kind):
    """nwalign.plan.bands.optimal_scores (at most two banded fills a pair) gives every pair's full global
    optimum: related pairs with substitutions, indels, runs of N (the genomes whose bands the bound does
    not prove at first), unrelated pairs, length differences, tiny pairs; the second band is the
    narrowest proof_band allows."""
    from nwalign.plan.bands import optimal_scores, proof_band

    rng = np.random.default_rng(17)
    s = make_scoring(kind, "global", None, None, None, None, None)
    S = np.ascontiguousarray(s.matrix, dtype=np.int64)
    A = S.shape[0]
    letters = 4 if kind == "dna" else 20
    n_code = s.alphabet.index("N" if kind == "dna" else "X")
    seqs = []
    for _ in range(14):
        base = rng.integers(0, letters, int(rng.choice([1, 2, 30, 200, 700, 1500]))).astype(np.uint8)
        seqs.append(base)
        seqs.append(_mutant(rng, base, letters, float(rng.choice([0.002, 0.01, 0.05, 0.3]))))
        if base.size > 100:
            seqs.append(_runs_of_n(rng, _mutant(rng, base, letters, 0.005), n_code, int(rng.integers(1, 4))))
    counts = np.stack([np.bincount(c, minlength=A) for c in seqs]).astype(np.int64)
    bound = OutsideBound(s, counts)
    ij = np.array([(x, y) for x in range(len(seqs)) for y in range(x + 1, len(seqs))], dtype=np.int64)
    ij = ij[rng.permutation(len(ij))[:300]]
    i, j = ij[:, 0], ij[:, 1]
    m = np.array([seqs[x].size for x in i])
    n = np.array([seqs[x].size for x in j])
    calls = []

    def banded_scores(ks, w):
        calls.append(len(ks))
        return np.array([banded_score(seqs[i[k]], seqs[j[k]], S, s.gap_open, s.gap_extend,
                                      *band_limits(int(m[k]), int(n[k]), int(wk))) for k, wk in zip(ks, w)])

    got, w = optimal_scores(bound, i, j, m, n, banded_scores, w_first=16)
    want = [score_codes(seqs[x], seqs[y], S, s.gap_open, s.gap_extend, 0) for x, y in zip(i, j)]
    assert got.tolist() == want
    assert len(calls) <= 2 and calls[0] == len(ij)
    assert np.any(w > 16) and np.any(w <= 16)  # some pairs needed the second band, some did not
    wider = np.flatnonzero(w > 16)
    # The second band is the narrowest the bound allows for the first band's score, and no narrower band
    # would have been proof: one less half-width has a bound above that score.
    first = banded_scores(wider, np.minimum(16, np.minimum(m, n))[wider])
    assert np.array_equal(proof_band(bound, i[wider], j[wider], m[wider], n[wider], first, 17), w[wider])
    below = w[wider] - 1
    assert np.all(bound(i[wider], j[wider], m[wider], n[wider], below) > first)
    # With a floor (the identity filter's score), a pair is exact wherever its optimum reaches the floor and
    # below the floor wherever the optimum is; pairs proved below it are not filled again.
    want = np.array(want)
    floor = want + rng.choice([-40, 0, 1, 300, 10**6], size=want.size)
    calls.clear()
    low, w_low = optimal_scores(bound, i, j, m, n, banded_scores, w_first=16, floor=floor)
    reaches = want >= floor
    assert np.array_equal(low[reaches], want[reaches]) and np.all(low[~reaches] < floor[~reaches])
    assert np.sum(w_low > 16) < np.sum(w > 16) and np.all(w_low[reaches] == w[reaches])


def test_proof_band_limits():
    """proof_band: never beyond the whole matrix (where the bound is the int64 minimum), never below its
    start, and the start itself when the bound there is already low enough."""
    from nwalign.plan.bands import proof_band

    s = make_scoring("dna", "global", None, None, None, None, None)
    counts = np.array([[50, 50, 50, 50] + [0] * (s.matrix.shape[0] - 4)] * 2, dtype=np.int64)
    bound = OutsideBound(s, counts)
    one = np.array([0]), np.array([1]), np.array([200]), np.array([200])
    assert proof_band(bound, *one, np.array([-10**12]), np.array([3]))[0] == 200  # nothing but the whole matrix
    assert proof_band(bound, *one, np.array([10**12]), np.array([3]))[0] == 3  # any band
    assert proof_band(bound, *one, np.array([0]), np.array([500]))[0] == 200  # capped at min(m, n)
