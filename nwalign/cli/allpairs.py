"""``nwalign allpairs``: every pair of a set (or set against set), as TSV rows and a distance matrix."""

from __future__ import annotations

import logging
import os
import pathlib
import time

import click

from nwalign.errors import NwalignError
from nwalign.names import (ALLPAIRS_COLUMNS, ALLPAIRS_DEFAULT_COLUMNS, ALLPAIRS_DEFAULT_SLICE, ALLPAIRS_KERNELS, ALLPAIRS_SLICES, BACKENDS, MODES)
from nwalign.output.files import check_output, distance_matrix, fill_distances, output_stream
from nwalign.cli.group import cli
from nwalign.cli.options import (check_shared_dir, refuse_gpu_options, header_option, option_group, parse_columns, run_options, scoring_options, setup_logging, spread_options)
from nwalign.cli.progress import progress as _progress

log = logging.getLogger("nwalign")


_KERNEL_OPTIONS = (
    click.option("--kernel", "ap_kernel", type=click.Choice(("auto",) + ALLPAIRS_KERNELS), default="auto",
                 show_default=True,
              help="GPU score kernel (Li et al., section 4): lazy-rscan (one thread per pair, a slice of "
                   "--slice query rows in registers), rscan (row scan through global memory), dscan (one "
                   "block per pair, anti-diagonals in shared memory), tiled-dscan (one launch per tile "
                   "diagonal). auto: lazy-rscan when the pairs fill the GPU, else dscan."),
    click.option("--slice", "slice_k", type=click.Choice([str(k) for k in ALLPAIRS_SLICES]),
                 default=str(ALLPAIRS_DEFAULT_SLICE),
              show_default=True, help="lazy-rscan slice height k (query rows per thread)."),
    click.option("--block", "ap_block", type=click.IntRange(min=1), metavar="N",
              help="tiled-dscan tile size (8, 16 or 32; default 16), or threads per block: dscan (default "
                   "256), lazy-rscan and rscan (up to 256, default 128)."),
)


_kernel_options = option_group(_KERNEL_OPTIONS, "--kernel, --slice and --block: the GPU score kernel and its knobs.")


@cli.command()
@click.argument("seqs")
@click.option("--against", metavar="FASTA", help="Align every SEQS record against every record of this file "
              "instead of all pairs i < j within SEQS.")
@click.option("--mode", type=click.Choice(MODES), default="global", show_default=True,
              help="global, local, semiglobal, or glocal (the first sequence of each pair whole inside the "
                   "second).")
@scoring_options
@click.option("--columns", default=",".join(ALLPAIRS_DEFAULT_COLUMNS), show_default=" ".join(ALLPAIRS_DEFAULT_COLUMNS),
              metavar="NAME,...",
              help="TSV columns from: " + ", ".join(ALLPAIRS_COLUMNS) + ". Score-only columns skip the traceback.")
@click.option("--min-identity", type=float, metavar="F",
              help="Keep pairs with identity >= F (0-1, BLAST identity). In global mode a score bound "
                   "skips the traceback of pairs that cannot reach F (never dropping one that does).")
@click.option("--matrix-out", metavar="FILE.phy|FILE.npy",
              help="Also write the distance matrix 1 - identity (PHYLIP or NumPy; aligns every pair).")
@header_option
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="Where the scores are computed: the GPU kernels (cuda), the CPU engine, or the GPU when "
                   "there is one. Reported pairs are aligned on the CPU engine.")
@_kernel_options
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
    from nwalign.jobs.allpairs.job import AllPairs, AllPairsOptions  # NumPy and the engines: once a command runs
    from nwalign.plan.options import Placement
    from nwalign.plan.prepare import ScoringRequest
    from nwalign.output.writers.base import program_line
    from nwalign.output.writers.tsv import Table

    setup_logging(verbose, quiet)
    cols = parse_columns(columns, ALLPAIRS_COLUMNS)
    if matrix_out and not matrix_out.endswith((".phy", ".npy")):
        raise NwalignError(f"--matrix-out {matrix_out}: the name must end in .phy (PHYLIP) or .npy (NumPy)")
    if matrix_out and matrix_out.endswith(".phy") and against:
        raise NwalignError("--matrix-out .phy needs a square matrix: use .npy with --against")
    check_shared_dir(shared_dir, workers, scheduler, devices)
    check_output(matrix_out, (seqs, against), "--matrix-out")
    check_output(output, (seqs, against))  # before the inputs are read
    if matrix_out and output and output != "-" and os.path.realpath(matrix_out) == os.path.realpath(output):
        raise NwalignError(f"--matrix-out {matrix_out} and -o {output}: the same file; give two paths")
    job = AllPairs(pathlib.Path(seqs), pathlib.Path(against) if against else None,
                   request=ScoringRequest(alphabet, matrix, match, mismatch, gap_open, gap_extend),
                   placement=Placement(backend, device, devices, threads, workers, scheduler, None, shared_dir),
                   options=AllPairsOptions(mode, cols, min_identity, matrix_out is not None, ap_kernel, int(slice_k),
                                           ap_block))
    refuse_gpu_options(job.engine.on_gpu, backend, ("ap_kernel", "slice_k", "ap_block", "device"))
    a, b, stats = job.a, job.b, job.stats
    log.info("allpairs: %d x %d sequences, %s, scores on %s, %d CPU threads", len(a), len(b or a), mode,
             job.backend, job.threads)
    try:
        with distance_matrix(matrix_out, (len(a), len(b) if b else len(a)), [r.record.id for r in a]) as dist, \
                output_stream(output, (seqs, against)) as out:
            table = Table(out, cols, bool(header), program_line("nwalign allpairs"))
            advance = _progress("allpairs", job.cells, quiet, "cells", tasks=lambda: job.tasks)  # in DP cells
            writing = 0.0  # seconds this process spent writing rows (the -v timeline)
            for block in job.blocks():
                advance(job.span_cells(block.start, block.stop))
                clock = time.perf_counter()
                table.write(block.text)
                writing += time.perf_counter() - clock
                if dist is not None:
                    fill_distances(dist, block, len(a), len(b) if b else None)
            table.end()
        log.debug("allpairs: rows written in %.2f s", writing)
    finally:
        job.close()
    _report(stats, min_identity, quiet)


def _report(stats: dict, min_identity, quiet: bool) -> None:
    """-v: where the time went; and the identity filter's counts (unless -q)."""
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
