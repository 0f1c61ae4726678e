"""nwalign allpairs on the CPU: scores against Biopython, the identity bound, the filter, outputs, errors."""

import dataclasses
import io
import os

import numpy as np
import pytest

from nwalign.jobs.allpairs.run import identity_bound, run
from nwalign.cli import main
from nwalign.backends.engine import Encoded, align_pair, encode_all
from nwalign.scoring.schemes import make_scoring
from nwalign.io.sequences import Record, read_fasta

from helpers import DATA
from helpers import DNA, DNA_IUPAC, PROTEIN, biopython_aligner, mutate, random_seq

SIXTEEN_S = os.path.join(DATA, "16S_100_dada2.fasta.gz")


def _records(n):
    return read_fasta(SIXTEEN_S)[:n]


def test_bound_holds_for_every_alignment_reaching_the_identity():
    """score >= L whenever identity >= MID, over random and related pairs, DNA and protein."""
    rng = np.random.default_rng(11)
    checked = 0
    for alphabet, letters in (("dna", DNA), ("protein", PROTEIN)):
        scoring = make_scoring(alphabet, "global")
        for k in range(150):
            a = random_seq(rng, letters, int(rng.integers(5, 120)))
            b = mutate(rng, a, letters, rate=float(rng.uniform(0, 0.6)))
            q, t = (Encoded(Record(n, n, s), scoring.encode(Record(n, n, s))) for n, s in (("q", a), ("t", b)))
            aln = align_pair(q, t, scoring)
            for mid in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0):
                if aln.identity >= mid:
                    checked += 1
                    assert aln.score >= identity_bound(len(a), len(b), mid, scoring), (a, b, mid)
    assert checked > 200


@pytest.mark.parametrize("mid", [0.8, 0.9, 0.97])
def test_filter_never_drops_a_passing_pair(mid):
    scoring = make_scoring("dna")
    enc = encode_all(_records(24), scoring, "16S")
    unfiltered = {(r.i, r.j) for r in run(enc, None, scoring, ("qseqid", "pident"), None, threads=2)
                  if r.aln.identity >= mid}
    stats = {}
    filtered = {(r.i, r.j) for r in run(enc, None, scoring, ("qseqid", "pident"), mid, threads=2, stats=stats)
                if r.passes}
    assert filtered == unfiltered and stats["pairs"] == 24 * 23 // 2
    if mid >= 0.9:  # at 0.8 the bound (2 per column with +5/-4, 10/1) is below every 16S pair's score
        assert stats["filtered"] > 0


def test_scores_equal_biopython_on_16s():
    scoring = make_scoring("dna")
    recs = _records(8)
    enc = encode_all(recs, scoring, "16S")
    oracle = biopython_aligner("global", "dna", 10, 1)
    results = list(run(enc, None, scoring, ("qseqid", "sseqid", "score"), threads=1))
    assert len(results) == 28
    for r in results:
        assert r.aln.score == int(oracle.score(recs[r.i].seq, recs[r.j].seq))


