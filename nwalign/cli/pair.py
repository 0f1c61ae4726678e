"""``nwalign pair``: align query records against target records and write every alignment."""

from __future__ import annotations

import logging
import os
import pathlib
import shlex
import sys

import click

from nwalign.errors import NwalignError
from nwalign.names import (ALIASES, BACKENDS, COLUMN_NEEDS_ALIGNMENT, DEFAULT_KERNEL, DEFAULT_MAX_MEMORY, FORMATS, MODES, NEEDS_ALIGNMENT, PAIR_KERNELS, TSV_COLUMNS, free_ends_mode, needs_alignment)
from nwalign.output.files import check_output, output_stream
from nwalign.cli.group import cli
from nwalign.cli.options import (check_shared_dir, refuse_gpu_options, header_option, option_group, parse_block, parse_columns, parse_size, run_options, scoring_options, setup_logging, spread_options)
from nwalign.cli.progress import progress as _progress

log = logging.getLogger("nwalign")


_ENGINE_OPTIONS = (
    click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
                  help="Engine: auto = cuda when CuPy sees a GPU, else cpu (-v says which and why)."),
    click.option("--kernel", type=click.Choice(PAIR_KERNELS), default=DEFAULT_KERNEL, show_default=True,
                  help="CUDA kernel (see docs/gpu-kernels.md): the papers' designs, selectable to compare."),
    click.option("--block", default="32x32", show_default=True, metavar="ROWSxCOLS",
                  help="Tile shape of --kernel diagonal-block: 8x8, 16x16, 32x32, 8x128 or 16x64."),
    click.option("--shared/--no-shared", default=True, show_default=True,
                  help="diagonal-block: stage the sequence slices in shared memory."),
    click.option("--max-memory", metavar="SIZE",
                  help="The most memory one traceback may use. On the CPU a direction matrix is kept whole "
                       "up to 64M (or SIZE); beyond, checkpointed bands are recomputed (about twice the work, "
                       "memory ~ n sqrt(m)); a local alignment keeps only its own band.  [default: 4G on the "
                       "CPU; on the GPU 40% of free memory]"),
    click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
                  help="Pairs aligned at once on the CPU (0 = all cores, as for every command)."),
)


_engine_options = option_group(_ENGINE_OPTIONS, "--backend, --kernel, --block, --shared, --max-memory and "
                               "--threads: where and how pairs are aligned.")


@cli.command()
@click.argument("query", required=False)
@click.argument("target", required=False)
@click.option("--mode", type=click.Choice(MODES), default="global", show_default=True,
              help="global (Needleman-Wunsch), local (Smith-Waterman), semiglobal (end gaps free on both: "
                   "overlaps), glocal (the whole query placed inside the target: the target's leading and "
                   "trailing residues free, as glsearch36, parasail's sg_dx, edlib's HW; the CPU engine).")
@click.option("--free-ends", metavar="ENDS",
              help="Which sequence ends may be left out for free, any of query-start, query-end, subject-start, "
                   "subject-end (comma-separated; none: global): parasail's sg_qb .. sg_de, Biopython's "
                   "left/right insertion and deletion scores. All four is semiglobal, the subject's two glocal; "
                   "replaces --mode (not with --mode local); on the CPU engine where it is not global or "
                   "semiglobal.")
@click.option("--max-hsps", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="--mode local: the N best alignments of each pair, each the best that aligns no residue pair "
                   "of those before it (Waterman-Eggert, as search reports a subject's), best first.")
@click.option("--strand", type=click.Choice(("both", "plus", "minus")), default=None,
              help="Nucleotides: align the query as given (plus), its reverse complement (minus), or both and "
                   "report the better, with its strand  [default: as given, no strand reported]")
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
              help="--format tsv columns, comma- or space-separated, BLAST's names: " + ", ".join(
                  COLUMN_NEEDS_ALIGNMENT) + "  [default: " + ",".join(TSV_COLUMNS) + "]. The names before "
                   "version 0.2 are accepted: " + ", ".join(ALIASES) + " (identity and similarity now "
                   "percentages).")
