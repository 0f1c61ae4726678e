"""The command line: every format, pairing rules, errors (exit 2, one line, nothing on stdout)."""

import gzip
import io
import json
import os
import subprocess
import sys

import pytest

from nwalign.cli import main

from helpers import DATA, GENOME_A, GENOME_B

from helpers import ROOT


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def pair_files(tmp_path):
    q = tmp_path / "q.fa"
    t = tmp_path / "t.fa.gz"
    q.write_text(">q1 query\nGATTACAGATTACA\n")
    t.write_bytes(gzip.compress(b">t1\nGATTCAGATTTACA\n>t2\nGGGGATTACA\n"))
    return str(q), str(t)


def test_json_one_against_many(capsys, pair_files):
    code, out, err = run(capsys, "pair", *pair_files, "--format", "json")
    assert code == 0 and err == ""
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["sseqid"] for r in rows] == ["t1", "t2"]
    # One vocabulary with search's JSON: BLAST's names for the shared fields.
    assert {"qseqid", "sseqid", "qstart", "qend", "sstart", "send", "qlen", "slen", "gapopen"} <= set(rows[0])
    for r in rows:
        for key in ("qseqid", "sseqid", "mode", "score", "qstart", "qend", "sstart", "send", "length",
                    "pident", "ppos", "gaps", "cigar"):
            assert key in r
        assert r["qstart"] == 1 and r["qend"] == 14 and 0 < r["pident"] <= 100  # percent, as search's


def test_every_format(capsys, pair_files):
    outputs = {}
    for fmt in ("pair", "sam", "json", "tsv", "fasta"):
        code, out, err = run(capsys, "pair", *pair_files, "--format", fmt, "--mode", "local")
        assert code == 0, err
        outputs[fmt] = out
    assert "# Identity:" in outputs["pair"] and "# Score:" in outputs["pair"]
    sam = [line.split("\t") for line in outputs["sam"].splitlines() if not line.startswith("@")]
    assert len(sam) == 2 and sam[0][2] == "t1" and sam[0][11].startswith("AS:i:")
    assert "@SQ\tSN:t1\tLN:14" in outputs["sam"]
    tsv = ["header"] + outputs["tsv"].splitlines()  # no header line by default, as BLAST's -outfmt 6
    assert tsv[1].split("\t")[:4] == ["q1", "t1", "local", tsv[1].split("\t")[3]] and len(tsv) == 3
    fasta = outputs["fasta"].splitlines()
    assert fasta[0].startswith(">q1 ") and fasta[2].startswith(">t1 ")
    scores = [json.loads(x)["score"] for x in outputs["json"].splitlines()]
    assert [int(r.split("\t")[3]) for r in tsv[1:]] == scores


def test_score_only(capsys, pair_files):
    code, out, _ = run(capsys, "pair", *pair_files, "--score-only", "--format", "tsv", "--no-header")
    assert code == 0 and len(out.splitlines()) == 2 and len(out.splitlines()[0].split("\t")) == 4
    code, out, err = run(capsys, "pair", *pair_files, "--score-only", "--format", "sam")
    assert code == 2 and out == "" and "needs the alignment" in err


def test_pairing_rules(capsys, tmp_path):
    a = tmp_path / "a.fa"
    b = tmp_path / "b.fa"
    c = tmp_path / "c.fa"
    a.write_text(">a1\nACGT\n>a2\nACGA\n")
    b.write_text(">b1\nACGT\n>b2\nAGGA\n")
    c.write_text(">c1\nA\n>c2\nC\n>c3\nG\n")
    code, out, _ = run(capsys, "pair", str(a), str(b), "--format", "tsv", "--no-header")
    assert code == 0 and [line.split("\t")[:2] for line in out.splitlines()] == [["a1", "b1"], ["a2", "b2"]]
    code, out, err = run(capsys, "pair", str(a), str(c))
    assert code == 2 and out == "" and "cannot pair 2 query records with 3" in err


def test_random_input(capsys):
    code, out, _ = run(capsys, "pair", "--random", "300,200", "--seed", "5", "--format", "json")
    row = json.loads(out)
    assert code == 0 and row["qlen"] == 300 and row["slen"] == 200
    code2, out2, _ = run(capsys, "pair", "--random", "300,200", "--seed", "5", "--format", "json")
    assert out2 == out


def test_output_file_is_atomic(capsys, pair_files, tmp_path):
    dest = tmp_path / "out.tsv"
    code, out, _ = run(capsys, "pair", *pair_files, "--format", "tsv", "-o", str(dest))
    assert code == 0 and out == "" and dest.read_text().startswith("q1\tt1\t")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(dest).st_mode & 0o777 == 0o666 & ~umask
    bad = tmp_path / "bad.fa"
    bad.write_text(">x\nAC!GT\n")
    dest2 = tmp_path / "never.tsv"
    code, out, err = run(capsys, "pair", pair_files[0], str(bad), "-o", str(dest2))
    assert code == 2 and not dest2.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".nwalign")]


