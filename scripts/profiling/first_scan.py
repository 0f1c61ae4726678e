"""Where the scans' wall goes: the first (shortest) benchmark query scanned on a fresh ScanSearcher and
then again (host time in submit(), wall to the scores), after the warm-up a search does (CuPy, context,
cubins); then all queries one at a time (each query's wall alone) and two in flight as a search runs
them (the total against the sum of the one-at-a-time walls).
    python3 scripts/profiling/first_scan.py DB.nwdb QUERIES.fasta"""
import sys
import time

from nwalign.cuda import warm_up_search
from nwalign.database import load_database
from nwalign.engine import encode_all
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta

warm_up_search(0).join()
db = load_database(sys.argv[1])
scoring = make_scoring("protein", "local")
queries = encode_all(read_fasta(sys.argv[2]), scoring, "queries")
from nwalign.cuda.search import ScanSearcher  # noqa: E402

t = time.perf_counter()
searcher = ScanSearcher(db.encode(scoring), db.offsets, scoring)
print(f"ScanSearcher made (database uploaded) in {1e3 * (time.perf_counter() - t):.1f} ms")
for label, q in (("first", queries[0]), ("again", queries[0]), ("second query", queries[1]),
                 ("first again", queries[0])):
    t = time.perf_counter()
    ticket = searcher.submit(q.codes)
    host = time.perf_counter() - t
    searcher.result(ticket)
    print(f"{label:>13}: {len(q.codes)} aa, submit {1e3 * host:.2f} ms, scores after {1e3 * (time.perf_counter() - t):.2f} ms")

alone = []
for q in queries:
    t = time.perf_counter()
    searcher.scores(q.codes)
    alone.append(time.perf_counter() - t)
t = time.perf_counter()
flying = [searcher.submit(queries[0].codes)]
for q in queries[1:] + [None]:
    if q is not None:
        flying.append(searcher.submit(q.codes))
    searcher.result(flying.pop(0))
both = time.perf_counter() - t
cells = sum(len(q.codes) for q in queries) * int(db.offsets[-1])
print("one at a time (ms): " + " ".join(f"{1e3 * a:.1f}" for a in alone))
print(f"one at a time: {sum(alone):.3f} s ({cells / sum(alone) / 1e9:.0f} GCUPS); two in flight: {both:.3f} s "
      f"({cells / both / 1e9:.0f} GCUPS)")
