"""``nwalign search``: every query against every database sequence, BLAST's tabular report and more."""

from __future__ import annotations

import logging
import pathlib
import time

import click

from nwalign.names import BACKENDS, SEARCH_BLAST_COLUMNS, SEARCH_MODES, SEARCH_COLUMNS, SEARCH_JSON_COLUMNS, SEARCH_SCORE_COLUMNS
from nwalign.errors import NwalignError
from nwalign.output.files import check_output, output_stream
from nwalign.cli.group import cli
from nwalign.cli.options import (check_shared_dir, refuse_gpu_options, header_option, parse_columns, run_options, scoring_options, setup_logging, spread_options)
from nwalign.cli.progress import progress as _progress

log = logging.getLogger("nwalign")


@cli.command()
@click.argument("query")
@click.argument("database")
@click.option("--mode", type=click.Choice(SEARCH_MODES), default="local", show_default=True,
              help="local: Smith-Waterman (blastp's, ssearch36's). glocal: the whole query placed inside each "
                   "subject, the subject's ends free (glsearch36's; primers, reads, domains in longer "
                   "sequences); one alignment a subject, E-values fitted per query to the database's own scores.")
@click.option("--top", "--max-target-seqs", "top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Subjects reported per query (BLAST's -max_target_seqs), best first.")
@click.option("--max-hsps", type=click.IntRange(min=1), metavar="N",
              help="Alignments reported per subject (BLAST's -max_hsps): the best, then each next best that "
                   "aligns no residue pair of those before it (Waterman-Eggert, as SSEARCH's alternatives), "
                   "on both strands.  [default: every one with E-value <= --max-evalue; 1 without a finite E-value cut]")
@click.option("--max-evalue", type=float, metavar="E",
              help="Report only alignments with E-value <= E (BLAST's -evalue).  [default: 10 where the scoring "
                   "has E-values; inf: every subject's best alignment, whatever its E-value]")
@click.option("--min-score", type=int, metavar="S", help="Report only alignments with raw score >= S.")
@click.option("--min-identity", type=float, metavar="F",
              help="Report only alignments with identity >= F, a fraction (BLAST's -perc_identity 90 is 0.9).")
@click.option("--query-cover", type=float, metavar="PCT",
              help="Report only alignments covering >= PCT % of the query (BLAST's -qcov_hsp_perc, "
                   "DIAMOND's --query-cover, per alignment).")
@click.option("--subject-cover", type=float, metavar="PCT",
              help="Report only alignments covering >= PCT % of the subject (DIAMOND's --subject-cover).")
@click.option("--columns", default=",".join(SEARCH_BLAST_COLUMNS), show_default="BLAST's 12 standard columns",
              metavar="NAME,...",
              help="TSV columns (BLAST tabular names, comma- or space-separated): " + ", ".join(SEARCH_COLUMNS)
                   + ". Only " + ", ".join(SEARCH_SCORE_COLUMNS) + " with --max-hsps 1: no hit is aligned (faster).")
@header_option
@click.option("--format", "fmt", type=click.Choice(("tsv", "json", "pair", "sam", "xml")), default="tsv",
              show_default=True, help="xml: BLAST XML (-outfmt 5), as Bio.Blast and Blast2GO read it.")
@click.option("--strand", type=click.Choice(("both", "plus", "minus")), default=None,
              help="Nucleotide searches: the query's strands searched (BLAST's -strand)  [default: both; a "
                   "minus-strand hit has sstart > send, SAM flag 16]")
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
@click.option("--gpu-memory", metavar="SIZE",
              help="GPU memory the scan may use, such as 16G or 512M (default: what the GPU has free; CuPy's "
                   "CUPY_GPU_MEMORY_LIMIT is respected too). A database that does not fit is streamed through "
                   "the GPU in chunks, with the same hits; -v says which.")
@spread_options("on GPUs, the whole database on each and the queries dealt one by one (shards in a worker "
                "process per GPU where it does not fit); on workers, the database cut into shards balanced by "
                "residues and the queries into rounds; a .nwdb database is read by every worker, a FASTA one written once as a "
                ".nwdb in --shared-dir", auto_cells="3 x 10^12 (query letters x database letters, as the files' sizes "
                "bound them)")
