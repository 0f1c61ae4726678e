"""The ``nwalign`` command line: parse options, call the library, write results. Nothing else.

One module per command (``pair``, ``search``, ``allpairs``, ``bench``; ``tools``: makedb, mutate,
devices), each registering itself on the group of :mod:`nwalign.cli.group`; the options they share are
defined once in :mod:`nwalign.cli.options`. Nothing here loads NumPy or an engine until a command runs
(``nwalign --help`` stays fast; a test keeps it so).
"""

from nwalign.cli import allpairs
from nwalign.cli import bench
from nwalign.cli import pair
from nwalign.cli import search
from nwalign.cli import tools  # noqa: F401  (each registers its command)
from nwalign.cli.group import cli, entry, main

__all__ = ["cli", "entry", "main"]
