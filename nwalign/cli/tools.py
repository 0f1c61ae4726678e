"""The smaller commands: ``makedb`` (a ``.nwdb`` database), ``mutate`` (seeded test sequences) and
``devices`` (the GPUs and kernels)."""

from __future__ import annotations

import re
import sys

import click

from nwalign.errors import NwalignError
from nwalign.names import ALLPAIRS_KERNELS, PAIR_KERNELS
from nwalign.output.files import check_output, output_stream
from nwalign.cli.group import cli
from nwalign.cli.options import setup_logging


@cli.command()
@click.argument("fasta")
@click.option("-o", "--output", required=True, metavar="FILE.nwdb", help="The database file to write.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr (no warnings, no summary line).")
def makedb(fasta, output, quiet):
    """Write FASTA as a memory-mappable .nwdb database for repeated 'nwalign search' runs."""
    from nwalign.io.makedb import makedb as write_db

    setup_logging(False, quiet)
    if output == "-":
        raise NwalignError("makedb: -o needs a file name (the database is memory-mapped from it)")
    check_output(output, (fasta,))
    if not quiet and re.search(r"\.(fa|fasta|fna|faa|ffn|fas|seq)(\.(gz|bz2|xz))?$", output, re.IGNORECASE):
        click.echo(f"nwalign: warning: -o {output}: the database is a binary .nwdb file, not FASTA "
                   "(name it .nwdb)", err=True)
    if sys.stderr.isatty() and not quiet:
        from rich.console import Console

        with Console(stderr=True).status(f"makedb: reading {fasta}, encoding, writing {output}"):
            db = write_db(fasta, output)
    else:
        db = write_db(fasta, output)
    if not quiet:
        click.echo(f"nwalign: {output}: {db.count} sequences, {db.total_length} residues", err=True)


@cli.command("mutate")
@click.argument("fasta")
@click.option("--rate", type=float, default=0.01, show_default=True,
              help="Per-position mutation probability: 80% substitutions, 10% deletions, 10% insertions of "
                   "1-3 letters.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, help="Random seed.")
@click.option("--region", metavar="START-END", help="Take only this 1-based, inclusive region (e.g. 1-1M).")
@click.option("-o", "--output", metavar="FILE", help="Write here (atomically) instead of stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr (no warnings).")
def mutate_command(fasta, rate, seed, region, output, quiet):
    """Write a seeded mutated copy of every record of FASTA ('-' for stdin) as FASTA.

    With --rate 0 it only cuts --region. The same mutation model as 'pair --random LEN --mutate RATE'.

    \b
    Example: the first 1 Mb of E. coli K-12 against a copy with 1% mutations
      nwalign mutate data/ecoli_k12_mg1655_NC_000913.fasta.gz --region 1-1M --rate 0 -o ecoli_1M.fa
      nwalign mutate ecoli_1M.fa --rate 0.01 --seed 7 -o ecoli_1M_mut.fa
      nwalign pair ecoli_1M.fa ecoli_1M_mut.fa --format tsv
    """
    from nwalign.io.sequences import Record, read_fasta
    from nwalign.io.simulate import mutate, parse_region

    setup_logging(False, quiet)
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
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def devices(as_json):
    """List the GPUs CuPy sees (name, memory, compute capability, versions) and the CUDA kernels."""
    import json

    from rich.console import Console
    from rich.table import Table

    from nwalign import backends

    info = backends.device_info()
    if as_json:
        click.echo(json.dumps(dict(available=backends.gpu_available(), reason=backends.why_no_gpu(), devices=info,
                                   kernels=list(PAIR_KERNELS))))
        return
    console = Console()
    # Sentences go out whole (Rich would break them at the terminal's width, mid-phrase when piped).
    if not info:
        click.echo(f"No GPU: {backends.why_no_gpu()}. The CPU engine is used.")
    else:
        table = Table(title="GPUs")
        for col in ("#", "name", "compute capability", "SMs", "memory free / total", "CuPy", "CUDA runtime/driver"):
            table.add_column(col)
        for d in info:
            table.add_row(str(d["index"]), d["name"], d["compute_capability"], str(d["multiprocessors"]),
                          f"{d['memory_free'] / 2**30:.1f} / {d['memory_total'] / 2**30:.1f} GiB", d["cupy"],
                          f"{d['cuda_runtime']} / {d['cuda_driver']}")
        console.print(table)
    click.echo("CUDA kernels: pair: " + ", ".join(PAIR_KERNELS) + "; allpairs: " + ", ".join(ALLPAIRS_KERNELS)
               + "; search: scan, gsw")