@pytest.mark.parametrize("setup, args, message", [
    (None, ["pair", "missing.fa", "missing.fa"], "missing.fa: no such file"),
    ("", ["pair", "{f}", "{f}"], "empty file"),
    ("not fasta at all\n", ["pair", "{f}", "{f}"], "not a FASTA file"),
    (b"\x1f\x8b\x08\x00\x00", ["pair", "{f}", "{f}"], "corrupt or truncated"),
    (">a\n\n", ["pair", "{f}", "{f}"], "empty sequence"),
    (">a\nACGT\n>b\nAC@T\n", ["pair", "{f}", "{f}"], "record b, position 3: '@' is not a residue letter"),
    (">a\nMKVL\n", ["pair", "{f}", "{f}", "--matrix", "NOSUCH"], "unknown matrix 'NOSUCH'"),
    (">a\nMKVL\n", ["pair", "{f}", "{f}", "--gap-open", "-3"], "non-negative"),
    (">a\nMKVL\n", ["pair", "{f}", "{f}", "--mode", "fancy"], "Invalid value for '--mode'"),
    (">a\nMKVL\n", ["pair", "{f}", "{f}", "--max-memory", "lots"], "not a size"),
    (">a\nMKVL\n", ["pair", "{f}"], "need QUERY and TARGET"),
    (">a\nMKVL\n", ["pair", "{f}", "{f}", "--bogus"], "No such option"),
])
def test_errors_are_one_line_exit_2(capsys, tmp_path, setup, args, message):
    path = tmp_path / "in.fa"
    if setup is not None:
        path.write_bytes(setup if isinstance(setup, bytes) else setup.encode())
    argv = [a.replace("{f}", str(path)) for a in args]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("nwalign: error:")
    assert message in err
    assert "Traceback" not in err


def test_stdin_query(capsys, monkeypatch, pair_files):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b">s\nGATTACA\n")))
    code, out, _ = run(capsys, "pair", "-", pair_files[1], "--format", "tsv", "--no-header")
    assert code == 0 and out.startswith("s\tt1\t")


def _subprocess(*args, stdin=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "nwalign", *args], capture_output=True, env=env,
                          input=stdin, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("command", ["pair {many} {many} --format tsv", "search {many} {many} --top 50 --backend cpu -q",
                                     "allpairs {few} --backend cpu", "mutate {many}"])
def test_subprocess_pipe_to_head_is_quiet(tmp_path, command):
    """A closed pipe ends every command quietly with status 141, the shell's status for SIGPIPE."""
    many = tmp_path / "many.fa"
    many.write_text("".join(f">s{k}\nACGTACGTAAGT\n" for k in range(3000)))
    few = tmp_path / "few.fa"
    few.write_text("".join(f">s{k}\nACGTACGTAAGTACGT\n" for k in range(300)))
    cmd = (f"{sys.executable} -m nwalign {command.format(many=many, few=few)} | head -n 2; "
           "echo status ${PIPESTATUS[0]}")
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, env=env, cwd=ROOT, timeout=300)
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 3 and lines[-1] == "status 141", lines
    assert proc.stderr == b""


def test_subprocess_error_and_help():
    proc = _subprocess("pair", "--matrix", "BLOSUM62", "x.fa", "y.fa")
    assert proc.returncode == 2 and proc.stdout == b"" and b"Traceback" not in proc.stderr
    proc = _subprocess("pair", "--help")
    assert proc.returncode == 0 and b"--gap-open" in proc.stdout and b"Pairing" in proc.stdout


@pytest.mark.slow
def test_real_genomes_every_format(capsys):
    """SARS-CoV-2 Wuhan-Hu-1 against bat RaTG13 with the DNA defaults: ~96% identity, all formats agree."""
    code, out, err = run(capsys, "pair", GENOME_A, GENOME_B, "--format", "json")
    assert code == 0, err
    row = json.loads(out)
    assert (row["qlen"], row["slen"]) == (29903, 29855)
    assert 95 < row["pident"] < 97
    assert row["qstart"] == 1 and row["send"] == 29855
    # The score-only kernel (anti-diagonal) and the traceback agree.
    code, out, _ = run(capsys, "pair", GENOME_A, GENOME_B, "--score-only", "--format", "json")
    assert json.loads(out)["score"] == row["score"]
    for fmt in ("pair", "sam", "tsv", "fasta"):
        code, out, err = run(capsys, "pair", GENOME_A, GENOME_B, "--format", fmt)
        assert code == 0, err
        assert str(row["score"]) in out
    # FASTA: the two gapped rows, as long as the alignment, each its whole sequence once the gaps are out
    import io

    from Bio import SeqIO

    from nwalign.io.sequences import read_fasta

    records = list(SeqIO.parse(io.StringIO(out), "fasta"))
    assert [r.id for r in records] == [read_fasta(GENOME_A)[0].id, read_fasta(GENOME_B)[0].id]
    assert f"score={row['score']}" in records[0].description
    rows_ = [str(r.seq) for r in records]
    assert [len(r) for r in rows_] == [row["length"]] * 2
    assert [r.replace("-", "") for r in rows_] == [read_fasta(GENOME_A)[0].seq, read_fasta(GENOME_B)[0].seq]
    assert sum(a == b != "-" for a, b in zip(*rows_)) == row["nident"]
    assert f"# Identity:     {row['nident']}/{row['length']}" in run(capsys, "pair", GENOME_A, GENOME_B)[1]


