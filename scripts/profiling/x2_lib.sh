# Sourced by the two-GPU device scripts (x2_session21.sh, x2_context.sh, x2_ab.sh, x2_contention.sh) once they have set
# OUTDIR and LOG: the carried wheels and the tree on PYTHONPATH (device-site.sh), say and timed (a
# command's wall into LOG), and allpairs_set, which makes the 5,000 x ~1.5 kb set in $W (columns $COLS)
# and warms both paths up on its first 200 lines.
mkdir -p "$OUTDIR"
source scripts/device-site.sh
unset PYTHONDONTWRITEBYTECODE
say() { echo "$@" | tee -a "$LOG"; }
timed() { /usr/bin/time -a -o "$LOG" -f "%e s wall, %M KB peak RSS (client)" "$@"; }
allpairs_set() {
    W=/tmp/pairs; COLS=qseqid,sseqid,score,qlen,slen
    mkdir -p $W
    python3 benchmarks/allpairs_dna.py 5000 $W/dna.fasta >> "$LOG"
    head -n 200 $W/dna.fasta > $W/warm.fasta
    python3 -m nwalign allpairs $W/warm.fasta --devices 0,1 --columns $COLS -o /dev/null 2>> "$LOG"
    python3 -m nwalign allpairs $W/warm.fasta --devices 0 --columns $COLS -o /dev/null 2>> "$LOG"
}
