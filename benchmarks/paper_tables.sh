#!/usr/bin/env bash
# One `nwalign bench` command per table of the seed papers that nwalign can reproduce today
# (pair, search and allpairs workloads). Run on a GPU machine from the repository root: bash benchmarks/paper_tables.sh [OUTDIR]
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # usage: the comment lines above
    echo "usage: bash $0 [ARGS]"; sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0
fi
set -uo pipefail
OUTDIR=${1:-${OUT:-paper-tables-out}}
mkdir -p "$OUTDIR"
nw() { python3 -m nwalign "$@"; }
# Huynh et al. (seed 000) Table 1: diagonal-block kernel, block sizes, 10k and 20k, with the serial CPU.
nw bench --kernels cpu-serial,diagonal-block --block 8x8,16x16,32x32 --sizes 10000,20000 --repeats 5 \
    --warmup 1 --no-peers --json "$OUTDIR/t000_table1.json" --plot "$OUTDIR/t000_table1.png"
# Kurt et al. (seed 001) Tables I-II: final score, serial vs iterative vs cooperative groups, 10 .. 100k.
nw bench --kernels cpu-serial,antidiagonal,antidiagonal-coop,wavefront --sizes 10,100,1000,10000 --repeats 5 \
    --warmup 1 --no-peers --json "$OUTDIR/t001_table1_small.json"
nw bench --kernels antidiagonal,antidiagonal-coop,wavefront --sizes 100000 --repeats 3 --warmup 1 --no-peers \
    --json "$OUTDIR/t001_table1_100k.json"
nw bench --kernels cpu-serial --sizes 100000 --repeats 1 --warmup 0 --no-peers --json "$OUTDIR/t001_table1_serial.json"
# Kurt et al. Tables III-IV: the alignment matrix (score + traceback), serial vs iterative vs sub-matrices.
nw bench --traceback --kernels cpu-serial,antidiagonal,adm-submatrix,wavefront \
    --sizes 10,100,1000,10000,20000,30000,40000,50000 --repeats 3 --warmup 1 --no-peers \
    --json "$OUTDIR/t001_table3.json" --plot "$OUTDIR/t001_table3.png"
# Akoglu and Striemer (seed 004) Table 2: GSW by query length against a Swiss-Prot 2008-sized database
# (392,768 sequences; synthetic, Swiss-Prot's length distribution), BLOSUM50, linear gaps of 10.
nw bench --workload search --kernels gsw --query-lengths 4,8,16,32,64,128,256,512,768,1024 --db-size 392768 \
    --matrix BLOSUM50 --gap-open 10 --gap-extend 10 --repeats 3 --warmup 1 --json "$OUTDIR/t004_table2_gsw.json"
nw bench --workload search --kernels cpu --query-lengths 4,64,256 --db-size 392768 \
    --matrix BLOSUM50 --gap-open 10 --gap-extend 10 --repeats 1 --warmup 0 --json "$OUTDIR/t004_table2_cpu.json"
# Li et al. (seed 003) Table 4: LazyRScan by threads per block and slice size, ~1.5 kb pairs (pairs/s).
nw bench --workload allpairs --sizes 1500 --count 600 --kernels lazy-rscan --slice 2,4,8,16,32 \
    --block 32,64,128,256 --repeats 2 --warmup 1 --check 200 --json "$OUTDIR/t003_table4.json"
