"""The ``nwalign`` command line: parse options, call the library, write results. Nothing else."""

from __future__ import annotations

import logging
import os
import pathlib
import re
import shlex
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from . import __version__
# Names only (no NumPy, no engine): `nwalign --help` loads nothing more; the commands import the rest.
from .errors import NwalignError, WorkerLost
from .names import ALIASES, ALPHABETS, BACKENDS, DEFAULT_KERNEL, DEFAULT_MAX_MEMORY, FORMATS, MODES, NEEDS_ALIGNMENT
from .names import ALLPAIRS_COLUMNS, SEARCH_BLAST_COLUMNS, SEARCH_COLUMNS, SEARCH_JSON_COLUMNS, SEARCH_SCORE_COLUMNS
from .names import ALLPAIRS_DEFAULT_COLUMNS as ALLPAIRS_DEFAULT
from .names import ALLPAIRS_DEFAULT_SLICE as AP_DEFAULT_SLICE
from .names import ALLPAIRS_KERNELS as AP_KERNELS
from .names import ALLPAIRS_SLICES as AP_SLICES
from .names import COLUMN_NEEDS_ALIGNMENT as TSV_FIELDS
from .names import PAIR_KERNELS as KERNELS
from .names import TSV_COLUMNS, needs_alignment

if TYPE_CHECKING:  # annotations only
    import numpy as np

log = logging.getLogger("nwalign")


