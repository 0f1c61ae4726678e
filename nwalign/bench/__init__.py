"""Benchmark harness behind ``nwalign bench``: time kernels and peers on seeded or given inputs, verify
every result, and report rows (JSON, TSV, a table, a plot).

- :mod:`.harness`: :class:`Row`, the timers and the one warm-up/repeat loop (:func:`timed`), the GPU rule;
- :mod:`.workloads`: ``run_pair``, ``run_search``, ``run_allpairs`` and their inputs;
- :mod:`.report`: TSV and plots.

The scripts under ``benchmarks/`` call these.
"""

from nwalign.bench.harness import Row, timed, versions
from nwalign.bench.report import plot, rows_to_json, rows_to_tsv, table
from nwalign.bench.workloads import (ALLPAIRS_KERNELS, AMINO, CPU_KERNELS, GPU_SEARCH_KERNELS, PEERS, SEARCH_KERNELS, allpairs_records, pair_inputs, run_allpairs, run_pair, run_search, synthetic_database)

__all__ = ["ALLPAIRS_KERNELS", "AMINO", "CPU_KERNELS", "GPU_SEARCH_KERNELS", "PEERS", "Row", "SEARCH_KERNELS",
           "allpairs_records", "pair_inputs", "plot", "rows_to_json", "rows_to_tsv", "table", "run_allpairs", "run_pair", "run_search",
           "synthetic_database", "timed", "versions"]
