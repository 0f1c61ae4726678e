"""The one exception type the library raises for bad input or impossible requests.

The CLI turns it into one line on stderr and exit code 2.
"""

import re

#: Command-line options whose Python parameter has another name.
_PARAMETER_OF = {"slice": "slice_k"}


class NwalignError(Exception):
    """Bad input, bad options, or a request that cannot be met (memory, device).

    The message is one line, naming the problem and, where there is one, the file and record. An error
    about an argument names the Python parameter (``min_identity 1.5: ...``); :attr:`cli` is the same line
    with the command line's options (``--min-identity 1.5: ...``), which the CLI prints. A message
    written with options (``use --backend cpu``) reads with parameters from the library
    (``use backend cpu``) unless ``cli`` is given.

    >>> e = NwalignError("GPU out of memory; use --score-only or --backend cpu")
    >>> str(e), e.cli
    ('GPU out of memory; use score_only or backend cpu', 'GPU out of memory; use --score-only or --backend cpu')
    """

    def __init__(self, message: str, cli: str | None = None):
        if cli is None:
            cli, message = message, _parameters(message)
        super().__init__(message)
        self.cli = cli


def _parameters(text: str) -> str:
    """``--max-memory`` -> ``max_memory`` (and :data:`_PARAMETER_OF`'s renames) throughout ``text``."""
    def name(match):
        flag = match.group(1)
        return _PARAMETER_OF.get(flag, flag.replace("-", "_"))
    return re.sub(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)", name, text)


class WorkerLost(Exception):
    """Workers kept dying while running one task (Dask's ``KilledWorker``): the run ends (exit status 1)."""


class DeviceLost(WorkerLost):
    """A GPU failed while it ran its part of one job that cannot go on without it (one pair's score pass
    spread over the GPUs): the run ends (exit status 1)."""


def workers_lost(label: str, killed) -> WorkerLost:
    """The error for Dask's ``KilledWorker`` ``killed`` in a ``label`` job: what happened, in one line, without
    blaming the task (a worker short of memory, or killed from outside, looks the same to Dask).

    >>> class Killed:
    ...     allowed_failures = 3
    >>> str(workers_lost("search", Killed()))
    'search: 4 worker processes died, one after another, while running the same task (Dask stops retrying it then); no output written. Are the workers short of memory, or being killed?'
    """
    tries = getattr(killed, "allowed_failures", None)
    count = f"{tries + 1} " if isinstance(tries, int) else ""
    return WorkerLost(f"{label}: {count}worker processes died, one after another, while running the same task "
                      "(Dask stops retrying it then); no output written. Are the workers short of memory, or "
                      "being killed?")


def cluster_lost(label: str) -> WorkerLost:
    """The error for a running cluster whose scheduler went away mid-run (Dask cancels every future:
    a 60-line FutureCancelledError traceback once said so).

    >>> str(cluster_lost("search"))
    "search: the cluster's scheduler went away mid-run (the connection to it was lost); no output written"
    """
    return WorkerLost(f"{label}: the cluster's scheduler went away mid-run (the connection to it was lost); "
                      "no output written")


def option_error(param: str, flag: str, text: str) -> NwalignError:
    """An error about one argument: ``param text`` from the library, ``flag text`` from the command line.

    >>> str(option_error("min_identity", "--min-identity", "1.5: give a fraction between 0 and 1"))
    'min_identity 1.5: give a fraction between 0 and 1'
    """
    return NwalignError(f"{param} {text}", cli=f"{flag} {text}")