def parse_size(text: str) -> int:
    """'4G', '4GiB', '512M', '64k' or a byte count -> bytes (binary units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if not match:
        raise NwalignError(f"--max-memory: {text!r} is not a size such as 4G or 512M")
    value = int(float(match.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2)])
    if value <= 0:
        raise NwalignError(f"--max-memory: {text!r} must be positive")
    ram = _physical_memory()
    if ram and value > ram:
        log.warning("warning: --max-memory %s is more than this machine's %.1f GiB of RAM; using %.1f GiB", text,
                    ram / 2**30, ram / 2**30)
        value = ram
    return value


def _physical_memory() -> int:
    """Bytes of RAM (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def parse_block(text: str) -> tuple[int, int]:
    """'32x32' -> (32, 32)."""
    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise NwalignError(f"--block: {text!r} is not ROWSxCOLS such as 32x32") from None
    return rows, cols


def check_output(path: str | None, inputs=(), option: str = "-o") -> None:
    """Refuse an output path that would destroy something: one of the inputs, a directory, a read-only
    file, or a directory nwalign cannot write in.

    Raises:
        NwalignError: one line saying which.
    """
    if path is None or path == "-":
        return
    for source in inputs:
        if source and source != "-" and os.path.exists(source) and os.path.exists(path) \
                and os.path.samefile(source, path):
            raise NwalignError(f"{option} {path}: is also an input ({source}); write the result elsewhere")
    if os.path.isdir(path):
        raise NwalignError(f"{option} {path}: is a directory")
    target = os.path.realpath(path)
    if os.path.exists(target) and os.path.isfile(target) and not os.access(target, os.W_OK):
        raise NwalignError(f"{option} {path}: read-only file, not replaced")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise NwalignError(f"{option} {path}: directory {directory} does not exist")
    if os.path.isfile(target) or not os.path.exists(target):
        if not os.access(directory, os.W_OK | os.X_OK):
            raise NwalignError(f"{option} {path}: cannot write in directory {directory}")


class _ClosedPipe(Exception):
    """The reader of stdout went away (``| head``)."""


@contextmanager
def output_stream(path: str | None, inputs=(), option: str = "-o"):
    """stdout, or a file written atomically: a temporary file beside it, renamed only on success (a
    symbolic link's target is the file replaced). A path that exists but is not a regular file (a FIFO,
    /dev/stdout) is written directly. See :func:`check_output` for what is refused."""
    if path is None or path == "-":
        try:
            yield sys.stdout
            sys.stdout.flush()
        except BrokenPipeError:  # not an OSError past here: Click would turn it into exit status 1
            raise _ClosedPipe() from None
        return
    check_output(path, inputs, option)
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        with open(target, "w") as handle:
            yield handle
        return
    fd, tmp = tempfile.mkstemp(prefix=".nwalign-", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "w") as handle:
            yield handle
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a result file gets the usual permissions
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


class _Score(click.ParamType):
    """An integer score or penalty; a fractional one (EMBOSS's default extend is 0.5) gets an explanation."""

    name = "integer"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return int(value)
        except ValueError:
            pass
        try:
            float(value)
        except ValueError:
            self.fail(f"{value!r} is not an integer", param, ctx)
        self.fail(f"{value!r}: scores and penalties are integers in nwalign; for EMBOSS's 10/0.5, double every "
                  "score (--gap-open 20 --gap-extend 1 and a matrix file with doubled values: alignments are the "
                  "same, scores twice as large)", param, ctx)


SCORE = _Score()


def parse_columns(text: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """--columns: names from ``allowed``, separated by commas or (as BLAST's -outfmt writes them) spaces.

    Raises:
        NwalignError: an unknown name, or none at all.
    """
    cols = tuple(c for c in re.split(r"[,\s]+", text) if c)
    unknown = [c for c in cols if c not in allowed]
    if unknown or not cols:
        raise NwalignError(f"--columns: unknown column {unknown[0] if unknown else '(none)'!r} "
                           f"(choose from {', '.join(allowed)})")
    return cols


def _setup_logging(verbose: bool, quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    # NWALIGN_LOG_TIMES=1 with -v: milliseconds since start-up on every line, and the finer debug steps.
    timed = verbose and os.environ.get("NWALIGN_LOG_TIMES", "") not in ("", "0")
    handler.setFormatter(logging.Formatter("nwalign: %(relativeCreated)6.0f ms: %(message)s" if timed
                                           else "nwalign: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.ERROR if quiet else logging.DEBUG if timed else logging.INFO if verbose else logging.WARNING)
    log.propagate = False


_SCORING_OPTIONS = (
    click.option("--matrix", metavar="NAME|PATH",
                 help="Substitution matrix: a Biopython name (BLOSUM62, PAM250, NUC.4.4, ...) or an "
                      "NCBI-format file. Default BLOSUM62 for protein; --match/--mismatch for DNA/RNA."),
    click.option("--match", type=SCORE, help="DNA/RNA score for identical letters  [default: 5]"),
    click.option("--mismatch", type=SCORE, help="DNA/RNA score for different letters  [default: -4]"),
    click.option("--gap-open", type=SCORE, metavar="N",
                 help="Penalty of a gap's first position (>= 0)  [default: protein 11, DNA 10]"),
    click.option("--gap-extend", type=SCORE, metavar="N",
                 help="Penalty of each further gap position (>= 0); a gap of length L costs "
                      "open + (L-1)*extend  [default: 1]"),
    click.option("--alphabet", type=click.Choice(("auto",) + ALPHABETS), default="auto", show_default=True,
                 help="Residue alphabet; auto detects nucleotides vs protein from the letters."),
)


def scoring_options(command):
    """The scoring options of pair, allpairs and search: one definition, one help text."""
    for option in reversed(_SCORING_OPTIONS):
        command = option(command)
    return command


_RUN_OPTIONS = (
    click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
                 help="GPU number (CUDA device index)."),
    click.option("-o", "--output", metavar="FILE",
                 help="Write here instead of stdout (atomically: nothing is left behind on error)."),
    click.option("-v", "--verbose", is_flag=True,
                 help="Explain choices on stderr (alphabet, backend, memory path, kernel, timings)."),
    click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr (no warnings, no progress)."),
)


def run_options(command):
    """--device, -o, -v and -q of pair, allpairs and search: one definition, one help text."""
    for option in reversed(_RUN_OPTIONS):
        command = option(command)
    return command


def spread_options(how: str):
    """--workers, --scheduler, --devices and --shared-dir of pair and allpairs (``how``: what the workers
    take)."""
    options = (
        click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
                     help=f"Spread the work over N CPU-engine processes (a local Dask cluster; needs nwalign[dask]): "
                          f"{how}; the output is unchanged."),
        click.option("--scheduler", metavar="ADDRESS|FILE.json",
                     help="Spread the work over a running Dask cluster (its scheduler's address or scheduler file; "
                          "GPU workers with --backend cuda). The input is written once as .nwdb files in "
                          "--shared-dir."),
        click.option("--devices", default="auto", show_default=True, metavar="auto|all|N[,N...]",
                     help="GPUs to run on: auto = every visible GPU when there are two or more, nwalign[dask] is "
                          "installed and the job has at least 10^12 DP cells (unless --device names another GPU), "
                          f"all, or a list such as 0,1. Two or more: one worker process per GPU ({how}); the output "
                          "is unchanged."),
        click.option("--shared-dir", metavar="DIR",
                     help="Directory for the input's temporary .nwdb files that the workers read (default: the "
                          "system's temporary directory; workers on other hosts need a shared one)."),
    )

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command
    return decorate


def _check_shared_dir(shared_dir, workers, scheduler, devices) -> None:
    if shared_dir is not None and not (workers > 1 or scheduler or devices not in ("auto", None)):
        raise NwalignError("--shared-dir is for --workers, --scheduler or --devices")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nwalign")
def cli():
    """Exact pairwise sequence alignment (Needleman-Wunsch, Smith-Waterman, semi-global).

    Reads FASTA (plain, gzip, bzip2 or xz; '-' for stdin), writes results to stdout, logs to stderr.
    Run 'nwalign COMMAND --help' for a command's options.
    """


@cli.command()
@click.argument("query", required=False)
@click.argument("target", required=False)
@click.option("--mode", type=click.Choice(MODES), default="global", show_default=True,
              help="global (Needleman-Wunsch), local (Smith-Waterman), semiglobal (end gaps free on both).")
@scoring_options
@click.option("--random", "random_lengths", metavar="LEN[,LEN]",
              help="Align seeded random sequences of these lengths instead of files (e.g. 10k,10k).")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, help="Seed for --random.")
@click.option("--mutate", "mutate_rate", type=float, metavar="RATE",
              help="With --random LEN: the target is the query with seeded substitutions (80%), deletions "
                   "(10%) and 1-3 letter insertions (10%) at this per-position RATE.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="pair", show_default=True,
              help="pair: EMBOSS-like report; sam: CIGAR with =/X; json: one object per line; "
                   "tsv: one row per pair; fasta: gapped sequences.")
@click.option("--score-only", is_flag=True, help="Report only the optimal score (linear memory, fastest).")
@click.option("--columns", metavar="NAME,...",
              help="--format tsv columns, comma- or space-separated: BLAST's names (" + ", ".join(
                  c for c in TSV_FIELDS if c not in ("mode", "identity", "similarity")) + ") or the pair "
                   "report's (" + ", ".join(TSV_COLUMNS) + ", the default). identity/similarity are "
                   "fractions, pident/ppos percentages.")
@click.option("--no-header", is_flag=True, help="Omit the header line (tsv) or header lines (sam).")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="Engine: auto = cuda when CuPy sees a GPU, else cpu (-v says which and why).")
@click.option("--kernel", type=click.Choice(KERNELS), default=DEFAULT_KERNEL, show_default=True,
              help="CUDA kernel (see docs/gpu-kernels.md): the papers' designs, selectable to compare.")
@click.option("--block", default="32x32", show_default=True, metavar="ROWSxCOLS",
              help="Tile shape of --kernel diagonal-block: 8x8, 16x16, 32x32, 8x128 or 16x64.")
@click.option("--shared/--no-shared", default=True, show_default=True,
              help="diagonal-block: stage the sequence slices in shared memory.")
@click.option("--max-memory", metavar="SIZE",
              help="Memory for one traceback's direction matrix; beyond it a linear-space traceback "
                   "(checkpointed bands, about twice the work) is used.  [default: 4G on the CPU; on the "
                   "GPU 40% of free memory]")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="Pairs aligned at once on the CPU (0 = all cores, as for every command).")
