"""Where the first blocks' start goes on the allpairs devices path (issue 19's one-GPU proxy: GPU 0 named
twice, one worker): the path's steps traced with the thread that runs them, on nwalign's -v timeline
(NWALIGN_LOG_TIMES=1). Usage (GPU machine):
  NWALIGN_LOG_TIMES=1 python3 scripts/profiling/lead_start.py FASTA > /dev/null"""

import functools
import logging
import sys
import threading

import nwalign.scaleout as scaleout
import nwalign.spread as spread

log = logging.getLogger("nwalign")


def traced(owner, name: str, label: str, times: int = 4) -> None:
    original = getattr(owner, name)
    calls = [0]

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        calls[0] += 1
        say = calls[0] <= times
        if say:
            log.debug("trace: %s begins (%s)", label, threading.current_thread().name)
        out = original(*args, **kwargs)
        if say:
            log.debug("trace: %s returned (%s)", label, threading.current_thread().name)
        return out
    setattr(owner, name, wrapper)


def main():
    import nwalign.aligner
    import nwalign.cuda.allpairs as allpairs

    scaleout.resolve_devices = lambda *a, **k: [0, 0]
    traced(spread.Spread, "_start", "Spread._start")
    traced(spread, "block_of", "block_of")
    traced(scaleout, "client_for", "client_for")
    traced(nwalign.aligner.Aligner, "__init__", "Aligner()")
    traced(allpairs.AllPairsScorer, "__init__", "AllPairsScorer()")
    traced(allpairs.AllPairsScorer, "_launch", "first launches")
    sys.argv = ["nwalign", "allpairs", sys.argv[1], "--columns", "qseqid,sseqid,score,qlen,slen", "-v", "-o",
                "/tmp/lead_start.tsv"]
    from nwalign.launch import main as run

    run()


if __name__ == "__main__":
    main()
