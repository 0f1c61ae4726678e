"""Per-query time of the scan on a whole database and on one of its shards, in one process, as a GPU
worker of `search --devices` runs it (nwalign.shards.best_of_shard's loop): does a half database take
half the time? Usage (GPU machine): python3 scripts/profiling/shard_scan.py DB.nwdb QUERIES.fasta [N]"""

import sys
import time



from nwalign.cuda.search import ScanSearcher
from nwalign.dbsearch import top_hits
from nwalign.engine import encode_all
from nwalign.shards import _load_shard
from nwalign.scoring import make_scoring
from nwalign.sequences import read_fasta

db_path, query_path = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 400
scoring = make_scoring("protein", "local")
queries = [e.codes for e in encode_all(read_fasta(query_path)[:n], scoring, "queries")]
cells_q = sum(len(q) for q in queries)
for shards in (1, 2, 4):
    index, sub, offsets = _load_shard(db_path, 0, shards, scoring)
    searcher = ScanSearcher(sub, offsets, scoring, 0)
    for with_top in (True, False, "kernel"):
        searcher.scores(queries[0])  # warm
        t = time.perf_counter()
        if with_top == "kernel":  # one query at a time, nothing else: the GPU's own time per query
            for q in queries:
                searcher.scores(q)
        else:
            pending = []
            for q in queries:
                pending.append(searcher.submit(q))
                if len(pending) >= searcher.slots:
                    s = searcher.result(pending.pop(0))
                    if with_top:
                        top_hits(s, 10, None)
            for p in pending:
                searcher.result(p)
        wall = time.perf_counter() - t
        print(f"1/{shards} of the database ({len(index)} sequences, {int(offsets[-1])} residues), {len(queries)} "
              f"queries, {'2 in flight + top_hits' if with_top is True else '2 in flight' if with_top is False else 'one at a time'}: "
              f"{1e3 * wall / len(queries):.2f} ms per query, {cells_q * int(offsets[-1]) / wall / 1e9:.0f} GCUPS",
              flush=True)
    del searcher
# The order best_of_shard and search_all use: the freed slot is refilled before the host's work.
for shards, slots in ((1, 2), (1, 3), (2, 2), (2, 3), (2, 4)):
    index, sub, offsets = _load_shard(db_path, 0, shards, scoring)
    searcher = ScanSearcher(sub, offsets, scoring, 0, slots=slots)
    searcher.scores(queries[0])
    t = time.perf_counter()
    flying = [searcher.submit(q) for q in queries[:searcher.slots]]
    left = iter(queries[searcher.slots:])
    while flying:
        s = searcher.result(flying.pop(0))
        q = next(left, None)
        if q is not None:
            flying.append(searcher.submit(q))
        top_hits(s, 10, None)
    wall = time.perf_counter() - t
    print(f"1/{shards}: {slots} in flight, refilled before top_hits: {1e3 * wall / len(queries):.2f} ms per query, "
          f"{cells_q * int(offsets[-1]) / wall / 1e9:.0f} GCUPS", flush=True)
    del searcher