@spread_options("chunks of pairs balanced by DP cells; a pair is never split")
@run_options
def pair(query, target, mode, matrix, match, mismatch, gap_open, gap_extend, alphabet, random_lengths,
         seed, mutate_rate, fmt, score_only, columns, no_header, output, backend, kernel, block, shared, device,
         max_memory, threads, workers, scheduler, devices, shared_dir, verbose, quiet):
    """Align QUERY against TARGET (FASTA files, '-' for stdin).

    Pairing: if QUERY has one record it is aligned against every TARGET record; if TARGET has one
    record, every QUERY record is aligned against it; otherwise record i of QUERY is aligned against
    record i of TARGET (both files must then hold the same number of records).

    Coordinates are 1-based and inclusive; identity is BLAST's (identical columns / all columns,
    gap columns included).

    \b
    Examples:
      nwalign pair data/sars-cov-2_wuhan-hu-1_MN908947.fasta data/batcov_RaTG13.fasta
      nwalign pair --mode local --format json q.fa.gz db.fa
      nwalign pair --random 10k,10k --score-only
    """
    from .sequences import parse_lengths, random_records

    from .aligner import Pairs

    _setup_logging(verbose, quiet)
    if score_only and fmt in NEEDS_ALIGNMENT:
        raise NwalignError(f"--format {fmt} needs the alignment; drop --score-only or use pair/json/tsv")
    cols = _pair_columns(columns, fmt, score_only)
    if random_lengths:
        if query or target:
            raise NwalignError("give either --random or QUERY and TARGET files, not both")
        kind = "dna" if alphabet == "auto" else alphabet
        lengths = parse_lengths(random_lengths)
        records = random_records(lengths if len(lengths) == 2 else lengths * 2, kind, seed, mutate_rate)
        inputs, names = (records[:1], records[1:]), ("--random", "--random")
        log.info("alphabet: %s (--random)", kind)
    else:
        _check_pair_files(query, target, mutate_rate)
        inputs, names, kind = (pathlib.Path(query), pathlib.Path(target)), (query, target), alphabet
    memory = parse_size(max_memory) if max_memory else DEFAULT_MAX_MEMORY
    _check_shared_dir(shared_dir, workers, scheduler, devices)
    job = Pairs(*inputs, mode=mode, alphabet=kind, matrix=matrix, match=match, mismatch=mismatch, gap_open=gap_open,
                gap_extend=gap_extend, score_only=score_only, backend=backend, device=device, max_memory=memory,
                threads=threads or os.cpu_count() or 1, kernel=kernel, block=parse_block(block), shared=shared,
                gpu_max_memory=memory if max_memory else None, query_source=names[0], target_source=names[1],
                workers=workers, scheduler=scheduler, devices=devices, shared_dir=shared_dir)
    try:
        _write_pairs(job, backend, score_only, fmt, cols, no_header, output, query, target, quiet)
    finally:
        job.close()


def _write_pairs(job, backend, score_only, fmt, cols, no_header, output, query, target, quiet) -> None:
    from .formats import WRITERS, TsvWriter

    _check_gpu_options(job.backend, backend)
    within = None  # a lone large pair on the CPU engine: progress through its traceback
    if len(job.plan) == 1 and job.backend == "cpu" and not score_only and job.cells() >= 10**8:
        within = _progress("pair", 1000, quiet, "/1000", fraction=True)
    results = job.run(within)  # memory is checked here, before anything is written
    command = "nwalign " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else ""
    with output_stream(output, (query, target)) as out:
        kwargs = dict(targets=[t.record for t in job.targets], header=not no_header, command=command)
        writer = (TsvWriter(out, job.scoring, score_only=score_only, columns=cols, **kwargs) if fmt == "tsv"
                  else WRITERS[fmt](out, job.scoring, **kwargs))
        writer.begin()
        cells = [job.cells(k) for k in range(len(job.plan))]  # the bar's rate in GCUPS
        progress = _progress("pair", sum(cells), quiet or len(job.plan) < 2, "cells", tasks=lambda: job.tasks)
        for k, aln in enumerate(results):
            writer.write(aln)
            progress(cells[k])
            if output is None:
                out.flush()
        writer.end()


def _pair_columns(columns: str | None, fmt: str, score_only: bool):
    """pair's --columns, checked against --format and --score-only (None: the default columns)."""
    if columns is None:
        return None
    if fmt != "tsv":
        raise NwalignError(f"--columns is for --format tsv (not {fmt})")
    cols = parse_columns(columns, tuple(TSV_FIELDS) + tuple(ALIASES))
    if score_only and any(needs_alignment(c) for c in cols):
        raise NwalignError(f"--columns {next(c for c in cols if needs_alignment(c))} needs the alignment; "
                           "drop --score-only")
    return cols


def _check_pair_files(query: str | None, target: str | None, mutate_rate) -> None:
    if mutate_rate is not None:
        raise NwalignError("--mutate goes with --random; for files use 'nwalign mutate'")
    if not query or not target:
        raise NwalignError("need QUERY and TARGET FASTA files (or --random LEN[,LEN])")
    if query == "-" and target == "-":
        raise NwalignError("only one of QUERY and TARGET can be '-' (stdin)")


def _check_gpu_options(engine: str, backend: str) -> None:
    """Refuse --kernel/--block/--shared given on the command line when the CPU engine will run."""
    ctx = click.get_current_context()
    if engine == "cpu" and any(ctx.get_parameter_source(p).name != "DEFAULT" for p in ("kernel", "block", "shared")):
        from . import cuda

        why = "--backend cpu" if backend == "cpu" else cuda.why_unavailable()
        raise NwalignError(f"--kernel/--block/--shared choose a GPU kernel, but the CPU engine would run ({why})")


@cli.command()
@click.argument("seqs")
@click.option("--against", metavar="FASTA", help="Align every SEQS record against every record of this file "
              "instead of all pairs i < j within SEQS.")
