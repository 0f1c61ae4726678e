"""The CPU's SIMD scores (Opal through pyopal for one query against many targets; parasail's striped
kernels for one pair) equal the Numba engine's in every mode, alphabet and gap model, beyond 16-bit
scores too; where a library could differ (parasail with linear gaps or semiglobal) the engine scores."""

import numpy as np
import pytest

from nwalign.backends.cpu.allpairs import cpu_scores
from nwalign.backends.cpu.pair import score_codes
from nwalign.backends.cpu.search import cpu_scan
from nwalign.scoring.schemes import make_scoring

from helpers import seed_of

pytest.importorskip("pyopal")
GAPS = [(10, 1), (11, 1), (4, 4), (0, 0), (3, 1)]


def _random(rng, scoring, count, longest, all_codes=False):
    letters = len(scoring.alphabet) if all_codes else (4 if len(scoring.alphabet) == 15 else 20)
    return [rng.integers(0, letters, int(rng.integers(1, longest))).astype(np.uint8) for _ in range(count)]


def _engine(q, t, s):
    return score_codes(q, t, s.matrix, s.gap_open, s.gap_extend, s.mode_code)


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
@pytest.mark.parametrize("mode", ["local", "global", "semiglobal"])
@pytest.mark.parametrize("gaps", GAPS)
def test_opal_scan_equals_the_engine(alphabet, mode, gaps):
    seed = seed_of("scan", alphabet, mode, gaps)
    rng = np.random.default_rng(seed)
    s = make_scoring(alphabet, mode, gap_open=gaps[0], gap_extend=gaps[1])
    seqs = _random(rng, s, 50, 120, all_codes=True)
    offsets = np.concatenate(([0], np.cumsum([len(x) for x in seqs])))
    for q in _random(rng, s, 4, 150):
        got = cpu_scan(q, np.concatenate(seqs), offsets, s, 2)
        assert got.tolist() == [_engine(q, t, s) for t in seqs], seed


@pytest.mark.parametrize("mode", ["local", "global", "semiglobal"])
def test_scores_beyond_16_bits_stay_exact(mode):
    """Long near-identical DNA: scores near 100,000 (Opal and parasail escalate past 8 and 16 bits)."""
    from nwalign.backends.cpu.striped import striped_score

    rng = np.random.default_rng(seed_of("long", mode))
    s = make_scoring("dna", mode)
    a = rng.integers(0, 4, 20000).astype(np.uint8)
    b = a.copy()
    b[::97] = (b[::97] + 1) % 4
    seqs = [a, b, a[:300], b[5000:16000]]
    offsets = np.concatenate(([0], np.cumsum([len(x) for x in seqs])))
    want = [_engine(a, t, s) for t in seqs]
    assert max(want) == 100000 and cpu_scan(a, np.concatenate(seqs), offsets, s, 2).tolist() == want
    found = striped_score(a, b, s)
    assert found is None if mode == "semiglobal" else found == want[1]


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
@pytest.mark.parametrize("two_sets", [False, True])
def test_opal_allpairs_scores_equal_the_engine(mode, two_sets):
    rng = np.random.default_rng(seed_of("allpairs", mode, two_sets))
    s = make_scoring("dna", mode)
    seqs = _random(rng, s, 30, 200)
    others = _random(rng, s, 11, 150) if two_sets else None
    targets = others if two_sets else seqs
    for pairs, scores in cpu_scores(seqs, others, s, 2):
        assert scores.tolist() == [_engine(seqs[i], targets[j], s) for i, j in pairs.tolist()]


@pytest.mark.parametrize("alphabet", ["dna", "protein"])
@pytest.mark.parametrize("mode", ["global", "local", "semiglobal", "glocal"])
@pytest.mark.parametrize("gaps", GAPS)
def test_striped_pair_scores_equal_the_engine_or_step_aside(alphabet, mode, gaps):
    pytest.importorskip("parasail")
    from nwalign.backends.cpu.striped import striped_score

    rng = np.random.default_rng(seed_of("striped", alphabet, mode, gaps))
    s = make_scoring(alphabet, mode, gap_open=gaps[0], gap_extend=gaps[1])
    used = mode != "semiglobal" and gaps[0] > gaps[1]
    for q, t in zip(_random(rng, s, 40, 90, True), _random(rng, s, 40, 90)):
        found = striped_score(q, t, s)
        assert (found == _engine(q, t, s)) if used else found is None


def test_without_pyopal_the_engine_scans(monkeypatch):
    import builtins

    from nwalign.backends.cpu import opal

    real = builtins.__import__

    def no_pyopal(name, *args, **kwargs):
        if name == "pyopal":
            raise ImportError("no pyopal here")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pyopal)
    monkeypatch.setattr(opal, "_LAST", [])
    s = make_scoring("protein", "local")
    seqs = [s.encode_str("MKTAYIAKQRQISFVKSHFSRQ"), s.encode_str("GGGGSGGGGS")]
    offsets = np.array([0, 22, 32])
    assert opal.scorer(np.concatenate(seqs), offsets, s) is None
    assert cpu_scan(seqs[0], np.concatenate(seqs), offsets, s).tolist() == [_engine(seqs[0], t, s) for t in seqs]


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
def test_pair_scores_of_one_query_against_many_records_equal_the_engine(mode):
    """pair --score-only, one query against many targets, scored by Opal: each pair's engine score."""
    from nwalign import Pairs, align

    rng = np.random.default_rng(seed_of("pairs", mode))
    targets = ["".join(rng.choice(list("ACGTN"), int(rng.integers(1, 200)))) for _ in range(30)]
    query = "".join(rng.choice(list("ACGT"), 150))
    got = [(a.target_id, a.score) for a in Pairs(query, targets, mode=mode, backend="cpu", score_only=True)]
    want = [(f"target{k + 1}", align(query, t, mode=mode, alphabet="dna").score) for k, t in enumerate(targets)]
    assert got == want
