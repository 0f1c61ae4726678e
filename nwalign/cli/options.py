"""What every command's options share: sizes, scores, columns, logging, and the option groups defined
once (scoring, run, spread, header)."""

from __future__ import annotations

import logging
import os
import re
import sys
import time

import click

from nwalign.errors import NwalignError
from nwalign.names import ALPHABETS
from nwalign.sizes import size_bytes

log = logging.getLogger("nwalign")


def parse_size(text: str) -> int:
    """'4G', '4GiB', '512M', '64k' or a byte count -> bytes (binary units)."""
    value = size_bytes(text)
    if value is None:
        raise NwalignError(f"--max-memory: {text!r} is not a size such as 4G or 512M")
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
    from nwalign.names import SEARCH_BLAST_COLUMNS

    cols = tuple(c for word in re.split(r"[,\s]+", text) if word  # "std": BLAST's 12 standard columns
                 for c in (SEARCH_BLAST_COLUMNS if word == "std" else (word,)))
    unknown = [c for c in cols if c not in allowed]
    if unknown or not cols:
        raise NwalignError(f"--columns: unknown column {unknown[0] if unknown else '(none)'!r} "
                           f"(choose from {', '.join(allowed)})")
    return cols


def _started_before_logging() -> float:
    """Seconds from the process's start (Linux's /proc, to 10 ms) to the logging module's import, where
    -v's times count from otherwise; 0.0 where unknown."""
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22: start time, clock ticks after boot
        with open("/proc/uptime") as uptime:
            booted = time.time() - float(uptime.read().split()[0])
        return max(0.0, logging._startTime - booted - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


class _TimedFormatter(logging.Formatter):
    """Milliseconds since the process started and, where Linux's /proc says, the resident set size now
    and at its peak, before each message."""

    def __init__(self):
        super().__init__()
        self.before = 1e3 * _started_before_logging()

    def format(self, record: logging.LogRecord) -> str:
        memory = ""
        try:
            with open("/proc/self/status") as status:
                kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in status)
                      if k in ("VmRSS", "VmHWM")}
            memory = f", RSS {kb['VmRSS'] / 2**20:.2f} GiB (peak {kb['VmHWM'] / 2**20:.2f})"
        except (OSError, KeyError, ValueError):
            pass
        return f"nwalign: {self.before + record.relativeCreated:6.0f} ms{memory}: {record.getMessage()}"


