"""Where a warm `nwalign search` spends its first query: the command run in-process (as `python3 -m
nwalign` runs it: the warm-up thread first), with ScanSearcher.submit/result, BatchAligner.submit and
the first GPU calls timed (ms since this script started) on stderr.
    python3 scripts/profiling/search_timeline.py QUERIES.fasta DB.nwdb"""
import sys
import time

T0 = time.perf_counter()


def stamp(what):
    print(f"probe {1e3 * (time.perf_counter() - T0):8.1f} ms: {what}", file=sys.stderr, flush=True)


from nwalign.cuda import warm_up_search  # noqa: E402

warm_up_search(0)
import nwalign.cuda.search as S  # noqa: E402  (no CuPy import: `require` imports it when called)
import nwalign.cuda.batch as B  # noqa: E402

for cls, names in ((S.ScanSearcher, ("__init__", "submit", "result", "_copy_back")), (B.BatchAligner, ("__init__", "submit"))):
    for name in names:
        orig = getattr(cls, name)

        def wrapped(self, *args, _orig=orig, _name=f"{cls.__name__}.{name}", **kw):
            t = time.perf_counter()
            out = _orig(self, *args, **kw)
            stamp(f"{_name} took {1e3 * (time.perf_counter() - t):.1f} ms")
            return out

        setattr(cls, name, wrapped)
from nwalign.cli import main  # noqa: E402

stamp("cli imported")
code = main(["search", sys.argv[1], sys.argv[2], "--top", "10", "-v", "-o", "/tmp/probe_hits.tsv"])
stamp(f"done ({code})")
