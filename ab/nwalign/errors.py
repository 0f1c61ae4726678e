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
    """A task kept killing the workers that ran it (Dask's ``KilledWorker``): the run ends (exit status 1)."""


def option_error(param: str, flag: str, text: str) -> NwalignError:
    """An error about one argument: ``param text`` from the library, ``flag text`` from the command line.

    >>> str(option_error("min_identity", "--min-identity", "1.5: give a fraction between 0 and 1"))
    'min_identity 1.5: give a fraction between 0 and 1'
    """
    return NwalignError(f"{param} {text}", cli=f"{flag} {text}")