@click.option("--mode", type=click.Choice(MODES), default="global", show_default=True)
@scoring_options
@click.option("--columns", default=",".join(ALLPAIRS_DEFAULT), show_default=True, metavar="NAME,...",
              help="TSV columns from: " + ", ".join(ALLPAIRS_COLUMNS) + ". Score-only columns skip the traceback.")
@click.option("--min-identity", type=float, metavar="F",
              help="Keep pairs with identity >= F (0-1, BLAST identity). In global mode a score bound "
                   "skips the traceback of pairs that cannot reach F (never dropping one that does).")
@click.option("--matrix-out", metavar="FILE.phy|FILE.npy",
              help="Also write the distance matrix 1 - identity (PHYLIP or NumPy; aligns every pair).")
@click.option("--header/--no-header", default=True, show_default=True, help="TSV header line.")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="Where the scores are computed: the GPU kernels (cuda), the CPU engine, or the GPU when "
                   "there is one. Reported pairs are aligned on the CPU engine.")
@click.option("--kernel", "ap_kernel", type=click.Choice(("auto",) + AP_KERNELS), default="auto", show_default=True,
              help="GPU score kernel (Li et al., section 4): lazy-rscan (one thread per pair, a slice of "
                   "--slice query rows in registers), rscan (row scan through global memory), dscan (one "
                   "block per pair, anti-diagonals in shared memory), tiled-dscan (one launch per tile "
                   "diagonal). auto: lazy-rscan when the pairs fill the GPU, else dscan.")
@click.option("--slice", "slice_k", type=click.Choice([str(k) for k in AP_SLICES]), default=str(AP_DEFAULT_SLICE),
              show_default=True, help="lazy-rscan slice height k (query rows per thread).")
@click.option("--block", "ap_block", type=click.IntRange(min=1), metavar="N",
              help="tiled-dscan tile size (8, 16 or 32; default 16), or threads per block: dscan (default "
                   "256), lazy-rscan and rscan (up to 256, default 128).")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU threads: pairs scored (CPU backend) or aligned at once (0 = all cores).")
@spread_options("blocks of the pair matrix balanced by DP cells, aligned and formatted by the workers")
@run_options
def allpairs(seqs, against, mode, matrix, match, mismatch, gap_open, gap_extend, alphabet, columns,
             min_identity, matrix_out, header, backend, ap_kernel, slice_k, ap_block, threads, workers, scheduler,
             devices, shared_dir, device, output, verbose, quiet):
    """Align all pairs of SEQS (i < j), or SEQS x --against, and report them as TSV.

    Global alignment by default. Scores come from the GPU (or the CPU engine) in batches, so memory
    stays bounded for any number of sequences; pairs that a column or --min-identity needs are then
    aligned in full on the CPU engine. stderr reports how many pairs the identity filter skipped.

    \b
    Examples (100 16S rRNA genes, 4,950 pairs):
      nwalign allpairs data/16S_100_dada2.fasta.gz --min-identity 0.9 > close_pairs.tsv
      nwalign allpairs data/16S_100_dada2.fasta.gz --matrix-out dist.phy --columns qseqid,sseqid,score
      nwalign allpairs data/16S_100_dada2.fasta.gz --columns qseqid,sseqid,score --backend cuda --kernel dscan
    """
    from .allvsall import AllPairs

    _setup_logging(verbose, quiet)
    cols = parse_columns(columns, ALLPAIRS_COLUMNS)
    if matrix_out and not matrix_out.endswith((".phy", ".npy")):
        raise NwalignError(f"--matrix-out {matrix_out}: the name must end in .phy (PHYLIP) or .npy (NumPy)")
    if matrix_out and matrix_out.endswith(".phy") and against:
        raise NwalignError("--matrix-out .phy needs a square matrix: use .npy with --against")
    _check_shared_dir(shared_dir, workers, scheduler, devices)
    check_output(matrix_out, (seqs, against), "--matrix-out")
    job = AllPairs(pathlib.Path(seqs), pathlib.Path(against) if against else None, mode=mode, alphabet=alphabet,
                   matrix=matrix, match=match, mismatch=mismatch, gap_open=gap_open, gap_extend=gap_extend,
                   columns=cols, min_identity=min_identity, distances=matrix_out is not None, backend=backend,
                   kernel=ap_kernel, slice_k=int(slice_k), block=ap_block, device=device, threads=threads,
                   workers=workers, scheduler=scheduler, devices=devices, shared_dir=shared_dir)
    a, b, stats = job.a, job.b, job.stats
    log.info("allpairs: %d x %d sequences, %s, scores on %s, %d CPU threads", len(a), len(b or a), mode,
             job.backend, job.threads)
    try:
        with distance_matrix(matrix_out, (len(a), len(b) if b else len(a)), [r.record.id for r in a]) as dist, \
                output_stream(output, (seqs, against)) as out:
            if header:
                out.write("\t".join(cols) + "\n")
            advance = _progress("allpairs", job.cells, quiet, "cells", tasks=lambda: job.tasks)  # in DP cells
            writing = 0.0  # seconds this process spent writing rows (the -v timeline)
            for block in job.blocks():
                advance(job.span_cells(block.start, block.stop))
                clock = time.perf_counter()
                out.write(block.text)
                writing += time.perf_counter() - clock
                if dist is not None:
                    fill_distances(dist, block, len(a), len(b) if b else None)
        log.debug("allpairs: rows written in %.2f s", writing)
    finally:
        job.close()
    unit = "G band cells/s" if stats["kernel"] == "banded" else "GCUPS"  # bands: cells swept, not the matrices'
    if stats["cells"] and stats["score_seconds"] > 0:
        log.info("allpairs: %d pairs scored by %s in %.2f s (%.1f %s, %.0f pairs/s, output included)",
                 stats["pairs"], stats["kernel"], stats["score_seconds"], stats["cells"] / stats["score_seconds"] / 1e9,
                 unit, stats["pairs"] / stats["score_seconds"])
    if stats.get("gpu_seconds") and stats.get("tasks", 1) > 1:  # tasks share a GPU: no rate from their sum
        log.info("allpairs: GPU kernel time %.2f s summed over %d tasks (overlapping on each GPU)",
                 stats["gpu_seconds"], stats["tasks"])
    elif stats.get("gpu_seconds"):
        log.info("allpairs: GPU kernel time %.2f s: %.1f %s, %.0f pairs/s", stats["gpu_seconds"],
                 stats["cells"] / stats["gpu_seconds"] / 1e9, unit, stats["pairs"] / stats["gpu_seconds"])
    if stats.get("banded_pairs"):
        log.info("allpairs: %d pairs aligned in their bands on the GPU in %.2f s (kernel %.2f s)",
                 stats["banded_pairs"], stats["banded_seconds"], stats["banded_gpu_seconds"])
    if min_identity is not None and not quiet:
        click.echo(f"nwalign: {stats['pairs']} pairs; {stats['filtered']} skipped by the score bound, "
                   f"{stats['below']} aligned and below identity {min_identity:g}, "
                   f"{stats['pairs'] - stats['filtered'] - stats['below']} reported", err=True)


