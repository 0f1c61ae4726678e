"""cProfile of one `nwalign search` run (main thread), through nwalign.cli.main so that the statistics print:
    python3 scripts/profiling/search_profile.py [SORT] -- search QUERIES DB [options]"""
import cProfile
import pstats
import sys

sort = sys.argv[1] if len(sys.argv) > 2 and sys.argv[2] == "--" else "tottime"
args = sys.argv[sys.argv.index("--") + 1:]
from nwalign.launch import wants_gpu  # noqa: E402

prof = cProfile.Profile()
prof.enable()
found = wants_gpu(args)
if found is not None and found[0] == "search":  # as the command's entry point does
    from nwalign.cuda import warm_up_search

    for device in found[1]:
        warm_up_search(device)
from nwalign.cli import main  # noqa: E402  (returns the exit code; the entry point would os._exit)

main(args)
prof.disable()
pstats.Stats(prof, stream=sys.stderr).sort_stats(sort).print_stats(35)
