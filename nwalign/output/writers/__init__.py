"""Every output format, found by name (:data:`WRITERS`; :func:`make`): the pair report (``pair``, EMBOSS
needle's srspair), ``sam``, ``json`` (JSON Lines), ``tsv`` (BLAST's tabular, through one header
convention), ``fasta``, ``xml`` (BLAST XML, search only). Every command's alignments and hits go through them; allpairs' rows of many pairs
at once are the TSV writer's :func:`nwalign.output.writers.tsv.format_results` (compiled:
:mod:`nwalign.output.scorerows`), its distance matrices :mod:`nwalign.output.files`.

A new format is one module here (a :class:`~nwalign.output.writers.base.Writer` with ``write``, and
``write_hits`` where a search's hits need more than their alignments), one line in :data:`WRITERS` and its
name in ``nwalign.names.FORMATS``.

>>> import io
>>> from nwalign import align, make_scoring
>>> out = io.StringIO()
>>> writer = make("fasta", out, make_scoring("dna", "global"))
>>> writer.begin(); writer.write(align("GATTACA", "GATCACA")); writer.end()
>>> print(out.getvalue(), end="")
>query 1-7 score=26 mode=global
GATTACA
>target 1-7 score=26 mode=global
GATCACA
"""

from __future__ import annotations

from nwalign.output.writers.base import Writer
from nwalign.output.writers.fasta import FastaWriter
from nwalign.output.writers.jsonl import JsonWriter
from nwalign.output.writers.report import PairWriter
from nwalign.output.writers.sam import SamWriter
from nwalign.output.writers.tsv import TsvWriter
from nwalign.output.writers.xml import BlastXmlWriter

WRITERS: dict[str, type[Writer]] = {"pair": PairWriter, "sam": SamWriter, "json": JsonWriter, "tsv": TsvWriter,
                                    "fasta": FastaWriter, "xml": BlastXmlWriter}


def make(name: str, out, scoring, **options) -> Writer:
    """The writer of format ``name`` on ``out`` (``options``: as :class:`~nwalign.output.writers.base.Writer`
    takes them).

    Raises:
        KeyError: an unknown format (the command line offers only those of :data:`WRITERS`).
    """
    return WRITERS[name](out, scoring, **options)
