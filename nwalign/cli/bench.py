"""``nwalign bench``: kernels, the CPU engine and peers timed on the same inputs, every result verified."""

from __future__ import annotations

import os
import sys

import click

from nwalign.errors import NwalignError
from nwalign.names import ALPHABETS, BACKENDS, GPU_MODES, PAIR_KERNELS
from nwalign.output.files import check_output, output_stream
from nwalign.cli.group import cli
from nwalign.cli.options import SCORE, option_group, parse_block, setup_logging
from nwalign.cli.progress import status as _status


_WORKLOAD_OPTIONS = (
    click.option("--workload", type=click.Choice(("pair", "search", "allpairs")), default="pair", show_default=True,
                  help="pair: one alignment per --sizes; search: queries of --query-lengths against a database of "
                       "--db-size (Swiss-Prot-like lengths); allpairs: all pairs of --count sequences of each of "
                       "--sizes (16S-like variants of one random sequence), scores only."),
    click.option("--count", type=click.IntRange(min=2), default=500, show_default=True,
                  help="allpairs: sequences in the set (count * (count - 1) / 2 pairs)."),
    click.option("--slice", "slices", default="32", show_default=True, metavar="K[,K]",
                  help="allpairs: lazy-rscan slice heights to time (2, 4, 8, 16, 32)."),
    click.option("--query-lengths", default="64,256,1024", show_default=True, metavar="N,N,...",
                  help="search: random protein queries of these lengths."),
    click.option("--db-size", type=click.IntRange(min=1), default=10000, show_default=True,
                  help="search: sequences in the seeded synthetic database (Swiss-Prot: ~570,000)."),
    click.option("--check", type=click.IntRange(min=1), default=2000, show_default=True,
                  help="search: database sequences (allpairs: sampled pairs) re-scored on the CPU engine to "
                       "verify the GPU kernels; allpairs times the CPU engine on these pairs."),
    click.option("--matrix", metavar="NAME|PATH", help="search: substitution matrix  [default: BLOSUM62]"),
    click.option("--gap-open", type=SCORE, metavar="N", help="search: gap open penalty  [default: 11]"),
    click.option("--gap-extend", type=SCORE, metavar="N", help="search: gap extend penalty  [default: 1]"),
    click.option("--sizes", default="1000,10000", show_default=True, metavar="N,N,...",
                  help="Sequence lengths (k/M suffixes allowed): a seeded random query and a 10%-mutated copy."),
    click.option("--input", "inputs", multiple=True, metavar="FASTA",
                  help="Time these sequences instead: one file with two records, or --input twice."),
    click.option("--kernels", default="all", show_default=True, metavar="all|NAME,...",
                  help="cpu (the CPU engine), cpu-serial (single-thread scalar reference, the papers' "
                       "baseline), CUDA kernels (" + ", ".join(PAIR_KERNELS) + "), peers (parasail, biopython)."),
)


_workload_options = option_group(_WORKLOAD_OPTIONS, "What bench measures: the workload, sizes, inputs, kernels.")


_OUTPUT_OPTIONS = (
    click.option("--json", "json_out", metavar="FILE", help="Write the rows as a JSON list."),
    click.option("--tsv", "tsv_out", metavar="FILE", help="Write the rows as TSV."),
    click.option("--plot", "plot_out", metavar="FILE.png", help="Plot time and GCUPS against size (matplotlib)."),
    click.option("-v", "--verbose", is_flag=True, help="Log each run's choices (memory paths, launch shapes)."),
    click.option("-q", "--quiet", is_flag=True, help="No table, only errors and mismatches."),
)


_output_options = option_group(_OUTPUT_OPTIONS, "Where the rows go besides the table (--json, --tsv, --plot), -v, -q.")


