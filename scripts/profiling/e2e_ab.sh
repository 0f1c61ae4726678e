#!/usr/bin/env bash
# A/B of two settings of the GPU search on one machine, alternated: the end-to-end wall of
# `nwalign search data/queries_20_sw_benchmark.fasta /tmp/sp570k.nwdb --top 10` (the e2e benchmark's
# command), ROUNDS rounds of A then B. A setting is a Python statement run before the CLI, for example
#   bash scripts/profiling/e2e_ab.sh "" "import nwalign.cuda.search as s; s.SLOTS = 4"
# Run after benchmarks/gpu_search_e2e.sh (it builds /tmp/sp570k.nwdb and the byte-compiled files).
set -uo pipefail
A=${1:-}; B=${2:-}; ROUNDS=${ROUNDS:-4}
Q=data/queries_20_sw_benchmark.fasta
run() {
    /usr/bin/time -f "%e" python3 -c "
import sys
$1
sys.argv = ['nwalign', 'search', '$Q', '/tmp/sp570k.nwdb', '--top', '10', '-o', '/tmp/ab_hits.tsv']
from nwalign.launch import main  # as the command starts: the GPU warm-up first
main()" 2>&1 | tail -n 1
    md5sum < /tmp/ab_hits.tsv | cut -c1-8
}
for r in $(seq "$ROUNDS"); do
    echo "A $(run "$A" | tr '\n' ' ')"
    echo "B $(run "$B" | tr '\n' ' ')"
done