def fill_distances(dist: np.ndarray, block, n_a: int, n_b: int | None) -> None:
    """Put a block's distances (1 - identity, pair order) into the matrix: both halves within one set."""
    import numpy as np

    from .allvsall import pair_batches

    if block.stop == block.start:
        return
    ij = np.concatenate(list(pair_batches(n_a, n_b, block.stop - block.start, (block.start, block.stop))))
    dist[ij[:, 0], ij[:, 1]] = block.distances
    if n_b is None:
        dist[ij[:, 1], ij[:, 0]] = block.distances


@contextmanager
def distance_matrix(path: str | None, shape: tuple[int, int], names: list[str]):
    """The distance matrix to fill (None without --matrix-out). A .npy is a memory map of a temporary file
    beside ``path`` (so 25,000 sequences need no 2.5 GB of RAM), renamed on success; a PHYLIP matrix
    (names cut or padded to 10 characters, as PHYLIP reads them, and kept distinct: :func:`phylip_names`) is
    written from memory at the end."""
    import numpy as np

    from .sequences import phylip_names

    if path is None:
        yield None
        return
    if path.endswith(".phy"):
        dist = np.zeros(shape, dtype=np.float32)
        yield dist
        with output_stream(path, option="--matrix-out") as out:
            out.write(f"{len(names)}\n")
            for name, row in zip(phylip_names(names), dist):
                out.write(f"{name:<10} " + " ".join(f"{v:.6f}" for v in row) + "\n")
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise NwalignError(f"{path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".nwalign-", suffix=".npy", dir=directory)
    os.close(fd)
    try:
        dist = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=shape)
        yield dist
        dist.flush()
        del dist
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@cli.command()
@click.argument("query")
@click.argument("database")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Hits reported per query.")
@click.option("--max-evalue", type=float, metavar="E", help="Report only hits with E-value <= E.")
@click.option("--min-score", type=int, metavar="S", help="Report only hits with raw score >= S.")
@click.option("--columns", default=",".join(SEARCH_BLAST_COLUMNS), show_default=True, metavar="NAME,...",
              help="TSV columns (BLAST tabular names, comma- or space-separated): " + ", ".join(SEARCH_COLUMNS)
                   + ". Only " + ", ".join(SEARCH_SCORE_COLUMNS) + ": no hit is aligned (faster).")
@click.option("--header", is_flag=True, help="Print a header line (TSV).")
@click.option("--format", "fmt", type=click.Choice(("tsv", "json", "pair", "sam")), default="tsv", show_default=True)
@scoring_options
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="auto: the GPU when CuPy sees one, else the CPU engine.")
@click.option("--kernel", "search_kernel", type=click.Choice(("scan", "gsw")), default="scan", show_default=True,
              help="GPU kernel: scan (groups of 4-32 threads per pair of length-sorted database sequences, "
                   "packed 16-bit DPX, after CUDASW++4.0) or gsw (Akoglu and Striemer: one thread per database "
                   "sequence, query and matrix in constant memory).")
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU threads: database sequences scanned (CPU backend) and reported hits aligned at "
                   "once (0 = all cores).")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Spread the scan over N CPU-engine processes (a local Dask cluster; needs nwalign[dask]); "
                   "the database is cut into N shards balanced by residues; the hits are unchanged.")
@click.option("--scheduler", metavar="ADDRESS|FILE.json",
              help="Spread the scan over a running Dask cluster (its scheduler's address or scheduler file); "
                   "the database must be a .nwdb every worker can read.")
@click.option("--devices", default="auto", show_default=True, metavar="auto|all|N[,N...]",
              help="GPUs to scan on: auto = every visible GPU when there are two or more, nwalign[dask] is "
                   "installed and the search has at least 10^13 DP cells as its files' sizes bound them (query "
                   "letters x database letters; unless --device names another GPU), all, or a list such as "
                   "0,1. Two or more: one worker process per GPU, each holding the whole database (or a shard "
                   "of it balanced by residues where it does not fit); the hits are unchanged.")
@click.option("--shared-dir", metavar="DIR",
              help="Directory for the temporary .nwdb of a FASTA database that the workers read (default: the "
                   "system's temporary directory; with --scheduler, a directory every worker can read).")
