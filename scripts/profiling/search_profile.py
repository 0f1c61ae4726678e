"""cProfile of one `nwalign search` run (main thread), with SystemExit caught so that the statistics print:
    python3 scripts/profiling/search_profile.py [SORT] -- search QUERIES DB [options]"""
import cProfile
import pstats
import sys

sort = sys.argv[1] if len(sys.argv) > 2 and sys.argv[2] == "--" else "tottime"
args = sys.argv[sys.argv.index("--") + 1:]
sys.argv = ["nwalign"] + args
from nwalign.launch import main  # noqa: E402

prof = cProfile.Profile()
prof.enable()
try:
    main()
except SystemExit:
    pass
prof.disable()
pstats.Stats(prof, stream=sys.stderr).sort_stats(sort).print_stats(35)