def test_mutate_command_region_and_pair(capsys, tmp_path):
    src = os.path.join(ROOT, "data", "phage_lambda_J02459.fasta")
    cut = tmp_path / "cut.fa"
    mut = tmp_path / "mut.fa"
    assert main(["mutate", src, "--region", "101-3100", "--rate", "0", "-o", str(cut)]) == 0
    assert main(["mutate", str(cut), "--rate", "0.02", "--seed", "3", "-o", str(mut)]) == 0
    from nwalign.io.sequences import read_fasta

    whole = read_fasta(src)[0].seq
    assert read_fasta(str(cut))[0].seq == whole[100:3100]
    assert read_fasta(str(cut))[0].id == read_fasta(src)[0].id
    code, out, _ = run(capsys, "pair", str(cut), str(mut), "--format", "json")
    assert code == 0 and 95 < json.loads(out)["pident"] < 99.5
    code, out, err = run(capsys, "mutate", src, "--region", "9999999-10000000")
    assert code == 2 and "has only" in err
    code, out, err = run(capsys, "pair", "--random", "100", "--mutate", "0.1", "--format", "tsv", "--no-header")
    assert code == 0 and "_mut0.1" in out


def test_bench_cpu_rows_are_verified(capsys, tmp_path):
    js, tsv = tmp_path / "b.json", tmp_path / "b.tsv"
    code = main(["bench", "--sizes", "200,400", "--repeats", "2", "--warmup", "1", "--backend", "cpu",
                 "--json", str(js), "--tsv", str(tsv)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(js.read_text())
    kernels = {r["kernel"] for r in rows}
    assert {"cpu", "cpu-serial", "biopython"} <= kernels
    assert all(r["verified"] for r in rows) and {r["query_length"] for r in rows} == {200, 400}
    for r in rows:
        assert r["median_s"] > 0 and r["gcups"] > 0 and r["repeats"] == 2 and r["workload"] == "pair"
    lines = tsv.read_text().splitlines()
    assert lines[0].startswith("workload\tkernel") and len(lines) == len(rows) + 1
    # the table: a row per kernel and size, each verified against the CPU engine's score
    table = [line for line in out.splitlines() if line.startswith("│")]
    assert len(table) == len(rows) and all(line.split("│")[-2].strip() == "yes" for line in table)
    assert {line.split("│")[1].strip() for line in table} == kernels


@pytest.mark.slow
def test_bench_traceback_and_input(capsys, tmp_path):
    js = tmp_path / "b.json"
    code = main(["bench", "--input", GENOME_A, "--input", os.path.join(ROOT, "data", "phage_lambda_J02459.fasta"),
                 "--kernels", "cpu", "--traceback", "--repeats", "1", "--warmup", "0", "--mode", "local",
                 "--json", str(js), "-q"])
    assert code == 0, capsys.readouterr().err
    (row,) = json.loads(js.read_text())
    assert row["traceback"] and row["verified"] and row["query_length"] == 29903


def test_bench_planted_wrong_result_fails(capsys, monkeypatch):
    from nwalign.backends import kernels

    real = kernels.cpu_score  # the reference the kernels are checked against, planted one too high
    monkeypatch.setattr(kernels, "cpu_score", lambda *a: real(*a) + 1)
    code = main(["bench", "--sizes", "300", "--repeats", "1", "--warmup", "0", "--kernels", "cpu,cpu-serial",
                 "--backend", "cpu", "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "MISMATCH" in err


@pytest.mark.parametrize("args, message", [
    (["--workload", "allpairs", "--kernels", "wavefront"], "not an allpairs kernel"),
    (["--workload", "allpairs", "--slice", "x"], "comma-separated integers"),
    (["--workload", "search", "--kernels", "wavefront"], "not a search kernel"),
    (["--kernels", "nope"], "unknown kernel"),
    (["--sizes", "1,2,x"], "--sizes: "),
    (["--workload", "search", "--mode", "global"], "the search workload is local or glocal"),
])
def test_bench_bad_options(capsys, args, message):
    code = main(["bench", "--backend", "cpu", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_bench_search_workload_cpu(capsys, tmp_path):
    js = tmp_path / "s.json"
    code = main(["bench", "--workload", "search", "--query-lengths", "16,40", "--db-size", "60", "--repeats", "2",
                 "--warmup", "0", "--backend", "cpu", "--json", str(js), "--check", "60"])
    assert code == 0, capsys.readouterr().err
    rows = json.loads(js.read_text())
    assert [r["query_length"] for r in rows] == [16, 40] and all(r["verified"] for r in rows)
    assert all(r["workload"] == "search" and r["db_sequences"] == 60 and r["gcups"] > 0 for r in rows)


@pytest.mark.parametrize("workload, extra", [("search", ["--query-lengths", "16,40", "--db-size", "60", "--check", "60"]),
                                             ("pair", ["--sizes", "300", "--kernels", "cpu,parasail,biopython"]),
                                             ("allpairs", ["--sizes", "120", "--count", "6", "--check", "10"])])
def test_bench_glocal_rows_are_verified(workload, extra, capsys, tmp_path):
    """bench --mode glocal in every workload: the CPU engine's (and the peers') glocal scores, verified."""
    js = tmp_path / "g.json"
    code = main(["bench", "--workload", workload, "--mode", "glocal", "--repeats", "1", "--warmup", "0",
                 "--backend", "cpu", "--json", str(js), *extra])
    assert code == 0, capsys.readouterr().err
    rows = json.loads(js.read_text())
    assert rows and all(r["mode"] == "glocal" and r["verified"] for r in rows)


def test_bench_allpairs_on_cpu_writes_verified_rows(tmp_path, capsys):
    import json

    out, tsv = tmp_path / "a.json", tmp_path / "a.tsv"
    assert main(["bench", "--workload", "allpairs", "--backend", "cpu", "--sizes", "120", "--count", "6",
                 "--repeats", "1", "--warmup", "0", "--check", "10", "--json", str(out), "--tsv", str(tsv)]) == 0
    rows = json.loads(out.read_text())
    assert len(rows) == 1 and rows[0]["workload"] == "allpairs" and rows[0]["kernel"] == "cpu"
    assert rows[0]["verified"] and rows[0]["pairs"] == 10 and rows[0]["pairs_per_s"] > 0 and rows[0]["gcups"] > 0
    assert "pairs_per_s" in tsv.read_text().splitlines()[0]
    assert "GPU kernels skipped" in capsys.readouterr().err or __import__("nwalign.backends.cuda").backends.cuda.available()


def test_bench_allpairs_input_file(tmp_path):
    import json

    out = tmp_path / "a.json"
    assert main(["bench", "--workload", "allpairs", "--backend", "cpu", "--input", os.path.join(DATA, "16S_100_dada2.fasta.gz"),
                 "--count", "5", "--repeats", "1", "--warmup", "0", "--json", str(out), "-q"]) == 0
    rows = json.loads(out.read_text())
    assert rows[0]["pairs"] == 10 and rows[0]["verified"]


def test_new_user_input_edges(tmp_path, capsys):
    """mutate --region past the end is refused; makedb -o x.fa warns; pair with an explicit GPU kernel on
    the CPU engine says so in one line."""
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nACGTACGTAC\n")
    assert main(["mutate", str(fa), "--region", "3-20", "--rate", "0"]) == 2
    assert "has only 10 residues" in capsys.readouterr().err
    assert main(["mutate", str(fa), "--region", "3-10", "--rate", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "GTACGTAC"
    assert main(["makedb", str(fa), "-o", str(tmp_path / "db.fa")]) == 0
    assert "not FASTA" in capsys.readouterr().err
    assert main(["pair", str(fa), str(fa), "--backend", "cpu", "--kernel", "adm-submatrix"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GPU kernels" in err and "--backend cpu" in err
    for workload in ("pair", "search", "allpairs"):
        gpu_kernel = {"pair": "wavefront", "search": "scan", "allpairs": "lazy-rscan"}[workload]
        assert main(["bench", "--workload", workload, "--backend", "cpu", "--kernels", gpu_kernel]) == 2
        assert "GPU kernels only" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
def test_pair_format_reads_with_biopython_emboss_parser(mode, tmp_path):
    """`--format pair` parses with Bio.Align.parse(..., "emboss"): every alignment's rows, score,
    identity and gap penalties as nwalign wrote them, over several records and 50-column blocks."""
    from Bio import Align

    out = tmp_path / "x.txt"
    assert main(["pair", "--random", "300", "--mutate", "0.2", "--seed", "2", "--mode", mode, "--format", "pair",
                 "-o", str(out)]) == 0
    parsed = list(Align.parse(str(out), "emboss"))
    assert len(parsed) == 1
    a = parsed[0]
    assert a.annotations["Gap_penalty"] == 10.0 and a.annotations["Extend_penalty"] == 1.0
    q = main(["pair", "--random", "300", "--mutate", "0.2", "--seed", "2", "--mode", mode, "--format", "json",
              "-o", str(tmp_path / "x.json")])
    assert q == 0
    row = json.loads((tmp_path / "x.json").read_text().splitlines()[0])
    assert a.annotations["Score"] == row["score"] and a.annotations["Identity"] == row["nident"]
    assert a.shape[1] == row["length"]
    # Several alignments in one file (one query against five proteins), each with its score.
    from nwalign.io.sequences import read_fasta

    query, targets = tmp_path / "q.fa", tmp_path / "t.fa"
    first = read_fasta(os.path.join(DATA, "queries_5_opal.fasta"))[0]
    query.write_text(f">{first.id}\n{first.seq}\n")
    targets.write_text("".join(f">{r.id}\n{r.seq}\n"
                               for r in read_fasta(os.path.join(DATA, "swissprot_first196.fasta"))[:5]))
    for fmt, path in (("pair", out), ("json", tmp_path / "many.json")):
        assert main(["pair", str(query), str(targets), "--mode", mode, "--format", fmt, "-o", str(path)]) == 0
    scores = [json.loads(line)["score"] for line in (tmp_path / "many.json").read_text().splitlines()]
    assert [a.annotations["Score"] for a in Align.parse(str(out), "emboss")] == scores and len(scores) == 5


class Tty(io.StringIO):
    """A stderr that says it is a terminal (the progress bar and bench's status line only show there)."""

    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch):
    """Progress goes to stderr only when it is a terminal and not -q; it counts to the total and closes."""
    from nwalign.cli import progress

    for tty, quiet, shown in ((False, False, False), (True, True, False), (True, False, True)):
        err = Tty() if tty else io.StringIO()
        monkeypatch.setattr(sys, "stderr", err)
        advance = progress.progress("allpairs", 10, quiet, "pairs")
        for _ in range(10):
            advance(1)
        assert ("allpairs" in err.getvalue()) == shown


def test_bench_reports_each_result_as_measured(monkeypatch):
    """bench's live status line hears of every row as it is measured (run_* ``progress``), on a terminal."""
    from nwalign.cli import progress
    from nwalign.bench import run_pair

    heard = []
    rows = run_pair([300], "cpu", repeats=1, warmup=0, backend="cpu", peers=False, progress=heard.append)
    assert heard == rows and len(rows) >= 1

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    update = progress.status("bench", False)
    update(rows[0])
    update(None)
    assert "bench" in err.getvalue()


def test_output_never_destroys_an_input_or_a_link(tmp_path, capsys):
    """-o onto an input or a directory is refused in one line (the input intact); -o through a symbolic
    link writes the link's target and keeps the link; a read-only file is not replaced."""
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nACGTACGTAC\n>b\nACGTTCGTAC\n")
    before = fa.read_text()
    for argv in (["pair", str(fa), str(fa), "-o", str(fa)], ["mutate", str(fa), "-o", str(fa)],
                 ["allpairs", str(fa), "-o", str(fa)], ["makedb", str(fa), "-o", str(fa)],
                 ["pair", str(fa), str(fa), "-o", str(tmp_path)]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.count("\n") == 1
        assert fa.read_text() == before
    target, link = tmp_path / "target.tsv", tmp_path / "link.tsv"
    target.write_text("old\n")
    link.symlink_to(target)
    assert main(["pair", str(fa), str(fa), "--format", "tsv", "-o", str(link)]) == 0
    assert link.is_symlink() and target.read_text().startswith("a\ta\t")
    if os.geteuid() != 0:  # root may write read-only files, so this part only means something for a user
        ro = tmp_path / "ro.tsv"
        ro.write_text("keep\n")
        ro.chmod(0o444)
        assert main(["pair", str(fa), str(fa), "-o", str(ro)]) == 2 and ro.read_text() == "keep\n"


def test_sigterm_removes_the_temporary_output(tmp_path):
    """A run stopped by SIGTERM exits 143 and leaves neither the output nor a temporary file behind."""
    import signal
    import time

    out = tmp_path / "out.txt"
    proc = subprocess.Popen([sys.executable, "-m", "nwalign", "pair", "--random", "40k,40k", "--seed", "1",
                             "--backend", "cpu", "-o", str(out)], stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not any(p.startswith(".nwalign-") for p in os.listdir(tmp_path)) and time.time() < deadline:
        time.sleep(0.05)  # wait until the output's temporary file exists
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143
    assert os.listdir(tmp_path) == []


def test_progress_bar_counts_tasks_of_a_spread_job(monkeypatch):
    """In DP cells with a job spread over workers: the rate in GCUPS and "k/N tasks" as they come back."""
    from nwalign.cli import progress

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    done = [0]
    advance = progress.progress("allpairs", 4 * 10**9, False, "cells", tasks=lambda: (done[0], 4) if done[0] else None)
    for _ in range(4):
        done[0] += 1
        advance(10**9)
    assert "4/4 tasks" in err.getvalue() and "GCUPS" in err.getvalue()


def test_progress_bar_takes_fractions(monkeypatch):
    """The fraction form (a lone pair's traceback) counts 0..1 onto the same bar and closes at 1."""
    from nwalign.cli import progress

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    setter = progress.progress("pair", 1000, False, "/1000", fraction=True)
    for f in (0.1, 0.5, 1.0):
        setter(f)
    assert "pair" in err.getvalue()


@pytest.mark.parametrize("args, message", [
    (["pair", "--random", "10", "--match", "3000000000"], "--match 3000000000: give an integer score"),
    (["pair", "--random", "inf"], "--random: 'inf': lengths must be between 1"),
    (["pair", "--random", "nan,10"], "--random: 'nan,10': lengths must be between 1"),
    (["pair", "--random", "10", "--seed", "-1"], "'--seed': -1 is not in the range"),
    (["bench", "--sizes", "inf"], "--sizes: 'inf': lengths must be between 1"),
    (["bench", "--sizes", "1e12"], "--sizes: '1e12'"),
    (["mutate", os.path.join(DATA, "phage_lambda_J02459.fasta"), "--region", "1-inf"], "--region: '1-inf'"),
])
def test_out_of_range_numbers_are_one_line_errors(capsys, args, message):
    """Infinite, negative or huge numbers end in one line naming the option, never a traceback."""
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_duplicate_ids_get_distinct_names_and_one_warning(capsys, tmp_path):
    """The shipped 16S records named by their taxonomy strings (100 records, 74 distinct names): one warning,
    ID_2... suffixes, distinct PHYLIP names, one SAM @SQ line per reference."""
    from nwalign.io.sequences import read_fasta

    sixteen = tmp_path / "taxonomy.fa"
    sixteen.write_text("".join(f">{r.description.split(maxsplit=1)[1]}\n{r.seq}\n"
                               for r in read_fasta(os.path.join(DATA, "16S_100_dada2.fasta.gz"))))
    sixteen = str(sixteen)
    phy = tmp_path / "d.phy"
    code, out, err = run(capsys, "allpairs", sixteen, "--backend", "cpu", "--matrix-out", str(phy), "--columns",
                         "qseqid,sseqid")
    assert code == 0 and err.count("warning") == 1 and "records repeat an earlier record's id" in err
    rows = phy.read_text().splitlines()[1:]
    names = [r[:10] for r in rows]
    assert len(rows) == 100 and len(set(names)) == 100
    pairs = [line.split("\t") for line in out.splitlines()]
    assert len({q for q, _ in pairs} | {t for _, t in pairs}) == 100
    first = read_fasta(sixteen)
    dup = next(r.id for k, r in enumerate(first) if r.id in {x.id for x in first[:k]})
    assert f"{dup}_2" in {q for q, _ in pairs}
    # SAM: one @SQ per target, distinct names
    targets = tmp_path / "t.fa"
    targets.write_text(">x\nACGTACGTTTGA\n>x\nACGTTCGTTTGA\n")
    query = tmp_path / "q.fa"
    query.write_text(">q\nACGTACGTTTGA\n")
    code, out, err = run(capsys, "pair", str(query), str(targets), "--format", "sam", "--mode", "local")
    sq = [line for line in out.splitlines() if line.startswith("@SQ")]
    assert code == 0 and sq == ["@SQ\tSN:x\tLN:12", "@SQ\tSN:x_2\tLN:12"] and err.count("warning") == 1
    assert [line.split("\t")[2] for line in out.splitlines() if not line.startswith("@")] == ["x", "x_2"]


def test_memory_goes_to_the_work_in_flight(capsys, tmp_path):
    """--threads no longer divides --max-memory among idle threads, a pair that cannot fit is refused
    before any row is printed, and --max-memory above the machine's RAM is capped with a warning."""
    code, out, err = run(capsys, "pair", "--random", "3000", "--max-memory", "2M", "--threads", "8",
                         "--format", "tsv", "--no-header")
    assert code == 0 and out.count("\n") == 1, err
    rng = __import__("numpy").random.default_rng(1)
    seq = lambda n: "".join(rng.choice(list("ACGT"), size=n))  # noqa: E731
    queries = tmp_path / "q.fa"
    queries.write_text("".join(f">q{k}\n{seq(n)}\n" for k, n in enumerate((50, 60, 20000))))
    target = tmp_path / "t.fa"
    target.write_text(f">t\n{seq(20000)}\n")
    code, out, err = run(capsys, "pair", str(queries), str(target), "--max-memory", "100K", "--format", "tsv")
    assert code == 2 and out == "" and "raise --max-memory" in err and err.count("\n") == 1
    code, out, err = run(capsys, "pair", "--random", "100", "--max-memory", "1000T", "--format", "tsv")
    assert code == 0 and "more than this machine's" in err and "GiB of RAM" in err


@pytest.mark.slow
def test_ctrl_c_stops_a_long_cpu_run_at_once():
    """SIGINT during a long score-only CPU run (about 40 s of kernel) ends it with status 130 well before
    the kernel would have finished (the kernel runs in a worker thread)."""
    import signal
    import time

    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "nwalign", "pair", "--random", "250k", "--score-only",
                             "--backend", "cpu", "--mode", "local", "--format", "tsv", "--no-header", "-v"],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""
    for line in proc.stderr:  # -v: the backend is announced just before the kernel starts
        seen += line
        if b"backend: cpu" in line:
            break
    time.sleep(2)  # past Numba's cache load: inside the kernel
    assert proc.poll() is None, seen
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=20)  # the kernel alone needs ~40 s (on a busy machine, more)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("Ctrl-C did not stop the run")
    assert proc.returncode == 130 and out == b"" and b"interrupted" in err and b"Traceback" not in err


def test_pair_columns_share_the_search_column_table(capsys):
    """pair --columns takes BLAST's names, as search and allpairs do, and the pair report's earlier names
    as aliases (identity and similarity now percentages); the values equal search's for the same
    alignment; --header writes BLAST's -outfmt 7 comment lines, as every command does."""
    from nwalign.names import TSV_COLUMNS

    cols = "qseqid sseqid pident length mismatch gapopen qstart qend sstart send score nident qlen slen cigar"
    code, out, err = run(capsys, "pair", GENOME_A, GENOME_B, "--format", "tsv", "--backend", "cpu", "--columns", cols,
                         "--header")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# nwalign ") and lines[1].startswith("# Query: MN908947") and lines[-1].startswith("# nwalign")
    assert lines[2] == "# Fields: query id, subject id, % identity, alignment length, mismatches, gap opens, " \
        "q. start, q. end, s. start, s. end, score, identical, query length, subject length, cigar"
    assert lines[3] == "# 1 hits found"
    values = dict(zip(cols.split(), lines[4].split("\t")))
    assert values["pident"] == "96.045" and values["score"] == "138977" and values["qstart"] == "1"
    code, default, err = run(capsys, "pair", GENOME_A, GENOME_B, "--format", "tsv", "--backend", "cpu")
    code2, spelled, err = run(capsys, "pair", GENOME_A, GENOME_B, "--format", "tsv", "--backend", "cpu",
                              "--columns", ",".join(TSV_COLUMNS))
    assert code == code2 == 0 and default == spelled and default.count("\n") == 1  # no header by default
    d = dict(zip(TSV_COLUMNS, default.rstrip("\n").split("\t")))
    assert d["pident"] == "96.045" and d["qend"] == values["qend"] == "29903"
    code, old, err = run(capsys, "pair", GENOME_A, GENOME_B, "--format", "tsv", "--backend", "cpu",
                         "--columns", "query_id,identity,similarity,query_end")
    assert code == 0 and old.rstrip("\n").split("\t") == [d["qseqid"], d["pident"], d["ppos"], d["qend"]]


@pytest.mark.parametrize("args, message", [
    (["--columns", "qseqid,bogus"], "unknown column 'bogus'"),
    (["--columns", "qseqid", "--format", "json"], "--columns is for --format tsv"),
    (["--columns", "qseqid,pident", "--score-only"], "--columns pident needs the alignment"),
])
def test_pair_columns_errors(capsys, args, message):
    code, out, err = run(capsys, "pair", "--random", "50", "--format", "tsv", *args)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_entry_point_guesses_gpu_searches_from_the_words():
    """nwalign.launch starts the GPU warm-up only for a search that may use a GPU, on the device named."""
    from nwalign.launch import wants_gpu

    assert wants_gpu(["search", "q.fa", "db.nwdb"]) == ("search", [0])
    assert wants_gpu(["search", "q.fa", "db.nwdb", "--device", "1", "-v"]) == ("search", [1])
    assert wants_gpu(["search", "--device=2", "q.fa", "db"]) == ("search", [2])
    assert wants_gpu(["search", "q.fa", "db", "--backend", "cuda"]) == ("search", [0])
    for words in (["search", "q", "db", "--backend", "cpu"], ["search", "--backend=cpu", "q", "db"],
                  ["search", "--help"], ["search", "q", "db", "--workers", "2"], [],
                  ["search", "q", "db", "--device", "x"], ["--version"]):
        assert wants_gpu(words) is None, words


def test_entry_point_guesses_the_gpus_of_allpairs_and_pair():
    """allpairs and pair get the warm-up too, on each GPU that --devices names (device 0 for auto/all)."""
    from nwalign.launch import wants_gpu

    assert wants_gpu(["allpairs", "s.fa"]) == ("allpairs", [0])
    assert wants_gpu(["allpairs", "s.fa", "--devices", "1,0"]) == ("allpairs", [0, 1])
    assert wants_gpu(["allpairs", "s.fa", "--devices=auto", "--device", "1"]) == ("allpairs", [1])
    assert wants_gpu(["pair", "a.fa", "b.fa", "--device=2"]) == ("pair", [2])
    assert wants_gpu(["search", "q", "db", "--devices", "0,1"]) == ("search", [0, 1])
    for words in (["allpairs", "s.fa", "--backend", "cpu"], ["pair", "a", "b", "--workers", "3"],
                  ["allpairs", "s", "--scheduler", "sched.json"], ["allpairs", "--help"],
                  ["allpairs", "s", "--devices", "gpu0"], ["makedb", "s", "d"], ["bench"]):
        assert wants_gpu(words) is None, words


def test_entry_point_warms_only_the_first_gpu_of_several(monkeypatch):
    """Every GPU named gets its context through the driver API at once (nwalign.backends.cuda.device.retain_contexts);
    allpairs/pair over several GPUs then warm up only the first one with CuPy (the job plans on it); a
    search warms every GPU it names."""
    import nwalign.backends.cuda.device
    import nwalign.backends.cuda.warmup
    from nwalign import launch

    calls = []
    monkeypatch.setattr(nwalign.backends.cuda.device, "retain_contexts", lambda devices: calls.append(("contexts", devices)))
    monkeypatch.setattr(nwalign.backends.cuda.warmup, "warm_up", lambda device, prepare=None: calls.append(("warm_up", device)))
    monkeypatch.setattr(nwalign.backends.cuda.warmup, "warm_up_search", lambda device: calls.append(("search", device)))
    import nwalign.cli

    monkeypatch.setattr(nwalign.cli, "entry", lambda: None)
    for argv, expected in ((["allpairs", "x.fa", "--devices", "1,3"], [("contexts", [1, 3]), ("warm_up", 1)]),
                           (["pair", "q.fa", "t.fa", "--devices=0,2"], [("contexts", [0, 2]), ("warm_up", 0)]),
                           (["search", "q.fa", "db.nwdb", "--devices", "0,1"],
                            [("contexts", [0, 1]), ("search", 0), ("search", 1)])):
        calls.clear()
        monkeypatch.setattr("sys.argv", ["nwalign"] + argv)
        launch.main()
        assert calls == expected, argv


def test_contexts_are_retained_through_the_driver_at_once_and_errors_stop_quietly(monkeypatch):
    """nwalign.backends.cuda.device.retain_contexts: the driver initialised, then each GPU's primary context retained,
    a thread a GPU; a failed call leaves that GPU without raising (CuPy's own calls report it); the
    thread it returns ends when every context is made, and require waits for it; no driver library:
    nothing happens."""
    from nwalign.backends.cuda import device as cuda

    class Driver:
        def __init__(self, bad=None):
            self.calls, self.bad = [], bad

        def cuInit(self, flags):
            self.calls.append("init")
            return 0

        def cuDeviceGet(self, handle, ordinal):
            self.calls.append(("get", ordinal))
            return 101 if ordinal == self.bad else 0

        def cuDevicePrimaryCtxRetain(self, context, handle):
            self.calls.append("retain")
            return 0

    for bad, expected in ((None, [("get", 0), ("get", 2), "retain", "retain"]),
                          (2, [("get", 0), ("get", 2), "retain"])):
        driver = Driver(bad)
        monkeypatch.setattr(cuda, "_driver", lambda driver=driver: driver)
        thread = cuda.retain_contexts([2, 0])
        assert set(cuda._RETAINING) >= {0, 2}
        thread.join(10)
        assert not any(t.is_alive() for t in cuda._RETAINING.values())
        assert driver.calls[0] == "init" and sorted((c for c in driver.calls if c != "init"), key=str) == sorted(expected, key=str)
    monkeypatch.setattr(cuda, "_driver", lambda: None)
    cuda.retain_contexts([0]).join(10)


def test_python_m_nwalign_runs_a_search(tmp_path):
    """The module entry point (nwalign.launch) runs a whole command in a fresh interpreter."""
    import subprocess
    import sys

    data = os.path.join(ROOT, "data")
    out = subprocess.run([sys.executable, "-m", "nwalign", "search", os.path.join(data, "queries_5_opal.fasta"),
                          os.path.join(data, "swissprot_first196.fasta"), "--top", "1", "--max-hsps", "1", "--backend", "cpu"],
                         capture_output=True, text=True, check=True).stdout
    assert out.count("\n") == 5 and len(out.splitlines()[0].split("\t")) == 12


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["allpairs", "--help"], ["pair", "-h"]])
def test_help_imports_no_numpy(argv):
    """`nwalign --help` and each command's help load neither NumPy nor an engine (start-up under 0.3 s):
    the command line's names come from nwalign.names."""
    code = ("import runpy, sys\n"
            f"sys.argv = ['nwalign'] + {argv!r}\n"
            "try:\n    runpy.run_module('nwalign', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('loaded:', sorted(m for m in ('numpy', 'numba', 'cupy', 'Bio') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "Usage:" in proc.stdout, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "loaded: []", proc.stdout[-300:]


def test_devices_prints_whole_sentences(capsys, monkeypatch):
    """`nwalign devices` without a GPU: the reason and the kernel list each on one line, not broken at the
    terminal's width (Rich wrapped them mid-phrase)."""
    from nwalign.backends import cuda

    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setattr(cuda, "device_info", lambda: [])
    monkeypatch.setattr(cuda, "why_unavailable", lambda: "CuPy is not installed or cannot load (a reason long enough to wrap)")
    code, out, err = run(capsys, "devices")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "No GPU: CuPy is not installed or cannot load (a reason long enough to wrap). The CPU engine is used."
    assert len(lines) == 2 and lines[1].startswith("CUDA kernels: pair: wavefront,") and lines[1].endswith("search: scan, gsw")


@pytest.mark.parametrize("command", [["search", "--backend", "cpu"], ["pair", "--format", "tsv"], ["allpairs"]])
def test_an_output_named_gz_is_gzip_and_reads_back_as_the_plain_one(tmp_path, command):
    """`-o hits.tsv.gz` wrote plain text under a .gz name; it is gzip now (gzip -d reads it)."""
    import gzip

    opal, sp = os.path.join(ROOT, "data", "queries_5_opal.fasta"), os.path.join(ROOT, "data", "swissprot_first196.fasta")
    inputs = [opal] if command[0] == "allpairs" else [opal, opal] if command[0] == "pair" else [opal, sp]
    assert main([command[0], *inputs, *command[1:], "-o", str(tmp_path / "plain.tsv")]) == 0
    assert main([command[0], *inputs, *command[1:], "-o", str(tmp_path / "packed.tsv.gz")]) == 0
    packed = (tmp_path / "packed.tsv.gz").read_bytes()
    assert packed[:2] == b"\x1f\x8b" and gzip.decompress(packed) == (tmp_path / "plain.tsv").read_bytes()
