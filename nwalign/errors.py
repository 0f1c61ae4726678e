"""The one exception type the library raises for bad input or impossible requests.

The CLI turns it into one line on stderr and exit code 2.
"""


class NwalignError(Exception):
    """Bad input, bad options, or a request that cannot be met (memory, device).

    The message is one line, naming the problem and, where there is one, the file and record.
    """