@header_option
@_engine_options
@spread_options("chunks of pairs balanced by DP cells; a pair is never split")
@run_options
def pair(query, target, mode, free_ends, max_hsps, strand, matrix, match, mismatch, gap_open, gap_extend, alphabet, random_lengths,
         seed, mutate_rate, fmt, score_only, columns, header, output, backend, kernel, block, shared, device,
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
    from nwalign.jobs.pair import PairOptions, Pairs  # NumPy and the engines: once a command runs, not for --help
    from nwalign.plan.options import Placement
    from nwalign.plan.prepare import ScoringRequest
    from nwalign.io.simulate import parse_lengths, random_records

    setup_logging(verbose, quiet)
    mode = _with_free_ends(mode, free_ends)
    if score_only and fmt in NEEDS_ALIGNMENT:
        raise NwalignError(f"--format {fmt} needs the alignment; drop --score-only or use pair/json/tsv")
    cols = _pair_columns(columns, fmt, score_only)
    if random_lengths:
        if query or target:
            raise NwalignError("give either --random or QUERY and TARGET files, not both")
        kind = "dna" if alphabet == "auto" else alphabet
        lengths = parse_lengths(random_lengths)
        if mutate_rate is not None and len(lengths) == 2:  # the 60 of --random 50,60 was ignored
            raise NwalignError(f"--random {random_lengths} with --mutate: the target is the query mutated; give "
                               "one length (--random LEN --mutate RATE)")
        records = random_records(lengths if len(lengths) == 2 else lengths * 2, kind, seed, mutate_rate)
        inputs, names = (records[:1], records[1:]), ("--random", "--random")
        log.info("alphabet: %s (--random)", kind)
    else:
        _check_pair_files(query, target, mutate_rate)
        inputs, names, kind = (pathlib.Path(query), pathlib.Path(target)), (query, target), alphabet
    check_output(output, (query, target))  # before the inputs are read
    memory = parse_size(max_memory) if max_memory else DEFAULT_MAX_MEMORY
    check_shared_dir(shared_dir, workers, scheduler, devices)
    job = Pairs(*inputs, request=ScoringRequest(kind, matrix, match, mismatch, gap_open, gap_extend),
                placement=Placement(backend, device, devices, threads or os.cpu_count() or 1, workers, scheduler,
                                    None, shared_dir),
                options=PairOptions(mode, score_only, memory, kernel, parse_block(block), shared,
                                    memory if max_memory else None, strand, names[0], names[1], max_hsps))
    try:
        _write_pairs(job, backend, score_only, fmt, cols, header, output, query, target, quiet)
    finally:
        job.close()


def _write_pairs(job, backend, score_only, fmt, cols, header, output, query, target, quiet) -> None:
    from nwalign.output import writers

    refuse_gpu_options(job.engine.on_gpu, backend, ("kernel", "block", "shared"))
    within = None  # a lone large pair on the CPU engine: progress through its traceback
    if len(job.plan) == 1 and not job.engine.on_gpu and not score_only and job.cells() >= 10**8:
        within = _progress("pair", 1000, quiet, "", fraction=True)  # per mille of the traceback
    results = job.run(within)  # memory is checked here, before anything is written
    command = "nwalign " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else ""
    with output_stream(output, (query, target)) as out:
        writer = writers.make(fmt, out, job.scoring, targets=[t.record for t in job.targets], header=header,
                              command=command, columns=cols, score_only=score_only)
        writer.begin()
        cells = [job.cells(k) for k in range(len(job.plan))]  # the bar's rate in GCUPS
        progress = _progress("pair", sum(cells), quiet or len(job.plan) < 2, "cells", tasks=lambda: job.tasks)
        for k, aln in enumerate(results):
            writer.write(aln)
            progress(cells[k] if k < len(cells) else 0)  # --max-hsps: more alignments than pairs
            if output is None:
                out.flush()
        writer.end()


def _pair_columns(columns: str | None, fmt: str, score_only: bool):
    """pair's --columns, checked against --format and --score-only (None: the default columns)."""
    if columns is None:
        return None
    if fmt != "tsv":
        raise NwalignError(f"--columns is for --format tsv (not {fmt})")
    cols = parse_columns(columns, tuple(COLUMN_NEEDS_ALIGNMENT) + tuple(ALIASES))
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


def _with_free_ends(mode: str, free_ends: str | None) -> str:
    """The mode ``--free-ends`` makes (see nwalign.names.free_ends_mode), or ``mode`` without it.

    Raises:
        NwalignError: an unknown end, or --free-ends with --mode local.
    """
    if free_ends is None:
        return mode
    if mode == "local":
        raise NwalignError("--free-ends is for end-to-end alignments, not --mode local")
    try:
        return free_ends_mode(free_ends)
    except ValueError as exc:
        raise NwalignError(f"--free-ends {free_ends}: {exc}") from None