@run_options
def search(query, database, mode, top, max_hsps, max_evalue, min_score, min_identity, query_cover, subject_cover, columns, header, fmt, strand, matrix, match, mismatch, gap_open,
           gap_extend, alphabet, backend, search_kernel, threads, gpu_memory, workers, scheduler, devices, shared_dir,
           device, output, verbose, quiet):
    """Smith-Waterman search (or glocal, --mode glocal) of every QUERY record against every DATABASE sequence.

    DATABASE is FASTA (plain/gzip, '-' not allowed when QUERY is '-') or a .nwdb from 'nwalign makedb'.
    Subjects: best score descending, ties in database order; each subject's alignments (HSPs) in score
    order, every one aligned in full, so every column is exact. By default every alignment of a subject
    with E-value <= 10 is reported, as blastp and blastn do. Nucleotide queries are searched on both strands (--strand) with blastn's scoring
    (+2/-3, gaps 7/2) unless told otherwise. E-values and bit scores: BLAST's parameters where it
    tabulates the matrix and gaps (blastp's E-values exactly, as `blastp -comp_based_stats 0 -seg no`
    gives them; a gap of L costs open + (L-1) x extend, so blastp's default gaps 11/1 are --gap-open 12),
    parameters estimated once per scoring for
    any other (-v says which); a scoring in the linear phase (gaps too cheap) has none, said once.

    \b
    Example:
      nwalign search data/queries_5_opal.fasta data/swissprot_first196.fasta --top 3
    """
    import numpy as np  # NumPy and the engines: once a command runs, not for --help

    from nwalign.jobs.search.job import Search, SearchOptions
    from nwalign.plan.options import Placement
    from nwalign.plan.prepare import ScoringRequest
    from nwalign.output import writers

    started = time.perf_counter()
    setup_logging(verbose, quiet)
    if query == "-" and database == "-":
        raise NwalignError("only one of QUERY and DATABASE can be '-' (stdin)")
    check_output(output, (query, database))  # before the inputs are read
    cols = parse_columns(columns, SEARCH_COLUMNS)
    check_shared_dir(shared_dir, workers, scheduler, devices)
    run = Search(pathlib.Path(query), database,
                 request=ScoringRequest(alphabet, matrix, match, mismatch, gap_open, gap_extend),
                 placement=Placement(backend, device, devices, threads, workers, scheduler, None, shared_dir),
                 options=SearchOptions(top, max_evalue, min_score,
                                       # score columns only: the scan says it all
                                       fmt != "tsv" or not set(cols) <= set(SEARCH_SCORE_COLUMNS),
                                       search_kernel, strand, gpu_memory=gpu_memory, max_hsps=max_hsps,
                                       min_identity=min_identity, query_cover=query_cover,
                                       subject_cover=subject_cover, mode=mode))
    if run.leads:  # in this process (workers: their engine is the cluster's)
        refuse_gpu_options(run.engine.on_gpu, backend, ("search_kernel", "gpu_memory", "device"))
    scoring, db = run.scoring, run.database
    with output_stream(output, (query, database)) as out:
        writer = None
        cells = sum(len(q.seq) for q in run.queries) * db.total_length
        for query_record, hits in run.run(_progress("search", cells, quiet, "cells", tasks=lambda: run.tasks)):  # GCUPS
            if writer is None:  # a header only once the first query's hits exist (and the database checked out)
                targets = zip(db.ids, np.diff(db.offsets).tolist()) if fmt in ("sam", "xml") else ()
                writer = writers.make(fmt, out, scoring, targets=list(targets), header=header, columns=cols,
                                      json_columns=SEARCH_JSON_COLUMNS, program="search")
                writer.begin()
            writer.write_hits(hits, query_record.id, query_record)
            if output is None:
                out.flush()
        writer.end()
    log.debug("search: output written")
    log.info("search: done in %.2f s%s", time.perf_counter() - started, run.scanner.timing() if run.scanner else "")
