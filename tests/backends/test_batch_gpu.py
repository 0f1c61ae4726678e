"""The batched GPU alignment (kernels/batch_align.cu) against the CPU engine: identical scores,
coordinates and columns for every pair, in global and local mode, at the kernel's edge sizes, with many
ties, on real proteins and DNA, and inside a search."""

import os

import numpy as np
import pytest

from nwalign.backends.cpu import align_codes
from nwalign.backends.engine import encode_all
from nwalign.scoring.schemes import make_scoring
from nwalign.io.database import database_from_records, encode_database
from nwalign.jobs.search.pipeline import search_query
from nwalign.io.sequences import read_fasta
from nwalign.results.statistics import parameters

from helpers import DATA

pytestmark = pytest.mark.gpu

BENCH20 = os.path.join(DATA, "queries_20_sw_benchmark.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")
LAMBDA = os.path.join(DATA, "phage_lambda_J02459.fasta")


def _cpu(pairs, scoring):
    return [align_codes(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend, scoring.mode_code)
            for q, t in pairs]


def _same(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g[:5] == w[:5], (k, g[:5], w[:5])
        assert np.array_equal(g[5], w[5]), k


def _mutated(rng, seq, alphabet_size, rate):
    """A relative of ``seq``: substitutions and short indels at ``rate`` per residue."""
    out = []
    for c in seq:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(rng.integers(alphabet_size))
        out.append(rng.integers(alphabet_size) if r < rate else c)
    return np.array(out or [0], dtype=np.uint8)


@pytest.mark.parametrize("mode", ["local", "global"])
@pytest.mark.parametrize("alphabet", ["protein", "dna", "dna-iupac"])
def test_random_pairs_at_edge_sizes_equal_cpu(mode, alphabet):
    from nwalign.backends.cuda.batch import BatchAligner

    rng = np.random.default_rng(11)
    scoring = make_scoring(alphabet.replace("-iupac", ""), mode)
    size = {"protein": 20, "dna": 4, "dna-iupac": 15}[alphabet]  # codes 0-3 are A, C, G, T; 4-14 ambiguity codes
    lengths = [1, 2, 7, 31, 32, 33, 255, 256, 257, 300, 513, 777]
    pairs = []
    for m in lengths:
        for n in (1, 31, 32, 33, 64, 257, 600):
            q = rng.integers(size, size=m).astype(np.uint8)
            t = _mutated(rng, q, size, 0.15)[:n] if rng.random() < 0.5 else rng.integers(size, size=n).astype(np.uint8)
            pairs.append((q, t))
    got = BatchAligner(scoring).submit(pairs).result()
    _same(got, _cpu(pairs, scoring))


@pytest.mark.parametrize("mode", ["local", "global"])
def test_ties_low_complexity_equal_cpu(mode):
    """Two-letter and repeat sequences: many equal-scoring paths, so every tie rule is exercised."""
    from nwalign.backends.cuda.batch import BatchAligner

    rng = np.random.default_rng(5)
    scoring = make_scoring("dna", mode, match=1, mismatch=-1, gap_open=1, gap_extend=1)
    pairs = []
    for _ in range(60):
        m, n = rng.integers(1, 400, size=2)
        pairs.append((rng.integers(2, size=m).astype(np.uint8), rng.integers(2, size=n).astype(np.uint8)))
    pairs.append((np.zeros(300, np.uint8), np.zeros(200, np.uint8)))
    pairs.append((np.tile(np.array([0, 1], np.uint8), 150), np.tile(np.array([1, 0], np.uint8), 170)))
    got = BatchAligner(scoring).submit(pairs).result()
    _same(got, _cpu(pairs, scoring))


@pytest.mark.parametrize("mode", ["local", "global"])
def test_scores_outside_a_byte_and_zero_gap_extend_equal_cpu(mode):
    """Substitution scores outside [-128, 127] take the kernels that read the int32 matrix per cell; a gap
    extension of 0 (go >= ge >= 0) and go == ge are edge cases of the F update."""
    from nwalign.backends.cuda.batch import BatchAligner

    rng = np.random.default_rng(21)
    for scoring in (make_scoring("dna", mode, match=300, mismatch=-200, gap_open=500, gap_extend=40),
                    make_scoring("dna", mode, match=2, mismatch=-3, gap_open=4, gap_extend=0),
                    make_scoring("dna", mode, match=2, mismatch=-3, gap_open=3, gap_extend=3)):
        pairs = []
        for m, n in [(1, 1), (5, 300), (257, 256), (400, 380), (600, 33)]:
            q = rng.integers(4, size=m).astype(np.uint8)
            pairs.append((q, _mutated(rng, q, 4, 0.2)[:n] if m > 100 else rng.integers(4, size=n).astype(np.uint8)))
        aligner = BatchAligner(scoring)
        assert aligner.func is not None
        _same(aligner.submit(pairs).result(), _cpu(pairs, scoring))


def test_real_proteins_and_dna_equal_cpu():
    from nwalign.backends.cuda.batch import BatchAligner

    scoring = make_scoring("protein", "local")
    queries = encode_all(read_fasta(BENCH20)[:6], scoring, "q")
    targets = encode_all(read_fasta(ECOLI)[:40], scoring, "t")
    pairs = [(q.codes, t.codes) for q in queries for t in targets[:8]]
    _same(BatchAligner(scoring).submit(pairs).result(), _cpu(pairs, scoring))
    dna = make_scoring("dna", "global")
    lam = encode_all(read_fasta(LAMBDA), dna, "l")[0].codes
    rng = np.random.default_rng(3)
    pairs = [(lam[:3000], _mutated(rng, lam[:3000], 4, 0.05)), (lam[10000:12500], _mutated(rng, lam[10000:12400], 4, 0.2))]
    _same(BatchAligner(dna).submit(pairs).result(), _cpu(pairs, dna))


def test_budget_splits_launches_and_falls_back_to_the_cpu():
    """A small budget: several launches, and a pair over the budget aligned by the CPU engine."""
    from nwalign.backends.cuda.batch import BatchAligner, dirs_bytes

    rng = np.random.default_rng(8)
    scoring = make_scoring("protein", "local")
    pairs = [(rng.integers(20, size=m).astype(np.uint8), rng.integers(20, size=n).astype(np.uint8))
             for m, n in [(100, 100), (600, 900), (50, 70), (300, 300), (1200, 1500)]]
    aligner = BatchAligner(scoring, max_memory=dirs_bytes(600, 900))
    assert not aligner.fits(1200, 1500) and aligner.fits(600, 900)
    batch = aligner.submit(pairs)
    assert len(batch.prepared) >= 2
    _same(batch.result(), _cpu(pairs, scoring))


def test_search_hits_aligned_on_the_gpu_equal_cpu():
    """search with the scan kernel and the batched alignment: the same hits, columns and statistics."""
    from nwalign.backends.cuda.batch import BatchAligner
    from nwalign.backends.cuda.search import ScanSearcher
    from nwalign.output.columns import hit_field as field

    scoring = make_scoring("protein", "local")
    stats = parameters(scoring)
    db = database_from_records(read_fasta(ECOLI), "db")
    codes = encode_database(db, scoring)
    gpu = ScanSearcher(codes, db.offsets, scoring)
    aligner = BatchAligner(scoring)
    cols = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send",
            "evalue", "bitscore", "cigar", "btop", "qseq", "sseq")
    for q in encode_all(read_fasta(BENCH20)[:5], scoring, "q"):
        want = [[field(h, c) for c in cols] for h in search_query(q, db, codes, scoring, stats, 10)]
        got = [[field(h, c) for c in cols] for h in search_query(q, db, codes, scoring, stats, 10, scanner=gpu,
                                                                   aligner=aligner)]
        assert got == want and len(got) == 10