@run_options
def search(query, database, top, max_evalue, min_score, columns, header, fmt, matrix, match, mismatch, gap_open,
           gap_extend, alphabet, backend, search_kernel, threads, workers, scheduler, devices, shared_dir, device,
           output, verbose, quiet):
    """Smith-Waterman search of every QUERY record against every DATABASE sequence.

    DATABASE is FASTA (plain/gzip, '-' not allowed when QUERY is '-') or a .nwdb from 'nwalign makedb'.
    Hits: score descending, ties in database order; each reported hit is aligned in full, so every
    column is exact. E-values and bit scores use published Karlin-Altschul parameters (BLOSUM62 with gap
    open/extend 11/1, 12/1 or 13/1 in nwalign's convention) and the database's total length; for other
    scoring they are left empty (said once on stderr).

    \b
    Example:
      nwalign search data/queries_5_opal.fasta data/swissprot_first196.fasta --top 3 --header
    """
    import numpy as np

    import time

    from .dbsearch import Search
    from .formats import HitWriter

    started = time.perf_counter()
    _setup_logging(verbose, quiet)
    cols = parse_columns(columns, SEARCH_COLUMNS)
    _check_shared_dir(shared_dir, workers, scheduler, devices)
    run = Search(pathlib.Path(query), database, alphabet=alphabet, matrix=matrix, match=match, mismatch=mismatch,
                 gap_open=gap_open, gap_extend=gap_extend, top=top, max_evalue=max_evalue, min_score=min_score,
                 align=fmt != "tsv" or not set(cols) <= set(SEARCH_SCORE_COLUMNS),  # else the scan says it all
                 backend=backend, kernel=search_kernel, device=device, threads=threads, workers=workers,
                 scheduler=scheduler, devices=devices, shared_dir=shared_dir)
    scoring, db, gpu = run.scoring, run.database, run.gpu
    if run.stats is None and not quiet:
        click.echo(f"nwalign: no published Karlin-Altschul parameters for {scoring.matrix_name} with gaps "
                   f"{scoring.gap_open}/{scoring.gap_extend}: evalue and bitscore are left empty", err=True)
    with output_stream(output, (query, database)) as out:
        writer = None
        cells = sum(len(q.seq) for q in run.queries) * db.total_length
        for _, hits in run.run(_progress("search", cells, quiet, "cells", tasks=lambda: run.tasks)):  # GCUPS
            if writer is None:  # a header only once the first query's hits exist (and the database checked out)
                targets = zip(db.ids, np.diff(db.offsets).tolist()) if fmt == "sam" else ()
                writer = HitWriter(out, fmt, scoring, cols, SEARCH_JSON_COLUMNS, header, targets)
            writer.write(hits)
            if output is None:
                out.flush()
        writer.end()
    log.debug("search: output written")
    log.info("search: done in %.2f s%s", time.perf_counter() - started,
             f" ({gpu.scan_seconds:.2f} s waiting for GPU scans; {gpu.recomputed} scores recomputed in 32-bit)"
             if hasattr(gpu, "scan_seconds") else "")


def _status(label: str, quiet: bool):
    """A one-line live status on stderr for runs whose total is not known ahead (terminals only, not -q).
    Returns update(row): a bench Row to report, or None to close the line."""
    if quiet or not sys.stderr.isatty():
        return lambda row: None
    from rich.console import Console

    live = Console(stderr=True).status(f"{label}: starting")
    live.start()
    count = [0]

    def update(row) -> None:
        if row is None:
            live.stop()
            return
        count[0] += 1
        live.update(f"{label}: {count[0]} measured; last {row.kernel}, {row.query_length} x {row.target_length}: "
                    f"{row.gcups:.3g} GCUPS")
    return update


def _progress(label: str, total: int, quiet: bool, unit: str = "", fraction: bool = False, tasks=None):
    """A Rich progress bar on stderr (done / total, or with ``unit`` "cells" the rate in GCUPS; the share
    done and the time left), only when stderr is a terminal and not ``-q``. Returns advance(n), or with
    ``fraction`` set(f) for the fraction f (0..1) done; the bar is redrawn at most ten times a second and
    closes when full. ``tasks``: a function giving (tasks done, tasks in all) of a job spread over
    workers, or None while it runs in this process, shown as "k/N tasks"."""
    if quiet or total <= 0 or not sys.stderr.isatty():
        return lambda n: None
    import time

    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                               TimeRemainingColumn)

    if unit == "cells":  # DP cells: the share done and the rate in GCUPS, not 12-digit counts
        counts = (TextColumn("{task.fields[gcups]}"), TextColumn("{task.fields[tasks]}"))
    else:
        counts = (MofNCompleteColumn(), TextColumn(unit))
    bar = Progress(TextColumn(label), BarColumn(), *counts, TaskProgressColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=total, gcups="", tasks="")
    bar.start()
    state = {"done": 0, "at": 0.0, "start": time.monotonic()}

    def advance(n) -> None:
        state["done"] = int(total * n) if fraction else state["done"] + n
        now = time.monotonic()
        if state["done"] >= total or now - state["at"] > 0.1:
            rate = state["done"] / max(now - state["start"], 1e-9) / 1e9
            counted = tasks() if tasks is not None else None
            bar.update(task, completed=state["done"], gcups=f"{rate:.1f} GCUPS",
                       tasks=f"{counted[0]}/{counted[1]} tasks" if counted else "")
            state["at"] = now
        if state["done"] >= total:
            bar.stop()
    return advance


@cli.command()
@click.argument("fasta")
@click.option("-o", "--output", required=True, metavar="FILE.nwdb", help="The database file to write.")
def makedb(fasta, output):
    """Write FASTA as a memory-mappable .nwdb database for repeated 'nwalign search' runs."""
    from .database import makedb as write_db

    if output == "-":
        raise NwalignError("makedb: -o needs a file name (the database is memory-mapped from it)")
    check_output(output, (fasta,))
    if re.search(r"\.(fa|fasta|fna|faa|ffn|fas|seq)(\.(gz|bz2|xz))?$", output, re.IGNORECASE):
        click.echo(f"nwalign: warning: -o {output}: the database is a binary .nwdb file, not FASTA "
                   "(name it .nwdb)", err=True)
    if sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status(f"makedb: reading {fasta}, encoding, writing {output}"):
            db = write_db(fasta, output)
    else:
        db = write_db(fasta, output)
    click.echo(f"nwalign: {output}: {db.count} sequences, {db.total_length} residues", err=True)


