"""search --mode glocal: the whole query placed in each subject (glsearch36's), on the CPU and the GPU,
with E-values fitted per query to the database's own scores."""

import json
import os

import numpy as np
import pytest

from nwalign import align
from nwalign.backends.engine import encode_all
from nwalign.cli import main
from nwalign.io.database import database_from_records, encode_database
from nwalign.io.sequences import Record, read_fasta
from nwalign.jobs.search.job import Search
from nwalign.results.glocalstats import GlocalStatistics, fit_placements
from nwalign.scoring.schemes import make_scoring

from helpers import DATA, DNA, DNA_IUPAC, PROTEIN, random_seq, mutate

OPAL = os.path.join(DATA, "queries_5_opal.fasta")
SP196 = os.path.join(DATA, "swissprot_first196.fasta")
ECOLI = os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz")


def _random_db(rng, letters, lengths, prefix="r"):
    return [Record(f"{prefix}{k}", "", random_seq(rng, letters, int(n))) for k, n in enumerate(lengths)]


def _tsv(capsys, args):
    assert main(args) == 0
    return [line.split("\t") for line in capsys.readouterr().out.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("alphabet", ["protein", "dna"])
def test_cpu_scan_scores_equal_the_pair_engine(alphabet):
    """The CPU scan's glocal scores (Opal's hw) equal nwalign.align(mode="glocal") for random subjects
    shorter and longer than the query, related and not."""
    from nwalign.backends.cpu.search import cpu_scan

    rng = np.random.default_rng(4 if alphabet == "dna" else 5)
    letters = DNA if alphabet == "dna" else PROTEIN
    scoring = make_scoring(alphabet, "glocal", search=True)
    query = random_seq(rng, letters, 60)
    recs = _random_db(rng, letters, [1, 5, 59, 60, 61, 200] + list(rng.integers(1, 300, 30)))
    recs += [Record("inside", "", random_seq(rng, letters, 40) + mutate(rng, query, letters, 0.1) + "A" * 7)]
    db = database_from_records(recs, "db")
    codes = encode_database(db, scoring)
    got = cpu_scan(scoring.encode_str(query), codes, db.offsets, scoring, 2)
    want = [align(query, r.seq, mode="glocal", alphabet=alphabet, gap_open=scoring.gap_open,
                  gap_extend=scoring.gap_extend, match=2, mismatch=-3).score if alphabet == "dna" else
            align(query, r.seq, mode="glocal", alphabet=alphabet).score for r in recs]
    assert got.tolist() == want
    assert got[-1] == max(got) and (got < 0).any()  # the planted copy wins; unrelated glocal scores go below 0


def test_cli_rows_hold_the_whole_query(capsys):
    """Every glocal row aligns the query from its first residue to its last, with nwalign.align's score,
    and the best subject of a real query is its homologue with a small E-value."""
    rows = _tsv(capsys, ["search", OPAL, ECOLI, "--mode", "glocal", "--top", "3", "--backend", "cpu",
                         "--columns", "qseqid,sseqid,qstart,qend,qlen,sstart,send,score,evalue,bitscore"])
    queries = {r.id: r.seq for r in read_fasta(OPAL)}
    subjects = {r.id: r.seq for r in read_fasta(ECOLI)}
    assert rows and {r[0] for r in rows} <= set(queries)
    for q, s, qstart, qend, qlen, sstart, send, score, evalue, bits in rows:
        assert (int(qstart), int(qend), int(qlen)) == (1, len(queries[q]), len(queries[q]))
        assert int(score) == align(queries[q], subjects[s], mode="glocal").score
        assert float(evalue) <= 10 and float(bits) > 0 and int(sstart) <= int(send)
    best = {}
    for r in rows:
        best.setdefault(r[0], r)
    assert best["sp|P19930|HYAD_ECOLI"][1] == "sp|P19930|HYAD_ECOLI"
    assert float(best["sp|P19930|HYAD_ECOLI"][8]) < 1e-30


def test_primer_on_both_strands_and_formats(capsys, tmp_path):
    """A 20-nt primer with two 3'-end mismatches, planted on the minus strand of one subject and hanging
    5 nt past the end of another: glocal reports all 20 positions in both (the overhang as a gap);
    JSON carries the same placement."""
    rng = np.random.default_rng(9)
    primer = "AGAGTTTGATCCTGGCTCAG"
    mismatched = primer[:17] + "TG" + primer[19]
    plus_free = random_seq(rng, DNA, 300)
    rc = str.maketrans("ACGT", "TGCA")
    minus = random_seq(rng, DNA, 150) + mismatched.translate(rc)[::-1] + random_seq(rng, DNA, 150)
    overhang = random_seq(rng, DNA, 200) + primer[:15]
    db = tmp_path / "db.fa"
    db.write_text(f">free\n{plus_free}\n>minus\n{minus}\n>overhang\n{overhang}\n")
    q = tmp_path / "q.fa"
    q.write_text(f">primer\n{primer}\n")
    rows = _tsv(capsys, ["search", str(q), str(db), "--mode", "glocal", "--backend", "cpu", "--max-evalue", "inf",
                         "--columns", "sseqid,qstart,qend,sstart,send,mismatch,gaps,score,cigar"])
    by = {r[0]: r for r in rows}
    assert by["minus"][1:6] == ["1", "20", "170", "151", "2"] and by["minus"][6] == "0"
    assert by["overhang"][1:3] == ["1", "20"] and by["overhang"][6] == "5"
    assert int(by["overhang"][7]) == align(primer, overhang, mode="glocal", alphabet="dna", match=2, mismatch=-3,
                                           gap_open=7, gap_extend=2).score
    assert main(["search", str(q), str(db), "--mode", "glocal", "--backend", "cpu", "--max-evalue", "inf",
                 "--format", "json"]) == 0
    js = {r["sseqid"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert (js["minus"]["qstart"], js["minus"]["qend"], js["minus"]["sstart"]) == (1, 20, 170)


@pytest.mark.parametrize("args, message", [
    (["--max-hsps", "2"], "--max-hsps 2: a glocal search reports one alignment a subject"),
    (["--kernel", "gsw"], "--kernel gsw is local only"),
    (["--mode", "global"], "'global' is not one of"),
])
def test_cli_refusals(capsys, args, message):
    code = main(["search", OPAL, SP196, "--mode", "glocal", *args] if "--mode" not in args else
                ["search", OPAL, SP196, *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and message in err


def test_fit_is_the_same_from_the_scan_and_from_the_sample():
    """A query's fit from the scan's scores (one process) equals the one from the sample scored on its own
    (a sharded or streamed search): the same subjects' exact scores."""
    scoring = make_scoring("protein", "glocal", search=True)
    db = database_from_records(read_fasta(ECOLI), "ecoli")
    codes = encode_database(db, scoring)
    from nwalign.backends.cpu.search import cpu_scan

    for q in encode_all(read_fasta(OPAL)[:2], scoring, "q"):
        full = cpu_scan(q.codes, codes, db.offsets, scoring, 2)
        a = GlocalStatistics(db, codes, scoring, 1, 2).fitted(q, full)
        b = GlocalStatistics(db, codes, scoring, 1, 2).fitted(q, None)
        lengths = np.diff(db.offsets)
        assert a == b and a.count == np.count_nonzero(lengths >= len(q.codes)) and 1 <= a.K <= 1e6 and a.sd > 0


def test_small_database_and_long_query(capsys, tmp_path):
    """Fewer subjects than a fit needs: shuffled copies make up the sample (E-values given); a query longer
    than every subject: no E-value, said once."""
    rng = np.random.default_rng(3)
    recs = _random_db(rng, PROTEIN, [120, 150, 200, 400])
    query = mutate(rng, recs[2].seq[20:120], PROTEIN, 0.2)
    scoring = make_scoring("protein", "glocal", search=True)
    db = database_from_records(recs, "small")
    codes = encode_database(db, scoring)
    fit = GlocalStatistics(db, codes, scoring).fitted(encode_all([Record("q", "", query)], scoring, "q")[0])
    assert fit is not None and "shuffled" in fit.method
    assert fit.evalue(align(query, recs[2].seq, mode="glocal").score, subject_length=200) < 1e-3
    q = tmp_path / "q.fa"
    q.write_text(f">near\n{query}\n>long\n{random_seq(rng, PROTEIN, 500)}\n")
    db_path = tmp_path / "db.fa"
    db_path.write_text("".join(f">{r.id}\n{r.seq}\n" for r in recs))
    assert main(["search", str(q), str(db_path), "--mode", "glocal", "--backend", "cpu", "--top", "1",
                 "--columns", "qseqid,sseqid,evalue"]) == 0
    out, err = capsys.readouterr()
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0][:2] == ["near", "r2"] and float(rows[0][2]) < 1e-3
    assert rows[1][0] == "long" and rows[1][2] == ""
    assert err.count("no E-values for a query of 500 residues") == 1


def test_fit_recovers_a_known_model():
    """Scores drawn as the best of K normals around a + b ln n give back a, b and a K of that order."""
    rng = np.random.default_rng(12)
    n = rng.integers(200, 3000, 20000)
    best = rng.normal(size=(n.size, 30)).max(axis=1)
    y = -80 + 6 * np.log(n) + 7 * (best - best.mean()) / best.std()
    a, b, sd, K, _ = fit_placements(y, n)
    assert abs(b - 6) < 0.5 and abs(sd - 7) < 0.3 and 10 < K < 100


def test_api_glocal_search_and_min_score():
    """The API's mode, and min_score: a glocal search has no floor at 1 (scores below 0 are alignments)."""
    got = list(Search(read_fasta(OPAL)[:1], SP196, mode="glocal", backend="cpu", top=5, max_evalue=float("inf")))
    hits = got[0][1]
    assert len(hits) == 5 and all(h.aln.query_start == 0 and h.aln.query_end == h.aln.query_length for h in hits)
    assert [h.aln.score for h in hits] == sorted((h.aln.score for h in hits), reverse=True)
    floor = hits[2].aln.score
    kept = list(Search(read_fasta(OPAL)[:1], SP196, mode="glocal", backend="cpu", top=5, min_score=floor,
                       max_evalue=float("inf")))[0][1]
    assert [h.aln.score for h in kept] == [h.aln.score for h in hits if h.aln.score >= floor]


# --- GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("alphabet, plan", [("protein", "single"), ("dna", "single"), ("protein", "wider"),
                                            ("dna-iupac", "wider"), ("protein", "profile"), ("dna", "profile")])
def test_scan_glocal_every_partition_and_query_length(alphabet, plan, monkeypatch):
    """The glocal scan kernels (sw_search.cu every configuration, sw_profile.cu one to five passes) give
    the CPU engine's scores for database lengths 1 .. 2,600 and queries of 1 .. 2,100 residues."""
    from nwalign.backends.cuda import search as S
    from nwalign.backends.cuda.search import CONFIGS
    from nwalign.backends.cpu.search import cpu_scan

    if plan == "profile":
        monkeypatch.setattr(S, "PROFILE_MAX_LEN", 1500)
        monkeypatch.setattr(S, "PROFILE_CHUNK_RESIDUES", 10000)
    rng = np.random.default_rng(31)
    scoring = make_scoring(alphabet.replace("-iupac", ""), "glocal", search=True)
    letters = {"dna": DNA, "dna-iupac": DNA_IUPAC}.get(alphabet, PROTEIN)
    widths = sorted({g * r for hopper in (True, False) for g, r in CONFIGS[hopper][0]})
    lengths = [1, 2, 3] + [w + d for w in widths for d in (-1, 0, 1)] + list(rng.integers(1, 2600, size=120))
    recs = _random_db(rng, letters, lengths)
    base = recs[-1].seq
    recs += [Record(f"v{k}", "", base[k * 7:] + base[:k * 7]) for k in range(5)]
    db = database_from_records(recs, "db")
    codes = encode_database(db, scoring)
    gpu = S.ScanSearcher(codes, db.offsets, scoring, plan=plan, min_threads=0)
    for m in (1, 2, 7, 31, 32, 33, 144, 600, 1500, 2100):
        q = encode_all([Record("q", "", base[:m] if m <= len(base) else base)], scoring, "q")[0]
        assert np.array_equal(gpu.score_query(q), cpu_scan(q.codes, codes, db.offsets, scoring, 2)), m


@pytest.mark.gpu
@pytest.mark.parametrize("config", [(4, 16), (4, 28), (8, 20), (16, 24), (32, 16), (32, 28)])
def test_scan_glocal_profile_configurations(config, monkeypatch):
    """sw_profile.cu's glocal instances, one pass and three, give the CPU engine's scores."""
    from nwalign.backends.cuda import search as S
    from nwalign.backends.cpu.search import cpu_scan
    from nwalign.backends.cuda.scanplan import PROFILE_CONFIGS_GLOCAL

    assert config in PROFILE_CONFIGS_GLOCAL
    G, R = config
    monkeypatch.setattr(S, "profile_config", lambda m, glocal=False: (G, R, -(-m // (G * R))))
    rng = np.random.default_rng(G * 100 + R)
    scoring = make_scoring("protein", "glocal", search=True)
    recs = _random_db(rng, PROTEIN, [1, 4, G - 1, G, 2 * G + 1] + list(rng.integers(1, 700, 40)))
    base = recs[-1].seq * 4
    recs.append(Record("rel", "", base[5:900]))
    db = database_from_records(recs, "db")
    codes = encode_database(db, scoring)
    gpu = S.ScanSearcher(codes, db.offsets, scoring, plan="profile")
    for m in (7, G * R, 2 * G * R + 5):
        q = encode_all([Record("q", "", base[:m])], scoring, "q")[0]
        assert np.array_equal(gpu.score_query(q), cpu_scan(q.codes, codes, db.offsets, scoring, 2)), m


@pytest.mark.gpu
@pytest.mark.parametrize("packed_max", [None, 100])
def test_scan_glocal_high_and_low_scores(packed_max, monkeypatch):
    """Glocal scores above the int16 range (identical 7.5 kb DNA) are recomputed in 32 bits, and a query
    longer than the 16-bit form holds (here forced at 100 residues) runs in 32 bits throughout: exact."""
    from nwalign.backends.cuda import search as S
    from nwalign.backends.cpu.search import cpu_scan

    monkeypatch.setattr(S, "PROFILE_MAX_LEN", 9000)
    rng = np.random.default_rng(8)
    scoring = make_scoring("dna", "glocal")  # +5 a match: 37,500 for the whole query
    query = random_seq(rng, DNA, 7500)
    recs = [Record("same", "", query), Record("longer", "", query[:600] + query + query[:600])]
    recs += _random_db(rng, DNA, rng.integers(1, 3000, 37))
    db = database_from_records(recs, "dna")
    codes = encode_database(db, scoring)
    gpu = S.ScanSearcher(codes, db.offsets, scoring, plan="profile")
    if packed_max:
        gpu.glocal_packed_max = packed_max
    for q in (query[:90], query[:2000], query):
        enc = encode_all([Record("q", "", q)], scoring, "q")[0]
        want = cpu_scan(enc.codes, codes, db.offsets, scoring, 2)
        assert np.array_equal(gpu.score_query(enc), want), len(q)
    if packed_max:
        assert not gpu.packed_for(2000) and gpu.packed_for(90) and gpu.recomputed == 0
    else:
        assert want.max() > 32767 and gpu.recomputed >= 2


@pytest.mark.gpu
def test_search_glocal_gpu_rows_equal_cpu_rows(capsys):
    """search --mode glocal on the GPU writes the CPU engine's rows, E-values included."""
    args = ["search", OPAL, ECOLI, "--mode", "glocal", "--top", "5", "--columns",
            "qseqid,sseqid,pident,length,qstart,qend,sstart,send,evalue,bitscore,score,cigar"]
    assert _tsv(capsys, args + ["--backend", "cpu"]) == _tsv(capsys, args + ["--backend", "cuda"])


def test_tail_beyond_the_sample_is_exponential():
    """Past the largest residual the fit saw, ln P falls linearly (a Gumbel's tail), continuing the model's
    value and slope there; below it the model itself."""
    from nwalign.results.glocalstats import GlocalFit

    fit = GlocalFit(a=-100.0, b=10.0, sd=20.0, K=5.0, count=1000, z_tail=4.0)
    n = np.full(6, 1000)
    s = -100.0 + 10.0 * np.log(1000) + 20.0 * np.array([2.0, 4.0, 5.0, 6.0, 7.0, 20.0])
    logp = fit.log_pvalues(s, n)
    slopes = np.diff(logp[2:]) / np.diff(np.array([5.0, 6.0, 7.0, 20.0]))
    assert np.allclose(slopes, slopes[0]) and slopes[0] < 0
    model = GlocalFit(a=-100.0, b=10.0, sd=20.0, K=5.0, count=1000)  # no tail: the model everywhere
    assert np.allclose(logp[:2], model.log_pvalues(s[:2], n[:2]))
    assert logp[-1] > model.log_pvalues(s[-1:], n[-1:])[0]  # heavier than the model's own tail far out