@pytest.mark.parametrize("mode", ["global", "local"])
def test_allpairs_alignments_on_the_gpu_equal_cpu(tmp_path, mode):
    """allpairs with alignment columns, and with a distance matrix (every pair aligned, no band), takes
    the batched GPU alignment: rows and matrix identical to the CPU engine's, over more pairs than one
    GPU batch; semiglobal (not a batch-kernel mode) stays on the CPU engine."""
    from nwalign import allpairs
    from nwalign.backends.aligner import BATCH as GPU_BATCH
    from nwalign.cli import main

    rng = np.random.default_rng(5)
    base = "".join(rng.choice(list("ACGT"), 300))
    seqs = [base] + ["".join(ch if rng.random() > 0.1 else rng.choice(list("ACGT")) for ch in base)
                     for _ in range(91)]
    assert len(seqs) * (len(seqs) - 1) // 2 > GPU_BATCH
    cols = ("qseqid", "sseqid", "score", "pident", "length", "nident", "mismatch", "gaps")
    runs = {b: allpairs(seqs, mode=mode, columns=cols, backend=b) for b in ("cuda", "cpu")}
    rows = {b: [(r.i, r.j, r.aln.score, r.aln.cigar(), r.aln.nident, r.aln.query_start, r.aln.target_end)
                for r in run] for b, run in runs.items()}
    assert rows["cuda"] == rows["cpu"] and runs["cuda"].stats["kernel"] == "batch_align"
    fa = tmp_path / "s.fa"
    fa.write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(seqs[:12])))
    outs = {}
    for backend in ("cuda", "cpu"):
        npy = tmp_path / f"{backend}.npy"
        assert main(["allpairs", str(fa), "--mode", mode, "--backend", backend, "--columns", ",".join(cols),
                     "--matrix-out", str(npy), "-o", str(tmp_path / f"{backend}.tsv")]) == 0
        outs[backend] = ((tmp_path / f"{backend}.tsv").read_text(), np.load(npy))
    assert outs["cuda"][0] == outs["cpu"][0] and np.array_equal(outs["cuda"][1], outs["cpu"][1])
    semi = allpairs(seqs[:4], mode="semiglobal", columns=cols, backend="cuda")
    assert [r.aln.cigar() for r in semi] == [r.aln.cigar() for r in allpairs(seqs[:4], mode="semiglobal",
                                                                               columns=cols, backend="cpu")]
    assert semi.stats["kernel"] == "cpu"