@cli.command("mutate")
@click.argument("fasta")
@click.option("--rate", type=float, default=0.01, show_default=True,
              help="Per-position mutation probability: 80% substitutions, 10% deletions, 10% insertions of "
                   "1-3 letters.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, help="Random seed.")
@click.option("--region", metavar="START-END", help="Take only this 1-based, inclusive region (e.g. 1-1M).")
@click.option("-o", "--output", metavar="FILE", help="Write here (atomically) instead of stdout.")
def mutate_command(fasta, rate, seed, region, output):
    """Write a seeded mutated copy of every record of FASTA ('-' for stdin) as FASTA.

    With --rate 0 it only cuts --region. The same mutation model as 'pair --random LEN --mutate RATE'.

    \b
    Example: the first 1 Mb of E. coli K-12 against a copy with 1% mutations
      nwalign mutate data/ecoli_k12_mg1655_NC_000913.fasta.gz --region 1-1M --rate 0 -o ecoli_1M.fa
      nwalign mutate ecoli_1M.fa --rate 0.01 --seed 7 -o ecoli_1M_mut.fa
      nwalign pair ecoli_1M.fa ecoli_1M_mut.fa --format tsv
    """
    from .sequences import mutate, parse_region, read_fasta

    from .sequences import Record

    records = read_fasta(fasta)
    with output_stream(output, (fasta,)) as out:
        for k, rec in enumerate(records):
            if region:
                start, end = parse_region(region)
                if end > len(rec.seq):
                    raise NwalignError(f"--region {region}: record {rec.id} has only {len(rec.seq)} residues "
                                       "(the region must lie inside the sequence)")
                rec = Record(rec.id, rec.description, rec.seq[start:end])
            new = mutate(rec, rate, seed + k) if rate else rec
            words = new.description.split(maxsplit=1)  # Bio's description starts with the id
            note = words[1] if words and words[0] == new.id and len(words) > 1 else new.description
            note = "" if note == new.id else note
            out.write(f">{new.id} {note}{f' region={region}' if region else ''}".rstrip() + "\n")
            for i in range(0, len(new.seq), 70):
                out.write(new.seq[i:i + 70] + "\n")


@cli.command()
@click.option("--workload", type=click.Choice(("pair", "search", "allpairs")), default="pair", show_default=True,
              help="pair: one alignment per --sizes; search: queries of --query-lengths against a database of "
                   "--db-size (Swiss-Prot-like lengths); allpairs: all pairs of --count sequences of each of "
                   "--sizes (16S-like variants of one random sequence), scores only.")
@click.option("--count", type=click.IntRange(min=2), default=500, show_default=True,
              help="allpairs: sequences in the set (count * (count - 1) / 2 pairs).")
@click.option("--slice", "slices", default="32", show_default=True, metavar="K[,K]",
              help="allpairs: lazy-rscan slice heights to time (2, 4, 8, 16, 32).")
@click.option("--query-lengths", default="64,256,1024", show_default=True, metavar="N,N,...",
              help="search: random protein queries of these lengths.")
@click.option("--db-size", type=click.IntRange(min=1), default=10000, show_default=True,
              help="search: sequences in the seeded synthetic database (Swiss-Prot: ~570,000).")
@click.option("--check", type=click.IntRange(min=1), default=2000, show_default=True,
              help="search: database sequences (allpairs: sampled pairs) re-scored on the CPU engine to "
                   "verify the GPU kernels; allpairs times the CPU engine on these pairs.")
@click.option("--matrix", metavar="NAME|PATH", help="search: substitution matrix  [default: BLOSUM62]")
@click.option("--gap-open", type=SCORE, metavar="N", help="search: gap open penalty  [default: 11]")
@click.option("--gap-extend", type=SCORE, metavar="N", help="search: gap extend penalty  [default: 1]")
@click.option("--sizes", default="1000,10000", show_default=True, metavar="N,N,...",
              help="Sequence lengths (k/M suffixes allowed): a seeded random query and a 10%-mutated copy.")
@click.option("--input", "inputs", multiple=True, metavar="FASTA",
              help="Time these sequences instead: one file with two records, or --input twice.")
@click.option("--kernels", default="all", show_default=True, metavar="all|NAME,...",
              help="cpu (the CPU engine), cpu-serial (single-thread scalar reference, the papers' "
                   "baseline), CUDA kernels (" + ", ".join(KERNELS) + "), peers (parasail, biopython).")
@click.option("--repeats", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True)
@click.option("--mode", type=click.Choice(MODES), default="global", show_default=True)
@click.option("--score-only/--traceback", default=True, show_default=True,
              help="Time the score only, or the whole alignment with traceback.")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="cpu: time only the CPU engines and peers.")
@click.option("--block", "blocks", default="32x32", show_default=True, metavar="RxC[,RxC]",
              help="diagonal-block tile shapes to time (e.g. 8x8,16x16,32x32); allpairs: threads per block "
                   "or tile sizes (e.g. 32,64,128,256), each timed where the kernel accepts it.")
@click.option("--shared/--no-shared", default=True, show_default=True, help="diagonal-block shared memory.")
@click.option("--alphabet", type=click.Choice(ALPHABETS), help="Alphabet of random inputs  [default: dna]")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True)
@click.option("--peers/--no-peers", default=True, show_default=True,
              help="Include parasail and Biopython when installed (each skip is reported).")