@cli.command()
@_workload_options
@click.option("--repeats", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True)
@click.option("--mode", type=click.Choice(GPU_MODES + ("glocal",)), default=None,
              help="pair and allpairs: global (the default), local, semiglobal or glocal (pair: the kernels "
                   "with a glocal instance); search: local (the default) or glocal.")
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
@_output_options
def bench(workload, count, slices, query_lengths, db_size, check, matrix, gap_open, gap_extend, sizes, inputs, kernels,
          repeats, warmup, mode, score_only, backend, blocks, shared, alphabet, seed, peers, json_out, tsv_out,
          plot_out, verbose, quiet):
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

    from rich.console import Console

    from nwalign.bench import plot, rows_to_json, rows_to_tsv, table

    setup_logging(verbose, quiet)
    outputs = [(path, option) for path, option in ((json_out, "--json"), (tsv_out, "--tsv"), (plot_out, "--plot"))
               if path is not None and path != "-"]
    for path, option in outputs:
        check_output(path, inputs, option=option)  # before the benchmark, not after it: never an input
    for k, (path, option) in enumerate(outputs):  # nor one output over another
        for other, other_option in outputs[:k]:
            if os.path.realpath(path) == os.path.realpath(other):
                raise NwalignError(f"{other_option} {other} and {option} {path}: the same file; give each its own")
    if plot_out:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise NwalignError("--plot needs matplotlib (pip install nwalign[bench])")
    status = _status("bench", quiet)
    try:
        rows = _measure(workload, count, slices, query_lengths, db_size, check, matrix, gap_open, gap_extend, sizes,
                        inputs, kernels, repeats, warmup, mode, score_only, backend, blocks, shared, alphabet, seed,
                        peers, status)
    finally:
        status(None)
    if not quiet:  # not a terminal (a pipe, a file, CI): wide enough that no cell is cut
        Console(width=None if sys.stdout.isatty() else 200).print(table(rows, workload, mode, score_only))
    if json_out:
        with output_stream(json_out, option="--json") as out:
            out.write(rows_to_json(rows))
    if tsv_out:
        with output_stream(tsv_out, option="--tsv") as out:
            out.write(rows_to_tsv(rows))
    if plot_out:
        plot(rows, plot_out)
    if not all(r.verified for r in rows):
        raise click.exceptions.Exit(1)


def _measure(workload, count, slices, query_lengths, db_size, check, matrix, gap_open, gap_extend, sizes, inputs,
             kernels, repeats, warmup, mode, score_only, backend, blocks, shared, alphabet, seed, peers, status):
    """The rows of one bench command's workload (see :mod:`nwalign.bench.workloads`)."""
    from nwalign.bench import run_allpairs, run_pair, run_search
    from nwalign.io.simulate import parse_lengths

    if workload == "allpairs":
        mode = mode or "global"
        size_list = [] if inputs else [n for part in sizes.split(",") for n in parse_lengths(part, "--sizes")]
        try:
            slice_list = [int(k) for k in slices.split(",")]
            default_block = click.get_current_context().get_parameter_source("blocks").name == "DEFAULT"
            block_list = [None] if default_block else [int(b) for b in blocks.split(",")]
        except ValueError:
            raise NwalignError(f"--slice {slices} / --block {blocks}: give comma-separated integers") from None
        return run_allpairs(size_list, count, kernels, repeats, warmup, mode, backend, slice_list, block_list,
                            list(inputs), seed, alphabet, check, status)
    if workload == "search":
        if mode not in (None, "local", "glocal"):
            raise NwalignError(f"--mode {mode}: the search workload is local or glocal")
        lengths = [n for part in query_lengths.split(",") for n in parse_lengths(part, "--query-lengths")]
        return run_search(lengths, db_size, kernels, repeats, warmup, backend, list(inputs), seed, matrix, gap_open,
                          gap_extend, check, status, mode or "local")
    mode = mode or "global"
    size_list = [] if inputs else [n for part in sizes.split(",") for n in parse_lengths(part, "--sizes")]
    block_list = [parse_block(b) for b in blocks.split(",")]
    return run_pair(size_list, kernels, repeats, warmup, mode, not score_only, backend, block_list, shared,
                    list(inputs), seed, peers, alphabet, status)