@pytest.mark.parametrize("mode", ["global", "local"])
def test_pair_of_many_records_takes_the_batch_kernel(tmp_path, mode):
    """`nwalign pair` with one query and many targets: the small pairs on the batch kernel, the large one
    on the pair kernel, in plan order; the output is the CPU engine's byte for byte."""
    from nwalign.jobs.pair import Pairs
    from nwalign.cli import main

    rng = np.random.default_rng(9)
    base = "".join(rng.choice(list("ACGT"), 400))
    targets = ["".join(ch if rng.random() > 0.15 else rng.choice(list("ACGT")) for ch in base) for _ in range(40)]
    targets.insert(17, "".join(rng.choice(list("ACGT"), 12000)))  # 4.8 M cells: over BATCH_CELLS
    (tmp_path / "q.fa").write_text(f">q\n{base}\n")
    (tmp_path / "t.fa").write_text("".join(f">t{k}\n{t}\n" for k, t in enumerate(targets)))
    job = Pairs(tmp_path / "q.fa", tmp_path / "t.fa", mode=mode, backend="cuda")
    assert job.cells(17) > Pairs.BATCH_CELLS and job.aligner.batch_kernel == "batch_align"
    outs = {}
    for backend in ("cuda", "cpu"):
        out = tmp_path / f"{backend}.tsv"
        assert main(["pair", str(tmp_path / "q.fa"), str(tmp_path / "t.fa"), "--mode", mode, "--backend", backend,
                     "--format", "tsv", "--columns", "qseqid,sseqid,score,qstart,qend,sstart,send,cigar",
                     "-o", str(out)]) == 0
        outs[backend] = out.read_text()
    assert outs["cuda"] == outs["cpu"] and outs["cpu"].count("\n") >= 41


@pytest.mark.parametrize("mode", ["global", "local"])
def test_aligner_cuda_equals_cpu(mode):
    """The Aligner's five operations on the CUDA backend give the CPU backend's results (pair kernel,
    batch kernel, all-pairs kernels, and in local mode the database scan)."""
    from nwalign import Aligner

    recs = read_fasta(BENCH20)[:6]
    scoring = make_scoring("protein", mode)
    gpu, cpu = Aligner(scoring, backend="cuda"), Aligner(scoring, backend="cpu", threads=4)
    assert gpu.backend == "cuda" and gpu.batch_kernel == "batch_align"
    pairs = [(recs[i], recs[j]) for i in range(len(recs)) for j in range(len(recs))]

    def key(alns):
        return [(a.score, a.query_start, a.query_end, a.target_start, a.target_end, a.cigar()) for a in alns]
    want = key(cpu.align_batch(pairs))
    assert key(gpu.align_batch(pairs)) == want
    assert [a.score for a in gpu.align_many(pairs)] == [w[0] for w in want]
    assert gpu.align(recs[0], recs[1]).score == want[1][0]
    codes = [scoring.encode(r) for r in recs]
    got = {b: [(p.tolist(), s.tolist()) for p, s in a.score_pairs(codes)] for b, a in (("g", gpu), ("c", cpu))}
    flat = {b: ([x for p, _ in v for x in p], [x for _, s in v for x in s]) for b, v in got.items()}
    assert flat["g"] == flat["c"]
    if mode == "local":
        offsets = np.concatenate(([0], np.cumsum([len(c) for c in codes])))
        db = np.concatenate(codes)
        assert gpu.score_against(codes[2], db, offsets).tolist() == cpu.score_against(codes[2], db, offsets).tolist()
