"""Where the first query's scan spends its time: the scan of the first (shortest) benchmark query run
three times on a fresh ScanSearcher, with host time in submit() and wall to the scores, after the
warm-up a search does (CuPy, context, cubins).
    python3 scripts/profiling/first_scan.py DB.nwdb QUERIES.fasta"""
import sys
import time

from nwalign.cuda import warm_up_search
from nwalign.database import load_database
from nwalign.engine import encode_all
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta

warm_up_search(0).result()
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