@click.option("--json", "json_out", metavar="FILE", help="Write the rows as a JSON list.")
@click.option("--tsv", "tsv_out", metavar="FILE", help="Write the rows as TSV.")
@click.option("--plot", "plot_out", metavar="FILE.png", help="Plot time and GCUPS against size (matplotlib).")
@click.option("-v", "--verbose", is_flag=True, help="Log each run's choices (memory paths, launch shapes).")
@click.option("-q", "--quiet", is_flag=True, help="No table, only errors and mismatches.")
def bench(workload, count, slices, query_lengths, db_size, check, matrix, gap_open, gap_extend, sizes, inputs, kernels,
          repeats, warmup, mode, score_only, backend, blocks, shared, alphabet, seed, peers, json_out, tsv_out, plot_out,
          verbose, quiet):
    """Time kernels, the CPU engine and peers on the same inputs, verifying every result.

    GPU kernels are timed with CUDA events after the warm-up runs, CPU engines and peers with a wall
    clock; the table shows the median (min-max) of --repeats runs, GCUPS, and the speedup over the CPU
    engine and over the single-thread reference. Exit code 1 when any result disagrees with its
    reference (the mismatch is printed), 2 for bad options.

    \b
    Examples:
      nwalign bench --sizes 1000,10000 --repeats 5
      nwalign bench --kernels diagonal-block --block 8x8,16x16,32x32 --sizes 10k,20k --json t1.json
      nwalign bench --traceback --kernels cpu,wavefront,adm-submatrix --sizes 10k,37k --plot t.png
      nwalign bench --workload allpairs --sizes 1500 --count 1000 --kernels lazy-rscan --slice 4,8,16,32
    """
    from .sequences import parse_lengths

    from rich.console import Console

    from .bench import plot, rows_to_json, rows_to_tsv, run_pair, run_search, table

    _setup_logging(verbose, quiet)
    status = _status("bench", quiet)
    try:
        if workload == "allpairs":
            from .bench import run_allpairs

            size_list = [] if inputs else [n for part in sizes.split(",") for n in parse_lengths(part, "--sizes")]
            try:
                slice_list = [int(k) for k in slices.split(",")]
                default_block = click.get_current_context().get_parameter_source("blocks").name == "DEFAULT"
                block_list = [None] if default_block else [int(b) for b in blocks.split(",")]
            except ValueError:
                raise NwalignError(f"--slice {slices} / --block {blocks}: give comma-separated integers") from None
            rows = run_allpairs(size_list, count, kernels, repeats, warmup, mode, backend, slice_list, block_list,
                                list(inputs), seed, alphabet, check, status)
        elif workload == "search":
            lengths = [n for part in query_lengths.split(",") for n in parse_lengths(part, "--query-lengths")]
            rows = run_search(lengths, db_size, kernels, repeats, warmup, backend, list(inputs), seed, matrix, gap_open,
                              gap_extend, check, status)
        else:
            size_list = [] if inputs else [n for part in sizes.split(",") for n in parse_lengths(part, "--sizes")]
            block_list = [parse_block(b) for b in blocks.split(",")]
            rows = run_pair(size_list, kernels, repeats, warmup, mode, not score_only, backend, block_list, shared,
                            list(inputs), seed, peers, alphabet, status)
    finally:
        status(None)
    if not quiet:  # not a terminal (a pipe, a file, CI): wide enough that no cell is cut
        Console(width=None if sys.stdout.isatty() else 200).print(table(rows, workload, mode, score_only))
    if json_out:
        with output_stream(json_out) as out:
            out.write(rows_to_json(rows))
    if tsv_out:
        with output_stream(tsv_out) as out:
            out.write(rows_to_tsv(rows))
    if plot_out:
        plot(rows, plot_out)
    if not all(r.verified for r in rows):
        raise click.exceptions.Exit(1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def devices(as_json):
    """List the GPUs CuPy sees (name, memory, compute capability, versions) and the CUDA kernels."""
    import json

    from rich.console import Console
    from rich.table import Table

    from . import cuda

    info = cuda.device_info()
    if as_json:
        click.echo(json.dumps(dict(available=cuda.available(), reason=cuda.why_unavailable(), devices=info,
                                   kernels=list(KERNELS))))
        return
    console = Console()
    if not info:
        console.print(f"No GPU: {cuda.why_unavailable()}. The CPU engine is used.", markup=False)
    else:
        table = Table(title="GPUs")
        for col in ("#", "name", "compute capability", "SMs", "memory free / total", "CuPy", "CUDA runtime/driver"):
            table.add_column(col)
        for d in info:
            table.add_row(str(d["index"]), d["name"], d["compute_capability"], str(d["multiprocessors"]),
                          f"{d['memory_free'] / 2**30:.1f} / {d['memory_total'] / 2**30:.1f} GiB", d["cupy"],
                          f"{d['cuda_runtime']} / {d['cuda_driver']}")
        console.print(table)
    console.print("CUDA kernels: pair: " + ", ".join(KERNELS) + "; allpairs: " + ", ".join(AP_KERNELS)
                  + "; search: scan, gsw")


def _terminate(signum, frame):
    # SIGTERM / SIGHUP end the run like an error would, so that temporary output files are removed.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 success, 2 bad input or usage, 1 other failure, 128 + N when
    stopped by signal N)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminate)
    try:
        # Without standalone mode Click returns (not raises) the code of a click.exceptions.Exit.
        code = cli.main(args=argv, prog_name="nwalign", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except NwalignError as exc:
        click.echo(f"nwalign: error: {exc.cli}", err=True)  # the line that names command-line options
        return 2
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc), err=True)
        return 2
    except click.UsageError as exc:
        click.echo(f"nwalign: error: {exc.format_message()}", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"nwalign: error: {exc.format_message()}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("nwalign: interrupted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("nwalign: interrupted", err=True)
        return 130
    except (BrokenPipeError, _ClosedPipe):
        return _closed_pipe()
    except SystemExit as exc:
        # Click answers a closed pipe it sees itself with exit status 1 after wrapping the streams.
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            return _closed_pipe()
        raise
    except WorkerLost as exc:
        click.echo(f"nwalign: error: {exc}", err=True)
        return 1
    except MemoryError:
        command = next((a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")), "")
        hint = {"pair": "lower --max-memory or align smaller pieces", "bench": "use smaller --sizes or --count",
                "allpairs": "lower --threads or use fewer or shorter sequences"}.get(command, "use a smaller input")
        click.echo(f"nwalign: error: out of memory; {hint}", err=True)
        return 2


def _closed_pipe() -> int:
    """The reader went away (``| head``): stop quietly with the shell's status for SIGPIPE, 141, as a
    command killed by it would (the Python docs' SIGPIPE note: send the rest of the output to devnull)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, ValueError):
        pass
    return 141


def entry() -> None:
    code = main()
    if "cupy" in sys.modules:
        # Leave without the interpreter's teardown: freeing CuPy's memory pools and the CUDA context took
        # ~0.2 s at the end of every GPU run, and the operating system reclaims both at once.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # a closed pipe: let the normal exit deal with it
            sys.exit(code)
        os._exit(code)
    sys.exit(code)