def test_cli_tsv_against_and_matrices(capsys, tmp_path):
    src = tmp_path / "s.fa"
    other = tmp_path / "o.fa"
    recs = _records(6)
    src.write_text("".join(f">s{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    other.write_text("".join(f">o{k}\n{r.seq[50:900]}\n" for k, r in enumerate(recs[:3])))
    out = tmp_path / "out.tsv"
    phy, npy = tmp_path / "d.phy", tmp_path / "d.npy"
    assert main(["allpairs", str(src), "--columns", "qseqid,sseqid,score,pident,length,nident,mismatch,gaps,qlen,slen",
                 "--matrix-out", str(phy), "-o", str(out), "--threads", "2"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][:2] == ["s0", "s1"] and len(rows) == 15  # no header line by default, as every TSV
    for row in rows:
        length, nident, mismatch, gaps = (int(x) for x in row[4:8])
        assert nident + mismatch + gaps == length and abs(float(row[3]) - 100 * nident / length) < 0.01
    lines = phy.read_text().splitlines()
    assert lines[0] == "6" and len(lines) == 7
    dist = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    assert np.allclose(dist, dist.T) and np.all(np.diag(dist) == 0) and np.all((dist >= 0) & (dist <= 1))
    assert main(["allpairs", str(src), "--against", str(other), "--matrix-out", str(npy), "--no-header",
                 "--columns", "qseqid,sseqid,score"]) == 0
    got = np.load(npy)
    assert got.shape == (6, 3) and np.all((got >= 0) & (got <= 1))
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 18 and printed[0].startswith("s0\to0\t")
    assert main(["allpairs", str(src), "--against", str(other), "--header", "--columns", "qseqid,sseqid,score"]) == 0
    from Bio import SearchIO  # BLAST's -outfmt 7: one block of comment lines per query

    parsed = list(SearchIO.parse(io.StringIO(capsys.readouterr().out), "blast-tab", comments=True))
    assert [q.id for q in parsed] == [f"s{k}" for k in range(6)] and all(len(q) == 3 for q in parsed)


@pytest.mark.parametrize("args, message", [
    (["--columns", "qseqid,bogus"], "unknown column 'bogus'"),
    (["--min-identity", "1.5"], "between 0 and 1"),
    (["--matrix-out", "x.txt"], "must end in .phy"),
    (["--slice", "3"], "--slice"),
    (["--match", "1", "--mismatch", "-1", "--gap-open", "1", "--gap-extend", "2"], "gap-extend"),
])
def test_cli_errors(capsys, args, message):
    code = main(["allpairs", SIXTEEN_S, *args])
    out, err = capsys.readouterr()
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert out == "" or out.startswith("qseqid")  # a header at most, never a result row


def test_cli_single_sequence_is_an_error(capsys, tmp_path):
    one = tmp_path / "one.fa"
    one.write_text(">a\nACGT\n")
    assert main(["allpairs", str(one)]) == 2
    assert "at least two sequences" in capsys.readouterr().err


@pytest.mark.skipif(__import__("nwalign.backends.cuda").backends.cuda.available(), reason="a GPU is present: the no-GPU error cannot occur")
def test_cli_backend_cuda_without_gpu_is_one_line(capsys):
    assert main(["allpairs", SIXTEEN_S, "--backend", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "--backend cuda" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("n_a, n_b, size", [(1, None, 3), (2, None, 1), (7, None, 4), (5, None, 100), (3, 4, 5),
                                            (1, 1, 1), (40, None, 64)])
def test_pair_batches_cover_every_pair_once_in_order(n_a, n_b, size):
    from nwalign.plan.pairorder import pair_batches

    batches = list(pair_batches(n_a, n_b, size))
    assert all(0 < len(b) <= size and b.dtype == np.int32 and b.shape[1] == 2 for b in batches)
    got = [tuple(p) for b in batches for p in b.tolist()]
    want = [(i, j) for i in range(n_a) for j in (range(i + 1, n_a) if n_b is None else range(n_b))]
    assert got == want


def _diagonal_offsets(ops):
    step_i = np.where(ops == 2, 0, 1)
    step_j = np.where(ops == 1, 0, 1)
    offsets = np.cumsum(step_j) - np.cumsum(step_i)
    return min(0, int(offsets.min())), max(0, int(offsets.max()))


@pytest.mark.parametrize("w_start", [4, 16, 64])
def test_banded_survivors_are_optimal_and_equal_the_full_path_inside_the_band(w_start):
    """Banded alignments score the optimum; when the unbanded engine's path lies in the first band, the
    banded traceback returns exactly that path; None only when no alignment can reach the identity."""
    from nwalign.backends.cpu.banded import align_global_banded
    from nwalign.backends.cpu.pair import align_codes
    from nwalign.records.alignment import rescore

    scoring = make_scoring("dna")
    enc = encode_all(_records(12), scoring, "16S")
    same = 0
    for i in range(len(enc)):
        for j in range(i + 1, len(enc)):
            q, t = enc[i].codes, enc[j].codes
            m, n = len(q), len(t)
            full = align_codes(q, t, scoring.matrix, 10, 1, 0)
            for mid in (0.8, 0.95):
                w_max = max(0, int(np.floor(((1 - mid) * (m + n) - abs(m - n)) / 2)))
                got = align_global_banded(q, t, scoring.matrix, 10, 1, full[0], w_max, w_start=w_start)
                if got is None:  # the full alignment leaves the widest band: it cannot reach mid
                    assert align_pair(enc[i], enc[j], scoring).identity < mid
                    continue
                aln = dataclasses.replace(align_pair(enc[i], enc[j], scoring), ops=got[5], query_start=0,
                                          target_start=0)
                assert got[0] == full[0] == rescore(aln, q, t, scoring.matrix, 10, 1)
                lo, hi = _diagonal_offsets(full[5])
                w = min(w_start, w_max)
                if lo >= min(0, n - m) - w and hi <= max(0, n - m) + w:
                    same += 1
                    assert np.array_equal(got[5], full[5]), (i, j, mid)
    assert same > 10


def test_banded_rejects_a_wrong_optimum():
    from nwalign.backends.cpu.banded import align_global_banded

    scoring = make_scoring("dna")
    q = scoring.encode_str("ACGTACGTAC")
    with pytest.raises(AssertionError):
        align_global_banded(q, q, scoring.matrix, 10, 1, optimum=10, w_max=5)


def test_choose_kernel_rule():
    from nwalign.backends.cuda.allpairs import choose_kernel

    assert choose_kernel(10**6, 1500, 132) == "lazy-rscan"
    assert choose_kernel(100, 1500, 132) == "dscan" and choose_kernel(87153, 30000, 132) == "lazy-rscan"
    assert choose_kernel(100, 100, 132) == "lazy-rscan"


def test_cli_matrix_out_npy_streams_to_disk(tmp_path):
    src = tmp_path / "s.fa"
    recs = _records(5)
    src.write_text("".join(f">s{k}\n{r.seq}\n" for k, r in enumerate(recs)))
    npy = tmp_path / "d.npy"
    assert main(["allpairs", str(src), "--matrix-out", str(npy), "-o", str(tmp_path / "o.tsv")]) == 0
    dist = np.load(npy)
    assert dist.shape == (5, 5) and np.allclose(dist, dist.T) and np.all(np.diag(dist) == 0)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".") or p.endswith(".tmp")]


@pytest.mark.parametrize("mode,against,columns", [
    ("global", False, ("qseqid", "sseqid", "score")),
    ("local", False, ("score", "slen", "qseqid", "qlen", "sseqid")),
    ("semiglobal", True, ("sseqid", "qlen", "score")),
])
def test_score_blocks_write_what_format_results_writes(mode, against, columns):
    """The score-only fast path (no Alignment per pair) gives the rows of the general path, in blocks that
    cover the pair order, for a span too."""
    from nwalign.jobs.allpairs.run import score_blocks
    from nwalign.output.writers.tsv import format_results

    scoring = make_scoring("dna", mode)
    enc = encode_all(_records(14), scoring, "16S")
    a, b = (enc[:9], enc[9:]) if against else (enc, None)
    want = format_results(list(run(a, b, scoring, columns, backend="cpu")), columns, False, 0)
    stats: dict = {}
    got = list(score_blocks(a, b, scoring, columns, stats, "cpu", threads=2))
    assert "".join(g.text for g in got) == want.text and want.text.count("\n") == want.stop
    assert got[0].start == 0 and got[-1].stop == want.stop and stats["pairs"] == want.stop
    span = (3, want.stop - 2)
    part = list(score_blocks(a, b, scoring, columns, {}, "cpu", span=span))
    assert "".join(p.text for p in part) == "".join(want.text.splitlines(keepends=True)[3:want.stop - 2])


class _CpuScorer:
    """The streaming side of nwalign.backends.cuda.allpairs.AllPairsScorer on the CPU engine, for the logic above it
    without a GPU: two batches in flight (batch k comes back once batch k + 2 is queued), cells counted
    as a batch is queued, waves of 7 pairs, 1 ms of "kernel time" a batch."""

    def __init__(self, codes, scoring):
        self.codes, self.scoring = codes, scoring
        self.q_lengths = self.t_lengths = np.array([len(c) for c in codes], dtype=np.int64)
        self.cells, self.gpu_seconds, self.queued = 0, 0.0, []

    def wave(self, kernel):
        return 7

    def _scored(self, pairs):
        from nwalign.backends import cpu

        s = self.scoring
        self.gpu_seconds += 0.001
        return pairs, np.array([cpu.score_codes(self.codes[i], self.codes[j], s.matrix, s.gap_open, s.gap_extend,
                                                s.mode_code) for i, j in pairs.tolist()], dtype=np.int64)

    def stream(self, batches, kernel=None):
        from collections import deque

        pending = deque()
        for pairs in batches:
            self.cells += int((self.q_lengths[pairs[:, 0]] * self.t_lengths[pairs[:, 1]]).sum())
            self.queued.append(len(pairs))
            pending.append(pairs)
            if len(pending) > 2:
                yield self._scored(pending.popleft())
        while pending:
            yield self._scored(pending.popleft())


@pytest.mark.parametrize("against", [False, True])
def test_spans_through_one_stream_equal_each_span_scored_alone(against):
    """nwalign.backends.aligner.stream_spans (the blocks run here while GPU workers start, one stream of batches for
    all of them): each span's pairs in order, cut as a spread block is (whole waves, 3 batches or more),
    its scores those of the CPU engine, its cells and kernel time its own; spans are drawn no further
    ahead than the two batches in flight need; an empty span is refused."""
    from nwalign.backends.aligner import block_batch, stream_spans
    from nwalign.plan.pairorder import PairCells, pair_batches

    scoring = make_scoring("dna", "global")
    enc = encode_all(_records(30), scoring, "16S")
    a, b = (enc[:12], enc[12:]) if against else (enc, None)
    codes = [e.codes for e in a] + ([] if b is None else [e.codes for e in b])
    n_b = None if b is None else len(b)
    total = 12 * 18 if against else 30 * 29 // 2
    spans = [(0, 50), (50, 51), (51, 130), (130, total - 5), (total - 5, total)]
    scorer = _CpuScorer(codes, scoring)
    drawn = []

    def lazily():
        for span in spans:
            drawn.append(span)
            yield span

    along = PairCells([len(c) for c in codes[:len(a)]], None if b is None else [len(e.codes) for e in b])
    got = []
    for k, (span, batches, stats) in enumerate(stream_spans(scorer, "lazy-rscan", 40, len(a), n_b, lazily(),
                                                            len(a) if against else 0)):
        assert span == spans[k] and len(drawn) <= k + 3  # two batches in flight: (50, 51) is one
        want = list(pair_batches(len(a), n_b, block_batch(40, span[1] - span[0], 7), span))
        assert [len(p) for p, _ in batches] == [len(p) for p in want]
        pairs = np.concatenate([p for p, _ in batches])
        assert np.array_equal(pairs, np.concatenate(want))
        targets = a if b is None else b
        assert [int(x) for _, s in batches for x in s] == [
            align_pair(a[i], targets[j], scoring).score for i, j in pairs.tolist()]
        assert stats["pairs"] == span[1] - span[0] and stats["kernel"] == "lazy-rscan"
        assert stats["cells"] == along.before(span[1]) - along.before(span[0])
        assert stats["gpu_seconds"] == pytest.approx(0.001 * len(batches)) and stats["began"] <= stats["ended"]
        got.append(span)
    assert got == spans and sum(scorer.queued) == total
    with pytest.raises(ValueError, match="empty span"):
        list(stream_spans(_CpuScorer(codes, scoring), "lazy-rscan", 40, len(a), n_b, [(0, 10), (10, 10)]))


class _StandInScorer(_CpuScorer):
    """nwalign.backends.cuda.allpairs.AllPairsScorer's place taken by the CPU engine (its constructor's arguments,
    the lazy-rscan kernel, batches of 40 pairs at most)."""

    def __init__(self, codes, scoring, kernel, slice_k, tile, device):
        super().__init__(list(codes), scoring)

    def kernel_for(self, n_pairs):
        return "lazy-rscan"

    def batch_size(self, kernel):
        return 40


@pytest.mark.parametrize("against", [False, True])
def test_aligner_gpu_score_paths_give_the_cpu_scores_with_a_stand_in_scorer(against, monkeypatch):
    """Aligner.score_pairs on the GPU path (a span, or all pairs) and Aligner.score_spans (spans through one
    stream), the GPU's scorer played by the CPU engine: the pairs and scores of the CPU path, in order,
    the second set's indices shifted back."""
    import nwalign.backends.cuda.allpairs
    from nwalign.backends.aligner import Aligner

    scoring = make_scoring("dna", "global")
    codes = [e.codes for e in encode_all(_records(24), scoring, "16S")]
    seqs, others = (codes[:9], codes[9:]) if against else (codes, None)
    total = 9 * 15 if against else 24 * 23 // 2

    def joined(batches):
        batches = list(batches)
        return np.concatenate([p for p, _ in batches]).tolist(), np.concatenate([s for _, s in batches]).tolist()

    cpu = Aligner(scoring, "cpu")
    monkeypatch.setattr(nwalign.backends.cuda.allpairs, "AllPairsScorer", _StandInScorer)
    gpu = Aligner(scoring, "cpu")
    gpu.gpu = True
    for span in (None, (7, total - 11)):
        stats = {}
        assert joined(gpu.score_pairs(seqs, others, span=span, stats=stats)) == \
            joined(cpu.score_pairs(seqs, others, span=span))
        assert stats["kernel"] == "lazy-rscan" and stats["cells"] > 0
    spans = [(0, 13), (13, 90), (90, total)]
    got = list(gpu.score_spans(seqs, others, iter(spans)))
    assert [span for span, _, _ in got] == spans
    for span, batches, stats in got:
        assert joined(batches) == joined(cpu.score_pairs(seqs, others, span=span))
        assert stats["pairs"] == span[1] - span[0]


@pytest.mark.parametrize("against", [False, True])
def test_scored_blocks_on_one_gpu_format_as_the_blocks_themselves(against, monkeypatch):
    """allvsall_tasks.scored_blocks_on (the score-only blocks run here while GPU workers start): the blocks of the
    tasks drawn, in order, come back scored but not formatted (scorerows.Scored, spans inside the pair
    order) and are formatted as they are written: the same Block as block_of gives for each alone, with
    its stats (Aligner.score_spans on "GPU 1", its scorer played by the CPU engine)."""
    import nwalign.backends.aligner
    import nwalign.jobs.allpairs.tasks
    import nwalign.backends.cuda.allpairs
    from nwalign.output.scorerows import Scored, ScoreRows
    from nwalign.jobs.allpairs.tasks import PairsTask, block_of, scored_blocks_on

    scoring = make_scoring("dna", "global")
    enc = encode_all(_records(20), scoring, "16S")
    a, b = (enc[:8], enc[8:]) if against else (enc, None)
    total = 8 * 12 if against else 20 * 19 // 2
    columns = ("qseqid", "sseqid", "score", "qlen", "slen")

    class Here(nwalign.backends.aligner.Aligner):  # "GPU 1" without a GPU
        def __init__(self, scoring, backend, device, threads, announce=True):
            assert (backend, device) == ("cuda", 1)
            super().__init__(scoring, "cpu", device, threads, announce=announce)
            self.gpu = True

    tasks = [PairsTask((None, None), scoring, columns, None, False, "cuda", "auto", None, None, 1, span)
             for span in [(4, 64), (64, 70), (70, total - 3)]]
    alone = [block_of(a, b, dataclasses.replace(task, backend="cpu"), 0) for task in tasks]
    monkeypatch.setattr(nwalign.jobs.allpairs.tasks, "Aligner", Here)
    monkeypatch.setattr(nwalign.backends.cuda.allpairs, "AllPairsScorer", _StandInScorer)
    out = list(scored_blocks_on(a, b, iter(tasks), 1))
    assert list(scored_blocks_on(a, b, iter([]), 1)) == []
    rows = ScoreRows(a, b, columns)
    for task, (scored, stats), (done, done_stats) in zip(tasks, out, alone, strict=True):
        assert isinstance(scored, Scored) and (scored.start, scored.stop) == task.span
        block = scored.block(rows)
        assert isinstance(block.text, bytes)  # written to the stream's buffer as they are
        assert dataclasses.replace(block, text=block.rows) == done and done.text.count("\n") == task.span[1] - task.span[0]
        assert stats["pairs"] == done_stats["pairs"] == task.span[1] - task.span[0]
        assert stats["ran"][2:] == (os.getpid(), 1)


def test_banded_gpu_paths_are_checked_as_the_kernel_leaves_them():
    """The guard on banded GPU paths (nwalign.backends.cpu.banded.kernel_paths_scores): paths laid out as the kernel
    returns them (columns walked back from (m, n) to the border, the rest along row/column 0) are rescored
    to the CPU engine's optimum, in pieces; a path over the wrong sequence, or with a bad column, fails."""
    from nwalign.backends.cpu import align_codes
    from nwalign.backends.cpu.banded import kernel_paths_scores
    from nwalign.ops import columns_score

    rng = np.random.default_rng(8)
    for alphabet, letters in (("dna", 4), ("protein", 20)):
        s = make_scoring(alphabet, "global")
        S = np.ascontiguousarray(s.matrix, dtype=np.int64)
        seqs, lay, want = [], [], []
        for _ in range(60):
            q = rng.integers(0, letters, size=int(rng.integers(1, 60))).astype(np.uint8)
            t = rng.integers(0, letters, size=int(rng.integers(1, 60))).astype(np.uint8)
            if rng.random() < 0.3:
                t = np.concatenate((rng.integers(0, letters, 5).astype(np.uint8), q))  # a leading gap run
            ops = align_codes(q, t, s.matrix, s.gap_open, s.gap_extend, 0)[5]
            i = j = cut = 0
            for x, op in enumerate(ops):  # the last point on row or column 0: where the kernel's walk stops
                if i == 0 or j == 0:
                    cut, i0, j0 = x, i, j
                i += op != 2
                j += op != 1
            if i == 0 or j == 0:
                cut, i0, j0 = len(ops), i, j
            lay.append((len(seqs), q.size, t.size, ops[cut:][::-1].copy(), i0, j0))
            seqs += [q, t]
            want.append(align_codes(q, t, s.matrix, s.gap_open, s.gap_extend, 0)[0])
        at = np.concatenate(([0], np.cumsum([x.size for x in seqs])))
        seq = np.concatenate(seqs)
        ops = np.concatenate([x[3] for x in lay] + [np.zeros(1, np.uint8)])
        op_start = np.concatenate(([0], np.cumsum([x[3].size for x in lay])))[:-1]
        q_at, t_at = at[[x[0] for x in lay]], at[[x[0] + 1 for x in lay]]
        m, n = np.array([x[1] for x in lay]), np.array([x[2] for x in lay])
        i0, j0 = (np.array([x[k] for x in lay]) for k in (4, 5))
        nops = np.array([x[3].size for x in lay])

        def rescore(m=m, n=n, ops=ops):
            score, ok = np.zeros(len(lay), np.int64), np.zeros(len(lay), bool)
            for lo in range(0, len(lay), 7):  # in pieces, as the aligner's threads call it
                kernel_paths_scores(seq, q_at, t_at, m, n, ops, op_start, nops, i0, j0, S, s.gap_open, s.gap_extend,
                                    lo, min(len(lay), lo + 7), score, ok)
            return score, ok

        score, ok = rescore()
        assert ok.all() and score.tolist() == want
        assert score[0] == columns_score(align_codes(seqs[0], seqs[1], s.matrix, s.gap_open, s.gap_extend, 0)[5],
                                         seqs[0], seqs[1], S, s.gap_open, s.gap_extend)
        assert not rescore(n=n + 1)[1].any()  # every path one target residue short
        bad = ops.copy()
        bad[op_start[3]] = 7  # a column that is no column
        got = rescore(ops=bad)[1]
        assert not got[3] and got[np.arange(len(lay)) != 3].all()


@pytest.mark.parametrize("against", [False, True])
def test_pair_cells_of_any_span(against):
    """PairCells (the progress bar's GCUPS, --devices auto's job size): the cells of every span of the pair
    order, against a sum over its pairs."""
    from nwalign.plan.pairorder import PairCells, pair_batches

    rng = np.random.default_rng(9)
    la = rng.integers(1, 3000, size=13)
    lb = rng.integers(1, 3000, size=5) if against else None
    ij = np.concatenate(list(pair_batches(13, 5 if against else None, 7)))
    cells = la[ij[:, 0]] * (lb if against else la)[ij[:, 1]]
    along = PairCells(la, lb)
    assert along.total == int(cells.sum())
    for start in range(len(ij) + 1):
        for stop in (start, min(start + 1, len(ij)), min(start + 17, len(ij)), len(ij)):
            assert along.before(stop) - along.before(start) == int(cells[start:stop].sum())


@pytest.mark.parametrize("alphabet", ["dna", "protein", "dna-iupac"])
def test_banded_fills_agree(alphabet):
    """The anti-diagonal float32 banded fill and the row-by-row int64 one: the same banded optimum and the
    same traceback, for related and unrelated pairs, narrow to wide bands, one-residue sequences."""
    from nwalign.backends.cpu.banded import (fill_banded, fill_banded_antidiagonal, trace_banded,
                                    trace_banded_antidiagonal)

    rng = np.random.default_rng(12)
    s = make_scoring(alphabet, "global")
    letters = {"dna": DNA, "protein": PROTEIN, "dna-iupac": DNA_IUPAC}[alphabet]
    compared = 0
    for k in range(120):
        a = random_seq(rng, letters, int(rng.integers(1, 90)))
        b = mutate(rng, a, letters, rate=0.1) if k % 3 else random_seq(rng, letters, int(rng.integers(1, 90)))
        q, t = s.encode_str(a), s.encode_str(b)
        m, n = len(q), len(t)
        for w in (0, 1, 4, 16, 60):
            lo, hi = min(0, n - m) - w, max(0, n - m) + w
            dirs = np.empty((m, hi - lo + 1), dtype=np.uint8)
            want = int(fill_banded(q, t, s.matrix, s.gap_open, s.gap_extend, lo, hi, dirs))
            got, adirs, offs, ilo = fill_banded_antidiagonal(q, t, s.matrix, s.gap_open, s.gap_extend, lo, hi)
            if want < -(2**29):  # no path in the band at all (minus infinity, rounded in float32)
                assert got < -(2**29)
                continue
            assert int(got) == want, (k, w)
            ops1, ops2 = np.empty(m + n, np.uint8), np.empty(m + n, np.uint8)
            r1, r2 = trace_banded(dirs, lo, m, n, ops1), trace_banded_antidiagonal(adirs, offs, ilo, m, n, ops2)
            assert r1 == r2 and np.array_equal(ops1[:r1[2]], ops2[:r2[2]]), (k, w)
            compared += 1
    assert compared > 400


def test_long_sequences_every_pair_in_doubling_bands(monkeypatch):
    """Long sequences (median length >= BAND_FIRST_LENGTH; 16S genes made to count as long), every pair
    aligned (a distance matrix): each alignment is optimal (the full matrix's score, rescored from its
    columns), and the pairs that reach 85 % identity are exactly the rows of the --min-identity 0.85 run
    (the same doubling bands, so the same alignments)."""
    import nwalign.jobs.allpairs.job
    import nwalign.jobs.allpairs.run
    from nwalign.backends.cpu import score_codes
    from nwalign.records.alignment import rescore

    scoring = make_scoring("dna")
    enc = encode_all(read_fasta(SIXTEEN_S)[:14], scoring, "16S")
    cols = ("qseqid", "sseqid", "score", "pident", "length", "nident")
    monkeypatch.setattr(nwalign.jobs.allpairs.run, "BAND_FIRST_LENGTH", 100)
    every = list(run(enc, None, scoring, cols, need_identity_all=True, threads=2))
    assert len(every) == 14 * 13 // 2
    for r in every:
        q, t = enc[r.i].codes, enc[r.j].codes
        assert r.aln.ops is not None and r.aln.score == score_codes(q, t, scoring.matrix, 10, 1, 0)
        assert rescore(r.aln, q, t, scoring.matrix, 10, 1) == r.aln.score
    close = [(r.i, r.j, r.aln.score, r.aln.identity, r.aln.length) for r in every if r.aln.identity >= 0.85]
    filtered = [(r.i, r.j, r.aln.score, r.aln.identity, r.aln.length)
                for r in run(enc, None, scoring, cols, 0.85, threads=2) if r.passes]
    assert close == filtered and len(close) > 0


def test_identity_filter_band_first_on_the_cpu_equals_full_scores(monkeypatch):
    """The identity filter on the CPU engine with optimal scores from proved bands (the path of long
    sequences; 16S genes made to count as long) reports exactly the rows of the path that scores every
    pair in full first."""
    import nwalign.jobs.allpairs.run

    scoring = make_scoring("dna")
    enc = encode_all(read_fasta(SIXTEEN_S)[:40], scoring, "16S")
    cols = ("qseqid", "sseqid", "score", "pident", "length", "nident")

    def rows():
        return [(r.i, r.j, r.aln.score, r.aln.identity, r.aln.length, r.passes)
                for r in run(enc, None, scoring, cols, 0.9, threads=2)]
    full = rows()
    monkeypatch.setattr(nwalign.jobs.allpairs.run, "BAND_FIRST_LENGTH", 100)
    assert rows() == full and sum(r[-1] for r in full) > 5


@pytest.mark.parametrize("columns", [("qseqid", "sseqid", "score", "qlen", "slen"), ("score", "sseqid"), ("slen",)])
def test_score_rows_compiled_and_joined_write_the_same_text(columns):
    """scorerows.ScoreRows: a large batch (the compiled loop of nwalign.output.tsvrows) and a small one (Python's
    joins) give the same rows for ids with non-ASCII letters and scores of every sign and size."""
    import numpy as np

    from nwalign.backends.engine import encode_all
    from nwalign.output.scorerows import ScoreRows
    from nwalign.scoring.schemes import make_scoring
    from nwalign.io.sequences import Record

    from helpers import seed_of

    rng = np.random.default_rng(seed_of("score rows"))
    records = [Record(f"séq{k}_λ" if k % 5 == 0 else f"s{k}", "", "ACGT" * (k + 1)) for k in range(39)]
    encoded = encode_all(records, make_scoring("dna", "global"), "s")
    rows = ScoreRows(encoded, encoded[:7], columns)
    pairs = np.stack([rng.integers(0, 39, 6000), rng.integers(0, 7, 6000)], axis=1)
    scores = np.concatenate([rng.integers(-10**15, 10**15, 5990), [0, -1, 9, 10, -10, 99, 100, -999, 1, -9]])
    compiled = rows(pairs, scores)
    assert pairs.shape[0] >= rows.COMPILED_FROM
    joined = "".join(rows(pairs[k:k + 1000], scores[k:k + 1000]) for k in range(0, 6000, 1000))
    assert compiled == joined and compiled.count("\n") == 6000
    assert compiled.splitlines()[-1].split("\t")[columns.index("score")] == "-9" if "score" in columns else True


def test_score_rows_warm_up_loads_the_compiled_loop_for_large_jobs_only():
    """A job that will use the compiled rows loads it in the background at its start (a small one
    never imports Numba for it); the loop then writes what Python's joins write."""
    from nwalign.output.scorerows import ScoreRows

    encs = [Encoded(Record(f"s{k}", f"s{k}", "ACGT" * (k + 1)), np.zeros(4 * (k + 1), np.uint8)) for k in range(100)]
    rows = ScoreRows(encs, None, ("qseqid", "sseqid", "score", "qlen", "slen"))
    assert rows.warm_up(ScoreRows.COMPILED_FROM - 1) is None
    rows.warm_up(ScoreRows.COMPILED_FROM).result(timeout=120)
    pairs = np.array([(i, j) for i in range(100) for j in range(i + 1, 100)], dtype=np.int64)
    scores = np.arange(len(pairs), dtype=np.int64) - 7
    assert len(pairs) >= ScoreRows.COMPILED_FROM
    assert rows(pairs, scores) == rows(pairs[:4000], scores[:4000]) + rows(pairs[4000:], scores[4000:])


def test_phylip_rows_are_distinct_even_beside_a_name_like_a_made_one(tmp_path):
    """Twelve ids Bacteria_sample_NN cut to PHYLIP's 10 characters clash and are renamed Bacteri~NN; a
    thirteenth record really named Bacteri~12 keeps its name, and row 12 takes another: 13 distinct rows."""
    rng = np.random.default_rng(7)
    base = random_seq(rng, DNA, 60)
    ids = [f"Bacteria_sample_{k:02d}" for k in range(1, 13)] + ["Bacteri~12"]
    (tmp_path / "in.fa").write_text("".join(f">{i}\n{mutate(rng, base, DNA, 0.05)}\n" for i in ids))
    phy = tmp_path / "d.phy"
    assert main(["allpairs", str(tmp_path / "in.fa"), "--backend", "cpu", "--matrix-out", str(phy), "-o",
                 str(tmp_path / "pairs.tsv")]) == 0
    rows = [line[:10].rstrip() for line in phy.read_text().splitlines()[1:]]
    assert len(rows) == 13 and len(set(rows)) == 13 and rows[12] == "Bacteri~12"


def test_aligned_rows_start_at_once_and_a_reader_that_leaves_gives_141():
    """`allpairs` with alignment columns `| head -1` wrote its first row only once 16,384 pairs were
    aligned and then exited 0: the first block is small now (its rows go out while the next are aligned),
    and the reader's leaving ends the run with the shell's SIGPIPE status."""
    import subprocess
    import sys

    from nwalign import allpairs
    from nwalign.jobs.allpairs.job import FIRST_BLOCK_PAIRS

    sixteen = os.path.join(DATA, "16S_100_dada2.fasta.gz")
    job = allpairs(read_fasta(sixteen)[:30], backend="cpu", columns=("qseqid", "sseqid", "pident"), threads=2)
    sizes = [b.stop - b.start for b in job.blocks()]
    assert sizes[0] == FIRST_BLOCK_PAIRS and sum(sizes) == 435 and sizes == sorted(sizes[:-1]) + sizes[-1:]
    proc = subprocess.Popen([sys.executable, "-m", "nwalign", "allpairs", sixteen, "--backend", "cpu", "--columns",
                             "qseqid,sseqid,pident,length"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=os.path.dirname(DATA)))
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and first.startswith(b"16S_001\t16S_002\t") and err == b""


def test_blocks_hold_a_bounded_number_of_alignment_columns(monkeypatch):
    """AllPairs.blocks in one process: a block is cut once its alignments hold BLOCK_COLUMNS columns (long
    genomes' alignments waited 16,384 pairs at a time), and the rows are the same whatever the cuts."""
    import nwalign.jobs.allpairs.job as job_module
    from nwalign import allpairs

    records = read_fasta(os.path.join(DATA, "16S_100_dada2.fasta.gz"))[:20]
    columns = ("qseqid", "sseqid", "pident", "length")
    whole = list(allpairs(records, backend="cpu", columns=columns).blocks())
    monkeypatch.setattr(job_module, "BLOCK_COLUMNS", 3000)  # two or three 16S alignments
    cut = list(allpairs(records, backend="cpu", columns=columns).blocks())
    assert "".join(b.rows for b in cut) == "".join(b.rows for b in whole) and len(cut) > len(whole)
    assert all(b.stop - b.start <= 3 for b in cut) and sum(b.stop - b.start for b in cut) == 190
