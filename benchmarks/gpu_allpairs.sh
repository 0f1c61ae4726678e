#!/usr/bin/env bash
# The allpairs measurements of docs/performance.md, on a GPU machine from the repository root:
#   bash benchmarks/gpu_allpairs.sh [kernels|table4|auto|real|genomes|matrix|all] [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
WHAT=${1:-all}
OUTDIR=${2:-${OUT:-allpairs-out}}
mkdir -p "$OUTDIR"
nw() { python3 -m nwalign "$@"; }
status=0
if [ "$WHAT" = kernels ] || [ "$WHAT" = all ]; then
    # Every kernel on 16S-length pairs (seeded variants of one 1,500-nt sequence): 1000 sequences = 499,500
    # pairs for the fast kernels, 200 sequences = 19,900 pairs for all of them (the CPU engine on 500 pairs).
    nw bench --workload allpairs --sizes 1500 --count 1000 --kernels cpu,lazy-rscan --slice 16,32 --repeats 3 \
        --warmup 1 --check 500 --json "$OUTDIR/allpairs_fast.json" || status=1
    nw bench --workload allpairs --sizes 1500 --count 200 --kernels cpu,lazy-rscan,rscan,dscan,tiled-dscan \
        --repeats 3 --warmup 1 --check 500 --json "$OUTDIR/allpairs_all.json" || status=1
fi
if [ "$WHAT" = table4 ] || [ "$WHAT" = all ]; then
    # Li et al. Table 4: lazy-rscan by threads per block and slice size (pairs/s), 1,500-nt pairs.
    nw bench --workload allpairs --sizes 1500 --count 600 --kernels lazy-rscan --slice 2,4,8,16,32 \
        --block 32,64,128,256 --repeats 2 --warmup 1 --check 200 --json "$OUTDIR/t003_table4.json" || status=1
fi
if [ "$WHAT" = auto ] || [ "$WHAT" = all ]; then
    # The auto rule: one block per pair (dscan) against one thread per pair (lazy-rscan) as pairs grow.
    for count in 10 30 60 100 200; do
        nw bench --workload allpairs --sizes 1500 --count $count --kernels lazy-rscan,dscan --repeats 3 \
            --warmup 1 --check 100 --json "$OUTDIR/auto_$count.json" || status=1
    done
fi
if [ "$WHAT" = real ] || [ "$WHAT" = all ]; then
    # The 100 real 16S genes of data/ (4,950 pairs) end to end on the GPU, identity >= 90 %.
    /usr/bin/time -f "%e s wall" python3 -m nwalign allpairs data/16S_100_dada2.fasta.gz --min-identity 0.9 \
        --backend cuda -v -o "$OUTDIR/16S_100_09.tsv" 2>&1 | tail -n 5 || status=1
fi
if [ "$WHAT" = genomes ] || [ "$WHAT" = all ]; then
    # 418 SARS-CoV-2 genomes (87,153 pairs of ~30 kb), identity >= 99 %, end to end (the survivors of the
    # score bound aligned in their bands on the GPU: nwalign/backends/cuda/banded.py), compared byte for byte with
    # the recorded result (benchmarks/reference/allpairs_sars2_418_099.tsv.gz, 2026-11-24: its 68,362 banded paths
    # equal the CPU engine's, benchmarks/gpu_banded.py --count 418 --cpu -1; recorded again 2026-11-28 on an H200
    # with BLAST's three decimals of pident, every other column unchanged).
    COLS=qseqid,sseqid,score,pident,length,nident,mismatch,gaps,qlen,slen
    # CPU_CHECK=1: then again with the survivors aligned on the CPU engine (nwalign.backends.cuda.banded.ENABLED off),
    # and the two outputs compared byte for byte.
    RUN=(python3 -m nwalign)
    /usr/bin/time -v "${RUN[@]}" allpairs data/sars-cov-2_418_nextstrain.fasta.gz --min-identity 0.99 \
        --backend cuda --devices 0 -v --columns $COLS -o "$OUTDIR/sars2_418_099.tsv" 2> "$OUTDIR/sars2_418_099.log" \
        || status=1
    tail -n 30 "$OUTDIR/sars2_418_099.log"; wc -l "$OUTDIR/sars2_418_099.tsv"
    if [ "${CPU_CHECK:-0}" = 1 ]; then
        /usr/bin/time -f "%e s wall (survivors on the CPU engine)" python3 -c "import nwalign.backends.cuda.banded as b; b.ENABLED = False; from nwalign.launch import main; main()" \
            allpairs data/sars-cov-2_418_nextstrain.fasta.gz --min-identity 0.99 --backend cuda --devices 0 -v \
            --columns $COLS -o "$OUTDIR/sars2_418_099_cpu.tsv" 2> "$OUTDIR/sars2_418_099_cpu.log" || status=1
        tail -n 3 "$OUTDIR/sars2_418_099_cpu.log"
        cmp "$OUTDIR/sars2_418_099.tsv" "$OUTDIR/sars2_418_099_cpu.tsv" && echo "GPU and CPU-engine survivors: identical"
        [ -s "$OUTDIR/sars2_418_099_cpu.tsv" ] && cmp -s "$OUTDIR/sars2_418_099.tsv" "$OUTDIR/sars2_418_099_cpu.tsv" || status=1
    fi
    if cmp <(zcat benchmarks/reference/allpairs_sars2_418_099.tsv.gz) "$OUTDIR/sars2_418_099.tsv"; then
        echo "identical to the recorded result"
    else
        echo "DIFFERS from the recorded result"; status=1
    fi
fi
if [ "$WHAT" = matrix ] || [ "$WHAT" = all ]; then
    # The full 87,153-pair distance matrix of the 418 SARS-CoV-2 genomes (every pair aligned: optimal scores
    # from proved bands, then each pair aligned in doubling bands up to its optimum on the GPU), with each
    # pair's alignment columns; the pairs at >= 99 % compared with the recorded --min-identity result.
    /usr/bin/time -v python3 -m nwalign allpairs data/sars-cov-2_418_nextstrain.fasta.gz --backend cuda --devices 0 -v \
        --columns qseqid,sseqid,score,pident,length,nident,mismatch,gaps,qlen,slen --matrix-out "$OUTDIR/sars2_418.npy" \
        -o "$OUTDIR/sars2_418_all.tsv" 2> "$OUTDIR/sars2_418_matrix.log" || status=1
    tail -n 30 "$OUTDIR/sars2_418_matrix.log"; wc -l "$OUTDIR/sars2_418_all.tsv"
    python3 - "$OUTDIR" <<'PY' || status=1
import gzip, sys
import numpy as np
d = sys.argv[1]
rows = [l.split("\t") for l in open(f"{d}/sars2_418_all.tsv").read().splitlines()]
close = {(r[0], r[1]): r for r in rows if 100 * int(r[5]) >= 99 * int(r[4])}  # nident / length >= 0.99
recorded = [l.split("\t") for l in gzip.open("benchmarks/reference/allpairs_sars2_418_099.tsv.gz", "rt").read().splitlines()]
same = len(close) == len(recorded) and all(close.get((r[0], r[1])) == r for r in recorded)
mat = np.load(f"{d}/sars2_418.npy")
print(f"{len(rows)} pairs aligned, matrix {mat.shape}, pairs >= 99 %: {len(close)}, "
      f"{'identical to' if same else 'DIFFER from'} the recorded --min-identity 0.99 rows ({len(recorded)})")
sys.exit(0 if same else 1)
PY
fi
exit $status