def setup_logging(verbose: bool, quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    # NWALIGN_LOG_TIMES=1 with -v: milliseconds since start-up (and memory) on every line, and the finer
    # debug steps.
    timed = verbose and os.environ.get("NWALIGN_LOG_TIMES", "") not in ("", "0")
    handler.setFormatter(_TimedFormatter() if timed else logging.Formatter("nwalign: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.ERROR if quiet else logging.DEBUG if timed else logging.INFO if verbose else logging.WARNING)
    log.propagate = False


_SCORING_OPTIONS = (
    click.option("--matrix", metavar="NAME|PATH",
                 help="Substitution matrix: a Biopython name (BLOSUM62, PAM250, NUC.4.4, ...) or an "
                      "NCBI-format file. Default BLOSUM62 for protein; --match/--mismatch for DNA/RNA."),
    click.option("--match", type=SCORE, help="DNA/RNA score for identical letters  [default: 5; search: 2]"),
    click.option("--mismatch", type=SCORE, help="DNA/RNA score for different letters  [default: -4; search: -3]"),
    click.option("--gap-open", type=SCORE, metavar="N",
                 help="Penalty of a gap's first position (>= 0): a gap of length L costs open + (L-1) x extend, so "
                      "--gap-open 11 --gap-extend 1 is BLAST's -gapopen 10 -gapextend 1 (and parasail's, "
                      "Biopython's and CUDASW++'s 11/1)  [default: protein 11, DNA 10; DNA search 7]"),
    click.option("--gap-extend", type=SCORE, metavar="N",
                 help="Penalty of each further gap position (>= 0)  [default: 1; DNA search 2]"),
    click.option("--alphabet", type=click.Choice(("auto",) + ALPHABETS), default="auto", show_default=True,
                 help="Residue alphabet; auto detects nucleotides vs protein from the letters."),
)


def option_group(options: tuple, doc: str):
    """A decorator applying Click ``options`` in the order listed (as if written one above the other):
    a group of options defined once, with one help text, for every command that takes it."""
    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command
    decorate.__doc__ = doc
    return decorate


scoring_options = option_group(_SCORING_OPTIONS, "The scoring options of pair, allpairs and search.")


_RUN_OPTIONS = (
    click.option("--device", type=click.IntRange(min=0), default=0, show_default=True,
                 help="GPU number (CUDA device index)."),
    click.option("-o", "--output", metavar="FILE",
                 help="Write here instead of stdout (atomically: nothing is left behind on error)."),
    click.option("-v", "--verbose", is_flag=True,
                 help="Explain choices on stderr (alphabet, backend, memory path, kernel, timings)."),
    click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr (no warnings, no progress)."),
)


run_options = option_group(_RUN_OPTIONS, "--device, -o, -v and -q of pair, allpairs and search.")


def spread_options(how: str, auto_cells: str = "10^12"):
    """--workers, --scheduler, --devices and --shared-dir of pair, allpairs and search (``how``: what the
    workers take; ``auto_cells``: the DP cells from which --devices auto spreads over every GPU)."""
    options = (
        click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
                     help=f"Spread the work over N CPU-engine processes (a local Dask cluster; needs nwalign[dask]): "
                          f"{how}; the output is unchanged."),
        click.option("--scheduler", metavar="ADDRESS|FILE.json",
                     help="Spread the work over a running Dask cluster (its scheduler's address or scheduler file; "
                          "GPU workers with --backend cuda). The input is written once as .nwdb files in "
                          "--shared-dir."),
        click.option("--devices", default="auto", show_default=True, metavar="auto|all|N[,N...]",
                     help="GPUs to run on: auto = every visible GPU when there are two or more and the job has "
                          f"at least {auto_cells} DP cells (unless --device names another GPU), all, or a list such "
                          f"as 0,1. Two or more: a thread per GPU in this process ({how}); the output is unchanged."),
        click.option("--shared-dir", metavar="DIR",
                     help="Directory for the input's temporary .nwdb files that the workers read (default: the "
                          "system's temporary directory; workers on other hosts need a shared one)."),
    )
    return option_group(options, "--workers, --scheduler, --devices and --shared-dir.")


def check_shared_dir(shared_dir, workers, scheduler, devices) -> None:
    if shared_dir is not None and not (workers > 1 or scheduler or devices not in ("auto", None)):
        alone = " (--workers 1 runs in this process, with no worker to share files with)" if workers == 1 else ""
        raise NwalignError(f"--shared-dir is for --workers 2 or more, --scheduler or --devices{alone}")


def header_option(command):
    """--header/--no-header of every command that writes TSV or SAM: one definition, one help text."""
    return click.option("--header/--no-header", default=None,
                        help="TSV: BLAST -outfmt 7-style '#' comment lines (program, query, fields, hits found) "
                             "before each query's rows  [default: none, as -outfmt 6]; SAM: the @HD/@SQ/@PG "
                             "lines  [default: on].")(command)


def refuse_gpu_options(on_gpu: bool, backend: str, params: tuple[str, ...]) -> None:
    """Refuse the GPU's options (``params``: the command's parameter names, such as ``kernel``) given on the
    command line when the CPU engine runs the job: one rule for pair, search and allpairs, instead of
    options silently ignored.

    Raises:
        NwalignError: one line naming the options and why the CPU engine runs.
    """
    ctx = click.get_current_context()
    given = [p for p in ctx.command.params if p.name in params and ctx.get_parameter_source(p.name).name != "DEFAULT"]
    if on_gpu or not given:
        return
    from nwalign import backends

    why = "--backend cpu" if not backends.may_use_gpu(backend) else backends.why_no_gpu()
    flags = "/".join(p.opts[0] for p in given)
    raise NwalignError(f"{flags}: options of the GPU kernels, but the CPU engine would run ({why})")
