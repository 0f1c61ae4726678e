"""cProfile of an allpairs run in this process (the CLI's main, which returns instead of leaving through
os._exit): the functions with the most own time and the most cumulative time, main thread only.
    python3 scripts/profiling/allpairs_profile.py [N] -- ALLPAIRS ARGS...
N: rows of each table (default 35)."""
import cProfile
import pstats
import sys

from nwalign.cli import main

args = sys.argv[1:]
rows = 35
if args and args[0] != "--":
    rows = int(args.pop(0))
if args and args[0] == "--":
    args.pop(0)
prof = cProfile.Profile()
prof.enable()
code = main(["allpairs"] + args)
prof.disable()
stats = pstats.Stats(prof, stream=sys.stderr)
stats.sort_stats("tottime").print_stats(rows)
stats.sort_stats("cumulative").print_stats(rows)
sys.exit(code)
